// Queue: a tenant's share of the cluster (issue 6 §1; seed 004 §4.1 tiers gold/silver/bronze with
// weights 4/2/1 and a guaranteed minimum). Quotas per resource and per GPU model, a cohort to borrow
// from and lend to (Kueue's nominal/borrowing/lending limits), and priority classes for ordering inside.
import { Type, type Static } from '@sinclair/typebox';
import { compareQuantities } from '../quantity.ts';
import { Conditions, DNS_SUBDOMAIN_PATTERN, DnsLabel, Obj, Quantity, Resource, StringEnum, withRules, Count, ObservedGeneration } from './common.ts';

export const QUEUE_TIERS = ['gold', 'silver', 'bronze'] as const;
export type QueueTier = (typeof QUEUE_TIERS)[number];

/** Fair-share weight of each tier (seed 004 §4.1). */
export const TIER_WEIGHT: Readonly<Record<QueueTier, number>> = { gold: 4, silver: 2, bronze: 1 };

/** A quantity that is not above another one; absent values pass (the CEL rules are guarded by has()). */
function notAbove(a: number | string | undefined, b: number | string): boolean {
  if (a === undefined) return true;
  const c = compareQuantities(a, b);
  return c === undefined || c <= 0;
}

export const ResourceQuota = withRules(
  Obj(
    {
      name: Type.String({ description: 'Resource name, e.g. nvidia.com/gpu, cpu or memory.', minLength: 1, maxLength: 253 }),
      nominal: Quantity('Quota the queue owns; its jobs may always use this much when the cluster has it.'),
      borrowingLimit: Type.Optional(Quantity('How much above nominal the queue may borrow from its cohort; unset means no limit (requires a cohort).')),
      lendingLimit: Type.Optional(Quantity('How much of its unused nominal quota the cohort may borrow; unset means all of it (requires a cohort).')),
      guaranteed: Type.Optional(Quantity('Minimum that is never lent and is reclaimed first by preemption; at most nominal.')),
    },
    { description: 'Quota for one resource.' },
  ),
  [
    {
      rule: '!has(self.lendingLimit) || quantity(string(self.lendingLimit)).compareTo(quantity(string(self.nominal))) <= 0',
      message: 'lendingLimit must not exceed nominal',
      fieldPath: '.lendingLimit',
      check: (self) => notAbove(self.lendingLimit, self.nominal),
    },
    {
      rule: '!has(self.guaranteed) || quantity(string(self.guaranteed)).compareTo(quantity(string(self.nominal))) <= 0',
      message: 'guaranteed must not exceed nominal',
      fieldPath: '.guaranteed',
      check: (self) => notAbove(self.guaranteed, self.nominal),
    },
  ],
);
export type ResourceQuota = Static<typeof ResourceQuota>;

const GpuCount = (description: string) => Type.Integer({ description, minimum: 0, maximum: 1000000 });

export const GpuModelQuota = withRules(
  Obj(
    {
      model: Type.String({ description: 'GPU product name as in the node label, e.g. NVIDIA-H100-80GB-HBM3.', minLength: 1, maxLength: 128 }),
      nominal: GpuCount('GPUs of this model the queue owns.'),
      borrowingLimit: Type.Optional(GpuCount('GPUs of this model the queue may borrow above nominal; unset means no limit (requires a cohort).')),
      lendingLimit: Type.Optional(GpuCount('GPUs of this model the cohort may borrow from this queue; unset means all unused (requires a cohort).')),
      guaranteed: Type.Optional(GpuCount('GPUs of this model never lent; at most nominal.')),
    },
    { description: 'Quota for one GPU model.' },
  ),
  [
    {
      rule: '!has(self.lendingLimit) || self.lendingLimit <= self.nominal',
      message: 'lendingLimit must not exceed nominal',
      fieldPath: '.lendingLimit',
      check: (self) => self.lendingLimit === undefined || self.lendingLimit <= self.nominal,
    },
    {
      rule: '!has(self.guaranteed) || self.guaranteed <= self.nominal',
      message: 'guaranteed must not exceed nominal',
      fieldPath: '.guaranteed',
      check: (self) => self.guaranteed === undefined || self.guaranteed <= self.nominal,
    },
  ],
);
export type GpuModelQuota = Static<typeof GpuModelQuota>;

export const QueuePreemption = Obj(
  {
    withinQueue: StringEnum(['Never', 'LowerPriority'], {
      description: 'Whether a pending job may preempt lower-priority jobs of the same queue. Default: LowerPriority.',
      default: 'LowerPriority',
    }),
    reclaimWithinCohort: StringEnum(['Never', 'LowerPriority', 'Any'], {
      description: "Whether the queue may reclaim its lent quota by preempting other queues' jobs: never, only lower-priority ones, or any. Default: Any.",
      default: 'Any',
    }),
    criticalPhaseGraceSeconds: Type.Integer({
      description: 'A victim in a critical phase (checkpoint or all-reduce window) gets at most this long to finish it before eviction. Default: 300.',
      minimum: 0,
      maximum: 3600,
      default: 300,
    }),
    cooldownSeconds: Type.Integer({
      description: 'A job is not preempted again within this time after it restarted, so preemption never loops. Default: 60.',
      minimum: 0,
      maximum: 86400,
      default: 60,
    }),
    // No apiserver default for the two below: objects written before them read back unchanged; unset means 300 s / false.
    checkpointGraceSeconds: Type.Optional(
      Type.Integer({
        description:
          'Checkpoint-aware preemption: a victim of this queue that can checkpoint is asked for one and evicted once it is committed, or after this long at the latest. Unset: 300.',
        minimum: 0,
        maximum: 3600,
      }),
    ),
    defragmentByMigration: Type.Optional(
      Type.Boolean({
        description:
          'A gang of this queue that waits only because free GPUs are fragmented may move checkpointable running jobs (checkpoint, then restore elsewhere) to free a whole domain, when its earlier start outweighs their checkpoint, restore and redone work. Unset: false.',
      }),
    ),
  },
  { description: 'Preemption policy; victims are always whole gangs. Default: {} (every field defaulted).', default: {} },
);

const quotaLimitsSet = (q: { borrowingLimit?: unknown; lendingLimit?: unknown }) => q.borrowingLimit !== undefined || q.lendingLimit !== undefined;

export const QueueSpec = withRules(
  Obj(
    {
      tenant: DnsLabel('Tenant (team or organisation) the queue belongs to.'),
      tier: Type.Optional(
        StringEnum(QUEUE_TIERS, { description: 'Service tier: gold, silver or bronze (fair-share weights 4, 2, 1); unset with weight unset means weight 1.' }),
      ),
      weight: Type.Optional(Type.Integer({ description: 'Explicit fair-share weight instead of a tier.', minimum: 1, maximum: 1000 })),
      cohort: Type.Optional(DnsLabel('Cohort of queues that borrow unused quota from each other.')),
      resources: Type.Optional(
        Type.Array(ResourceQuota, {
          description: 'Quota per resource (nvidia.com/gpu, cpu, memory, ...); resources not listed are not limited by the queue.',
          maxItems: 16,
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
        }),
      ),
      gpuModels: Type.Optional(
        Type.Array(GpuModelQuota, {
          description: 'GPU quota per GPU model, inside the nvidia.com/gpu quota.',
          maxItems: 16,
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['model'],
        }),
      ),
      priorityClasses: Type.Optional(
        Type.Array(Type.String({ description: 'A PriorityClass name.', minLength: 1, maxLength: 253, pattern: DNS_SUBDOMAIN_PATTERN }), {
          description: 'PriorityClasses jobs of this queue may use; empty or unset allows any. Inside the queue jobs run by priority, then FIFO.',
          maxItems: 32,
          'x-kubernetes-list-type': 'set',
        }),
      ),
      defaultPriorityClassName: Type.Optional(
        Type.String({
          description: 'PriorityClass for jobs that name none; must be in priorityClasses when that is set.',
          minLength: 1,
          maxLength: 253,
          pattern: DNS_SUBDOMAIN_PATTERN,
        }),
      ),
      namespaces: Type.Optional(
        Type.Array(Type.String({ description: 'A namespace name.', minLength: 1, maxLength: 63 }), {
          description: 'Namespaces whose jobs may use the queue; empty or unset allows all.',
          maxItems: 256,
          'x-kubernetes-list-type': 'set',
        }),
      ),
      preemption: QueuePreemption,
      // No apiserver default: objects written before it read back unchanged; unset means the scheduler's 4 h.
      reserveAfterSeconds: Type.Optional(
        Type.Integer({
          description:
            "A job at the head of this queue that does not fit gets nodes reserved once it has waited this long: later jobs may then use those nodes only where they cannot delay it. A guard against starvation (Volcano's sla-waiting-time); before it, jobs start wherever they fit. 0: at once. Unset: 14400 (4 h).",
          minimum: 0,
          maximum: 604800,
        }),
      ),
    },
    { description: 'Desired state of a Queue.' },
  ),
  [
    {
      rule: '!(has(self.tier) && has(self.weight))',
      message: 'set tier or weight, not both',
      fieldPath: '.weight',
      check: (self) => !(self.tier !== undefined && self.weight !== undefined),
    },
    {
      rule: 'has(self.cohort) || ((!has(self.resources) || self.resources.all(r, !has(r.borrowingLimit) && !has(r.lendingLimit))) && (!has(self.gpuModels) || self.gpuModels.all(g, !has(g.borrowingLimit) && !has(g.lendingLimit))))',
      message: 'borrowingLimit and lendingLimit require a cohort',
      fieldPath: '.cohort',
      reason: 'FieldValueRequired',
      check: (self) => self.cohort !== undefined || (!(self.resources ?? []).some(quotaLimitsSet) && !(self.gpuModels ?? []).some(quotaLimitsSet)),
    },
    {
      rule: '!has(self.defaultPriorityClassName) || !has(self.priorityClasses) || size(self.priorityClasses) == 0 || self.defaultPriorityClassName in self.priorityClasses',
      message: 'defaultPriorityClassName must be one of priorityClasses',
      fieldPath: '.defaultPriorityClassName',
      check: (self) =>
        self.defaultPriorityClassName === undefined ||
        self.priorityClasses === undefined ||
        self.priorityClasses.length === 0 ||
        self.priorityClasses.includes(self.defaultPriorityClassName),
    },
  ],
);
export type QueueSpec = Static<typeof QueueSpec>;

export const QueueStatus = Obj(
  {
    conditions: Type.Optional(Conditions),
    observedGeneration: ObservedGeneration(),
    effectiveWeight: Type.Optional(Type.Integer({ description: 'Fair-share weight in use (from weight or tier).', minimum: 1 })),
    pendingWorkloads: Type.Optional(Count('Jobs waiting for admission.')),
    admittedWorkloads: Type.Optional(Count('Jobs admitted and not finished.')),
    reservingWorkloads: Type.Optional(Count('Jobs holding a reservation (the head gang waiting for capacity).')),
    usage: Type.Optional(
      Type.Array(
        Obj(
          {
            name: Type.String({ description: 'Resource name.', maxLength: 253 }),
            total: Quantity('Amount used by admitted jobs.'),
            borrowed: Type.Optional(Quantity('Part of total borrowed from the cohort.')),
          },
          { description: 'Usage of one resource.' },
        ),
        { description: 'Usage per resource.', maxItems: 16, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] },
      ),
    ),
    gpuModelUsage: Type.Optional(
      Type.Array(
        Obj(
          {
            model: Type.String({ description: 'GPU model.', maxLength: 128 }),
            total: GpuCount('GPUs of this model used by admitted jobs.'),
            borrowed: Type.Optional(GpuCount('Part of total borrowed from the cohort.')),
          },
          { description: 'Usage of one GPU model.' },
        ),
        { description: 'Usage per GPU model.', maxItems: 16, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['model'] },
      ),
    ),
    fairShare: Type.Optional(Type.Number({ description: 'Weighted dominant share (usage / entitlement); the lowest is served first.', minimum: 0 })),
    headWorkload: Type.Optional(
      Type.String({ description: 'namespace/name of the job at the head of the queue, which holds the reservation.', maxLength: 317 }),
    ),
  },
  { description: 'Observed state of a Queue, written by the queue controller.' },
);
export type QueueStatus = Static<typeof QueueStatus>;

export const Queue = Resource(
  'Queue',
  QueueSpec,
  QueueStatus,
  'A tenant queue: fair-share weight, quotas per resource and GPU model, cohort borrowing and lending.',
);
export type Queue = Static<typeof Queue>;

/** The fair-share weight a queue gets: explicit weight, else its tier's, else 1. */
export function queueWeight(spec: Pick<QueueSpec, 'tier' | 'weight'>): number {
  return spec.weight ?? (spec.tier !== undefined ? TIER_WEIGHT[spec.tier] : 1);
}
