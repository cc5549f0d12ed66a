import { describe, expect, it } from 'vitest';
import { describeMembers, Scheduler, type GangOutcome, type PodOutcome } from './scheduler.ts';
import { buildProfile } from '../plugins/registry.ts';
import type { Plugin, Profile } from './types.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod, type GangSpec, type PodSpec, type TopologyConstraint } from '../model/pod.ts';
import type { NodeLocation } from '../model/topology.ts';
import { seededRng } from '../ports.ts';

function nodeSpec(name: string, shapeId: string, location: Partial<NodeLocation> = {}, extra: Partial<NodeSpec> = {}): NodeSpec {
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
    ...extra,
  };
}

/** fit + topology-aware GPU choice, no scorers (ties go to the lowest node name), topology gang search. */
function profile(overrides: { gangSearch?: 'topology' | 'flat'; selector?: 'best' | 'random' | 'round-robin' } = {}): Profile {
  const p = buildProfile(
    {
      name: 'test',
      description: 'test',
      queueSort: 'priority-fifo',
      filters: ['fit'],
      scorers: [],
      devicePicker: 'gpu-topology',
      selector: overrides.selector ?? 'best',
      gangSearch: overrides.gangSearch ?? 'topology',
    },
    { typicalShapes: [] },
  );
  if (!p.ok) throw new Error('profile');
  return p.value;
}

function scheduler(specs: readonly NodeSpec[], p: Profile = profile()): Scheduler {
  return new Scheduler(p, new ClusterState(specs), seededRng(1));
}

/** Takes whole GPUs on a node before the test, outside any gang. */
function occupy(s: Scheduler, node: string, gpus: readonly number[], id = `busy-${node}-${gpus.join('')}`): void {
  s.state.allocate({ podId: id, node, gpus, gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
}

function gang(
  name: string,
  replicas: number,
  gpus: number,
  topology: TopologyConstraint = {},
  minMember = replicas,
  extra: Partial<Parameters<typeof makePod>[1]> = {},
): GangSpec {
  const members = Array.from({ length: replicas }, (_, k) => makePod(`${name}-${k}`, { gpuCount: gpus, ...extra }, { gang: name }));
  return { name, minMember, members, topology, priority: 0, queue: 'default' };
}

function resources(s: Scheduler): unknown {
  return s.state.nodes.map((n) => ({
    name: n.name,
    cpu: n.cpuUsedMilli,
    mem: n.memUsedMiB,
    pods: n.podCount,
    free: [...n.gpuFree],
    allocations: [...n.allocations.keys()].sort(),
  }));
}

function placed(o: PodOutcome): { node: string; gpus: readonly number[] } {
  if (!o.ok) throw new Error(`not placed: ${o.explanation.message}`);
  return { node: o.placement.node, gpus: o.placement.gpus };
}

function gangOk(o: GangOutcome): Extract<GangOutcome, { ok: true }> {
  if (!o.ok) throw new Error(`gang not placed: ${o.explanation.message}`);
  return o;
}

function gangFail(o: GangOutcome): Extract<GangOutcome, { ok: false }> {
  if (o.ok) throw new Error(`gang unexpectedly placed on ${o.placements.map((p) => p.node).join(',')}`);
  return o;
}

const rackOf = (s: Scheduler, node: string): string => s.state.node(node)?.spec.location.rack ?? '?';

describe('Scheduler.schedulePod', () => {
  it('returns the chosen GPU indices with the placement, the same ones the state holds', () => {
    const s = scheduler([nodeSpec('n1', 'nvlink-2x4')]);
    expect(placed(s.schedulePod(makePod('p4', { gpuCount: 4 })))).toEqual({ node: 'n1', gpus: [0, 1, 2, 3] });
    expect(placed(s.schedulePod(makePod('p2a', { gpuCount: 2 })))).toEqual({ node: 'n1', gpus: [4, 5] });
    expect(placed(s.schedulePod(makePod('p2b', { gpuCount: 2 })))).toEqual({ node: 'n1', gpus: [6, 7] });
    expect(s.state.allocation('p4')?.gpus).toEqual([0, 1, 2, 3]);
    expect(s.state.allocation('p2b')?.gpus).toEqual([6, 7]);
    expect(placed(s.schedulePod(makePod('cpu', {})))).toEqual({ node: 'n1', gpus: [] });
    const o = s.schedulePod(makePod('p1', { gpuCount: 1 }));
    expect(o.ok).toBe(false);
    if (!o.ok) {
      expect(o.explanation.message).toBe('0/1 nodes fit pod p1: 1 insufficient nvidia.com/gpu');
      expect(o.explanation.unresolvable).toBe(false);
    }
  });

  it('explains a pod that fits nowhere, reasons counted over nodes, most frequent first', () => {
    const s = scheduler([
      nodeSpec('a1', 'hgx-a100'),
      nodeSpec('a2', 'hgx-a100'),
      nodeSpec('l1', 'l4x8'),
      nodeSpec('h1', 'dgx-h100', {}, { unschedulable: true }),
    ]);
    const o = s.schedulePod(makePod('needs-90', { gpuCount: 1 }, { minComputeCapability: 90 }));
    expect(o.ok).toBe(false);
    if (o.ok) return;
    expect(o.explanation.message).toBe('0/4 nodes fit pod needs-90: 3 GPU model not allowed (needs sm_90), 1 node cordoned (unschedulable)');
    expect(o.explanation.reasons).toEqual([
      { reason: 'GPU model not allowed (needs sm_90)', count: 3 },
      { reason: 'node cordoned (unschedulable)', count: 1 },
    ]);
    expect(o.explanation.fitting).toBe(0);
    expect(o.explanation.nodes).toBe(4);
    expect(o.explanation.unresolvable).toBe(true);
  });

  it('a pod that needs sm_90 lands on the H100, never an A100', () => {
    const s = scheduler([nodeSpec('a1', 'hgx-a100'), nodeSpec('h1', 'dgx-h100'), nodeSpec('a2', 'hgx-a100')]);
    for (let i = 0; i < 8; i++) expect(placed(s.schedulePod(makePod(`p${i}`, { gpuCount: 1 }, { minComputeCapability: 90 }))).node).toBe('h1');
    expect(s.schedulePod(makePod('p8', { gpuCount: 1 }, { minComputeCapability: 90 })).ok).toBe(false);
  });

  it('a preFilter rejection is explained before any node is looked at and changes nothing', () => {
    const s = scheduler([nodeSpec('n1', 'l4x8'), nodeSpec('n2', 'l4x8'), nodeSpec('n3', 'l4x8')]);
    const seq = s.state.seq;
    const o = s.schedulePod(makePod('bad', { gpuCount: 2, gpuMilli: 500 }));
    expect(o.ok).toBe(false);
    if (o.ok) return;
    expect(o.explanation.message).toBe('0/3 nodes fit pod bad: a fractional GPU request (500 milli) is only allowed for one device, not 2');
    expect(o.explanation.unresolvable).toBe(true);
    expect(s.state.seq).toBe(seq);
  });

  it('a reserve plugin that refuses rolls the pod back and calls unreserve', () => {
    const calls: string[] = [];
    const refuse: Plugin = {
      name: 'refuse',
      reserve: (pod) => {
        calls.push(`reserve ${pod.id}`);
        return { code: 'Unschedulable', reasons: ['no'] };
      },
      unreserve: (pod) => void calls.push(`unreserve ${pod.id}`),
    };
    const s = scheduler([nodeSpec('n1', 'l4x8')], { ...profile(), reserves: [refuse] });
    const before = resources(s);
    const o = s.schedulePod(makePod('p', { gpuCount: 1 }));
    expect(o.ok).toBe(false);
    expect(calls).toEqual(['reserve p', 'unreserve p']);
    expect(resources(s)).toEqual(before);
  });

  it('round-robin visits the feasible nodes in turn; random stays on feasible nodes and repeats for a seed', () => {
    const specs = [nodeSpec('n0', 'l4x8'), nodeSpec('n1', 'l4x8', {}, { unschedulable: true }), nodeSpec('n2', 'l4x8'), nodeSpec('n3', 'l4x8')];
    const rr = scheduler(specs, profile({ selector: 'round-robin' }));
    expect(Array.from({ length: 5 }, (_, i) => placed(rr.schedulePod(makePod(`r${i}`, { gpuCount: 1 }))).node)).toEqual(['n0', 'n2', 'n3', 'n0', 'n2']);
    const run = (): string[] => {
      const rnd = scheduler(specs, profile({ selector: 'random' }));
      return Array.from({ length: 12 }, (_, i) => placed(rnd.schedulePod(makePod(`x${i}`, { gpuCount: 1 }))).node);
    };
    const a = run();
    expect(a).not.toContain('n1');
    expect(run()).toEqual(a);
    expect(new Set(a).size).toBeGreaterThan(1);
  });
});

describe('Scheduler.scheduleGang', () => {
  it('an 8-GPU gang goes to the one node with all 8 GPUs free, not split over two half-free nodes', () => {
    const s = scheduler([nodeSpec('a', 'dgx-h100'), nodeSpec('b', 'dgx-h100'), nodeSpec('c', 'dgx-h100')]);
    occupy(s, 'a', [0, 1, 2, 3]);
    occupy(s, 'b', [4, 5, 6, 7]);
    const o = gangOk(s.scheduleGang(gang('g8', 8, 1)));
    expect(o.level).toBe('node');
    expect(o.placements.map((p) => p.node)).toEqual(Array(8).fill('c'));
    expect(o.placements.flatMap((p) => p.gpus).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(o.pending).toEqual([]);
  });

  it('a gang that cannot fit leaves the state exactly as it was and says why', () => {
    const s = scheduler([nodeSpec('a', 'dgx-h100'), nodeSpec('b', 'dgx-h100')]);
    occupy(s, 'a', [0, 1]);
    occupy(s, 'b', [0, 1]);
    const before = resources(s);
    // 12 GPUs free in total, enough for 3×4 on paper, but each node only holds one 4-GPU member.
    const o = gangFail(s.scheduleGang(gang('g', 3, 4)));
    expect(resources(s)).toEqual(before);
    expect(o.explanation.message).toMatch(/^0\/2 nodes fit gang/);
    expect(o.explanation.message).toBe('0/2 nodes fit gang g (3×4 GPU): 2 could hold single members, but not 3 of them together');
    expect(o.explanation.fitting).toBe(0);
    expect(o.explanation.unresolvable).toBe(false);
    // The pods of the gang were never left behind.
    for (let k = 0; k < 3; k++) expect(s.state.nodeOfPod(`g-${k}`)).toBeUndefined();
  });

  it('a gang whose members fit no node explains with the node reasons and is unresolvable', () => {
    const s = scheduler([nodeSpec('a', 'hgx-a100'), nodeSpec('b', 'hgx-a100')]);
    const g = gang('sm90', 2, 1);
    const needs90: GangSpec = { ...g, members: g.members.map((m) => ({ ...m, minComputeCapability: 90 })) };
    const o = gangFail(s.scheduleGang(needs90));
    expect(o.explanation.message).toBe('0/2 nodes fit gang sm90 (2×1 GPU): 2 GPU model not allowed (needs sm_90)');
    expect(o.explanation.unresolvable).toBe(true);
  });

  it('a permit plugin that refuses rolls the whole gang back', () => {
    const deny: Plugin = { name: 'deny', permit: () => ({ code: 'Unschedulable' }) };
    const s = scheduler([nodeSpec('a', 'dgx-h100')], { ...profile(), permits: [deny] });
    const before = resources(s);
    gangFail(s.scheduleGang(gang('g', 2, 2)));
    expect(resources(s)).toEqual(before);
  });

  it('minMember < replicas: places what fits, at least minMember, and lists the rest as pending', () => {
    const s = scheduler([nodeSpec('a', 'dgx-h100')]);
    const o = gangOk(s.scheduleGang(gang('el', 4, 4, {}, 2)));
    expect(o.placements.length).toBeGreaterThanOrEqual(2);
    expect(o.placements.map((p) => [p.podId, p.gpus])).toEqual([
      ['el-0', [0, 1, 2, 3]],
      ['el-1', [4, 5, 6, 7]],
    ]);
    expect(o.pending).toEqual(['el-2', 'el-3']);
    expect(s.state.nodeOfPod('el-1')?.name).toBe('a');
    expect(s.state.nodeOfPod('el-2')).toBeUndefined();
  });

  it('fewer than minMember placeable means nothing placed', () => {
    const s = scheduler([nodeSpec('a', 'dgx-h100')]);
    occupy(s, 'a', [0]);
    const before = resources(s);
    // 7 GPUs free: one 4-GPU member fits, minMember is 2.
    gangFail(s.scheduleGang(gang('el', 4, 4, {}, 2)));
    expect(resources(s)).toEqual(before);
  });

  it('a gang with fewer members than minMember is refused outright', () => {
    const s = scheduler([nodeSpec('a', 'dgx-h100')]);
    const o = gangFail(s.scheduleGang({ ...gang('short', 1, 1), minMember: 2 }));
    expect(o.explanation.message).toBe('0/1 nodes fit gang short (1×1 GPU): only 1 of minMember 2 pods exist');
  });

  it('explains a preFilter rejection of a member for the gang', () => {
    const s = scheduler([nodeSpec('a', 'dgx-h100'), nodeSpec('b', 'dgx-h100')]);
    const o = gangFail(s.scheduleGang(gang('frac', 2, 2, {}, 2, { gpuMilli: 500 })));
    expect(o.explanation.message).toBe('0/2 nodes fit gang frac (2×0.5 GPU): a fractional GPU request (500 milli) is only allowed for one device, not 2');
    expect(o.explanation.unresolvable).toBe(true);
  });

  it('a 16-GPU gang lands on two nodes of one rack', () => {
    const s = scheduler([
      nodeSpec('r1-a', 'dgx-h100', { rack: 'r1' }),
      nodeSpec('r1-b', 'dgx-h100', { rack: 'r1' }),
      nodeSpec('r2-a', 'dgx-h100', { rack: 'r2' }),
      nodeSpec('r2-b', 'dgx-h100', { rack: 'r2' }),
    ]);
    occupy(s, 'r1-a', [0]);
    const o = gangOk(s.scheduleGang(gang('t16', 16, 1)));
    expect(o.level).toBe('rack');
    const nodes = new Set(o.placements.map((p) => p.node));
    expect([...nodes].sort()).toEqual(['r2-a', 'r2-b']);
  });

  it('required: rack waits rather than span racks; without it the gang spans the block', () => {
    const specs = [
      nodeSpec('r1-a', 'dgx-h100', { rack: 'r1' }),
      nodeSpec('r1-b', 'dgx-h100', { rack: 'r1' }),
      nodeSpec('r2-a', 'dgx-h100', { rack: 'r2' }),
      nodeSpec('r2-b', 'dgx-h100', { rack: 'r2' }),
    ];
    const setup = (): Scheduler => {
      const s = scheduler(specs);
      occupy(s, 'r1-a', [0, 1, 2, 3]);
      occupy(s, 'r2-b', [0, 1, 2, 3]);
      return s;
    };
    const s = setup();
    const before = resources(s);
    const o = gangFail(s.scheduleGang(gang('t', 16, 1, { required: 'rack' })));
    expect(resources(s)).toEqual(before);
    expect(o.explanation.message).toBe('0/4 nodes fit gang t (16×1 GPU): 4 would split the rack (required)');
    const free = setup();
    const ok = gangOk(free.scheduleGang(gang('t', 16, 1)));
    expect(ok.level).toBe('block');
    expect(new Set(ok.placements.map((p) => rackOf(free, p.node)))).toEqual(new Set(['r1', 'r2']));
  });

  it('required: rack never spans racks over a random sequence of gangs (topology and flat search)', () => {
    for (const gangSearch of ['topology', 'flat'] as const) {
      const rng = seededRng(gangSearch === 'topology' ? 5 : 6);
      const specs: NodeSpec[] = [];
      for (const rack of ['r1', 'r2', 'r3'])
        for (let i = 0; i < 3; i++) specs.push(nodeSpec(`${rack}-${i}`, i === 2 ? 'nvlink-2x4' : 'dgx-h100', { rack, block: rack === 'r3' ? 'b2' : 'b1' }));
      const s = scheduler(specs, profile({ gangSearch }));
      let placedGangs = 0;
      let failedGangs = 0;
      const live: string[] = [];
      for (let round = 0; round < 60; round++) {
        if (live.length > 0 && rng.next() < 0.35) {
          const name = live.splice(rng.int(live.length), 1)[0] as string;
          for (let k = 0; k < 32; k++) s.state.release(`${name}-${k}`);
        }
        const per = [1, 2, 4, 8][rng.int(4)] as number;
        const replicas = 1 + rng.int(Math.max(1, Math.floor(24 / per)));
        const name = `g${round}`;
        const before = resources(s);
        const o = s.scheduleGang(gang(name, replicas, per, { required: 'rack' }));
        if (o.ok) {
          placedGangs++;
          live.push(name);
          expect(new Set(o.placements.map((p) => rackOf(s, p.node))).size, name).toBe(1);
          expect(o.placements).toHaveLength(replicas);
        } else {
          failedGangs++;
          expect(resources(s), name).toEqual(before);
          expect(o.explanation.message).toMatch(new RegExp(`^0/9 nodes fit gang ${name} `));
        }
      }
      expect(placedGangs).toBeGreaterThan(5);
      expect(failedGangs).toBeGreaterThan(5);
    }
  });

  it('required: nvlink-domain on nodes outside any multi-node domain keeps the gang inside one NVLink island', () => {
    const s = scheduler([nodeSpec('n', 'nvlink-2x4')]);
    const before = resources(s);
    // 2×4 GPUs would need both islands of the node.
    gangFail(s.scheduleGang(gang('wide', 2, 4, { required: 'nvlink-domain' })));
    expect(resources(s)).toEqual(before);
    const o = gangOk(s.scheduleGang(gang('narrow', 2, 2, { required: 'nvlink-domain' })));
    expect(o.placements.map((p) => p.gpus)).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });

  it('required: nvlink-domain picks the island that holds the whole gang, not the one the GPU picker packs first', () => {
    const s = scheduler([nodeSpec('n', 'nvlink-2x4')]);
    // Island 0 keeps 2 free GPUs, island 1 all 4: the picker alone would put member 0 into island 0.
    occupy(s, 'n', [0, 1]);
    const o = gangOk(s.scheduleGang(gang('g', 2, 2, { required: 'nvlink-domain' })));
    expect(o.placements.map((p) => [p.node, p.gpus])).toEqual([
      ['n', [4, 5]],
      ['n', [6, 7]],
    ]);
    // Best fit among islands that hold the whole gang: now island 0 (2 free) is the one left with none.
    const o2 = gangOk(s.scheduleGang(gang('h', 2, 1, { required: 'nvlink-domain' })));
    expect(o2.placements.map((p) => p.gpus)).toEqual([[2], [3]]);
  });

  it('required: nvlink-domain tries the next island when the members do not fit the best-fit one', () => {
    const s = scheduler([nodeSpec('n', 'nvlink-2x4')]);
    // Island 0: four half-used GPUs (2000 milli free, no GPU with 600); island 1: two whole GPUs free.
    for (const g of [0, 1, 2, 3])
      s.state.allocate({ podId: `half-${g}`, node: 'n', gpus: [g], gpuMilli: 500, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    occupy(s, 'n', [4, 5]);
    const o = gangOk(s.scheduleGang(gang('f', 2, 1, { required: 'nvlink-domain' }, 2, { gpuMilli: 600 })));
    expect(o.placements.map((p) => p.gpus)).toEqual([[6], [7]]);
  });

  it('required: nvlink-domain explains that no NVLink island holds the whole gang, and changes nothing', () => {
    const s = scheduler([nodeSpec('n', 'nvlink-2x4'), nodeSpec('m', 'nvlink-2x4', { nvlinkDomain: 'd' })]);
    occupy(s, 'n', [0, 1, 4]);
    occupy(s, 'm', [0, 1, 2, 3, 4, 5, 6]);
    const before = resources(s);
    // n has 5 free GPUs, but 2 and 3 in its islands; m (its own multi-node domain) has 1.
    const o = gangFail(s.scheduleGang(gang('g', 2, 2, { required: 'nvlink-domain' })));
    expect(o.explanation.message).toBe(
      '0/2 nodes fit gang g (2×2 GPU): 1 insufficient nvidia.com/gpu, 1 would split the NVLink domain (required: no NVLink island of the node holds the whole gang)',
    );
    expect(resources(s)).toEqual(before);
  });

  it('required: nvlink-domain inside a multi-node NVLink domain is not bound to one island of a node', () => {
    const s = scheduler([nodeSpec('a', 'nvlink-2x4', { nvlinkDomain: 'd' }), nodeSpec('b', 'nvlink-2x4', { nvlinkDomain: 'd' })]);
    const o = gangOk(s.scheduleGang(gang('g', 2, 4, { required: 'nvlink-domain' })));
    expect(o.placements.map((p) => [p.node, p.gpus])).toEqual([
      ['a', [0, 1, 2, 3]],
      ['a', [4, 5, 6, 7]],
    ]);
    const t = scheduler([nodeSpec('a', 'nvlink-2x4', { nvlinkDomain: 'd' }), nodeSpec('b', 'nvlink-2x4', { nvlinkDomain: 'd' })]);
    occupy(t, 'a', [0, 1, 2, 3, 4, 5, 6]);
    occupy(t, 'b', [0, 1, 2, 3, 4, 5, 6]);
    // One GPU free per node: two members span the domain's nodes, three do not fit it.
    const msg = gangFail(t.scheduleGang(gang('h', 3, 1, { required: 'nvlink-domain' }))).explanation.message;
    expect(msg).toBe('0/2 nodes fit gang h (3×1 GPU): 2 would split the NVLink domain (required)');
    const o2 = gangOk(t.scheduleGang(gang('i', 2, 1, { required: 'nvlink-domain' })));
    expect(o2.placements.map((p) => [p.node, p.gpus])).toEqual([
      ['a', [7]],
      ['b', [7]],
    ]);
  });

  it('required: nvlink-domain may span the nodes of one multi-node NVLink domain, never two domains', () => {
    const s = scheduler([
      nodeSpec('d1-a', 'dgx-h100', { rack: 'r1', nvlinkDomain: 'd1' }),
      nodeSpec('d1-b', 'dgx-h100', { rack: 'r1', nvlinkDomain: 'd1' }),
      nodeSpec('d2-a', 'dgx-h100', { rack: 'r1', nvlinkDomain: 'd2' }),
      nodeSpec('d2-b', 'dgx-h100', { rack: 'r1', nvlinkDomain: 'd2' }),
    ]);
    occupy(s, 'd1-a', [0, 1, 2, 3, 4, 5]);
    occupy(s, 'd2-b', [0, 1, 2, 3, 4, 5]);
    const o = gangOk(s.scheduleGang(gang('nv', 10, 1, { required: 'nvlink-domain' })));
    expect(o.level).toBe('nvlink-domain');
    const domains = new Set(o.placements.map((p) => s.state.node(p.node)?.spec.location.nvlinkDomain));
    expect(domains.size).toBe(1);
    // d2 has 10 GPUs left: 11 members would need a second domain.
    gangFail(s.scheduleGang(gang('too-big', 11, 1, { required: 'nvlink-domain' })));
  });
});

describe('describeMembers', () => {
  it('groups members by GPU request', () => {
    const members: PodSpec[] = [
      makePod('a', { gpuCount: 1 }),
      makePod('b', { gpuCount: 1 }),
      makePod('c', { gpuCount: 1, gpuMilli: 250 }),
      makePod('d', {}),
      makePod('e', { gpuCount: 8 }),
    ];
    expect(describeMembers(members)).toBe('2×1 GPU + 1×0.25 GPU + 1×no GPU + 1×8 GPU');
    expect(describeMembers([makePod('h', { gpuCount: 1, gpuMilli: 500 })])).toBe('1×0.5 GPU');
  });
});
