import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { lintObjects } from './engine.ts';
import { lintSources } from './lint-files.ts';
import type { KubeObject } from './rule.ts';
import { FIXTURE_CLUSTER, RULES } from './rules/index.ts';
import { parseApiPath } from './rules/crd-schema.ts';
import { isExtendedResource } from './rules/invalid-pod-template.ts';

const parse = (text: string): KubeObject[] => parseAllDocuments(text).map((d) => d.toJS() as KubeObject);
/** `rule path: message` of every finding of the given rules, over every registered rule. */
const hits = (yaml: string, ids: readonly string[]): { rule: string; path: string; message: string }[] =>
  lintObjects(parse(yaml), RULES, { cluster: FIXTURE_CLUSTER })
    .filter((f) => ids.includes(f.rule))
    .map((f) => ({ rule: f.rule, path: f.path.join('/'), message: f.message }));

const TJ = (spec: string): string => `apiVersion: ai.sits2026.dev/v1\nkind: TrainingJob\nmetadata: {name: llama, namespace: ml}\nspec:\n${spec}`;
const POD = (spec: string): string => `apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n${spec}`;

describe('crd-schema: SITS kinds against their CRD schema', () => {
  it('reports the issue\'s TrainingJob (replicas: -8, nvidia.com/gpu: "lots") at each field, with the apiserver\'s path and message', () => {
    const text = TJ('  replicas: -8\n  resources:\n    nvidia.com/gpu: "lots"\n  container: {image: pytorch/pytorch:2.3}\n');
    const h = hits(text, ['crd-schema']);
    expect(h.map((x) => x.path)).toEqual(['spec/replicas', 'spec/resources/nvidia.com/gpu', 'spec/resources/nvidia.com/gpu']);
    expect(h[0]?.message).toBe('spec.replicas: Invalid value: -8: should be greater than or equal to 1');
    expect(h[1]?.message).toMatch(/^spec\.resources\[nvidia\.com\/gpu\]: Invalid value: "lots": should be a non-negative quantity/);
    const located = lintSources([{ file: 'tj.yaml', text, bytes: text.length }], RULES).findings.filter((f) => f.rule === 'crd-schema');
    expect(located.map((f) => `${f.file}:${f.line}:${f.column} ${f.severity} ${f.field}`)).toEqual([
      'tj.yaml:5:3 error spec.replicas',
      'tj.yaml:7:5 error spec.resources.nvidia.com/gpu',
      'tj.yaml:7:5 error spec.resources.nvidia.com/gpu',
    ]);
  });

  it('places an unknown field at itself, a wrong type at its value, a missing field at its parent', () => {
    const h = hits(TJ('  replica: 2\n  gpusPerReplica: two\n  container: {}\n'), ['crd-schema']);
    expect(h).toContainEqual({ rule: 'crd-schema', path: 'spec/replica', message: 'spec.replica: unknown field "spec.replica"' });
    expect(h).toContainEqual({
      rule: 'crd-schema',
      path: 'spec/gpusPerReplica',
      message: 'spec.gpusPerReplica: Invalid value: "two": must be of type integer',
    });
    expect(h).toContainEqual({ rule: 'crd-schema', path: 'spec/container', message: 'spec.container.image: Required value' });
  });

  it("checks every SITS kind and a wrong version of the group, and leaves other groups' kinds of the same name alone", () => {
    expect(hits('apiVersion: ai.sits2026.dev/v1\nkind: Queue\nmetadata: {name: q}\nspec: {weight: -1}\n', ['crd-schema']).map((x) => x.message)).toEqual([
      'spec.tenant: Required value',
      'spec.weight: Invalid value: -1: should be greater than or equal to 1',
    ]);
    expect(hits(TJ('  replicas: 2\n  container: {image: x}\n').replace('/v1', '/v2'), ['crd-schema'])).toEqual([
      { rule: 'crd-schema', path: 'apiVersion', message: 'apiVersion: Unsupported value: "ai.sits2026.dev/v2": supported values: "ai.sits2026.dev/v1"' },
    ]);
    expect(
      hits('apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: m}\nspec: {predictor: {minReplicas: 1}}\n', ['crd-schema']),
    ).toEqual([]);
    expect(hits(TJ('  replicas: 2\n  container: {image: x}\n'), ['crd-schema'])).toEqual([]);
  });

  it('reads apiserver paths into field paths: brackets are indices only in lists', () => {
    const obj = { spec: { stages: [{}, {}, { name: 'x' }], resources: { '0': 1 } } };
    expect(parseApiPath(obj, 'spec.stages[2].name')).toEqual(['spec', 'stages', 2, 'name']);
    expect(parseApiPath(obj, 'spec.resources[0]')).toEqual(['spec', 'resources', '0']);
    expect(parseApiPath(obj, 'spec.resources[nvidia.com/gpu]')).toEqual(['spec', 'resources', 'nvidia.com/gpu']);
    expect(parseApiPath(obj, '')).toEqual([]);
  });
});

describe('invalid-pod-template: pod specs the apiserver rejects', () => {
  it('flags negative and unreadable quantities and fractional extended resources, once per value', () => {
    const h = hits(
      POD(
        '  containers:\n  - name: c\n    image: x\n    resources:\n      limits: {nvidia.com/gpu: -2, memory: lots, amd.com/gpu: 500m, cpu: 500m}\n      requests: {nvidia.com/gpu: "-2"}\n',
      ),
      ['invalid-pod-template', 'gpu-requests-differ-from-limits'],
    );
    expect(h.map((x) => `${x.rule} ${x.path}`)).toEqual([
      'invalid-pod-template spec/containers/0/resources/requests/nvidia.com/gpu',
      'invalid-pod-template spec/containers/0/resources/limits/nvidia.com/gpu',
      'invalid-pod-template spec/containers/0/resources/limits/memory',
      'invalid-pod-template spec/containers/0/resources/limits/amd.com/gpu',
    ]);
    expect(h[1]?.message).toBe(
      'spec.containers[0].resources.limits[nvidia.com/gpu]: -2 is negative (the apiserver rejects it: must be greater than or equal to 0)',
    );
    expect(h[2]?.message).toContain('"lots" is not a quantity');
    expect(h[3]?.message).toContain('must be an integer');
  });

  it('flags structurally wrong pod specs in a Pod, a Deployment, a Job, a StatefulSet and a TrainingJob podTemplate', () => {
    expect(hits(POD('  containers: "notalist"\n'), ['invalid-pod-template']).map((x) => x.message)).toEqual([
      'spec.containers: must be a list, got a string: write containers: [{name: …, image: …}]',
    ]);
    expect(hits(POD('  containers: []\n'), ['invalid-pod-template']).map((x) => x.path)).toEqual(['spec/containers']);
    expect(hits(POD('  restartPolicy: Never\n'), ['invalid-pod-template']).map((x) => x.path)).toEqual(['spec']);
    expect(hits(POD('  containers: [7, {image: x, env: {A: b}}]\n'), ['invalid-pod-template']).map((x) => x.path)).toEqual([
      'spec/containers/0',
      'spec/containers/1',
      'spec/containers/1/env',
    ]);
    expect(
      hits('apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template: {spec: notaspec}\n', ['invalid-pod-template']).map((x) => x.path),
    ).toEqual(['spec/template/spec']);
    expect(
      hits('apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template: {spec: {containers: [{name: c, image: x}], volumes: {a: 1}}}\n', [
        'invalid-pod-template',
      ]).map((x) => x.path),
    ).toEqual(['spec/template/spec/volumes']);
    expect(
      hits('apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  template: {spec: {containers: {name: c}}}\n', ['invalid-pod-template']).map(
        (x) => x.path,
      ),
    ).toEqual(['spec/template/spec/containers']);
    expect(hits(TJ('  replicas: 2\n  podTemplate: {spec: {containers: notalist}}\n'), ['invalid-pod-template']).map((x) => x.path)).toEqual([
      'spec/podTemplate/spec/containers',
    ]);
  });

  it('passes valid pod specs, including SITS typed containers (the CRD schema checks those)', () => {
    expect(
      hits(POD('  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1, cpu: "1.5", memory: 1e3, hugepages-2Mi: 2Mi}}}]\n'), [
        'invalid-pod-template',
      ]),
    ).toEqual([]);
    expect(hits(TJ('  replicas: 2\n  container: {image: x}\n'), ['invalid-pod-template'])).toEqual([]);
    const kserve =
      'apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: m}\nspec:\n  predictor: {model: {modelFormat: {name: sklearn}}}\n';
    expect(hits(kserve, ['invalid-pod-template'])).toEqual([]);
    expect(hits(kserve.replace('model: {modelFormat: {name: sklearn}}', 'containers: notalist'), ['invalid-pod-template']).map((x) => x.path)).toEqual([
      'spec/predictor/containers',
    ]);
  });

  it('knows extended resources: a domain outside kubernetes.io', () => {
    expect(['nvidia.com/gpu', 'amd.com/gpu', 'rdma/ib'].map(isExtendedResource)).toEqual([true, true, true]);
    expect(['cpu', 'memory', 'hugepages-1Gi', 'kubernetes.io/batch-cpu', 'ephemeral-storage'].map(isExtendedResource)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('training-without-shm', () => {
  const DEPLOY = (podSpec: string): string =>
    `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: t}\nspec:\n  replicas: 2\n  template:\n    spec:\n${podSpec}`;
  const TORCHRUN = '      containers:\n      - name: t\n        image: pytorch/pytorch:2.3\n        command: [torchrun, train.py]\n';

  it('warns on a torchrun pod without /dev/shm at the container, with the fix in the message', () => {
    const [h] = hits(DEPLOY(TORCHRUN), ['training-without-shm']);
    expect(h?.path).toBe('spec/template/spec/containers/0');
    expect(h?.message).toBe(
      'container t runs torchrun but mounts nothing at /dev/shm: the runtime\'s default is 64 MiB and DataLoader workers die with "bus error" when it fills; add volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}] and volumeMounts: [{name: dshm, mountPath: /dev/shm}] to the container',
    );
    expect(lintObjects(parse(DEPLOY(TORCHRUN)), RULES).find((f) => f.rule === 'training-without-shm')?.severity).toBe('warning');
  });

  it('warns on a disk-backed emptyDir at /dev/shm, at the mount', () => {
    const h = hits(DEPLOY(`${TORCHRUN}        volumeMounts: [{name: s, mountPath: /dev/shm/}]\n      volumes: [{name: s, emptyDir: {sizeLimit: 1Gi}}]\n`), [
      'training-without-shm',
    ]);
    expect(h.map((x) => x.path)).toEqual(['spec/template/spec/containers/0/volumeMounts/0']);
    expect(h[0]?.message).toContain('set medium: Memory');
  });

  it('is satisfied by a memory emptyDir, a hostPath /dev/shm or hostIPC', () => {
    expect(
      hits(DEPLOY(`${TORCHRUN}        volumeMounts: [{name: s, mountPath: /dev/shm}]\n      volumes: [{name: s, emptyDir: {medium: Memory}}]\n`), [
        'training-without-shm',
      ]),
    ).toEqual([]);
    expect(
      hits(DEPLOY(`${TORCHRUN}        volumeMounts: [{name: s, mountPath: /dev/shm}]\n      volumes: [{name: s, hostPath: {path: /dev/shm}}]\n`), [
        'training-without-shm',
      ]),
    ).toEqual([]);
    expect(hits(DEPLOY(`${TORCHRUN}      hostIPC: true\n`), ['training-without-shm'])).toEqual([]);
  });

  it('triggers on DataLoader workers, a TrainingJob podTemplate with a disk /dev/shm and a PyTorchJob; not on inference, init containers, zero workers or a TrainingJob the controller gives one', () => {
    expect(
      hits(POD('  containers: [{name: c, image: x, env: [{name: DATALOADER_NUM_WORKERS, value: "4"}]}]\n'), ['training-without-shm']).map((x) => x.message),
    ).toEqual([expect.stringContaining('container c starts 4 DataLoader workers (env DATALOADER_NUM_WORKERS)')]);
    expect(hits(POD('  containers: [{name: c, image: x, args: [python, train.py, --num-workers, "0"]}]\n'), ['training-without-shm'])).toEqual([]);
    // A SITS TrainingJob's trainer gets a memory /dev/shm from the controller: only a disk-backed one of its own is flagged.
    expect(
      hits(
        TJ(
          '  replicas: 2\n  podTemplate:\n    spec:\n      initContainers: [{name: fetch, image: x, command: [torchrun]}]\n      containers: [{name: side, image: y}, {name: trainer, image: x}]\n',
        ),
        ['training-without-shm'],
      ),
    ).toEqual([]);
    expect(
      hits(
        TJ(
          '  replicas: 2\n  podTemplate:\n    spec:\n      volumes: [{name: s, emptyDir: {}}]\n      containers: [{name: side, image: y}, {name: trainer, image: x, volumeMounts: [{name: s, mountPath: /dev/shm}]}]\n',
        ),
        ['training-without-shm'],
      ).map((x) => x.path),
    ).toEqual(['spec/podTemplate/spec/containers/1/volumeMounts/0']);
    expect(hits(TJ('  replicas: 2\n  container: {image: x, command: [torchrun, train.py]}\n'), ['training-without-shm'])).toEqual([]);
    expect(
      hits(
        'apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec:\n  pytorchReplicaSpecs:\n    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: x}]}}}\n',
        ['training-without-shm'],
      ).map((x) => x.path),
    ).toEqual(['spec/pytorchReplicaSpecs/Master/template/spec/containers/0']);
    expect(
      hits(POD('  containers: [{name: vllm, image: vllm/vllm-openai:v0.6.0, args: [--tensor-parallel-size, "2"], env: [{name: WORLD_SIZE, value: "2"}]}]\n'), [
        'training-without-shm',
      ]),
    ).toEqual([]);
  });
});
