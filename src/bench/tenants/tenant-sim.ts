/**
 * The multi-tenant experiment (issue 6 §6): the same Philly window replayed under SITS (weighted fair share,
 * quotas with borrowing, reservations, gang-aware preemption) and under one FIFO queue, with the same core
 * scheduler for placement. Virtual time; deterministic for the same input.
 */
import type { CycleOptions } from '../../core/actions/queue-cycle.ts';
import { estimateStarts } from '../../core/actions/eta.ts';
import { ArrivalHistory } from '../../core/estimate/arrivals.ts';
import { RuntimeModel } from '../../core/estimate/runtime.ts';
import { expectedRemaining, requeueAfterCheckpoint, runtimeKeys, withLearnedEnds } from '../../core/estimate/job-runtimes.ts';
import { jobResources, startedJob, type QueuedJob, type RunningJob } from '../../core/actions/jobs.ts';
import { checkpointMs } from '../../core/actions/checkpoint.ts';
import { makePod, type PodSpec } from '../../core/model/pod.ts';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import type { NodeSpec } from '../../core/model/node.ts';
import { deservedGpu } from '../../core/queue/fair-share.ts';
import { makeQueue, type QueueSpec } from '../../core/queue/model.ts';
import { seededRng } from '../../core/ports.ts';
import { Environment } from '../../sim/engine.ts';
import { nearestRank } from '../../core/stats.ts';
import { simAppOrThrow } from '../../app/sim-app.ts';
import { TIERS, type TenantJob, type Tier } from './philly-window.ts';

export const TIER_WEIGHT: Readonly<Record<Tier, number>> = { gold: 4, silver: 2, bronze: 1 };

export interface TenantSimOptions {
  readonly mode: 'sits' | 'fifo';
  readonly nodes: number;
  readonly shape: string;
  /** The busy window (utilisation is measured over it). */
  readonly windowMs: number;
  readonly checkpointEveryMs: number;
  /**
   * Preemption of checkpointing jobs (ADR 0093): `plain` evicts at once and the victim redoes the work since its
   * last periodic checkpoint; `aware` orders victims by that work, asks each for a checkpoint (it takes
   * `checkpointMs(gpus)`, training paused) and evicts once it commits. Set, the result counts the redone work.
   */
  readonly checkpoint?: 'plain' | 'aware';
  /** Seconds one node's checkpoint takes (default CHECKPOINT_SECONDS_PER_NODE, seed 000 §1). */
  readonly checkpointSecondsPerNode?: number;
  /** Jobs (evenly spaced by submission) whose start is estimated when they arrive; SITS only. */
  readonly etaSamples: number;
  readonly seed: number;
  /** How start times are estimated (default: every refinement on; switches exist to measure each one). */
  readonly eta?: Partial<EtaMethod>;
  readonly onProgress?: (doneJobs: number, totalJobs: number) => void;
  /** Every estimate with its outcome, after the run (for error breakdowns). */
  readonly onEtaSample?: (s: { readonly id: string; readonly tier: Tier; readonly gpus: number; readonly submitMs: number; readonly etaMs: number; readonly startMs: number }) => void;
}

/** The parts of the start-time estimate (ADR 0021); each can be switched off to measure what it is worth. */
export interface EtaMethod {
  /** Expected arrivals per queue from its recent arrival rate (only arrivals already seen). */
  readonly forecast: boolean;
  /** A job preempted in the forward run goes back to its queue (else it vanishes). */
  readonly requeue: boolean;
  /** The forward run cycles on the scheduler's own cadence (its periodic pass), not at every event. */
  readonly cadence: boolean;
  /** Waiting jobs get today's runtime estimate (else the one made when they were queued). */
  readonly refreshPending: boolean;
  /**
   * Diagnostics only — never for the reported error: give the estimate what the scheduler cannot know, the
   * true remaining runtimes (`runtimes`) or the trace's true later arrivals (`arrivals`), to measure how much
   * of the error each unknown causes.
   */
  readonly oracle?: { readonly runtimes?: boolean; readonly arrivals?: boolean };
}

export const DEFAULT_ETA_METHOD: EtaMethod = { forecast: true, requeue: true, cadence: true, refreshPending: true };

export interface EtaError {
  readonly p50: number;
  readonly p90: number;
  readonly samples: number;
}

export interface TierMetrics {
  readonly sharePct: number;
  readonly entitledPct: number;
  readonly queueDelaySec: { readonly p50: number; readonly p99: number };
  readonly jobs: number;
  readonly neverStarted: number;
}

export interface TenantSimResult {
  readonly tiers: Record<Tier, TierMetrics>;
  readonly jain: number;
  readonly utilizationPct: number;
  readonly preemptions: number;
  /** Scheduling cycles run (a cycle per event instant, a periodic one a minute apart, and the wakeups of deferrals). */
  readonly cycles: number;
  /**
   * |estimated start − actual start| / (actual start − time of the estimate), in %, over jobs whose start was
   * estimated when they were submitted (the denominator is at least 60 s); by tier, by how long the job
   * then waited (how far ahead the estimate looked), and the signed median (< 0: estimates too early).
   */
  readonly etaErrorPct?: EtaError & { readonly signedP50: number; readonly byTier: Record<Tier, EtaError>; readonly byWait: Record<string, EtaError> };
  readonly contendedHours: number;
  /** With `checkpoint` set: GPU-hours of work done again after preemptions, and GPU-hours spent writing requested checkpoints. */
  readonly redoneGpuHours?: number;
  readonly checkpointGpuHours?: number;
}

type Ev = { kind: 'arrive'; job: TenantJob } | { kind: 'finish'; id: string; version: number } | { kind: 'cycle' } | { kind: 'wakeup' } | { kind: 'commit'; id: string; version: number };

interface Live {
  readonly job: TenantJob;
  remainingMs: number;
  version: number;
  firstStartMs?: number;
  /** This run (checkpoint-aware): when its finish is due, the training time spent paused for requested checkpoints, the work its last one saved. */
  finishAtMs?: number | undefined;
  pausedMs?: number | undefined;
  savedWorkMs?: number | undefined;
  requestedMs?: number | undefined;
}

/** Buckets of the wait that an estimate made at submission had to predict. */
const WAIT_BUCKETS: readonly (readonly [string, number, number])[] = [
  ['<10m', 0, 600_000],
  ['10m-1h', 600_000, 3_600_000],
  ['1-3h', 3_600_000, 3 * 3_600_000],
  ['3-6h', 3 * 3_600_000, 6 * 3_600_000],
  ['>6h', 6 * 3_600_000, Infinity],
];

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

export function podsFor(job: TenantJob, queue: string): PodSpec[] {
  const sizes: number[] = [];
  for (let left = job.gpus; left > 0; left -= 8) sizes.push(Math.min(8, left));
  return sizes.map((g, k) => makePod(`${job.id}-${k}`, { gpuCount: g, cpuMilli: 8000 * g, memoryMiB: 65_536 * g }, { gang: job.id, queue }));
}

export function runTenantSim(jobs: readonly TenantJob[], opts: TenantSimOptions): TenantSimResult {
  const specs = tenantNodes(opts);
  // The simulator's composition root: the cluster behind the ports, the scheduling queue and the spine.
  const { profile: prof, state, scheduler, queue, spine, end } = simAppOrThrow({ nodes: specs, profile: 'sits', typicalShapes: [], rng: seededRng(opts.seed) });
  const capacityMilli = specs.reduce((s, n) => s + n.gpus.length * 1000, 0);
  const queues = tenantQueues(opts.mode, capacityMilli);
  const aware = opts.mode === 'sits' && opts.checkpoint === 'aware';
  const method: EtaMethod = { ...DEFAULT_ETA_METHOD, ...opts.eta };
  const ckptMs = (gpus: number): number => checkpointMs(gpus, opts.checkpointSecondsPerNode);
  const cycleOptions: Partial<CycleOptions> = opts.mode === 'fifo' ? { fairShare: false, backfill: false, preemption: false, explain: false } : { minRuntimeMs: 10 * 60_000, criticalGraceMs: 5 * 60_000, explain: false, ...(aware ? { checkpointAware: true } : {}) };
  let redoneGpuMs = 0;
  let checkpointGpuMs = 0;
  const queueOf = (t: Tier): string => (opts.mode === 'fifo' ? 'fifo' : t);

  const live = new Map<string, Live>();
  const pending = new Map<string, QueuedJob>();
  const running = new Map<string, RunningJob>();
  const tierOf = new Map(jobs.map((j) => [j.id, j.tier]));
  // Learned runtime estimates (no user estimates in the trace): Kaplan–Meier over finished jobs of the same
  // tier and size class (else of the tier), with running jobs as censored observations, conditioned on the
  // time already run. A restarted job has run its checkpointed work plus the time since the restart.
  const rt = new RuntimeModel();
  const keysOf = (j: TenantJob): string[] => runtimeKeys(j.tier, j.gpus);
  const keptMs = (l: Live): number => l.job.durationMs - l.remainingMs;
  /** Expected remaining runtime of a job that has done `doneMs` of work (known to the scheduler: run time and checkpoints, never the true duration). */
  const remainingAfter = (j: TenantJob, doneMs: number): number => expectedRemaining(rt, keysOf(j), doneMs);
  const estimate = (t: Tier, gpus = 1): number => rt.expectedTotal(runtimeKeys(t, gpus), 0);
  const toQueued = (l: Live, nowMs: number): QueuedJob => queuedJob(l.job, queueOf(l.job.tier), nowMs, estimate(l.job.tier, l.job.gpus));
  const refreshEstimates = (now: number): void => {
    // Work done = checkpointed work before the last restart + time since it; censored at that.
    const work = (r: RunningJob): { keys: string[]; doneMs: number } => {
      const l = live.get(r.id) as Live;
      return { keys: keysOf(l.job), doneMs: keptMs(l) + now - r.startMs };
    };
    for (const [id, r] of withLearnedEnds(rt, running, work, now)) running.set(id, r);
  };
  const seen = new ArrivalHistory<TenantJob>();
  let nextCycleMs = 0;
  const trueEndMs = new Map<string, number>();
  const sampleEvery = opts.etaSamples > 0 ? Math.max(1, Math.floor(jobs.length / opts.etaSamples)) : Infinity;
  const etaOf = new Map<string, number>();
  let preemptions = 0;
  let done = 0;

  const meter = new ContentionMeter(tierOf, capacityMilli, opts.windowMs, running, pending);
  const integrate = (to: number): void => meter.integrate(to);

  /** A job joins its queue (arrived, or back after a preemption): the waiting set and the scheduling queue. */
  const enqueue = (j: QueuedJob, nowMs: number): void => {
    pending.set(j.id, j);
    queue.add(j, nowMs);
    queue.onEvent({ kind: 'arrived', queue: j.queue }, nowMs);
  };
  let cycleQueued = false;
  let cycles = 0;
  // Extra cycles at a victim's deferral or a checkpoint deadline, one per instant: every cycle that sees the same
  // deferred victims asks for the same instant again, so without this the cycles at that instant multiply.
  const wakeups = new Set<number>();
  const wakeAt = (en: Environment<Ev>, atMs: number): void => {
    if (wakeups.has(atMs)) return;
    wakeups.add(atMs);
    en.at(atMs, 8, { kind: 'wakeup' });
  };
  const etaContext: EtaContext = { jobs, opts, method, aware, state, profile: prof, queues, cycleOptions, live, pending, running, trueEndMs, seen, queueOf, remainingAfter, keptMs, toQueued, ckptMs };
  const env = new Environment<Ev>((e, en) => {
    integrate(en.nowMs);
    const ev = e.payload;
    if (ev.kind === 'arrive') {
      const l: Live = { job: ev.job, remainingMs: ev.job.durationMs, version: 0 };
      live.set(ev.job.id, l);
      enqueue(toQueued(l, en.nowMs), en.nowMs);
      seen.record(queueOf(ev.job.tier), en.nowMs, ev.job);
      if ((jobs.indexOf(ev.job) + 1) % sampleEvery === 0 && opts.mode === 'sits') {
        refreshEstimates(en.nowMs);
        const at = estimateStart(etaContext, ev.job.id, en.nowMs, cycleQueued ? nextCycleMs : en.nowMs);
        if (at !== undefined) etaOf.set(ev.job.id, at);
      }
    } else if (ev.kind === 'commit') {
      // The checkpoint asked of a victim committed: its training resumes (its end moves by the pause) and a
      // cycle now evicts it if its preemptor still needs the room.
      const l = live.get(ev.id);
      const r = running.get(ev.id);
      if (l === undefined || r === undefined || l.version !== ev.version || l.requestedMs === undefined) return;
      const pause = resumeAfterCheckpoint(l, r, en.nowMs);
      checkpointGpuMs += pause * (r.resources.gpuMilli / 1000);
      en.at(l.finishAtMs as number, 0, { kind: 'finish', id: ev.id, version: l.version });
      trueEndMs.set(ev.id, l.finishAtMs as number);
      running.set(ev.id, { ...r, lastCheckpointMs: en.nowMs, estEndMs: r.estEndMs + pause });
    } else if (ev.kind === 'finish') {
      const l = live.get(ev.id);
      const r = running.get(ev.id);
      if (l === undefined || r === undefined || l.version !== ev.version) return;
      end(r.podIds);
      running.delete(ev.id);
      queue.onEvent({ kind: 'freed' }, en.nowMs);
      rt.observeFinished(keysOf(l.job), l.job.durationMs);
      done++;
      opts.onProgress?.(done, jobs.length);
    } else {
      if (ev.kind === 'wakeup') wakeups.delete(en.nowMs);
      else cycleQueued = false;
      cycles++;
      refreshEstimates(en.nowMs);
      const res = spine.cycle({ nowMs: en.nowMs, scheduler, queues, running, options: cycleOptions });
      for (const p of res.preempted) {
        const l = live.get(p.victim.id) as Live;
        running.delete(p.victim.id);
        preemptions++;
        redoneGpuMs += rollBack(l, p.victim, en.nowMs, opts.checkpointEveryMs, aware);
        enqueue(toQueued(l, en.nowMs), en.nowMs);
      }
      for (const d of res.deferred) wakeAt(en, d.atMs);
      for (const q of res.checkpointRequests) {
        const l = live.get(q.victim.id) as Live;
        const r = running.get(q.victim.id);
        if (r === undefined) continue;
        l.requestedMs = en.nowMs;
        running.set(r.id, { ...r, checkpointRequestedMs: en.nowMs });
        en.at(en.nowMs + ckptMs(r.resources.gpuMilli / 1000), 2, { kind: 'commit', id: r.id, version: l.version });
        // The grace bounds the wait even if the commit never comes.
        wakeAt(en, q.deadlineMs);
      }
      for (const s of res.started) {
        const l = live.get(s.job.id) as Live;
        pending.delete(s.job.id);
        l.firstStartMs ??= en.nowMs;
        const model = state.node(s.placements[0]?.node ?? '')?.spec.gpus[0]?.model;
        running.set(s.job.id, startedJob(s.job, s.placements, en.nowMs, { gpuModel: model, lastCheckpointMs: en.nowMs, checkpointable: aware }));
        l.finishAtMs = en.nowMs + l.remainingMs;
        en.schedule(l.remainingMs, 0, { kind: 'finish', id: s.job.id, version: l.version });
        trueEndMs.set(s.job.id, en.nowMs + l.remainingMs);
      }
      // Like the live scheduler's periodic pass: waiting work is looked at again a minute later, so that
      // cooldowns and fair-share reclaim take effect between arrivals and completions.
      if (pending.size > 0 && !cycleQueued) {
        cycleQueued = true;
        nextCycleMs = en.nowMs + 60_000;
        en.schedule(60_000, 9, { kind: 'cycle' });
      }
      // Checkpoint windows: a running job spends the first minute of every checkpoint period checkpointing.
      for (const [id, r] of running) running.set(id, withCheckpointWindow(r, en.nowMs, opts.checkpointEveryMs, aware));
      return;
    }
    if (!cycleQueued) {
      cycleQueued = true;
      nextCycleMs = en.nowMs;
      en.schedule(0, 9, { kind: 'cycle' });
    }
  });

  for (const j of jobs) env.at(j.submitMs, 1, { kind: 'arrive', job: j });
  const endMs = opts.windowMs * 8;
  env.run(endMs);
  integrate(Math.min(env.nowMs, endMs));

  const { tiers, jain } = tierMetrics(jobs, live, meter.allocTime, meter.entitledTime);
  const etaErrorPct = etaErrors(etaOf, live, opts);
  return {
    tiers,
    jain: round(jain, 4),
    utilizationPct: round((100 * meter.usedInWindow) / (capacityMilli * opts.windowMs)),
    preemptions,
    cycles,
    ...(opts.mode === 'sits' ? { etaErrorPct } : {}),
    contendedHours: round(meter.contendedMs / 3_600_000),
    ...(opts.checkpoint === undefined ? {} : { redoneGpuHours: round(redoneGpuMs / 3_600_000), checkpointGpuHours: round(checkpointGpuMs / 3_600_000) }),
  };
}

/** The simulated cluster: `opts.nodes` nodes of the preset shape, eight to a rack. */
function tenantNodes(opts: TenantSimOptions): NodeSpec[] {
  const shape = NODE_SHAPES[opts.shape];
  if (shape === undefined) throw new Error(`unknown shape ${opts.shape}`);
  return Array.from({ length: opts.nodes }, (_, i) => ({
    name: `node-${String(i).padStart(3, '0')}`,
    cpuMilli: shape.cpuMilli,
    memoryMiB: shape.memoryMiB,
    maxPods: shape.maxPods,
    gpus: shape.gpus,
    topology: shape.topology,
    location: { zone: 'z', block: 'b', rack: `rack-${Math.floor(i / 8)}` },
    labels: {},
    taints: [],
    unschedulable: false,
  }));
}

/** One FIFO queue, or a queue per tier with a nominal quota by weight in one cohort. */
function tenantQueues(mode: TenantSimOptions['mode'], capacityMilli: number): Map<string, QueueSpec> {
  const totalW = TIERS.reduce((s, t) => s + TIER_WEIGHT[t], 0);
  // Nominal quotas split the cluster by weight; the rounding remainder goes to the first tier so that the
  // quotas add up to exactly the capacity (a lost milli-GPU would strand a whole GPU).
  const nominals = TIERS.map((t) => Math.floor((capacityMilli * TIER_WEIGHT[t]) / totalW));
  nominals[0] = (nominals[0] as number) + capacityMilli - nominals.reduce((a, b) => a + b, 0);
  return new Map<string, QueueSpec>(
    mode === 'fifo'
      ? [['fifo', makeQueue('fifo')]]
      : TIERS.map((t, i) => [t, makeQueue(t, { weight: TIER_WEIGHT[t], cohort: 'cluster', nominal: { gpuMilli: nominals[i] as number, cpuMilli: Infinity, memoryMiB: Infinity } })]),
  );
}

/** A job as the scheduling queue holds it: a gang of its pods, with the runtime estimate given. */
function queuedJob(job: TenantJob, queue: string, nowMs: number, estRuntimeMs: number): QueuedJob {
  const members = podsFor(job, queue);
  void nowMs;
  return { id: job.id, queue, priority: 0, arrivalMs: job.submitMs, gang: { name: job.id, minMember: members.length, members, topology: {}, priority: 0, queue }, estRuntimeMs };
}

/**
 * A preempted job loses the work since its last checkpoint and goes back with the rest to do (its original
 * submit time kept). Returns the GPU-milliseconds it has to redo.
 */
function rollBack(l: Live, victim: RunningJob, nowMs: number, checkpointEveryMs: number, aware: boolean): number {
  const ranMs = nowMs - victim.startMs;
  const periodic = Math.floor(ranMs / checkpointEveryMs) * checkpointEveryMs;
  // Checkpoint-aware: the checkpoint asked of it saved everything up to the request (training paused since).
  const kept = aware ? Math.max(periodic, l.savedWorkMs ?? 0) : periodic;
  const worked = ranMs - (l.pausedMs ?? 0) - (l.requestedMs === undefined ? 0 : nowMs - l.requestedMs);
  const redone = Math.max(0, worked - kept) * (victim.resources.gpuMilli / 1000);
  l.savedWorkMs = undefined;
  l.pausedMs = undefined;
  l.requestedMs = undefined;
  l.remainingMs = Math.max(1000, l.remainingMs - kept);
  l.version++;
  return redone;
}

/** Checkpoint windows: a running job spends the first minute of every checkpoint period checkpointing. */
function withCheckpointWindow(r: RunningJob, nowMs: number, checkpointEveryMs: number, aware: boolean): RunningJob {
  const since = nowMs - r.startMs;
  const phase = since % checkpointEveryMs;
  const lastCkpt = r.startMs + since - phase;
  // A committed requested checkpoint is newer than the periodic one until the next period passes it.
  const newest = Math.max(lastCkpt, aware && r.lastCheckpointMs !== undefined ? r.lastCheckpointMs : lastCkpt);
  return { ...r, lastCheckpointMs: newest, ...(phase < 60_000 && since >= checkpointEveryMs ? { criticalUntilMs: lastCkpt + 60_000 } : {}) };
}

/** What a start-time estimate sees of the simulation (read only). */
interface EtaContext {
  readonly jobs: readonly TenantJob[];
  readonly opts: TenantSimOptions;
  readonly method: EtaMethod;
  readonly aware: boolean;
  readonly state: ReturnType<typeof simAppOrThrow>['state'];
  readonly profile: ReturnType<typeof simAppOrThrow>['profile'];
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly cycleOptions: Partial<CycleOptions>;
  readonly live: ReadonlyMap<string, Live>;
  readonly pending: ReadonlyMap<string, QueuedJob>;
  readonly running: ReadonlyMap<string, RunningJob>;
  readonly trueEndMs: ReadonlyMap<string, number>;
  readonly seen: ArrivalHistory<TenantJob>;
  readonly queueOf: (t: Tier) => string;
  readonly remainingAfter: (j: TenantJob, doneMs: number) => number;
  readonly keptMs: (l: Live) => number;
  readonly toQueued: (l: Live, nowMs: number) => QueuedJob;
  readonly ckptMs: (gpus: number) => number;
}

/** The jobs expected to arrive after now, as the estimate may know them (the trace's own only for the oracle). */
function forecastArrivals(c: EtaContext, nowMs: number): Map<string, { job: TenantJob; queued: QueuedJob }> {
  const oracle = c.method.oracle ?? {};
  const forecastJobs = new Map<string, { job: TenantJob; queued: QueuedJob }>();
  if (oracle.arrivals === true) {
    for (const j of c.jobs) {
      if (j.submitMs <= nowMs) continue;
      forecastJobs.set(j.id, { job: j, queued: queuedJob(j, c.queueOf(j.tier), nowMs, oracle.runtimes === true ? j.durationMs : c.remainingAfter(j, 0)) });
    }
  } else if (c.method.forecast) {
    for (const f of c.seen.forecast(nowMs)) {
      const job: TenantJob = { ...f.template, id: f.id, submitMs: f.atMs };
      forecastJobs.set(f.id, { job, queued: queuedJob(job, c.queueOf(job.tier), nowMs, c.remainingAfter(job, 0)) });
    }
  }
  return forecastJobs;
}

/**
 * When `id` (just submitted) will start: the queue cycle run forward from a copy of now, as the scheduler
 * could know it — runtime estimates, never true durations; arrivals forecast from the past, never the trace's.
 * The running jobs' learned ends are refreshed by the caller.
 */
function estimateStart(c: EtaContext, id: string, nowMs: number, firstCycleMs: number): number | undefined {
  const { method, live, pending, running } = c;
  const oracle = method.oracle ?? {};
  const pend = [...pending.values()].map((j) => (oracle.runtimes === true ? { ...j, estRuntimeMs: (live.get(j.id) as Live).remainingMs } : method.refreshPending ? { ...j, estRuntimeMs: c.remainingAfter((live.get(j.id) as Live).job, c.keptMs(live.get(j.id) as Live)) } : j));
  const run = oracle.runtimes === true ? new Map([...running].map(([rid, r]) => [rid, { ...r, estEndMs: c.trueEndMs.get(rid) as number }])) : running;
  const forecastJobs = forecastArrivals(c, nowMs);
  // A victim of the forward run returns to its queue with the work since its last checkpoint to redo.
  const requeue = (v: RunningJob, atMs: number): QueuedJob | undefined => {
    const l = live.get(v.id);
    const f = forecastJobs.get(v.id);
    const base = l === undefined ? f?.queued : (pending.get(v.id) ?? c.toQueued(l, atMs));
    if (base === undefined) return undefined;
    const periodic = Math.floor((atMs - v.startMs) / c.opts.checkpointEveryMs) * c.opts.checkpointEveryMs;
    // Checkpoint-aware, the redone work counts from the victim's checkpoint times (the one asked of it included).
    return requeueAfterCheckpoint(base, v, c.aware ? Math.max(periodic, (v.lastCheckpointMs ?? v.startMs) - v.startMs) : periodic);
  };
  const eta = estimateStarts({
    nowMs,
    state: c.state,
    profile: c.profile,
    rng: seededRng(7),
    queues: c.queues,
    pending: pend,
    running: run,
    options: c.cycleOptions,
    untilStarted: id,
    horizonMs: 14 * 86_400_000,
    ...(method.forecast || oracle.arrivals === true ? { arrivals: [...forecastJobs.values()].map((f) => f.queued) } : {}),
    ...(method.requeue ? { requeue } : {}),
    ...(method.cadence ? { cadence: { nextMs: firstCycleMs, everyMs: 60_000 } } : {}),
    ...(c.aware ? { checkpointMs: (v: RunningJob) => c.ckptMs(v.resources.gpuMilli / 1000), checkpointable: () => true } : {}),
  });
  return eta.get(id);
}

/** Each tier's share of the contended GPU time against its entitlement, its queueing delays, and Jain's index of the ratios. */
function tierMetrics(jobs: readonly TenantJob[], live: ReadonlyMap<string, Live>, allocTime: Record<Tier, number>, entitledTime: Record<Tier, number>): { tiers: Record<Tier, TierMetrics>; jain: number } {
  const tiers = {} as Record<Tier, TierMetrics>;
  const allocSum = TIERS.reduce((s, t) => s + allocTime[t], 0);
  const entSum = TIERS.reduce((s, t) => s + entitledTime[t], 0);
  const ratios: number[] = [];
  for (const t of TIERS) {
    const mine = jobs.filter((j) => j.tier === t);
    const delays = mine
      .map((j) => live.get(j.id)?.firstStartMs)
      .map((s, i) => (s === undefined ? undefined : (s - (mine[i] as TenantJob).submitMs) / 1000))
      .filter((x): x is number => x !== undefined)
      .sort((a, b) => a - b);
    const share = allocSum === 0 ? 0 : (100 * allocTime[t]) / allocSum;
    const entitled = entSum === 0 ? 0 : (100 * entitledTime[t]) / entSum;
    if (entitled > 0) ratios.push(share / entitled);
    tiers[t] = { sharePct: round(share), entitledPct: round(entitled), queueDelaySec: { p50: Math.round(nearestRank(delays, 50) ?? 0), p99: Math.round(nearestRank(delays, 99) ?? 0) }, jobs: mine.length, neverStarted: mine.length - delays.length };
  }
  const jain = ratios.length === 0 ? 1 : ratios.reduce((s, x) => s + x, 0) ** 2 / (ratios.length * ratios.reduce((s, x) => s + x * x, 0));
  return { tiers, jain };
}

/** The error of the start times estimated at submission (each sample also goes to opts.onEtaSample). */
function etaErrors(etaOf: ReadonlyMap<string, number>, live: ReadonlyMap<string, Live>, opts: TenantSimOptions): NonNullable<TenantSimResult['etaErrorPct']> {
  const errors: { tier: Tier; waitMs: number; pct: number; signed: number }[] = [];
  for (const [id, eta] of etaOf) {
    const l = live.get(id);
    if (l?.firstStartMs === undefined) continue;
    // Estimated at submission: the error is relative to the wait that was being predicted.
    const wait = Math.max(60_000, l.firstStartMs - l.job.submitMs);
    opts.onEtaSample?.({ id, tier: l.job.tier, gpus: l.job.gpus, submitMs: l.job.submitMs, etaMs: eta, startMs: l.firstStartMs });
    errors.push({ tier: l.job.tier, waitMs: l.firstStartMs - l.job.submitMs, pct: (100 * Math.abs(eta - l.firstStartMs)) / wait, signed: (100 * (eta - l.firstStartMs)) / wait });
  }
  const summary = (xs: readonly number[]): EtaError => {
    const sorted = [...xs].sort((a, b) => a - b);
    return { p50: round(nearestRank(sorted, 50) ?? 0), p90: round(nearestRank(sorted, 90) ?? 0), samples: sorted.length };
  };
  return {
    ...summary(errors.map((e) => e.pct)),
    signedP50: round(nearestRank([...errors.map((e) => e.signed)].sort((a, b) => a - b), 50) ?? 0),
    byTier: Object.fromEntries(TIERS.map((t) => [t, summary(errors.filter((e) => e.tier === t).map((e) => e.pct))])) as Record<Tier, EtaError>,
    byWait: Object.fromEntries(WAIT_BUCKETS.map(([name, lo, hi]) => [name, summary(errors.filter((e) => e.waitMs >= lo && e.waitMs < hi).map((e) => e.pct))])),
  };
}

/**
 * The checkpoint asked of a victim committed at `nowMs`: it saved the work up to the request, and its training
 * resumes with its end moved by the pause. Returns the pause.
 */
function resumeAfterCheckpoint(l: Live, r: RunningJob, nowMs: number): number {
  const requestedMs = l.requestedMs as number;
  const pause = nowMs - requestedMs;
  l.savedWorkMs = requestedMs - r.startMs - (l.pausedMs ?? 0);
  l.pausedMs = (l.pausedMs ?? 0) + pause;
  l.requestedMs = undefined;
  l.version++;
  l.finishAtMs = (l.finishAtMs ?? nowMs) + pause;
  return pause;
}

/** Integrals over the intervals where ≥ 2 tiers had pending demand: each tier's GPU time and the share it deserved; and the GPU time used in the window. */
class ContentionMeter {
  readonly allocTime: Record<Tier, number> = { gold: 0, silver: 0, bronze: 0 };
  readonly entitledTime: Record<Tier, number> = { gold: 0, silver: 0, bronze: 0 };
  contendedMs = 0;
  usedInWindow = 0;
  private lastMs = 0;

  constructor(
    private readonly tierOf: ReadonlyMap<string, Tier>,
    private readonly capacityMilli: number,
    private readonly windowMs: number,
    private readonly running: ReadonlyMap<string, RunningJob>,
    private readonly pending: ReadonlyMap<string, QueuedJob>,
  ) {}

  private allocBy(): Record<Tier, number> {
    const a: Record<Tier, number> = { gold: 0, silver: 0, bronze: 0 };
    for (const r of this.running.values()) a[this.tierOf.get(r.id) as Tier] += r.resources.gpuMilli;
    return a;
  }

  integrate(to: number): void {
    const dt = to - this.lastMs;
    if (dt <= 0) return;
    const alloc = this.allocBy();
    const total = alloc.gold + alloc.silver + alloc.bronze;
    const wEnd = Math.min(to, this.windowMs);
    if (wEnd > this.lastMs) this.usedInWindow += total * (wEnd - this.lastMs);
    const pend: Record<Tier, number> = { gold: 0, silver: 0, bronze: 0 };
    for (const p of this.pending.values()) pend[this.tierOf.get(p.id) as Tier] += jobResources(p).gpuMilli;
    const contending = TIERS.filter((t) => pend[t] > 0);
    if (contending.length >= 2 && total > 0) {
      this.contendedMs += dt;
      const deserved = deservedGpu(
        TIERS.map((t) => ({ queue: makeQueue(t, { weight: TIER_WEIGHT[t] }), demandGpuMilli: alloc[t] + pend[t] })),
        this.capacityMilli,
      );
      const dsum = TIERS.reduce((s, t) => s + (deserved.get(t) ?? 0), 0);
      for (const t of TIERS) {
        this.allocTime[t] += alloc[t] * dt;
        this.entitledTime[t] += (dsum === 0 ? 0 : ((deserved.get(t) ?? 0) / dsum) * total) * dt;
      }
    }
    this.lastMs = to;
  }
}
