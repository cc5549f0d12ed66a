import { describe, expect, it } from 'vitest';

import { admittedGpus, isNewPreemption, summariseShares, validatePeerWorkload, type ShareSample, type WorkloadObject } from './kueue-peer.ts';

const queues = [
  { name: 'a', weight: 2 },
  { name: 'b', weight: 1 },
];
const s = (t: number, a: number, b: number): ShareSample => ({ t, admitted: { a, b }, running: { a, b } });

describe('summariseShares', () => {
  it('takes the mean of the last quarter as the steady share and the first time from which every queue stays within 3 pp of it', () => {
    // 8 GPUs: a holds all, then b preempts down to 6:2 at t=3 and it stays so.
    const samples = [s(1, 8, 0), s(2, 8, 0), s(3, 7, 1), s(4, 6, 2), s(5, 6, 2), s(6, 6, 2), s(7, 6, 2), s(8, 6, 2)];
    const r = summariseShares(samples, queues, 8);
    expect(r.steadyShares).toEqual({ a: 0.75, b: 0.25 });
    expect(r.steadyWindow).toEqual({ fromSec: 7, toSec: 8 });
    expect(r.timeToSteadySec).toBe(4);
    expect(r.weightedShares.a).toBeCloseTo(2 / 3, 12);
  });

  it('counts a sample within the tolerance as steady and one outside it as not', () => {
    // 100 GPUs: 2 pp off the steady share is within 3 pp, 4 pp is not.
    const samples = [s(1, 56, 44), s(2, 62, 38), s(3, 60, 40), s(4, 60, 40)];
    expect(summariseShares(samples, queues, 100, 0.5).timeToSteadySec).toBe(2);
    expect(summariseShares(samples, queues, 100, 0.5, 0.01).timeToSteadySec).toBe(3);
  });

  it('has no time to steady when the last sample is off the window mean', () => {
    const r = summariseShares([s(1, 8, 0), s(2, 0, 8)], queues, 8, 1);
    expect(r.steadyShares).toEqual({ a: 0.5, b: 0.5 });
    expect(r.timeToSteadySec).toBeNull();
  });

  it('reports zero shares and no time for no samples', () => {
    expect(summariseShares([], queues, 8)).toMatchObject({ steadyShares: { a: 0, b: 0 }, timeToSteadySec: null });
  });
});

const wl = (conds: { type: string; status: string; reason?: string; lastTransitionTime?: string }[], gpus = 1): WorkloadObject => ({
  spec: { queueName: 'a' },
  status: { conditions: conds, admission: { podSetAssignments: [{ resourceUsage: { 'nvidia.com/gpu': String(gpus) } }] } },
});

describe('workload readings', () => {
  it('counts the GPUs of admitted, unfinished workloads only', () => {
    expect(admittedGpus(wl([{ type: 'Admitted', status: 'True' }], 3))).toBe(3);
    expect(admittedGpus(wl([{ type: 'Admitted', status: 'False' }], 3))).toBe(0);
    expect(admittedGpus(wl([{ type: 'Admitted', status: 'True' }, { type: 'Finished', status: 'True' }], 3))).toBe(0);
  });

  it('sees a preemption once per Evicted/Preempted transition', () => {
    const evicted = wl([{ type: 'Evicted', status: 'True', reason: 'Preempted', lastTransitionTime: '2026-01-01T00:00:01Z' }]);
    expect(isNewPreemption(undefined, evicted)).toBe(true);
    expect(isNewPreemption(wl([{ type: 'Admitted', status: 'True' }]), evicted)).toBe(true);
    expect(isNewPreemption(evicted, evicted)).toBe(false);
    expect(isNewPreemption(evicted, wl([{ type: 'Evicted', status: 'True', reason: 'Preempted', lastTransitionTime: '2026-01-01T00:00:09Z' }]))).toBe(true);
    expect(isNewPreemption(undefined, wl([{ type: 'Evicted', status: 'True', reason: 'PodsReadyTimeout' }]))).toBe(false);
  });
});

describe('validatePeerWorkload', () => {
  const ok = { jobs: [{ id: 'j-1', queue: 'a', submitAtSec: 0, runSeconds: 5, gpus: 2 }], queues, nodes: 1 };
  it('accepts a good workload and defaults the shape to l4x8', () => {
    expect(validatePeerWorkload(ok)).toEqual({ shape: 'l4x8', gpusPerNode: 8 });
  });
  it('names the bad field', () => {
    expect(() => validatePeerWorkload({ ...ok, nodes: 0 })).toThrow('workload.nodes');
    expect(() => validatePeerWorkload({ ...ok, shape: 'nope' })).toThrow('workload.shape');
    expect(() => validatePeerWorkload({ ...ok, queues: [{ name: 'a', weight: 0 }] })).toThrow('workload.queues[0].weight');
    expect(() => validatePeerWorkload({ ...ok, queues: [...queues, { name: 'a', weight: 1 }] })).toThrow('workload.queues[2].name');
    expect(() => validatePeerWorkload({ ...ok, jobs: [{ ...ok.jobs[0]!, queue: 'c' }] })).toThrow('workload.jobs[0].queue');
    expect(() => validatePeerWorkload({ ...ok, jobs: [{ ...ok.jobs[0]!, gpus: 9 }] })).toThrow('workload.jobs[0].gpus');
    expect(() => validatePeerWorkload({ ...ok, jobs: [{ ...ok.jobs[0]!, id: 'J_1' }] })).toThrow('workload.jobs[0].id');
    expect(() => validatePeerWorkload({ ...ok, jobs: [ok.jobs[0]!, ok.jobs[0]!] })).toThrow('workload.jobs[1].id');
    expect(() => validatePeerWorkload({ ...ok, jobs: [{ ...ok.jobs[0]!, runSeconds: 0 }] })).toThrow('workload.jobs[0].runSeconds');
  });
});
