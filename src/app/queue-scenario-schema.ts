/** The queue scenario format (queue-scenario.ts): queues, jobs, running jobs, cycles, budgets and expectations as TypeBox schemas. */
import { Type, type Static } from '@sinclair/typebox';
import { QueuePreemption, QueueSpec as QueueSpecSchema } from '../api/schema/queue.ts';
import { type WaitReason } from '../core/actions/queue-cycle.ts';
import { TOPOLOGY_LEVELS } from '../core/model/topology.ts';
import { PodT } from '../formats/workload-file.ts';

const Level = Type.Union(TOPOLOGY_LEVELS.map((l) => Type.Literal(l)));
const Name = Type.String({ minLength: 1, maxLength: 200 });
const Sec = (o: { minimum?: number; exclusiveMinimum?: number } = {}) => Type.Number(o);

/** A queue: the Queue CRD's spec fields and a name; tenant defaults to the name, preemption fields to the CRD's defaults. */
export const ScenarioQueueT = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 63 }),
    tenant: Type.Optional(Type.String({ minLength: 1 })),
    ...Type.Omit(QueueSpecSchema, ['tenant', 'preemption']).properties,
    preemption: Type.Optional(Type.Partial(QueuePreemption)),
  },
  { additionalProperties: false },
);

const jobFields = {
  name: Name,
  /** Unset: outside any Queue (kube-scheduler's semantics: no quota, PriorityClass preemption). */
  queue: Type.Optional(Type.String({ minLength: 1 })),
  /** The pods' labels, for the selectors of disruptionBudgets. */
  labels: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
  replicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
  // No cycle removes a gate: a gated job would never be tried (placement scenarios show gates).
  pod: Type.Omit(PodT, ['name', 'count', 'arrivalSec', 'durationSec', 'priority', 'queue', 'schedulingGates']),
  topology: Type.Optional(Type.Object({ required: Type.Optional(Level), preferred: Type.Optional(Level) }, { additionalProperties: false })),
  priority: Type.Optional(Type.Integer()),
  priorityClass: Type.Optional(Type.String({ minLength: 1 })),
  namespace: Type.Optional(Type.String({ minLength: 1 })),
};

export const ScenarioJobT = Type.Object(
  {
    ...jobFields,
    /** That many identical jobs, named name-0, name-1, ... */
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    submitSec: Type.Optional(Sec({ minimum: 0 })),
    /** Runtime estimate and true runtime (default 3600). */
    runtimeSec: Type.Optional(Sec({ exclusiveMinimum: 0 })),
  },
  { additionalProperties: false },
);

export const ScenarioRunningJobT = Type.Object(
  {
    ...jobFields,
    /** Started this long before the first cycle (default 3600). */
    sinceSec: Type.Optional(Sec({ minimum: 0 })),
    /** Ends this long after the first cycle (default 3600). */
    endsInSec: Type.Optional(Sec({ exclusiveMinimum: 0 })),
    /** One node per member; unset, the scheduler places the gang. */
    nodes: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    /** In a critical phase (checkpoint, all-reduce window) until this long after the first cycle. */
    criticalForSec: Type.Optional(Sec({ exclusiveMinimum: 0 })),
    checkpointAgoSec: Type.Optional(Sec({ minimum: 0 })),
    preemptible: Type.Optional(Type.Boolean()),
    /** Takes a checkpoint when asked (checkpoint-aware preemption): commits `checkpointSec` after the request, or never. */
    checkpointable: Type.Optional(Type.Boolean()),
    checkpointSec: Type.Optional(Type.Union([Sec({ minimum: 0 }), Type.Literal('never')])),
    /** Writing a checkpoint of its own right now (end unknown): a critical phase under checkpoint-aware preemption. */
    checkpointInFlight: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const IntOrPercent = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^[0-9]+%$' })]);

/** A PodDisruptionBudget (policy/v1 spec) over the jobs' pods by their labels. */
export const ScenarioBudgetT = Type.Object(
  {
    name: Name,
    selector: Type.Object(
      {
        matchLabels: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
        matchExpressions: Type.Optional(
          Type.Array(
            Type.Object(
              {
                key: Type.String({ minLength: 1 }),
                operator: Type.Union(['In', 'NotIn', 'Exists', 'DoesNotExist'].map((o) => Type.Literal(o))),
                values: Type.Optional(Type.Array(Type.String())),
              },
              { additionalProperties: false },
            ),
          ),
        ),
      },
      { additionalProperties: false },
    ),
    minAvailable: Type.Optional(IntOrPercent),
    maxUnavailable: Type.Optional(IntOrPercent),
  },
  { additionalProperties: false },
);

export const ScenarioCyclesT = Type.Union([
  Type.Integer({ minimum: 1, maximum: 100_000 }),
  Type.Object(
    { count: Type.Integer({ minimum: 1, maximum: 100_000 }), everySec: Type.Optional(Sec({ exclusiveMinimum: 0 })) },
    { additionalProperties: false },
  ),
]);

export const ScenarioCycleOptionsT = Type.Object(
  {
    backfill: Type.Optional(Type.Boolean()),
    preemption: Type.Optional(Type.Boolean()),
    fairShare: Type.Optional(Type.Boolean()),
    maxReservations: Type.Optional(Type.Integer({ minimum: 0 })),
    checkpointAware: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const WAIT_REASONS = [
  'quota',
  'capacity',
  'reservation',
  'fair-share',
  'critical-victim',
  'checkpoint-victim',
  'inadmissible',
  'better-placement',
] as const satisfies readonly WaitReason[];

export const QueueExpectT = Type.Object(
  {
    admitted: Type.Optional(Name),
    held: Type.Optional(Name),
    preempted: Type.Optional(Name),
    running: Type.Optional(Name),
    deferred: Type.Optional(Name),
    checkpointRequested: Type.Optional(Name),
    /** A running job moved (checkpoint → restore elsewhere) to free a domain for `by` (defragmentation by migration). */
    migrated: Type.Optional(Name),
    reservation: Type.Optional(Name),
    preemptions: Type.Optional(Type.Integer({ minimum: 0 })),
    maxPreemptions: Type.Optional(Type.Integer({ minimum: 0 })),
    /** GPU-time share per queue over the cycles in which all these queues had jobs waiting, as relative weights. */
    shares: Type.Optional(Type.Record(Type.String(), Type.Number({ exclusiveMinimum: 0 }))),
    tolerancePct: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    atSec: Type.Optional(Type.Number()),
    reason: Type.Optional(Type.Union(WAIT_REASONS.map((r) => Type.Literal(r)))),
    message: Type.Optional(Type.String()),
    messageContains: Type.Optional(Type.Array(Type.String())),
    by: Type.Optional(Name),
    untilSec: Type.Optional(Type.Number()),
    startsAtSec: Type.Optional(Type.Number()),
    nodes: Type.Optional(Type.Array(Type.String())),
    nodeCount: Type.Optional(Type.Integer({ minimum: 0 })),
    sameRack: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type QueueExpect = Static<typeof QueueExpectT>;

export const TARGETS = [
  'admitted',
  'held',
  'preempted',
  'running',
  'deferred',
  'checkpointRequested',
  'migrated',
  'reservation',
  'preemptions',
  'maxPreemptions',
  'shares',
] as const;
export type Target = (typeof TARGETS)[number];
/** Which other fields each kind of expectation may use. */
export const MODIFIERS: Readonly<Record<Target, readonly (keyof QueueExpect)[]>> = {
  admitted: ['atSec', 'nodes', 'nodeCount', 'sameRack'],
  held: ['atSec', 'reason', 'message', 'messageContains'],
  preempted: ['by', 'atSec', 'messageContains'],
  running: [],
  deferred: ['by', 'untilSec'],
  checkpointRequested: ['by', 'atSec'],
  migrated: ['by', 'atSec', 'nodes'],
  reservation: ['atSec', 'startsAtSec', 'nodes', 'nodeCount', 'messageContains'],
  preemptions: [],
  maxPreemptions: [],
  shares: ['tolerancePct'],
};
