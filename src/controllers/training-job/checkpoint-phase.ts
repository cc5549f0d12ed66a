/**
 * One checkpoint cycle of a TrainingJob as a pure state machine (issue 14 item 1, ADR 0083):
 *
 *   Pre ──(the training side commits: every writer's shards, then the metadata)──▶ SnapshotTrigger
 *   SnapshotTrigger ──(the VolumeSnapshot is readyToUse)──▶ PostCommit ──(the snapshot is marked committed)──▶ Ready
 *   any non-final phase ──(deadline, incomplete commit, a save the training side reports failed, lost snapshot)──▶ Failed
 *
 * The VolumeSnapshot is asked for the moment Pre completes (000 §2.5), not on a timer. `stepCheckpoint` is
 * level-triggered like the TrainingJob reconcile: it recomputes from what is observed, repeats idempotent actions
 * until their effect is seen, and never leaves Ready or Failed. A failed cycle changes nothing about the job's last
 * Ready checkpoint (`newestReady`). Pure: no clock (nowMs comes in), no I/O.
 */
import type { ConditionUpdate } from '../conditions.ts';

export const CHECKPOINT_PHASES = ['Pre', 'SnapshotTrigger', 'PostCommit', 'Ready', 'Failed'] as const;
export type CheckpointPhase = (typeof CHECKPOINT_PHASES)[number];

/** Why a cycle started. */
export type CheckpointTrigger = 'Periodic' | 'Preemption' | 'Migration' | 'Manual';

/**
 * Who writes (issue 14 item 1): `all-ranks` is torch.distributed.checkpoint (every rank writes its shards, rank 0
 * commits the metadata once all have); `rank0` is a DDP job whose rank 0 writes the whole state alone.
 */
export type CheckpointWriters = 'all-ranks' | 'rank0';

export interface CheckpointCyclePolicy {
  readonly writers: CheckpointWriters;
  /** Ranks of the running gang. */
  readonly worldSize: number;
  /** Pre must commit within this long after the cycle starts. */
  readonly commitTimeoutMs: number;
  /** The VolumeSnapshot must be readyToUse within this long after the commit. */
  readonly snapshotTimeoutMs: number;
  /** The shared volume as a failure names it, e.g. `claim llama-ckpt mounted at /checkpoints`. */
  readonly volume?: string;
}

export type CheckpointFailureReason =
  'NeverCommitted' | 'IncompleteCommit' | 'VolumeFull' | 'WriteFailed' | 'SnapshotFailed' | 'SnapshotNotReady' | 'SnapshotLost';

export interface CheckpointCycle {
  /** 1, 2, … per job; the training side echoes it in its commit so a stale commit is never taken for this one. */
  readonly seq: number;
  readonly trigger: CheckpointTrigger;
  readonly phase: CheckpointPhase;
  /** The VolumeSnapshot this cycle creates (fixed up front, so that creating it is idempotent). */
  readonly snapshotName: string;
  readonly startedMs: number;
  /** Set from SnapshotTrigger on: the training side's commit. */
  readonly step?: number;
  readonly committedMs?: number;
  /** When the VolumeSnapshot was first seen readyToUse. */
  readonly snapshotReadyMs?: number;
  readonly failure?: { readonly reason: CheckpointFailureReason; readonly message: string };
}

/** The training side's commit, read through the contract (ADR 0083). */
export interface CheckpointCommit {
  readonly seq: number;
  readonly step: number;
  /** Distinct ranks whose shards are in the commit. */
  readonly ranksWritten: number;
  /** Set when the training side reports that it could not save this checkpoint (the error it got). */
  readonly error?: string;
}

/** Whether a save error is the volume being full (ENOSPC, or EDQUOT: the quota of the volume is full). */
export function isVolumeFullError(error: string): boolean {
  return /\b(ENOSPC|EDQUOT)\b|no space left on device|disk quota exceeded/i.test(error);
}

/** The cycle's VolumeSnapshot as observed; absent when it does not exist. */
export interface ObservedSnapshot {
  readonly readyToUse: boolean;
  /** status.error.message (snapshot-controller or csi-snapshotter: a missing class, a full volume, …). */
  readonly errorMessage?: string;
  /** Carries the controller's committed label (PostCommit's effect). */
  readonly committed: boolean;
}

export interface CheckpointObservation {
  readonly nowMs: number;
  readonly commit?: CheckpointCommit;
  readonly snapshot?: ObservedSnapshot;
}

export type CheckpointAction =
  /** Create the VolumeSnapshot of the job's checkpoint claim (an existing one is fine). */
  | { readonly kind: 'createVolumeSnapshot'; readonly name: string; readonly seq: number; readonly step: number }
  /** Label the VolumeSnapshot committed with its step: from then on it is a restore point. */
  | { readonly kind: 'markSnapshotCommitted'; readonly name: string; readonly step: number }
  /** Delete the VolumeSnapshot of a failed cycle (never a committed one). */
  | { readonly kind: 'deleteVolumeSnapshot'; readonly name: string };

export interface CheckpointStep {
  readonly cycle: CheckpointCycle;
  readonly actions: readonly CheckpointAction[];
  /** The job's `Checkpointing` condition for this cycle. */
  readonly condition: ConditionUpdate;
  /** Look again after this long even if nothing changes (a deadline). */
  readonly requeueAfterMs?: number;
}

export const CHECKPOINT_CONDITION = 'Checkpointing';

/** How many distinct ranks a commit must name. */
export function expectedWriters(policy: Pick<CheckpointCyclePolicy, 'writers' | 'worldSize'>): number {
  return policy.writers === 'rank0' ? 1 : policy.worldSize;
}

/** A new cycle in Pre. */
export function startCheckpoint(jobName: string, seq: number, trigger: CheckpointTrigger, nowMs: number): CheckpointCycle {
  return { seq, trigger, phase: 'Pre', snapshotName: `${jobName}-ckpt-${seq}`, startedMs: nowMs };
}

const secs = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

function fail(cycle: CheckpointCycle, reason: CheckpointFailureReason, message: string, snapshotExists: boolean): CheckpointStep {
  const failed: CheckpointCycle = { ...cycle, phase: 'Failed', failure: { reason, message } };
  // The snapshot of a cycle that never committed is no restore point: remove it (a committed one is kept).
  const actions: CheckpointAction[] = snapshotExists ? [{ kind: 'deleteVolumeSnapshot', name: cycle.snapshotName }] : [];
  return { cycle: failed, actions, condition: { type: CHECKPOINT_CONDITION, status: 'False', reason, message } };
}

/** One level-triggered step of a cycle. */
export function stepCheckpoint(cycle: CheckpointCycle, obs: CheckpointObservation, policy: CheckpointCyclePolicy): CheckpointStep {
  const label = `checkpoint ${cycle.seq} (${cycle.trigger.toLowerCase()})`;
  switch (cycle.phase) {
    case 'Ready':
    case 'Failed':
      return settled(cycle, label);
    case 'Pre':
      return stepPre(cycle, obs, policy, label);
    case 'SnapshotTrigger':
      return stepSnapshotTrigger(cycle, obs, policy, label);
    case 'PostCommit':
      return stepPostCommit(cycle, obs, label);
  }
}

/** A step to `cycle` with nothing to do: the condition is False with this reason. */
function finalStep(cycle: CheckpointCycle, reason: string, message: string): CheckpointStep {
  return { cycle, actions: [], condition: { type: CHECKPOINT_CONDITION, status: 'False', reason, message } };
}

/** The step of a Ready cycle. */
function readyStep(cycle: CheckpointCycle, label: string): CheckpointStep {
  return finalStep(cycle, 'Ready', `${label} of step ${cycle.step} is ready as VolumeSnapshot ${cycle.snapshotName}`);
}

/** Ready and Failed are final: the cycle stays as it is. */
function settled(cycle: CheckpointCycle, label: string): CheckpointStep {
  if (cycle.phase === 'Ready') return readyStep(cycle, label);
  return finalStep(cycle, cycle.failure?.reason ?? 'Failed', cycle.failure?.message ?? `${label} failed`);
}

/** Pre: waits for the training side's commit of this cycle; a complete one asks for the VolumeSnapshot at once. */
function stepPre(cycle: CheckpointCycle, obs: CheckpointObservation, policy: CheckpointCyclePolicy, label: string): CheckpointStep {
  const now = obs.nowMs;
  const commit = obs.commit?.seq === cycle.seq ? obs.commit : undefined; // a commit of an older cycle is not this one's
  if (commit?.error !== undefined) {
    const where = policy.volume ?? 'the checkpoint volume';
    const full = isVolumeFullError(commit.error);
    const what = full ? `${where} is full` : `the training side could not write to ${where}`;
    return fail(
      cycle,
      full ? 'VolumeFull' : 'WriteFailed',
      `${label} of step ${commit.step} failed: ${what}: ${commit.error}; the last Ready checkpoint is kept`,
      obs.snapshot !== undefined,
    );
  }
  if (commit !== undefined) {
    const want = expectedWriters(policy);
    if (commit.ranksWritten < want) {
      return fail(
        cycle,
        'IncompleteCommit',
        `${label} committed step ${commit.step} with shards of ${commit.ranksWritten} of ${want} ranks (writers: ${policy.writers}); the last Ready checkpoint is kept`,
        obs.snapshot !== undefined,
      );
    }
    const next: CheckpointCycle = { ...cycle, phase: 'SnapshotTrigger', step: commit.step, committedMs: now };
    return {
      cycle: next,
      actions: [{ kind: 'createVolumeSnapshot', name: cycle.snapshotName, seq: cycle.seq, step: commit.step }],
      condition: {
        type: CHECKPOINT_CONDITION,
        status: 'True',
        reason: 'SnapshotTrigger',
        message: `${label}: step ${commit.step} committed; VolumeSnapshot ${cycle.snapshotName} requested`,
      },
      requeueAfterMs: policy.snapshotTimeoutMs,
    };
  }
  const waited = now - cycle.startedMs;
  if (waited >= policy.commitTimeoutMs) {
    return fail(
      cycle,
      'NeverCommitted',
      `${label} started ${secs(waited)} ago and never committed (limit ${secs(policy.commitTimeoutMs)}); the last Ready checkpoint is kept`,
      obs.snapshot !== undefined,
    );
  }
  return {
    cycle,
    actions: [],
    condition: { type: CHECKPOINT_CONDITION, status: 'True', reason: 'Pre', message: `${label}: waiting for the training side to commit` },
    requeueAfterMs: policy.commitTimeoutMs - waited,
  };
}

/** SnapshotTrigger: waits for the VolumeSnapshot to be readyToUse, asking again while it is missing. */
function stepSnapshotTrigger(cycle: CheckpointCycle, obs: CheckpointObservation, policy: CheckpointCyclePolicy, label: string): CheckpointStep {
  const now = obs.nowMs;
  const committedMs = cycle.committedMs ?? cycle.startedMs;
  const snap = obs.snapshot;
  if (snap?.readyToUse === true) {
    const next: CheckpointCycle = { ...cycle, phase: 'PostCommit', snapshotReadyMs: now };
    return {
      cycle: next,
      actions: [{ kind: 'markSnapshotCommitted', name: cycle.snapshotName, step: cycle.step ?? 0 }],
      condition: {
        type: CHECKPOINT_CONDITION,
        status: 'True',
        reason: 'PostCommit',
        message: `${label}: VolumeSnapshot ${cycle.snapshotName} is ready; recording it`,
      },
    };
  }
  const waited = now - committedMs;
  if (waited >= policy.snapshotTimeoutMs) {
    return snap?.errorMessage !== undefined
      ? fail(cycle, 'SnapshotFailed', `${label}: VolumeSnapshot ${cycle.snapshotName} failed: ${snap.errorMessage}; the last Ready checkpoint is kept`, true)
      : fail(
          cycle,
          'SnapshotNotReady',
          `${label}: VolumeSnapshot ${cycle.snapshotName} not ready ${secs(waited)} after the commit (limit ${secs(policy.snapshotTimeoutMs)}); the last Ready checkpoint is kept`,
          snap !== undefined,
        );
  }
  // Not there yet (or a create that was lost): ask again, it is idempotent. An error may be transient
  // (snapshot-controller retries), so it is shown, and only the deadline fails the cycle.
  return {
    cycle,
    actions: snap === undefined ? [{ kind: 'createVolumeSnapshot', name: cycle.snapshotName, seq: cycle.seq, step: cycle.step ?? 0 }] : [],
    condition:
      snap?.errorMessage !== undefined
        ? {
            type: CHECKPOINT_CONDITION,
            status: 'True',
            reason: 'SnapshotError',
            message: `${label}: VolumeSnapshot ${cycle.snapshotName}: ${snap.errorMessage}`,
          }
        : {
            type: CHECKPOINT_CONDITION,
            status: 'True',
            reason: 'SnapshotTrigger',
            message: `${label}: waiting for VolumeSnapshot ${cycle.snapshotName} to be ready`,
          },
    requeueAfterMs: policy.snapshotTimeoutMs - waited,
  };
}

/** PostCommit: marks the VolumeSnapshot committed until the mark is seen. */
function stepPostCommit(cycle: CheckpointCycle, obs: CheckpointObservation, label: string): CheckpointStep {
  const snap = obs.snapshot;
  if (snap === undefined)
    return fail(
      cycle,
      'SnapshotLost',
      `${label}: VolumeSnapshot ${cycle.snapshotName} was deleted before it was recorded; the last Ready checkpoint is kept`,
      false,
    );
  if (snap.committed) return readyStep({ ...cycle, phase: 'Ready' }, label);
  return {
    cycle,
    actions: [{ kind: 'markSnapshotCommitted', name: cycle.snapshotName, step: cycle.step ?? 0 }],
    condition: { type: CHECKPOINT_CONDITION, status: 'True', reason: 'PostCommit', message: `${label}: recording VolumeSnapshot ${cycle.snapshotName}` },
  };
}

/** "Checkpoint written" → "snapshot ready" (the number `sits bench checkpoint` reports), once known. */
export function snapshotLatencyMs(cycle: CheckpointCycle): number | undefined {
  return cycle.committedMs !== undefined && cycle.snapshotReadyMs !== undefined ? cycle.snapshotReadyMs - cycle.committedMs : undefined;
}

/** A committed VolumeSnapshot of a job, as listed by its labels. */
export interface CommittedSnapshot {
  readonly name: string;
  readonly step: number;
  readonly readyMs: number;
}

/** The restore point: the committed snapshot of the highest step (newest on a tie). */
export function newestReady(snaps: readonly CommittedSnapshot[]): CommittedSnapshot | undefined {
  let best: CommittedSnapshot | undefined;
  for (const s of snaps) if (best === undefined || s.step > best.step || (s.step === best.step && s.readyMs > best.readyMs)) best = s;
  return best;
}

/**
 * Which committed snapshots retention deletes (upstream has no TTL): beyond the newest `keep`, and older than
 * `ttlMs`; the restore point itself is never deleted, so a job always keeps its last good checkpoint.
 */
export function retentionDeletes(snaps: readonly CommittedSnapshot[], retention: { readonly keep: number; readonly ttlMs?: number }, nowMs: number): string[] {
  const keepNewest = newestReady(snaps)?.name;
  const ordered = [...snaps].sort((a, b) => b.step - a.step || b.readyMs - a.readyMs);
  return ordered
    .filter((s, i) => s.name !== keepNewest && (i >= Math.max(1, retention.keep) || (retention.ttlMs !== undefined && nowMs - s.readyMs > retention.ttlMs)))
    .map((s) => s.name);
}
