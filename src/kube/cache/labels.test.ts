import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ANNOTATION } from '../../api/wire.ts';
import { modelFromProduct, nodeFromK8s, podFromK8s } from './labels.ts';

const pod = (annotations: Record<string, string>, gpus = '1'): V1Pod => ({
  metadata: { name: 'p', namespace: 'ml', annotations, labels: { 'ai.sits2026.dev/queue': 'team-a' } },
  spec: { containers: [{ name: 'c', image: 'x', resources: { requests: { cpu: '2', memory: '8Gi', 'nvidia.com/gpu': gpus } } }], priority: 5 },
});

describe('podFromK8s', () => {
  it('reads requests, GPU constraints, queue and priority', () => {
    const r = podFromK8s(pod({ [ANNOTATION.gpuModels]: 'NVIDIA-H100-80GB-HBM3', [ANNOTATION.minComputeCapability]: 'sm_90', [ANNOTATION.gpuMemory]: '40Gi' }));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.request).toMatchObject({ cpuMilli: 2000, memoryMiB: 8192, gpuCount: 1, gpuMilli: 1000, gpuMemoryMiB: 40960 });
    expect(r.value).toMatchObject({ minComputeCapability: 90, priority: 5, queue: 'team-a' });
    expect(r.value.gpuModels.length).toBe(1);
  });

  it('leaves GPU memory unconstrained without the annotation', () => {
    const r = podFromK8s(pod({}));
    expect(r.ok && r.value.request.gpuMemoryMiB).toBeUndefined();
  });

  it.each([
    ['lots', /gpu-memory: "lots" is not a memory quantity/],
    ['0', /gpu-memory: "0" is not a positive memory quantity/],
    ['-4Gi', /gpu-memory: "-4Gi" is not a positive memory quantity/],
  ])('rejects gpu-memory %j naming the pod and the annotation', (value, message) => {
    const r = podFromK8s(pod({ [ANNOTATION.gpuMemory]: value }));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/^pod ml\/p: annotation ai\.sits2026\.dev\//);
    if (!r.ok) expect(r.error).toMatch(message);
  });
});

describe('podFromK8s: the training model a TrainingJob states (ADR 0188)', () => {
  it('reads the annotation into the pod the scheduler sees', () => {
    const r = podFromK8s(pod({ [ANNOTATION.trainingModel]: 'gpt/2652000000/ddp' }));
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.trainingModel).toMatchObject({ params: 2.652e9, parallelism: 'ddp', seqLen: 2048 });
    const none = podFromK8s(pod({}));
    expect(none.ok && none.value.trainingModel).toBeUndefined();
  });

  it('rejects a malformed one naming the pod, the annotation and the part', () => {
    const r = podFromK8s(pod({ [ANNOTATION.trainingModel]: 'gpt/big/ddp' }));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toBe('pod ml/p: annotation ai.sits2026.dev/training-model: parameters "big" is not a number from 1000000 to 10000000000000');
  });
});

describe('resource quantities (one exact parser, rounded as Kubernetes rounds)', () => {
  const withRequests = (requests: Record<string, string>): V1Pod => ({
    metadata: { name: 'p', namespace: 'ml' },
    spec: { containers: [{ name: 'c', image: 'x', resources: { requests } }] },
  });
  const request = (requests: Record<string, string>): unknown => {
    const r = podFromK8s(withRequests(requests));
    return r.ok ? r.value.request : r.error;
  };

  it.each([
    ['.5', 500],
    ['100u', 1],
    ['500m', 500],
    ['1.5', 1500],
    ['1e3', 1_000_000],
    ['2', 2000],
  ])('reads cpu %j as %d milli-CPUs (MilliValue rounds up)', (cpu, milli) => {
    expect(request({ cpu })).toMatchObject({ cpuMilli: milli });
  });

  it.each([
    ['1Ki', 1],
    ['1Mi', 1],
    ['1.5Gi', 1536],
    ['1e3', 1],
    ['8Gi', 8192],
  ])('reads memory %j as %d MiB (rounded up)', (memory, mib) => {
    expect(request({ memory })).toMatchObject({ memoryMiB: mib });
  });

  it('reads whole GPU counts in any integer spelling', () => {
    expect(request({ 'nvidia.com/gpu': '2' })).toMatchObject({ gpuCount: 2, gpuMilli: 1000 });
    expect(request({ 'nvidia.com/gpu': '2000m' })).toMatchObject({ gpuCount: 2 });
    expect(request({ 'nvidia.com/gpu': '1e1' })).toMatchObject({ gpuCount: 10 });
  });

  it.each([
    [{ 'nvidia.com/gpu': '1.5' }, 'pod ml/p: spec.containers[0].resources.requests[nvidia.com/gpu]: "1.5" must be a whole number'],
    [{ 'nvidia.com/gpu': '500m' }, 'pod ml/p: spec.containers[0].resources.requests[nvidia.com/gpu]: "500m" must be a whole number'],
    [{ cpu: '1e3m' }, 'pod ml/p: spec.containers[0].resources.requests[cpu]: "1e3m" is not a quantity (e.g. 500m, 1.5, 32Gi)'],
    [{ memory: 'lots' }, 'pod ml/p: spec.containers[0].resources.requests[memory]: "lots" is not a quantity (e.g. 500m, 1.5, 32Gi)'],
    [{ memory: '1GB' }, 'pod ml/p: spec.containers[0].resources.requests[memory]: "1GB" is not a quantity (e.g. 500m, 1.5, 32Gi)'],
    [{ cpu: '-1' }, 'pod ml/p: spec.containers[0].resources.requests[cpu]: "-1" must not be negative'],
  ])('rejects %j naming the pod and the field', (requests, message) => {
    expect(request(requests)).toBe(message);
  });

  it('names the init container and a limit used as the request', () => {
    const r = podFromK8s({
      metadata: { name: 'p', namespace: 'ml' },
      spec: { containers: [{ name: 'c', image: 'x' }], initContainers: [{ name: 'i', image: 'x', resources: { limits: { 'nvidia.com/gpu': '0.5' } } }] },
    });
    expect(r.ok ? r.value : r.error).toBe('pod ml/p: spec.initContainers[0].resources.limits[nvidia.com/gpu]: "0.5" must be a whole number');
  });

  it('reads node allocatable with the same parser and names the field', () => {
    const node = (allocatable: Record<string, string>): V1Node => ({ metadata: { name: 'n' }, status: { allocatable } });
    const ok = nodeFromK8s(node({ cpu: '.5', memory: '1Ki', pods: '110', 'nvidia.com/gpu': '8' }));
    expect(ok.ok && ok.value).toMatchObject({ cpuMilli: 500, memoryMiB: 1, maxPods: 110 });
    expect(ok.ok && ok.value.gpus.length).toBe(8);
    const bad = nodeFromK8s(node({ cpu: '4', 'nvidia.com/gpu': '7.5' }));
    expect(bad.ok ? bad.value : bad.error).toBe('node n: status.allocatable[nvidia.com/gpu]: "7.5" must be a whole number');
    const capacityOnly = nodeFromK8s({ metadata: { name: 'n' }, status: { capacity: { cpu: 'x' } } });
    expect(capacityOnly.ok ? capacityOnly.value : capacityOnly.error).toBe('node n: status.capacity[cpu]: "x" is not a quantity (e.g. 500m, 1.5, 32Gi)');
  });

  it('carries node affinity, host ports (containers and sidecars), scheduling gates and every resource of a pod', () => {
    const r = podFromK8s({
      metadata: { name: 'p', namespace: 'ml' },
      spec: {
        containers: [
          {
            name: 'c',
            image: 'x',
            ports: [{ containerPort: 80, hostPort: 8080 }, { containerPort: 53, hostPort: 53, protocol: 'UDP', hostIP: '10.0.0.1' }, { containerPort: 9000 }],
            resources: { requests: { cpu: '1', 'rdma/hca': '1', 'ephemeral-storage': '1Gi' } },
          },
        ],
        initContainers: [
          { name: 'side', image: 'x', restartPolicy: 'Always', ports: [{ containerPort: 7, hostPort: 7 }], resources: { requests: { cpu: '500m' } } },
          { name: 'init', image: 'x', ports: [{ containerPort: 6, hostPort: 6 }], resources: { requests: { cpu: '3' } } },
        ],
        overhead: { cpu: '100m' },
        schedulingGates: [{ name: 'example.com/quota' }],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }],
                  matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['n9'] }],
                },
              ],
            },
            preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 10, preference: { matchExpressions: [{ key: 'ssd', operator: 'Exists' }] } }],
          },
        },
      },
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    // max(1 + 0.5 sidecar, 3 init + 0.5 sidecar before it) + 0.1 overhead
    expect(r.value.request).toMatchObject({ cpuMilli: 3600, scalar: { 'ephemeral-storage': 2 ** 30, 'rdma/hca': 1 } });
    expect(r.value.hostPorts).toEqual([
      { port: 8080, protocol: 'TCP', ip: '0.0.0.0' },
      { port: 53, protocol: 'UDP', ip: '10.0.0.1' },
      { port: 7, protocol: 'TCP', ip: '0.0.0.0' },
    ]);
    expect(r.value.schedulingGates).toEqual(['example.com/quota']);
    expect(r.value.nodeAffinity).toEqual({
      required: [
        { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }], matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['n9'] }] },
      ],
      preferred: [{ weight: 10, preference: { matchExpressions: [{ key: 'ssd', operator: 'Exists' }] } }],
    });
    // A pod without any of these has none of the fields (its shape costs nothing more).
    const plain = podFromK8s(pod({}));
    expect(plain.ok && [plain.value.nodeAffinity, plain.value.hostPorts, plain.value.schedulingGates, plain.value.request.scalar]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('reads every other allocatable resource of a node (zero ones left out)', () => {
    const r = nodeFromK8s({
      metadata: { name: 'n' },
      spec: { unschedulable: true },
      status: { allocatable: { cpu: '4', memory: '8Gi', pods: '110', 'ephemeral-storage': '100Gi', 'hugepages-2Mi': '0', 'rdma/hca': '4' } },
    });
    expect(r.ok && r.value.scalar).toEqual({ 'ephemeral-storage': 100 * 2 ** 30, 'rdma/hca': 4 });
    expect(r.ok && r.value.unschedulable).toBe(true);
  });
});

describe('modelFromProduct', () => {
  it('maps GFD product strings onto our model names, and leaves a GPU it does not know (L40S is not an L4) as it is', () => {
    expect(modelFromProduct('NVIDIA-H100-80GB-HBM3')).toBe('H100-SXM');
    expect(modelFromProduct('NVIDIA-L4')).toBe('L4');
    expect(modelFromProduct('NVIDIA L4')).toBe('L4');
    expect(modelFromProduct('NVIDIA-L40S')).toBe('NVIDIA-L40S');
    expect(modelFromProduct('NVIDIA-L40')).toBe('NVIDIA-L40');
    expect(modelFromProduct('NVIDIA-A100-SXM4-40GB')).toBe('A100-40G');
  });
});

describe('nodeFromK8s with a GPU the device plugin reports unhealthy (allocatable below capacity)', () => {
  const node = (annotations: Record<string, string>, capacity: string, allocatable: string): V1Node => ({
    metadata: { name: 'n', annotations },
    status: {
      capacity: { cpu: '64', memory: '512Gi', 'nvidia.com/gpu': capacity },
      allocatable: { cpu: '64', memory: '512Gi', 'nvidia.com/gpu': allocatable },
    },
  });
  it('keeps the preset topology of all devices and marks the one the annotation names', () => {
    const r = nodeFromK8s(node({ [ANNOTATION.nodeShape]: 'dgx-h100', [ANNOTATION.unhealthyGpus]: '3' }, '8', '7'));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.gpus).toHaveLength(8);
    expect(r.value.gpus.filter((g) => !g.healthy).map((g) => g.index)).toEqual([3]);
    expect(r.value.topology.gpuCount).toBe(8);
  });
  it('never offers more GPUs than allocatable: without an annotation the highest index is taken out', () => {
    const r = nodeFromK8s(node({ [ANNOTATION.nodeShape]: 'dgx-h100' }, '8', '6'));
    expect(r.ok && r.value.gpus.filter((g) => g.healthy).length).toBe(6);
    expect(r.ok && r.value.gpus.filter((g) => !g.healthy).map((g) => g.index)).toEqual([6, 7]);
  });
  it('without a description of the devices stays with allocatable (flat), as before', () => {
    const r = nodeFromK8s(node({}, '8', '7'));
    expect(r.ok && r.value.gpus.length).toBe(7);
  });
});

describe('nodeFromK8s with quarantined GPUs (ANNOTATION.gpuQuarantine)', () => {
  const node = (annotations: Record<string, string>): V1Node => ({
    metadata: { name: 'n', annotations: { [ANNOTATION.nodeShape]: 'dgx-h100', ...annotations } },
    status: { capacity: { cpu: '64', memory: '512Gi', 'nvidia.com/gpu': '8' }, allocatable: { cpu: '64', memory: '512Gi', 'nvidia.com/gpu': '8' } },
  });
  const q =
    '{"3":{"reason":"XID 79 (GPU has fallen off the bus)","since":"2026-12-01T17:00:00.000Z","until":"2026-12-01T17:15:00.000Z","source":"gpu-health"}}';
  it('marks the GPU unhealthy with the quarantine as its reason, next to the device plugin unhealthy ones', () => {
    const r = nodeFromK8s(node({ [ANNOTATION.gpuQuarantine]: q, [ANNOTATION.unhealthyGpus]: '5' }));
    if (!r.ok) throw new Error(r.error);
    expect(r.value.gpus.filter((g) => !g.healthy).map((g) => [g.index, g.unhealthyReason])).toEqual([
      [3, 'quarantined until 2026-12-01T17:15:00.000Z: XID 79 (GPU has fallen off the bus)'],
      [5, undefined],
    ]);
    // The state (ADR 0150) is the migrator's business: a failed GPU reads the same to the scheduler and explain.
    const failed = nodeFromK8s(node({ [ANNOTATION.gpuQuarantine]: q.replace('"reason"', '"state":"failed","reason"') }));
    expect(failed.ok && failed.value.gpus.filter((g) => !g.healthy).map((g) => [g.index, g.unhealthyReason])).toEqual([
      [3, 'quarantined until 2026-12-01T17:15:00.000Z: XID 79 (GPU has fallen off the bus)'],
    ]);
  });
  it('a bad annotation or a GPU the node does not have is an error naming the annotation', () => {
    expect(nodeFromK8s(node({ [ANNOTATION.gpuQuarantine]: '{"3":{}}' }))).toEqual({
      ok: false,
      error: `node n: annotation ${ANNOTATION.gpuQuarantine}: GPU 3: reason: expected a non-empty string`,
    });
    expect(nodeFromK8s(node({ [ANNOTATION.gpuQuarantine]: q.replace('"reason"', '"state":"broken","reason"') }))).toEqual({
      ok: false,
      error: `node n: annotation ${ANNOTATION.gpuQuarantine}: GPU 3: state: expected "suspect" or "failed", got "broken"`,
    });
    expect(nodeFromK8s(node({ [ANNOTATION.gpuQuarantine]: q.replace('"3"', '"9"') }))).toEqual({
      ok: false,
      error: `node n: annotation ${ANNOTATION.gpuQuarantine}: GPU 9 does not exist (the node has 8)`,
    });
  });
});
