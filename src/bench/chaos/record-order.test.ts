import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { checkInvariants, type ChaosHistory, type PodObs } from './invariants.ts';
import { inRevisionOrder, revisionOf } from './record-order.ts';

const obs = (t: number, uid: string, o: Partial<PodObs>): PodObs => ({ t, type: 'MODIFIED', uid, ns: 'w', name: uid, node: '', gpus: 1, gpuIndices: '', terminal: false, ...o });

function gpuClashes(pods: readonly PodObs[]): number {
  const h: ChaosHistory = {
    nodeGpus: new Map([['n1', 1]]),
    pods,
    binds: [],
    leases: [],
    replicaOf: new Map(),
    gangSize: new Map(),
    submittedSlots: new Set(),
    expectedChildren: new Map(),
    ownersAtEnd: new Set(),
    podsAtEnd: [],
    gangWindowMs: 10_000,
    endMs: 100_000,
  };
  return checkInvariants(h).invariants.gpuDoubleAssigned;
}

describe('chaos record order', () => {
  it('reads resourceVersion as a number, 0 when absent or not one', () => {
    expect(revisionOf({ metadata: { resourceVersion: '12345678901234567890' } } as V1Pod)).toBe(12345678901234567890n);
    expect(revisionOf({ metadata: {} } as V1Pod)).toBe(0n);
    expect(revisionOf({ metadata: { resourceVersion: 'abc' } } as V1Pod)).toBe(0n);
  });

  it('a relist in key order shows a GPU held twice; in revision order it shows the GPU freed, then taken', () => {
    // During a watch gap `train-3` (GPU 0) succeeded at revision 40, then `probe-5` was bound to GPU 0 at 41. The
    // relist hands them over in key order: probe-5 first.
    const start = obs(1, 'train-3', { node: 'n1', gpuIndices: '0' });
    const relist = [
      { rv: 41n, ob: obs(2, 'probe-5', { node: 'n1', gpuIndices: '0' }) },
      { rv: 40n, ob: obs(2, 'train-3', { node: 'n1', gpuIndices: '0', terminal: true }) },
    ];
    expect(gpuClashes([start, ...relist.map((e) => e.ob)])).toBe(1);
    expect(gpuClashes([start, ...inRevisionOrder(relist).map((e) => e.ob)])).toBe(0);
    // A real clash (bound before the holder ended) is still counted.
    const real = [
      { rv: 39n, ob: obs(2, 'probe-5', { node: 'n1', gpuIndices: '0' }) },
      { rv: 40n, ob: obs(2, 'train-3', { node: 'n1', gpuIndices: '0', terminal: true }) },
    ];
    expect(gpuClashes([start, ...inRevisionOrder(real).map((e) => e.ob)])).toBe(1);
  });

  it('keeps the order of events of one revision', () => {
    const e = [
      { rv: 5n, id: 'b' },
      { rv: 5n, id: 'a' },
      { rv: 3n, id: 'c' },
    ];
    expect(inRevisionOrder(e).map((x) => x.id)).toEqual(['c', 'b', 'a']);
  });
});
