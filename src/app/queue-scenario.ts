/**
 * Queue scenarios: the declarative scenario format (src/app/scenario.ts) with queues. A scenario that lists
 * `queues` is run by the core's queue cycle (src/core/actions/queue-cycle.ts) instead of a one-shot batch:
 * queues are Queue specs (the CRD's fields, plus a name), `jobs` wait in them, `runningJobs` are gangs already
 * running, and `cycles` runs the cycle every `everySec` seconds of virtual time — jobs arrive at `submitSec`,
 * end `runtimeSec` after they start (at the first cycle at or after that), preempted jobs go back to their
 * queue and lose the work since their last checkpoint.
 *
 * ```yaml
 * name: reclaim-borrowed
 * cluster: {nodes: [{namePrefix: n, count: 2, shape: dgx-h100}]}
 * queues:
 *   - {name: a, cohort: pool, resources: [{name: nvidia.com/gpu, nominal: 8}]}
 *   - {name: b, cohort: pool, resources: [{name: nvidia.com/gpu, nominal: 8}]}
 * runningJobs:
 *   - {name: b1, queue: b, pod: {gpu: 8}, sinceSec: 3600}
 *   - {name: b2, queue: b, replicas: 2, pod: {gpu: 4}, sinceSec: 3600}
 * jobs:
 *   - {name: a1, queue: a, pod: {gpu: 8}}
 * expect:
 *   - {admitted: a1}
 *   - {preempted: b1, by: a1}
 *   - {preemptions: 1}
 * ```
 * A job without `queue` is outside any Queue (kube-scheduler's semantics: no quota, PriorityClass preemption;
 * `queues: []` runs such jobs alone). `disruptionBudgets` are PodDisruptionBudgets (policy/v1 spec: selector,
 * minAvailable or maxUnavailable) over the pods of the jobs whose `labels` they select.
 * Whatever the expectations, every cycle is checked for the invariants of issue 6: a victim is a whole gang,
 * never one in a critical phase; a started gang has all its members placed; no queue exceeds its quota.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { celChecksOf } from '../api/schema/common.ts';
import { GpuModelQuota, QueuePreemption, QueueSpec as QueueSpecSchema, ResourceQuota } from '../api/schema/queue.ts';
import { jobResources, type QueuedJob, type RunningJob } from '../core/actions/jobs.ts';
import { disruptionsAllowed, type DisruptionBudget } from '../core/actions/disruption.ts';
import { commitMigration, expectedStartMs, planMigration } from '../core/actions/migration.ts';
import { DEFAULT_QUEUE, usageOf, type CycleOptions, type Reservation, type WaitReason, type Waiting } from '../core/actions/queue-cycle.ts';
import { expectedFromBatch } from '../core/estimate/expected-workload.ts';
import type { Scheduler } from '../core/framework/scheduler.ts';
import { type Placement } from '../core/framework/scheduler.ts';
import type { NodeSpec } from '../core/model/node.ts';
import type { GangSpec, PodSpec } from '../core/model/pod.ts';
import { TOPOLOGY_LEVELS, type TopologyLevel } from '../core/model/topology.ts';
import { seededRng } from '../core/ports.ts';
import type { QueueSpec } from '../core/queue/model.ts';
import { err, ok, type Result } from '../core/result.ts';
import type { ClusterState } from '../core/snapshot/cluster-state.ts';
import { matchesSelector } from '../kube/disruption-budgets.ts';
import { queueFromObject, type QueueObject } from '../kube/queues.ts';
import { PodT, toPod, fieldPath as podFieldPath } from '../spec/workload-file.ts';
import { InputError, issueAt, validateYaml, valueAt, type InputIssue, type YamlSource } from '../spec/yaml-source.ts';
import { placeRunning, type RunningPod } from './schedule-batch.ts';
import { createSimApp, type SimApp } from './sim-app.ts';
import { VolumeCatalog, type StorageObjects } from '../core/snapshot/volume-catalog.ts';

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
type QueueExpect = Static<typeof QueueExpectT>;

const TARGETS = [
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
type Target = (typeof TARGETS)[number];
/** Which other fields each kind of expectation may use. */
const MODIFIERS: Readonly<Record<Target, readonly (keyof QueueExpect)[]>> = {
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

export interface QueueScenarioRun {
  readonly check: () => { readonly failures: string[]; readonly log: string[] };
}

interface JobDef {
  readonly job: QueuedJob;
  readonly submitMs: number;
  readonly where: readonly (string | number)[];
}

interface RunningDef {
  readonly job: QueuedJob;
  readonly nodes?: readonly string[];
  readonly startMs: number;
  readonly estEndMs: number;
  readonly criticalUntilMs?: number;
  readonly lastCheckpointMs?: number;
  readonly preemptible: boolean;
  readonly checkpointable?: boolean;
  /** After a checkpoint request, when it commits (ms later); undefined: never. */
  readonly checkpointAfterMs?: number;
  readonly checkpointInFlight?: boolean;
  readonly where: readonly (string | number)[];
}

/** Loads the queue part of a scenario (everything but name, description, cluster and running pods). */
export function loadQueueScenario(
  src: YamlSource,
  nodes: readonly NodeSpec[],
  runningPods: readonly RunningPod[],
  profileName: string,
  seed: number,
  storage?: StorageObjects,
): Result<QueueScenarioRun, InputError> {
  const issues: InputIssue[] = [];
  const at = (path: readonly (string | number)[], msg: string): void => {
    issues.push(issueAt(src, path, msg));
  };
  // No queues at all: every job is outside any Queue (kube-scheduler's semantics).
  const qv = validateYaml(src, Type.Array(ScenarioQueueT), ['queues']);
  if (!qv.ok) return qv;
  const optional = <S extends TSchema>(schema: S, key: string): Result<Static<S> | undefined, InputError> =>
    valueAt(src, [key]) === undefined ? ok(undefined) : validateYaml(src, schema, [key]);
  const jv = optional(Type.Array(ScenarioJobT), 'jobs');
  if (!jv.ok) return jv;
  const rv = optional(Type.Array(ScenarioRunningJobT), 'runningJobs');
  if (!rv.ok) return rv;
  const cv = optional(ScenarioCyclesT, 'cycles');
  if (!cv.ok) return cv;
  const ov = optional(ScenarioCycleOptionsT, 'options');
  if (!ov.ok) return ov;
  const ev = validateYaml(src, Type.Array(QueueExpectT), ['expect']);
  if (!ev.ok) return ev;
  const bv = optional(Type.Array(ScenarioBudgetT), 'disruptionBudgets');
  if (!bv.ok) return bv;

  // Queues: the CRD's rules (the TypeScript mirrors of its CEL rules), then the conversion the live scheduler uses.
  const queues = new Map<string, QueueSpec>();
  qv.value.forEach((q, i) => {
    const path = ['queues', i];
    if (queues.has(q.name)) at([...path, 'name'], `duplicate queue "${q.name}"`);
    for (const rule of celChecksOf(QueueSpecSchema)) if (!rule.check(q)) at([...path, ...fieldPath(rule.fieldPath)], rule.message);
    (q.resources ?? []).forEach((r, k) => {
      if (!['nvidia.com/gpu', 'cpu', 'memory'].includes(r.name))
        at([...path, 'resources', k, 'name'], `resource ${r.name} is not modelled (nvidia.com/gpu, cpu, memory)`);
      for (const rule of celChecksOf(ResourceQuota)) if (!rule.check(r)) at([...path, 'resources', k, ...fieldPath(rule.fieldPath)], rule.message);
    });
    (q.gpuModels ?? []).forEach((m, k) => {
      for (const rule of celChecksOf(GpuModelQuota)) if (!rule.check(m)) at([...path, 'gpuModels', k, ...fieldPath(rule.fieldPath)], rule.message);
    });
    const { name, ...spec } = q;
    const obj: QueueObject = { metadata: { name }, spec: { ...spec, tenant: q.tenant ?? name } as NonNullable<QueueObject['spec']> };
    queues.set(name, queueFromObject(obj));
  });

  const ids = new Set<string>(runningPods.map((r) => r.pod.id));
  const claim = (id: string, path: readonly (string | number)[]): boolean => {
    if (ids.has(id)) {
      at(path, `duplicate name "${id}"`);
      return false;
    }
    ids.add(id);
    return true;
  };
  const labelsOf = new Map<string, Readonly<Record<string, string>>>();
  const toJob = (
    id: string,
    j: Static<typeof ScenarioJobT> | Static<typeof ScenarioRunningJobT>,
    path: readonly (string | number)[],
    arrivalMs: number,
    runtimeMs: number,
  ): QueuedJob | undefined => {
    const queue = j.queue ?? DEFAULT_QUEUE;
    if (j.queue !== undefined && !queues.has(j.queue)) {
      at([...path, 'queue'], `unknown queue "${j.queue}" (queues: ${[...queues.keys()].join(', ')})`);
      return undefined;
    }
    if (j.labels !== undefined) labelsOf.set(id, j.labels);
    if (!claim(id, [...path, 'name'])) return undefined;
    const members: PodSpec[] = [];
    const replicas = j.replicas ?? 1;
    for (let k = 0; k < replicas; k++) {
      if (!claim(`${id}-${k}`, [...path, 'name'])) return undefined;
      const pod = toPod(`${id}-${k}`, j.pod, { gang: id, priority: j.priority ?? 0, queue }, (f, m) => at([...path, 'pod', ...podFieldPath(f)], m));
      if (pod === undefined) return undefined;
      members.push(pod);
    }
    const t = j.topology ?? {};
    const gang: GangSpec = {
      name: id,
      minMember: replicas,
      members,
      topology: {
        ...(t.required === undefined ? {} : { required: t.required as TopologyLevel }),
        ...(t.preferred === undefined ? {} : { preferred: t.preferred as TopologyLevel }),
      },
      priority: j.priority ?? 0,
      queue,
    };
    return {
      id,
      queue,
      priority: j.priority ?? 0,
      arrivalMs,
      gang,
      estRuntimeMs: runtimeMs,
      ...(j.priorityClass === undefined ? {} : { priorityClass: j.priorityClass }),
      ...(j.namespace === undefined ? {} : { namespace: j.namespace }),
    };
  };

  const runningDefs: RunningDef[] = [];
  (rv.value ?? []).forEach((j, i) => {
    const path = ['runningJobs', i];
    const startMs = -(j.sinceSec ?? 3600) * 1000;
    const estEndMs = (j.endsInSec ?? 3600) * 1000;
    const job = toJob(j.name, j, path, startMs, estEndMs - startMs);
    if (job === undefined) return;
    if (j.nodes !== undefined && j.nodes.length !== job.gang.members.length) {
      at([...path, 'nodes'], `${j.nodes.length} nodes for ${job.gang.members.length} members: give one node per member`);
      return;
    }
    runningDefs.push({
      job,
      ...(j.nodes === undefined ? {} : { nodes: j.nodes }),
      startMs,
      estEndMs,
      ...(j.criticalForSec === undefined ? {} : { criticalUntilMs: j.criticalForSec * 1000 }),
      ...(j.checkpointAgoSec === undefined ? {} : { lastCheckpointMs: -j.checkpointAgoSec * 1000 }),
      preemptible: j.preemptible ?? true,
      ...(j.checkpointable === undefined ? {} : { checkpointable: j.checkpointable }),
      ...(j.checkpointSec === undefined || j.checkpointSec === 'never' ? {} : { checkpointAfterMs: j.checkpointSec * 1000 }),
      ...(j.checkpointInFlight === undefined ? {} : { checkpointInFlight: j.checkpointInFlight }),
      where: path,
    });
  });
  const jobDefs: JobDef[] = [];
  let seq = 0;
  (jv.value ?? []).forEach((j, i) => {
    const path = ['jobs', i];
    const count = j.count ?? 1;
    for (let k = 0; k < count; k++) {
      const submitMs = (j.submitSec ?? 0) * 1000;
      // File order breaks ties between jobs submitted at the same time.
      const job = toJob(count === 1 ? j.name : `${j.name}-${k}`, j, path, submitMs + seq++ * 1e-3, (j.runtimeSec ?? 3600) * 1000);
      if (job === undefined) return;
      jobDefs.push({ job, submitMs, where: path });
    }
  });

  const expectations = ev.value.map((e, i) => {
    const path = ['expect', i];
    const targets = TARGETS.filter((t) => e[t] !== undefined);
    if (targets.length !== 1) at(path, `give exactly one of ${TARGETS.join(', ')}`);
    const target = targets[0];
    if (target !== undefined) {
      const allowed = new Set<string>([target, ...MODIFIERS[target]]);
      for (const k of Object.keys(e))
        if (!allowed.has(k)) at([...path, k], `does not apply to ${target} (use ${MODIFIERS[target].join(', ') || 'nothing else'})`);
      const name = e[target];
      if (typeof name === 'string' && !ids.has(name)) at([...path, target], `no job named "${name}"`);
      if (e.by !== undefined && !ids.has(e.by)) at([...path, 'by'], `no job named "${e.by}"`);
      if (target === 'shares') for (const q of Object.keys(e.shares ?? {})) if (!queues.has(q)) at([...path, 'shares', q], `unknown queue "${q}"`);
    }
    return { e, target: target ?? 'running', where: issueAt(src, path, '') };
  });
  if (issues.length > 0) return err(new InputError(issues));

  const cycles =
    cv.value === undefined
      ? { count: 1, everySec: 60 }
      : typeof cv.value === 'number'
        ? { count: cv.value, everySec: 60 }
        : { count: cv.value.count, everySec: cv.value.everySec ?? 60 };
  const options: Partial<CycleOptions> = { ...ov.value };
  const allPods = [...runningDefs.flatMap((r) => r.job.gang.members), ...jobDefs.flatMap((j) => j.job.gang.members)];
  const budgetsAt = budgetsFor(bv.value ?? [], [...runningDefs.map((r) => r.job), ...jobDefs.map((j) => j.job)], labelsOf);

  return ok({
    check: () => {
      const made = createSimApp({ nodes, profile: profileName, typicalShapes: expectedFromBatch(allPods), rng: seededRng(seed) });
      if (!made.ok) return { failures: [`${src.file}: ${made.error}`], log: [] };
      const app = made.value;
      const { state, scheduler } = app;
      if (storage !== undefined) state.volumes = new VolumeCatalog(storage);
      for (const r of runningPods) {
        const e = placeRunning(state, r);
        if (e !== undefined) return { failures: [`${src.file}: ${e}`], log: [] };
      }
      const running = new Map<string, RunningJob>();
      for (const r of runningDefs) {
        const placed = startRunning(scheduler, state, r);
        const loc = issueAt(src, r.where, '');
        if (typeof placed === 'string') return { failures: [`${loc.file}:${loc.line}: running job ${r.job.id}: ${placed}`], log: [] };
        running.set(r.job.id, placed);
      }
      const trace = simulate(src.file, app, queues, jobDefs, runningDefs, running, cycles, options, budgetsAt);
      const failures = [...trace.failures];
      for (const { e, target, where } of expectations) {
        const m = checkExpectation(e, target as Target, trace, state);
        if (m !== undefined) failures.push(`${where.file}:${where.line}: ${m}`);
      }
      return { failures, log: trace.log };
    },
  });
}

/** `.lendingLimit` → ['lendingLimit']; other forms name the object itself. */
function fieldPath(p: string | undefined): string[] {
  return p !== undefined && /^(\.[A-Za-z]\w*)+$/.test(p) ? p.slice(1).split('.') : [];
}

function startRunning(scheduler: Scheduler, state: ClusterState, r: RunningDef): RunningJob | string {
  let podIds: string[];
  if (r.nodes !== undefined) {
    podIds = [];
    for (let k = 0; k < r.nodes.length; k++) {
      const pod = r.job.gang.members[k] as PodSpec;
      const e = placeRunning(state, { pod, node: r.nodes[k] as string });
      if (e !== undefined) return e;
      podIds.push(pod.id);
    }
  } else {
    const placed = scheduler.scheduleGang(r.job.gang);
    if (!placed.ok) return placed.explanation.message;
    podIds = placed.placements.map((p) => p.podId);
  }
  const model = state.nodeOfPod(podIds[0] ?? '')?.spec.gpus[0]?.model;
  return {
    id: r.job.id,
    queue: r.job.queue,
    priority: r.job.priority,
    startMs: r.startMs,
    estEndMs: r.estEndMs,
    podIds,
    resources: jobResources(r.job),
    ...(model === undefined ? {} : { gpuModel: model }),
    ...(r.criticalUntilMs === undefined ? {} : { criticalUntilMs: r.criticalUntilMs }),
    ...(r.lastCheckpointMs === undefined ? {} : { lastCheckpointMs: r.lastCheckpointMs }),
    preemptible: r.preemptible,
    ...(r.checkpointable === undefined ? {} : { checkpointable: r.checkpointable }),
    ...(r.checkpointInFlight === undefined ? {} : { checkpointInFlight: r.checkpointInFlight }),
  };
}

interface Trace {
  readonly failures: string[];
  readonly log: string[];
  /** First start of each job: time and placements. */
  readonly started: Map<string, { atMs: number; placements: readonly Placement[] }>;
  readonly preempted: { victim: string; by: string; reason: string; atMs: number }[];
  readonly deferred: Map<string, { by: string; untilMs: number }>;
  readonly checkpointRequests: { victim: string; by: string; atMs: number }[];
  readonly migrations: { moved: string; by: string; atMs: number; nodes: readonly string[] }[];
  /** Latest reason each job waited for (dropped when it starts). */
  readonly waiting: Map<string, Waiting>;
  /** Why each job waited, cycle by cycle (time → reason). */
  readonly waitingAt: Map<string, Map<number, Waiting>>;
  /** Reservations of each job, cycle by cycle (time → reservation). */
  readonly reservations: Map<string, Map<number, Reservation>>;
  readonly running: ReadonlyMap<string, RunningJob>;
  /** Per set of waiting queues (sorted names joined by ','), the GPU-time each queue held during such cycles. */
  readonly gpuTime: Map<string, Map<string, number>>;
}

/**
 * The cycles on the simulator's spine: jobs join the scheduling queue when they arrive (or come back after a
 * preemption), running jobs that reached their end leave the cluster (an event that wakes parked jobs), and
 * every `everySec` the spine runs one queue cycle whose commits reach the simulated cluster.
 */
function simulate(
  file: string,
  app: SimApp,
  queues: ReadonlyMap<string, QueueSpec>,
  jobDefs: readonly JobDef[],
  runningDefs: readonly RunningDef[],
  running: Map<string, RunningJob>,
  cycles: { count: number; everySec: number },
  options: Partial<CycleOptions>,
  budgetsAt: (running: ReadonlyMap<string, RunningJob>) => readonly DisruptionBudget[] | undefined,
): Trace {
  const t: Trace = {
    failures: [],
    log: [],
    started: new Map(),
    preempted: [],
    deferred: new Map(),
    checkpointRequests: [],
    migrations: [],
    waiting: new Map(),
    waitingAt: new Map(),
    reservations: new Map(),
    running,
    gpuTime: new Map(),
  };
  const fail = (m: string): void => {
    if (!t.failures.includes(`${file}: ${m}`)) t.failures.push(`${file}: ${m}`);
  };
  const template = new Map<string, QueuedJob>([...runningDefs.map((r) => [r.job.id, r.job] as const), ...jobDefs.map((j) => [j.job.id, j.job] as const)]);
  const { scheduler, state, queue } = app;
  const pending = new Map<string, QueuedJob>();
  const enqueue = (j: QueuedJob, now: number): void => {
    pending.set(j.id, j);
    queue.add(j, now);
    queue.onEvent({ kind: 'arrived', queue: j.queue }, now);
  };
  const arrivals = [...jobDefs].sort((a, b) => a.submitMs - b.submitMs);
  let next = 0;
  const everyMs = cycles.everySec * 1000;
  const sec = (ms: number): string => `${Math.round(ms / 100) / 10}s`;
  let lastLine = '';
  // Requested checkpoints that will commit: victim → commit time.
  const commits = new Map<string, number>();
  const checkpointable = new Set(runningDefs.filter((r) => r.checkpointable === true).map((r) => r.job.id));
  const commitAfter = new Map(runningDefs.filter((r) => r.checkpointAfterMs !== undefined).map((r) => [r.job.id, r.checkpointAfterMs as number]));
  for (let c = 0; c < cycles.count; c++) {
    const now = c * everyMs;
    for (const [id, atMs] of commits) {
      const r = running.get(id);
      if (atMs > now || r === undefined) continue;
      commits.delete(id);
      running.set(id, { ...r, lastCheckpointMs: atMs });
      t.log.push(`t=${sec(now)} ${id} committed the checkpoint asked of it (at ${sec(atMs)})`);
    }
    const finished: string[] = [];
    for (const [id, r] of running) {
      if (r.estEndMs > now) continue;
      app.end(r.podIds);
      running.delete(id);
      finished.push(id);
    }
    if (finished.length > 0) {
      t.log.push(`t=${sec(now)} finished: ${names(finished)}`);
      queue.onEvent({ kind: 'freed' }, now);
    }
    while (next < arrivals.length && (arrivals[next] as JobDef).submitMs <= now) {
      const j = (arrivals[next++] as JobDef).job;
      enqueue(j, now);
    }
    const budgets = budgetsAt(running);
    const res = app.spine.cycle({ nowMs: now, scheduler, queues, running, options, ...(budgets === undefined ? {} : { disruptionBudgets: budgets }) });
    for (const p of res.preempted) {
      const v = p.victim;
      const left = v.podIds.filter((pod) => state.allocation(pod) !== undefined);
      if (left.length > 0) fail(`t=${sec(now)}: ${v.id} preempted in part: ${left.join(', ')} still allocated`);
      if ((v.criticalUntilMs ?? -Infinity) > now) fail(`t=${sec(now)}: ${v.id} preempted in its critical phase (until ${sec(v.criticalUntilMs as number)})`);
      if (options.checkpointAware === true && v.checkpointInFlight === true && v.checkpointRequestedMs === undefined)
        fail(`t=${sec(now)}: ${v.id} preempted while writing a checkpoint`);
      if (options.checkpointAware === true && v.checkpointable === true && v.checkpointRequestedMs === undefined)
        fail(`t=${sec(now)}: ${v.id} can checkpoint but was preempted without being asked for one`);
      running.delete(v.id);
      t.preempted.push({ victim: v.id, by: p.by, reason: p.reason, atMs: now });
      t.log.push(`t=${sec(now)} ${v.id} preempted: ${p.reason}`);
      // Back to its queue with the work since its last checkpoint to do again.
      const tmpl = template.get(v.id) as QueuedJob;
      const redo = now - Math.max(v.startMs, v.lastCheckpointMs ?? v.startMs);
      enqueue({ ...tmpl, estRuntimeMs: Math.max(1000, v.estEndMs - now + redo) }, now);
    }
    for (const q of res.checkpointRequests) {
      const r = running.get(q.victim.id);
      if (r === undefined) continue;
      running.set(r.id, { ...r, checkpointRequestedMs: now });
      const after = commitAfter.get(r.id);
      if (after !== undefined) commits.set(r.id, now + after);
      t.checkpointRequests.push({ victim: r.id, by: q.by, atMs: now });
      t.log.push(`t=${sec(now)} checkpoint asked of ${r.id} for ${q.by} (evicted by ${sec(q.deadlineMs)} at the latest)`);
    }
    for (const d of res.deferred) {
      t.deferred.set(d.victim.id, { by: d.by, untilMs: d.atMs });
      t.log.push(`t=${sec(now)} preemption of ${d.victim.id} for ${d.by} deferred to ${sec(d.atMs)} (critical phase)`);
    }
    for (const s of res.started) {
      const job = s.job;
      if (new Set(s.placements.map((p) => p.podId)).size !== job.gang.members.length)
        fail(`t=${sec(now)}: ${job.id} started with ${s.placements.length} of ${job.gang.members.length} members`);
      pending.delete(job.id);
      t.waiting.delete(job.id);
      if (!t.started.has(job.id)) t.started.set(job.id, { atMs: now, placements: s.placements });
      const model = state.node(s.placements[0]?.node ?? '')?.spec.gpus[0]?.model;
      running.set(job.id, {
        id: job.id,
        queue: job.queue,
        priority: job.priority,
        startMs: now,
        estEndMs: now + job.estRuntimeMs,
        podIds: s.placements.map((p) => p.podId),
        resources: jobResources(job),
        ...(model === undefined ? {} : { gpuModel: model }),
        preemptible: true,
        ...(checkpointable.has(job.id) ? { checkpointable: true } : {}),
      });
    }
    if (res.started.length > 0)
      t.log.push(`t=${sec(now)} started: ${names(res.started.map((s) => `${s.job.id} (${[...new Set(s.placements.map((p) => p.node))].join(',')})`))}`);
    for (const [id, w] of res.waiting) {
      if (!pending.has(id)) continue;
      t.waiting.set(id, w);
      const m = t.waitingAt.get(id) ?? new Map<number, Waiting>();
      t.waitingAt.set(id, m.set(now, w));
    }
    // Defragmentation by migration (ADR 0095): a gang of a queue that allows it, waiting on capacity, gets the
    // moves that free a domain for it when they pay; the moved jobs keep running elsewhere, later by their pause.
    for (const [id, w] of res.waiting) {
      const job = pending.get(id);
      if (job === undefined || w.reason !== 'capacity' || queues.get(job.queue)?.preemption?.defragmentByMigration !== true) continue;
      const movable = [...running.values()]
        .filter((r) => r.preemptible && r.checkpointable === true && (r.criticalUntilMs ?? -Infinity) <= now)
        .map((r) => ({ job: r, gang: (template.get(r.id) as QueuedJob).gang }));
      const expected = expectedStartMs(scheduler, job.gang, [...running.values()], now);
      const plan = planMigration({ nowMs: now, scheduler, job, movable, expectedStartMs: expected });
      if (plan === undefined) continue;
      const placements = commitMigration(scheduler, plan);
      for (const m of plan.moves) {
        const r = running.get(m.job.id) as RunningJob;
        const lost = r.podIds.filter((pod) => state.allocation(pod) === undefined);
        if (lost.length > 0) fail(`t=${sec(now)}: ${r.id} moved in part: ${lost.join(', ')} not placed again`);
        running.set(r.id, { ...r, estEndMs: r.estEndMs + m.pauseMs, lastCheckpointMs: now });
        const to = [...new Set(m.to.map((a) => a.node))].sort();
        t.migrations.push({ moved: r.id, by: id, atMs: now, nodes: to });
        t.log.push(`t=${sec(now)} ${r.id} moved to ${to.join(',')} (checkpoint, restore: ${sec(m.pauseMs)}) to free ${plan.level} ${plan.domain} for ${id}`);
      }
      pending.delete(id);
      queue.delete(id);
      t.waiting.delete(id);
      if (!t.started.has(id)) t.started.set(id, { atMs: now, placements });
      const model = state.node(placements[0]?.node ?? '')?.spec.gpus[0]?.model;
      running.set(id, {
        id,
        queue: job.queue,
        priority: job.priority,
        startMs: plan.startMs,
        estEndMs: plan.startMs + job.estRuntimeMs,
        podIds: placements.map((p) => p.podId),
        resources: jobResources(job),
        ...(model === undefined ? {} : { gpuModel: model }),
        preemptible: true,
      });
      t.log.push(
        `t=${sec(now)} started: ${id} (${[...new Set(placements.map((p) => p.node))].join(',')}) once the moved jobs have checkpointed (at ${sec(plan.startMs)}; gain ${Math.round(plan.gainGpuMs / 3.6e6)} GPU-h > cost ${Math.round((100 * plan.costGpuMs) / 3.6e6) / 100} GPU-h)`,
      );
    }
    for (const r of res.reservations) t.reservations.set(r.jobId, (t.reservations.get(r.jobId) ?? new Map<number, Reservation>()).set(now, r));
    // Quota: no queue above nominal, or above nominal + borrowing limit in a cohort.
    for (const [name, u] of usageOf(running.values())) {
      const q = queues.get(name);
      if (q === undefined) continue;
      const ceiling = q.nominal.gpuMilli + (q.cohort === undefined ? 0 : q.borrowingLimit.gpuMilli);
      if (u.total.gpuMilli > ceiling) fail(`t=${sec(now)}: queue ${name} uses ${u.total.gpuMilli / 1000} GPUs, above its quota ${ceiling / 1000}`);
    }
    const use = usageOf(running.values());
    // Without Queue objects every job is in its undeclared queue (`default` unless named).
    const shown = queues.size > 0 ? [...queues.keys()] : [...new Set([...use.keys(), DEFAULT_QUEUE])].sort();
    const line = `GPUs in use: ${shown.map((q) => `${q} ${(use.get(q)?.total.gpuMilli ?? 0) / 1000}`).join(', ')}; ${pending.size} jobs waiting`;
    if (line !== lastLine) t.log.push(`t=${sec(now)} ${line}`);
    lastLine = line;
    // Shares: GPU-time per queue until the next cycle, filed under the set of queues that have jobs waiting.
    const key = [...new Set([...pending.values()].map((j) => j.queue))].sort().join(',');
    const times = t.gpuTime.get(key) ?? new Map<string, number>([['', 0]]);
    times.set('', (times.get('') ?? 0) + everyMs);
    for (const r of running.values()) times.set(r.queue, (times.get(r.queue) ?? 0) + r.resources.gpuMilli * everyMs);
    t.gpuTime.set(key, times);
  }
  const held = [...t.waiting].filter(([id]) => pending.has(id));
  for (const [id, w] of held.slice(0, 20)) t.log.push(`end: ${id} held (${w.reason}): ${w.message}`);
  if (held.length > 20) t.log.push(`end: ... and ${held.length - 20} more held`);
  return t;
}

/**
 * The scenario's budgets over the running jobs' pods, as the disruption controller counts them: expected =
 * the pods of every job whose labels match (running or waiting: the controllers' scale), healthy = those
 * running now. Undefined without budgets (the cycle then works as it always did).
 */
function budgetsFor(
  defs: readonly Static<typeof ScenarioBudgetT>[],
  jobs: readonly QueuedJob[],
  labelsOf: ReadonlyMap<string, Readonly<Record<string, string>>>,
): (running: ReadonlyMap<string, RunningJob>) => readonly DisruptionBudget[] | undefined {
  if (defs.length === 0) return () => undefined;
  const selected = defs.map((d) => jobs.filter((j) => matchesSelector(d.selector, labelsOf.get(j.id) ?? {})));
  return (running) =>
    defs.map((d, i) => {
      const js = selected[i] as QueuedJob[];
      const expected = js.reduce((n, j) => n + j.gang.members.length, 0);
      const podIds = new Set(js.flatMap((j) => running.get(j.id)?.podIds ?? []));
      return {
        name: d.name,
        podIds,
        disruptionsAllowed: disruptionsAllowed(
          {
            ...(d.minAvailable === undefined ? {} : { minAvailable: d.minAvailable }),
            ...(d.maxUnavailable === undefined ? {} : { maxUnavailable: d.maxUnavailable }),
          },
          expected,
          podIds.size,
        ),
      };
    });
}

/** A list for the log: the first ten names and how many more. */
function names(ids: readonly string[]): string {
  return ids.length <= 10 ? ids.join(', ') : `${ids.slice(0, 10).join(', ')} and ${ids.length - 10} more`;
}

function checkExpectation(e: QueueExpect, target: Target, t: Trace, state: ClusterState): string | undefined {
  const heldText = (id: string): string => {
    const w = t.waiting.get(id);
    return w === undefined ? (t.started.has(id) ? 'it ran and finished' : 'never considered') : `held (${w.reason}): ${w.message}`;
  };
  const sec = (ms: number): number => Math.round(ms) / 1000;
  switch (target) {
    case 'admitted': {
      const id = e.admitted as string;
      const s = t.started.get(id);
      if (s === undefined) return `expected ${id} to be admitted; ${heldText(id)}`;
      if (e.atSec !== undefined && sec(s.atMs) !== e.atSec) return `${id} admitted at ${sec(s.atMs)} s, expected at ${e.atSec} s`;
      const nodes = [...new Set(s.placements.map((p) => p.node))].sort();
      if (e.nodes !== undefined && JSON.stringify(nodes) !== JSON.stringify([...e.nodes].sort()))
        return `${id} on nodes ${nodes.join(',')}, expected ${[...e.nodes].sort().join(',')}`;
      if (e.nodeCount !== undefined && nodes.length !== e.nodeCount) return `${id} on ${nodes.length} nodes (${nodes.join(',')}), expected ${e.nodeCount}`;
      if (e.sameRack === true && new Set(nodes.map((n) => state.node(n)?.spec.location.rack)).size !== 1) return `${id} spans racks`;
      return undefined;
    }
    case 'held': {
      const id = e.held as string;
      const s = t.started.get(id);
      let w: Waiting | undefined;
      if (e.atSec !== undefined) {
        w = t.waitingAt.get(id)?.get(e.atSec * 1000);
        if (w === undefined)
          return `expected ${id} to be held at ${e.atSec} s; ${s !== undefined && s.atMs <= e.atSec * 1000 ? `it was admitted at ${sec(s.atMs)} s` : 'no cycle held it then'}`;
      } else {
        if (t.running.has(id)) return `expected ${id} to be held, but it was admitted at ${sec(s?.atMs ?? 0)} s`;
        w = t.waiting.get(id);
        if (w === undefined)
          return `expected ${id} to be held with a reason; ${s === undefined ? 'it was never considered' : `it was admitted at ${sec(s.atMs)} s and finished`}`;
      }
      if (e.reason !== undefined && w.reason !== e.reason) return `${id} held for ${w.reason} (${w.message}), expected ${e.reason}`;
      if (e.message !== undefined && w.message !== e.message) return `${id}: message\n    "${w.message}"\n  expected\n    "${e.message}"`;
      for (const c of e.messageContains ?? []) if (!w.message.includes(c)) return `${id}: message "${w.message}" does not contain "${c}"`;
      return undefined;
    }
    case 'preempted': {
      const id = e.preempted as string;
      const ps = t.preempted.filter((p) => p.victim === id);
      if (ps.length === 0) return `expected ${id} to be preempted; it was not (victims: ${t.preempted.map((p) => p.victim).join(', ') || 'none'})`;
      const p = ps.find((x) => (e.by === undefined || x.by === e.by) && (e.atSec === undefined || sec(x.atMs) === e.atSec));
      if (p === undefined)
        return `${id} preempted by ${ps.map((x) => `${x.by} at ${sec(x.atMs)} s`).join(', ')}, expected${e.by === undefined ? '' : ` by ${e.by}`}${e.atSec === undefined ? '' : ` at ${e.atSec} s`}`;
      for (const c of e.messageContains ?? []) if (!p.reason.includes(c)) return `${id}: preemption reason "${p.reason}" does not contain "${c}"`;
      return undefined;
    }
    case 'running': {
      const id = e.running as string;
      if (t.running.has(id)) return undefined;
      const p = t.preempted.find((x) => x.victim === id);
      return p !== undefined
        ? `expected ${id} to be running; it was preempted at ${sec(p.atMs)} s by ${p.by}`
        : `expected ${id} to be running; ${t.started.has(id) ? 'it finished' : heldText(id)}`;
    }
    case 'deferred': {
      const id = e.deferred as string;
      const d = t.deferred.get(id);
      if (d === undefined) return `expected the preemption of ${id} to be deferred; it was not`;
      if (e.by !== undefined && d.by !== e.by) return `preemption of ${id} deferred for ${d.by}, expected for ${e.by}`;
      if (e.untilSec !== undefined && sec(d.untilMs) !== e.untilSec) return `preemption of ${id} deferred until ${sec(d.untilMs)} s, expected ${e.untilSec} s`;
      return undefined;
    }
    case 'checkpointRequested': {
      const id = e.checkpointRequested as string;
      const qs = t.checkpointRequests.filter((x) => x.victim === id);
      if (qs.length === 0)
        return `expected a checkpoint to be asked of ${id}; none was (asked of: ${t.checkpointRequests.map((x) => x.victim).join(', ') || 'none'})`;
      if (qs.some((x) => (e.by === undefined || x.by === e.by) && (e.atSec === undefined || sec(x.atMs) === e.atSec))) return undefined;
      return `checkpoint asked of ${id} for ${qs.map((x) => `${x.by} at ${sec(x.atMs)} s`).join(', ')}, expected${e.by === undefined ? '' : ` for ${e.by}`}${e.atSec === undefined ? '' : ` at ${e.atSec} s`}`;
    }
    case 'migrated': {
      const id = e.migrated as string;
      const ms = t.migrations.filter((x) => x.moved === id);
      if (ms.length === 0) return `expected ${id} to be moved; it was not (moved: ${t.migrations.map((x) => x.moved).join(', ') || 'none'})`;
      const m = ms.find((x) => (e.by === undefined || x.by === e.by) && (e.atSec === undefined || sec(x.atMs) === e.atSec));
      if (m === undefined)
        return `${id} moved for ${ms.map((x) => `${x.by} at ${sec(x.atMs)} s`).join(', ')}, expected${e.by === undefined ? '' : ` for ${e.by}`}${e.atSec === undefined ? '' : ` at ${e.atSec} s`}`;
      if (e.nodes !== undefined && JSON.stringify(m.nodes) !== JSON.stringify([...e.nodes].sort()))
        return `${id} moved to ${m.nodes.join(',')}, expected ${[...e.nodes].sort().join(',')}`;
      return undefined;
    }
    case 'reservation': {
      const id = e.reservation as string;
      const all = [...(t.reservations.get(id) ?? [])];
      // At the cycle asked for, else the latest.
      const atSec = e.atSec;
      const found = atSec === undefined ? all[all.length - 1] : all.find(([atMs]) => atMs === atSec * 1000);
      if (found === undefined)
        return `expected a reservation for ${id}${e.atSec === undefined ? '' : ` at ${e.atSec} s`}; ${all.length > 0 ? `it had one at ${all.map(([atMs]) => sec(atMs)).join(', ')} s` : t.started.has(id) ? 'it was admitted' : heldText(id)}`;
      const [atMs, r] = found;
      const msg = t.waitingAt.get(id)?.get(atMs)?.message ?? '';
      if (e.startsAtSec !== undefined && sec(r.startMs) !== e.startsAtSec)
        return `reservation of ${id} starts at ${sec(r.startMs)} s, expected ${e.startsAtSec} s`;
      if (e.nodes !== undefined && JSON.stringify(r.nodes) !== JSON.stringify([...e.nodes].sort()))
        return `reservation of ${id} on ${r.nodes.join(',')}, expected ${[...e.nodes].sort().join(',')}`;
      if (e.nodeCount !== undefined && r.nodes.length !== e.nodeCount) return `reservation of ${id} on ${r.nodes.length} nodes, expected ${e.nodeCount}`;
      for (const c of e.messageContains ?? []) if (!msg.includes(c)) return `${id}: message "${msg}" does not contain "${c}"`;
      return undefined;
    }
    case 'preemptions':
      return t.preempted.length === e.preemptions
        ? undefined
        : `${t.preempted.length} preemptions (${t.preempted.map((p) => p.victim).join(', ')}), expected ${e.preemptions}`;
    case 'maxPreemptions':
      return t.preempted.length <= (e.maxPreemptions as number) ? undefined : `${t.preempted.length} preemptions, expected at most ${e.maxPreemptions}`;
    case 'shares': {
      const want = e.shares as Record<string, number>;
      const qs = Object.keys(want);
      // Over the cycles in which every queue named had jobs waiting (they contended).
      const gpu = new Map<string, number>();
      let contendedMs = 0;
      for (const [key, times] of t.gpuTime) {
        const waitingQueues = key.split(',');
        if (!qs.every((q) => waitingQueues.includes(q))) continue;
        contendedMs += times.get('') ?? 0;
        for (const q of qs) gpu.set(q, (gpu.get(q) ?? 0) + (times.get(q) ?? 0));
      }
      if (contendedMs === 0) return `queues ${qs.join(', ')} never had jobs waiting at the same time: no contention to measure shares over`;
      const wSum = qs.reduce((s, q) => s + (want[q] as number), 0);
      const gSum = qs.reduce((s, q) => s + (gpu.get(q) ?? 0), 0);
      const tol = (e.tolerancePct ?? 10) / 100;
      const got = qs.map((q) => ({ q, want: (want[q] as number) / wSum, got: gSum === 0 ? 0 : (gpu.get(q) ?? 0) / gSum }));
      const bad = got.filter((g) => Math.abs(g.got - g.want) > tol * g.want);
      const show = (x: number): string => `${Math.round(x * 1000) / 10}%`;
      return bad.length === 0
        ? undefined
        : `shares over ${contendedMs / 1000} s of contention: ${got.map((g) => `${g.q} ${show(g.got)} (entitled ${show(g.want)})`).join(', ')}; off by more than ${e.tolerancePct ?? 10}%: ${bad.map((g) => g.q).join(', ')}`;
    }
  }
}
