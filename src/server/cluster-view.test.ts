import { describe, expect, it } from 'vitest';
import type { QueuedJob } from '../core/actions/jobs.ts';
import type { NodeSpec } from '../core/model/node.ts';
import { makePod } from '../core/model/pod.ts';
import { NODE_SHAPES } from '../core/model/presets.ts';
import type { NodeLocation } from '../core/model/topology.ts';
import { makeQueue } from '../core/queue/model.ts';
import { seededRng } from '../core/ports.ts';
import { ClusterState, type Allocation } from '../core/snapshot/cluster-state.ts';
import {
  applyPatch,
  buildClusterView,
  ClusterViewTracker,
  diffViews,
  emptyPatch,
  largestNvlinkDomains,
  pendingFromJobs,
  spanOf,
  splitWaitMessage,
  type ClusterView,
  type PendingInput,
  type ViewInput,
} from './cluster-view.ts';

function node(name: string, shape: string, location: Partial<NodeLocation> = {}): NodeSpec {
  const s = NODE_SHAPES[shape];
  if (s === undefined) throw new Error(`no preset ${shape}`);
  return {
    name,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z0', block: 'b0', rack: 'r0', ...location },
    labels: {},
    taints: [],
    unschedulable: false,
  };
}

function alloc(podId: string, nodeName: string, gpus: readonly number[], gpuMilli = 1000, extra: Partial<Allocation> = {}): Allocation {
  return { podId, node: nodeName, gpus, gpuMilli, cpuMilli: 1000, memoryMiB: 1024, priority: 0, queue: 'team-a', ...extra };
}

function cluster(): ClusterState {
  return new ClusterState([
    node('n-b', 'nvlink-2x4', { rack: 'r1' }),
    node('n-a', 'nvlink-2x4', { rack: 'r0' }),
    node('n-c', 'l4x8', { rack: 'r1', block: 'b1' }),
    node('n-d', 'dgx-h100', { rack: 'r2', nvlinkDomain: 'nvl-0' }),
    node('n-e', 'dgx-h100', { rack: 'r2', nvlinkDomain: 'nvl-0' }),
  ]);
}

const input = (state: ClusterState, extra: Partial<ViewInput> = {}): ViewInput => ({
  source: 'sim',
  seq: 1,
  atMs: 1000,
  state,
  queues: new Map(),
  pending: [],
  ...extra,
});

describe('buildClusterView', () => {
  it('lists every node in topology order with its path and every GPU with its allocation, health and holders', () => {
    const s = cluster();
    s.allocate(alloc('ns/whole', 'n-a', [0, 1]));
    s.allocate(alloc('ns/frac-1', 'n-a', [4], 300));
    s.allocate(alloc('ns/frac-2', 'n-a', [4], 200, { queue: 'team-b' }));
    s.setGpuHealth('n-a', 7, false);
    const v = buildClusterView(input(s));
    expect(v.nodes.map((n) => n.name)).toEqual(['n-a', 'n-b', 'n-d', 'n-e', 'n-c']);
    const a = v.nodes[0];
    expect(a).toMatchObject({ name: 'n-a', zone: 'z0', block: 'b0', rack: 'r0', model: NODE_SHAPES['nvlink-2x4']?.gpus[0]?.model, unschedulable: false });
    expect(a?.gpus.map((g) => g.island)).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(a?.gpus.map((g) => g.status)).toEqual(['whole', 'whole', 'free', 'free', 'fraction', 'free', 'free', 'unhealthy']);
    expect(a?.gpus[4]).toEqual({ index: 4, island: 1, usedMilli: 500, healthy: true, status: 'fraction', pods: ['ns/frac-1', 'ns/frac-2'] });
    expect(a?.gpus[7]?.healthy).toBe(false);
    expect(a?.pods).toEqual([
      { pod: 'ns/frac-1', job: 'ns/frac-1', queue: 'team-a', gpus: [4], gpuMilli: 300 },
      { pod: 'ns/frac-2', job: 'ns/frac-2', queue: 'team-b', gpus: [4], gpuMilli: 200 },
      { pod: 'ns/whole', job: 'ns/whole', queue: 'team-a', gpus: [0, 1], gpuMilli: 1000 },
    ]);
    expect(v.nodes[2]?.nvlinkDomain).toBe('nvl-0');
    expect(v.totals).toEqual({ nodes: 5, gpus: 40, healthyGpus: 39, usedGpuMilli: 2500, pendingJobs: 0, runningJobs: 3 });
    // JSON-serialisable as it is (no Infinity, Map or typed array).
    expect(JSON.parse(JSON.stringify(v))).toEqual(v);
  });

  it('gives running jobs their locality: island, node, multi-node NVLink domain, rack, cluster', () => {
    const s = cluster();
    s.allocate(alloc('g1-0', 'n-a', [0, 1], 1000, { gang: 'ns/g1' }));
    s.allocate(alloc('g1-1', 'n-a', [2, 3], 1000, { gang: 'ns/g1' }));
    s.allocate(alloc('g2-0', 'n-b', [2, 3, 4, 5], 1000, { gang: 'ns/g2' }));
    s.allocate(alloc('g3-0', 'n-d', [0, 1, 2, 3, 4, 5, 6, 7], 1000, { gang: 'ns/g3' }));
    s.allocate(alloc('g3-1', 'n-e', [0, 1, 2, 3, 4, 5, 6, 7], 1000, { gang: 'ns/g3' }));
    s.allocate(alloc('g4-0', 'n-b', [0], 1000, { gang: 'ns/g4' }));
    s.allocate(alloc('g4-1', 'n-c', [0], 1000, { gang: 'ns/g4' }));
    s.allocate(alloc('g5-0', 'n-a', [4], 1000, { gang: 'ns/g5' }));
    s.allocate(alloc('g5-1', 'n-e', [], 0, { gang: 'ns/g5' }));
    const v = buildClusterView(input(s));
    const byId = new Map(v.running.map((r) => [r.id, r]));
    expect(byId.get('gang:ns/g1')).toMatchObject({ span: 'island', oneNvlinkDomain: true, oneRack: true, pods: 2, gpuMilli: 4000, nodes: ['n-a'] });
    expect(byId.get('gang:ns/g2')).toMatchObject({ span: 'node', oneNvlinkDomain: false, oneRack: true });
    expect(byId.get('gang:ns/g3')).toMatchObject({ span: 'nvlink-domain', oneNvlinkDomain: true, oneRack: true, nodes: ['n-d', 'n-e'] });
    expect(byId.get('gang:ns/g4')).toMatchObject({ span: 'zone', oneNvlinkDomain: false, oneRack: false });
    // A CPU-only member holds no GPU: it is not part of the heatmap nor of the job's GPUs.
    expect(byId.get('gang:ns/g5')).toMatchObject({ span: 'island', pods: 1 });
    expect(spanOf(s, [alloc('p', 'n-a', [0]), alloc('q', 'n-b', [0])])).toBe('block');
    // The largest NVLink domain of the job's GPU model: a 4-GPU island on nvlink-2x4, the 16-GPU nvl-0 domain of
    // the two H100 nodes, and (g4 on an A100 and an L4) the larger of the two models'.
    expect(byId.get('gang:ns/g1')).toMatchObject({ gpus: 4, largestNvlinkDomainGpus: 4 });
    expect(byId.get('gang:ns/g3')).toMatchObject({ gpus: 16, largestNvlinkDomainGpus: 16 });
    expect(byId.get('gang:ns/g4')).toMatchObject({ gpus: 2, largestNvlinkDomainGpus: 4 });
  });

  it('says when no NVLink domain of the cluster could hold a job: PCIe-only GPUs, gangs larger than any domain', () => {
    const s = cluster();
    // Two L4s (PCIe only: every GPU its own island), and two 8-GPU H100 gangs' worth on nodes outside any multi-node domain.
    s.allocate(alloc('l4-0', 'n-c', [0], 1000, { gang: 'ns/l4' }));
    s.allocate(alloc('l4-1', 'n-c', [1], 1000, { gang: 'ns/l4' }));
    // Two pods sharing one GPU hold one device.
    s.allocate(alloc('f-0', 'n-c', [5], 500, { gang: 'ns/f' }));
    s.allocate(alloc('f-1', 'n-c', [5], 500, { gang: 'ns/f' }));
    const v = buildClusterView(input(s));
    const byId = new Map(v.running.map((r) => [r.id, r]));
    expect(byId.get('gang:ns/l4')).toMatchObject({ span: 'node', oneNvlinkDomain: false, gpus: 2, largestNvlinkDomainGpus: 1 });
    expect(byId.get('gang:ns/f')).toMatchObject({ span: 'island', oneNvlinkDomain: true, gpus: 1, largestNvlinkDomainGpus: 1 });
    expect(largestNvlinkDomains(s)).toEqual(
      new Map([
        [NODE_SHAPES['nvlink-2x4']?.gpus[0]?.model, 4],
        [NODE_SHAPES['l4x8']?.gpus[0]?.model, 1],
        [NODE_SHAPES['dgx-h100']?.gpus[0]?.model, 16],
      ]),
    );
    // Without the multi-node domain an H100 gang of 16 fits no domain (8 GPUs a node).
    const flat = new ClusterState([node('h-0', 'dgx-h100'), node('h-1', 'dgx-h100')]);
    for (const n of ['h-0', 'h-1']) flat.allocate(alloc(`${n}-p`, n, [0, 1, 2, 3, 4, 5, 6, 7], 1000, { gang: 'ns/big' }));
    expect(buildClusterView(input(flat)).running[0]).toMatchObject({ oneNvlinkDomain: false, gpus: 16, largestNvlinkDomainGpus: 8 });
  });

  it('reports queues with nominal quota, borrowing, usage and fair share, and counts queues named only by jobs', () => {
    const s = cluster();
    s.allocate(alloc('a1', 'n-d', [0, 1, 2, 3, 4, 5, 6, 7], 1000, { queue: 'team-a' }));
    s.allocate(alloc('a2', 'n-e', [0, 1, 2, 3], 1000, { queue: 'team-a' }));
    const g = (x: number): { gpuMilli: number; cpuMilli: number; memoryMiB: number } => ({ gpuMilli: x * 1000, cpuMilli: Infinity, memoryMiB: Infinity });
    const queues = new Map([
      ['team-a', makeQueue('team-a', { cohort: 'c', weight: 1, nominal: g(8), borrowingLimit: g(16) })],
      ['team-b', makeQueue('team-b', { cohort: 'c', weight: 1, nominal: g(8) })],
    ]);
    const pending = [
      { id: 'b1', queue: 'team-b', priority: 0, pods: 1, gpuMilli: 8000, arrivalMs: 10 },
      { id: 'x1', queue: 'adhoc', priority: 5, pods: 1, gpuMilli: 500, arrivalMs: 20, explanation: 'no node fits', queueReason: 'capacity', etaMs: 99 },
    ];
    const v = buildClusterView(input(s, { queues, pending }));
    expect(v.queues.map((q) => q.name)).toEqual(['adhoc', 'team-a', 'team-b']);
    const [adhoc, a, b] = v.queues;
    expect(a).toMatchObject({
      nominalGpuMilli: 8000,
      borrowingLimitGpuMilli: 16000,
      usedGpuMilli: 12000,
      borrowedGpuMilli: 4000,
      runningJobs: 1 + 1,
      pendingJobs: 0,
      defined: true,
      cohort: 'c',
    });
    expect(b).toMatchObject({ usedGpuMilli: 0, borrowedGpuMilli: 0, pendingGpuMilli: 8000, pendingJobs: 1, defined: true });
    expect(adhoc).toMatchObject({ nominalGpuMilli: null, defined: false, pendingJobs: 1 });
    // 40 healthy GPUs, demands 12 + 8 + 0.5: everyone's demand is met.
    expect([adhoc?.fairShareGpuMilli, a?.fairShareGpuMilli, b?.fairShareGpuMilli]).toEqual([500, 12000, 8000]);
    // Pending rows: priority first, then arrival; a job never tried says so.
    expect(v.pending.map((p) => [p.id, p.explanation, p.queueReason, p.etaMs])).toEqual([
      ['x1', 'no node fits', 'capacity', 99],
      ['b1', 'not tried yet', undefined, undefined],
    ]);
  });
});

describe('pending inputs', () => {
  it('takes the cycle wait and the expected start per queued job', () => {
    const pod = makePod('ns/p', { gpuCount: 2 }, { queue: 'q' });
    const job: QueuedJob = {
      id: 'ns/p',
      queue: 'q',
      priority: 3,
      arrivalMs: 7,
      gang: { name: 'ns/p', minMember: 1, members: [pod], topology: {}, priority: 3, queue: 'q' },
      estRuntimeMs: 1,
    };
    expect(
      pendingFromJobs([job], new Map([['ns/p', { reason: 'quota', message: 'queue q quota: 2 GPU would exceed nominal 1 GPU' }]]), new Map([['ns/p', 5000]])),
    ).toEqual([
      {
        id: 'ns/p',
        queue: 'q',
        priority: 3,
        pods: 1,
        gpuMilli: 2000,
        arrivalMs: 7,
        explanation: 'queue q quota: 2 GPU would exceed nominal 1 GPU',
        queueReason: 'quota',
        etaMs: 5000,
      },
    ]);
  });

  it('splits the condition message the spine writes into reason and explanation', () => {
    expect(splitWaitMessage('queue gpu holds ns/train (capacity): 0/4 nodes fit gang ns/train\nmore')).toEqual({
      explanation: '0/4 nodes fit gang ns/train',
      queueReason: 'capacity',
    });
    expect(splitWaitMessage('0/4 nodes are available: 4 Insufficient GPUs')).toEqual({ explanation: '0/4 nodes are available: 4 Insufficient GPUs' });
  });
});

describe('incremental views', () => {
  it('a patch carries only the changed nodes and tables, and applying it gives the next view', () => {
    const s = cluster();
    const v1 = buildClusterView(input(s));
    s.allocate(alloc('p', 'n-c', [3]));
    const v2 = buildClusterView(input(s, { seq: 2, atMs: 2000 }));
    const patch = diffViews(v1, v2);
    expect(patch?.nodes.map((n) => [n.at, n.node.name])).toEqual([[4, 'n-c']]);
    expect(patch?.running?.upsert.map((r) => r.id)).toEqual(['p']);
    expect(patch?.queues).toBeDefined();
    expect(patch?.pending).toBeUndefined();
    expect(applyPatch(v1, patch as NonNullable<typeof patch>)).toEqual(v2);
    const same = diffViews(v2, { ...v2, seq: 3 });
    expect(same !== undefined && emptyPatch(same)).toBe(true);
    expect(() => applyPatch(v1, { ...(patch as NonNullable<typeof patch>), fromSeq: 9 })).toThrow(/seq 9/);
  });

  it('tables travel as keyed deltas, also when the pending table is cut to its first rows', () => {
    const rng = seededRng(7);
    const s = cluster();
    let pending: PendingInput[] = [];
    let prev = buildClusterView(input(s, { maxPending: 5 }));
    for (let step = 2; step < 200; step++) {
      const r = rng.next();
      if (r < 0.4 || pending.length === 0)
        pending = [...pending, { id: `j${step}`, queue: 'q', priority: Math.floor(rng.next() * 3), pods: 1, gpuMilli: 1000, arrivalMs: step }];
      else if (r < 0.7) pending = pending.filter((_, i) => i !== Math.floor(rng.next() * pending.length));
      else {
        const k = Math.floor(rng.next() * pending.length);
        pending = pending.map((p, i) => (i === k ? { ...p, explanation: `why ${step}`, etaMs: step * 10 } : p));
      }
      const next = buildClusterView(input(s, { seq: step, pending, maxPending: 5 }));
      const patch = diffViews(prev, next);
      expect(patch).toBeDefined();
      expect((patch?.pending?.upsert.length ?? 0) <= 5).toBe(true);
      expect(applyPatch(prev, patch as NonNullable<typeof patch>)).toEqual(next);
      prev = next;
    }
    expect(prev.totals.pendingJobs).toBe(pending.length);
  });

  it('a changed node list is no patch: the view goes whole', () => {
    const v1 = buildClusterView(input(cluster()));
    const v2 = buildClusterView(input(new ClusterState([node('n-a', 'l4x8')])));
    expect(diffViews(v1, v2)).toBeUndefined();
  });

  it('the tracker rebuilds only the nodes the change log names and always equals a full build (random binds and releases)', () => {
    const rng = seededRng(42);
    const specs = Array.from({ length: 40 }, (_, i) =>
      node(`n-${String(i).padStart(2, '0')}`, i % 3 === 0 ? 'l4x8' : 'nvlink-2x4', { rack: `r${i % 5}`, block: `b${i % 2}` }),
    );
    const s = new ClusterState(specs);
    const t = new ClusterViewTracker();
    const base = { source: 'sim' as const, queues: new Map(), pending: [] };
    const first = t.update({ ...base, atMs: 0, state: s });
    expect(first.patch).toBeUndefined();
    let view: ClusterView = first.view;
    const live: string[] = [];
    for (let step = 1; step <= 300; step++) {
      if (live.length > 0 && rng.next() < 0.4) {
        const k = Math.floor(rng.next() * live.length);
        s.release(live[k] as string);
        live.splice(k, 1);
      } else {
        const n = s.nodes[Math.floor(rng.next() * s.nodes.length)];
        const free = n === undefined ? -1 : [...n.gpuFree].findIndex((f) => f >= 500);
        if (n !== undefined && free >= 0) {
          const id = `p${step}`;
          s.allocate(alloc(id, n.name, [free], rng.next() < 0.5 ? 500 : n.gpuFree[free] === 1000 ? 1000 : 500));
          live.push(id);
        }
      }
      if (step % 37 === 0) s.setGpuHealth(s.nodes[step % 40]?.name ?? '', step % 8, step % 2 === 0);
      const r = t.update({ ...base, atMs: step, state: s });
      const full = buildClusterView({ ...base, seq: r.view.seq, atMs: step, state: s });
      expect(r.view).toEqual(full);
      expect(r.patch).toBeDefined();
      expect((r.patch?.nodes.length ?? 0) <= 2).toBe(true);
      view = applyPatch(view, r.patch as NonNullable<typeof r.patch>);
      expect(view).toEqual(full);
    }
  });

  it('a new state object (the live cache rebuilt it) is built whole and diffed', () => {
    const t = new ClusterViewTracker();
    const base = { source: 'live' as const, queues: new Map(), pending: [] };
    const s1 = cluster();
    t.update({ ...base, atMs: 0, state: s1 });
    const s2 = cluster();
    s2.allocate(alloc('p', 'n-e', [0]));
    const r = t.update({ ...base, atMs: 1, state: s2 });
    expect(r.patch?.nodes.map((n) => n.node.name)).toEqual(['n-e']);
    const r3 = t.update({ ...base, atMs: 2, state: new ClusterState([node('solo', 'l4x8')]) });
    expect(r3.patch).toBeUndefined();
    expect(r3.view.nodes.map((n) => n.name)).toEqual(['solo']);
  });
});
