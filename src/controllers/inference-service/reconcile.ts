/**
 * The InferenceService reconcile: from the service, the pods and Service it owns and the time, to the desired
 * status and the actions. Replicas are pods the SITS scheduler places; a template change rolls them with a
 * Deployment's RollingUpdate semantics (maxSurge above spec.replicas, never fewer ready than replicas -
 * maxUnavailable); a spec the runtime or the cluster cannot honour changes nothing but the conditions, so the
 * replicas already serving keep serving. Pure: time comes in as `nowMs`.
 */
import type { Condition } from '../../api/schema/common.ts';
import type { InferenceServiceStatus, ReplicaStatus } from '../../api/schema/inference-service.ts';
import { ANNOTATION, LABEL } from '../../api/wire.ts';
import type { SpecIssue } from '../../serving/runtime.ts';
import { findCondition, setCondition, setIfPresent, type ConditionUpdate } from '../conditions.ts';
import { isOwnedBy, type PodObject, type ServiceObject } from '../kube-objects.ts';
import type { Action, Observed, ReconcileResult } from './model.ts';
import { selectorString, WORKER_ROLE } from './names.ts';
import { planScaledObject, type KedaAllowList } from './keda.ts';
import { isvcName, renderService, type BuildConfig, type Rendered } from './pods.ts';

export const CONDITION = {
  ready: 'Ready',
  progressing: 'Progressing',
  /** The spec cannot be served (unknown runtime, TP larger than any NVLink island, a runtime-rejected field). */
  invalidSpec: 'InvalidSpec',
  /** A replica stays unready past spec.progressDeadlineSeconds, or cannot be created. */
  replicaFailure: 'ReplicaFailure',
  /** A LoRA adapter of the spec failed to load on a replica (named with the adapter); that replica is held out of ready. */
  adapterFailure: 'AdapterFailure',
} as const;

const DEFAULT_MAX_SURGE = 1;
const DEFAULT_MAX_UNAVAILABLE = 0;

const isTerminating = (p: PodObject): boolean => p.metadata.deletionTimestamp !== undefined;
const isFinished = (p: PodObject): boolean => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
const podReady = (p: PodObject): boolean => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
/** The replica a pod belongs to: its gang (a multi-pod replica's leader name), else the pod itself. */
const groupOf = (p: PodObject): string => p.metadata.labels?.[LABEL.podGroup] ?? p.metadata.name ?? '';
const isWorker = (p: PodObject): boolean => p.metadata.labels?.[LABEL.role] === WORKER_ROLE;
/** Pods of the replica `leader` stands for: its gang's minMember when it is a multi-pod replica, else 1. */
const groupSize = (leader: PodObject): number =>
  leader.metadata.labels?.[LABEL.workerIndex] === undefined ? 1 : Math.max(1, Number(leader.metadata.annotations?.[ANNOTATION.minMember] ?? 1) || 1);
const slotOfName = (name: string): number => Number(/-(\d+)$/.exec(name)?.[1] ?? -1);
const slotOf = (p: PodObject): number => slotOfName(groupOf(p));
const restarted = (p: PodObject): boolean => p.status?.containerStatuses?.some((c) => (c.restartCount ?? 0) > 0) === true;
const ms = (iso: string | undefined): number | undefined => {
  const t = iso === undefined ? NaN : Date.parse(iso);
  return Number.isFinite(t) ? t : undefined;
};

/** Which pod goes first when some must: unready before ready, unbound before bound, the highest slot first. */
function deletionOrder(ready: (p: PodObject) => boolean): (a: PodObject, b: PodObject) => number {
  return (a, b) => {
    const r = Number(ready(a)) - Number(ready(b));
    if (r !== 0) return r;
    const n = Number((a.spec?.nodeName ?? '') !== '') - Number((b.spec?.nodeName ?? '') !== '');
    if (n !== 0) return n;
    return slotOf(b) - slotOf(a) || ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? 1 : -1);
  };
}

/** "spec.x: why; spec.y: why" — every issue, each naming its field. */
export const describeIssues = (issues: readonly SpecIssue[]): string => issues.map((i) => `${i.field}: ${i.message}`).join('; ');

function issueReason(issues: readonly SpecIssue[]): string {
  const first = issues[0];
  if (first?.field === 'spec.runtime') return 'UnknownRuntime';
  if (first?.field === 'spec.tensorParallelSize') return 'TensorParallelTooLarge';
  if (first?.field === 'spec.gpu.allowedModels') return 'GpuModelRequired';
  return 'InvalidSpec';
}

export interface RollingPlan {
  readonly create: number;
  /** Pods to delete, in order. */
  readonly remove: readonly PodObject[];
}

/**
 * One step of the rolling update (a Deployment's RollingUpdate on pods): create up to `replicas + maxSurge`
 * pods in all; delete surplus current pods, then old unready pods (they serve nothing), then old ready pods only
 * while at least `replicas - maxUnavailable` stay ready. Terminating pods count for nothing.
 */
export function planRollout(p: {
  readonly replicas: number;
  readonly maxSurge: number;
  readonly maxUnavailable: number;
  readonly current: readonly PodObject[];
  readonly old: readonly PodObject[];
  readonly ready: (p: PodObject) => boolean;
}): RollingPlan {
  const { replicas, ready } = p;
  const minReady = Math.max(0, replicas - p.maxUnavailable);
  const order = deletionOrder(ready);
  const remove: PodObject[] = [];
  const surplus = [...p.current].sort(order).slice(0, Math.max(0, p.current.length - replicas));
  remove.push(...surplus);
  let readyLeft = [...p.current, ...p.old].filter(ready).length - surplus.filter(ready).length;
  for (const pod of [...p.old].sort(order)) {
    if (!ready(pod)) remove.push(pod);
    else if (readyLeft - 1 >= minReady) {
      remove.push(pod);
      readyLeft--;
    }
  }
  const room = replicas + p.maxSurge - (p.current.length + p.old.length);
  const create = Math.max(0, Math.min(replicas - p.current.length, room));
  return { create, remove };
}

function serviceDiff(have: ServiceObject, want: ServiceObject): Record<string, unknown> | undefined {
  const sameSelector = JSON.stringify(have.spec?.selector ?? {}) === JSON.stringify(want.spec?.selector ?? {});
  type Ports = NonNullable<ServiceObject['spec']>['ports'];
  const norm = (ports: Ports): string =>
    JSON.stringify((ports ?? []).map((x) => ({ name: x.name, port: x.port, targetPort: x.targetPort, protocol: x.protocol ?? 'TCP' })));
  const samePorts = norm(have.spec?.ports) === norm(want.spec?.ports);
  if (sameSelector && samePorts) return undefined;
  return { spec: { selector: want.spec?.selector, ports: want.spec?.ports } };
}

export function reconcileInferenceService(o: Observed, cfg: BuildConfig & { readonly kedaAllow?: KedaAllowList }): ReconcileResult {
  const s = o.isvc;
  if (s.metadata.deletionTimestamp !== undefined) return { actions: [] }; // owner references let the GC clean up
  const name = isvcName(s);
  const nowIso = new Date(o.nowMs).toISOString();
  const gen = s.metadata.generation;
  const prev = s.status ?? {};
  const owned = o.pods.filter((p) => isOwnedBy(p, s.metadata.uid));
  const services = o.services.filter((x) => isOwnedBy(x, s.metadata.uid));
  // A multi-pod replica (leader + workers, ADR 0134) is one unit: it counts, rolls and is deleted through its
  // leader. A group missing a member, or with a member that finished or restarted, is deleted whole and made
  // again (LWS's RecreateGroupOnPodRestart): the engine's ranks cannot rejoin a running group one by one.
  const { members, broken } = replicaGroups(owned);
  const brokenGroups = new Set(broken.map((b) => b.group));
  const inGroup = (p: PodObject): boolean => members.has(groupOf(p));
  const live = owned.filter((p) => !isTerminating(p) && !isWorker(p) && !(inGroup(p) ? brokenGroups.has(groupOf(p)) || isTerminating(p) : isFinished(p)));
  const finished = owned.filter((p) => !isTerminating(p) && !inGroup(p) && isFinished(p));
  const workersOf = (leader: PodObject): PodObject[] =>
    inGroup(leader) ? (members.get(groupOf(leader)) ?? []).filter((p) => isWorker(p) && !isTerminating(p)) : [];
  // A multi-pod replica serves once its leader is ready and every worker runs.
  const ready = (p: PodObject): boolean => podReady(p) && o.engine.replica(p)?.serving !== false && workersOf(p).every((w) => w.status?.phase === 'Running');
  /** Deleting a replica deletes every pod of it. */
  const deleteReplica = (p: PodObject): Action[] =>
    [p, ...workersOf(p)].map((x) => ({ kind: 'deletePod', name: x.metadata.name ?? '', uid: x.metadata.uid ?? '' }));
  const replicas = s.spec.replicas;
  const maxUnavailable = s.spec.rollout?.maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE;
  const maxSurge = s.spec.rollout?.maxSurge ?? DEFAULT_MAX_SURGE;
  const minReady = Math.max(0, replicas - maxUnavailable);
  const readyCount = live.filter(ready).length;

  const rendered = renderService(s, cfg, o.facts);
  const hash = rendered.ok ? rendered.value.hash : undefined;
  const current = hash === undefined ? [] : live.filter((p) => p.metadata.labels?.[LABEL.templateHash] === hash);
  const old = hash === undefined ? live : live.filter((p) => p.metadata.labels?.[LABEL.templateHash] !== hash);

  // Replicas unready past the deadline, and when the next one reaches it.
  const { stuck, nextDeadline } = stuckReplicas(live, ready, o.nowMs, s.spec.progressDeadlineSeconds);

  const actions: Action[] = [];
  const cond: ConditionUpdate[] = [];
  const clearIfPresent: ConditionUpdate[] = [];
  let requeueAfterMs = nextDeadline === undefined ? undefined : nextDeadline - o.nowMs;

  if (!rendered.ok) {
    const message = describeIssues(rendered.issues);
    cond.push({
      type: CONDITION.invalidSpec,
      status: 'True',
      reason: issueReason(rendered.issues),
      message: `${message}; nothing was changed, the existing replicas keep serving`,
    });
    cond.push({ type: CONDITION.progressing, status: 'False', reason: 'InvalidSpec', message });
    if (
      findCondition(prev.conditions, CONDITION.invalidSpec)?.status !== 'True' ||
      findCondition(prev.conditions, CONDITION.invalidSpec)?.message.startsWith(message) !== true
    ) {
      actions.push({ kind: 'event', type: 'Warning', reason: issueReason(rendered.issues), message });
    }
    // The cluster may grow an island large enough; the spec itself changes with a new generation (a watch event).
    if (rendered.issues.some((i) => i.field === 'spec.tensorParallelSize')) requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, 60_000);
  } else {
    const r: Rendered = rendered.value;
    clearIfPresent.push({ type: CONDITION.invalidSpec, status: 'False', reason: 'SpecValid', message: 'the spec fits the runtime and the cluster' });
    actions.push(...serviceActions(r, services));
    // A finished pod (evicted, or its engine exited) is replaced: replicas run for ever.
    for (const p of finished) actions.push({ kind: 'deletePod', name: p.metadata.name ?? '', uid: p.metadata.uid ?? '' });
    for (const b of broken) {
      actions.push({
        kind: 'event',
        type: 'Warning',
        reason: 'RecreatingReplica',
        message: `replica ${b.group}: ${b.why}; deleting its ${b.pods.length} remaining pods to create the whole group again`,
      });
      for (const p of b.pods) actions.push({ kind: 'deletePod', name: p.metadata.name ?? '', uid: p.metadata.uid ?? '' });
    }
    const plan = planRollout({ replicas, maxSurge, maxUnavailable, current, old, ready });
    const used = new Set(owned.filter((p) => p.metadata.labels?.[LABEL.templateHash] === r.hash).map(slotOf));
    for (let slot = 0, made = 0; made < plan.create; slot++) {
      if (used.has(slot)) continue;
      for (const pod of r.group(slot)) actions.push({ kind: 'createPod', pod });
      made++;
    }
    for (const p of plan.remove) actions.push(...deleteReplica(p));

    // mode keda: the ScaledObject follows the spec (and an invalid spec, like everything else, leaves it alone).
    const keda = planScaledObject({
      isvc: s,
      scaledObjects: o.scaledObjects ?? [],
      thresholds: o.thresholds,
      lastErrors: o.lastErrors,
      hasThresholdPort: o.hasThresholdPort === true,
      ...(cfg.kedaAllow === undefined ? {} : { allow: cfg.kedaAllow }),
    });
    actions.push(...keda.actions);
    if (keda.condition !== undefined) cond.push(keda.condition);
    if (keda.clearIfPresent !== undefined) clearIfPresent.push(keda.clearIfPresent);
    if (keda.requeueAfterMs !== undefined) requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, keda.requeueAfterMs);

    const converged = current.length === replicas && old.length === 0 && current.every(ready) && finished.length === 0 && broken.length === 0;
    if (converged)
      cond.push({ type: CONDITION.progressing, status: 'False', reason: 'Complete', message: `${replicas} replicas on the current template, all ready` });
    else if (stuck.length > 0) cond.push({ type: CONDITION.progressing, status: 'False', reason: 'ProgressDeadlineExceeded', message: stuck.join('; ') });
    else {
      const reason = old.length > 0 ? 'RollingUpdate' : current.length < replicas ? 'ScalingUp' : current.length > replicas ? 'ScalingDown' : 'WaitingForReady';
      cond.push({
        type: CONDITION.progressing,
        status: 'True',
        reason,
        message: `${current.length} of ${replicas} replicas on the current template (${current.filter(ready).length} ready), ${old.length} on older ones`,
      });
    }
  }

  const createErrors = (o.lastErrors ?? []).filter((e) => e.action === 'createPod' || e.action === 'createService' || e.action === 'patchService');
  if (createErrors.length > 0) {
    const message = createErrors.map((e) => `${e.action} ${e.name ?? ''}: ${e.status} ${e.message}`).join('; ');
    cond.push({
      type: CONDITION.replicaFailure,
      status: 'True',
      reason: createErrors.some((e) => e.action === 'createPod') ? 'FailedCreate' : 'ServiceFailed',
      message,
    });
  } else if (stuck.length > 0) {
    const message = `${stuck.join('; ')}; the other replicas keep serving`;
    cond.push({ type: CONDITION.replicaFailure, status: 'True', reason: 'ReplicaNotReady', message });
    if (findCondition(prev.conditions, CONDITION.replicaFailure)?.reason !== 'ReplicaNotReady')
      actions.push({ kind: 'event', type: 'Warning', reason: 'ReplicaNotReady', message });
  } else clearIfPresent.push({ type: CONDITION.replicaFailure, status: 'False', reason: 'ReplicasHealthy', message: 'no replica is past its deadline' });

  const readyNeeded = Math.max(1, minReady);
  cond.push(readyCondition(replicas, live.length, readyCount, readyNeeded));

  const adapterFailures = adapterFailuresOf(live, o.engine);
  if (adapterFailures.length > 0) {
    const message = `${adapterFailures.join('; ')}; the other replicas keep serving`.slice(0, 4000);
    cond.push({ type: CONDITION.adapterFailure, status: 'True', reason: 'AdapterLoadFailed', message });
    if (findCondition(prev.conditions, CONDITION.adapterFailure)?.status !== 'True')
      actions.push({ kind: 'event', type: 'Warning', reason: 'AdapterLoadFailed', message });
  } else
    clearIfPresent.push({
      type: CONDITION.adapterFailure,
      status: 'False',
      reason: 'AdaptersLoaded',
      message: 'every adapter the replicas were started with is loaded',
    });

  let conditions: Condition[] = [...(prev.conditions ?? [])];
  for (const u of cond) conditions = setCondition(conditions, u, nowIso, gen);
  for (const u of clearIfPresent) conditions = setIfPresent(conditions, u, nowIso, gen);

  const adapters = s.spec.model.adapters ?? [];
  const replicaStatuses = replicaStatusesOf(live, adapters, ready, hash, o.engine);

  const phase = phaseOf(!rendered.ok, readyCount, stuck.length > 0, conditions, live);

  const status: InferenceServiceStatus = {
    ...prev,
    phase,
    conditions,
    ...(gen === undefined ? {} : { observedGeneration: gen }),
    replicas: live.length,
    readyReplicas: readyCount,
    updatedReplicas: current.length,
    desiredReplicas: replicas,
    selector: selectorString(name),
    replicaStatuses,
    ...(rendered.ok ? { url: rendered.value.url, model: rendered.value.model } : {}),
  };
  return { status, actions, ...(requeueAfterMs === undefined ? {} : { requeueAfterMs: Math.max(1000, requeueAfterMs) }) };
}

type BrokenGroup = { readonly group: string; readonly why: string; readonly pods: readonly PodObject[] };

/**
 * A multi-pod replica (leader + workers, ADR 0134) is one unit: it counts, rolls and is deleted through its
 * leader. A group missing a member, or with a member that finished or restarted, is deleted whole and made
 * again (LWS's RecreateGroupOnPodRestart): the engine's ranks cannot rejoin a running group one by one.
 */
function replicaGroups(owned: readonly PodObject[]): { members: Map<string, PodObject[]>; broken: BrokenGroup[] } {
  const members = new Map<string, PodObject[]>();
  for (const p of owned) {
    if (p.metadata.labels?.[LABEL.workerIndex] === undefined) continue;
    const list = members.get(groupOf(p)) ?? [];
    list.push(p);
    members.set(groupOf(p), list);
  }
  const broken: BrokenGroup[] = [];
  for (const [group, pods] of members) {
    const alive = pods.filter((p) => !isTerminating(p));
    const why = brokenBecause(alive);
    if (why !== undefined && alive.length > 0) broken.push({ group, why, pods: alive });
  }
  return { members, broken };
}

/** Why a group (its pods not terminating) must be made again; undefined: it is whole. */
function brokenBecause(alive: readonly PodObject[]): string | undefined {
  const leader = alive.find((p) => !isWorker(p));
  const size = leader === undefined ? 0 : groupSize(leader);
  return leader === undefined
    ? 'its leader is gone'
    : alive.length < size
      ? `${size - alive.length} of its ${size} pods ${size - alive.length === 1 ? 'is' : 'are'} gone`
      : alive.find(isFinished) !== undefined
        ? `pod ${alive.find(isFinished)?.metadata.name ?? ''} finished`
        : alive.find(restarted) !== undefined
          ? `pod ${alive.find(restarted)?.metadata.name ?? ''} restarted`
          : undefined;
}

/** Replicas unready past the progress deadline (one message each), and when the next one reaches it. */
function stuckReplicas(
  live: readonly PodObject[],
  ready: (p: PodObject) => boolean,
  nowMs: number,
  deadlineSeconds: number,
): { stuck: string[]; nextDeadline: number | undefined } {
  const deadlineMs = deadlineSeconds * 1000;
  const stuck: string[] = [];
  let nextDeadline: number | undefined;
  for (const p of live) {
    if (ready(p)) continue;
    const since = ms(p.status?.startTime) ?? ms(p.metadata.creationTimestamp);
    if (since === undefined) continue;
    const due = since + deadlineMs;
    if (nowMs >= due) {
      const sched = p.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
      const why =
        (p.spec?.nodeName ?? '') === ''
          ? `not scheduled${sched?.message === undefined ? '' : `: ${sched.message}`}`
          : "the engine's health endpoint does not answer ready";
      stuck.push(
        `${p.metadata.name ?? ''} not ready ${Math.round((nowMs - since) / 1000)}s after it started (spec.progressDeadlineSeconds ${deadlineSeconds}): ${why}`,
      );
    } else nextDeadline = nextDeadline === undefined ? due : Math.min(nextDeadline, due);
  }
  return { stuck, nextDeadline };
}

/** Where the service comes from: its own Service, and a group Service for multi-pod replicas; an existing one is patched to the rendered one. */
function serviceActions(r: Rendered, services: readonly ServiceObject[]): Action[] {
  const actions: Action[] = [];
  const svc = services.find((x) => x.metadata.name === r.service.metadata.name);
  if (r.groupService !== undefined && !services.some((x) => x.metadata.name === r.groupService?.metadata.name))
    actions.push({ kind: 'createService', service: r.groupService });
  if (svc === undefined) actions.push({ kind: 'createService', service: r.service });
  else {
    const patch = serviceDiff(svc, r.service);
    if (patch !== undefined) actions.push({ kind: 'patchService', name: svc.metadata.name ?? '', patch });
  }
  return actions;
}

function readyCondition(replicas: number, live: number, readyCount: number, readyNeeded: number): ConditionUpdate {
  if (replicas === 0)
    return {
      type: CONDITION.ready,
      status: live === 0 ? 'True' : 'False',
      reason: 'ScaledToZero',
      message: live === 0 ? 'scaled to zero' : `scaling to zero: ${live} replicas left`,
    };
  if (readyCount >= readyNeeded)
    return {
      type: CONDITION.ready,
      status: 'True',
      reason: 'MinimumReplicasReady',
      message: `${readyCount}/${replicas} replicas ready (minimum ${readyNeeded})`,
    };
  return {
    type: CONDITION.ready,
    status: 'False',
    reason: 'MinimumReplicasUnavailable',
    message: `${readyCount}/${replicas} replicas ready (minimum ${readyNeeded})`,
  };
}

/** Every live replica by pod name: ready, on the current template, its node, and the state of each adapter of the spec. */
function replicaStatusesOf(
  live: readonly PodObject[],
  adapters: NonNullable<Observed['isvc']['spec']['model']['adapters']>,
  ready: (p: PodObject) => boolean,
  hash: string | undefined,
  engine: Observed['engine'],
): ReplicaStatus[] {
  return [...live]
    .sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1))
    .map((p) => {
      const podName = p.metadata.name ?? '';
      const seen = new Map((engine.replica(p)?.adapters ?? []).map((a) => [a.name, a]));
      return {
        name: podName,
        ready: ready(p),
        updated: hash !== undefined && p.metadata.labels?.[LABEL.templateHash] === hash,
        ...((p.spec?.nodeName ?? '') === '' ? {} : { node: p.spec?.nodeName ?? '' }),
        ...(adapters.length === 0
          ? {}
          : {
              adapters: adapters.map((a) => {
                const obs = seen.get(a.name);
                return { name: a.name, state: obs?.state ?? 'Desired', ...(obs?.message === undefined ? {} : { message: obs.message.slice(0, 1024) }) };
              }),
            }),
      };
    });
}

function phaseOf(
  invalid: boolean,
  readyCount: number,
  stuck: boolean,
  conditions: readonly Condition[],
  live: readonly PodObject[],
): NonNullable<InferenceServiceStatus['phase']> {
  return invalid && readyCount === 0
    ? 'Failed'
    : invalid || stuck
      ? 'Degraded'
      : findCondition(conditions, CONDITION.progressing)?.reason === 'Complete'
        ? 'Ready'
        : live.some((p) => (p.spec?.nodeName ?? '') !== '') && readyCount === 0
          ? 'Loading'
          : readyCount === 0
            ? 'Pending'
            : 'Scaling';
}

/** Adapters the engine side could not load, by replica (ADR 0110): each message names both. */
function adapterFailuresOf(live: readonly PodObject[], engine: Observed['engine']): string[] {
  return live.flatMap((p) =>
    (engine.replica(p)?.adapters ?? [])
      .filter((a) => a.state === 'Failed')
      .map((a) => `replica ${p.metadata.name ?? ''}: adapter ${a.name}: ${a.message ?? 'failed to load'}`),
  );
}
