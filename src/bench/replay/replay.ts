/**
 * Time-based replay on the discrete-event engine (engine.ts) and the scheduling spine, as every simulated
 * host: units arrive at their trace times and join the scheduling queue, a queue cycle (one FIFO queue, no
 * quotas, no preemption or reservations: the trace's own cluster had none) places what fits, placed units
 * run for their duration and leave. Optional GPU-node failures (exponential, seeded) take a node's GPUs
 * away, evict what runs there (a gang loses all members) and requeue it to restart; a repair gives the GPUs
 * back. The core's Scheduler makes every decision; its commits reach the simulated cluster.
 *
 * Event order at one instant (priority): completions, repairs, failures, deadlines, arrivals, then one
 * cycle. A cycle tries waiting units in (arrival, sequence) order, but after a unit of some shape fails,
 * later units of the same shape are not tried in it (they would fail the same way); a unit that failed
 * is parked until resources are freed (a completion, a failure's evictions, a repair), so a cycle after
 * arrivals only tries the new units.
 */
import type { QueuedJob, RunningJob } from '../../core/actions/jobs.ts';
import type { CycleOptions } from '../../core/actions/queue-cycle.ts';
import type { Profile } from '../../core/framework/types.ts';
import type { NodeSpec } from '../../core/model/node.ts';
import type { GangSpec } from '../../core/model/pod.ts';
import { seededRng, type Rng } from '../../core/ports.ts';
import type { TypicalShape } from '../../core/estimate/typical-shapes.ts';
import type { QueueSpec } from '../../core/queue/model.ts';
import { shapesOf } from '../../core/estimate/expected-workload.ts';
import { DEFAULT_TRAINING_MODEL, sharesOf, stepTime } from '../../core/estimate/step-time.ts';
import { simAppOrThrow } from '../../app/sim-app.ts';
import { mean, median, percentile } from '../../core/stats.ts';
import { Environment, type SimEvent } from '../../sim/engine.ts';
import { PolicyError } from '../fgd/run.ts';
import { unitPods, type ReplayUnit } from './units.ts';
import { commitMigration, DEFAULT_MIGRATION_COST, expectedStartMs, planMigration, type MigrationCost, type NoPlanReason } from '../../core/actions/migration.ts';

export interface FailureModel {
  /** Mean time between failures of one node. */
  readonly mtbfMs: number;
  readonly repairMs: number;
}

export interface ReplayOptions {
  readonly policy: string;
  readonly profile?: Profile;
  readonly seed?: number;
  readonly failures?: FailureModel;
  /** Stop at this virtual time (default: when nothing is left to happen). */
  readonly untilMs?: number;
  /** Points of the utilisation series (default 400). */
  readonly samples?: number;
  /**
   * Gang statistics, and with `migrate` defragmentation by migration (ADR 0095): after a pass, the longest-
   * waiting multi-GPU unit that fails only on fragmentation gets a migration plan (every running unit can
   * checkpoint and restore elsewhere), carried out when its gain beats its cost. Set, the result has `gangs`.
   */
  readonly migration?: {
    readonly migrate: boolean;
    readonly cost?: MigrationCost;
    readonly maxDomains?: number;
    readonly maxMoves?: number;
    /** Which running units may be moved, as checkpointing training jobs (default: every unit). */
    readonly movable?: (u: ReplayUnit) => boolean;
    /** Gang statistics over [fromMs, horizon] only: gangs arriving from then, GPU time and moves from then (default: the first arrival). */
    readonly fromMs?: number;
  };
}

/** Multi-GPU units (what needs whole GPUs of one domain): their waits, and what migration did and cost. */
export interface GangStats {
  readonly units: number;
  readonly waitP99S: number;
  readonly waitMeanS: number;
  /** 100 − allocated % doing work: allocation minus the GPUs paused for checkpoint/restore or held for a mover. */
  readonly unallocatedPct: number;
  readonly migrations: number;
  readonly movedUnits: number;
  readonly overheadGpuHours: number;
  /** Gangs that started or gave up at some point blocked only by fragmentation (enough whole GPUs free). */
  readonly fragmentationBlocked: number;
  /** Gangs started by a migration plan. */
  readonly helped: number;
  /** Calls of the planner, and why the ones without a plan gave none. */
  readonly planCalls: number;
  readonly noPlan: Readonly<Partial<Record<NoPlanReason, number>>>;
}

export interface DelayStats {
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

export interface ReplayResult {
  readonly policy: string;
  readonly units: number;
  readonly pods: number;
  readonly placedPods: number;
  /** Time-weighted allocated GPU share over the trace window (first to last arrival, or to untilMs), in %. */
  readonly gpuUtilisationPct: number;
  /** Peak of the allocated GPU share, in %. */
  readonly peakAllocationPct: number;
  /** Seconds between arrival and placement, over placed pods (a gang's members count each). */
  readonly queueDelayS: DelayStats;
  readonly neverPlaced: { readonly pods: number; readonly gpus: number; readonly abandoned: number; readonly waitingAtEnd: number };
  readonly evictions: number;
  readonly failures: number;
  readonly spanS: number;
  /**
   * Units on whole GPUs taken as the default 1.3B-parameter DDP job (ADR 0103): mean tokens/s per unit and
   * the GPU-time-weighted compute share of its steps on the GPUs it got (trace run times are kept).
   */
  readonly training: { readonly units: number; readonly tokensPerSec: number; readonly gpuUtilizationPct: number };
  /** Sampled series: time (s from the first arrival), allocated GPU %, pods waiting. */
  readonly series: { readonly tS: readonly number[]; readonly allocatedPct: readonly number[]; readonly waitingPods: readonly number[] };
  readonly gangs?: GangStats;
}

type Payload =
  | { readonly type: 'complete'; readonly unit: Tracked; readonly epoch?: number }
  | { readonly type: 'repair'; readonly node: number }
  | { readonly type: 'fail'; readonly node: number }
  | { readonly type: 'deadline'; readonly unit: Tracked }
  | { readonly type: 'arrive'; readonly unit: Tracked }
  | { readonly type: 'pass' };

const PRIORITY: Readonly<Record<Payload['type'], number>> = { complete: 0, repair: 1, fail: 2, deadline: 3, arrive: 4, pass: 9 };

interface Tracked {
  readonly unit: ReplayUnit;
  readonly seq: number;
  /** The unit as a job of the scheduling queue (a pod is a gang of one). */
  readonly job: QueuedJob;
  readonly demandMilli: number;
  state: 'future' | 'waiting' | 'running' | 'done' | 'abandoned';
  /** Bumped on every start so that a stale completion (after an eviction) is ignored. */
  epoch: number;
  waitingSinceMs: number;
  /** When its completion is due (migration moves it). */
  endAtMs?: number;
  startedAtMs?: number;
}

/** One FIFO queue without quota, preemption or reservations: what the trace's cluster ran. */
const REPLAY_CYCLE: Partial<CycleOptions> = { fairShare: false, backfill: false, preemption: false, explain: false };
const NO_QUEUES: ReadonlyMap<string, QueueSpec> = new Map();

function jobOf(u: ReplayUnit, seq: number): QueuedJob {
  const pod = u.pod;
  const gang: GangSpec = u.gang ?? (pod === undefined ? { name: u.id, minMember: 0, members: [], topology: {}, priority: 0, queue: 'default' } : { name: pod.id, minMember: 1, members: [pod], topology: {}, priority: pod.priority, queue: pod.queue });
  return { id: `${seq}:${u.id}`, queue: 'replay', priority: 0, arrivalMs: u.arrivalMs, seq, gang, estRuntimeMs: Number.isFinite(u.durationMs) ? u.durationMs : 0 };
}

/** Expected workload for fragmentation-aware profiles: learned from the pods of the trace given. */
export function replayTypicalShapes(units: readonly ReplayUnit[]): TypicalShape[] {
  return shapesOf(units.flatMap((u) => unitPods(u)));
}

export function replay(nodes: readonly NodeSpec[], units: readonly ReplayUnit[], o: ReplayOptions): ReplayResult {
  const rng: Rng = seededRng(o.seed ?? 1);
  const { state, scheduler, queue, spine, end: endPods } = simAppOrThrow({ nodes, profile: o.profile ?? o.policy, typicalShapes: o.profile === undefined ? replayTypicalShapes(units) : [], rng }, (m) => new PolicyError(m));
  const capacityMilli = state.nodes.reduce((s, n) => s + n.spec.gpus.length * 1000, 0);
  const tracked: Tracked[] = units.map((unit, seq) => ({
    unit,
    seq,
    job: jobOf(unit, seq),
    demandMilli: unitPods(unit).reduce((s, p) => s + p.request.gpuCount * p.request.gpuMilli, 0),
    state: 'future',
    epoch: 0,
    waitingSinceMs: 0,
  }));
  const origin = tracked.reduce((m, t) => Math.min(m, t.unit.arrivalMs), Number.POSITIVE_INFINITY);
  const start = Number.isFinite(origin) ? origin : 0;
  // Failures happen while the trace runs: up to --until, or up to the last arrival.
  const lastArrival = tracked.reduce((m, t) => Math.max(m, t.unit.arrivalMs), start);
  const horizon = o.untilMs ?? lastArrival;
  const byJob = new Map(tracked.map((t) => [t.job.id, t]));
  let passQueued = false;
  let usedMilli = 0;
  let waitingPods = 0;
  let lastT = start;
  let areaMilliMs = 0;
  // Gang statistics' own window (from o.migration.fromMs): the replay runs from the first arrival all the same.
  const gangFrom = Math.max(start, o.migration?.fromMs ?? start);
  let gangAreaMilliMs = 0;
  let peak = 0;
  let evictions = 0;
  let failures = 0;
  let abandoned = 0;
  let placedPods = 0;
  const delaysS: number[] = [];
  let trainedUnits = 0;
  let trainedTokens = 0;
  let trainedGpuMs = 0;
  let trainedComputeMs = 0;
  const running = new Map<number, Tracked>();
  const podUnit = new Map<string, Tracked>();
  const nodeDown = new Uint8Array(state.size);

  // Utilisation is averaged over the trace's own window (first to last arrival, or to --until), not the drain after it.
  const advance = (t: number): void => {
    const clipped = Math.min(t, horizon);
    if (clipped > lastT) {
      areaMilliMs += usedMilli * (clipped - lastT);
      gangAreaMilliMs += usedMilli * Math.max(0, clipped - Math.max(lastT, gangFrom));
      lastT = clipped;
    }
  };
  const env = new Environment<Payload>((e: SimEvent<Payload>, en) => handle(e.payload, en));
  const queuePass = (en: Environment<Payload>): void => {
    if (!passQueued) {
      passQueued = true;
      en.schedule(0, PRIORITY.pass, { type: 'pass' });
    }
  };
  /** A unit the cycle started (its placements already committed to the simulated cluster). */
  const started = (t: Tracked, placements: readonly { readonly podId: string; readonly node: string; readonly gpus: readonly number[] }[], en: Environment<Payload>, atMs = en.nowMs): void => {
    const u = t.unit;
    if (unitPods(u).every((p) => p.request.gpuCount > 0 && p.request.gpuMilli >= 1000)) {
      const st = stepTime(DEFAULT_TRAINING_MODEL, sharesOf(placements, (n) => state.node(n)?.spec));
      const gpus = unitPods(u).reduce((a, p) => a + p.request.gpuCount, 0);
      const ms = Number.isFinite(u.durationMs) ? u.durationMs : Math.max(0, horizon - en.nowMs);
      trainedUnits++;
      trainedTokens += st.tokensPerSec;
      trainedGpuMs += gpus * ms;
      trainedComputeMs += gpus * ms * st.gpuUtilization;
    }
    for (const p of placements) podUnit.set(p.podId, t);
    placedPods += placements.length;
    for (let i = 0; i < placements.length; i++) delaysS.push((atMs - t.waitingSinceMs) / 1000);
    if (gangStats && counted(t) && !gangWaitS.has(t.seq)) gangWaitS.set(t.seq, (atMs - t.waitingSinceMs) / 1000);
    t.startedAtMs = atMs;
    t.state = 'running';
    t.epoch++;
    usedMilli += t.demandMilli;
    peak = Math.max(peak, usedMilli);
    waitingPods -= unitPods(u).length;
    running.set(t.seq, t);
    if (Number.isFinite(u.durationMs)) {
      t.endAtMs = atMs + Math.max(0, u.durationMs);
      // Without gang statistics exactly as before (a relative delay, no epoch on the event).
      if (!gangStats) en.schedule(Math.max(0, u.durationMs), PRIORITY.complete, { type: 'complete', unit: t });
      else en.at(t.endAtMs, PRIORITY.complete, { type: 'complete', unit: t, epoch: t.epoch });
    }
  };
  const release = (t: Tracked): void => {
    const pods = unitPods(t.unit).map((p) => p.id);
    endPods(pods);
    for (const p of pods) podUnit.delete(p);
    usedMilli -= t.demandMilli;
    running.delete(t.seq);
  };
  const pass = (en: Environment<Payload>): void => {
    const res = spine.cycle({ nowMs: en.nowMs, scheduler, queues: NO_QUEUES, running: NO_RUNNING, options: REPLAY_CYCLE });
    for (const x of res.started) started(byJob.get(x.job.id) as Tracked, x.placements, en);
    if (gangStats) noteFragmentation();
    if (o.migration?.migrate === true) migrate(en);
  };
  // Gang statistics and migration (only with o.migration).
  const gangStats = o.migration !== undefined;
  const gangWaitS = new Map<number, number>();
  const waitingGangs = new Set<Tracked>();
  let changes = 0;
  const lastTry = new Map<number, { changes: number; atMs: number }>();
  const RETRY_MS = 600_000;
  const REPLAN_MS = 60_000;
  let migrations = 0;
  let movedUnits = 0;
  let planCalls = 0;
  const noPlan: Partial<Record<NoPlanReason, number>> = {};
  const fragBlocked = new Set<number>();
  const helped = new Set<number>();
  let overheadMilliMs = 0;
  const wholeGpus = (t: Tracked): number => unitPods(t.unit).reduce((s, p) => s + (p.request.gpuMilli >= 1000 ? p.request.gpuCount : 0), 0);
  const isGang = (t: Tracked): boolean => wholeGpus(t) >= 2;
  /** A gang the statistics count: one that arrives in their window. */
  const counted = (t: Tracked): boolean => isGang(t) && t.unit.arrivalMs >= gangFrom;
  const canMove = o.migration?.movable ?? ((): boolean => true);
  const runningJobOf = (t: Tracked): RunningJob => ({
    id: t.job.id,
    queue: t.job.queue,
    priority: 0,
    startMs: t.startedAtMs ?? 0,
    estEndMs: t.endAtMs ?? Number.POSITIVE_INFINITY,
    podIds: unitPods(t.unit).map((p) => p.id),
    resources: { gpuMilli: t.demandMilli, cpuMilli: 0, memoryMiB: 0 },
    preemptible: true,
    checkpointable: true,
  });
  /**
   * Gangs still waiting after a pass although the cluster has as many whole free GPUs of a model they allow as
   * they ask: only fragmentation (or CPU/memory beside the GPUs) keeps them out. Measured the same in both runs.
   */
  let freeAll = 0;
  const noteFragmentation = (): void => {
    if (waitingGangs.size === 0) return;
    const freeByModel = new Map<string, number>();
    freeAll = 0;
    for (const n of state.nodes) {
      for (let g = 0; g < n.gpuFree.length; g++) {
        if (n.gpuUsable[g] !== 1 || n.gpuFree[g] !== 1000) continue;
        const model = n.spec.gpus[g]?.model ?? '';
        freeByModel.set(model, (freeByModel.get(model) ?? 0) + 1);
        freeAll++;
      }
    }
    for (const t of waitingGangs) {
      if (t.state !== 'waiting' || fragBlocked.has(t.seq)) continue;
      const models = unitPods(t.unit)[0]?.gpuModels ?? [];
      const free = models.length === 0 ? freeAll : models.reduce((s, m) => s + (freeByModel.get(m) ?? 0), 0);
      if (free >= wholeGpus(t) && counted(t)) fragBlocked.add(t.seq);
    }
  };
  /** The part of [from, from + ms) inside the measured window (utilisation is averaged over it). */
  const inWindow = (from: number, ms: number): number => Math.max(0, Math.min(from + ms, horizon) - Math.max(from, gangFrom));
  /**
   * The waiting gangs, longest-waiting first, each given to the planner (ADR 0095) when only fragmentation keeps
   * it out; a plan that pays is carried out at once, and the next gang is planned for on the state it left.
   */
  const migrate = (en: Environment<Payload>): void => {
    const order: Tracked[] = [];
    for (const t of waitingGangs) {
      if (t.state !== 'waiting') waitingGangs.delete(t);
      else order.push(t);
    }
    order.sort((a, b) => a.waitingSinceMs - b.waitingSinceMs || a.seq - b.seq);
    for (const t of order) migrateOne(t, en);
  };
  const migrateOne = (head: Tracked, en: Environment<Payload>): void => {
    const last = lastTry.get(head.seq);
    // Nothing was freed since this gang found no plan that pays: the answer is the same (for ten minutes).
    if (last !== undefined && last.changes === changes && en.nowMs - last.atMs < RETRY_MS) return;
    // As the live defragmenter (ADR 0144): the same gang is not planned for again within a minute.
    if (last !== undefined && en.nowMs - last.atMs < REPLAN_MS) return;
    lastTry.set(head.seq, { changes, atMs: en.nowMs });
    planCalls++;
    // The planner's first test, before the expected start's bisection: fewer whole GPUs free than the gang asks.
    if (freeAll < wholeGpus(head)) {
      noPlan.short = (noPlan.short ?? 0) + 1;
      return;
    }
    const runningJobs = [...running.values()].filter((t) => t.startedAtMs !== undefined && t.startedAtMs <= en.nowMs && canMove(t.unit)).map((t) => ({ t, job: runningJobOf(t) }));
    const cost = o.migration?.cost ?? DEFAULT_MIGRATION_COST;
    const expected = expectedStartMs(scheduler, head.job.gang, runningJobs.map((r) => r.job), en.nowMs);
    const plan = planMigration({
      nowMs: en.nowMs,
      scheduler,
      job: head.job,
      movable: runningJobs.map((r) => ({ job: r.job, gang: r.t.job.gang })),
      expectedStartMs: expected,
      cost,
      ...(o.migration?.maxDomains === undefined ? {} : { maxDomains: o.migration.maxDomains }),
      ...(o.migration?.maxMoves === undefined ? {} : { maxMoves: o.migration.maxMoves }),
      onNoPlan: (why) => {
        noPlan[why] = (noPlan[why] ?? 0) + 1;
      },
    });
    if (plan === undefined) return;
    const inStats = en.nowMs >= gangFrom;
    if (counted(head)) helped.add(head.seq);
    const placements = commitMigration(scheduler, plan);
    // The movers took as many whole GPUs elsewhere as they freed; the gang took its own.
    freeAll -= wholeGpus(head);
    if (inStats) migrations++;
    const byId = new Map(runningJobs.map((r) => [r.job.id, r.t]));
    for (const m of plan.moves) {
      const t = byId.get(m.job.id) as Tracked;
      if (inStats) movedUnits++;
      // Paused for its checkpoint and restore: it ends that much later, holding its (new) GPUs meanwhile.
      overheadMilliMs += t.demandMilli * inWindow(en.nowMs, m.pauseMs) + (inStats ? 1000 * m.redoneGpuMs : 0);
      t.epoch++;
      if (t.endAtMs !== undefined && Number.isFinite(t.endAtMs)) {
        t.endAtMs += m.pauseMs;
        en.at(t.endAtMs, PRIORITY.complete, { type: 'complete', unit: t, epoch: t.epoch });
      }
    }
    // The gang holds its GPUs from now but trains only once the slowest mover has checkpointed.
    overheadMilliMs += head.demandMilli * inWindow(en.nowMs, plan.startMs - en.nowMs);
    queue.delete(head.job.id);
    waitingGangs.delete(head);
    started(head, placements, en, plan.startMs);
  };
  const enqueue = (t: Tracked, now: number): void => {
    t.state = 'waiting';
    t.waitingSinceMs = now;
    waitingPods += unitPods(t.unit).length;
    // Requeued units (after an eviction) keep their original order: the job keeps its (arrival, seq).
    queue.add(t.job, now);
    if (gangStats && isGang(t)) waitingGangs.add(t);
  };
  const handle = (p: Payload, en: Environment<Payload>): void => {
    advance(en.nowMs);
    // Only what frees GPUs can turn "no plan" into a plan (an arrival only takes room): re-plan after those.
    if (p.type === 'complete' || p.type === 'repair' || p.type === 'fail') changes++;
    switch (p.type) {
      case 'arrive':
        enqueue(p.unit, en.nowMs);
        if (Number.isFinite(p.unit.unit.deadlineMs)) en.at(Math.max(en.nowMs, p.unit.unit.deadlineMs), PRIORITY.deadline, { type: 'deadline', unit: p.unit });
        queuePass(en);
        break;
      case 'complete':
        if (p.unit.state !== 'running' || (p.epoch !== undefined && p.epoch !== p.unit.epoch)) break;
        release(p.unit);
        p.unit.state = 'done';
        queue.onEvent({ kind: 'freed' }, en.nowMs);
        queuePass(en);
        break;
      case 'deadline':
        if (p.unit.state === 'waiting') {
          p.unit.state = 'abandoned';
          abandoned++;
          // A gang that gave up waited all that time (and never started).
          if (gangStats && counted(p.unit)) gangWaitS.set(p.unit.seq, (en.nowMs - p.unit.waitingSinceMs) / 1000);
          spine.withdraw(p.unit.job.id, en.nowMs);
          waitingPods -= unitPods(p.unit.unit).length;
        }
        break;
      case 'fail': {
        const node = state.nodes[p.node];
        if (node === undefined || nodeDown[p.node] === 1) break;
        failures++;
        nodeDown[p.node] = 1;
        const victims = new Set<Tracked>();
        for (const podId of node.allocations.keys()) {
          const t = podUnit.get(podId);
          if (t !== undefined) victims.add(t);
        }
        for (const t of victims) {
          release(t);
          evictions++;
          enqueue(t, en.nowMs);
        }
        for (let g = 0; g < node.spec.gpus.length; g++) state.setGpuHealth(node.name, g, false);
        queue.onEvent({ kind: 'freed' }, en.nowMs);
        queuePass(en);
        if (o.failures !== undefined) en.schedule(o.failures.repairMs, PRIORITY.repair, { type: 'repair', node: p.node });
        break;
      }
      case 'repair': {
        const node = state.nodes[p.node];
        if (node === undefined) break;
        nodeDown[p.node] = 0;
        for (let g = 0; g < node.spec.gpus.length; g++) state.setGpuHealth(node.name, g, true);
        queue.onEvent({ kind: 'freed' }, en.nowMs);
        queuePass(en);
        if (o.failures !== undefined) scheduleFailure(en, p.node);
        break;
      }
      case 'pass':
        passQueued = false;
        pass(en);
        break;
    }
    sample(en.nowMs);
  };
  const scheduleFailure = (en: Environment<Payload>, node: number): void => {
    if (o.failures === undefined) return;
    const dt = -Math.log(1 - rng.next()) * o.failures.mtbfMs;
    const at = en.nowMs + dt;
    if (at <= horizon) en.at(at, PRIORITY.fail, { type: 'fail', node });
  };

  // Series: a fixed grid over the arrival span, filled as time passes.
  const points = Math.max(2, o.samples ?? 400);
  const step = Math.max(1, (horizon - start) / (points - 1));
  const tS: number[] = [];
  const allocatedPct: number[] = [];
  const waitingSeries: number[] = [];
  let nextSample = start;
  const sample = (now: number): void => {
    while (nextSample <= now && tS.length < points) {
      tS.push(Math.round((nextSample - start) / 1000));
      allocatedPct.push(capacityMilli > 0 ? Math.round((10_000 * usedMilli) / capacityMilli) / 100 : 0);
      waitingSeries.push(waitingPods);
      nextSample += step;
    }
  };

  env.run(start);
  for (const t of tracked) env.at(t.unit.arrivalMs, PRIORITY.arrive, { type: 'arrive', unit: t });
  if (o.failures !== undefined) for (let i = 0; i < state.size; i++) scheduleFailure(env, i);
  env.run(o.untilMs);
  const end = o.untilMs ?? Math.max(env.nowMs, start);
  advance(end);
  sample(end);
  let neverPods = 0;
  let neverGpu = 0;
  let waitingAtEnd = 0;
  for (const t of tracked) {
    if (t.state === 'waiting' || t.state === 'abandoned' || t.state === 'future') {
      if (t.state !== 'abandoned') waitingAtEnd++;
      neverPods += unitPods(t.unit).length;
      neverGpu += t.demandMilli;
    }
  }
  const span = end - start;
  const window = horizon - start;
  const r2 = (x: number): number => Math.round(x * 100) / 100;
  return {
    policy: o.policy,
    units: tracked.length,
    pods: tracked.reduce((s, t) => s + unitPods(t.unit).length, 0),
    placedPods,
    gpuUtilisationPct: window > 0 && capacityMilli > 0 ? r2((100 * areaMilliMs) / (capacityMilli * window)) : 0,
    peakAllocationPct: capacityMilli > 0 ? r2((100 * peak) / capacityMilli) : 0,
    queueDelayS: delaysS.length === 0 ? { mean: 0, p50: 0, p90: 0, p99: 0, max: 0 } : { mean: r2(mean(delaysS)), p50: r2(median(delaysS)), p90: r2(percentile(delaysS, 90) as number), p99: r2(percentile(delaysS, 99) as number), max: r2(delaysS.reduce((m, d) => Math.max(m, d), 0)) },
    neverPlaced: { pods: neverPods, gpus: r2(neverGpu / 1000), abandoned, waitingAtEnd },
    evictions,
    failures,
    spanS: r2(span / 1000),
    training: { units: trainedUnits, tokensPerSec: Math.round(trainedUnits === 0 ? 0 : trainedTokens / trainedUnits), gpuUtilizationPct: trainedGpuMs === 0 ? 0 : r2((100 * trainedComputeMs) / trainedGpuMs) },
    series: { tS, allocatedPct, waitingPods: waitingSeries },
    ...(gangStats ? { gangs: gangStatsOf() } : {}),
  };

  function gangStatsOf(): GangStats {
    const waits = [...gangWaitS.values()];
    // A gang still waiting at the end counts with the wait it has had so far.
    for (const t of tracked) if (t.state === 'waiting' && counted(t)) waits.push((end - t.waitingSinceMs) / 1000);
    const gangWindow = horizon - gangFrom;
    const area = gangWindow > 0 && capacityMilli > 0 ? capacityMilli * gangWindow : 0;
    return {
      units: tracked.filter(counted).length,
      waitP99S: waits.length === 0 ? 0 : r2(percentile(waits, 99) as number),
      waitMeanS: waits.length === 0 ? 0 : r2(mean(waits)),
      unallocatedPct: area === 0 ? 0 : r2(100 - (100 * (gangAreaMilliMs - overheadMilliMs)) / area),
      migrations,
      movedUnits,
      overheadGpuHours: r2(overheadMilliMs / 1000 / 3_600_000),
      fragmentationBlocked: fragBlocked.size,
      helped: helped.size,
      planCalls,
      noPlan,
    };
  }
}

const NO_RUNNING: ReadonlyMap<string, RunningJob> = new Map();
