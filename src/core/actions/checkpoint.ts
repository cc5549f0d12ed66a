/**
 * Checkpoint-aware preemption (issue 14 item 3, ADR 0093), the pure part: where a victim stands in the
 * two-step preemption (ask for a checkpoint, then evict once it is committed or the victim queue's grace has
 * run out), and the checkpoint/restore time model the simulator and the migration planner use.
 *
 * The state of a request lives on the running job (`checkpointRequestedMs`): the live adapter writes it as the
 * `checkpoint-requested` annotation and reads it back, the simulator keeps it on its RunningJob — the cycle
 * itself stays a function of its input.
 */
import type { RunningJob } from './jobs.ts';

/**
 * A committed checkpoint older than this no longer counts as "the checkpoint preemption asked for": the victim
 * kept training since, so a later preemption asks again. Also how long after its deadline a request is stale.
 */
export const CHECKPOINT_FRESH_MS = 5 * 60_000;

/** Default grace a victim gets to commit a requested checkpoint (the Queue CRD's checkpointGraceSeconds default). */
export const DEFAULT_CHECKPOINT_GRACE_MS = 300_000;

/**
 * - `ready`: evict now (cannot checkpoint, or its requested checkpoint committed or failed, or the grace ran out);
 * - `request`: ask it for a checkpoint first (none asked, or the last request is stale);
 * - `pending`: asked, not committed yet, still within the grace.
 */
export type CheckpointStep = 'ready' | 'request' | 'pending';

export function checkpointStep(v: RunningJob, nowMs: number, graceMs: number): CheckpointStep {
  if (v.checkpointable !== true) return 'ready';
  const req = v.checkpointRequestedMs;
  if (req === undefined || nowMs - req > graceMs + CHECKPOINT_FRESH_MS) return 'request';
  const committed = v.lastCheckpointMs ?? Number.NEGATIVE_INFINITY;
  if (committed >= req) return nowMs - committed <= CHECKPOINT_FRESH_MS ? 'ready' : 'request';
  // The cycle answering this request failed (e.g. the volume is full): waiting out the grace gains nothing.
  if ((v.checkpointFailedMs ?? Number.NEGATIVE_INFINITY) >= req) return 'ready';
  return nowMs >= req + graceMs ? 'ready' : 'pending';
}

/** Whether the checkpoint asked of the victim failed (its controller said so before the grace ran out). */
export function checkpointFailed(v: RunningJob): boolean {
  return v.checkpointRequestedMs !== undefined && !checkpointCommitted(v) && (v.checkpointFailedMs ?? Number.NEGATIVE_INFINITY) >= v.checkpointRequestedMs;
}

/** Whether the victim's requested checkpoint committed (so its eviction loses only the time since that commit). */
export function checkpointCommitted(v: RunningJob): boolean {
  return v.checkpointRequestedMs !== undefined && (v.lastCheckpointMs ?? Number.NEGATIVE_INFINITY) >= v.checkpointRequestedMs;
}

/**
 * In a phase preemption must never cut: an all-reduce/checkpoint window (`critical-until`), or a checkpoint the
 * job started on its own that is still in flight (its end is unknown). A checkpoint SITS asked for is bounded
 * by the grace instead (see checkpointStep).
 */
export function inCriticalPhase(v: RunningJob, nowMs: number): boolean {
  return (v.criticalUntilMs ?? Number.NEGATIVE_INFINITY) > nowMs || (v.checkpointInFlight === true && v.checkpointRequestedMs === undefined);
}

/**
 * Seconds a checkpoint of a job on `gpus` GPUs takes to write (and, symmetrically, to restore): seed 000 §1
 * measures a 50 GB checkpoint at 89 s on plain storage (23 s on CheckpointFS). 50 GB is the state of an
 * 8-GPU node (6.25 GB per GPU); with distributed checkpointing every rank writes its own shards in parallel
 * (001 §4.3), so a gang of several nodes takes as long as one node and a smaller job proportionally less.
 */
export const CHECKPOINT_SECONDS_PER_NODE = 89;

export function checkpointMs(gpus: number, secondsPerNode = CHECKPOINT_SECONDS_PER_NODE): number {
  return Math.round(1000 * secondsPerNode * (Math.min(Math.max(gpus, 1), 8) / 8));
}
