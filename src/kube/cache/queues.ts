/**
 * Queue objects (`API_GROUP_VERSION`, cluster-scoped) as core QueueSpecs, and the live cluster's running
 * gangs as RunningJobs, for the queue cycle. Quantities follow Kubernetes syntax; a resource a queue does
 * not list is not limited by it.
 */
import { isOurs, type SchedulerNames } from '../scheduler/scheduler-names.ts';
import type { V1Pod } from '@kubernetes/client-node';
import type { RunningJob } from '../../core/actions/jobs.ts';
import { makeQueue, TIER_WEIGHTS, UNLIMITED, ZERO, type ModelQuota, type QueueSpec, type Resources } from '../../core/queue/model.ts';
import { quantityToMiB, quantityToMilli } from '../../api/quantity.ts';
import { ANNOTATION, GPU_RESOURCE, LABEL } from '../../api/wire.ts';
import { modelFromProduct, podFromK8s, podKey } from './labels.ts';

export interface QueueObject {
  metadata?: { name?: string; resourceVersion?: string };
  spec?: {
    tenant?: string;
    tier?: string;
    weight?: number;
    cohort?: string;
    resources?: { name: string; nominal: string | number; borrowingLimit?: string | number; lendingLimit?: string | number; guaranteed?: string | number }[];
    gpuModels?: { model: string; nominal: number; borrowingLimit?: number; lendingLimit?: number; guaranteed?: number }[];
    priorityClasses?: string[];
    defaultPriorityClassName?: string;
    namespaces?: string[];
    preemption?: {
      withinQueue?: 'Never' | 'LowerPriority';
      reclaimWithinCohort?: 'Never' | 'LowerPriority' | 'Any';
      criticalPhaseGraceSeconds?: number;
      cooldownSeconds?: number;
      checkpointGraceSeconds?: number;
      defragmentByMigration?: boolean;
    };
    reserveAfterSeconds?: number;
  };
  /** Written by the scheduler (object-status.ts); read only to skip unchanged writes. */
  status?: unknown;
}

// Queue quotas may be fractional GPUs ("0.5"): GPUs are counted in thousandths here, rounded up like CPU.
function amount(name: string, q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  if (name === GPU_RESOURCE || name === 'cpu') return quantityToMilli(q);
  if (name === 'memory') return quantityToMiB(q);
  return undefined;
}

/** The Queue CRD's defaults for spec.preemption.cooldownSeconds and criticalPhaseGraceSeconds. */
export const DEFAULT_COOLDOWN_SECONDS = 60;
export const DEFAULT_CRITICAL_GRACE_SECONDS = 300;

const KEY: Readonly<Record<string, keyof Resources>> = { [GPU_RESOURCE]: 'gpuMilli', cpu: 'cpuMilli', memory: 'memoryMiB' };

export function queueFromObject(o: QueueObject): QueueSpec {
  const s = o.spec ?? {};
  const nominal: Record<keyof Resources, number> = { ...UNLIMITED };
  const borrowing: Record<keyof Resources, number> = { ...UNLIMITED };
  const lending: Record<keyof Resources, number> = { ...UNLIMITED };
  const guaranteed: Record<keyof Resources, number> = { ...ZERO };
  for (const r of s.resources ?? []) {
    const k = KEY[r.name];
    if (k === undefined) continue;
    nominal[k] = amount(r.name, r.nominal) ?? Infinity;
    borrowing[k] = amount(r.name, r.borrowingLimit) ?? Infinity;
    lending[k] = amount(r.name, r.lendingLimit) ?? Infinity;
    guaranteed[k] = amount(r.name, r.guaranteed) ?? 0;
  }
  const models: Record<string, ModelQuota> = {};
  for (const m of s.gpuModels ?? []) {
    models[modelFromProduct(m.model)] = {
      nominalGpuMilli: m.nominal * 1000,
      borrowingLimitGpuMilli: (m.borrowingLimit ?? Infinity) * 1000,
      lendingLimitGpuMilli: (m.lendingLimit ?? Infinity) * 1000,
      guaranteedGpuMilli: (m.guaranteed ?? 0) * 1000,
    };
  }
  const p = s.preemption ?? {};
  // The apiserver defaults every preemption field; an object that has none (a scenario file, a test) gets the same defaults.
  const preemption = {
    withinQueue: p.withinQueue ?? 'LowerPriority',
    reclaimWithinCohort: p.reclaimWithinCohort ?? 'Any',
    cooldownMs: (p.cooldownSeconds ?? DEFAULT_COOLDOWN_SECONDS) * 1000,
    criticalGraceMs: (p.criticalPhaseGraceSeconds ?? DEFAULT_CRITICAL_GRACE_SECONDS) * 1000,
    // Only when given: the cycle's own default applies otherwise (and QueueSpecs of older objects stay as they were).
    ...(p.checkpointGraceSeconds === undefined ? {} : { checkpointGraceMs: p.checkpointGraceSeconds * 1000 }),
    ...(p.defragmentByMigration === undefined ? {} : { defragmentByMigration: p.defragmentByMigration }),
  } as const;
  return makeQueue(o.metadata?.name ?? '', {
    tenant: s.tenant ?? o.metadata?.name ?? '',
    weight: s.weight ?? (s.tier === undefined ? 1 : (TIER_WEIGHTS[s.tier] ?? 1)),
    ...(s.cohort === undefined ? {} : { cohort: s.cohort }),
    nominal,
    borrowingLimit: borrowing,
    lendingLimit: lending,
    guaranteed,
    models,
    ...(s.priorityClasses === undefined || s.priorityClasses.length === 0 ? {} : { priorityClasses: s.priorityClasses }),
    ...(s.defaultPriorityClassName === undefined ? {} : { defaultPriorityClass: s.defaultPriorityClassName }),
    ...(s.namespaces === undefined || s.namespaces.length === 0 ? {} : { namespaces: s.namespaces }),
    preemption,
    ...(s.reserveAfterSeconds === undefined ? {} : { reserveAfterMs: s.reserveAfterSeconds * 1000 }),
  });
}

const time = (s: string | undefined): number | undefined => {
  if (s === undefined) return undefined;
  const t = Date.parse(s);
  return Number.isFinite(t) ? t : undefined;
};

/** When checkpoint-aware preemption asked this pod's job for a checkpoint (its `checkpoint-requested` annotation). */
export function checkpointRequestedOf(p: V1Pod): number | undefined {
  return time(p.metadata?.annotations?.[ANNOTATION.checkpointRequested]);
}

/** The time of the preemption request whose checkpoint cycle failed (`checkpoint-failed: Preemption/<time>`). */
function checkpointFailedOf(p: V1Pod): number | undefined {
  const v = p.metadata?.annotations?.[ANNOTATION.checkpointFailed];
  return v?.startsWith('Preemption/') === true ? time(v.slice('Preemption/'.length)) : undefined;
}

/** The job a pod of ours belongs to (its pod group, or the pod alone) and that job's queue. */
export function jobOfPod(p: V1Pod, groupQueue: (group: string) => string | undefined): { id: string; queue: string } {
  const ns = p.metadata?.namespace ?? 'default';
  const g = p.metadata?.labels?.[LABEL.podGroup];
  const id = g === undefined ? podKey(p) : `gang:${ns}/${g}`;
  const queue = (g === undefined ? undefined : groupQueue(`${ns}/${g}`)) ?? p.metadata?.labels?.[LABEL.queue] ?? 'default';
  return { id, queue };
}

/** The runtime its user gave a pod (annotation `expected-runtime-seconds`), in ms, if any. */
export function givenRuntimeMs(p: V1Pod | undefined): number | undefined {
  const s = Number(p?.metadata?.annotations?.[ANNOTATION.expectedRuntimeSeconds] ?? Number.NaN);
  return Number.isFinite(s) && s > 0 ? s * 1000 : undefined;
}

/**
 * What the scheduler knows of its own decisions before the watch reports them: the node it assumed for a pod it
 * placed (bound or waiting for its victims to leave), and the pods it is evicting.
 */
export interface InFlightView {
  readonly nowMs: number;
  readonly assumedNode: (podId: string) => string | undefined;
  readonly leaving: (podId: string) => boolean;
}

/** Where a pod holds resources for the queues' usage: bound, or placed by a committed plan; undefined if neither. */
function usageNode(p: V1Pod, view: InFlightView | undefined): string | undefined {
  const bound = p.spec?.nodeName ?? '';
  if (bound !== '') return bound;
  const a = p.metadata?.annotations;
  return view?.assumedNode(podKey(p)) ?? (a?.[ANNOTATION.planId] !== undefined ? a[ANNOTATION.assignedNode] : undefined);
}

/**
 * Running jobs of our scheduler, as the queue cycle must count them: pods grouped by pod group (or alone), with
 * the queue of their group, their total requests, and the preemption hints their annotations carry.
 * The cycle's view is the cluster after the moves already decided, as in the simulator where an eviction and the
 * preemptor's start are one step: a pod being evicted or deleted no longer counts for its queue, and a pod placed
 * by a committed plan counts from then on (with `view.nowMs` as its start, so it has the full cooldown) though it
 * binds only once its victims are gone and the watch reports both later still. Counting neither (issue 32), each
 * cycle in between reclaimed again for the same share: a queue evicted a whole cluster for one share's worth of
 * jobs, and the other queue then took it all back.
 */
export function runningJobs(
  pods: Iterable<V1Pod>,
  schedulerName: SchedulerNames,
  groupQueue: (group: string) => string | undefined,
  defaultRuntimeMs: number,
  nodeModel: (node: string) => string | undefined = () => undefined,
  view?: InFlightView,
): Map<string, RunningJob> {
  const groups = new Map<string, V1Pod[]>();
  for (const p of pods) {
    if (p.spec === undefined || !isOurs(schedulerName, p.spec.schedulerName) || p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') continue;
    if ((p.metadata?.deletionTimestamp ?? undefined) !== undefined || view?.leaving(podKey(p)) === true) continue;
    if (usageNode(p, view) === undefined) continue;
    const { id } = jobOfPod(p, groupQueue);
    groups.set(id, [...(groups.get(id) ?? []), p]);
  }
  const out = new Map<string, RunningJob>();
  for (const [id, members] of groups) {
    let res: Resources = ZERO;
    let priority = Number.NEGATIVE_INFINITY;
    let start = Infinity;
    let critical: number | undefined;
    let checkpoint: number | undefined;
    let preemptible = true;
    let requested: number | undefined;
    let failed: number | undefined;
    let checkpointable = false;
    for (const p of members) {
      const spec = podFromK8s(p);
      if (spec.ok)
        res = {
          gpuMilli: res.gpuMilli + spec.value.request.gpuCount * spec.value.request.gpuMilli,
          cpuMilli: res.cpuMilli + spec.value.request.cpuMilli,
          memoryMiB: res.memoryMiB + spec.value.request.memoryMiB,
        };
      priority = Math.max(priority, p.spec?.priority ?? 0);
      const planned = (p.spec?.nodeName ?? '') === '' ? view?.nowMs : undefined;
      start = Math.min(start, planned ?? time(p.status?.startTime?.toString()) ?? time(p.metadata?.creationTimestamp?.toString()) ?? 0);
      const ann = p.metadata?.annotations ?? {};
      const c = time(ann[ANNOTATION.criticalUntil]);
      if (c !== undefined) critical = Math.max(critical ?? 0, c);
      const k = time(ann[ANNOTATION.lastCheckpoint]);
      if (k !== undefined) checkpoint = Math.min(checkpoint ?? Infinity, k);
      if (ann[ANNOTATION.preemptible] === 'false') preemptible = false;
      const q = checkpointRequestedOf(p);
      if (q !== undefined) requested = Math.max(requested ?? 0, q);
      const f = checkpointFailedOf(p);
      if (f !== undefined) failed = Math.max(failed ?? 0, f);
      if (ann[ANNOTATION.checkpointable] === 'true') checkpointable = true;
    }
    const first = members[0] as V1Pod;
    const { queue } = jobOfPod(first, groupQueue);
    const runtime = givenRuntimeMs(first);
    // The GPU model its pods run on, for per-model quotas (a gang's members share one model in practice).
    const model = res.gpuMilli > 0 ? nodeModel(usageNode(first, view) ?? '') : undefined;
    out.set(id, {
      id,
      queue,
      priority: Number.isFinite(priority) ? priority : 0,
      startMs: start,
      estEndMs: start + (runtime ?? defaultRuntimeMs),
      podIds: members.map(podKey),
      resources: res,
      ...(model === undefined ? {} : { gpuModel: model }),
      preemptible,
      ...(critical === undefined ? {} : { criticalUntilMs: critical }),
      ...(checkpoint === undefined ? {} : { lastCheckpointMs: checkpoint }),
      ...(checkpointable ? { checkpointable: true } : {}),
      ...(requested === undefined ? {} : { checkpointRequestedMs: requested }),
      ...(failed === undefined ? {} : { checkpointFailedMs: failed }),
    });
  }
  return out;
}
