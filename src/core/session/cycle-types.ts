/**
 * What a queue cycle takes and gives (runCycle in core/actions/queue-cycle.ts, which re-exports these): its options,
 * input, result, waits and reservations. Here, below the session and the actions, so both can name them without
 * importing each other.
 */
import type { Placement, Scheduler } from '../framework/scheduler.ts';
import type { QueueSpec } from '../queue/model.ts';
import { DEFAULT_CHECKPOINT_GRACE_MS } from '../actions/checkpoint.ts';
import type { DisruptionBudget } from '../actions/disruption.ts';
import type { QueuedJob, RunningJob } from '../actions/jobs.ts';

export interface CycleOptions {
  readonly backfill: boolean;
  readonly preemption: boolean;
  /** Queues ordered by weighted fair share; false = one FIFO over all jobs (the baseline). */
  readonly fairShare: boolean;
  /** A job that (re)started less than this ago is not preempted (cooldown against loops); a queue's own cooldown overrides it. */
  readonly minRuntimeMs: number;
  /** A victim in a critical phase ending within this is preempted when it ends; later ones are spared. A queue's own grace overrides it. */
  readonly criticalGraceMs: number;
  /** Reservations at most (one per queue head, in fair-share order). */
  readonly maxReservations: number;
  /**
   * A queue's head gets a reservation only once it has waited this long (Volcano's sla-waiting-time); before that,
   * jobs behind it start wherever they fit, as in Kueue's BestEffortFIFO. A queue's own `reserveAfterMs` overrides it.
   */
  readonly reserveAfterMs: number;
  /** Explain why each waiting job did not fit (costs a pass over the nodes per failed job). */
  readonly explain: boolean;
  /**
   * Checkpoint-aware preemption (ADR 0093): victims ordered by the work they would lose first, a checkpoint in
   * flight counts as a critical phase, and a victim that can checkpoint is asked for one and evicted once it
   * is committed or its queue's checkpoint grace has run out. Off: preemption as before.
   */
  readonly checkpointAware: boolean;
  /** How long a victim may take to commit a requested checkpoint; a queue's own grace overrides it. */
  readonly checkpointGraceMs: number;
}

export const DEFAULT_CYCLE_OPTIONS: CycleOptions = {
  backfill: true,
  preemption: true,
  fairShare: true,
  minRuntimeMs: 5 * 60_000,
  criticalGraceMs: 10 * 60_000,
  maxReservations: 4,
  // ADR 0199: reservations cost throughput and mean completion (jobs behind the head wait while its nodes drain);
  // they are a guard against starvation, for the head that has waited hours.
  reserveAfterMs: 4 * 3_600_000,
  explain: true,
  checkpointAware: false,
  checkpointGraceMs: DEFAULT_CHECKPOINT_GRACE_MS,
};

export type WaitReason =
  | 'quota'
  | 'capacity'
  | 'reservation'
  | 'fair-share'
  | 'critical-victim'
  | 'checkpoint-victim'
  | 'inadmissible'
  // It fits, but waits a bounded time for a placement where it trains faster (ADR 0188).
  | 'better-placement';

export interface Waiting {
  readonly reason: WaitReason;
  readonly message: string;
  /**
   * The same wait without what counts down from cycle to cycle (`waited 60 of at most 1200 s`, `in 40 s`): what a
   * host writes to the API (the pods' condition, Events), so a job retried every cycle is written once, not every
   * cycle. Unset: `message` does not change by itself.
   */
  readonly steadyMessage?: string;
  /**
   * When the wait can end with nothing else happening (a victim's grace or critical phase runs out): a host
   * that only runs cycles on events must run one then.
   */
  readonly retryAtMs?: number;
}

export interface Reservation {
  readonly jobId: string;
  readonly startMs: number;
  readonly nodes: readonly string[];
  /** GPU milli the reserved job needs on each of its nodes. */
  readonly needs: Readonly<Record<string, number>>;
}

export interface CycleInput {
  readonly nowMs: number;
  readonly scheduler: Scheduler;
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly pending: readonly QueuedJob[];
  readonly running: ReadonlyMap<string, RunningJob>;
  readonly options?: Partial<CycleOptions>;
  /**
   * Jobs the scheduling queue holds back (nothing that could help them happened since they last failed),
   * with the wait they got then. They count for demand and order but are not tried again, unless this cycle
   * frees resources by preemption or would give the job a reservation (it heads its queue): then the answer
   * could differ, and they are tried as before.
   */
  readonly parked?: ReadonlyMap<string, Waiting>;
  /**
   * PodDisruptionBudgets over the running pods: preemption avoids breaking them where it can. A function is
   * called at most once, when the cycle first plans a preemption (hosts whose budgets cost a pass over every
   * pod pay it only then).
   */
  readonly disruptionBudgets?: readonly DisruptionBudget[] | (() => readonly DisruptionBudget[]);
  /**
   * Reservations the host holds across cycles (a defragmentation plan's freed domain, ADR 0144): other jobs may
   * use those nodes only as a backfill job may use a reserved node, and the reserved job itself is not kept off
   * them. They take none of the cycle's own reservation slots.
   */
  readonly held?: readonly Reservation[];
  /**
   * When each job was first held for a better placement (it fitted, ADR 0188), as the host remembers it across
   * cycles: the hold's clock runs from then, not from arrival, so a gang that queued for capacity still gets its
   * bounded wait once it fits (delay scheduling counts skips, not queueing; ADR 0191). Without it, from arrival.
   */
  readonly heldSince?: ReadonlyMap<string, number>;
}

export interface CycleResult {
  readonly started: readonly { readonly job: QueuedJob; readonly placements: readonly Placement[] }[];
  readonly preempted: readonly { readonly victim: RunningJob; readonly by: string; readonly reason: string }[];
  /** Victims in a critical phase: to be preempted for `by` once `atMs` passes. */
  readonly deferred: readonly { readonly victim: RunningJob; readonly by: string; readonly atMs: number }[];
  /** Victims to ask for a checkpoint for `by` (checkpoint-aware preemption): evicted once it commits or at `deadlineMs`. */
  readonly checkpointRequests: readonly CheckpointRequest[];
  readonly waiting: ReadonlyMap<string, Waiting>;
  readonly reservations: readonly Reservation[];
  /** Jobs whose placement was tried (the rest were admitted by reuse: parked, same shape as a failed one, or held). */
  readonly attempted: number;
}

export interface CheckpointRequest {
  readonly victim: RunningJob;
  readonly by: string;
  readonly deadlineMs: number;
}
