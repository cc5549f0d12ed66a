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
import { CycleSession, type CycleAction } from '../session/session.ts';
import { DEFAULT_CYCLE_OPTIONS, type CycleInput, type CycleResult } from '../session/cycle-types.ts';
import { admit } from './admit.ts';
import { allocate } from './allocate.ts';
import { jobOrder } from './order.ts';
import { preempt } from './preempt.ts';
import { reserve } from './reserve.ts';

// Moved out of this file with the split into session and actions; their callers import them from here.
export { clusterCapacity, usageOf } from '../session/usage.ts';
export { DEFAULT_QUEUE, hasNeverMember } from './jobs.ts';
export { reservationFor } from './reserve.ts';
export { DEFAULT_CYCLE_OPTIONS } from '../session/cycle-types.ts';
export type { CheckpointRequest, CycleInput, CycleOptions, CycleResult, Reservation, WaitReason, Waiting } from '../session/cycle-types.ts';

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
