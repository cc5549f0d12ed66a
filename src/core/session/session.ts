/**
 * The state of one scheduling cycle (the session of Volcano/KAI): queue usage and fair shares, the jobs placed,
 * preempted and waiting, the reservations, the gang shapes that failed, the options. The cycle's actions
 * (src/core/actions: admit, allocate, preempt, reserve) read and change it through these small methods; the
 * cluster itself changes only in statements on the scheduler's ClusterState.
 */
import type { Placement, Scheduler } from '../framework/scheduler.ts';
import type { TraceSpan } from '../ports.ts';
import { deservedGpu, weightedShare } from '../queue/fair-share.ts';
import { ZERO, type QueueSpec, type Resources } from '../queue/model.ts';
import type { QueueUsage } from '../queue/quota.ts';
import type { ClusterState } from '../snapshot/cluster-state.ts';
import type { DisruptionBudget } from '../actions/disruption.ts';
import { hasNeverMember, jobResources, type QueuedJob, type RunningJob } from '../actions/jobs.ts';
import type { CheckpointRequest, CycleInput, CycleOptions, CycleResult, Reservation, WaitReason, Waiting } from './cycle-types.ts';
import { attemptAttributes, endAttempt } from './attempt-trace.ts';
import { addUsageTo, capacityOf, usageOf } from './usage.ts';

/** What the cycle decided so far (the result, being built). */
export interface Outcome {
  readonly started: { job: QueuedJob; placements: readonly Placement[] }[];
  readonly preempted: { victim: RunningJob; by: string; reason: string }[];
  readonly deferred: { victim: RunningJob; by: string; atMs: number }[];
  readonly checkpointRequests: CheckpointRequest[];
  readonly waiting: Map<string, Waiting>;
  readonly reservations: Reservation[];
}

/** One job's way through the actions: what they found out about it so far. */
export interface Attempt {
  /** The job, its members limited to the GPU models its quotas allow once admission has looked. */
  job: QueuedJob;
  readonly queue: QueueSpec;
  readonly demand: Resources;
  /** Why it is not placed and the wait reason that says so (placement and preemption add to it). */
  why: string;
  reason: WaitReason;
  /** Set once a placement attempt begins: its equivalence class and its trace span. */
  shape?: string;
  span?: TraceSpan;
}

/**
 * One action of the cycle: looks at the job of `a` and either decides it (placed, waiting with a reason, or
 * reserved: true) or leaves it to the next action (false).
 */
export type CycleAction = (s: CycleSession, a: Attempt) => boolean;

const NO_BUDGETS: readonly DisruptionBudget[] = [];

export class CycleSession {
  readonly input: CycleInput;
  readonly opts: CycleOptions;
  /** Running jobs, less the ones this cycle preempted. */
  readonly running: Map<string, RunningJob>;
  readonly usage: Map<string, QueueUsage>;
  readonly capacity: Resources;
  readonly clusterModels: readonly string[];
  /** Each declared queue's deserved GPU milli (weighted max-min over demand). */
  readonly deserved: ReadonlyMap<string, number>;
  readonly out: Outcome = { started: [], preempted: [], deferred: [], checkpointRequests: [], waiting: new Map(), reservations: [] };
  /** Nodes reserved, by the host (held) or by this cycle. */
  readonly reservedNodes: Set<string>;
  /** Lists (queues, or the one FIFO) whose head already got its chance at a reservation. */
  readonly headReserved = new Set<string>();
  /**
   * When a held gang's better layout is expected to free (allocate.ts, ADR 0200), by gang shape, model and run, while
   * the cluster state is as it was (`stateEpoch`): gangs alike need one plan per cycle, not one each.
   */
  readonly layoutPlans = new Map<string, { readonly epoch: string; readonly startMs: number | undefined }>();
  /**
   * Equivalence classes: a gang shape that failed (placement and preemption) fails again in this cycle
   * unless something was released since — the retry is skipped.
   */
  readonly failedShapes = new Map<string, { releases: number; waiting: Waiting; gang: string }>();
  /** Preemptions committed so far (each may change what fits). */
  releases = 0;
  attempted = 0;
  private budgetList: readonly DisruptionBudget[] | undefined;

  constructor(input: CycleInput, opts: CycleOptions) {
    this.input = input;
    this.opts = opts;
    this.running = new Map(input.running);
    this.usage = usageOf(this.running.values());
    const { capacity, models } = capacityOf(input.scheduler);
    this.capacity = capacity;
    this.clusterModels = models;
    this.reservedNodes = new Set(this.held.flatMap((r) => r.nodes));
    const demandByQueue = new Map<string, number>();
    for (const j of input.pending) demandByQueue.set(j.queue, (demandByQueue.get(j.queue) ?? 0) + jobResources(j).gpuMilli);
    this.deserved = deservedGpu(
      [...input.queues.values()].map((q) => ({
        queue: q,
        demandGpuMilli: (this.usage.get(q.name)?.total.gpuMilli ?? 0) + (demandByQueue.get(q.name) ?? 0),
      })),
      capacity.gpuMilli,
    );
  }

  get nowMs(): number {
    return this.input.nowMs;
  }
  get scheduler(): Scheduler {
    return this.input.scheduler;
  }
  get state(): ClusterState {
    return this.input.scheduler.state;
  }
  get queues(): ReadonlyMap<string, QueueSpec> {
    return this.input.queues;
  }
  /** Reservations the host holds across cycles (they take none of the cycle's reservation slots). */
  get held(): readonly Reservation[] {
    return this.input.held ?? [];
  }

  /** A declared queue, or an undeclared one: no quota, weight 1. */
  queueOf(name: string): QueueSpec {
    return (
      this.queues.get(name) ?? {
        name,
        tenant: name,
        weight: 1,
        nominal: this.capacity,
        borrowingLimit: ZERO,
        lendingLimit: ZERO,
        guaranteed: ZERO,
        models: {},
      }
    );
  }

  share(q: string): number {
    return weightedShare(this.queueOf(q), this.usage.get(q)?.total ?? ZERO, this.capacity);
  }

  addUsage(q: string, r: Resources, sign: 1 | -1, model?: string): void {
    addUsageTo(this.usage, q, r, sign, model);
  }

  /** The PodDisruptionBudgets, asked of the host once, when the cycle first plans a preemption. */
  budgets(): readonly DisruptionBudget[] {
    const given = this.input.disruptionBudgets ?? NO_BUDGETS;
    return (this.budgetList ??= typeof given === 'function' ? given() : given);
  }

  // kube's preemptionPolicy binds pods outside any Queue; a Queue's spec.preemption governs its own jobs
  // (the PriorityClass admission copies the class's Never onto every pod, and the guard rule
  // preemption-interrupts-gangs advises Never so that only the queue preempts, whole gangs: ADR 0060).
  neverPreempts(job: QueuedJob): boolean {
    return !this.queues.has(job.queue) && hasNeverMember(job);
  }

  /** The list `job` waits in: its queue, or the one FIFO of the baseline. */
  listOf(job: QueuedJob): string {
    return this.opts.fairShare ? job.queue : '*';
  }

  /** Whether `job` would get a reservation if it failed now (it heads its list and a slot is left). */
  mayReserve(job: QueuedJob): boolean {
    return this.opts.backfill && this.out.reservations.length < this.opts.maxReservations && !this.headReserved.has(this.listOf(job));
  }

  /** Changes whenever this cycle has changed what a placement or a plan sees: starts, preemptions, releases, reservations. */
  stateEpoch(): string {
    return `${this.out.started.length}|${this.out.preempted.length}|${this.releases}|${this.out.reservations.length}`;
  }

  wait(jobId: string, w: Waiting): void {
    this.out.waiting.set(jobId, w);
  }

  /** Waits unless an earlier step already said why (a deferred preemption says more). */
  waitUnlessSaid(jobId: string, w: Waiting): void {
    if (!this.out.waiting.has(jobId)) this.out.waiting.set(jobId, w);
  }

  /** `job` starts on `placements` (committed by the caller): its queue's usage grows by `demand` on the model of its first node. */
  start(job: QueuedJob, demand: Resources, placements: readonly Placement[]): void {
    const model = this.state.node(placements[0]?.node ?? '')?.spec.gpus[0]?.model;
    this.addUsage(job.queue, demand, 1, model);
    this.out.started.push({ job, placements });
  }

  /** A new attempt for `job`, nothing found out yet. */
  attemptFor(job: QueuedJob): Attempt {
    return { job, queue: this.queueOf(job.queue), demand: jobResources(job), why: '', reason: 'capacity' };
  }

  /**
   * Begins the placement attempt of `a` (one span per attempt when tracing), or reuses the wait of an equal
   * gang shape that failed since the last release: false then (decided).
   */
  beginAttempt(a: Attempt, shape: string): boolean {
    const prior = this.failedShapes.get(shape);
    if (prior !== undefined && prior.releases === this.releases && !(this.opts.backfill && !this.headReserved.has(this.listOf(a.job)))) {
      this.wait(a.job.id, renamed(prior.waiting, prior.gang, a.job.gang.name));
      return false;
    }
    this.attempted++;
    a.shape = shape;
    // One span per placement attempt (a pod is a gang of one); off (NO_TRACER) it costs this branch only.
    const tracer = this.scheduler.tracer;
    if (tracer.enabled) a.span = tracer.start('sits.attempt', attemptAttributes(a.job));
    return true;
  }

  /** No action decided `a`: it waits with what they found, and its shape is remembered as failed. */
  settle(a: Attempt): void {
    this.waitUnlessSaid(a.job.id, { reason: a.reason, message: a.why });
    if (a.shape !== undefined)
      this.failedShapes.set(a.shape, { releases: this.releases, waiting: this.out.waiting.get(a.job.id) as Waiting, gang: a.job.gang.name });
  }

  /** Ends the attempt's span, if it has one, with what became of the job. */
  endTrace(a: Attempt): void {
    if (a.span !== undefined) endAttempt(a.span, a.job, this.out.started, this.out.preempted, this.out.waiting);
  }

  result(): CycleResult {
    return { ...this.out, attempted: this.attempted };
  }
}

/** A reused explanation names the gang it is shown for ("0/4 nodes fit gang b-50 …", not b-49). */
function renamed(w: Waiting, from: string, to: string): Waiting {
  if (from === to) return w;
  for (const kind of ['gang', 'pod']) {
    const at = w.message.indexOf(`fit ${kind} ${from}`);
    if (at >= 0) return { ...w, message: `${w.message.slice(0, at)}fit ${kind} ${to}${w.message.slice(at + `fit ${kind} ${from}`.length)}` };
  }
  return w;
}
