/**
 * The queue scenario's virtual-time run (queue-scenario.ts): running jobs placed at the start, then the queue
 * cycles on the simulator's spine, each checked for the invariants of issue 6 and recorded in a trace that the
 * expectations (queue-scenario-check.ts) read.
 */
import { type Static } from '@sinclair/typebox';
import { jobResources, startedJob, type QueuedJob, type RunningJob } from '../core/actions/jobs.ts';
import { disruptionsAllowed, type DisruptionBudget } from '../core/actions/disruption.ts';
import { commitMigration, expectedStartMs, planMigration } from '../core/actions/migration.ts';
import { DEFAULT_QUEUE, usageOf, type CycleOptions, type Reservation, type Waiting } from '../core/actions/queue-cycle.ts';
import type { Scheduler } from '../core/framework/scheduler.ts';
import { type Placement } from '../core/framework/scheduler.ts';
import type { PodSpec } from '../core/model/pod.ts';
import type { QueueSpec } from '../core/queue/model.ts';
import type { ClusterState } from '../core/snapshot/cluster-state.ts';
import { matchesSelector } from '../kube/cache/disruption-budgets.ts';
import { placeRunning } from './schedule-batch.ts';
import { type SimApp } from './sim-app.ts';
import type { ScenarioBudgetT } from './queue-scenario-schema.ts';

export interface JobDef {
  readonly job: QueuedJob;
  readonly submitMs: number;
  readonly where: readonly (string | number)[];
}

export interface RunningDef {
  readonly job: QueuedJob;
  readonly nodes?: readonly string[];
  readonly startMs: number;
  readonly estEndMs: number;
  readonly criticalUntilMs?: number;
  readonly lastCheckpointMs?: number;
  readonly preemptible: boolean;
  readonly checkpointable?: boolean;
  /** After a checkpoint request, when it commits (ms later); undefined: never. */
  readonly checkpointAfterMs?: number;
  readonly checkpointInFlight?: boolean;
  readonly where: readonly (string | number)[];
}

export function startRunning(scheduler: Scheduler, state: ClusterState, r: RunningDef): RunningJob | string {
  let podIds: string[];
  if (r.nodes !== undefined) {
    podIds = [];
    for (let k = 0; k < r.nodes.length; k++) {
      const pod = r.job.gang.members[k] as PodSpec;
      const e = placeRunning(state, { pod, node: r.nodes[k] as string });
      if (e !== undefined) return e;
      podIds.push(pod.id);
    }
  } else {
    const placed = scheduler.scheduleGang(r.job.gang);
    if (!placed.ok) return placed.explanation.message;
    podIds = placed.placements.map((p) => p.podId);
  }
  const model = state.nodeOfPod(podIds[0] ?? '')?.spec.gpus[0]?.model;
  return {
    id: r.job.id,
    queue: r.job.queue,
    priority: r.job.priority,
    startMs: r.startMs,
    estEndMs: r.estEndMs,
    podIds,
    resources: jobResources(r.job),
    ...(model === undefined ? {} : { gpuModel: model }),
    ...(r.criticalUntilMs === undefined ? {} : { criticalUntilMs: r.criticalUntilMs }),
    ...(r.lastCheckpointMs === undefined ? {} : { lastCheckpointMs: r.lastCheckpointMs }),
    preemptible: r.preemptible,
    ...(r.checkpointable === undefined ? {} : { checkpointable: r.checkpointable }),
    ...(r.checkpointInFlight === undefined ? {} : { checkpointInFlight: r.checkpointInFlight }),
  };
}

export interface Trace {
  readonly failures: string[];
  readonly log: string[];
  /** First start of each job: time and placements. */
  readonly started: Map<string, { atMs: number; placements: readonly Placement[] }>;
  readonly preempted: { victim: string; by: string; reason: string; atMs: number }[];
  readonly deferred: Map<string, { by: string; untilMs: number }>;
  readonly checkpointRequests: { victim: string; by: string; atMs: number }[];
  readonly migrations: { moved: string; by: string; atMs: number; nodes: readonly string[] }[];
  /** Latest reason each job waited for (dropped when it starts). */
  readonly waiting: Map<string, Waiting>;
  /** Why each job waited, cycle by cycle (time → reason). */
  readonly waitingAt: Map<string, Map<number, Waiting>>;
  /** Reservations of each job, cycle by cycle (time → reservation). */
  readonly reservations: Map<string, Map<number, Reservation>>;
  readonly running: ReadonlyMap<string, RunningJob>;
  /** Per set of waiting queues (sorted names joined by ','), the GPU-time each queue held during such cycles. */
  readonly gpuTime: Map<string, Map<string, number>>;
}

/** One simulation's state beside the trace: what the per-cycle steps below share. */
interface SimRun {
  readonly app: SimApp;
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly running: Map<string, RunningJob>;
  readonly options: Partial<CycleOptions>;
  readonly t: Trace;
  readonly everyMs: number;
  /** Each job as the scenario gave it: a preempted job goes back to its queue from this. */
  readonly template: ReadonlyMap<string, QueuedJob>;
  /** Jobs waiting in the scheduling queue. */
  readonly pending: Map<string, QueuedJob>;
  /** Requested checkpoints that will commit: victim → commit time. */
  readonly commits: Map<string, number>;
  readonly checkpointable: ReadonlySet<string>;
  readonly commitAfter: ReadonlyMap<string, number>;
  readonly fail: (m: string) => void;
  readonly enqueue: (j: QueuedJob, now: number) => void;
  /** The last usage line logged (a line is logged when it changes). */
  lastLine: string;
}

type CycleResult = ReturnType<SimApp['spine']['cycle']>;

const sec = (ms: number): string => `${Math.round(ms / 100) / 10}s`;

/**
 * The cycles on the simulator's spine: jobs join the scheduling queue when they arrive (or come back after a
 * preemption), running jobs that reached their end leave the cluster (an event that wakes parked jobs), and
 * every `everySec` the spine runs one queue cycle whose commits reach the simulated cluster.
 */
export function simulate(
  file: string,
  app: SimApp,
  queues: ReadonlyMap<string, QueueSpec>,
  jobDefs: readonly JobDef[],
  runningDefs: readonly RunningDef[],
  running: Map<string, RunningJob>,
  cycles: { count: number; everySec: number },
  options: Partial<CycleOptions>,
  budgetsAt: (running: ReadonlyMap<string, RunningJob>) => readonly DisruptionBudget[] | undefined,
): Trace {
  const t: Trace = {
    failures: [],
    log: [],
    started: new Map(),
    preempted: [],
    deferred: new Map(),
    checkpointRequests: [],
    migrations: [],
    waiting: new Map(),
    waitingAt: new Map(),
    reservations: new Map(),
    running,
    gpuTime: new Map(),
  };
  const { scheduler, queue } = app;
  const pending = new Map<string, QueuedJob>();
  const s: SimRun = {
    app,
    queues,
    running,
    options,
    t,
    everyMs: cycles.everySec * 1000,
    template: new Map<string, QueuedJob>([...runningDefs.map((r) => [r.job.id, r.job] as const), ...jobDefs.map((j) => [j.job.id, j.job] as const)]),
    pending,
    commits: new Map(),
    checkpointable: new Set(runningDefs.filter((r) => r.checkpointable === true).map((r) => r.job.id)),
    commitAfter: new Map(runningDefs.filter((r) => r.checkpointAfterMs !== undefined).map((r) => [r.job.id, r.checkpointAfterMs as number])),
    fail: (m) => {
      if (!t.failures.includes(`${file}: ${m}`)) t.failures.push(`${file}: ${m}`);
    },
    enqueue: (j, now) => {
      pending.set(j.id, j);
      queue.add(j, now);
      queue.onEvent({ kind: 'arrived', queue: j.queue }, now);
    },
    lastLine: '',
  };
  const arrivals = [...jobDefs].sort((a, b) => a.submitMs - b.submitMs);
  let next = 0;
  for (let c = 0; c < cycles.count; c++) {
    const now = c * s.everyMs;
    commitCheckpoints(s, now);
    const finished: string[] = [];
    for (const [id, r] of running) {
      if (r.estEndMs > now) continue;
      app.end(r.podIds);
      running.delete(id);
      finished.push(id);
    }
    if (finished.length > 0) {
      t.log.push(`t=${sec(now)} finished: ${names(finished)}`);
      queue.onEvent({ kind: 'freed' }, now);
    }
    while (next < arrivals.length && (arrivals[next] as JobDef).submitMs <= now) {
      const j = (arrivals[next++] as JobDef).job;
      s.enqueue(j, now);
    }
    const budgets = budgetsAt(running);
    const res = app.spine.cycle({ nowMs: now, scheduler, queues, running, options, ...(budgets === undefined ? {} : { disruptionBudgets: budgets }) });
    recordPreemptions(s, res, now);
    for (const q of res.checkpointRequests) {
      const r = running.get(q.victim.id);
      if (r === undefined) continue;
      running.set(r.id, { ...r, checkpointRequestedMs: now });
      const after = s.commitAfter.get(r.id);
      if (after !== undefined) s.commits.set(r.id, now + after);
      t.checkpointRequests.push({ victim: r.id, by: q.by, atMs: now });
      t.log.push(`t=${sec(now)} checkpoint asked of ${r.id} for ${q.by} (evicted by ${sec(q.deadlineMs)} at the latest)`);
    }
    for (const d of res.deferred) {
      t.deferred.set(d.victim.id, { by: d.by, untilMs: d.atMs });
      t.log.push(`t=${sec(now)} preemption of ${d.victim.id} for ${d.by} deferred to ${sec(d.atMs)} (critical phase)`);
    }
    recordStarts(s, res, now);
    migrateForWaiting(s, res, now);
    for (const r of res.reservations) t.reservations.set(r.jobId, (t.reservations.get(r.jobId) ?? new Map<number, Reservation>()).set(now, r));
    checkQuotasAndLogUse(s, now);
  }
  const held = [...t.waiting].filter(([id]) => pending.has(id));
  for (const [id, w] of held.slice(0, 20)) t.log.push(`end: ${id} held (${w.reason}): ${w.message}`);
  if (held.length > 20) t.log.push(`end: ... and ${held.length - 20} more held`);
  return t;
}

/** Checkpoints asked for earlier that commit by `now`. */
function commitCheckpoints(s: SimRun, now: number): void {
  for (const [id, atMs] of s.commits) {
    const r = s.running.get(id);
    if (atMs > now || r === undefined) continue;
    s.commits.delete(id);
    s.running.set(id, { ...r, lastCheckpointMs: atMs });
    s.t.log.push(`t=${sec(now)} ${id} committed the checkpoint asked of it (at ${sec(atMs)})`);
  }
}

/** The cycle's victims: checked for the invariants, then back to their queue with the lost work to redo. */
function recordPreemptions(s: SimRun, res: CycleResult, now: number): void {
  const { t, fail, options, running } = s;
  for (const p of res.preempted) {
    const v = p.victim;
    const left = v.podIds.filter((pod) => s.app.state.allocation(pod) !== undefined);
    if (left.length > 0) fail(`t=${sec(now)}: ${v.id} preempted in part: ${left.join(', ')} still allocated`);
    if ((v.criticalUntilMs ?? -Infinity) > now) fail(`t=${sec(now)}: ${v.id} preempted in its critical phase (until ${sec(v.criticalUntilMs as number)})`);
    if (options.checkpointAware === true && v.checkpointInFlight === true && v.checkpointRequestedMs === undefined)
      fail(`t=${sec(now)}: ${v.id} preempted while writing a checkpoint`);
    if (options.checkpointAware === true && v.checkpointable === true && v.checkpointRequestedMs === undefined)
      fail(`t=${sec(now)}: ${v.id} can checkpoint but was preempted without being asked for one`);
    running.delete(v.id);
    t.preempted.push({ victim: v.id, by: p.by, reason: p.reason, atMs: now });
    t.log.push(`t=${sec(now)} ${v.id} preempted: ${p.reason}`);
    // Back to its queue with the work since its last checkpoint to do again.
    const tmpl = s.template.get(v.id) as QueuedJob;
    const redo = now - Math.max(v.startMs, v.lastCheckpointMs ?? v.startMs);
    s.enqueue({ ...tmpl, estRuntimeMs: Math.max(1000, v.estEndMs - now + redo) }, now);
  }
}

/** The cycle's started gangs (checked whole) join the running jobs; the waiting ones keep their reason. */
function recordStarts(s: SimRun, res: CycleResult, now: number): void {
  const { t, fail, running, pending } = s;
  for (const st of res.started) {
    const job = st.job;
    if (new Set(st.placements.map((p) => p.podId)).size !== job.gang.members.length)
      fail(`t=${sec(now)}: ${job.id} started with ${st.placements.length} of ${job.gang.members.length} members`);
    pending.delete(job.id);
    t.waiting.delete(job.id);
    if (!t.started.has(job.id)) t.started.set(job.id, { atMs: now, placements: st.placements });
    const model = s.app.state.node(st.placements[0]?.node ?? '')?.spec.gpus[0]?.model;
    running.set(job.id, startedJob(job, st.placements, now, { gpuModel: model, checkpointable: s.checkpointable.has(job.id) }));
  }
  if (res.started.length > 0)
    t.log.push(`t=${sec(now)} started: ${names(res.started.map((x) => `${x.job.id} (${[...new Set(x.placements.map((p) => p.node))].join(',')})`))}`);
  for (const [id, w] of res.waiting) {
    if (!pending.has(id)) continue;
    t.waiting.set(id, w);
    const m = t.waitingAt.get(id) ?? new Map<number, Waiting>();
    t.waitingAt.set(id, m.set(now, w));
  }
}

/**
 * Defragmentation by migration (ADR 0095): a gang of a queue that allows it, waiting on capacity, gets the
 * moves that free a domain for it when they pay; the moved jobs keep running elsewhere, later by their pause.
 */
function migrateForWaiting(s: SimRun, res: CycleResult, now: number): void {
  const { t, fail, running, pending } = s;
  const { scheduler, state, queue } = s.app;
  for (const [id, w] of res.waiting) {
    const job = pending.get(id);
    if (job === undefined || w.reason !== 'capacity' || s.queues.get(job.queue)?.preemption?.defragmentByMigration !== true) continue;
    const movable = [...running.values()]
      .filter((r) => r.preemptible && r.checkpointable === true && (r.criticalUntilMs ?? -Infinity) <= now)
      .map((r) => ({ job: r, gang: (s.template.get(r.id) as QueuedJob).gang }));
    const expected = expectedStartMs(scheduler, job.gang, [...running.values()], now);
    const plan = planMigration({ nowMs: now, scheduler, job, movable, expectedStartMs: expected });
    if (plan === undefined) continue;
    const placements = commitMigration(scheduler, plan);
    for (const m of plan.moves) {
      const r = running.get(m.job.id) as RunningJob;
      const lost = r.podIds.filter((pod) => state.allocation(pod) === undefined);
      if (lost.length > 0) fail(`t=${sec(now)}: ${r.id} moved in part: ${lost.join(', ')} not placed again`);
      running.set(r.id, { ...r, estEndMs: r.estEndMs + m.pauseMs, lastCheckpointMs: now });
      const to = [...new Set(m.to.map((a) => a.node))].sort();
      t.migrations.push({ moved: r.id, by: id, atMs: now, nodes: to });
      t.log.push(`t=${sec(now)} ${r.id} moved to ${to.join(',')} (checkpoint, restore: ${sec(m.pauseMs)}) to free ${plan.level} ${plan.domain} for ${id}`);
    }
    pending.delete(id);
    queue.delete(id);
    t.waiting.delete(id);
    if (!t.started.has(id)) t.started.set(id, { atMs: now, placements });
    const model = state.node(placements[0]?.node ?? '')?.spec.gpus[0]?.model;
    running.set(id, startedJob(job, placements, plan.startMs, { gpuModel: model }));
    t.log.push(
      `t=${sec(now)} started: ${id} (${[...new Set(placements.map((p) => p.node))].join(',')}) once the moved jobs have checkpointed (at ${sec(plan.startMs)}; gain ${Math.round(plan.gainGpuMs / 3.6e6)} GPU-h > cost ${Math.round((100 * plan.costGpuMs) / 3.6e6) / 100} GPU-h)`,
    );
  }
}

/** After the cycle: no queue above its quota, the usage line when it changed, and the GPU-time for the shares. */
function checkQuotasAndLogUse(s: SimRun, now: number): void {
  const { t, running, queues } = s;
  // Quota: no queue above nominal, or above nominal + borrowing limit in a cohort.
  for (const [name, u] of usageOf(running.values())) {
    const q = queues.get(name);
    if (q === undefined) continue;
    const ceiling = q.nominal.gpuMilli + (q.cohort === undefined ? 0 : q.borrowingLimit.gpuMilli);
    if (u.total.gpuMilli > ceiling) s.fail(`t=${sec(now)}: queue ${name} uses ${u.total.gpuMilli / 1000} GPUs, above its quota ${ceiling / 1000}`);
  }
  const use = usageOf(running.values());
  // Without Queue objects every job is in its undeclared queue (`default` unless named).
  const shown = queues.size > 0 ? [...queues.keys()] : [...new Set([...use.keys(), DEFAULT_QUEUE])].sort();
  const line = `GPUs in use: ${shown.map((q) => `${q} ${(use.get(q)?.total.gpuMilli ?? 0) / 1000}`).join(', ')}; ${s.pending.size} jobs waiting`;
  if (line !== s.lastLine) t.log.push(`t=${sec(now)} ${line}`);
  s.lastLine = line;
  // Shares: GPU-time per queue until the next cycle, filed under the set of queues that have jobs waiting.
  const key = [...new Set([...s.pending.values()].map((j) => j.queue))].sort().join(',');
  const times = t.gpuTime.get(key) ?? new Map<string, number>([['', 0]]);
  times.set('', (times.get('') ?? 0) + s.everyMs);
  for (const r of running.values()) times.set(r.queue, (times.get(r.queue) ?? 0) + r.resources.gpuMilli * s.everyMs);
  t.gpuTime.set(key, times);
}

/**
 * The scenario's budgets over the running jobs' pods, as the disruption controller counts them: expected =
 * the pods of every job whose labels match (running or waiting: the controllers' scale), healthy = those
 * running now. Undefined without budgets (the cycle then works as it always did).
 */
export function budgetsFor(
  defs: readonly Static<typeof ScenarioBudgetT>[],
  jobs: readonly QueuedJob[],
  labelsOf: ReadonlyMap<string, Readonly<Record<string, string>>>,
): (running: ReadonlyMap<string, RunningJob>) => readonly DisruptionBudget[] | undefined {
  if (defs.length === 0) return () => undefined;
  const selected = defs.map((d) => jobs.filter((j) => matchesSelector(d.selector, labelsOf.get(j.id) ?? {})));
  return (running) =>
    defs.map((d, i) => {
      const js = selected[i] as QueuedJob[];
      const expected = js.reduce((n, j) => n + j.gang.members.length, 0);
      const podIds = new Set(js.flatMap((j) => running.get(j.id)?.podIds ?? []));
      return {
        name: d.name,
        podIds,
        disruptionsAllowed: disruptionsAllowed(
          {
            ...(d.minAvailable === undefined ? {} : { minAvailable: d.minAvailable }),
            ...(d.maxUnavailable === undefined ? {} : { maxUnavailable: d.maxUnavailable }),
          },
          expected,
          podIds.size,
        ),
      };
    });
}

/** A list for the log: the first ten names and how many more. */
function names(ids: readonly string[]): string {
  return ids.length <= 10 ? ids.join(', ') : `${ids.slice(0, 10).join(', ')} and ${ids.length - 10} more`;
}
