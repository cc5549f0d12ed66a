// The extender's answers on a cache fed with Kubernetes objects (no apiserver: filter, prioritize and preempt
// read the cache; bind, and a preemptor's catch-up read, are covered by extender.e2e.test.ts).
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ANNOTATION } from '../../api/wire.ts';
import { blendShapes, WHOLE_GPU_PRIOR } from '../../core/estimate/expected-workload.ts';
import { resolveProfile } from '../../core/plugins/registry.ts';
import { makePod } from '../../core/model/pod.ts';
import { seededRng } from '../../core/ports.ts';
import { testPod } from '../../harness/e2e-kit.ts';
import { KubeBinder } from '../adapters/binder.ts';
import type { KubeClient } from '../client/client.ts';
import { ClusterCache } from '../cache/cluster-cache.ts';
import { SitsExtender, restrictToNodes } from './extender.ts';
import { nodeObjectFor } from '../cache/labels.ts';
import { PodJobs } from '../cache/pod-jobs.ts';

const SCHED = 'default-scheduler';
const NAMES = ['a800-0', 'a800-1', 'a800-2', 'a800-3'];

function node(name: string): V1Node {
  const o = nodeObjectFor(name, 'a800x4', { zone: 'z', block: 'b', rack: 'r' });
  return { metadata: { name, labels: o.labels, annotations: o.annotations }, status: { capacity: o.capacity, allocatable: o.capacity } };
}

let uid = 0;
function pod(name: string, o: { gpus?: number; group?: string; minMember?: number; priority?: number } = {}): V1Pod {
  const p = testPod('ns', name, {
    gpus: o.gpus ?? 1,
    schedulerName: SCHED,
    ...(o.group === undefined ? {} : { group: o.group }),
    ...(o.minMember === undefined ? {} : { annotations: { [ANNOTATION.minMember]: String(o.minMember) } }),
  });
  return {
    ...p,
    metadata: { ...p.metadata, uid: `uid-${++uid}`, creationTimestamp: new Date(1_000 + uid) },
    spec: { ...p.spec, containers: p.spec?.containers ?? [], priority: o.priority ?? 0 },
  };
}
const boundTo = (p: V1Pod, nodeName: string, gpus: string): V1Pod => ({
  ...p,
  metadata: { ...p.metadata, annotations: { ...p.metadata?.annotations, [ANNOTATION.gpuIndices]: gpus } },
  spec: { ...p.spec, containers: p.spec?.containers ?? [], nodeName },
  status: { phase: 'Running' },
});

function setup(): { ext: SitsExtender; cache: ClusterCache; advance: (ms: number) => void } {
  const cache = new ClusterCache(SCHED);
  for (const n of NAMES) cache.upsertNode(node(n));
  let skew = 0;
  const clock = { nowMs: () => Date.now() + skew };
  const jobs = new PodJobs(cache, SCHED, clock);
  const noClient = {} as KubeClient; // a preempt's catch-up read fails here and is skipped (logged)
  const binder = new KubeBinder(noClient, cache, { schedulerName: SCHED, events: { emit: () => undefined }, log: () => undefined, nowMs: clock.nowMs });
  const profile = resolveProfile('sits', { typicalShapes: blendShapes([], WHOLE_GPU_PRIOR, 0) });
  if (!profile.ok) throw new Error('profile');
  const ext = new SitsExtender(
    { client: noClient, cache, jobs, binder },
    { profile: profile.value, rng: () => seededRng(1), nowMs: clock.nowMs, cacheWaitMs: 0, gangPlanTtlMs: 10_000 },
  );
  return { ext, cache, advance: (ms) => (skew += ms) };
}

describe('SitsExtender', () => {
  it('plans a gang whole at its first member: 8 × 1 GPU on 2 NVLink nodes, each member told its planned node', async () => {
    const { ext, cache } = setup();
    const members = Array.from({ length: 8 }, (_, i) => pod(`bert-${i}`, { group: 'bert', minMember: 8 }));
    for (const m of members) cache.upsertPod(m);
    const chosen: string[] = [];
    for (const m of members) {
      const r = await ext.filter({ Pod: m, NodeNames: NAMES });
      expect(r.Error).toBe('');
      expect(r.NodeNames).toHaveLength(1);
      chosen.push(r.NodeNames?.[0] as string);
      expect(Object.keys(r.FailedNodes)).toHaveLength(3);
    }
    expect(ext.stats.gangPlans).toBe(1);
    expect(ext.heldPlans).toBe(1);
    const perNode = new Map<string, number>();
    for (const n of chosen) perNode.set(n, (perNode.get(n) ?? 0) + 1);
    expect([...perNode.values()]).toEqual([4, 4]);
    // A single pod filtered while the plan is held does not get the gang's GPUs.
    const other = pod('other');
    cache.upsertPod(other);
    const r = await ext.filter({ Pod: other, NodeNames: NAMES });
    expect(perNode.has(r.NodeNames?.[0] as string)).toBe(false);
    // Prioritize: the planned node gets 10.
    const scores = await ext.prioritize({ Pod: other, NodeNames: NAMES });
    expect(scores.find((s) => s.Host === r.NodeNames?.[0])?.Score).toBe(10);
    expect(scores.every((s) => s.Score >= 0 && s.Score <= 10)).toBe(true);
  });

  it('a gang plan expires: members waiting at bind are told none was bound, the GPUs are free again', async () => {
    const { ext, cache, advance } = setup();
    const members = Array.from({ length: 2 }, (_, i) => pod(`pair-${i}`, { gpus: 4, group: 'pair', minMember: 2 }));
    for (const m of members) cache.upsertPod(m);
    const first = await ext.filter({ Pod: members[0] as V1Pod, NodeNames: NAMES });
    const node0 = first.NodeNames?.[0] as string;
    // kube-scheduler binding a member elsewhere than planned: refused at once, the plan stays.
    const elsewhere = await ext.bind({
      PodName: 'pair-0',
      PodNamespace: 'ns',
      PodUID: members[0]?.metadata?.uid as string,
      Node: NAMES.find((n) => n !== node0) as string,
    });
    expect(elsewhere.Error).toMatch(/^gang ns\/pair: SITS's plan puts ns\/pair-0 on /);
    expect(ext.heldPlans).toBe(1);
    // One member reaches bind, the other never does: the bind waits, then fails when the plan expires.
    const waiting = ext.bind({ PodName: 'pair-0', PodNamespace: 'ns', PodUID: members[0]?.metadata?.uid as string, Node: node0 });
    await new Promise((r) => setTimeout(r, 10));
    advance(10_001);
    ext.expire();
    expect((await waiting).Error).toBe('gang ns/pair: plan expired with 1 of 2 members at bind; none bound');
    expect(ext.heldPlans).toBe(0);
    expect(ext.stats.expired).toBe(1);
    // Its late partner is never bound alone.
    expect((await ext.bind({ PodName: 'pair-1', PodNamespace: 'ns', PodUID: members[1]?.metadata?.uid as string, Node: node0 })).Error).toMatch(
      /^gang ns\/pair: no plan held for ns\/pair-1/,
    );
    // A pod filtered now may take those GPUs: replanning the gang finds the same free nodes.
    const again = await ext.filter({ Pod: members[1] as V1Pod, NodeNames: NAMES });
    expect(again.NodeNames).toHaveLength(1);
    expect(ext.stats.gangPlans).toBe(2);
  });

  it('a gang short of members waits, saying so for every node', async () => {
    const { ext, cache } = setup();
    const m = pod('half-0', { group: 'half', minMember: 4 });
    cache.upsertPod(m);
    const r = await ext.filter({ Pod: m, NodeNames: NAMES });
    expect(r.NodeNames).toEqual([]);
    expect(Object.values(r.FailedNodes)).toEqual(NAMES.map(() => 'gang ns/half: waiting for pods: 1 of minMember 4 exist'));
  });

  it("a pod that fits nowhere: each node with the core's reason, unresolvable when preemption cannot help", async () => {
    const { ext, cache } = setup();
    const big = pod('big', { gpus: 8 });
    cache.upsertPod(big);
    const r = await ext.filter({ Pod: big, NodeNames: NAMES });
    expect(r.NodeNames).toEqual([]);
    expect(r.FailedAndUnresolvableNodes).toEqual(Object.fromEntries(NAMES.map((n) => [n, 'with fewer GPUs than the 8 requested'])));
  });

  it('answers only among the nodes kube-scheduler offers; full Node objects when not nodeCacheCapable', async () => {
    const { ext, cache } = setup();
    const p = pod('p');
    cache.upsertPod(p);
    const r = await ext.filter({ Pod: p, NodeNames: ['a800-2', 'a800-3'] });
    expect(['a800-2', 'a800-3']).toContain(r.NodeNames?.[0]);
    const q = pod('q');
    cache.upsertPod(q);
    const full = await ext.filter({ Pod: q, Nodes: { items: [node('a800-1')] } });
    expect(full.Nodes?.items.map((n) => n.metadata?.name)).toEqual(['a800-1']);
    expect(full.NodeNames).toBeUndefined();
  });

  it('preempt: SITS picks lower-priority victims, and never half a gang', async () => {
    const { ext, cache } = setup();
    // a800-0 holds a 4-GPU single; a800-1 and a800-2 hold one 2×4-GPU gang; a800-3 a single of priority 100.
    const single = boundTo(pod('low', { gpus: 4 }), 'a800-0', '0,1,2,3');
    const g0 = boundTo(pod('g-0', { gpus: 4, group: 'g', minMember: 2 }), 'a800-1', '0,1,2,3');
    const g1 = boundTo(pod('g-1', { gpus: 4, group: 'g', minMember: 2 }), 'a800-2', '0,1,2,3');
    const high = boundTo(pod('high', { gpus: 4, priority: 100 }), 'a800-3', '0,1,2,3');
    for (const p of [single, g0, g1, high]) cache.upsertPod(p);
    const preemptor = pod('urgent', { gpus: 2, priority: 50 });
    const none = { Pods: [], NumPDBViolations: 0 };
    const r = await ext.preempt({ Pod: preemptor, NodeNameToMetaVictims: { 'a800-0': none, 'a800-1': none, 'a800-3': none } });
    expect(r.NodeNameToMetaVictims).toEqual({ 'a800-0': { Pods: [{ UID: single.metadata?.uid }], NumPDBViolations: 0 } });
    // kube-scheduler proposing one gang member: that node is no candidate (the gang spans two nodes).
    const r2 = await ext.preempt({ Pod: preemptor, NodeNameToMetaVictims: { 'a800-1': { Pods: [{ UID: g0.metadata?.uid as string }], NumPDBViolations: 0 } } });
    expect(r2.NodeNameToMetaVictims).toEqual({});
    // A CPU-only pod: no opinion, the input comes back.
    const cpu = pod('cpu', { gpus: 0, priority: 50 });
    const input = { 'a800-0': { Pods: [{ UID: 'x' }], NumPDBViolations: 1 } };
    expect((await ext.preempt({ Pod: cpu, NodeNameToMetaVictims: input })).NodeNameToMetaVictims).toEqual(input);
  });

  it('restrictToNodes: one-value matchFields as kube takes them, the shorter form', () => {
    const p = makePod('ns/p', { gpuCount: 1 });
    expect(restrictToNodes(p, NAMES, NAMES)).toBe(p);
    expect(restrictToNodes(p, ['a800-0', 'a800-1', 'a800-2'], NAMES).nodeAffinity?.required).toEqual([
      { matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['a800-3'] }] },
    ]);
    expect(restrictToNodes(p, ['a800-0'], NAMES).nodeAffinity?.required).toEqual([
      { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['a800-0'] }] },
    ]);
  });
});
