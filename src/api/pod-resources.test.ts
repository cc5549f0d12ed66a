import { describe, expect, it } from 'vitest';
import { readPodResources } from './pod-resources.ts';

describe('readPodResources', () => {
  it('sums like kube-scheduler: containers + sidecars vs. each init container with the sidecars before it, plus overhead', () => {
    const r = readPodResources(
      {
        containers: [{ resources: { requests: { cpu: '500m', memory: '1Gi', 'rdma/hca': 1 } } }, { resources: { limits: { cpu: '1', 'nvidia.com/gpu': 2 } } }],
        initContainers: [
          { resources: { requests: { cpu: '4', 'ephemeral-storage': '10Gi' } } },
          { restartPolicy: 'Always', resources: { requests: { cpu: '250m', memory: '512Mi', 'hugepages-2Mi': '4Mi' } } },
        ],
        overhead: { cpu: '100m', memory: '64Mi' },
      },
      'spec',
    );
    expect(r).toEqual({
      ok: true,
      value: { cpuMilli: 4100, memoryMiB: 1600, gpuCount: 2, scalar: { 'ephemeral-storage': 10 * 2 ** 30, 'hugepages-2Mi': 4 * 2 ** 20, 'rdma/hca': 1 } },
    });
  });

  it('names the field of a bad quantity; extended resources must be whole', () => {
    expect(readPodResources({ containers: [{ resources: { requests: { cpu: 'lots' } } }] }, 'pod a/b: spec')).toEqual({
      ok: false,
      error: 'pod a/b: spec.containers[0].resources.requests[cpu]: "lots" is not a quantity (e.g. 500m, 1.5, 32Gi)',
    });
    expect(readPodResources({ containers: [{ resources: { limits: { 'rdma/hca': '0.5' } } }] }, 'spec').ok).toBe(false);
    expect(readPodResources({ containers: [{ resources: { requests: { 'ephemeral-storage': '1.5' } } }] }, 'spec')).toEqual({
      ok: true,
      value: { cpuMilli: 0, memoryMiB: 0, gpuCount: 0, scalar: { 'ephemeral-storage': 2 } },
    });
  });
});
