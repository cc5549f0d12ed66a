import { describe, expect, it } from 'vitest';
import { podRequests } from './pod-requests.ts';

describe('podRequests (kube resource.PodRequests)', () => {
  it('sums containers, takes the larger of that and the largest init container, then adds the overhead', () => {
    expect(podRequests([{ requests: { cpu: 100, memory: 128 } }, { requests: { cpu: 200 } }], [{ requests: { cpu: 250, memory: 64 } }], { cpu: 50 })).toEqual({
      cpu: 350,
      memory: 128,
    });
  });

  it('sidecars run beside the containers and beside every init container started after them', () => {
    // Init order: init-a (500), sidecar s1 (100), init-b (450), sidecar s2 (50). Containers: 200.
    const r = podRequests(
      [{ requests: { cpu: 200 } }],
      [{ requests: { cpu: 500 } }, { requests: { cpu: 100 }, sidecar: true }, { requests: { cpu: 450 } }, { requests: { cpu: 50 }, sidecar: true }],
    );
    // max(200 + 100 + 50, init-a 500, init-b 450 + 100, s1 100, s1+s2 150) = 550
    expect(r).toEqual({ cpu: 550 });
  });

  it('keeps resources of any name (ephemeral-storage, extended, hugepages)', () => {
    expect(
      podRequests([{ requests: { 'rdma/hca': 1 } }, { requests: { 'rdma/hca': 1, 'hugepages-2Mi': 4 } }], [{ requests: { 'ephemeral-storage': 10 } }]),
    ).toEqual({ 'rdma/hca': 2, 'hugepages-2Mi': 4, 'ephemeral-storage': 10 });
  });
});
