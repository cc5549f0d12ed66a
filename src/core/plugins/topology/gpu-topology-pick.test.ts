import { describe, expect, it } from 'vitest';
import { pickTopologyGpus } from './gpu-topology-pick.ts';
import { bestGpuSet } from '../../model/gpu-sets.ts';
import { ClusterState, type NodeState } from '../../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../../model/presets.ts';
import { makeGpus } from '../../model/gpu.ts';
import type { NodeSpec } from '../../model/node.ts';
import { makePod } from '../../model/pod.ts';
import { seededRng } from '../../ports.ts';
import { buildTopology, ringBottleneckGBps, type NodeGpuTopology } from '../../model/topology.ts';

function spec(shapeId: string, extra: Partial<NodeSpec> = {}): NodeSpec {
  const s = NODE_SHAPES[shapeId];
  if (s === undefined) throw new Error(`no preset ${shapeId}`);
  return {
    name: 'n',
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack: 'r' },
    labels: {},
    taints: [],
    unschedulable: false,
    ...extra,
  };
}

/** A node whose listed GPUs already hold the given milli. */
function node(shapeId: string, used: Readonly<Record<number, number>> = {}, extra: Partial<NodeSpec> = {}): NodeState {
  const st = new ClusterState([spec(shapeId, extra)]);
  let k = 0;
  for (const [g, milli] of Object.entries(used))
    st.allocate({ podId: `u${k++}`, node: 'n', gpus: [Number(g)], gpuMilli: milli, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
  return st.nodes[0] as NodeState;
}

const pick = (n: NodeState, count: number): number[] | undefined => pickTopologyGpus(makePod('p', { gpuCount: count }), n);

/** Four GPUs, every pair the same NVLink bandwidth (one island), so only NUMA/PCIe/index rules decide. */
function flatRing(numaOf: number[], pcieSwitchOf: number[]): NodeGpuTopology {
  return buildTopology({ gpuCount: 4, numaOf, pcieSwitchOf, pair: () => ({ cls: 'nvlink', gbps: 100 }) });
}

describe('pickTopologyGpus', () => {
  it('with an allowed mask picks among the allowed GPUs only, by the same rules', () => {
    const n = node('nvlink-2x4', { 0: 1000 });
    const island1 = [0, 0, 0, 0, 1, 1, 1, 1];
    // Unmasked the pod packs island 0 ([2, 3]); restricted to island 1 it takes a PCIe-switch pair there.
    expect(pickTopologyGpus(makePod('p', { gpuCount: 2 }), n, island1)).toEqual([4, 5]);
    expect(pickTopologyGpus(makePod('p', { gpuCount: 4 }), n, island1)).toEqual([4, 5, 6, 7]);
    expect(pickTopologyGpus(makePod('p', { gpuCount: 4 }), n, [1, 1, 1, 1, 0, 0, 0, 0])).toBeUndefined();
    // Packing still counts the node's other free GPUs: with GPU 4 busy, one GPU goes to its switch partner 5.
    const busy4 = node('nvlink-2x4', { 4: 1000 });
    expect(pickTopologyGpus(makePod('p', { gpuCount: 1 }), busy4, [0, 0, 0, 0, 0, 1, 1, 1])).toEqual([5]);
  });

  it('packs islands before PCIe switches: nvlink-2x4 with GPU 0 busy, a 2-GPU pod stays in the first island', () => {
    // Island A has {1,2,3} free, island B all four: {2,3} (one switch, island A) beats {4,5} (one switch, island B).
    expect(pick(node('nvlink-2x4', { 0: 1000 }), 2)).toEqual([2, 3]);
  });

  it('packs PCIe switches for one GPU: l4x8 with GPU 2 busy gives GPU 3, its switch partner', () => {
    expect(pick(node('l4x8', { 2: 1000 }), 1)).toEqual([3]);
    // Same socket first: with GPU 5 busy the partner 4 is taken, not GPU 0.
    expect(pick(node('l4x8', { 5: 1000 }), 1)).toEqual([4]);
  });

  it('nvlink-2x4: a 4-GPU pod takes one whole island', () => {
    expect(pick(node('nvlink-2x4'), 4)).toEqual([0, 1, 2, 3]);
    // One GPU of the first island is busy: the other island is the only 200 GB/s ring.
    expect(pick(node('nvlink-2x4', { 1: 1000 }), 4)).toEqual([4, 5, 6, 7]);
    // A partly used GPU is not free either.
    expect(pick(node('nvlink-2x4', { 2: 1 }), 4)).toEqual([4, 5, 6, 7]);
  });

  it('nvlink-2x4: a 2-GPU pod packs the island with 2 free rather than opening the island with 4 free', () => {
    // Second island has {6, 7} free, first island all four: lowest-index first fit would take {0, 1}.
    expect(pick(node('nvlink-2x4', { 4: 1000, 5: 1000 }), 2)).toEqual([6, 7]);
    // Mirror image.
    expect(pick(node('nvlink-2x4', { 0: 1000, 1: 1000 }), 2)).toEqual([2, 3]);
    // One whole GPU goes to the fuller island too.
    expect(pick(node('nvlink-2x4', { 4: 1000 }), 1)).toEqual([5]);
  });

  it('v100-hcm: a 4-GPU pod takes a fully NVLinked quad on one socket', () => {
    expect(pick(node('v100-hcm'), 4)).toEqual([0, 1, 2, 3]);
    // With GPU 1 busy, {0,3,4,7} also rings at 25 GB/s but spans both sockets; {4,5,6,7} does not.
    expect(pick(node('v100-hcm', { 1: 1000 }), 4)).toEqual([4, 5, 6, 7]);
  });

  it('v100-hcm: a 2-GPU pod takes an NV2 pair (50 GB/s) under one PCIe switch: {2,3}, not the NV1 pair {0,1}', () => {
    expect(pick(node('v100-hcm'), 2)).toEqual([2, 3]);
    expect(pick(node('v100-hcm', { 2: 1000 }), 2)).toEqual([6, 7]);
  });

  it('PCIe only: a pair under one switch before a pair across switches or sockets', () => {
    expect(pick(node('l4x8'), 2)).toEqual([0, 1]);
    expect(pick(node('l4x8', { 0: 1000 }), 2)).toEqual([2, 3]);
    // Free {1, 2, 4, 7}: {1, 2} and {4, 7} both ring at 12 GB/s inside one socket (two switches each); index order decides.
    expect(pick(node('l4x8', { 0: 1000, 3: 1000, 5: 1000, 6: 1000 }), 2)).toEqual([1, 2]);
    // Free {0, 4, 5}: the switch pair {4, 5} (16) beats first fit {0, 4} across sockets (8).
    expect(pick(node('l4x8', { 1: 1000, 2: 1000, 3: 1000, 6: 1000, 7: 1000 }), 2)).toEqual([4, 5]);
    // Free {0, 4, 6}: the same-socket pair {4, 6} (12) beats {0, 4} and {0, 6} (8).
    expect(pick(node('l4x8', { 1: 1000, 2: 1000, 3: 1000, 5: 1000, 7: 1000 }), 2)).toEqual([4, 6]);
  });

  it('dgx-h100: any set rings at 450, so NUMA, then PCIe switches, then index order decide', () => {
    expect(pick(node('dgx-h100'), 8)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(pick(node('dgx-h100'), 2)).toEqual([0, 1]);
    // GPU 0 busy: {2,3} (one switch) beats {1,2} (two switches).
    expect(pick(node('dgx-h100', { 0: 1000 }), 2)).toEqual([2, 3]);
    // GPUs 0 and 2 busy: socket 0 has only {1, 3} free, so 3 GPUs come from socket 1.
    expect(pick(node('dgx-h100', { 0: 1000, 2: 1000 }), 3)).toEqual([4, 5, 6]);
  });

  it('skips unhealthy and partly used GPUs, and returns undefined when too few are fully free', () => {
    const gpus = makeGpus(4, 'T4').map((g) => (g.index === 1 ? { ...g, healthy: false } : g));
    const n = node('t4x4', { 0: 500 }, { gpus });
    expect(pick(n, 2)).toEqual([2, 3]);
    expect(pick(n, 3)).toBeUndefined();
  });
});

describe('bestGpuSet tie rules', () => {
  it('ring bandwidth first, even across NUMA nodes', () => {
    const t = buildTopology({
      gpuCount: 4,
      numaOf: [0, 0, 1, 1],
      pcieSwitchOf: [0, 1, 2, 3],
      pair: (a, b) => (a === 0 && b === 2 ? { cls: 'nvlink', gbps: 100 } : undefined),
    });
    expect(bestGpuSet(t, [0, 1, 2, 3], 2)).toEqual([0, 2]);
  });

  it('with equal rings, fewer NUMA nodes wins over fewer PCIe switches', () => {
    // {0,1}: 2 NUMA nodes, 1 switch. {0,2}: 1 NUMA node, 2 switches.
    const t = flatRing([0, 1, 0, 1], [0, 0, 1, 2]);
    expect(bestGpuSet(t, [0, 1, 2, 3], 2)).toEqual([0, 2]);
  });

  it('with equal rings and NUMA nodes, fewer PCIe switches wins over lower indices', () => {
    const t = flatRing([0, 0, 0, 0], [0, 1, 1, 2]);
    expect(bestGpuSet(t, [0, 1, 2, 3], 2)).toEqual([1, 2]);
    expect(bestGpuSet(t, [0, 1, 2, 3], 3)).toEqual([0, 1, 2]);
  });

  it('with everything else equal, the set that leaves the fewest free GPUs in the islands it touches', () => {
    // Two NVLink islands {0,1,2} and {3,4}, every GPU on its own switch and socket 0: {3,4} empties its island.
    const t = buildTopology({
      gpuCount: 5,
      numaOf: [0, 0, 0, 0, 0],
      pcieSwitchOf: [0, 1, 2, 3, 4],
      pair: (a, b) => (a < 3 === b < 3 ? { cls: 'nvlink', gbps: 100 } : { cls: 'numa', gbps: 1 }),
    });
    expect(t.islandOf).toEqual([0, 0, 0, 1, 1]);
    expect(bestGpuSet(t, [0, 1, 2, 3, 4], 2)).toEqual([3, 4]);
    expect(bestGpuSet(t, [0, 1, 2, 3, 4], 1)).toEqual([3]);
  });

  it('lowest indices last', () => {
    const t = flatRing([0, 0, 0, 0], [0, 1, 2, 3]);
    expect(bestGpuSet(t, [1, 2, 3], 2)).toEqual([1, 2]);
  });

  it('edge cases: nothing asked, everything asked, too much asked', () => {
    const t = flatRing([0, 0, 0, 0], [0, 1, 2, 3]);
    expect(bestGpuSet(t, [0, 1, 2, 3], 0)).toBeUndefined();
    expect(bestGpuSet(t, [1, 3], 2)).toEqual([1, 3]);
    expect(bestGpuSet(t, [1, 3], 3)).toBeUndefined();
  });
});

/** The first implementation (a Set and an object per candidate set), kept as the reference for the allocation-free one. */
function referenceBestGpuSet(topo: NodeGpuTopology, freeSet: readonly number[], count: number): number[] | undefined {
  type C = { gpus: number[]; ring: number; numa: number; pcie: number; islandFreeLeft: number; numaFreeLeft: number; pcieFreeLeft: number };
  const distinct = (values: readonly number[], gpus: readonly number[]): number => new Set(gpus.map((g) => values[g])).size;
  const freeLeftIn = (groupOf: readonly number[], gpus: readonly number[]): number => {
    const touched = new Set(gpus.map((g) => groupOf[g]));
    return freeSet.filter((f) => touched.has(groupOf[f]) && !gpus.includes(f)).length;
  };
  const better = (a: C, b: C): boolean => {
    if (a.ring !== b.ring) return a.ring > b.ring;
    if (a.islandFreeLeft !== b.islandFreeLeft) return a.islandFreeLeft < b.islandFreeLeft;
    if (a.numa !== b.numa) return a.numa < b.numa;
    if (a.pcie !== b.pcie) return a.pcie < b.pcie;
    if (a.numaFreeLeft !== b.numaFreeLeft) return a.numaFreeLeft < b.numaFreeLeft;
    if (a.pcieFreeLeft !== b.pcieFreeLeft) return a.pcieFreeLeft < b.pcieFreeLeft;
    for (let i = 0; i < a.gpus.length; i++) if (a.gpus[i] !== b.gpus[i]) return a.gpus[i]! < b.gpus[i]!;
    return false;
  };
  if (count > freeSet.length || count <= 0) return undefined;
  if (count === freeSet.length) return [...freeSet];
  let best: C | undefined;
  const pickSet: number[] = [];
  const rec = (from: number): void => {
    if (pickSet.length === count) {
      const gpus = [...pickSet];
      const c = {
        gpus,
        ring: ringBottleneckGBps(topo, gpus),
        numa: distinct(topo.numaOf, gpus),
        pcie: distinct(topo.pcieSwitchOf, gpus),
        islandFreeLeft: freeLeftIn(topo.islandOf, gpus),
        numaFreeLeft: freeLeftIn(topo.numaOf, gpus),
        pcieFreeLeft: freeLeftIn(topo.pcieSwitchOf, gpus),
      };
      if (best === undefined || better(c, best)) best = c;
      return;
    }
    for (let i = from; i <= freeSet.length - (count - pickSet.length); i++) {
      pickSet.push(freeSet[i]!);
      rec(i + 1);
      pickSet.pop();
    }
  };
  rec(0);
  return best?.gpus;
}

describe('bestGpuSet equals the reference implementation', () => {
  it('on every preset, every free set of up to 8 GPUs and every count', () => {
    const problems: string[] = [];
    for (const [id, shape] of Object.entries(NODE_SHAPES)) {
      const topo = shape.topology;
      const n = Math.min(topo.gpuCount, 8);
      for (let mask = 0; mask < 1 << n; mask++) {
        const free: number[] = [];
        for (let g = 0; g < n; g++) if (mask & (1 << g)) free.push(g);
        for (let count = 1; count <= free.length; count++) {
          const got = bestGpuSet(topo, free, count);
          const want = referenceBestGpuSet(topo, free, count);
          if (JSON.stringify(got) !== JSON.stringify(want))
            problems.push(`${id} free ${free.join(',')} count ${count}: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('pickTopologyGpus on nodes in random states (its scratch list of free GPUs shrinks and grows between calls)', () => {
    const rng = seededRng(3);
    const problems: string[] = [];
    for (let t = 0; t < 400; t++) {
      const shapeId = ['hgx-a100', 'dgx-h100', 'l4x8', 'v100-hcm', 'nvlink-2x4'][rng.int(5)]!;
      const n = NODE_SHAPES[shapeId]!.topology.gpuCount;
      const used: Record<number, number> = {};
      for (let g = 0; g < n; g++) if (rng.next() < 0.4) used[g] = rng.next() < 0.5 ? 1000 : 300;
      const nd = node(shapeId, used);
      const free = Array.from({ length: n }, (_, g) => g).filter((g) => used[g] === undefined);
      const count = 1 + rng.int(4);
      const got = pick(nd, count);
      const want = referenceBestGpuSet(nd.spec.topology, free, count);
      if (JSON.stringify(got) !== JSON.stringify(want))
        problems.push(`${shapeId} used ${JSON.stringify(used)} count ${count}: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`);
    }
    expect(problems).toEqual([]);
  });
});
