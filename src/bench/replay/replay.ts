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
import { commitMigration, DEFAULT_MIGRATION_COST, expectedStartMs, planMigration, type MigrationCost, type MigrationPlan, type NoPlanReason } from '../../core/actions/migration.ts';

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
  /**
   * With untilMs only: what the trace holds after the window. Not in units, pods or neverPlaced, which count what
   * arrived (a pod that never came was not refused a place).
   */
  readonly notArrived?: { readonly units: number; readonly pods: number };
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
  const run = new ReplayRun(nodes, units, o);
  run.simulate();
  return run.result();
}

type SimApp = ReturnType<typeof simAppOrThrow>;
type Placement = { readonly podId: string; readonly node: string; readonly gpus: readonly number[] };

/** Nothing freed since a gang found no plan that pays: the answer is the same for this long. */
const RETRY_MS = 600_000;
/** As the live defragmenter (ADR 0144): the same gang is not planned for again within a minute. */
const REPLAN_MS = 60_000;

const r2 = (x: number): number => Math.round(x * 100) / 100;

/** One replay: the simulated cluster and queue, the event loop's handlers and what they count. */
class ReplayRun {
  private readonly o: ReplayOptions;
  private readonly rng: Rng;
  private readonly state: SimApp['state'];
  private readonly scheduler: SimApp['scheduler'];
  private readonly capacityMilli: number;
  private readonly tracked: readonly Tracked[];
  private readonly start: number;
  /** Failures happen while the trace runs: up to --until, or up to the last arrival. */
  private readonly horizon: number;
  private readonly byJob: ReadonlyMap<string, Tracked>;
  private readonly env: Environment<Payload>;
  private passQueued = false;
  private readonly running = new Map<number, Tracked>();
  private readonly podUnit = new Map<string, Tracked>();
  private readonly nodeDown: Uint8Array;

  /** Gang statistics and migration are on (o.migration given). */
  private readonly gangStats: boolean;

  /** What the run counts as it goes. */
  private readonly m = {
    usedMilli: 0,
    waitingPods: 0,
    lastT: 0,
    areaMilliMs: 0,
    peak: 0,
    evictions: 0,
    failures: 0,
    abandoned: 0,
    placedPods: 0,
    delaysS: [] as number[],
    trained: { units: 0, tokens: 0, gpuMs: 0, computeMs: 0 },
    end: 0,
  };
  /** Gang statistics and migration (only with o.migration); gangFrom: their own window (from o.migration.fromMs). */
  private readonly mig = {
    gangFrom: 0,
    gangAreaMilliMs: 0,
    gangWaitS: new Map<number, number>(),
    waitingGangs: new Set<Tracked>(),
    changes: 0,
    lastTry: new Map<number, { changes: number; atMs: number }>(),
    migrations: 0,
    movedUnits: 0,
    planCalls: 0,
    noPlan: {} as Partial<Record<NoPlanReason, number>>,
    fragBlocked: new Set<number>(),
    helped: new Set<number>(),
    overheadMilliMs: 0,
    canMove: ((): boolean => true) as (u: ReplayUnit) => boolean,
    freeAll: 0,
  };
  /** Series: a fixed grid over the arrival span, filled as time passes. */
  private readonly series = { points: 0, step: 0, tS: [] as number[], allocatedPct: [] as number[], waitingSeries: [] as number[], nextSample: 0 };
  private readonly sim: Pick<SimApp, 'queue' | 'spine'> & { readonly endPods: SimApp['end'] };

  constructor(nodes: readonly NodeSpec[], units: readonly ReplayUnit[], o: ReplayOptions) {
    this.o = o;
    this.rng = seededRng(o.seed ?? 1);
    const app = simAppOrThrow({ nodes, profile: o.profile ?? o.policy, typicalShapes: o.profile === undefined ? replayTypicalShapes(units) : [], rng: this.rng }, (m) => new PolicyError(m));
    this.state = app.state;
    this.scheduler = app.scheduler;
    this.sim = { queue: app.queue, spine: app.spine, endPods: app.end };
    this.capacityMilli = this.state.nodes.reduce((s, n) => s + n.spec.gpus.length * 1000, 0);
    this.tracked = units.map((unit, seq) => ({
      unit,
      seq,
      job: jobOf(unit, seq),
      demandMilli: unitPods(unit).reduce((s, p) => s + p.request.gpuCount * p.request.gpuMilli, 0),
      state: 'future',
      epoch: 0,
      waitingSinceMs: 0,
    }));
    const origin = this.tracked.reduce((m, t) => Math.min(m, t.unit.arrivalMs), Number.POSITIVE_INFINITY);
    this.start = Number.isFinite(origin) ? origin : 0;
    const lastArrival = this.tracked.reduce((m, t) => Math.max(m, t.unit.arrivalMs), this.start);
    this.horizon = o.untilMs ?? lastArrival;
    this.byJob = new Map(this.tracked.map((t) => [t.job.id, t]));
    this.m.lastT = this.start;
    this.mig.gangFrom = Math.max(this.start, o.migration?.fromMs ?? this.start);
    this.nodeDown = new Uint8Array(this.state.size);
    this.gangStats = o.migration !== undefined;
    this.mig.canMove = o.migration?.movable ?? ((): boolean => true);
    this.series.points = Math.max(2, o.samples ?? 400);
    this.series.step = Math.max(1, (this.horizon - this.start) / (this.series.points - 1));
    this.series.nextSample = this.start;
    this.env = new Environment<Payload>((e: SimEvent<Payload>, en) => this.handle(e.payload, en));
  }

  simulate(): void {
    const env = this.env;
    env.run(this.start);
    for (const t of this.tracked) env.at(t.unit.arrivalMs, PRIORITY.arrive, { type: 'arrive', unit: t });
    if (this.o.failures !== undefined) for (let i = 0; i < this.state.size; i++) this.scheduleFailure(env, i);
    env.run(this.o.untilMs);
    this.m.end = this.o.untilMs ?? Math.max(env.nowMs, this.start);
    this.advance(this.m.end);
    this.sample(this.m.end);
  }

  /** Utilisation is averaged over the trace's own window (first to last arrival, or to --until), not the drain after it. */
  private advance(t: number): void {
    const clipped = Math.min(t, this.horizon);
    if (clipped > this.m.lastT) {
      this.m.areaMilliMs += this.m.usedMilli * (clipped - this.m.lastT);
      this.mig.gangAreaMilliMs += this.m.usedMilli * Math.max(0, clipped - Math.max(this.m.lastT, this.mig.gangFrom));
      this.m.lastT = clipped;
    }
  }

  private queuePass(en: Environment<Payload>): void {
    if (!this.passQueued) {
      this.passQueued = true;
      en.schedule(0, PRIORITY.pass, { type: 'pass' });
    }
  }

  /** A unit the cycle started (its placements already committed to the simulated cluster). */
  private started(t: Tracked, placements: readonly Placement[], en: Environment<Payload>, atMs = en.nowMs): void {
    const u = t.unit;
    if (unitPods(u).every((p) => p.request.gpuCount > 0 && p.request.gpuMilli >= 1000)) this.noteTraining(u, placements, en);
    for (const p of placements) this.podUnit.set(p.podId, t);
    this.m.placedPods += placements.length;
    for (let i = 0; i < placements.length; i++) this.m.delaysS.push((atMs - t.waitingSinceMs) / 1000);
    if (this.gangStats && this.counted(t) && !this.mig.gangWaitS.has(t.seq)) this.mig.gangWaitS.set(t.seq, (atMs - t.waitingSinceMs) / 1000);
    t.startedAtMs = atMs;
    t.state = 'running';
    t.epoch++;
    this.m.usedMilli += t.demandMilli;
    this.m.peak = Math.max(this.m.peak, this.m.usedMilli);
    this.m.waitingPods -= unitPods(u).length;
    this.running.set(t.seq, t);
    if (Number.isFinite(u.durationMs)) {
      t.endAtMs = atMs + Math.max(0, u.durationMs);
      // Without gang statistics exactly as before (a relative delay, no epoch on the event).
      if (!this.gangStats) en.schedule(Math.max(0, u.durationMs), PRIORITY.complete, { type: 'complete', unit: t });
      else en.at(t.endAtMs, PRIORITY.complete, { type: 'complete', unit: t, epoch: t.epoch });
    }
  }

  /** A unit on whole GPUs taken as the default DDP job: its step time on the GPUs it got. */
  private noteTraining(u: ReplayUnit, placements: readonly Placement[], en: Environment<Payload>): void {
    const st = stepTime(DEFAULT_TRAINING_MODEL, sharesOf(placements, (n) => this.state.node(n)?.spec));
    const gpus = unitPods(u).reduce((a, p) => a + p.request.gpuCount, 0);
    const ms = Number.isFinite(u.durationMs) ? u.durationMs : Math.max(0, this.horizon - en.nowMs);
    this.m.trained.units++;
    this.m.trained.tokens += st.tokensPerSec;
    this.m.trained.gpuMs += gpus * ms;
    this.m.trained.computeMs += gpus * ms * st.gpuUtilization;
  }

  private release(t: Tracked): void {
    const pods = unitPods(t.unit).map((p) => p.id);
    this.sim.endPods(pods);
    for (const p of pods) this.podUnit.delete(p);
    this.m.usedMilli -= t.demandMilli;
    this.running.delete(t.seq);
  }

  private pass(en: Environment<Payload>): void {
    const res = this.sim.spine.cycle({ nowMs: en.nowMs, scheduler: this.scheduler, queues: NO_QUEUES, running: NO_RUNNING, options: REPLAY_CYCLE });
    for (const x of res.started) this.started(this.byJob.get(x.job.id) as Tracked, x.placements, en);
    if (this.gangStats) this.noteFragmentation();
    if (this.o.migration?.migrate === true) this.migrate(en);
  }

  private wholeGpus(t: Tracked): number {
    return unitPods(t.unit).reduce((s, p) => s + (p.request.gpuMilli >= 1000 ? p.request.gpuCount : 0), 0);
  }

  private isGang(t: Tracked): boolean {
    return this.wholeGpus(t) >= 2;
  }

  /** A gang the statistics count: one that arrives in their window. */
  private counted(t: Tracked): boolean {
    return this.isGang(t) && t.unit.arrivalMs >= this.mig.gangFrom;
  }

  /**
   * Gangs still waiting after a pass although the cluster has as many whole free GPUs of a model they allow as
   * they ask: only fragmentation (or CPU/memory beside the GPUs) keeps them out. Measured the same in both runs.
   */
  private noteFragmentation(): void {
    if (this.mig.waitingGangs.size === 0) return;
    const freeByModel = new Map<string, number>();
    this.mig.freeAll = 0;
    for (const n of this.state.nodes) {
      for (let g = 0; g < n.gpuFree.length; g++) {
        if (n.gpuUsable[g] !== 1 || n.gpuFree[g] !== 1000) continue;
        const model = n.spec.gpus[g]?.model ?? '';
        freeByModel.set(model, (freeByModel.get(model) ?? 0) + 1);
        this.mig.freeAll++;
      }
    }
    for (const t of this.mig.waitingGangs) {
      if (t.state !== 'waiting' || this.mig.fragBlocked.has(t.seq)) continue;
      const models = unitPods(t.unit)[0]?.gpuModels ?? [];
      const free = models.length === 0 ? this.mig.freeAll : models.reduce((s, m) => s + (freeByModel.get(m) ?? 0), 0);
      if (free >= this.wholeGpus(t) && this.counted(t)) this.mig.fragBlocked.add(t.seq);
    }
  }

  /** The part of [from, from + ms) inside the measured window (utilisation is averaged over it). */
  private inWindow(from: number, ms: number): number {
    return Math.max(0, Math.min(from + ms, this.horizon) - Math.max(from, this.mig.gangFrom));
  }

  /**
   * The waiting gangs, longest-waiting first, each given to the planner (ADR 0095) when only fragmentation keeps
   * it out; a plan that pays is carried out at once, and the next gang is planned for on the state it left.
   */
  private migrate(en: Environment<Payload>): void {
    const order: Tracked[] = [];
    for (const t of this.mig.waitingGangs) {
      if (t.state !== 'waiting') this.mig.waitingGangs.delete(t);
      else order.push(t);
    }
    order.sort((a, b) => a.waitingSinceMs - b.waitingSinceMs || a.seq - b.seq);
    for (const t of order) this.migrateOne(t, en);
  }

  /** Whether the planner is asked for this gang now (and counts the call). */
  private mayPlanFor(head: Tracked, nowMs: number): boolean {
    const last = this.mig.lastTry.get(head.seq);
    if (last !== undefined && last.changes === this.mig.changes && nowMs - last.atMs < RETRY_MS) return false;
    if (last !== undefined && nowMs - last.atMs < REPLAN_MS) return false;
    this.mig.lastTry.set(head.seq, { changes: this.mig.changes, atMs: nowMs });
    this.mig.planCalls++;
    // The planner's first test, before the expected start's bisection: fewer whole GPUs free than the gang asks.
    if (this.mig.freeAll < this.wholeGpus(head)) {
      this.mig.noPlan.short = (this.mig.noPlan.short ?? 0) + 1;
      return false;
    }
    return true;
  }

  private migrateOne(head: Tracked, en: Environment<Payload>): void {
    if (!this.mayPlanFor(head, en.nowMs)) return;
    const o = this.o;
    const runningJobs = [...this.running.values()].filter((t) => t.startedAtMs !== undefined && t.startedAtMs <= en.nowMs && this.mig.canMove(t.unit)).map((t) => ({ t, job: runningJobOf(t) }));
    const cost = o.migration?.cost ?? DEFAULT_MIGRATION_COST;
    const expected = expectedStartMs(this.scheduler, head.job.gang, runningJobs.map((r) => r.job), en.nowMs);
    const plan = planMigration({
      nowMs: en.nowMs,
      scheduler: this.scheduler,
      job: head.job,
      movable: runningJobs.map((r) => ({ job: r.job, gang: r.t.job.gang })),
      expectedStartMs: expected,
      cost,
      ...(o.migration?.maxDomains === undefined ? {} : { maxDomains: o.migration.maxDomains }),
      ...(o.migration?.maxMoves === undefined ? {} : { maxMoves: o.migration.maxMoves }),
      onNoPlan: (why) => {
        this.mig.noPlan[why] = (this.mig.noPlan[why] ?? 0) + 1;
      },
    });
    if (plan === undefined) return;
    this.carryOut(head, plan, new Map(runningJobs.map((r) => [r.job.id, r.t])), en);
  }

  /** A plan that pays: the movers pause for checkpoint and restore, the gang starts where they were. */
  private carryOut(head: Tracked, plan: MigrationPlan, byId: ReadonlyMap<string, Tracked>, en: Environment<Payload>): void {
    const inStats = en.nowMs >= this.mig.gangFrom;
    if (this.counted(head)) this.mig.helped.add(head.seq);
    const placements = commitMigration(this.scheduler, plan);
    // The movers took as many whole GPUs elsewhere as they freed; the gang took its own.
    this.mig.freeAll -= this.wholeGpus(head);
    if (inStats) this.mig.migrations++;
    for (const m of plan.moves) {
      const t = byId.get(m.job.id) as Tracked;
      if (inStats) this.mig.movedUnits++;
      // Paused for its checkpoint and restore: it ends that much later, holding its (new) GPUs meanwhile.
      this.mig.overheadMilliMs += t.demandMilli * this.inWindow(en.nowMs, m.pauseMs) + (inStats ? 1000 * m.redoneGpuMs : 0);
      t.epoch++;
      if (t.endAtMs !== undefined && Number.isFinite(t.endAtMs)) {
        t.endAtMs += m.pauseMs;
        en.at(t.endAtMs, PRIORITY.complete, { type: 'complete', unit: t, epoch: t.epoch });
      }
    }
    // The gang holds its GPUs from now but trains only once the slowest mover has checkpointed.
    this.mig.overheadMilliMs += head.demandMilli * this.inWindow(en.nowMs, plan.startMs - en.nowMs);
    this.sim.queue.delete(head.job.id);
    this.mig.waitingGangs.delete(head);
    this.started(head, placements, en, plan.startMs);
  }

  private enqueue(t: Tracked, now: number): void {
    t.state = 'waiting';
    t.waitingSinceMs = now;
    this.m.waitingPods += unitPods(t.unit).length;
    // Requeued units (after an eviction) keep their original order: the job keeps its (arrival, seq).
    this.sim.queue.add(t.job, now);
    if (this.gangStats && this.isGang(t)) this.mig.waitingGangs.add(t);
  }

  private handle(p: Payload, en: Environment<Payload>): void {
    this.advance(en.nowMs);
    // Only what frees GPUs can turn "no plan" into a plan (an arrival only takes room): re-plan after those.
    if (p.type === 'complete' || p.type === 'repair' || p.type === 'fail') this.mig.changes++;
    switch (p.type) {
      case 'arrive':
        this.enqueue(p.unit, en.nowMs);
        if (Number.isFinite(p.unit.unit.deadlineMs)) en.at(Math.max(en.nowMs, p.unit.unit.deadlineMs), PRIORITY.deadline, { type: 'deadline', unit: p.unit });
        this.queuePass(en);
        break;
      case 'complete':
        if (p.unit.state !== 'running' || (p.epoch !== undefined && p.epoch !== p.unit.epoch)) break;
        this.release(p.unit);
        p.unit.state = 'done';
        this.sim.queue.onEvent({ kind: 'freed' }, en.nowMs);
        this.queuePass(en);
        break;
      case 'deadline':
        this.deadline(p.unit, en);
        break;
      case 'fail':
        this.fail(p.node, en);
        break;
      case 'repair':
        this.repair(p.node, en);
        break;
      case 'pass':
        this.passQueued = false;
        this.pass(en);
        break;
    }
    this.sample(en.nowMs);
  }

  private deadline(t: Tracked, en: Environment<Payload>): void {
    if (t.state !== 'waiting') return;
    t.state = 'abandoned';
    this.m.abandoned++;
    // A gang that gave up waited all that time (and never started).
    if (this.gangStats && this.counted(t)) this.mig.gangWaitS.set(t.seq, (en.nowMs - t.waitingSinceMs) / 1000);
    this.sim.spine.withdraw(t.job.id, en.nowMs);
    this.m.waitingPods -= unitPods(t.unit).length;
  }

  /** A node fails: the units on it are evicted and queued again; it is repaired after o.failures.repairMs. */
  private fail(index: number, en: Environment<Payload>): void {
    const node = this.state.nodes[index];
    if (node === undefined || this.nodeDown[index] === 1) return;
    this.m.failures++;
    this.nodeDown[index] = 1;
    const victims = new Set<Tracked>();
    for (const podId of node.allocations.keys()) {
      const t = this.podUnit.get(podId);
      if (t !== undefined) victims.add(t);
    }
    for (const t of victims) {
      this.release(t);
      this.m.evictions++;
      this.enqueue(t, en.nowMs);
    }
    for (let g = 0; g < node.spec.gpus.length; g++) this.state.setGpuHealth(node.name, g, false);
    this.sim.queue.onEvent({ kind: 'freed' }, en.nowMs);
    this.queuePass(en);
    if (this.o.failures !== undefined) en.schedule(this.o.failures.repairMs, PRIORITY.repair, { type: 'repair', node: index });
  }

  private repair(index: number, en: Environment<Payload>): void {
    const node = this.state.nodes[index];
    if (node === undefined) return;
    this.nodeDown[index] = 0;
    for (let g = 0; g < node.spec.gpus.length; g++) this.state.setGpuHealth(node.name, g, true);
    this.sim.queue.onEvent({ kind: 'freed' }, en.nowMs);
    this.queuePass(en);
    if (this.o.failures !== undefined) this.scheduleFailure(en, index);
  }

  private scheduleFailure(en: Environment<Payload>, node: number): void {
    if (this.o.failures === undefined) return;
    const dt = -Math.log(1 - this.rng.next()) * this.o.failures.mtbfMs;
    const at = en.nowMs + dt;
    if (at <= this.horizon) en.at(at, PRIORITY.fail, { type: 'fail', node });
  }

  private sample(now: number): void {
    while (this.series.nextSample <= now && this.series.tS.length < this.series.points) {
      this.series.tS.push(Math.round((this.series.nextSample - this.start) / 1000));
      this.series.allocatedPct.push(this.capacityMilli > 0 ? Math.round((10_000 * this.m.usedMilli) / this.capacityMilli) / 100 : 0);
      this.series.waitingSeries.push(this.m.waitingPods);
      this.series.nextSample += this.series.step;
    }
  }

  result(): ReplayResult {
    const { tracked, capacityMilli } = this;
    const { delaysS, trained } = this.m;
    let neverPods = 0;
    let neverGpu = 0;
    let waitingAtEnd = 0;
    const arrived = tracked.filter((t) => t.state !== 'future');
    for (const t of arrived) {
      if (t.state === 'waiting' || t.state === 'abandoned') {
        if (t.state !== 'abandoned') waitingAtEnd++;
        neverPods += unitPods(t.unit).length;
        neverGpu += t.demandMilli;
      }
    }
    const future = tracked.filter((t) => t.state === 'future');
    const span = this.m.end - this.start;
    const window = this.horizon - this.start;
    return {
      policy: this.o.policy,
      units: arrived.length,
      pods: arrived.reduce((s, t) => s + unitPods(t.unit).length, 0),
      placedPods: this.m.placedPods,
      gpuUtilisationPct: window > 0 && capacityMilli > 0 ? r2((100 * this.m.areaMilliMs) / (capacityMilli * window)) : 0,
      peakAllocationPct: capacityMilli > 0 ? r2((100 * this.m.peak) / capacityMilli) : 0,
      queueDelayS: delaysS.length === 0 ? { mean: 0, p50: 0, p90: 0, p99: 0, max: 0 } : { mean: r2(mean(delaysS)), p50: r2(median(delaysS)), p90: r2(percentile(delaysS, 90) as number), p99: r2(percentile(delaysS, 99) as number), max: r2(delaysS.reduce((m, d) => Math.max(m, d), 0)) },
      neverPlaced: { pods: neverPods, gpus: r2(neverGpu / 1000), abandoned: this.m.abandoned, waitingAtEnd },
      ...(this.o.untilMs === undefined ? {} : { notArrived: { units: future.length, pods: future.reduce((s, t) => s + unitPods(t.unit).length, 0) } }),
      evictions: this.m.evictions,
      failures: this.m.failures,
      spanS: r2(span / 1000),
      training: { units: trained.units, tokensPerSec: Math.round(trained.units === 0 ? 0 : trained.tokens / trained.units), gpuUtilizationPct: trained.gpuMs === 0 ? 0 : r2((100 * trained.computeMs) / trained.gpuMs) },
      series: { tS: this.series.tS, allocatedPct: this.series.allocatedPct, waitingPods: this.series.waitingSeries },
      ...(this.gangStats ? { gangs: this.gangStatsOf() } : {}),
    };
  }

  private gangStatsOf(): GangStats {
    const waits = [...this.mig.gangWaitS.values()];
    // A gang still waiting at the end counts with the wait it has had so far.
    for (const t of this.tracked) if (t.state === 'waiting' && this.counted(t)) waits.push((this.m.end - t.waitingSinceMs) / 1000);
    const gangWindow = this.horizon - this.mig.gangFrom;
    const area = gangWindow > 0 && this.capacityMilli > 0 ? this.capacityMilli * gangWindow : 0;
    return {
      units: this.tracked.filter((t) => this.counted(t)).length,
      waitP99S: waits.length === 0 ? 0 : r2(percentile(waits, 99) as number),
      waitMeanS: waits.length === 0 ? 0 : r2(mean(waits)),
      unallocatedPct: area === 0 ? 0 : r2(100 - (100 * (this.mig.gangAreaMilliMs - this.mig.overheadMilliMs)) / area),
      migrations: this.mig.migrations,
      movedUnits: this.mig.movedUnits,
      overheadGpuHours: r2(this.mig.overheadMilliMs / 1000 / 3_600_000),
      fragmentationBlocked: this.mig.fragBlocked.size,
      helped: this.mig.helped.size,
      planCalls: this.mig.planCalls,
      noPlan: this.mig.noPlan,
    };
  }
}

function runningJobOf(t: Tracked): RunningJob {
  return {
    id: t.job.id,
    queue: t.job.queue,
    priority: 0,
    startMs: t.startedAtMs ?? 0,
    estEndMs: t.endAtMs ?? Number.POSITIVE_INFINITY,
    podIds: unitPods(t.unit).map((p) => p.id),
    resources: { gpuMilli: t.demandMilli, cpuMilli: 0, memoryMiB: 0 },
    preemptible: true,
    checkpointable: true,
  };
}

const NO_RUNNING: ReadonlyMap<string, RunningJob> = new Map();
