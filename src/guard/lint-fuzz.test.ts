// Fuzzing `sits lint` (issue 16, Bad input): generated objects — random JSON-ish values, deep nesting, wrong
// types in pod specs, huge strings — through the engine with the registered rules and through the text path
// (stringify → parse → lint → format). Zero crashes, zero failing rules, every finding at a real position.
// Seeded, so a failure reproduces; sizes keep the run to a few seconds.
import fc from 'fast-check';
import { dump } from 'js-yaml';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { lintObjects } from './engine.ts';
import { formatJson, formatSarif, formatText } from './format.ts';
import { INPUT_RULES, lintSources } from './lint-files.ts';
import { DISABLE_ANNOTATION, type KubeObject, type Rule, type RuleHit } from './rule.ts';
import { RULES } from './rules/index.ts';
import { turnEventLoop } from '../testing/timeouts.ts';

type Obj = Record<string, unknown>;

/** A test rule that walks pod specs the way real rules do, trusting nothing: garbage must give hits or nothing. */
const walksPodSpecs: Rule = {
  id: 'fuzz-walker',
  severity: 'warning',
  seed: 'test',
  title: 'walks pod specs',
  rationale: '',
  kinds: ['Pod', 'Deployment', 'StatefulSet', 'Job', 'TrainingJob'],
  fixtures: { bad: '', good: '' },
  check(o: KubeObject) {
    const spec = o.spec as Obj | undefined;
    const tpl = (spec?.template as Obj | undefined)?.spec ?? (spec?.podTemplate as Obj | undefined)?.spec ?? spec;
    const at = o.kind === 'Pod' ? ['spec'] : spec?.template !== undefined ? ['spec', 'template', 'spec'] : ['spec', 'podTemplate', 'spec'];
    if (tpl === null || typeof tpl !== 'object') return [];
    const cs = (tpl as Obj).containers;
    if (!Array.isArray(cs)) return [{ message: 'containers is not a list', path: [...at, 'containers'] }];
    const hits: RuleHit[] = [];
    cs.forEach((c: unknown, i) => {
      const env = c !== null && typeof c === 'object' ? (c as Obj).env : undefined;
      if (Array.isArray(env)) env.forEach((e: unknown, j) => hits.push({ message: 'env', path: [...at, 'containers', i, 'env', j, 'value'] }));
    });
    return hits;
  },
};
const FUZZ_RULES = [...RULES, walksPodSpecs];
const CLUSTER = { schedulerNames: ['sits-scheduler', 'other'], gpuModels: ['NVIDIA-H100-80GB-HBM3', 'NVIDIA-L4'], rdma: true };

const KINDS = [
  ...new Set([
    ...RULES.flatMap((r) => r.kinds),
    'Pod',
    'Deployment',
    'StatefulSet',
    'ReplicaSet',
    'Job',
    'Service',
    'PriorityClass',
    'HorizontalPodAutoscaler',
    'ScaledObject',
    'TrainingJob',
    'PodGroup',
    'InferenceService',
    'PyTorchJob',
    'ConfigMap',
    'Unheard',
  ]),
];

const junk = fc.jsonValue({ maxDepth: 2, depthSize: 'xsmall' });
// Huge for a field; the 4 MB string and the 20 MB file have their own tests (lint-files.test.ts).
const huge = fc.constantFrom('x'.repeat(50_000), 'NCCL_'.repeat(4_000), '9'.repeat(5_000));
const str = fc.oneof(
  { weight: 300, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: huge },
  {
    weight: 100,
    arbitrary: fc.constantFrom(
      'nvidia.com/gpu',
      'sits-scheduler',
      'None',
      'torchrun',
      '--num-workers=8',
      'topology.kubernetes.io/zone',
      '0,1',
      '1',
      'PreemptLowerPriority',
    ),
  },
);
const maybe = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | unknown> => fc.oneof({ weight: 5, arbitrary: a }, { weight: 1, arbitrary: junk });

/** Maps and sequences nested 50–300 deep (a real manifest stays below 30), built without recursion. */
const deep = fc.record({ depth: fc.integer({ min: 50, max: 300 }), asList: fc.boolean() }).map(({ depth, asList }) => {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = asList ? [v] : { n: v };
  return v;
});
/** Deep values are costly to print and parse: one object in ~40 carries one, enough for every run to meet some. */
const rareDeep = fc.oneof({ weight: 1, arbitrary: deep }, { weight: 40, arbitrary: junk });

const quantity = fc.oneof(fc.integer({ min: -2, max: 16 }), fc.constantFrom('1', '2', '500m', '4Gi', 'abc', ''), junk);
const resources = fc.record(
  {
    limits: maybe(fc.dictionary(fc.constantFrom('cpu', 'memory', 'nvidia.com/gpu'), quantity)),
    requests: maybe(fc.dictionary(fc.constantFrom('cpu', 'memory', 'nvidia.com/gpu'), quantity)),
  },
  { requiredKeys: [] },
);
const envVar = fc.record(
  {
    name: maybe(fc.constantFrom('CUDA_VISIBLE_DEVICES', 'NCCL_ASYNC_ERROR_HANDLING', 'NCCL_TIMEOUT', 'NCCL_IB_DISABLE', 'NUM_WORKERS', 'X')),
    value: maybe(str),
    valueFrom: junk,
  },
  { requiredKeys: [] },
);
const container = fc.record(
  {
    name: maybe(str),
    image: maybe(str),
    command: maybe(fc.array(str, { maxLength: 6 })),
    args: maybe(fc.array(str, { maxLength: 6 })),
    env: maybe(fc.array(maybe(envVar), { maxLength: 4 })),
    resources: maybe(resources),
    volumeMounts: maybe(fc.array(junk, { maxLength: 2 })),
    ports: junk,
  },
  { requiredKeys: [] },
);
const podSpec = fc.record(
  {
    containers: maybe(fc.array(maybe(container), { maxLength: 3 })),
    initContainers: maybe(fc.array(container, { maxLength: 1 })),
    schedulerName: maybe(str),
    nodeSelector: maybe(fc.dictionary(str, maybe(str), { maxKeys: 2 })),
    volumes: maybe(
      fc.array(fc.record({ name: maybe(str), emptyDir: junk, hostPath: junk, persistentVolumeClaim: junk, nfs: junk }, { requiredKeys: [] }), { maxLength: 3 }),
    ),
    affinity: junk,
    priorityClassName: maybe(str),
    deep: rareDeep,
  },
  { requiredKeys: [] },
);
const metadata = fc.record(
  {
    name: maybe(str),
    namespace: maybe(str),
    labels: maybe(fc.dictionary(str, str, { maxKeys: 3 })),
    annotations: maybe(
      fc.dictionary(fc.oneof(str, fc.constant(DISABLE_ANNOTATION)), maybe(fc.oneof(str, fc.constantFrom('all', 'fuzz-walker'))), { maxKeys: 2 }),
    ),
  },
  { requiredKeys: [] },
);
const spec = fc.oneof(
  fc.record(
    {
      template: maybe(fc.record({ metadata, spec: maybe(podSpec) }, { requiredKeys: [] })),
      replicas: maybe(fc.integer()),
      selector: junk,
      minMember: maybe(fc.integer({ min: -1, max: 64 })),
    },
    { requiredKeys: [] },
  ),
  podSpec,
  fc.record(
    {
      podTemplate: maybe(fc.record({ spec: maybe(podSpec) }, { requiredKeys: [] })),
      replicas: maybe(fc.integer({ min: -1, max: 64 })),
      resources: maybe(resources),
      topology: junk,
    },
    { requiredKeys: [] },
  ),
  fc.record(
    {
      clusterIP: maybe(fc.constantFrom('None', '10.0.0.1', '')),
      type: maybe(str),
      selector: junk,
      ports: maybe(fc.array(junk, { maxLength: 2 })),
      scaleTargetRef: junk,
    },
    { requiredKeys: [] },
  ),
  junk,
  rareDeep,
);
const kubeObject: fc.Arbitrary<Obj> = fc.record(
  {
    apiVersion: maybe(
      fc.constantFrom('v1', 'apps/v1', 'batch/v1', 'ai.sits2026.dev/v1', 'scheduling.k8s.io/v1', 'autoscaling/v2', 'keda.sh/v1alpha1', 'kubeflow.org/v1'),
    ),
    kind: maybe(fc.constantFrom(...KINDS)),
    metadata: maybe(metadata),
    spec,
    value: maybe(fc.integer()),
    preemptionPolicy: maybe(str),
    extra: rareDeep,
  },
  { requiredKeys: ['kind'] },
);
/** Mostly objects; now and then a value that is no object at all. */
const anyObject = fc.oneof({ weight: 12, arbitrary: kubeObject }, { weight: 1, arbitrary: junk });

function countLines(text: string): number[] {
  return text.split('\n').map((l) => l.length);
}

describe('fuzz: lint never crashes on generated objects', () => {
  it('lintObjects with the registered rules: no throw, no failing rule, findings on real objects (10,000+ objects)', () => {
    let objects = 0;
    fc.assert(
      fc.property(fc.array(anyObject, { minLength: 15, maxLength: 20 }), (objs) => {
        objects += objs.length;
        const fs = lintObjects(objs as KubeObject[], FUZZ_RULES, { cluster: CLUSTER });
        for (const f of fs) {
          expect(f.rule).not.toBe('rule-failed');
          expect(objs[f.object]).toBeDefined();
          expect(f.path.every((p) => typeof p === 'string' || (Number.isInteger(p) && p >= 0))).toBe(true);
        }
      }),
      { seed: 16, numRuns: 700 },
    );
    expect(objects).toBeGreaterThanOrEqual(10_000);
  });

  it('the text path (YAML or JSON stream → parse → lint → text, JSON, SARIF): no throw, every finding at a line and column of its input (10,000+ objects)', async () => {
    let objects = 0;
    let findings = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(anyObject, { minLength: 17, maxLength: 20 }), fc.constantFrom('yaml', 'json', 'helm'), async (objs, style) => {
        // A minute of runs under load, one synchronous stretch: the worker's RPC would time out (turnEventLoop).
        await turnEventLoop();
        objects += objs.length;
        // yaml's stringify recurses per level: the deepest values go out as JSON (still valid YAML).
        const text =
          style === 'json'
            ? objs.map((o) => JSON.stringify(o)).join('\n---\n')
            : style === 'helm'
              ? objs.map((o, i) => `---\n# Source: fuzz/templates/t${i}.yaml\n${dumpYaml(o)}`).join('')
              : objs.map(safeYaml).join('---\n');
        const report = lintSources([{ file: 'fuzz.yaml', text, bytes: Buffer.byteLength(text) }], FUZZ_RULES, { cluster: CLUSTER });
        const widths = countLines(text);
        for (const f of report.findings) {
          findings++;
          expect(f.rule).not.toBe('rule-failed');
          expect(f.file).toBe('fuzz.yaml');
          expect(f.line).toBeGreaterThanOrEqual(1);
          expect(f.line).toBeLessThanOrEqual(widths.length);
          expect(f.column).toBeGreaterThanOrEqual(1);
          expect(f.column).toBeLessThanOrEqual((widths[f.line - 1] ?? 0) + 1);
        }
        const info = [...FUZZ_RULES, ...INPUT_RULES];
        expect(formatText(report.findings, report)).toMatch(/\d+ errors?, \d+ warnings? in /);
        expect(Array.isArray(JSON.parse(formatJson(report.findings)))).toBe(true);
        expect(JSON.parse(formatSarif(report.findings, info, { version: '0' })).runs[0].results).toHaveLength(report.findings.length);
      }),
      { seed: 16, numRuns: 600 },
    );
    expect(objects).toBeGreaterThanOrEqual(10_000);
    expect(findings).toBeGreaterThan(1_000);
  });

  it('the fast path places findings exactly as the exact (yaml-only) path on generated streams', () => {
    fc.assert(
      fc.property(fc.array(kubeObject, { minLength: 1, maxLength: 6 }), (objs) => {
        const text = objs.map(safeYaml).join('---\n');
        const source = [{ file: 'f.yaml', text, bytes: text.length }];
        expect(lintSources(source, FUZZ_RULES, { cluster: CLUSTER })).toEqual(lintSources(source, FUZZ_RULES, { cluster: CLUSTER }, { exact: true }));
      }),
      { seed: 16, numRuns: 60 },
    );
  });
});

/** YAML text from the other writer (js-yaml: other quoting and block styles than yaml's). */
function dumpYaml(v: unknown): string {
  try {
    return dump(v, { noRefs: true, lineWidth: -1 });
  } catch {
    return `${JSON.stringify(v)}\n`;
  }
}

/** YAML text of a value; JSON (which is YAML) where yaml's recursive stringify would go too deep. */
function safeYaml(v: unknown): string {
  try {
    return stringify(v, { aliasDuplicateObjects: false, lineWidth: 0 });
  } catch {
    return `${JSON.stringify(v)}\n`;
  }
}
