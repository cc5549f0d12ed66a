/**
 * Queues (tenants) as the core sees them: a fair-share weight, quotas per resource and per GPU model,
 * cohorts that borrow and lend (Kueue's nominal/borrowing/lending limits), and a guaranteed minimum
 * (seed 004 §4.1). Integer units: gpuMilli, cpuMilli, memoryMiB. A missing limit is Infinity.
 */

export interface Resources {
  readonly gpuMilli: number;
  readonly cpuMilli: number;
  readonly memoryMiB: number;
}

export const ZERO: Resources = { gpuMilli: 0, cpuMilli: 0, memoryMiB: 0 };
export const UNLIMITED: Resources = { gpuMilli: Infinity, cpuMilli: Infinity, memoryMiB: Infinity };
export const RESOURCE_KEYS = ['gpuMilli', 'cpuMilli', 'memoryMiB'] as const;
export type ResourceKey = (typeof RESOURCE_KEYS)[number];

export const add = (a: Resources, b: Resources): Resources => ({
  gpuMilli: a.gpuMilli + b.gpuMilli,
  cpuMilli: a.cpuMilli + b.cpuMilli,
  memoryMiB: a.memoryMiB + b.memoryMiB,
});
export const sub = (a: Resources, b: Resources): Resources => ({
  gpuMilli: a.gpuMilli - b.gpuMilli,
  cpuMilli: a.cpuMilli - b.cpuMilli,
  memoryMiB: a.memoryMiB - b.memoryMiB,
});
export const min = (a: Resources, b: Resources): Resources => ({
  gpuMilli: Math.min(a.gpuMilli, b.gpuMilli),
  cpuMilli: Math.min(a.cpuMilli, b.cpuMilli),
  memoryMiB: Math.min(a.memoryMiB, b.memoryMiB),
});
export const max0 = (a: Resources): Resources => ({
  gpuMilli: Math.max(0, a.gpuMilli),
  cpuMilli: Math.max(0, a.cpuMilli),
  memoryMiB: Math.max(0, a.memoryMiB),
});
export const fits = (a: Resources, limit: Resources): boolean => a.gpuMilli <= limit.gpuMilli && a.cpuMilli <= limit.cpuMilli && a.memoryMiB <= limit.memoryMiB;

export interface ModelQuota {
  readonly nominalGpuMilli: number;
  readonly borrowingLimitGpuMilli: number;
  readonly lendingLimitGpuMilli: number;
  readonly guaranteedGpuMilli: number;
}

export interface QueueSpec {
  readonly name: string;
  readonly tenant: string;
  /** Fair-share weight: tiers gold/silver/bronze are 4/2/1. */
  readonly weight: number;
  readonly cohort?: string;
  readonly nominal: Resources;
  readonly borrowingLimit: Resources;
  readonly lendingLimit: Resources;
  /** Never lent; reclaim never takes a queue below it. */
  readonly guaranteed: Resources;
  /** Per GPU model quotas, on top of the resource quotas. */
  readonly models: Readonly<Record<string, ModelQuota>>;
  /** PriorityClasses whose jobs the queue accepts; unset or empty accepts any. */
  readonly priorityClasses?: readonly string[];
  /** The class of a job that names none (it must be one of priorityClasses). */
  readonly defaultPriorityClass?: string;
  /** Namespaces whose jobs may use the queue; unset or empty allows all. A job without one is in `default`. */
  readonly namespaces?: readonly string[];
  readonly preemption?: QueuePreemption;
  /** Its head gets a reservation once it has waited this long; unset: the cycle's `reserveAfterMs`. */
  readonly reserveAfterMs?: number;
}

/**
 * Preemption policy of a queue (Kueue's ClusterQueue preemption, names kept):
 * - withinQueue: whether a pending job may preempt lower-priority jobs of its own queue (Never | LowerPriority);
 * - reclaimWithinCohort: whether a job of this queue, while the queue is under its fair share, may preempt
 *   jobs of other queues above theirs: Never, only jobs of lower priority than it, or Any priority;
 * - cooldownMs and criticalGraceMs protect the queue's own running jobs as victims: not preempted within
 *   cooldownMs of their (re)start, and a critical phase is waited for at most criticalGraceMs.
 * Unset fields take LowerPriority, Any and the cycle's minRuntimeMs / criticalGraceMs.
 */
export interface QueuePreemption {
  readonly withinQueue?: 'Never' | 'LowerPriority';
  readonly reclaimWithinCohort?: 'Never' | 'LowerPriority' | 'Any';
  readonly cooldownMs?: number;
  readonly criticalGraceMs?: number;
  /** Checkpoint-aware preemption: how long a victim of this queue may take to commit the checkpoint asked of it. */
  readonly checkpointGraceMs?: number;
  /** Gangs of this queue may have checkpointable jobs moved to free a domain (defragmentation by migration, ADR 0095). */
  readonly defragmentByMigration?: boolean;
}

export const TIER_WEIGHTS: Readonly<Record<string, number>> = { gold: 4, silver: 2, bronze: 1 };

export function makeQueue(name: string, o: Partial<Omit<QueueSpec, 'name'>> = {}): QueueSpec {
  return {
    name,
    tenant: o.tenant ?? name,
    weight: o.weight ?? 1,
    ...(o.cohort === undefined ? {} : { cohort: o.cohort }),
    nominal: o.nominal ?? UNLIMITED,
    borrowingLimit: o.borrowingLimit ?? UNLIMITED,
    lendingLimit: o.lendingLimit ?? UNLIMITED,
    guaranteed: o.guaranteed ?? ZERO,
    models: o.models ?? {},
    ...(o.priorityClasses === undefined ? {} : { priorityClasses: o.priorityClasses }),
    ...(o.defaultPriorityClass === undefined ? {} : { defaultPriorityClass: o.defaultPriorityClass }),
    ...(o.namespaces === undefined ? {} : { namespaces: o.namespaces }),
    ...(o.preemption === undefined ? {} : { preemption: o.preemption }),
    ...(o.reserveAfterMs === undefined ? {} : { reserveAfterMs: o.reserveAfterMs }),
  };
}

/**
 * Why `queue` refuses a job outright (whatever its quota): a priority class or a namespace the queue does
 * not accept. Undefined when the queue accepts it.
 */
export function inadmissible(queue: QueueSpec, job: { readonly priorityClass?: string; readonly namespace?: string }): string | undefined {
  const classes = queue.priorityClasses ?? [];
  if (classes.length > 0) {
    const cls = job.priorityClass ?? queue.defaultPriorityClass;
    if (cls === undefined) return `queue ${queue.name} accepts priority classes ${classes.join(', ')}; the job names none`;
    if (!classes.includes(cls)) return `queue ${queue.name} does not accept priority class ${cls} (accepts ${classes.join(', ')})`;
  }
  const namespaces = queue.namespaces ?? [];
  const ns = job.namespace ?? 'default';
  if (namespaces.length > 0 && !namespaces.includes(ns)) return `namespace ${ns} may not submit to queue ${queue.name} (allowed: ${namespaces.join(', ')})`;
  return undefined;
}

/** What a job asks of its queue's quota: its total requests, and GPU milli per model it may use. */
export interface Demand {
  readonly resources: Resources;
  /** GPU model the job will use when it is known (placement decided), else undefined. */
  readonly gpuModel?: string;
}
