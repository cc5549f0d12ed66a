/**
 * TrainingJob reconcile: observed state (the job, its pods, Service and PodGroups, the time) → the status to write
 * and the actions to take. Pure and level-triggered: every call recomputes from what is observed, so a crash or a
 * lost event costs nothing but a later call.
 *
 * The gang lives in generations ("attempts", status.attempt): every restart and every elastic resize deletes the
 * whole gang and creates a new one whose pods carry the new attempt, world size and rendezvous settings, so torchrun
 * never sees a half-old world. status.nextAttemptTime set means "attempt N is not created yet" (backoff); unset,
 * the pods of attempt N exist or are being created.
 *
 * Rules, in order:
 * 1. Deleting job: delete every owned object; remove the finalizer when none is left.
 * 2. No finalizer: add it first (garbage collection may not run, so the controller deletes what it owns).
 * 3. Succeeded/Failed: clean up per cleanPodPolicy; delete the job ttlSecondsAfterFinished after completion.
 * 4. activeDeadlineSeconds since startTime exceeded: Failed (DeadlineExceeded).
 * 5. suspend: delete the gang, phase Pending, condition Suspended; resuming creates a new attempt.
 * 6. Attempt 0: create attempt 1 with spec.replicas replicas.
 * 7. Waiting (nextAttemptTime): delete leftovers, wait until they are gone and the backoff has passed, then create.
 * 8. Running attempt:
 *    a. a replica Failed, was evicted, or a replica that ran was deleted → restart the gang (exit-code policy,
 *       exponential backoff, at most backoffLimit restarts, then Failed);
 *    b. every replica Succeeded → Succeeded;
 *    c. the size asked for changed (spec.replicas below the gang, or minReplicas above it) → resize at once;
 *    d. missing Service, PodGroup or (before the gang started) pods are created;
 *    e. elastic: when the scheduler placed at least minReplicas and declared the rest unschedulable (or left them
 *       unbound for settleMs) → resize to what fitted; a partly placed gang older than gangSchedulingTimeoutSeconds → released and recreated
 *       (not counted as a failure);
 *    f. elastic and running below spec.replicas for resizeCooldown → placeholder pods ask the scheduler for room;
 *       as soon as one or more are placed (and the rest declared unschedulable) → resize up.
 */
import type { Condition } from '../../api/schema/common.ts';
import { trainingJobGpusPerReplica, type TrainingJobPhase, type TrainingJobSpec, type TrainingJobStatus } from '../../api/schema/training-job.ts';
import { findCondition, setCondition, setIfPresent, type ConditionUpdate } from '../conditions.ts';
import { isOwnedBy, type PodObject } from '../kube-objects.ts';
import { nprocPerNode } from './env.ts';
import type { Action, ControllerConfig, Observed, ReconcileResult, TrainingJobObject } from './model.ts';
import { ANNOTATION, FINALIZER, LABEL, REASON } from '../../api/wire.ts';
import { probeGroupName, podGroupName, probePodName, replicaPodName, selectorString, serviceName } from './names.ts';
import { checkpointPathProblems } from '../../api/checkpoint-paths.ts';
import { checkpointCleanup, reconcileCheckpoints, restorePoint } from './checkpoints.ts';
import { headlessService, jobName, probePod, probePodGroup, replicaPod, replicaPodGroup, trainerIndex } from './pods.ts';

// ---------------------------------------------------------------------------------------------
// Small readers
// ---------------------------------------------------------------------------------------------

const iso = (ms: number): string => new Date(ms).toISOString();
const parseTime = (s: string | undefined): number | undefined => {
  if (s === undefined) return undefined;
  const t = Date.parse(s);
  return Number.isFinite(t) ? t : undefined;
};

const labelInt = (p: PodObject, key: string): number | undefined => {
  const v = p.metadata.labels?.[key];
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  return Number(v);
};
const roleOf = (p: PodObject): string | undefined => p.metadata.labels?.[LABEL.role];
const attemptOf = (p: PodObject): number | undefined => labelInt(p, LABEL.attempt);
const rankOf = (p: PodObject): number | undefined => labelInt(p, LABEL.rank);
const isTerminating = (p: { metadata: { deletionTimestamp?: string } }): boolean => p.metadata.deletionTimestamp !== undefined;
const isBound = (p: PodObject): boolean => (p.spec?.nodeName ?? '') !== '';
const phaseOf = (p: PodObject): string => p.status?.phase ?? 'Pending';
const isFinished = (p: PodObject): boolean => phaseOf(p) === 'Succeeded' || phaseOf(p) === 'Failed';
const hasRun = (p: PodObject): boolean => phaseOf(p) !== 'Pending';
const isReady = (p: PodObject): boolean => phaseOf(p) === 'Running' && (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

/** The scheduler has looked at the pod and found no room (and is not in the middle of binding it). */
export function isUnschedulable(p: PodObject): boolean {
  if (isBound(p) || p.metadata.annotations?.[ANNOTATION.assignedNode] !== undefined) return false;
  return (p.status?.conditions ?? []).some((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === REASON.unschedulable);
}

/**
 * Unplaced after the scheduler has had its chance: declared unschedulable, or still unbound (and not being bound)
 * `settleMs` after creation — the scheduler does not repeat an identical explanation on new pods within a minute.
 */
function givenUp(p: PodObject, now: number, settleMs: number): boolean {
  if (isUnschedulable(p)) return true;
  if (isBound(p) || p.metadata.annotations?.[ANNOTATION.assignedNode] !== undefined) return false;
  const created = parseTime(p.metadata.creationTimestamp);
  return created !== undefined && now - created >= settleMs;
}

/** When the pods that are neither placed nor declared unschedulable will count as given up. */
function settleAt(pods: readonly PodObject[], settleMs: number): number | undefined {
  return minTime(...pods.filter((p) => !isBound(p) && !isUnschedulable(p)).map((p) => (parseTime(p.metadata.creationTimestamp) ?? 0) + settleMs));
}

const schedulerMessage = (p: PodObject): string | undefined =>
  (p.status?.conditions ?? []).find((c) => c.type === 'PodScheduled' && c.status === 'False')?.message;

/** Exit code of the trainer container (or of any terminated container). */
export function exitCodeOf(p: PodObject): number | undefined {
  const statuses = p.status?.containerStatuses ?? [];
  const names = (p.spec?.containers ?? []).map((c) => c.name);
  const trainer = names[trainerIndex(p.spec?.containers ?? [])];
  const ordered = [...statuses.filter((s) => s.name === trainer), ...statuses.filter((s) => s.name !== trainer)];
  for (const s of ordered) {
    const code = s.state?.terminated?.exitCode;
    if (code !== undefined && code !== 0) return code;
  }
  return ordered.find((s) => s.state?.terminated !== undefined)?.state?.terminated?.exitCode;
}

/** Exponential backoff before the n-th gang restart (n ≥ 1): base, 2×base, 4×base, ... capped. */
export function backoffDelayMs(n: number, cfg: Pick<ControllerConfig, 'backoffBaseMs' | 'backoffMaxMs'>): number {
  const exp = Math.min(Math.max(n - 1, 0), 30);
  return Math.min(cfg.backoffBaseMs * 2 ** exp, cfg.backoffMaxMs);
}

/** Elastic bounds: the gang never runs below `min`; it aims for `target` (spec.replicas, the size asked for). */
export function sizes(spec: TrainingJobSpec): { min: number; target: number; elastic: boolean } {
  const target = spec.replicas;
  const min = Math.min(spec.minReplicas ?? target, target);
  return { min, target, elastic: min < target };
}

/**
 * Whether a failure with this exit code is retried (restartPolicy ExitCode). Listed codes decide; otherwise the
 * Kubeflow convention: 1-127 are the program's own errors (permanent), 128-255 are signals such as OOM kills
 * and preemption (retryable).
 */
export function isRetryableExitCode(code: number, spec: Pick<TrainingJobSpec, 'exitCodes'>): boolean {
  if (spec.exitCodes?.permanent?.includes(code) === true) return false;
  if (spec.exitCodes?.retryable?.includes(code) === true) return true;
  return code >= 128;
}

const fmtSeconds = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`);

// ---------------------------------------------------------------------------------------------
// Context
// ---------------------------------------------------------------------------------------------

interface Ctx {
  readonly o: Observed;
  readonly cfg: ControllerConfig;
  readonly job: TrainingJobObject;
  readonly spec: TrainingJobSpec;
  readonly name: string;
  readonly now: number;
  readonly nowIso: string;
  readonly st: TrainingJobStatus;
  readonly attempt: number;
  readonly pods: readonly PodObject[];
  readonly gpusPerReplica: number;
  readonly nproc: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Status = Mutable<TrainingJobStatus>;

function cond(ctx: Ctx, list: readonly Condition[] | undefined, u: ConditionUpdate): Condition[] {
  return setCondition(list, u, ctx.nowIso, ctx.job.metadata.generation);
}
function condIfPresent(ctx: Ctx, list: readonly Condition[] | undefined, u: ConditionUpdate): Condition[] {
  return setIfPresent(list, u, ctx.nowIso, ctx.job.metadata.generation);
}

const deletePods = (pods: readonly PodObject[]): Action[] =>
  pods.filter((p) => !isTerminating(p)).map((p) => ({ kind: 'deletePod', name: p.metadata.name ?? '', uid: p.metadata.uid ?? '' }) as const);

function minTime(...ts: (number | undefined)[]): number | undefined {
  const xs = ts.filter((t): t is number => t !== undefined);
  return xs.length === 0 ? undefined : Math.min(...xs);
}

function result(ctx: Ctx, status: Status | undefined, actions: Action[], wakeAt?: number): ReconcileResult {
  const requeueAfterMs = wakeAt === undefined ? undefined : Math.max(0, wakeAt - ctx.now);
  return { ...(status === undefined ? {} : { status }), actions, ...(requeueAfterMs === undefined ? {} : { requeueAfterMs }) };
}

/** Counts, GPUs and nodes of the given attempt's replicas. */
function summary(ctx: Ctx, current: readonly PodObject[], replicas: number): Status {
  const byRank = [...current].sort((a, b) => (rankOf(a) ?? 0) - (rankOf(b) ?? 0));
  const nodes: string[] = [];
  for (const p of byRank) {
    const n = p.spec?.nodeName;
    if (n !== undefined && n !== '' && !nodes.includes(n)) nodes.push(n);
  }
  const holding = current.filter((p) => isBound(p) && !isFinished(p)).length;
  return {
    replicas: current.length,
    readyReplicas: current.filter(isReady).length,
    succeededReplicas: current.filter((p) => phaseOf(p) === 'Succeeded').length,
    failedReplicas: current.filter((p) => phaseOf(p) === 'Failed').length,
    selector: selectorString(ctx.name),
    worldSize: replicas * ctx.nproc,
    gpus: holding * ctx.gpusPerReplica,
    nodes,
  };
}

function baseStatus(ctx: Ctx): Status {
  const s: Status = { ...ctx.st };
  if (ctx.job.metadata.generation !== undefined) s.observedGeneration = ctx.job.metadata.generation;
  if (ctx.spec.queue !== undefined) s.queue = ctx.spec.queue;
  return s;
}

// ---------------------------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------------------------

export function reconcileTrainingJob(o: Observed, cfg: ControllerConfig): ReconcileResult {
  const job = o.job;
  const uid = job.metadata.uid;
  const gpusPerReplica = trainingJobGpusPerReplica(job.spec);
  const ctx: Ctx = {
    o,
    cfg,
    job,
    spec: job.spec,
    name: jobName(job),
    now: o.nowMs,
    nowIso: iso(o.nowMs),
    st: job.status ?? {},
    attempt: job.status?.attempt ?? 0,
    pods: o.pods.filter((p) => isOwnedBy(p, uid)),
    gpusPerReplica,
    nproc: nprocPerNode(job.spec, gpusPerReplica),
  };

  if (job.metadata.deletionTimestamp !== undefined) return finalize(ctx);
  if (!(job.metadata.finalizers ?? []).includes(FINALIZER.trainingJobCleanup)) return { actions: [{ kind: 'addFinalizer' }] };

  const phase = ctx.st.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return finished(ctx, baseStatus(ctx), []);

  // A replica pod or the Service refused as invalid will be refused again: fail with the apiserver's words.
  const invalid = (o.lastErrors ?? []).find(
    (e) => e.status === 422 && (e.action === 'createService' || (e.action === 'createPod' && !(e.name ?? '').includes('.grow-'))),
  );
  if (invalid !== undefined) {
    return fail(
      ctx,
      baseStatus(ctx),
      invalid.action === 'createPod' ? 'InvalidPodTemplate' : 'InvalidService',
      `the apiserver refused the ${invalid.action === 'createPod' ? 'pod' : 'Service'} ${invalid.name ?? ''}: ${invalid.message}`,
    );
  }

  // 001 §3.3: every rank must see the one shared checkpoint directory; a spec where they would not is refused.
  const pathProblems = checkpointPathProblems(job.spec);
  if (pathProblems.length > 0) {
    return fail(ctx, baseStatus(ctx), 'CheckpointPathNotShared', pathProblems.map((p) => `${p.path}: ${p.message}`).join('; '));
  }

  const startMs = parseTime(ctx.st.startTime);
  const deadlineAt = ctx.spec.activeDeadlineSeconds === undefined || startMs === undefined ? undefined : startMs + ctx.spec.activeDeadlineSeconds * 1000;
  if (deadlineAt !== undefined && ctx.now >= deadlineAt) {
    return fail(
      ctx,
      baseStatus(ctx),
      'DeadlineExceeded',
      `the job ran longer than activeDeadlineSeconds (${ctx.spec.activeDeadlineSeconds}s since ${ctx.st.startTime})`,
    );
  }

  let r: ReconcileResult;
  if (ctx.spec.suspend) r = suspended(ctx);
  else if (ctx.attempt === 0)
    r = launch(ctx, baseStatus(ctx), 1, sizes(ctx.spec).target, [
      { kind: 'event', type: 'Normal', reason: 'Created', message: `creating the gang: ${sizes(ctx.spec).target} replicas` },
    ]);
  else if (ctx.st.nextAttemptTime !== undefined) r = waiting(ctx);
  else r = active(ctx);
  r = withCheckpoints(ctx, r);
  r = withErrorCondition(ctx, r);
  r = withTransition(ctx, r);
  // The deadline wakes us even when nothing else would (from the start this very pass may have recorded).
  const started = parseTime(r.status?.startTime);
  const wakeAt =
    deadlineAt ?? (ctx.spec.activeDeadlineSeconds === undefined || started === undefined ? undefined : started + ctx.spec.activeDeadlineSeconds * 1000);
  if (wakeAt !== undefined && r.status?.phase !== 'Failed' && r.status?.phase !== 'Succeeded') {
    const wake = wakeAt - ctx.now;
    return { ...r, requeueAfterMs: r.requeueAfterMs === undefined ? wake : Math.min(r.requeueAfterMs, wake) };
  }
  return r;
}

/**
 * Every phase change is an Event (the transitions that carry their own, such as Created or GangRestarted, keep
 * theirs), and startTime is when the gang first runs, not when it was queued: a job waiting in its queue has not
 * started, so activeDeadlineSeconds does not count the wait (as Kueue resets a suspended Job's startTime).
 */
function withTransition(ctx: Ctx, r: ReconcileResult): ReconcileResult {
  const st = r.status;
  if (st === undefined) return r;
  const status = st.phase === 'Running' && st.startTime === undefined ? { ...st, startTime: ctx.nowIso } : st;
  const from = ctx.st.phase;
  // The first status of a new job is announced by Created (or not at all while it is created suspended).
  if (st.phase === undefined || from === undefined || st.phase === from || r.actions.some((a) => a.kind === 'event'))
    return status === st ? r : { ...r, status };
  const warning = st.phase === 'Failed';
  return {
    ...r,
    status,
    actions: [...r.actions, { kind: 'event', type: warning ? 'Warning' : 'Normal', reason: st.phase, message: `phase ${from ?? 'none'} -> ${st.phase}` }],
  };
}

/**
 * spec.checkpoint (checkpoints.ts): the cycle in flight, its actions, retention and the newest Ready checkpoint in
 * status.checkpoint and status.lastCheckpointTime (what preemption reads). The claim comes before the pods.
 */
function withCheckpoints(ctx: Ctx, r: ReconcileResult): ReconcileResult {
  const policy = ctx.spec.checkpoint;
  const base = r.status;
  if (policy === undefined || base === undefined) return r;
  const rank0 = ctx.pods.find((p) => roleOf(p) === 'replica' && attemptOf(p) === (base.attempt ?? ctx.attempt) && rankOf(p) === 0 && !isTerminating(p));
  const out = reconcileCheckpoints({
    job: ctx.job,
    policy,
    previous: base.checkpoint,
    running: base.phase === 'Running' && base.nextAttemptTime === undefined,
    worldSize: base.worldSize ?? ctx.spec.replicas * ctx.nproc,
    rank0,
    replicas: ctx.pods.filter((p) => roleOf(p) === 'replica' && attemptOf(p) === (base.attempt ?? ctx.attempt) && !isTerminating(p)),
    snapshots: ctx.o.volumeSnapshots ?? [],
    claims: ctx.o.claims ?? [],
    startMs: parseTime(base.startTime) ?? ctx.now,
    nowMs: ctx.now,
  });
  const status: Status = { ...base, checkpoint: out.status };
  if (out.status.lastReady !== undefined) status.lastCheckpointTime = out.status.lastReady.readyTime;
  if (out.condition !== undefined) status.conditions = cond(ctx, base.conditions, out.condition);
  const wake = minTime(r.requeueAfterMs === undefined ? undefined : ctx.now + r.requeueAfterMs, out.wakeAt);
  return {
    status,
    actions: [...out.claimActions, ...r.actions, ...out.actions],
    ...(wake === undefined ? {} : { requeueAfterMs: Math.max(0, wake - ctx.now) }),
  };
}

/** Errors from the previous apply show as condition ReconcileError (quota, a missing PriorityClass, ...). */
function withErrorCondition(ctx: Ctx, r: ReconcileResult): ReconcileResult {
  const errors = ctx.o.lastErrors ?? [];
  const base = r.status;
  if (base === undefined) return r;
  const conditions =
    errors.length > 0
      ? cond(ctx, base.conditions, {
          type: 'ReconcileError',
          status: 'True',
          reason: errors[0]?.reason || 'ApiError',
          message: errors.map((e) => `${e.action} ${e.name ?? ''}: ${e.status} ${e.message}`).join('; '),
        })
      : condIfPresent(ctx, base.conditions, { type: 'ReconcileError', status: 'False', reason: 'Resolved', message: '' });
  return { ...r, status: { ...base, conditions } };
}

// ---------------------------------------------------------------------------------------------
// Deletion, completion, suspension
// ---------------------------------------------------------------------------------------------

function finalize(ctx: Ctx): ReconcileResult {
  const uid = ctx.job.metadata.uid;
  const services = ctx.o.services.filter((s) => isOwnedBy(s, uid));
  const groups = ctx.o.podGroups.filter((g) => isOwnedBy(g, uid));
  const actions: Action[] = [
    ...deletePods(ctx.pods),
    ...services.filter((s) => !isTerminating(s)).map((s) => ({ kind: 'deleteService', name: s.metadata.name ?? '', uid: s.metadata.uid ?? '' }) as const),
    ...groups.filter((g) => !isTerminating(g)).map((g) => ({ kind: 'deletePodGroup', name: g.metadata.name ?? '', uid: g.metadata.uid ?? '' }) as const),
  ];
  // The checkpoint claim and (retention.policy Delete) snapshots are deleted but not waited for: the snapshot
  // controller, not this one, removes their finalizers.
  actions.push(...checkpointCleanup(ctx.job, ctx.o.volumeSnapshots ?? [], ctx.o.claims ?? []));
  const left = ctx.pods.length + services.length + groups.length;
  if (left === 0 && (ctx.job.metadata.finalizers ?? []).includes(FINALIZER.trainingJobCleanup)) actions.push({ kind: 'removeFinalizer' });
  return { actions };
}

/** Cleanup of a finished job and its TTL. `status` is the terminal status (already written or about to be). */
function finished(ctx: Ctx, status: Status, actions: Action[]): ReconcileResult {
  const uid = ctx.job.metadata.uid;
  const policy = ctx.spec.cleanPodPolicy;
  const replicas = ctx.pods.filter((p) => roleOf(p) === 'replica');
  const probes = ctx.pods.filter((p) => roleOf(p) !== 'replica');
  const doomed = policy === 'All' ? replicas : policy === 'Running' ? replicas.filter((p) => !isFinished(p)) : [];
  actions.push(...deletePods([...probes, ...doomed]));
  for (const g of ctx.o.podGroups.filter((x) => isOwnedBy(x, uid) && !isTerminating(x)))
    actions.push({ kind: 'deletePodGroup', name: g.metadata.name ?? '', uid: g.metadata.uid ?? '' });
  if (policy !== 'None')
    for (const s of ctx.o.services.filter((x) => isOwnedBy(x, uid) && !isTerminating(x)))
      actions.push({ kind: 'deleteService', name: s.metadata.name ?? '', uid: s.metadata.uid ?? '' });
  const doomedNames = new Set(doomed.map((p) => p.metadata.name));
  const current = replicas.filter((p) => attemptOf(p) === ctx.attempt && !doomedNames.has(p.metadata.name));
  const next: Status = { ...status, ...summary(ctx, current, status.currentReplicas ?? ctx.spec.replicas) };
  const ttl = ctx.spec.ttlSecondsAfterFinished;
  const doneAt = parseTime(next.completionTime) ?? ctx.now;
  if (ttl === undefined) return result(ctx, next, actions);
  const due = doneAt + ttl * 1000;
  if (ctx.now >= due) return result(ctx, next, [...actions, { kind: 'deleteJob' }]);
  return result(ctx, next, actions, due);
}

function fail(ctx: Ctx, base: Status, reason: string, message: string): ReconcileResult {
  let conditions = cond(ctx, base.conditions, { type: 'Failed', status: 'True', reason, message });
  conditions = condIfPresent(ctx, conditions, { type: 'Running', status: 'False', reason, message: 'the job failed' });
  conditions = condIfPresent(ctx, conditions, { type: 'Restarting', status: 'False', reason, message: 'the job failed' });
  const status: Status = { ...base, phase: 'Failed', completionTime: ctx.nowIso, conditions };
  delete status.nextAttemptTime;
  return finished(ctx, status, [{ kind: 'event', type: 'Warning', reason, message }]);
}

function succeed(ctx: Ctx, base: Status): ReconcileResult {
  const message = `all ${base.currentReplicas ?? ctx.spec.replicas} replicas succeeded`;
  let conditions = cond(ctx, base.conditions, { type: 'Succeeded', status: 'True', reason: 'AllReplicasSucceeded', message });
  conditions = condIfPresent(ctx, conditions, { type: 'Running', status: 'False', reason: 'Succeeded', message });
  const status: Status = { ...base, phase: 'Succeeded', completionTime: ctx.nowIso, conditions };
  return finished(ctx, status, [{ kind: 'event', type: 'Normal', reason: 'Succeeded', message }]);
}

function suspended(ctx: Ctx): ReconcileResult {
  const base = baseStatus(ctx);
  const launched = ctx.attempt > 0 && ctx.st.nextAttemptTime === undefined;
  const actions: Action[] = deletePods(ctx.pods);
  const status: Status = { ...base, phase: 'Pending', ...summary(ctx, [], base.currentReplicas ?? ctx.spec.replicas) };
  status.conditions = cond(ctx, base.conditions, { type: 'Suspended', status: 'True', reason: 'Suspended', message: 'spec.suspend is true: no pods run' });
  status.conditions = condIfPresent(ctx, status.conditions, { type: 'Running', status: 'False', reason: 'Suspended', message: 'suspended' });
  if (launched) {
    // The next gang is a new attempt, created when the job is resumed.
    status.attempt = ctx.attempt + 1;
    status.nextAttemptTime = ctx.nowIso;
    actions.push({ kind: 'event', type: 'Normal', reason: 'Suspended', message: 'the gang was deleted (spec.suspend)' });
  }
  return result(ctx, status, actions);
}

// ---------------------------------------------------------------------------------------------
// Creating a gang
// ---------------------------------------------------------------------------------------------

function ensureService(ctx: Ctx): Action[] {
  const owned = ctx.o.services.find((s) => s.metadata.name === serviceName(ctx.name) && isOwnedBy(s, ctx.job.metadata.uid));
  return owned === undefined ? [{ kind: 'createService', service: headlessService(ctx.job) }] : [];
}

function ensurePodGroup(ctx: Ctx, minMember: number): Action[] {
  const want = replicaPodGroup(ctx.job, minMember);
  const have = ctx.o.podGroups.find((g) => g.metadata.name === podGroupName(ctx.name) && isOwnedBy(g, ctx.job.metadata.uid) && !isTerminating(g));
  if (have === undefined) return [{ kind: 'applyPodGroup', podGroup: want, exists: false }];
  return JSON.stringify(have.spec ?? {}) === JSON.stringify(want.spec) ? [] : [{ kind: 'applyPodGroup', podGroup: want, exists: true }];
}

/** minMember of the gang: all replicas, or minReplicas for an elastic job (the scheduler then places what fits). */
function gangMinimum(ctx: Ctx, replicas: number): number {
  const s = sizes(ctx.spec);
  return s.elastic ? Math.min(s.min, replicas) : replicas;
}

function launch(ctx: Ctx, base: Status, attempt: number, replicas: number, extra: Action[] = []): ReconcileResult {
  const status: Status = {
    ...base,
    attempt,
    currentReplicas: replicas,
    restartCount: base.restartCount ?? 0,
    phase: 'Scheduling',
    ...summary(ctx, [], replicas),
  };
  delete status.nextAttemptTime;
  // A new gang starts from the newest Ready checkpoint, and status names it.
  const restore = restorePoint(ctx.job, ctx.o.volumeSnapshots);
  if (ctx.spec.checkpoint !== undefined) {
    const { restoredFrom: _, ...rest } = status.checkpoint ?? {};
    status.checkpoint = restore === undefined ? rest : { ...rest, restoredFrom: { ...restore, attempt } };
  }
  status.conditions = cond(ctx, base.conditions, {
    type: 'Scheduled',
    status: 'False',
    reason: 'Creating',
    message: `creating ${replicas} replicas (attempt ${attempt})`,
  });
  status.conditions = condIfPresent(ctx, status.conditions, {
    type: 'Restarting',
    status: 'False',
    reason: 'GangCreated',
    message: `attempt ${attempt} created with ${replicas} replicas`,
  });
  status.conditions = condIfPresent(ctx, status.conditions, { type: 'Suspended', status: 'False', reason: 'Resumed', message: 'spec.suspend is false' });
  const actions: Action[] = [...ensureService(ctx), ...ensurePodGroup(ctx, gangMinimum(ctx, replicas))];
  const existing = new Set(ctx.pods.map((p) => p.metadata.name));
  for (let rank = 0; rank < replicas; rank++) {
    const pod = replicaPod(ctx.job, { rank, replicas, attempt, ...(restore === undefined ? {} : { restore }) }, ctx.cfg);
    if (!existing.has(pod.metadata.name)) actions.push({ kind: 'createPod', pod });
  }
  return result(ctx, status, [...actions, ...extra]);
}

/** Between two attempts: old pods go, the backoff runs out, then the next gang is created. */
function waiting(ctx: Ctx): ReconcileResult {
  const base = baseStatus(ctx);
  const replicas = ctx.st.currentReplicas ?? sizes(ctx.spec).target;
  const actions = deletePods(ctx.pods);
  const at = parseTime(ctx.st.nextAttemptTime) ?? ctx.now;
  // Pods with our names that are not ours (a deleted job of the same name still terminating) block creation.
  const ours = new Set(ctx.pods.map((p) => p.metadata.name));
  const blocked = ctx.o.pods.some((p) => !ours.has(p.metadata.name) && roleOf(p) === 'replica' && p.metadata.labels?.[LABEL.trainingJob] === ctx.name);
  if (ctx.pods.length > 0 || blocked || ctx.now < at) {
    const status: Status = { ...base, phase: 'Restarting', ...summary(ctx, [], replicas) };
    return result(ctx, status, actions, ctx.now < at ? at : undefined);
  }
  return launch(ctx, base, ctx.attempt, replicas, [
    { kind: 'event', type: 'Normal', reason: 'GangCreated', message: `attempt ${ctx.attempt}: creating ${replicas} replicas` },
  ]);
}

/** Tear the gang down and create attempt N+1 with `replicas` replicas after `delayMs`. */
function restartGang(
  ctx: Ctx,
  base: Status,
  o: { replicas: number; delayMs: number; reason: string; message: string; countsAsFailure: boolean; eventType: 'Normal' | 'Warning' },
): ReconcileResult {
  const status: Status = {
    ...base,
    phase: 'Restarting',
    attempt: ctx.attempt + 1,
    currentReplicas: o.replicas,
    lastRestartTime: ctx.nowIso,
    nextAttemptTime: iso(ctx.now + o.delayMs),
    ...summary(ctx, [], o.replicas),
  };
  if (o.countsAsFailure) status.restartCount = (ctx.st.restartCount ?? 0) + 1;
  status.conditions = cond(ctx, base.conditions, { type: 'Restarting', status: 'True', reason: o.reason, message: o.message });
  status.conditions = condIfPresent(ctx, status.conditions, { type: 'Running', status: 'False', reason: o.reason, message: 'the gang is restarting' });
  status.conditions = condIfPresent(ctx, status.conditions, { type: 'Scheduled', status: 'False', reason: o.reason, message: 'the gang is restarting' });
  const actions: Action[] = [...deletePods(ctx.pods), { kind: 'event', type: o.eventType, reason: o.reason, message: o.message }];
  return result(ctx, status, actions, ctx.now + o.delayMs);
}

// ---------------------------------------------------------------------------------------------
// A created gang
// ---------------------------------------------------------------------------------------------

interface Failure {
  readonly pod: string;
  readonly kind: 'Failed' | 'Evicted' | 'Deleted';
  readonly exitCode?: number;
  readonly detail?: string;
}

function describeFailure(f: Failure): string {
  const what =
    f.kind === 'Evicted'
      ? 'was evicted'
      : f.kind === 'Deleted'
        ? 'was deleted while running'
        : f.exitCode === undefined
          ? 'failed'
          : `exited with code ${f.exitCode}`;
  return `replica ${f.pod} ${what}${f.detail === undefined || f.detail === '' ? '' : ` (${f.detail})`}`;
}

function failures(ctx: Ctx, current: readonly PodObject[], replicas: number): Failure[] {
  const out: Failure[] = [];
  const sorted = [...current].sort((a, b) => (rankOf(a) ?? 0) - (rankOf(b) ?? 0));
  for (const p of sorted) {
    const name = p.metadata.name ?? '';
    if (phaseOf(p) === 'Failed') {
      const evicted = p.status?.reason === 'Evicted';
      const code = exitCodeOf(p);
      out.push({
        pod: name,
        kind: evicted ? 'Evicted' : 'Failed',
        ...(code === undefined || evicted ? {} : { exitCode: code }),
        ...(p.status?.message === undefined ? {} : { detail: p.status.message }),
      });
    } else if (isTerminating(p) && phaseOf(p) === 'Running') {
      out.push({ pod: name, kind: 'Deleted' });
    }
  }
  // A replica that vanished once the gang has run (preempted, node drained) leaves the others waiting in NCCL. A gang
  // SITS evicted on purpose (ANNOTATION.gangEvicted names this attempt) may vanish whole between two reconciles.
  if (current.some(hasRun) || (current.length === 0 && plannedEviction(ctx) !== undefined)) {
    const ranks = new Set(current.map(rankOf));
    for (let r = 0; r < replicas; r++) if (!ranks.has(r)) out.push({ pod: replicaPodName(ctx.name, r), kind: 'Deleted' });
  }
  return out;
}

/** SITS's own eviction of this attempt's gang (ANNOTATION.gangEvicted), when the annotation names it. */
function plannedEviction(ctx: Ctx): { readonly reason: string; readonly message: string } | undefined {
  const raw = ctx.job.metadata.annotations?.[ANNOTATION.gangEvicted];
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as { attempt?: unknown; reason?: unknown; message?: unknown };
    return v.attempt === ctx.attempt
      ? { reason: typeof v.reason === 'string' ? v.reason : 'Evicted', message: typeof v.message === 'string' ? v.message : '' }
      : undefined;
  } catch {
    return undefined;
  }
}

function onFailure(ctx: Ctx, base: Status, fs: readonly Failure[]): ReconcileResult {
  const first = fs[0] as Failure;
  const what = describeFailure(first) + (fs.length > 1 ? ` and ${fs.length - 1} more` : '');
  // A move SITS made on purpose (off a quarantined GPU) is no failure of the job: at once, not counted, whatever the policy.
  const planned = fs.every((f) => f.kind === 'Deleted') ? plannedEviction(ctx) : undefined;
  if (planned !== undefined) {
    const replicas = ctx.st.currentReplicas ?? sizes(ctx.spec).target;
    return restartGang(ctx, base, {
      replicas,
      delayMs: 0,
      reason: 'GangMoved',
      message: `SITS evicted the gang to move it (${planned.reason}: ${planned.message}); restarting it whole, not counted against backoffLimit`,
      countsAsFailure: false,
      eventType: 'Normal',
    });
  }
  const reason = first.kind === 'Evicted' ? 'ReplicaEvicted' : first.kind === 'Deleted' ? 'ReplicaDeleted' : 'ReplicaFailed';
  const policy = ctx.spec.restartPolicy;
  if (policy === 'Never') return fail(ctx, base, reason, `${what}; restartPolicy is Never`);
  if (policy === 'ExitCode' && first.kind === 'Failed' && first.exitCode !== undefined && !isRetryableExitCode(first.exitCode, ctx.spec)) {
    return fail(ctx, base, 'PermanentExitCode', `${what}: exit code ${first.exitCode} is permanent (restartPolicy ExitCode)`);
  }
  const done = ctx.st.restartCount ?? 0;
  const limit = ctx.spec.backoffLimit;
  if (done >= limit) return fail(ctx, base, 'BackoffLimitExceeded', `${what}; the gang was already restarted ${done} time(s), backoffLimit is ${limit}`);
  const n = done + 1;
  const delayMs = backoffDelayMs(n, ctx.cfg);
  const replicas = ctx.st.currentReplicas ?? sizes(ctx.spec).target;
  return restartGang(ctx, base, {
    replicas,
    delayMs,
    reason,
    message: `${what}; restarting the whole gang in ${fmtSeconds(delayMs)} (restart ${n} of backoffLimit ${limit})`,
    countsAsFailure: true,
    eventType: 'Warning',
  });
}

/** This attempt's gang as observed: its size now and its bounds, its replicas and probes. */
interface Gang {
  readonly base: Status;
  /** Replicas of this attempt. */
  readonly k: number;
  readonly min: number;
  readonly target: number;
  readonly elastic: boolean;
  readonly current: readonly PodObject[];
  readonly probes: readonly PodObject[];
}

function active(ctx: Ctx): ReconcileResult {
  const base = baseStatus(ctx);
  const { min, target, elastic } = sizes(ctx.spec);
  const k = ctx.st.currentReplicas ?? target;
  const current = ctx.pods.filter((p) => roleOf(p) === 'replica' && attemptOf(p) === ctx.attempt);
  const probes = ctx.pods.filter((p) => roleOf(p) === 'probe' && attemptOf(p) === ctx.attempt);
  const stale = ctx.pods.filter((p) => attemptOf(p) !== ctx.attempt || (roleOf(p) !== 'replica' && roleOf(p) !== 'probe'));
  const g: Gang = { base, k, min, target, elastic, current, probes };

  const fs = failures(ctx, current, k);
  if (fs.length > 0) return onFailure(ctx, base, fs);
  if (current.length === k && current.every((p) => phaseOf(p) === 'Succeeded')) return succeed(ctx, { ...base, ...summary(ctx, current, k) });
  const resized = resizeIntoBounds(ctx, g);
  if (resized !== undefined) return resized;

  const actions: Action[] = [...deletePods(stale), ...ensureService(ctx), ...ensurePodGroup(ctx, gangMinimum(ctx, k)), ...missingReplicas(ctx, g)];
  const status: Status = { ...base, ...summary(ctx, current, k) };
  const unbound = current.filter((p) => !isBound(p));
  let wakeAt: number | undefined;
  if (current.length === k && unbound.length === 0) allBound(ctx, g, status);
  else {
    const placing = partlyBound(ctx, g, status, unbound);
    if ('restart' in placing) return placing.restart;
    wakeAt = placing.wakeAt;
  }
  return probeForGrowth(ctx, g, status, actions, wakeAt);
}

/** spec.replicas went below the gang's size, or the gang is below its minimum: restart it at the target. */
function resizeIntoBounds(ctx: Ctx, g: Gang): ReconcileResult | undefined {
  const { k, min, target } = g;
  if (k > target) {
    return restartGang(ctx, g.base, {
      replicas: target,
      delayMs: 0,
      reason: 'ScaledDown',
      message: `spec.replicas is ${target}: restarting the gang with ${target} replicas (was ${k})`,
      countsAsFailure: false,
      eventType: 'Normal',
    });
  }
  if (k < min) {
    return restartGang(ctx, g.base, {
      replicas: target,
      delayMs: 0,
      reason: 'ScaledUp',
      message: `the gang must have at least ${min} replicas: restarting it with ${target} (was ${k})`,
      countsAsFailure: false,
      eventType: 'Normal',
    });
  }
  return undefined;
}

/** Until a replica has run, the missing ranks are created (restoring the checkpoint this attempt restores from). */
function missingReplicas(ctx: Ctx, g: Gang): Action[] {
  const actions: Action[] = [];
  if (g.current.some(hasRun)) return actions;
  const have = new Set(g.current.map(rankOf));
  const from = ctx.st.checkpoint?.restoredFrom;
  const restore = from !== undefined && from.attempt === ctx.attempt ? { snapshotName: from.snapshotName, step: from.step } : undefined;
  for (let rank = 0; rank < g.k; rank++)
    if (!have.has(rank))
      actions.push({
        kind: 'createPod',
        pod: replicaPod(ctx.job, { rank, replicas: g.k, attempt: ctx.attempt, ...(restore === undefined ? {} : { restore }) }, ctx.cfg),
      });
  return actions;
}

/** Every replica is bound: Scheduled, and Running once all run. */
function allBound(ctx: Ctx, g: Gang, status: Status): void {
  const { k, current } = g;
  const running = current.every((p) => phaseOf(p) === 'Running' || phaseOf(p) === 'Succeeded');
  status.phase = running ? 'Running' : 'Scheduling';
  const nodes = status.nodes ?? [];
  status.conditions = cond(ctx, g.base.conditions, {
    type: 'Scheduled',
    status: 'True',
    reason: 'AllReplicasBound',
    message: `${k} replicas bound to ${nodes.length} node(s): ${nodes.join(', ')}`,
  });
  status.conditions = running
    ? cond(ctx, status.conditions, {
        type: 'Running',
        status: 'True',
        reason: 'AllReplicasRunning',
        message: `${k} replicas running, WORLD_SIZE ${k * ctx.nproc}`,
      })
    : condIfPresent(ctx, status.conditions, {
        type: 'Running',
        status: 'False',
        reason: 'ContainersStarting',
        message: 'waiting for every replica to start',
      });
}

/**
 * Some replicas are not bound yet: an elastic gang whose rest the scheduler gave up on restarts with the ones that
 * fit, a partly placed gang past its scheduling timeout is released; otherwise it waits (until `wakeAt`).
 */
function partlyBound(
  ctx: Ctx,
  g: Gang,
  status: Status,
  unbound: readonly PodObject[],
): { readonly restart: ReconcileResult } | { readonly wakeAt: number | undefined } {
  const { k, min, elastic, current } = g;
  const bound = current.filter((p) => isBound(p) && !isTerminating(p));
  let wakeAt: number | undefined;
  const unsched = unbound.filter(isUnschedulable);
  const why = unbound.map(schedulerMessage).find((m) => m !== undefined && m !== '');
  // The scheduler's forward run of the queue: the latest expected start over the replicas still waiting.
  const expected = unbound.map((p) => parseTime(p.metadata.annotations?.[ANNOTATION.expectedStart])).filter((t): t is number => t !== undefined);
  if (expected.length === unbound.length && expected.length > 0) status.estimatedStartTime = new Date(Math.max(...expected)).toISOString();
  const settled = current.length === k && unbound.length > 0 && unbound.every((p) => givenUp(p, ctx.now, ctx.cfg.settleMs));
  if (elastic && bound.length >= min && !settled) wakeAt = settleAt(unbound, ctx.cfg.settleMs);
  if (elastic && settled && bound.length >= min) {
    return {
      restart: restartGang(ctx, g.base, {
        replicas: bound.length,
        delayMs: 0,
        reason: 'FitFewer',
        message: `only ${bound.length} of ${k} replicas fit now (${why ?? 'unschedulable'}); restarting the gang with ${bound.length} (minReplicas ${min})`,
        countsAsFailure: false,
        eventType: 'Normal',
      }),
    };
  }
  if (bound.length > 0) {
    // A partly placed gang must not hold GPUs forever.
    const createdAt = minTime(...current.map((p) => parseTime(p.metadata.creationTimestamp))) ?? ctx.now;
    const due = createdAt + ctx.spec.gangSchedulingTimeoutSeconds * 1000;
    if (ctx.now >= due) {
      const delayMs = backoffDelayMs((ctx.st.restartCount ?? 0) + 1, ctx.cfg);
      return {
        restart: restartGang(ctx, g.base, {
          replicas: k,
          delayMs,
          reason: 'GangSchedulingTimeout',
          message: `${bound.length} of ${k} replicas were placed but the rest stayed unschedulable for ${ctx.spec.gangSchedulingTimeoutSeconds}s (${why ?? 'no explanation yet'}); releasing the gang and trying again in ${fmtSeconds(delayMs)}`,
          countsAsFailure: false,
          eventType: 'Warning',
        }),
      };
    }
    wakeAt = minTime(wakeAt, due);
  }
  status.phase = bound.length === 0 && unsched.length > 0 ? 'Pending' : 'Scheduling';
  status.conditions = cond(ctx, g.base.conditions, {
    type: 'Scheduled',
    status: 'False',
    reason: unsched.length > 0 ? 'Unschedulable' : 'WaitingForScheduler',
    message: unsched.length > 0 && why !== undefined ? why : `${bound.length} of ${k} replicas bound; waiting for the scheduler`,
  });
  status.conditions = condIfPresent(ctx, status.conditions, {
    type: 'Running',
    status: 'False',
    reason: unsched.length > 0 ? 'Unschedulable' : 'Scheduling',
    message: 'waiting for every replica to be placed',
  });
  return { wakeAt };
}

/** Elastic growth: probes ask the scheduler whether more replicas fit; otherwise none should exist. */
function probeForGrowth(ctx: Ctx, g: Gang, status: Status, actions: Action[], wakeAt: number | undefined): ReconcileResult {
  const { k, target, current, probes } = g;
  const growing = g.elastic && status.phase === 'Running' && k < target;
  if (!growing) {
    actions.push(...deletePods(probes));
    const pg = ctx.o.podGroups.find(
      (group) => group.metadata.name === probeGroupName(ctx.name) && isOwnedBy(group, ctx.job.metadata.uid) && !isTerminating(group),
    );
    if (pg !== undefined) actions.push({ kind: 'deletePodGroup', name: pg.metadata.name ?? '', uid: pg.metadata.uid ?? '' });
    return result(ctx, status, actions, wakeAt);
  }
  const runningSince = Math.max(...current.map((p) => parseTime(p.status?.startTime) ?? parseTime(p.metadata.creationTimestamp) ?? ctx.now));
  const growAt = runningSince + ctx.cfg.resizeCooldownMs;
  if (ctx.now < growAt) {
    actions.push(...deletePods(probes));
    return result(ctx, status, actions, minTime(wakeAt, growAt));
  }
  const want = target - k;
  const wanted = new Set(Array.from({ length: want }, (_, i) => probePodName(ctx.name, i)));
  const keep = probes.filter((p) => wanted.has(p.metadata.name ?? ''));
  actions.push(...deletePods(probes.filter((p) => !wanted.has(p.metadata.name ?? ''))));
  const pg = ctx.o.podGroups.find(
    (group) => group.metadata.name === probeGroupName(ctx.name) && isOwnedBy(group, ctx.job.metadata.uid) && !isTerminating(group),
  );
  if (pg === undefined) actions.push({ kind: 'applyPodGroup', podGroup: probePodGroup(ctx.job), exists: false });
  const have = new Set(keep.map((p) => p.metadata.name));
  for (let i = 0; i < want; i++) if (!have.has(probePodName(ctx.name, i))) actions.push({ kind: 'createPod', pod: probePod(ctx.job, i, ctx.attempt, ctx.cfg) });
  const placed = keep.filter((p) => isBound(p) && !isTerminating(p));
  const settled = keep.length === want && keep.every((p) => isBound(p) || givenUp(p, ctx.now, ctx.cfg.settleMs));
  if (!settled) wakeAt = minTime(wakeAt, settleAt(keep, ctx.cfg.settleMs));
  if (settled && placed.length > 0) {
    const next = k + placed.length;
    return restartGang(ctx, g.base, {
      replicas: next,
      delayMs: 0,
      reason: 'CapacityFreed',
      message: `room for ${placed.length} more replica(s): restarting the gang with ${next} of ${target} (was ${k})`,
      countsAsFailure: false,
      eventType: 'Normal',
    });
  }
  status.conditions = cond(ctx, status.conditions, {
    type: 'Running',
    status: 'True',
    reason: 'RunningBelowTarget',
    message: `${k} of ${target} replicas running, WORLD_SIZE ${k * ctx.nproc}; waiting for room for more (${placed.length} of ${want} placeholders placed)`,
  });
  return result(ctx, status, actions, wakeAt);
}

export type { TrainingJobPhase };
export { findCondition };
