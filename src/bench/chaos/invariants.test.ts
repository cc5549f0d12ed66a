import { describe, expect, it } from 'vitest';
import { checkInvariants, type ChaosHistory, type PodObs } from './invariants.ts';
import { PodRecord } from './record-order.ts';

const pod = (t: number, uid: string, o: Partial<PodObs> = {}): PodObs => ({
  t,
  type: 'MODIFIED',
  uid,
  ns: 'w',
  name: uid,
  node: '',
  gpus: 1,
  gpuIndices: '',
  terminal: false,
  slot: `w/${uid}`,
  ...o,
});

function history(o: Partial<ChaosHistory>): ChaosHistory {
  return {
    nodeGpus: new Map([
      ['n1', 2],
      ['n2', 2],
    ]),
    pods: [],
    binds: [],
    leases: [],
    replicaOf: new Map([
      ['r0', 'replica-0'],
      ['r1', 'replica-1'],
    ]),
    gangSize: new Map(),
    submittedSlots: new Set(),
    expectedChildren: new Map(),
    ownersAtEnd: new Set(),
    podsAtEnd: [],
    gangWindowMs: 10_000,
    endMs: 100_000,
    ...o,
  };
}

const ZERO = { halfBoundGangs: 0, doubleBinds: 0, gpuDoubleAssigned: 0, lostPods: 0, nonLeaderBinds: 0, orphans: 0 };

describe('chaos invariants', () => {
  it('a clean history counts nothing', () => {
    const a = pod(2, 'a', { node: 'n1', gpuIndices: '0' });
    const r = checkInvariants(
      history({
        pods: [pod(1, 'a', { type: 'ADDED' }), a],
        binds: [{ receivedMs: 1500, user: 'r0', ns: 'w', name: 'a', code: 201 }],
        leases: [{ storedMs: 1000, user: 'r0', holder: 'replica-0' }],
        submittedSlots: new Set(['w/a']),
        podsAtEnd: [a],
      }),
    );
    expect(r.invariants).toEqual(ZERO);
    expect(r.podsBound).toBe(1);
  });

  it('counts a gang left partly bound past the window, but not one completed within it', () => {
    const g = { gang: 'w/g', gpus: 1 };
    const r = checkInvariants(
      history({
        gangSize: new Map([
          ['w/g', 2],
          ['w/h', 2],
        ]),
        pods: [
          pod(0, 'g0', { ...g, node: 'n1', gpuIndices: '0' }),
          pod(30_000, 'g1', { ...g, node: 'n1', gpuIndices: '1' }),
          pod(0, 'h0', { gang: 'w/h', node: 'n2', gpuIndices: '0' }),
          pod(5_000, 'h1', { gang: 'w/h', node: 'n2', gpuIndices: '1' }),
        ],
      }),
    );
    expect(r.invariants.halfBoundGangs).toBe(1);
    expect(r.partialGangMs).toEqual([30_000, 5_000]);
  });

  it('a gang rolled back (bound members deleted) after the window is counted, though it ends with nothing bound', () => {
    const r = checkInvariants(
      history({
        gangSize: new Map([['w/g', 2]]),
        pods: [pod(0, 'g0', { gang: 'w/g', node: 'n1', gpuIndices: '0' }), pod(20_000, 'g0', { type: 'DELETED', gang: 'w/g', node: 'n1' })],
      }),
    );
    expect(r.invariants.halfBoundGangs).toBe(1);
  });

  it('counts a pod moved between nodes, a second accepted binding, and a binding past a node’s capacity', () => {
    const r = checkInvariants(
      history({
        pods: [
          pod(1, 'a', { node: 'n1', gpuIndices: '0' }),
          pod(2, 'a', { node: 'n2', gpuIndices: '0' }),
          pod(3, 'big', { node: 'n1', gpus: 2, gpuIndices: '' }),
        ],
        binds: [
          { receivedMs: 1, user: 'admin', ns: 'w', name: 'b', code: 201 },
          { receivedMs: 2, user: 'admin', ns: 'w', name: 'b', code: 201 },
          { receivedMs: 3, user: 'admin', ns: 'w', name: 'c', code: 409 },
        ],
      }),
    );
    // a moved (1), b bound twice (1), big on n1 where a… moved away: n1 is free, so no capacity violation.
    expect(r.invariants.doubleBinds).toBe(2);
    const over = checkInvariants(history({ pods: [pod(1, 'a', { node: 'n1', gpuIndices: '0' }), pod(2, 'big', { node: 'n1', gpus: 2, gpuIndices: '' })] }));
    expect(over.invariants.doubleBinds).toBe(1);
    // A finished pod holds nothing.
    const freed = checkInvariants(
      history({
        pods: [pod(1, 'a', { node: 'n1', gpuIndices: '0' }), pod(2, 'a', { node: 'n1', gpuIndices: '0', terminal: true }), pod(3, 'big', { node: 'n1', gpus: 2 })],
      }),
    );
    expect(freed.invariants.doubleBinds).toBe(0);
  });

  // The record as the bench keeps it: the first observations, then one relist burst (in key order, as a reflector hands it over).
  const recorded = (first: readonly PodObs[], relist: readonly PodObs[], rec = new PodRecord()): PodObs[] => {
    for (const ob of first) rec.burst([{ type: ob.type, ob }], ob.t);
    rec.burst(
      relist.map((ob) => ({ type: ob.type, ob })),
      2,
    );
    return rec.pods;
  };
  const clashes = (pods: PodObs[]): number => checkInvariants(history({ pods })).invariants.gpuDoubleAssigned;

  it('a relist in key order shows a GPU held twice; in revision order (as recorded) the GPU freed, then taken', () => {
    // During a watch gap `train-3` (GPU 0) succeeded at revision 40, then `probe-5` was bound to GPU 0 at 41. The
    // relist hands them over in key order: probe-5 first.
    const start = pod(1, 'train-3', { node: 'n1', gpuIndices: '0', rv: '10' });
    const relist = [pod(2, 'probe-5', { node: 'n1', gpuIndices: '0', rv: '41' }), pod(2, 'train-3', { node: 'n1', gpuIndices: '0', terminal: true, rv: '40' })];
    expect(clashes([start, ...relist])).toBe(1);
    expect(clashes(recorded([start], relist))).toBe(0);
    // A real clash (bound before the holder ended) is still counted.
    const real = [pod(2, 'probe-5', { node: 'n1', gpuIndices: '0', rv: '39' }), pod(2, 'train-3', { node: 'n1', gpuIndices: '0', terminal: true, rv: '40' })];
    expect(clashes(recorded([start], real))).toBe(1);
  });

  it('a pod recreated under its name in a watch gap ends its old object before the gap’s bindings (found by seeds 1 and 3)', () => {
    // `tj-0` (uid a) held GPU 0; in the gap it was rolled back (deleted), `probe-5` took GPU 0 at revision 41, and the
    // controller recreated `tj-0` (uid b) at 42. The relist shows probe-5, then tj-0 as an update of a new uid.
    const start = pod(1, 'a', { name: 'tj-0', slot: 'w/tj-0', node: 'n1', gpuIndices: '0', rv: '10' });
    const relist = [pod(2, 'probe-5', { node: 'n1', gpuIndices: '0', rv: '41' }), pod(2, 'b', { name: 'tj-0', slot: 'w/tj-0', rv: '42' })];
    const rec = new PodRecord();
    const pods = recorded([start], relist, rec);
    expect(clashes(pods)).toBe(0);
    expect(rec.replacedInGap).toBe(1);
    expect(pods.map((p) => `${p.type} ${p.name} ${p.uid}`)).toEqual(['MODIFIED tj-0 a', 'DELETED tj-0 a', 'MODIFIED probe-5 probe-5', 'MODIFIED tj-0 b']);
    // Without a gap (a watch's own events, one at a time), a binding onto a GPU the old object still held counts.
    const watched = new PodRecord();
    for (const ob of [start, relist[0]!, { ...start, t: 3, type: 'DELETED' as const, rv: '43' }, relist[1]!]) watched.burst([{ type: ob.type, ob }], ob.t);
    expect(clashes(watched.pods)).toBe(1);
  });

  it('counts a GPU index handed to two live pods of one node, not on two nodes', () => {
    const r = checkInvariants(
      history({
        pods: [pod(1, 'a', { node: 'n1', gpuIndices: '0' }), pod(2, 'b', { node: 'n1', gpuIndices: '0' }), pod(3, 'c', { node: 'n2', gpuIndices: '0' })],
      }),
    );
    expect(r.invariants.gpuDoubleAssigned).toBe(1);
    expect(r.violations).toEqual(['pod w/b got GPU 0 of n1, held by w/a']);
    expect(r.involved).toEqual(['w/a', 'w/b']);
  });

  // replica-0 leads from 1 s, replica-1 takes over at 9 s.
  const TAKEOVER = [
    { storedMs: 1000, user: 'r0', holder: 'replica-0' },
    { storedMs: 9000, user: 'r1', holder: 'replica-1' },
  ];

  it('counts bindings received while the Lease was held by another replica (the paused leader resumed)', () => {
    const r = checkInvariants(
      history({
        leases: TAKEOVER,
        binds: [
          { receivedMs: 2000, user: 'r0', ns: 'w', name: 'a', code: 201 },
          { receivedMs: 9500, user: 'r0', ns: 'w', name: 'b', code: 201 },
          { receivedMs: 9600, user: 'r0', ns: 'w', name: 'c', code: 409 },
          { receivedMs: 9700, user: 'r1', ns: 'w', name: 'd', code: 201 },
          { receivedMs: 500, user: 'r1', ns: 'w', name: 'e', code: 201 },
        ],
      }),
    );
    // b (replica-0 after the takeover) and e (before anyone held the lease); c failed, so it did nothing.
    expect(r.invariants.nonLeaderBinds).toBe(2);
    expect(r.nonLeaderDeletes).toBe(0);
    const d = checkInvariants(
      history({
        leases: TAKEOVER,
        deletes: [
          { receivedMs: 2000, user: 'r0', ns: 'w', name: 'a', code: 200 },
          { receivedMs: 9500, user: 'r0', ns: 'w', name: 'b', code: 200 },
          { receivedMs: 9600, user: 'admin', ns: 'w', name: 'c', code: 200 },
        ],
      }),
    );
    // The stale rollback: replica-0 deleting a pod after replica-1 took over.
    expect(d.nonLeaderDeletes).toBe(1);
    expect(d.violations).toEqual([expect.stringMatching(/^deletion of w\/b by replica-0 .* holder was replica-1$/)]);
  });

  it('counts slots never bound and pods left unbound at the end as lost', () => {
    const r = checkInvariants(
      history({
        submittedSlots: new Set(['w/a', 'w/b']),
        pods: [pod(1, 'a', { node: 'n1', gpuIndices: '0' }), pod(1, 'b')],
        podsAtEnd: [pod(1, 'a', { node: 'n1', gpuIndices: '0' }), pod(2, 'a2', { slot: 'w/a' }), pod(1, 'b')],
      }),
    );
    // b never bound (1); a2, a recreated pod of a bound slot, unbound at the end (1); b itself is not counted twice.
    expect(r.invariants.lostPods).toBe(2);
  });

  it('counts children whose owner is gone at the end and owners with more live children than asked', () => {
    const r = checkInvariants(
      history({
        expectedChildren: new Map([['job', 1]]),
        pods: [pod(1, 'a', { ownerUid: 'job' }), pod(2, 'b', { ownerUid: 'job' }), pod(3, 'c', { ownerUid: 'gone' })],
        ownersAtEnd: new Set(['job']),
        podsAtEnd: [pod(1, 'a', { ownerUid: 'job', node: 'n1' }), pod(3, 'c', { ownerUid: 'gone', node: 'n1' })],
      }),
    );
    expect(r.invariants.orphans).toBe(2);
  });
});
