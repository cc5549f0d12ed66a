import { describe, expect, it } from 'vitest';
import { allocationFor, ClusterState, domainKey, gpuPodTag, type Allocation, type NodeState } from './cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod } from '../model/pod.ts';
import { TOPOLOGY_LEVELS, type NodeLocation } from '../model/topology.ts';
import { seededRng, shuffle, type Rng } from '../ports.ts';

function nodeSpec(name: string, shapeId = 'l4x8', location: Partial<NodeLocation> = {}): NodeSpec {
  const s = NODE_SHAPES[shapeId];
  if (s === undefined) throw new Error(`no preset ${shapeId}`);
  return {
    name,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack: 'r', ...location },
    labels: {},
    taints: [],
    unschedulable: false,
  };
}

function alloc(podId: string, node: string, gpus: readonly number[], gpuMilli = 1000, cpuMilli = 1000, memoryMiB = 1024): Allocation {
  return { podId, node, gpus, gpuMilli: gpus.length === 0 ? 0 : gpuMilli, cpuMilli, memoryMiB, priority: 0, queue: 'default' };
}

function must(state: ClusterState, name: string): NodeState {
  const n = state.node(name);
  if (n === undefined) throw new Error(`no node ${name}`);
  return n;
}

/** Everything allocation changes on a node, as plain values. */
function resources(state: ClusterState): unknown {
  return state.nodes.map((n) => ({
    name: n.name,
    cpu: n.cpuUsedMilli,
    mem: n.memUsedMiB,
    pods: n.podCount,
    free: [...n.gpuFree],
    usable: [...n.gpuUsable],
    allocations: [...n.allocations.keys()].sort(),
    tags: [...n.gpuPodTags].sort(),
  }));
}

describe('ClusterState bookkeeping', () => {
  it('allocate takes cpu, memory, one pod slot and the milli of each listed GPU; release gives them back', () => {
    const st = new ClusterState([nodeSpec('a'), nodeSpec('b')]);
    const before = resources(st);
    st.allocate(alloc('p1', 'a', [1, 2], 1000, 3000, 8192));
    st.allocate(alloc('p2', 'a', [0], 250, 500, 100));
    const a = must(st, 'a');
    expect(a.cpuUsedMilli).toBe(3500);
    expect(a.cpuFreeMilli).toBe(96_000 - 3500);
    expect(a.memUsedMiB).toBe(8292);
    expect(a.memFreeMiB).toBe(393_216 - 8292);
    expect(a.podCount).toBe(2);
    expect([...a.gpuFree]).toEqual([750, 0, 0, 1000, 1000, 1000, 1000, 1000]);
    expect(a.fullyFreeGpus()).toBe(5);
    expect(a.gpuFreeMilli()).toBe(5750);
    expect(a.gpuPodTags).toEqual(
      new Map([
        ['2-gpu', 1],
        ['share', 1],
      ]),
    );
    expect(st.nodeOfPod('p1')?.name).toBe('a');
    expect(st.allocation('p2')?.gpus).toEqual([0]);

    expect(st.release('p1')?.podId).toBe('p1');
    expect([...a.gpuFree]).toEqual([750, 1000, 1000, 1000, 1000, 1000, 1000, 1000]);
    expect(a.gpuPodTags).toEqual(new Map([['share', 1]]));
    expect(st.release('p2')?.podId).toBe('p2');
    expect(resources(st)).toEqual(before);
    expect(st.nodeOfPod('p1')).toBeUndefined();
    expect(st.allocation('p2')).toBeUndefined();
  });

  it('release of an unknown pod changes nothing and returns undefined', () => {
    const st = new ClusterState([nodeSpec('a')]);
    const seq = st.seq;
    expect(st.release('nope')).toBeUndefined();
    expect(st.seq).toBe(seq);
  });

  it('rejects an unknown node, a pod allocated twice and duplicate node names', () => {
    const st = new ClusterState([nodeSpec('a')]);
    expect(() => st.allocate(alloc('p', 'zz', []))).toThrow(/unknown node zz/);
    st.allocate(alloc('p', 'a', [0]));
    expect(() => st.allocate(alloc('p', 'a', [1]))).toThrow(/already allocated/);
    expect(() => new ClusterState([nodeSpec('a'), nodeSpec('a', 'l4x8', { rack: 'r' })])).toThrow(/duplicate node name a/);
  });

  it('over-commit throws and leaves the node exactly as it was', () => {
    const st = new ClusterState([nodeSpec('a')]);
    st.allocate(alloc('half', 'a', [3], 600));
    const before = resources(st);
    const seq = st.seq;
    expect(() => st.allocate(alloc('big', 'a', [2, 3], 1000))).toThrow(/GPU 3 of a over-committed by big/);
    expect(() => st.allocate(alloc('frac', 'a', [3], 500))).toThrow(/over-committed/);
    expect(() => st.allocate(alloc('dup', 'a', [5, 5], 600))).toThrow(/over-committed/);
    expect(() => st.allocate(alloc('ghost', 'a', [8], 100))).toThrow(/over-committed/);
    expect(resources(st)).toEqual(before);
    expect(st.seq).toBe(seq);
    expect(st.fullyFreeGpusIn(0, 1)).toBe(7);
    expect(st.gpuFreeMilliIn(0, 1)).toBe(7400);
    // A fitting share on the same GPU is still accepted.
    st.allocate(alloc('fits', 'a', [3], 400));
    expect(must(st, 'a').gpuFree[3]).toBe(0);
  });

  it('allocationFor copies the pod request, gang and queue', () => {
    const pod = makePod('p', { gpuCount: 1, gpuMilli: 300, cpuMilli: 1500, memoryMiB: 777 }, { gang: 'g', priority: 3, queue: 'q' });
    expect(allocationFor(pod, 'n', [4])).toEqual({
      podId: 'p',
      node: 'n',
      gpus: [4],
      gpuMilli: 300,
      cpuMilli: 1500,
      memoryMiB: 777,
      gang: 'g',
      priority: 3,
      queue: 'q',
    });
    const cpuOnly = allocationFor(makePod('c', {}), 'n', []);
    expect(cpuOnly.gpuMilli).toBe(0);
    expect('gang' in cpuOnly).toBe(false);
  });

  it('gpuPodTag: share for one fractional GPU, <n>-gpu for whole GPUs, none for CPU-only', () => {
    expect(gpuPodTag(1, 500)).toBe('share');
    expect(gpuPodTag(1, 1000)).toBe('1-gpu');
    expect(gpuPodTag(4, 1000)).toBe('4-gpu');
    expect(gpuPodTag(0, 0)).toBeUndefined();
    expect(gpuPodTag(2, 0)).toBeUndefined();
  });
});

describe('topology order', () => {
  function randomCluster(rng: Rng): NodeSpec[] {
    const specs: NodeSpec[] = [];
    let k = 0;
    for (const zone of ['z0', 'z1', 'z10']) {
      for (const block of ['b0', 'b1']) {
        for (const rack of ['r0', 'r1', 'r2']) {
          const count = 1 + rng.int(4);
          for (let i = 0; i < count; i++) {
            // Some racks hold a multi-node NVLink domain (or two), others none.
            const dom = rack === 'r0' ? 'nvl-a' : rack === 'r1' && i % 2 === 0 ? 'nvl-b' : rack === 'r1' ? 'nvl-c' : undefined;
            specs.push(nodeSpec(`n${String(k++).padStart(3, '0')}`, 'l4x8', { zone, block, rack, ...(dom === undefined ? {} : { nvlinkDomain: dom }) }));
          }
        }
      }
    }
    return shuffle(specs, rng);
  }

  it.each([1, 2, 3, 4, 5])('makes every domain of every level one contiguous index range (seed %i)', (seed) => {
    const specs = randomCluster(seededRng(seed));
    const st = new ClusterState(specs);
    expect(st.size).toBe(specs.length);
    st.nodes.forEach((n, i) => expect(n.idx).toBe(i));
    for (const level of TOPOLOGY_LEVELS) {
      const where = new Map<string, number[]>();
      st.nodes.forEach((n, i) => {
        const key = domainKey(n.spec, level);
        where.set(key, [...(where.get(key) ?? []), i]);
      });
      for (const [key, idxs] of where) {
        expect(idxs[idxs.length - 1]! - idxs[0]! + 1, `${level} ${key}`).toBe(idxs.length);
      }
      // The domain list agrees: one entry per key, ranges tile [0, n) in order, domainOf points back.
      const domains = st.domains[level];
      expect(domains.map((d) => d.key).sort()).toEqual([...where.keys()].sort());
      let next = 0;
      domains.forEach((d, di) => {
        expect(d.level).toBe(level);
        expect(d.start).toBe(next);
        expect(d.end).toBeGreaterThan(d.start);
        next = d.end;
        for (let i = d.start; i < d.end; i++) {
          expect(domainKey(st.nodes[i]!.spec, level)).toBe(d.key);
          expect(st.domainOf[level][i]).toBe(di);
        }
      });
      expect(next).toBe(st.size);
    }
  });

  it('nests NVLink domains in racks: the same domain name in two racks is two domains', () => {
    const st = new ClusterState([
      nodeSpec('a', 'l4x8', { rack: 'r1', nvlinkDomain: 'd' }),
      nodeSpec('b', 'l4x8', { rack: 'r2', nvlinkDomain: 'd' }),
      nodeSpec('c', 'l4x8', { rack: 'r1', nvlinkDomain: 'd' }),
      nodeSpec('e', 'l4x8', { rack: 'r1' }),
    ]);
    expect(st.nodes.map((n) => n.name)).toEqual(['a', 'c', 'e', 'b']);
    expect(st.domains['nvlink-domain'].map((d) => [d.key, d.start, d.end])).toEqual([
      ['z/b/r1/d', 0, 2],
      ['z/b/r1/node:e', 2, 3],
      ['z/b/r2/d', 3, 4],
    ]);
    expect(st.domains.rack.map((d) => [d.key, d.start, d.end])).toEqual([
      ['z/b/r1', 0, 3],
      ['z/b/r2', 3, 4],
    ]);
  });

  it('ranks nodes by name unless a rank function is given', () => {
    const specs = [nodeSpec('c', 'l4x8', { rack: 'r0' }), nodeSpec('a', 'l4x8', { rack: 'r1' }), nodeSpec('b', 'l4x8', { rack: 'r0' })];
    const st = new ClusterState(specs);
    expect(st.nodes.map((n) => [n.name, n.rank])).toEqual([
      ['b', 1],
      ['c', 2],
      ['a', 0],
    ]);
    const custom = new ClusterState(specs, (name) => (name === 'c' ? 0 : 5));
    expect(custom.node('c')?.rank).toBe(0);
    expect(custom.node('a')?.rank).toBe(5);
    // The shared rank array (score indices' tie-break) follows node index.
    expect([...st.ranks()]).toEqual([1, 2, 0]);
    expect([...custom.ranks()]).toEqual(custom.nodes.map((n) => n.rank));
    expect(st.ranks()).toBe(st.ranks());
  });
});

/** Lowest-index usable GPUs with at least `milli` free, or undefined. */
function fitting(n: NodeState, count: number, milli: number): number[] | undefined {
  const out: number[] = [];
  for (let g = 0; g < n.gpuFree.length && out.length < count; g++) if (n.gpuUsable[g] === 1 && n.gpuFree[g]! >= milli) out.push(g);
  return out.length === count ? out : undefined;
}

function bruteFull(st: ClusterState, s: number, e: number): number {
  let c = 0;
  for (let i = s; i < e; i++) for (const f of st.nodes[i]!.gpuFree) if (f === 1000) c++;
  return c;
}
function bruteMilli(st: ClusterState, s: number, e: number): number {
  let c = 0;
  for (let i = s; i < e; i++) for (const f of st.nodes[i]!.gpuFree) c += f;
  return c;
}

describe('range sums (Fenwick trees) and per-domain counts', () => {
  it.each([7, 8, 9])(
    'fullyFreeGpusIn, gpuFreeMilliIn and the per-domain counts equal brute force after random allocate/release/health changes (seed %i)',
    (seed) => {
      const rng = seededRng(seed);
      const shapes = ['l4x8', 'dgx-h100', 't4x4', 'a800x4'];
      const specs = Array.from({ length: 11 }, (_, i) =>
        nodeSpec(`n${i}`, shapes[i % shapes.length], { block: `b${i % 2}`, rack: `r${i % 3}`, ...(i % 4 === 0 ? {} : { nvlinkDomain: `d${i % 4}` }) }),
      );
      const st = new ClusterState(specs);
      const live: string[] = [];
      const mismatches: string[] = [];
      let next = 0;
      for (let step = 0; step < 400; step++) {
        const roll = rng.next();
        if (roll < 0.55) {
          const node = st.nodes[rng.int(st.size)]!;
          const frac = rng.next() < 0.4;
          const count = frac ? 1 : 1 + rng.int(4);
          const milli = frac ? 100 * (1 + rng.int(9)) : 1000;
          const gpus = fitting(node, count, milli);
          if (gpus !== undefined) {
            const id = `p${next++}`;
            st.allocate(alloc(id, node.name, gpus, milli, 100, 100));
            live.push(id);
          }
        } else if (roll < 0.9 && live.length > 0) {
          const [id] = live.splice(rng.int(live.length), 1);
          expect(st.release(id!)).toBeDefined();
        } else {
          const node = st.nodes[rng.int(st.size)]!;
          st.setGpuHealth(node.name, rng.int(node.gpuFree.length), rng.next() < 0.6);
        }
        for (let s = 0; s <= st.size; s++) {
          for (let e = s; e <= st.size; e++) {
            if (st.fullyFreeGpusIn(s, e) !== bruteFull(st, s, e)) mismatches.push(`step ${step} full [${s},${e})`);
            if (st.gpuFreeMilliIn(s, e) !== bruteMilli(st, s, e)) mismatches.push(`step ${step} milli [${s},${e})`);
          }
        }
        for (const level of TOPOLOGY_LEVELS) {
          const counts = st.domainFreeCounts(level);
          st.domains[level].forEach((d, di) => {
            const full = bruteFull(st, d.start, d.end);
            const milli = bruteMilli(st, d.start, d.end);
            if (st.domainFullyFreeGpus(level, di) !== full || counts.fullyFreeGpus[di] !== full) mismatches.push(`step ${step} ${level} ${d.key} full`);
            if (st.domainGpuFreeMilli(level, di) !== milli || counts.gpuFreeMilli[di] !== milli) mismatches.push(`step ${step} ${level} ${d.key} milli`);
          });
        }
      }
      expect(mismatches).toEqual([]);
      // Every pod gone and every GPU healthy again: back to the empty cluster.
      for (const id of live) st.release(id);
      for (const n of st.nodes) for (let g = 0; g < n.gpuFree.length; g++) st.setGpuHealth(n.name, g, true);
      const total = specs.reduce((s, n) => s + n.gpus.length, 0);
      expect(st.fullyFreeGpusIn(0, st.size)).toBe(total);
      expect(st.gpuFreeMilliIn(0, st.size)).toBe(total * 1000);
    },
  );
});

describe('largest domain per level', () => {
  it('counts the GPU devices of the largest domain of each level, unhealthy ones included', () => {
    const st = new ClusterState([
      nodeSpec('a', 'l4x8', { rack: 'r1' }),
      nodeSpec('b', 't4x4', { rack: 'r1' }),
      nodeSpec('c', 'dgx-h100', { rack: 'r2', block: 'b2' }),
      { ...nodeSpec('d', 'l4x8', { rack: 'r3', block: 'b2' }), gpus: NODE_SHAPES['l4x8']!.gpus.map((g) => ({ ...g, healthy: false })) },
    ]);
    expect(st.maxDomainGpus('node')).toBe(8);
    expect(st.maxDomainGpus('nvlink-domain')).toBe(8);
    expect(st.maxDomainGpus('rack')).toBe(12);
    expect(st.maxDomainGpus('block')).toBe(16);
    expect(st.maxDomainGpus('zone')).toBe(28);
  });
});

describe('spec classes', () => {
  it('nodes equal in everything but name and location share a class; any other field separates them', () => {
    const st = new ClusterState([
      nodeSpec('a', 'l4x8', { rack: 'r1' }),
      nodeSpec('b', 'l4x8', { rack: 'r2', nvlinkDomain: 'x' }),
      { ...nodeSpec('c', 'l4x8'), gpus: NODE_SHAPES['l4x8']!.gpus.map((g) => ({ ...g })) }, // equal content, other objects
      { ...nodeSpec('d', 'l4x8'), labels: { pool: 'x' } },
      { ...nodeSpec('e', 'l4x8'), taints: [{ key: 'k', effect: 'NoSchedule' }] },
      { ...nodeSpec('f', 'l4x8'), cpuMilli: 1 },
      { ...nodeSpec('g', 'l4x8'), unschedulable: true },
      { ...nodeSpec('h', 'l4x8'), gpus: NODE_SHAPES['l4x8']!.gpus.map((g, i) => ({ ...g, healthy: i !== 3 })) },
      nodeSpec('i', 't4x4'),
      nodeSpec('j', 't4x4', { zone: 'z2' }),
    ]);
    const { of, count } = st.specClasses();
    const cls = (name: string): number => of[must(st, name).idx]!;
    expect(cls('b')).toBe(cls('a'));
    expect(cls('c')).toBe(cls('a'));
    expect(cls('j')).toBe(cls('i'));
    expect(new Set(['a', 'd', 'e', 'f', 'g', 'h', 'i'].map(cls)).size).toBe(7);
    expect(count).toBe(7);
    expect(Math.max(...of)).toBe(count - 1);
    expect(st.specClasses().of).toBe(of); // computed once
  });
});

describe('change log', () => {
  it('records every mutation once, in order, with the node index; forEachChange walks the same entries', () => {
    const st = new ClusterState([nodeSpec('a'), nodeSpec('b'), nodeSpec('c')]);
    expect(st.seq).toBe(0);
    expect(st.changesSince(0)).toEqual([]);
    st.allocate(alloc('p1', 'c', [0]));
    st.allocate(alloc('p2', 'a', [0]));
    const mid = st.seq;
    st.release('p1');
    st.setGpuHealth('b', 2, false);
    st.setGpuHealth('b', 2, false); // no change: not logged
    st.setGpuHealth('zz', 0, false); // unknown node: ignored
    st.setGpuHealth('b', 99, false); // unknown GPU: ignored
    expect(st.seq).toBe(4);
    expect(st.changesSince(0)).toEqual([2, 0, 2, 1]);
    expect(st.changesSince(mid)).toEqual([2, 1]);
    expect(st.changesSince(st.seq)).toEqual([]);
    const seen: number[] = [];
    expect(st.forEachChange(mid, (i) => seen.push(i))).toBe(true);
    expect(seen).toEqual([2, 1]);
    expect(must(st, 'c').version).toBe(2);
    expect(must(st, 'a').version).toBe(1);
    expect(must(st, 'b').version).toBe(1);
  });

  it('drops old entries once the log grows past its slack, and says so', () => {
    const st = new ClusterState([nodeSpec('a'), nodeSpec('b')]);
    const limit = 4 * 2 + 1024;
    for (let i = 0; i <= limit; i++) {
      if (i % 2 === 0) st.allocate(alloc('p', 'b', [0]));
      else st.release('p');
    }
    expect(st.seq).toBe(limit + 1);
    expect(st.changesSince(0)).toBeUndefined();
    let called = 0;
    expect(st.forEachChange(0, () => called++)).toBe(false);
    expect(called).toBe(0);
    // Recent history is still there.
    expect(st.changesSince(st.seq - 3)).toEqual([1, 1, 1]);
    const recent: number[] = [];
    expect(st.forEachChange(st.seq - 2, (i) => recent.push(i))).toBe(true);
    expect(recent).toEqual([1, 1]);
  });
});

describe('GPU health', () => {
  it('an unhealthy GPU has 0 free and is not usable; when it recovers it shows the share its pods still hold', () => {
    const st = new ClusterState([nodeSpec('a')]);
    const a = must(st, 'a');
    st.allocate(alloc('f', 'a', [0], 300));
    st.setGpuHealth('a', 0, false);
    st.setGpuHealth('a', 5, false);
    expect(a.gpuFree[0]).toBe(0);
    expect(a.gpuFree[5]).toBe(0);
    expect(a.gpuUsable[5]).toBe(0);
    expect(a.usableGpuCount()).toBe(6);
    expect(st.fullyFreeGpusIn(0, 1)).toBe(6);
    expect(st.gpuFreeMilliIn(0, 1)).toBe(6000);
    expect(() => st.allocate(alloc('x', 'a', [5], 100))).toThrow(/over-committed/);
    st.setGpuHealth('a', 0, true);
    expect(a.gpuFree[0]).toBe(700);
    expect(a.gpuUsable[0]).toBe(1);
    expect(st.gpuFreeMilliIn(0, 1)).toBe(6700);
  });

  it('releasing a pod from an unhealthy GPU keeps it at 0 until it recovers', () => {
    const st = new ClusterState([nodeSpec('a')]);
    const a = must(st, 'a');
    st.allocate(alloc('w', 'a', [2, 3]));
    st.setGpuHealth('a', 2, false);
    st.release('w');
    expect(a.gpuFree[2]).toBe(0);
    expect(a.gpuFree[3]).toBe(1000);
    expect(a.fullyFreeGpus()).toBe(7);
    expect(st.fullyFreeGpusIn(0, 1)).toBe(7);
    expect(st.gpuFreeMilliIn(0, 1)).toBe(7000);
    st.setGpuHealth('a', 2, true);
    expect(a.gpuFree[2]).toBe(1000);
    expect(st.fullyFreeGpusIn(0, 1)).toBe(8);
  });

  it('devices reported unhealthy in the spec start unusable', () => {
    const base = nodeSpec('a');
    const st = new ClusterState([{ ...base, gpus: base.gpus.map((g) => (g.index === 1 ? { ...g, healthy: false } : g)) }]);
    expect([...must(st, 'a').gpuUsable]).toEqual([1, 0, 1, 1, 1, 1, 1, 1]);
    expect(st.gpuFreeMilliIn(0, 1)).toBe(7000);
  });
});
