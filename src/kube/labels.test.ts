import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ANNOTATION, podFromK8s } from './labels.ts';

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
