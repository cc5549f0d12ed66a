/**
 * spec.checkpoint in the TrainingJob reconcile (issue 14 items 1–2, ADR 0083, ADR 0090): drives the pure cycle of
 * checkpoint-phase.ts from what is observed and turns its actions into the controller's.
 *
 *   request  the controller annotates rank 0's pod with the cycle's seq (ANNOTATION.checkpointRequest) when a cycle
 *            starts: every intervalSeconds, or when the job's ANNOTATION.requestCheckpoint changes (preemption,
 *            migration, a user);
 *   commit   the training side patches its own pod with ANNOTATION.checkpointCommit `{"seq","step","ranks"}`
 *            (examples/sits_checkpoint.py); the pod watch brings it here and the VolumeSnapshot of the shared claim
 *            is created in the same reconcile (the "linked" schedule of 000 §2.5); `{"seq","step","error"}` says the
 *            save failed (a full volume: VolumeFull) and fails the cycle at once;
 *   record   once readyToUse, the snapshot is labelled committed with its step: a restore point;
 *   retain   keep the newest `retention.keep`, drop those older than `retention.ttlSeconds`, never the newest;
 *   restore  a new gang starts with SITS_RESTORE_STEP/SITS_RESTORE_SNAPSHOT of the newest restore point; a claim
 *            from claimTemplate that is missing is created from that snapshot (dataSource).
 * Pure: no clock, no I/O.
 */
import type { CheckpointPolicy, CheckpointStatus, TrainingJob } from '../../api/schema/training-job.ts';
import { ANNOTATION, CHECKPOINT_LABEL, LABEL } from '../../api/wire.ts';
import type { ConditionUpdate } from '../conditions.ts';
import type { PodObject } from '../kube-objects.ts';
import {
  newestReady,
  retentionDeletes,
  snapshotLatencyMs,
  startCheckpoint,
  stepCheckpoint,
  type CheckpointAction,
  type CheckpointCommit,
  type CheckpointCycle,
  type CheckpointTrigger,
  type CommittedSnapshot,
} from './checkpoint-phase.ts';
import type { Action, ClaimObject, StorageMeta, VolumeSnapshotObject } from './model.ts';
import { checkpointClaimName } from './names.ts';
import { checkpointClaim, jobName, jobNamespace, ownerReference } from './pods.ts';

export const SNAPSHOT_API_VERSION = 'snapshot.storage.k8s.io/v1';

const iso = (ms: number): string => new Date(ms).toISOString();
const parseTime = (s: string | undefined): number | undefined => {
  if (s === undefined) return undefined;
  const t = Date.parse(s);
  return Number.isFinite(t) ? t : undefined;
};
const isFinal = (c: CheckpointCycle | undefined): boolean => c === undefined || c.phase === 'Ready' || c.phase === 'Failed';
const alive = <T extends { metadata: StorageMeta }>(o: T): boolean => o.metadata.deletionTimestamp === undefined;
const intLabel = (o: { metadata: StorageMeta }, key: string): number | undefined => {
  const v = o.metadata.labels?.[key];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
};

/** The committed, readyToUse snapshots of the job: its restore points. */
export function committedSnapshots(snaps: readonly VolumeSnapshotObject[]): CommittedSnapshot[] {
  const out: CommittedSnapshot[] = [];
  for (const s of snaps) {
    if (!alive(s) || s.metadata.labels?.[CHECKPOINT_LABEL.committed] !== 'true' || s.status?.readyToUse !== true) continue;
    const step = intLabel(s, CHECKPOINT_LABEL.step);
    if (step === undefined) continue;
    out.push({
      name: s.metadata.name ?? '',
      step,
      readyMs: parseTime(s.metadata.annotations?.[ANNOTATION.checkpointReadyTime]) ?? parseTime(s.status.creationTime) ?? 0,
    });
  }
  return out;
}

/** The checkpoint a new gang starts from, if any. */
export function restorePoint(job: TrainingJob, snaps: readonly VolumeSnapshotObject[] | undefined): { snapshotName: string; step: number } | undefined {
  if (job.spec.checkpoint === undefined) return undefined;
  const best = newestReady(committedSnapshots(snaps ?? []));
  return best === undefined ? undefined : { snapshotName: best.name, step: best.step };
}

/** The trigger named by a request-checkpoint value `<Trigger>[/<id>]`; anything else is Manual. */
export function requestTrigger(value: string): CheckpointTrigger {
  const head = value.split('/')[0] ?? '';
  return head === 'Preemption' || head === 'Migration' || head === 'Periodic' ? head : 'Manual';
}

/** The training side's commit on a pod, or why it cannot be read. */
export function readCommit(pod: PodObject | undefined): { commit?: CheckpointCommit; problem?: string } {
  const raw = pod?.metadata.annotations?.[ANNOTATION.checkpointCommit];
  if (raw === undefined) return {};
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return { problem: `annotation ${ANNOTATION.checkpointCommit} on pod ${pod?.metadata.name ?? ''} is not JSON: ${raw.slice(0, 200)}` };
  }
  const o = typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
  const int = (x: unknown): number | undefined => (typeof x === 'number' && Number.isInteger(x) && x >= 0 ? x : undefined);
  const seq = int(o.seq);
  const step = int(o.step);
  // A failed save (sits_checkpoint.failed): the seq and step it was for and the error, no ranks.
  if (o.error !== undefined) {
    if (seq === undefined || step === undefined || typeof o.error !== 'string' || o.error.trim() === '') {
      return {
        problem: `annotation ${ANNOTATION.checkpointCommit} on pod ${pod?.metadata.name ?? ''} reporting a failed save must be {"seq": int, "step": int, "error": "…"}, got ${raw.slice(0, 200)}`,
      };
    }
    return { commit: { seq, step, ranksWritten: 0, error: o.error.slice(0, 1024) } };
  }
  const ranks = int(o.ranks);
  if (seq === undefined || step === undefined || ranks === undefined) {
    return {
      problem: `annotation ${ANNOTATION.checkpointCommit} on pod ${pod?.metadata.name ?? ''} must be {"seq": int, "step": int, "ranks": int}, got ${raw.slice(0, 200)}`,
    };
  }
  return { commit: { seq, step, ranksWritten: ranks } };
}

type StatusCycle = NonNullable<CheckpointStatus['cycle']>;

function cycleToStatus(c: CheckpointCycle, request: string | undefined): StatusCycle {
  return {
    seq: c.seq,
    trigger: c.trigger,
    phase: c.phase,
    snapshotName: c.snapshotName,
    startTime: iso(c.startedMs),
    ...(c.step === undefined ? {} : { step: c.step }),
    ...(c.committedMs === undefined ? {} : { commitTime: iso(c.committedMs) }),
    ...(c.snapshotReadyMs === undefined ? {} : { snapshotReadyTime: iso(c.snapshotReadyMs) }),
    ...(request === undefined ? {} : { request }),
    ...(c.failure === undefined ? {} : { failureReason: c.failure.reason, failureMessage: c.failure.message.slice(0, 4096) }),
  };
}

function cycleFromStatus(s: StatusCycle): CheckpointCycle {
  const committedMs = parseTime(s.commitTime);
  const snapshotReadyMs = parseTime(s.snapshotReadyTime);
  return {
    seq: s.seq,
    trigger: s.trigger,
    phase: s.phase,
    snapshotName: s.snapshotName,
    startedMs: parseTime(s.startTime) ?? 0,
    ...(s.step === undefined ? {} : { step: s.step }),
    ...(committedMs === undefined ? {} : { committedMs }),
    ...(snapshotReadyMs === undefined ? {} : { snapshotReadyMs }),
    ...(s.failureReason === undefined
      ? {}
      : { failure: { reason: s.failureReason as NonNullable<CheckpointCycle['failure']>['reason'], message: s.failureMessage ?? '' } }),
  };
}

export interface CheckpointInput {
  readonly job: TrainingJob;
  readonly policy: CheckpointPolicy;
  readonly previous: CheckpointStatus | undefined;
  /** The gang is Running: a new cycle may be asked for. */
  readonly running: boolean;
  /** WORLD_SIZE of the current gang (the shards an all-ranks commit must name). */
  readonly worldSize: number;
  /** Rank 0's pod of the current attempt, when it exists and is not terminating. */
  readonly rank0: PodObject | undefined;
  /** Every replica pod of the current attempt (they carry the newest Ready time for the scheduler). */
  readonly replicas?: readonly PodObject[];
  readonly snapshots: readonly VolumeSnapshotObject[];
  readonly claims: readonly ClaimObject[];
  /** The job started (interval cycles count from here until the first one). */
  readonly startMs: number;
  readonly nowMs: number;
}

export interface CheckpointOutcome {
  readonly status: CheckpointStatus;
  readonly condition?: ConditionUpdate;
  /** The claim first (pods mount it), then the cycle's and retention's actions. */
  readonly claimActions: readonly Action[];
  readonly actions: readonly Action[];
  readonly wakeAt?: number;
}

function snapshotObject(job: TrainingJob, policy: CheckpointPolicy, a: Extract<CheckpointAction, { kind: 'createVolumeSnapshot' }>): VolumeSnapshotObject {
  return {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: 'VolumeSnapshot',
    metadata: {
      name: a.name,
      namespace: jobNamespace(job),
      labels: { [LABEL.trainingJob]: jobName(job), [CHECKPOINT_LABEL.seq]: String(a.seq), [CHECKPOINT_LABEL.step]: String(a.step) },
    },
    spec: { volumeSnapshotClassName: policy.volumeSnapshotClassName, source: { persistentVolumeClaimName: checkpointClaim(job) ?? '' } },
  };
}

/** The claim of claimTemplate, restored from `from` when given. */
export function checkpointClaimObject(job: TrainingJob, from: string | undefined): ClaimObject | undefined {
  const t = job.spec.checkpoint?.volume.claimTemplate;
  if (t === undefined) return undefined;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: checkpointClaimName(jobName(job)),
      namespace: jobNamespace(job),
      labels: { [LABEL.trainingJob]: jobName(job) },
      ownerReferences: [ownerReference(job)],
    },
    spec: {
      accessModes: ['ReadWriteMany'],
      resources: { requests: { storage: String(t.size) } },
      ...(t.storageClassName === undefined ? {} : { storageClassName: t.storageClassName }),
      ...(from === undefined ? {} : { dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: from } }),
    },
  };
}

/** One reconcile's worth of checkpointing. */
export function reconcileCheckpoints(i: CheckpointInput): CheckpointOutcome {
  const { job, policy, nowMs: now } = i;
  const name = jobName(job);
  const prev = i.previous ?? {};
  const byName = new Map(i.snapshots.filter(alive).map((s) => [s.metadata.name ?? '', s]));
  const actions: Action[] = [];
  const claimActions: Action[] = [];
  const wakes: number[] = [];
  // Never reuse a name: snapshots of a deleted job of the same name may be kept (Retain) and carry its label.
  let seq = Math.max(prev.seq ?? 0, ...i.snapshots.map((s) => intLabel(s, CHECKPOINT_LABEL.seq) ?? 0));
  let handled = prev.handledRequest;
  const requested = job.metadata.annotations?.[ANNOTATION.requestCheckpoint];
  const pending = requested !== undefined && requested !== '' && requested !== handled ? requested : undefined;
  const claim = checkpointClaim(job);
  const cyclePolicy = {
    writers: policy.writers,
    worldSize: Math.max(1, i.worldSize),
    commitTimeoutMs: policy.commitTimeoutSeconds * 1000,
    snapshotTimeoutMs: policy.snapshotTimeoutSeconds * 1000,
    ...(claim === undefined ? {} : { volume: `claim ${claim} mounted at ${policy.mountPath}` }),
  };
  let cycle = prev.cycle === undefined ? undefined : cycleFromStatus(prev.cycle);
  let request = prev.cycle?.request;
  let condition: ConditionUpdate | undefined;
  let latency = prev.lastSnapshotLatencyMs;
  const { commit, problem } = readCommit(i.rank0);

  const map = (c: CheckpointCycle, as: readonly CheckpointAction[]): void => {
    for (const a of as) {
      if (a.kind === 'createVolumeSnapshot') actions.push({ kind: 'createVolumeSnapshot', snapshot: snapshotObject(job, policy, a) });
      else if (a.kind === 'markSnapshotCommitted') {
        actions.push({
          kind: 'patchVolumeSnapshot',
          name: a.name,
          patch: {
            metadata: {
              labels: { [CHECKPOINT_LABEL.committed]: 'true', [CHECKPOINT_LABEL.step]: String(a.step) },
              annotations: { [ANNOTATION.checkpointReadyTime]: iso(c.snapshotReadyMs ?? now) },
            },
          },
        });
      } else {
        const s = byName.get(a.name);
        if (s !== undefined) actions.push({ kind: 'deleteVolumeSnapshot', name: a.name, uid: s.metadata.uid ?? '' });
      }
    }
  };
  const step = (c: CheckpointCycle): CheckpointCycle => {
    const snap = byName.get(c.snapshotName);
    const observed =
      snap === undefined
        ? undefined
        : {
            readyToUse: snap.status?.readyToUse === true,
            committed: snap.metadata.labels?.[CHECKPOINT_LABEL.committed] === 'true',
            ...(snap.status?.error?.message === undefined ? {} : { errorMessage: snap.status.error.message }),
          };
    const s = stepCheckpoint(
      c,
      { nowMs: now, ...(commit === undefined ? {} : { commit }), ...(observed === undefined ? {} : { snapshot: observed }) },
      cyclePolicy,
    );
    map(s.cycle, s.actions);
    condition = s.condition;
    if (s.cycle.phase === 'Pre' && problem !== undefined) condition = { ...s.condition, message: `${s.condition.message}; ${problem}` };
    if (s.requeueAfterMs !== undefined) wakes.push(now + s.requeueAfterMs);
    if (s.cycle.phase !== c.phase && (s.cycle.phase === 'Ready' || s.cycle.phase === 'Failed')) {
      actions.push({
        kind: 'event',
        type: s.cycle.phase === 'Ready' ? 'Normal' : 'Warning',
        reason: s.cycle.phase === 'Ready' ? 'CheckpointReady' : 'CheckpointFailed',
        message: s.condition.message,
      });
    }
    const l = snapshotLatencyMs(s.cycle);
    if (s.cycle.phase === 'Ready' && l !== undefined) latency = l;
    return s.cycle;
  };

  if (cycle !== undefined && !isFinal(cycle)) {
    cycle = step(cycle);
    // A request that arrives while a cycle runs is answered by that cycle when it ends Ready (ADR 0083).
    if (cycle.phase === 'Ready' && pending !== undefined) handled = pending;
  } else if (cycle !== undefined) {
    condition = stepCheckpoint(cycle, { nowMs: now }, cyclePolicy).condition;
  }

  if (isFinal(cycle) && i.running && i.rank0 !== undefined) {
    const interval = policy.intervalSeconds === undefined ? undefined : policy.intervalSeconds * 1000;
    const dueAt = interval === undefined ? undefined : (cycle?.startedMs ?? i.startMs) + interval;
    const unanswered = pending !== undefined && handled !== pending;
    if (unanswered || (dueAt !== undefined && now >= dueAt)) {
      seq += 1;
      request = unanswered ? pending : undefined;
      if (unanswered) handled = pending;
      const trigger: CheckpointTrigger = unanswered ? requestTrigger(pending) : 'Periodic';
      cycle = step(startCheckpoint(name, seq, trigger, now));
    } else if (dueAt !== undefined) wakes.push(dueAt);
  }

  // Pre: rank 0 must see the request (level-triggered: asked again until its pod carries it).
  if (
    cycle !== undefined &&
    cycle.phase === 'Pre' &&
    i.rank0 !== undefined &&
    i.rank0.metadata.annotations?.[ANNOTATION.checkpointRequest] !== String(cycle.seq)
  ) {
    actions.push({ kind: 'annotatePod', name: i.rank0.metadata.name ?? '', annotations: { [ANNOTATION.checkpointRequest]: String(cycle.seq) } });
  }
  // A failed cycle's request is withdrawn, so that the training side does not save for it late.
  if (cycle?.phase === 'Failed' && i.rank0 !== undefined && i.rank0.metadata.annotations?.[ANNOTATION.checkpointRequest] === String(cycle.seq)) {
    actions.push({ kind: 'annotatePod', name: i.rank0.metadata.name ?? '', annotations: { [ANNOTATION.checkpointRequest]: null } });
  }

  // Retention by count and TTL; the restore point stays.
  const committed = committedSnapshots(i.snapshots);
  const newest = newestReady(committed);
  // The scheduler's view of the newest restore point (checkpoint-aware preemption evicts once it is at or after
  // its request, ADR 0093): written on every replica of the gang, level-triggered.
  if (newest !== undefined) {
    const ready = iso(newest.readyMs);
    for (const p of i.replicas ?? [])
      if (p.metadata.annotations?.[ANNOTATION.lastCheckpoint] !== ready)
        actions.push({ kind: 'annotatePod', name: p.metadata.name ?? '', annotations: { [ANNOTATION.lastCheckpoint]: ready } });
  }
  // A preemption's checkpoint that failed: the scheduler evicts now rather than at its grace (ADR 0093). Only
  // the replicas that were asked (a gang created after the cycle started is another one).
  if (cycle?.phase === 'Failed' && request !== undefined && requestTrigger(request) === 'Preemption') {
    const startedMs = cycle.startedMs;
    const asked = (p: PodObject): boolean => (parseTime(p.metadata.creationTimestamp) ?? Number.NEGATIVE_INFINITY) <= startedMs;
    for (const p of i.replicas ?? [])
      if (asked(p) && p.metadata.annotations?.[ANNOTATION.checkpointFailed] !== request)
        actions.push({ kind: 'annotatePod', name: p.metadata.name ?? '', annotations: { [ANNOTATION.checkpointFailed]: request } });
  }
  const ttlMs = policy.retention.ttlSeconds === undefined ? undefined : policy.retention.ttlSeconds * 1000;
  const doomed = new Set(retentionDeletes(committed, { keep: policy.retention.keep, ...(ttlMs === undefined ? {} : { ttlMs }) }, now));
  for (const n of doomed) {
    const s = byName.get(n);
    if (s !== undefined) actions.push({ kind: 'deleteVolumeSnapshot', name: n, uid: s.metadata.uid ?? '' });
  }
  if (ttlMs !== undefined) for (const s of committed) if (s.name !== newest?.name && !doomed.has(s.name)) wakes.push(s.readyMs + ttlMs + 1);

  // The claim of claimTemplate: created when missing, from the restore point when there is one.
  if (policy.volume.claimTemplate !== undefined && !i.claims.some((c) => c.metadata.name === checkpointClaimName(name))) {
    const claim = checkpointClaimObject(job, newest?.name);
    if (claim !== undefined) claimActions.push({ kind: 'createClaim', claim });
  }

  const status: CheckpointStatus = {
    ...(seq > 0 ? { seq } : {}),
    ...(cycle === undefined ? {} : { cycle: cycleToStatus(cycle, request) }),
    ...(newest === undefined ? {} : { lastReady: { snapshotName: newest.name, step: newest.step, readyTime: iso(newest.readyMs) } }),
    ...(prev.restoredFrom === undefined ? {} : { restoredFrom: prev.restoredFrom }),
    ...(handled === undefined ? {} : { handledRequest: handled }),
    ...(latency === undefined ? {} : { lastSnapshotLatencyMs: latency }),
  };
  const wakeAt = wakes.length === 0 ? undefined : Math.min(...wakes);
  return { status, ...(condition === undefined ? {} : { condition }), claimActions, actions, ...(wakeAt === undefined ? {} : { wakeAt }) };
}

/** Deleting the job: its claim goes; its snapshots go unless retention.policy is Retain. */
export function checkpointCleanup(job: TrainingJob, snaps: readonly VolumeSnapshotObject[], claims: readonly ClaimObject[]): Action[] {
  const policy = job.spec.checkpoint;
  const out: Action[] = [];
  for (const c of claims)
    if (alive(c) && c.metadata.name === checkpointClaimName(jobName(job))) out.push({ kind: 'deleteClaim', name: c.metadata.name, uid: c.metadata.uid ?? '' });
  if (policy === undefined || policy.retention.policy === 'Delete')
    for (const s of snaps) if (alive(s)) out.push({ kind: 'deleteVolumeSnapshot', name: s.metadata.name ?? '', uid: s.metadata.uid ?? '' });
  return out;
}
