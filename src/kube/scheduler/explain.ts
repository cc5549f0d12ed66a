/**
 * `sits explain`: for a pending pod or pod group (`namespace/name`), why it is not placed — the core's
 * explanation on the current snapshot, the queue's reason from a cycle run on a copy, and the start time
 * the queue cycle predicts when run forward (as the ETA publisher does: runtimes given or learned, victims
 * requeued, later arrivals forecast from the pods this process has seen). Nothing is written: every
 * scheduler here is a trial one over a copy of the cluster.
 */
import { cloneState, estimateStarts } from '../../core/actions/eta.ts';
import { runCycle } from '../../core/actions/queue-cycle.ts';
import { Scheduler } from '../../core/framework/scheduler.ts';
import type { Profile } from '../../core/framework/types.ts';
import type { Rng } from '../../core/ports.ts';
import { Statement } from '../../core/statement/statement.ts';
import type { ClusterCache } from '../cache/cluster-cache.ts';
import { ANNOTATION, LABEL } from '../../api/wire.ts';
import type { V1Pod } from '@kubernetes/client-node';
import { DEFAULT_TRAINING_MODEL, idealShares, sharesOf, stepTime } from '../../core/estimate/step-time.ts';
import { recordedHolds, type PodJobs } from '../cache/pod-jobs.ts';
import { ClusterState } from '../../core/snapshot/cluster-state.ts';
import type { GangSpec } from '../../core/model/pod.ts';
import type { RunningJob } from '../../core/actions/jobs.ts';

export interface ExplainReport {
  readonly target: string;
  readonly state: 'bound' | 'fits' | 'waiting' | 'unknown';
  readonly lines: readonly string[];
  readonly etaMs?: number;
  /** The pod group explained for a member pod's target (`namespace/name`). */
  readonly podGroup?: string;
  /** No empty cluster of these nodes could hold it: it waits forever unless the cluster grows. */
  readonly neverFits?: boolean;
  /** The expected start the running scheduler published, when it is already past and the job still waits. */
  readonly overdueSinceMs?: number;
}

export interface ExplainContext {
  readonly cache: ClusterCache;
  readonly jobs: PodJobs;
  readonly profile: Profile;
  readonly schedulerName: string;
  readonly rng: () => Rng;
}

export function explainTarget(ctx: ExplainContext, asked: string, nowMs: number): ExplainReport {
  const state = ctx.cache.state();
  const { singles, gangs } = ctx.jobs.pendingUnits();
  // A waiting pod of another scheduler: say whose it is, not that it does not exist.
  const asPod = ctx.cache.pod(asked);
  const its = asPod?.spec?.schedulerName ?? 'default-scheduler';
  if (asPod !== undefined && (asPod.spec?.nodeName ?? '') === '' && its !== ctx.schedulerName) {
    return {
      target: asked,
      state: 'unknown',
      lines: [`${asked}: waits for scheduler ${its}, not ${ctx.schedulerName}${its === 'default-scheduler' ? '' : ` (pass --scheduler-name ${its})`}`],
    };
  }
  // A waiting member of a gang is placed with its group or not at all: explain the group (issue 31).
  const group = groupOfPendingPod(ctx, asked);
  const target = group ?? asked;
  const head = group === undefined ? [] : [`pod ${asked} belongs to pod group ${group}: it starts with the whole gang`];
  const withHead = (r: ExplainReport): ExplainReport => (group === undefined ? r : { ...r, target: asked, podGroup: group, lines: [...head, ...r.lines] });
  return withHead(explainUnit(ctx, target, nowMs, state, singles, gangs));
}

/** The pod group (`namespace/name`) of a pod that waits, when it belongs to one; undefined for the group itself. */
function groupOfPendingPod(ctx: ExplainContext, key: string): string | undefined {
  const pending = ctx.cache.pending.get(key);
  if (pending?.spec.gang !== undefined) return pending.spec.gang;
  const pod = ctx.cache.pod(key);
  const label = pod?.metadata?.labels?.[LABEL.podGroup];
  if (pod === undefined || label === undefined || (pod.spec?.nodeName ?? '') !== '') return undefined;
  return `${pod.metadata?.namespace ?? 'default'}/${label}`;
}

function explainUnit(
  ctx: ExplainContext,
  target: string,
  nowMs: number,
  state: ReturnType<ClusterCache['state']>,
  singles: readonly { readonly key: string }[],
  gangs: ReadonlyMap<string, readonly unknown[]>,
): ExplainReport {
  const { cache, jobs: podJobs, profile } = ctx;
  const single = singles.find((p) => p.key === target);
  const gangMembers = gangs.get(target);
  if (single === undefined && gangMembers === undefined) {
    const pod = cache.pod(target);
    const gates = pod?.spec?.schedulingGates ?? [];
    if (pod !== undefined && gates.length > 0 && (pod.spec?.nodeName ?? '') === '')
      return {
        target,
        state: 'waiting',
        lines: [`${target}: SchedulingGated: not tried until its scheduling gates are removed (${gates.map((g) => g.name).join(', ')})`],
      };
    if (pod !== undefined && (pod.spec?.nodeName ?? '') !== '')
      return {
        target,
        state: 'bound',
        lines: [
          `${target} is bound to ${pod.spec?.nodeName ?? ''} (GPUs ${pod.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? 'none'})`,
          ...stepLines(ctx, [pod]),
        ],
      };
    // A running pod group: where its pods are and what that is worth to its training step (issue 19).
    const members = pod === undefined ? runningMembers(ctx.cache, target) : [];
    if (members.length > 0)
      return {
        target,
        state: 'bound',
        lines: [
          `gang ${target} is running: ${members.length} pods on ${[...new Set(members.map((m) => m.spec?.nodeName ?? ''))].join(', ')}`,
          ...stepLines(ctx, members),
        ],
      };
    return { target, state: 'unknown', lines: [`${target}: no pending pod or pod group of ${ctx.schedulerName} with that name`] };
  }
  const view = podJobs.view(state);
  const id = single !== undefined ? single.key : `gang:${target}`;
  const job = view.jobs.find((j) => j.id === id);
  if (job === undefined) return { target, state: 'waiting', lines: [view.short.find((s) => s.id === id)?.message ?? `gang ${target}: waiting for pods`] };
  const lines: string[] = [];
  // 1. Placement on a copy of the current snapshot, rolled back (the copy is as it was for step 2).
  const copy = new Scheduler(profile, cloneState(state), ctx.rng());
  const stmt = new Statement(copy.state);
  const r = copy.placeGang(job.gang, stmt);
  stmt.discard();
  lines.push(r.ok ? `fits now: ${[...new Set(r.placements.map((p) => p.node))].join(', ')}` : r.explanation.message);
  // 1b. Would it fit if nothing else ran? If not, no wait ends it: say so with the numbers instead of an estimate.
  if (!r.ok) {
    const never = neverFitLine(ctx, state, job.gang);
    if (never !== undefined) return { target, state: 'waiting', lines: [...lines, never], neverFits: true };
  }
  // 2. The queue's view: one cycle over that copy (every pod is in a queue: its label's default one without Queue objects).
  const options = { minRuntimeMs: view.minRuntimeMs };
  // The hold clocks the leader recorded on the pods (ADR 0195): a gang it holds for a better placement is said to be
  // held here too, counted from the same first hold.
  const res = runCycle({ nowMs, scheduler: copy, queues: view.queues, pending: view.jobs, running: view.running, options, heldSince: recordedHolds(view) });
  const w = res.waiting.get(id);
  if (w !== undefined) lines.push(`queue ${job.queue} holds it (${w.reason}): ${w.message}`);
  else if (res.started.some((x) => x.job.id === id)) lines.push(`queue ${job.queue}: admitted at the next cycle`);
  // 3. When: the cycle run forward in virtual time.
  const arrivals = podJobs.forecast(nowMs, view.jobs.length);
  const eta = estimateStarts({
    nowMs,
    state,
    profile,
    rng: ctx.rng(),
    queues: view.queues,
    pending: view.jobs,
    running: view.running,
    options,
    untilStarted: id,
    requeue: podJobs.requeueOf(view.jobs, arrivals),
    arrivals,
  }).get(id);
  // 4. The estimate the running scheduler published earlier, when its time has passed and the job still waits.
  const overdue = r.ok ? undefined : overdueLine(ctx, target, view.podsOf.get(job.id) ?? [], view.running, nowMs);
  if (overdue !== undefined) lines.push(overdue.line);
  lines.push(
    eta === undefined
      ? 'expected start: not within 7 days at current estimates'
      : `expected start: ${new Date(eta).toISOString()} (in ${Math.max(0, Math.round((eta - nowMs) / 1000))} s)`,
  );
  return {
    target,
    state: r.ok ? 'fits' : 'waiting',
    lines,
    ...(eta === undefined ? {} : { etaMs: eta }),
    ...(overdue === undefined ? {} : { overdueSinceMs: overdue.sinceMs }),
  };
}

/** The same nodes with nothing on them (health and cordons as they are now: those are the cluster's, not its load). */
function emptyState(state: ClusterState): ClusterState {
  const ranks = new Map(state.nodes.map((n) => [n.name, n.rank]));
  return new ClusterState(
    state.nodes.map((n) => n.spec),
    (name) => ranks.get(name) as number,
  );
}

const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;

/**
 * "can never fit: needs 48 GPUs (6 pods × 8), the cluster has 32" when even an empty cluster of these nodes cannot
 * hold the gang; undefined when one could (then it is a matter of waiting).
 */
export function neverFitLine(ctx: Pick<ExplainContext, 'profile' | 'rng'>, state: ClusterState, gang: GangSpec): string | undefined {
  const empty = new Scheduler(ctx.profile, emptyState(state), ctx.rng());
  const stmt = new Statement(empty.state);
  const r = empty.placeGang(gang, stmt);
  stmt.discard();
  if (r.ok) return undefined;
  const members = gang.members.slice(0, Math.max(1, gang.minMember));
  const gpusOf = (m: (typeof members)[number]): number => (m.request.gpuCount * m.request.gpuMilli) / 1000;
  const need = members.reduce((a, m) => a + gpusOf(m), 0);
  const same = members.every((m) => gpusOf(m) === gpusOf(members[0] as (typeof members)[number]));
  const how = same ? `${plural(members.length, 'pod')} × ${gpusOf(members[0] as (typeof members)[number])}` : `${plural(members.length, 'pod')}`;
  const models = [...new Set(members.flatMap((m) => m.gpuModels))];
  const minCc = Math.max(0, ...members.map((m) => m.minComputeCapability));
  const all = state.nodes.flatMap((n) => n.spec.gpus);
  const fitting = all.filter((g) => (models.length === 0 || models.includes(g.model)) && g.computeCapability >= minCc);
  const constraint = [models.length === 0 ? '' : `of ${models.join(' or ')}`, minCc === 0 ? '' : `with compute capability ≥ ${minCc / 10}`]
    .filter((x) => x !== '')
    .join(' ');
  const counts = new Map<string, number>();
  for (const g of all) counts.set(g.model, (counts.get(g.model) ?? 0) + 1);
  const byModel = [...counts].map(([m, n]) => `${n} ${m}`).join(', ');
  if (need > fitting.length) {
    if (constraint === '') return `can never fit: needs ${need} GPUs (${how}), the cluster has ${all.length}${byModel === '' ? '' : ` (${byModel})`}`;
    return `can never fit: needs ${need} GPUs ${constraint} (${how}), the cluster has ${fitting.length} of them (${all.length} GPUs in all: ${byModel})`;
  }
  const perPod = Math.max(...members.map((m) => m.request.gpuCount));
  const largest = Math.max(0, ...state.nodes.map((n) => n.spec.gpus.filter((g) => fitting.includes(g)).length));
  if (perPod > largest)
    return `can never fit: a pod needs ${perPod} GPUs${constraint === '' ? '' : ` ${constraint}`} on one node, the largest node has ${largest}`;
  return `can never fit, not even on an empty cluster: ${r.explanation.message}`;
}

/**
 * The expected start published on the target's pods (`expected-start`, by the running scheduler's forward run)
 * when it has passed while the job still waits, with what that estimate assumed: the running jobs ending by
 * their expected runtimes (given or learned), of which these still run.
 */
function overdueLine(
  ctx: ExplainContext,
  target: string,
  pods: readonly { readonly key: string }[],
  running: ReadonlyMap<string, RunningJob>,
  nowMs: number,
): { line: string; sinceMs: number } | undefined {
  const published = Math.min(
    ...pods.map((p) => Date.parse(ctx.cache.pod(p.key)?.metadata?.annotations?.[ANNOTATION.expectedStart] ?? '')).filter((t) => Number.isFinite(t)),
  );
  // Estimates are refreshed once a minute: one less than a minute past is "now", not overdue (as sits top shows it).
  if (!Number.isFinite(published) || nowMs - published <= 60_000) return undefined;
  const still = [...running.values()].filter((j) => j.startMs <= published).sort((a, b) => a.startMs - b.startMs);
  const ago = Math.round((nowMs - published) / 60_000);
  const names = still.slice(0, 3).map((j) => `${j.id.replace(/^gang:/, '')} (running ${Math.round((nowMs - j.startMs) / 60_000)} min)`);
  const why =
    still.length === 0
      ? 'the estimate assumed the GPUs it needed would be free by then, and others were placed first (a higher priority or an earlier queue position)'
      : `the estimate assumed running jobs would end by their expected runtimes (given or learned); still running: ${names.join(', ')}${still.length > 3 ? ` and ${still.length - 3} more` : ''}`;
  return { sinceMs: published, line: `overdue since ${new Date(published).toISOString()} (${ago} min ago) for ${target}: ${why}` };
}

/** Bound, not terminating pods of the PodGroup `namespace/name`. */
function runningMembers(cache: ClusterCache, target: string): V1Pod[] {
  const [ns, name] = target.split('/');
  const out: V1Pod[] = [];
  for (const p of cache.allPods()) {
    if (p.metadata?.namespace !== ns || p.metadata?.labels?.[LABEL.podGroup] !== name) continue;
    if ((p.spec?.nodeName ?? '') === '' || p.metadata?.deletionTimestamp !== undefined) continue;
    out.push(p);
  }
  return out.sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
}

const indicesOf = (p: V1Pod): number[] =>
  (p.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => /^\d+$/.test(x))
    .map(Number);

/**
 * The expected training step on the GPUs these pods hold vs on an ideal placement of as many GPUs (ADR 0103),
 * for the default training job (the pods do not say what they train). Nothing for pods without GPU indices.
 */
export function stepLines(ctx: Pick<ExplainContext, 'cache'>, pods: readonly V1Pod[]): string[] {
  const state = ctx.cache.state();
  const placements = pods.map((p) => ({ node: p.spec?.nodeName ?? '', gpus: indicesOf(p) })).filter((p) => p.gpus.length > 0);
  const shares = sharesOf(placements, (n) => state.node(n)?.spec);
  if (shares.length === 0) return [];
  const m = DEFAULT_TRAINING_MODEL;
  const here = stepTime(m, shares);
  const like = shares.reduce((a, b) => (b.gpus.length > a.gpus.length ? b : a));
  const idealAt = idealShares(like, here.gpus);
  const ideal = stepTime(m, idealAt);
  const s3 = (x: number): string => x.toFixed(3);
  const comm =
    here.gpus < 2
      ? 'no all-reduce (one GPU)'
      : `${here.algorithm} all-reduce ${s3(here.commSec)} s, ${s3(here.exposedCommSec)} s of it exposed, limited by ${here.bottleneck} at ${Math.round(here.busGBps)} GB/s`;
  return [
    `expected step of a ${m.name} DDP job (ADR 0103) on these ${here.gpus} GPUs on ${here.nodes} node(s): ${s3(here.stepSec)} s = compute ${s3(here.computeSec)} s + ${comm}; ${Math.round(here.tokensPerSec)} tokens/s, GPU utilisation ${(100 * here.gpuUtilization).toFixed(1)} %`,
    `on an ideal placement (${idealAt.length} ${like.gpuModel} node(s) like ${like.name}, one rack): ${s3(ideal.stepSec)} s, ${Math.round(ideal.tokensPerSec)} tokens/s, GPU utilisation ${(100 * ideal.gpuUtilization).toFixed(1)} %; this placement is ×${(here.stepSec / ideal.stepSec).toFixed(2)} the ideal step`,
  ];
}
