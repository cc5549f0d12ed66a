/**
 * `sits explain`: for a pending pod or pod group (`namespace/name`), why it is not placed — the core's
 * explanation on the current snapshot, the queue's reason from a cycle run on a copy, and the start time
 * the queue cycle predicts when run forward (as the ETA publisher does: runtimes given or learned, victims
 * requeued, later arrivals forecast from the pods this process has seen). Nothing is written: every
 * scheduler here is a trial one over a copy of the cluster.
 */
import { cloneState, estimateStarts } from '../core/actions/eta.ts';
import { runCycle } from '../core/actions/queue-cycle.ts';
import { Scheduler } from '../core/framework/scheduler.ts';
import type { Profile } from '../core/framework/types.ts';
import type { Rng } from '../core/ports.ts';
import { Statement } from '../core/statement/statement.ts';
import type { ClusterCache } from './cluster-cache.ts';
import { ANNOTATION, LABEL } from '../api/wire.ts';
import type { V1Pod } from '@kubernetes/client-node';
import { DEFAULT_TRAINING_MODEL, idealShares, sharesOf, stepTime } from '../core/estimate/step-time.ts';
import type { PodJobs } from './pod-jobs.ts';

export interface ExplainReport {
  readonly target: string;
  readonly state: 'bound' | 'fits' | 'waiting' | 'unknown';
  readonly lines: readonly string[];
  readonly etaMs?: number;
}

export interface ExplainContext {
  readonly cache: ClusterCache;
  readonly jobs: PodJobs;
  readonly profile: Profile;
  readonly schedulerName: string;
  readonly rng: () => Rng;
}

export function explainTarget(ctx: ExplainContext, target: string, nowMs: number): ExplainReport {
  const { cache, jobs: podJobs, profile } = ctx;
  const state = cache.state();
  const { singles, gangs } = podJobs.pendingUnits();
  const single = singles.find((p) => p.key === target);
  const gangMembers = gangs.get(target);
  if (single === undefined && gangMembers === undefined) {
    const pod = cache.pod(target);
    const gates = pod?.spec?.schedulingGates ?? [];
    if (pod !== undefined && gates.length > 0 && (pod.spec?.nodeName ?? '') === '') return { target, state: 'waiting', lines: [`${target}: SchedulingGated: not tried until its scheduling gates are removed (${gates.map((g) => g.name).join(', ')})`] };
    if (pod !== undefined && (pod.spec?.nodeName ?? '') !== '') return { target, state: 'bound', lines: [`${target} is bound to ${pod.spec?.nodeName ?? ''} (GPUs ${pod.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? 'none'})`, ...stepLines(ctx, [pod])] };
    // A running pod group: where its pods are and what that is worth to its training step (issue 19).
    const members = pod === undefined ? runningMembers(ctx.cache, target) : [];
    if (members.length > 0) return { target, state: 'bound', lines: [`gang ${target} is running: ${members.length} pods on ${[...new Set(members.map((m) => m.spec?.nodeName ?? ''))].join(', ')}`, ...stepLines(ctx, members)] };
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
  // 2. The queue's view: one cycle over that copy (every pod is in a queue: its label's default one without Queue objects).
  const options = { minRuntimeMs: view.minRuntimeMs };
  const res = runCycle({ nowMs, scheduler: copy, queues: view.queues, pending: view.jobs, running: view.running, options });
  const w = res.waiting.get(id);
  if (w !== undefined) lines.push(`queue ${job.queue} holds it (${w.reason}): ${w.message}`);
  else if (res.started.some((x) => x.job.id === id)) lines.push(`queue ${job.queue}: admitted at the next cycle`);
  // 3. When: the cycle run forward in virtual time.
  const arrivals = podJobs.forecast(nowMs, view.jobs.length);
  const eta = estimateStarts({ nowMs, state, profile, rng: ctx.rng(), queues: view.queues, pending: view.jobs, running: view.running, options, untilStarted: id, requeue: podJobs.requeueOf(view.jobs, arrivals), arrivals }).get(id);
  lines.push(eta === undefined ? 'expected start: not within 7 days at current estimates' : `expected start: ${new Date(eta).toISOString()} (in ${Math.max(0, Math.round((eta - nowMs) / 1000))} s)`);
  return { target, state: r.ok ? 'fits' : 'waiting', lines, ...(eta === undefined ? {} : { etaMs: eta }) };
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
  const comm = here.gpus < 2 ? 'no all-reduce (one GPU)' : `${here.algorithm} all-reduce ${s3(here.commSec)} s, ${s3(here.exposedCommSec)} s of it exposed, limited by ${here.bottleneck} at ${Math.round(here.busGBps)} GB/s`;
  return [
    `expected step of a ${m.name} DDP job (ADR 0103) on these ${here.gpus} GPUs on ${here.nodes} node(s): ${s3(here.stepSec)} s = compute ${s3(here.computeSec)} s + ${comm}; ${Math.round(here.tokensPerSec)} tokens/s, GPU utilisation ${(100 * here.gpuUtilization).toFixed(1)} %`,
    `on an ideal placement (${idealAt.length} ${like.gpuModel} node(s) like ${like.name}, one rack): ${s3(ideal.stepSec)} s, ${Math.round(ideal.tokensPerSec)} tokens/s, GPU utilisation ${(100 * ideal.gpuUtilization).toFixed(1)} %; this placement is ×${(here.stepSec / ideal.stepSec).toFixed(2)} the ideal step`,
  ];
}
