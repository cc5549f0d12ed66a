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
 * This file loads a scenario; the format is queue-scenario-schema.ts, the run queue-scenario-sim.ts, the
 * expectations queue-scenario-check.ts.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { celChecksOf } from '../api/schema/common.ts';
import { GpuModelQuota, QueueSpec as QueueSpecSchema, ResourceQuota } from '../api/schema/queue.ts';
import { type QueuedJob, type RunningJob } from '../core/actions/jobs.ts';
import { DEFAULT_QUEUE, type CycleOptions } from '../core/actions/queue-cycle.ts';
import { expectedFromBatch } from '../core/estimate/expected-workload.ts';
import type { NodeSpec } from '../core/model/node.ts';
import type { GangSpec, PodSpec } from '../core/model/pod.ts';
import { type TopologyLevel } from '../core/model/topology.ts';
import { seededRng } from '../core/ports.ts';
import type { QueueSpec } from '../core/queue/model.ts';
import { err, ok, type Result } from '../core/result.ts';
import { queueFromObject, type QueueObject } from '../kube/cache/queues.ts';
import { toPod, fieldPath as podFieldPath } from '../formats/workload-file.ts';
import { InputError, issueAt, validateYaml, valueAt, type InputIssue, type YamlSource } from '../formats/yaml-source.ts';
import { placeRunning, type RunningPod } from './schedule-batch.ts';
import { createSimApp } from './sim-app.ts';
import { VolumeCatalog, type StorageObjects } from '../core/snapshot/volume-catalog.ts';
import { checkExpectation } from './queue-scenario-check.ts';
import {
  MODIFIERS,
  QueueExpectT,
  ScenarioBudgetT,
  ScenarioCycleOptionsT,
  ScenarioCyclesT,
  ScenarioJobT,
  ScenarioQueueT,
  ScenarioRunningJobT,
  TARGETS,
  type QueueExpect,
  type Target,
} from './queue-scenario-schema.ts';
import { budgetsFor, simulate, startRunning, type JobDef, type RunningDef } from './queue-scenario-sim.ts';

export interface QueueScenarioRun {
  readonly check: () => { readonly failures: string[]; readonly log: string[] };
}

type At = (path: readonly (string | number)[], msg: string) => void;

/** The scenario's queue sections, each checked against its schema (absent optional ones undefined). */
function validateSections(src: YamlSource) {
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
  return ok({ queues: qv.value, jobs: jv.value, runningJobs: rv.value, cycles: cv.value, options: ov.value, expect: ev.value, budgets: bv.value });
}

/** Queues: the CRD's rules (the TypeScript mirrors of its CEL rules), then the conversion the live scheduler uses. */
function loadQueues(defs: readonly Static<typeof ScenarioQueueT>[], at: At): Map<string, QueueSpec> {
  const queues = new Map<string, QueueSpec>();
  defs.forEach((q, i) => {
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
  return queues;
}

/**
 * Turns scenario jobs into queued jobs (a gang of `replicas` pods), each name (job and pod) claimed once across
 * the scenario, the running pods' included; remembers each job's labels for the disruption budgets.
 */
class JobMaker {
  readonly ids: Set<string>;
  readonly labelsOf = new Map<string, Readonly<Record<string, string>>>();

  constructor(
    private readonly queues: ReadonlyMap<string, QueueSpec>,
    runningPods: readonly RunningPod[],
    private readonly at: At,
  ) {
    this.ids = new Set<string>(runningPods.map((r) => r.pod.id));
  }

  private claim(id: string, path: readonly (string | number)[]): boolean {
    if (this.ids.has(id)) {
      this.at(path, `duplicate name "${id}"`);
      return false;
    }
    this.ids.add(id);
    return true;
  }

  toJob(
    id: string,
    j: Static<typeof ScenarioJobT> | Static<typeof ScenarioRunningJobT>,
    path: readonly (string | number)[],
    arrivalMs: number,
    runtimeMs: number,
  ): QueuedJob | undefined {
    const at = this.at;
    const queue = j.queue ?? DEFAULT_QUEUE;
    if (j.queue !== undefined && !this.queues.has(j.queue)) {
      at([...path, 'queue'], `unknown queue "${j.queue}" (queues: ${[...this.queues.keys()].join(', ')})`);
      return undefined;
    }
    if (j.labels !== undefined) this.labelsOf.set(id, j.labels);
    if (!this.claim(id, [...path, 'name'])) return undefined;
    const members: PodSpec[] = [];
    const replicas = j.replicas ?? 1;
    for (let k = 0; k < replicas; k++) {
      if (!this.claim(`${id}-${k}`, [...path, 'name'])) return undefined;
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
  }
}

function runningDefsOf(defs: readonly Static<typeof ScenarioRunningJobT>[], jobs: JobMaker, at: At): RunningDef[] {
  const runningDefs: RunningDef[] = [];
  defs.forEach((j, i) => {
    const path = ['runningJobs', i];
    const startMs = -(j.sinceSec ?? 3600) * 1000;
    const estEndMs = (j.endsInSec ?? 3600) * 1000;
    const job = jobs.toJob(j.name, j, path, startMs, estEndMs - startMs);
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
  return runningDefs;
}

function jobDefsOf(defs: readonly Static<typeof ScenarioJobT>[], jobs: JobMaker): JobDef[] {
  const jobDefs: JobDef[] = [];
  let seq = 0;
  defs.forEach((j, i) => {
    const path = ['jobs', i];
    const count = j.count ?? 1;
    for (let k = 0; k < count; k++) {
      const submitMs = (j.submitSec ?? 0) * 1000;
      // File order breaks ties between jobs submitted at the same time.
      const job = jobs.toJob(count === 1 ? j.name : `${j.name}-${k}`, j, path, submitMs + seq++ * 1e-3, (j.runtimeSec ?? 3600) * 1000);
      if (job === undefined) return;
      jobDefs.push({ job, submitMs, where: path });
    }
  });
  return jobDefs;
}

/** Each expectation names exactly one target, only that target's modifiers, and jobs and queues that exist. */
function expectationsOf(src: YamlSource, defs: readonly QueueExpect[], ids: ReadonlySet<string>, queues: ReadonlyMap<string, QueueSpec>, at: At) {
  return defs.map((e, i) => {
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
  const at: At = (path, msg) => {
    issues.push(issueAt(src, path, msg));
  };
  const v = validateSections(src);
  if (!v.ok) return v;
  const sections = v.value;
  const queues = loadQueues(sections.queues, at);
  const jobs = new JobMaker(queues, runningPods, at);
  const runningDefs = runningDefsOf(sections.runningJobs ?? [], jobs, at);
  const jobDefs = jobDefsOf(sections.jobs ?? [], jobs);
  const expectations = expectationsOf(src, sections.expect, jobs.ids, queues, at);
  if (issues.length > 0) return err(new InputError(issues));

  const cv = sections.cycles;
  const cycles =
    cv === undefined ? { count: 1, everySec: 60 } : typeof cv === 'number' ? { count: cv, everySec: 60 } : { count: cv.count, everySec: cv.everySec ?? 60 };
  const options: Partial<CycleOptions> = { ...sections.options };
  const allPods = [...runningDefs.flatMap((r) => r.job.gang.members), ...jobDefs.flatMap((j) => j.job.gang.members)];
  const budgetsAt = budgetsFor(sections.budgets ?? [], [...runningDefs.map((r) => r.job), ...jobDefs.map((j) => j.job)], jobs.labelsOf);

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
