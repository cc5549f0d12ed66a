/**
 * One scheduling cycle over queued jobs, as Volcano and KAI run theirs: a session (src/core/session: usage and
 * fair shares, waits, reservations, failed shapes) and the actions the profile names, tried in turn on each job
 * in the cycle's order (order.ts: lowest weighted dominant share first, then the queue sort):
 *   admit    (admit.ts, model-quota.ts): held if its queue refuses it; quota (nominal, borrowing within the cohort,
 *            per GPU model), with reclaim of borrowed quota by preemption;
 *   allocate (allocate.ts): a topology-feasible placement of the whole gang, against the same cluster state —
 *            a job is admitted only by being placed — backfilling only where it cannot delay a reservation;
 *   preempt  (preempt.ts, victims.ts, preempt-commit.ts): whole gangs, fewest and cheapest victims, never one in
 *            a critical phase, never beyond the preemptor's deserved share;
 *   reserve  (reserve.ts): the first job of a queue that cannot be placed gets a reservation.
 * An action decides the job (placed, waiting, reserved) or leaves it to the next; a job none decides waits with
 * what they found. Everything happens in statements on the ClusterState; the caller carries out the result.
 */
import { CYCLE_ACTION_NAMES, cycleActionsProblem, type CycleActionName, type Profile } from '../framework/types.ts';
import type { Placement, Scheduler } from '../framework/scheduler.ts';
import type { QueueSpec } from '../queue/model.ts';
import { CycleSession, type CycleAction } from '../session/session.ts';
import { admit } from './admit.ts';
import { allocate } from './allocate.ts';
import { DEFAULT_CHECKPOINT_GRACE_MS } from './checkpoint.ts';
import type { DisruptionBudget } from './disruption.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';
import { jobOrder } from './order.ts';
import { preempt } from './preempt.ts';
import { reserve } from './reserve.ts';

// Moved out of this file with the split into session and actions; their callers import them from here.
export { clusterCapacity, usageOf } from '../session/usage.ts';
export { DEFAULT_QUEUE, hasNeverMember } from './jobs.ts';
export { reservationFor } from './reserve.ts';

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
  explain: true,
  checkpointAware: false,
  checkpointGraceMs: DEFAULT_CHECKPOINT_GRACE_MS,
};

export type WaitReason = 'quota' | 'capacity' | 'reservation' | 'fair-share' | 'critical-victim' | 'checkpoint-victim' | 'inadmissible';

export interface Waiting {
  readonly reason: WaitReason;
  readonly message: string;
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

/** The actions a profile may name, in the order of the default cycle. */
const ACTIONS: Readonly<Record<CycleActionName, CycleAction>> = { admit, allocate, preempt, reserve };

/** The profile's actions (absent: every one, in the default order); a name not known or a list not starting with admit is an error naming it. */
export function cycleActions(profile: Pick<Profile, 'name' | 'actions'>): CycleAction[] {
  const names: readonly string[] = profile.actions ?? CYCLE_ACTION_NAMES;
  const problem = cycleActionsProblem(names);
  if (problem !== undefined) throw new Error(`profile ${profile.name}: actions: ${problem}`);
  return names.map((n) => ACTIONS[n as CycleActionName]);
}

export function runCycle(input: CycleInput): CycleResult {
  const actions = cycleActions(input.scheduler.profile);
  const s = new CycleSession(input, { ...DEFAULT_CYCLE_OPTIONS, ...input.options });
  const next = jobOrder(s);
  for (let job = next(); job !== undefined; job = next()) {
    const a = s.attemptFor(job);
    try {
      // Each action decides the job or leaves it to the next; when none decides it waits with what they found.
      if (!actions.some((act) => act(s, a))) s.settle(a);
    } finally {
      s.endTrace(a);
    }
  }
  return s.result();
}
