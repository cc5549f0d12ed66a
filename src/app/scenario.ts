/**
 * Declarative scenarios: a cluster, pods already running, a workload and the placements expected — one
 * YAML file shared by the tests, `sits scenario` and the docs (after KAI's scenario tests). A scenario that
 * lists `queues` runs the queue cycle over `jobs` and `runningJobs` instead (see ./queue-scenario.ts).
 *
 * ```yaml
 * name: gang-takes-whole-island
 * profile: sits
 * cluster: {nodes: [{namePrefix: h100-, count: 3, shape: dgx-h100}]}
 * running: [{name: busy, node: h100-0, gpu: 4}]
 * workload: {gangs: [{name: train, replicas: 8, pod: {gpu: 1}}]}
 * expect:
 *   - {gang: train, nodes: [h100-2]}
 *   - {pending: gang other, messageContains: "insufficient nvidia.com/gpu"}
 * ```
 */
import { Type, type Static } from '@sinclair/typebox';
import { err, ok, type Result } from '../core/result.ts';
import { loadCluster } from '../formats/cluster-file.ts';
import { fieldPath, loadWorkload, PodT, toPod } from '../formats/workload-file.ts';
import { InputError, issueAt, parseYaml, validateYaml, type InputIssue } from '../formats/yaml-source.ts';
import { loadQueueScenario } from './queue-scenario.ts';
import { profileConfig } from '../core/plugins/registry.ts';
import type { SpreadDefaults } from '../core/framework/types.ts';
import type { PodSpec } from '../core/model/pod.ts';
import { defaultSelector, withDefaultSpread } from '../core/plugins/inter-pod-affinity/default-spread.ts';
import type { WorkloadUnit } from '../formats/workload-file.ts';
import { loadStorage } from '../formats/storage-file.ts';
import { scheduleBatch, type BatchResult, type RunningPod } from './schedule-batch.ts';

const ExpectT = Type.Object(
  {
    gang: Type.Optional(Type.String()),
    pod: Type.Optional(Type.String()),
    pending: Type.Optional(Type.String()),
    /** Exact set of nodes used. */
    nodes: Type.Optional(Type.Array(Type.String())),
    node: Type.Optional(Type.String()),
    nodeCount: Type.Optional(Type.Integer({ minimum: 0 })),
    sameRack: Type.Optional(Type.Boolean()),
    notOnNodesMatching: Type.Optional(Type.String()),
    gpus: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }))),
    message: Type.Optional(Type.String()),
    messageContains: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);

const ScenarioT = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    description: Type.Optional(Type.String()),
    profile: Type.Optional(Type.String()),
    seed: Type.Optional(Type.Integer()),
    cluster: Type.Unknown(),
    running: Type.Optional(
      Type.Array(
        Type.Composite(
          [
            Type.Omit(PodT, ['count', 'arrivalSec', 'durationSec']),
            Type.Object({ node: Type.String(), gpuIndices: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }))) }),
          ],
          { additionalProperties: false },
        ),
      ),
    ),
    workload: Type.Optional(Type.Unknown()),
    /**
     * Services that select workload pods: a pod without spread constraints that one selects gets the profile's
     * default spread constraints with their selector (kube's PodTopologySpread defaulting, ADR 0077).
     */
    services: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ minLength: 1 }),
            namespace: Type.Optional(Type.String({ minLength: 1 })),
            selector: Type.Record(Type.String({ minLength: 1 }), Type.String()),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    /** Queue scenarios (validated in ./queue-scenario.ts). */
    queues: Type.Optional(Type.Unknown()),
    jobs: Type.Optional(Type.Unknown()),
    runningJobs: Type.Optional(Type.Unknown()),
    cycles: Type.Optional(Type.Unknown()),
    options: Type.Optional(Type.Unknown()),
    disruptionBudgets: Type.Optional(Type.Unknown()),
    /** StorageClasses, PersistentVolumes and claims the workload's volumes use (formats/storage-file.ts). */
    storage: Type.Optional(Type.Unknown()),
    expect: Type.Array(Type.Unknown()),
  },
  { additionalProperties: false },
);
type Expectation = Static<typeof ExpectT>;

export interface ScenarioOutcome {
  /** The batch's placements (placement scenarios). */
  readonly result: BatchResult | undefined;
  /** What happened, cycle by cycle (queue scenarios). */
  readonly log: readonly string[];
  /** Failed expectations and broken invariants as `file:line: text` (empty = all met). */
  readonly failures: string[];
}

export interface Scenario {
  readonly file: string;
  readonly name: string;
  readonly description: string;
  readonly kind: 'placement' | 'queues';
  readonly check: () => ScenarioOutcome;
}

export function loadScenarioText(file: string, text: string): Result<Scenario, InputError> {
  const src = parseYaml(file, text);
  if (!src.ok) return src;
  const v = validateYaml(src.value, ScenarioT);
  if (!v.ok) return v;
  const nodes = loadCluster(src.value, ['cluster']);
  if (!nodes.ok) return nodes;
  const issues: InputIssue[] = [];
  const running: RunningPod[] = [];
  (v.value.running ?? []).forEach((r, i) => {
    const pod = toPod(r.name ?? `running-${i}`, r, {}, (f, m) => issues.push(issueAt(src.value, ['running', i, ...fieldPath(f)], m)));
    if (pod !== undefined) running.push({ pod, node: r.node, ...(r.gpuIndices === undefined ? {} : { gpus: r.gpuIndices }) });
  });
  const profile = v.value.profile ?? 'sits';
  const seed = v.value.seed ?? 1;
  const base = { file, name: v.value.name, description: v.value.description ?? '' };
  if (v.value.queues !== undefined) {
    if (v.value.workload !== undefined) issues.push(issueAt(src.value, ['workload'], 'a scenario with queues lists its pending work under jobs'));
    const qStorage = v.value.storage === undefined ? undefined : loadStorage(src.value, ['storage']);
    if (qStorage !== undefined && !qStorage.ok) return qStorage;
    if (issues.length > 0) return err(new InputError(issues));
    const q = loadQueueScenario(src.value, nodes.value, running, profile, seed, qStorage?.value);
    if (!q.ok) return q;
    return ok({ ...base, kind: 'queues', check: () => ({ result: undefined, ...q.value.check() }) });
  }
  for (const k of ['jobs', 'runningJobs', 'cycles', 'options', 'disruptionBudgets'] as const)
    if (v.value[k] !== undefined) issues.push(issueAt(src.value, [k], 'only scenarios with queues use this field'));
  if (v.value.workload === undefined) issues.push(issueAt(src.value, [], 'give a workload (or queues and jobs)'));
  if (issues.length > 0) return err(new InputError(issues));
  const loaded = loadWorkload(src.value, ['workload']);
  if (!loaded.ok) return loaded;
  const units = { ok: true as const, value: withServices(loaded.value, v.value.services ?? [], profileConfig(profile)?.spreadDefaults) };
  const storage = v.value.storage === undefined ? undefined : loadStorage(src.value, ['storage']);
  if (storage !== undefined && !storage.ok) return storage;
  const ev = validateYaml(src.value, Type.Array(ExpectT), ['expect']);
  if (!ev.ok) return ev;
  const expectations = ev.value.map((e, i) => {
    const targets = [e.gang, e.pod, e.pending].filter((x) => x !== undefined).length;
    if (targets !== 1) issues.push(issueAt(src.value, ['expect', i], 'give exactly one of gang, pod, pending'));
    return { expect: e, where: issueAt(src.value, ['expect', i], '') };
  });
  if (issues.length > 0) return err(new InputError(issues));
  return ok({
    ...base,
    kind: 'placement',
    check: () => checkPlacements(file, () => scheduleBatch(nodes.value, units.value, profile, seed, running, storage?.value), expectations),
  });
}

/** Runs a scenario; returns the failed expectations as readable lines (empty = all met). */
export function checkScenario(s: Scenario): ScenarioOutcome {
  return s.check();
}

function checkPlacements(
  file: string,
  run: () => Result<BatchResult, string>,
  expectations: readonly { readonly expect: Expectation; readonly where: InputIssue }[],
): ScenarioOutcome {
  const r = run();
  if (!r.ok) return { result: undefined, log: [], failures: [`${file}: ${r.error}`] };
  const failures: string[] = [];
  for (const { expect: e, where } of expectations) {
    const loc = `${where.file}:${where.line}`;
    const fail = (m: string): void => {
      failures.push(`${loc}: ${m}`);
    };
    if (e.pending !== undefined) {
      const p = r.value.pending.find((x) => x.subject === e.pending);
      if (p === undefined) {
        fail(`expected ${e.pending} to be pending, but it was placed`);
        continue;
      }
      if (e.message !== undefined && p.explanation !== e.message) fail(`${e.pending}: explanation\n    "${p.explanation}"\n  expected\n    "${e.message}"`);
      for (const c of e.messageContains ?? []) if (!p.explanation.includes(c)) fail(`${e.pending}: explanation "${p.explanation}" does not contain "${c}"`);
      if (e.pending.startsWith('gang ')) {
        const g = e.pending.slice(5);
        const bound = r.value.placements.filter((x) => x.gang === g);
        if (bound.length > 0) fail(`${e.pending} is pending but ${bound.length} of its pods were placed`);
      }
      continue;
    }
    const placements = e.gang !== undefined ? r.value.placements.filter((x) => x.gang === e.gang) : r.value.placements.filter((x) => x.podId === e.pod);
    const what = e.gang !== undefined ? `gang ${e.gang}` : `pod ${e.pod ?? ''}`;
    if (placements.length === 0) {
      const why = r.value.pending.find((x) => x.subject === what)?.explanation ?? 'not in the workload';
      fail(`expected ${what} to be placed; pending: ${why}`);
      continue;
    }
    const nodes = [...new Set(placements.map((p) => p.node))].sort();
    if (e.nodes !== undefined && JSON.stringify(nodes) !== JSON.stringify([...e.nodes].sort()))
      fail(`${what} on nodes ${nodes.join(',')}, expected ${[...e.nodes].sort().join(',')}`);
    if (e.node !== undefined && (nodes.length !== 1 || nodes[0] !== e.node)) fail(`${what} on ${nodes.join(',')}, expected ${e.node}`);
    if (e.nodeCount !== undefined && nodes.length !== e.nodeCount) fail(`${what} on ${nodes.length} nodes (${nodes.join(',')}), expected ${e.nodeCount}`);
    if (e.notOnNodesMatching !== undefined) {
      const re = new RegExp(e.notOnNodesMatching);
      const bad = nodes.filter((n) => re.test(n));
      if (bad.length > 0) fail(`${what} landed on ${bad.join(',')}, which match /${e.notOnNodesMatching}/`);
    }
    if (e.gpus !== undefined) {
      const gpus = placements.flatMap((p) => p.gpus);
      if (JSON.stringify(gpus) !== JSON.stringify(e.gpus)) fail(`${what} got GPUs [${gpus.join(',')}], expected [${e.gpus.join(',')}]`);
    }
    if (e.sameRack === true) {
      const racks = new Set(nodes.map((n) => rackOf(r.value, n)));
      if (racks.size !== 1) fail(`${what} spans racks ${[...racks].join(',')}`);
    }
  }
  return { result: r.value, log: [], failures };
}

function rackOf(r: BatchResult, node: string): string {
  return r.racks[node] ?? '?';
}

/** The workload with the profile's default spread constraints on the pods the scenario's Services select. */
function withServices(
  units: readonly WorkloadUnit[],
  services: readonly { readonly namespace?: string; readonly selector: Readonly<Record<string, string>> }[],
  defaults: SpreadDefaults | undefined,
): WorkloadUnit[] {
  if (services.length === 0) return [...units];
  const svc = services.map((s) => ({ namespace: s.namespace ?? 'default', selector: s.selector }));
  const apply = (p: PodSpec): PodSpec =>
    withDefaultSpread(p, defaults, defaultSelector({ namespace: p.namespace ?? 'default', ...(p.labels === undefined ? {} : { labels: p.labels }) }, svc));
  return units.map((u) => (u.kind === 'pod' ? { ...u, pod: apply(u.pod) } : { ...u, gang: { ...u.gang, members: u.gang.members.map(apply) } }));
}
