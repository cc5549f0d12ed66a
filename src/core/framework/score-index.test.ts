import { describe, expect, it } from 'vitest';
import { evaluateFilters, ScoreIndex, shapeKey } from './score-index.ts';
import { Reason, type ReasonCode } from './reasons.ts';
import type { Plugin, Profile } from './types.ts';
import { fitFilter, fitPlugin } from '../plugins/fit/fit.ts';
import { nodeAffinityPlugin } from '../plugins/node-affinity/node-affinity.ts';
import { taintTolerationPlugin } from '../plugins/taint-toleration/taint-toleration.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod, type PodSpec } from '../model/pod.ts';
import { seededRng, shuffle, type Rng } from '../ports.ts';

function nodeSpec(name: string, shapeId: string, extra: Partial<NodeSpec> = {}): NodeSpec {
  const s = NODE_SHAPES[shapeId];
  if (s === undefined) throw new Error(`no preset ${shapeId}`);
  return {
    name,
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

function profileWith(filters: readonly Plugin[], scorers: readonly { plugin: Plugin; weight: number }[]): Profile {
  return {
    name: 'test',
    description: 'test profile',
    queueSort: { name: 'none' },
    preFilters: [],
    filters,
    scorers,
    devicePicker: { name: 'none' },
    reserves: [],
    permits: [],
    selector: 'best',
    gangSearch: 'flat',
  };
}

const fit: Plugin = { name: 'fit', filter: fitFilter };
/** Few distinct values, so ties are common and the rank tie-break matters. */
const freeGpus: Plugin = { name: 'free-gpus', score: (_p, n) => n.fullyFreeGpus() };
const podsMod3: Plugin = { name: 'pods-mod-3', score: (_p, n) => n.podCount % 3 };
const SCORERS = [
  { plugin: freeGpus, weight: 2 },
  { plugin: podsMod3, weight: 1 },
];

interface Brute {
  reasons: ReasonCode[];
  scores: number[];
}

function brute(profile: Profile, pod: PodSpec, st: ClusterState): Brute {
  const reasons: ReasonCode[] = [];
  const scores: number[] = [];
  for (const n of st.nodes) {
    const r = evaluateFilters(profile, pod, n);
    reasons.push(r);
    scores.push(
      // Per-node scorers only: the inter-pod scorers' part is the overlay's (inter-pod/inter-pod-affinity.test.ts).
      r === Reason.Fits ? profile.scorers.reduce((s, x) => (x.plugin.score === undefined ? s : s + x.weight * x.plugin.score(pod, n)), 0) : Number.NaN,
    );
  }
  return { reasons, scores };
}

/** Highest score, then lowest rank; -1 when nothing in [s, e) fits. */
function bruteBest(b: Brute, st: ClusterState, s: number, e: number): number {
  let best = -1;
  for (let i = s; i < e; i++) {
    if (b.reasons[i] !== Reason.Fits) continue;
    if (best < 0 || b.scores[i]! > b.scores[best]! || (b.scores[i] === b.scores[best] && st.nodes[i]!.rank < st.nodes[best]!.rank)) best = i;
  }
  return best;
}

function mutate(st: ClusterState, rng: Rng, live: string[], next: { n: number }): void {
  const roll = rng.next();
  if (roll < 0.5) {
    const node = st.nodes[rng.int(st.size)]!;
    const count = 1 + rng.int(3);
    const milli = count === 1 && rng.next() < 0.5 ? 500 : 1000;
    const gpus: number[] = [];
    for (let g = 0; g < node.gpuFree.length && gpus.length < count; g++) if (node.gpuUsable[g] === 1 && node.gpuFree[g]! >= milli) gpus.push(g);
    if (gpus.length === count && node.podCount < node.spec.maxPods) {
      const id = `p${next.n++}`;
      st.allocate({ podId: id, node: node.name, gpus, gpuMilli: milli, cpuMilli: 1000 + 1000 * rng.int(20), memoryMiB: 1024, priority: 0, queue: 'q' });
      live.push(id);
    }
  } else if (roll < 0.9) {
    if (live.length > 0) st.release(live.splice(rng.int(live.length), 1)[0]!);
  } else {
    const node = st.nodes[rng.int(st.size)]!;
    st.setGpuHealth(node.name, rng.int(node.gpuFree.length), rng.next() < 0.5);
  }
}

function randomCluster(rng: Rng): ClusterState {
  const shapes = ['l4x8', 't4x4', 'dgx-h100', 'a800x4'];
  const specs: NodeSpec[] = [];
  for (let i = 0; i < 13; i++) {
    const extra: Partial<NodeSpec> = i === 4 ? { unschedulable: true } : i === 9 ? { cpuMilli: 8000 } : {};
    specs.push(nodeSpec(`n${String(i).padStart(2, '0')}`, shapes[i % shapes.length]!, { ...extra, location: { zone: 'z', block: 'b', rack: `r${i % 3}` } }));
  }
  // Ranks are a random permutation, so "lowest rank" is not "lowest index".
  const ranks = shuffle(
    Array.from({ length: specs.length }, (_, i) => i),
    rng,
  );
  return new ClusterState(specs, (_name, i) => ranks[i]!);
}

const PODS: readonly PodSpec[] = [
  makePod('two', { gpuCount: 2, cpuMilli: 4000 }),
  makePod('half', { gpuCount: 1, gpuMilli: 500 }),
  makePod('h100', { gpuCount: 1 }, { gpuModels: ['H100-SXM'] }),
  makePod('cpu', { cpuMilli: 6000 }),
];

describe('ScoreIndex', () => {
  it.each([11, 12, 13])('best, feasibleCount, kthFeasibleFrom and reasonCounts equal a brute-force scan after random changes (seed %i)', (seed) => {
    const rng = seededRng(seed);
    const st = randomCluster(rng);
    const profile = profileWith([fit], SCORERS);
    const indices = PODS.map((p) => new ScoreIndex(st, profile, p));
    const live: string[] = [];
    const next = { n: 0 };
    const problems: string[] = [];
    for (let step = 0; step < 120; step++) {
      // Sometimes several changes between refreshes, so one node can appear in the log more than once.
      const changes = 1 + rng.int(3);
      for (let c = 0; c < changes; c++) mutate(st, rng, live, next);
      indices.forEach((idx, k) => {
        idx.refresh();
        const pod = PODS[k]!;
        const b = brute(profile, pod, st);
        for (let i = 0; i < st.size; i++) if (idx.reason[i] !== b.reasons[i]) problems.push(`step ${step} ${pod.id} reason of ${i}`);
        for (let s = 0; s <= st.size; s++) {
          for (let e = s; e <= st.size; e++) {
            if (idx.best(s, e) !== bruteBest(b, st, s, e)) problems.push(`step ${step} ${pod.id} best [${s},${e})`);
            let feasible = 0;
            for (let i = s; i < e; i++) if (b.reasons[i] === Reason.Fits) feasible++;
            if (idx.feasibleCount(s, e) !== feasible) problems.push(`step ${step} ${pod.id} count [${s},${e})`);
          }
          const after: number[] = [];
          for (let i = s; i < st.size; i++) if (b.reasons[i] === Reason.Fits) after.push(i);
          for (let k2 = 0; k2 <= after.length; k2++)
            if (idx.kthFeasibleFrom(s, k2) !== (after[k2] ?? -1)) problems.push(`step ${step} ${pod.id} kth(${s},${k2})`);
        }
        const counts = idx.reasonCounts(2, 11);
        for (let code = 0; code < 16; code++) {
          let c = 0;
          for (let i = 2; i < 11; i++) if (b.reasons[i] === code) c++;
          if (counts[code] !== c) problems.push(`step ${step} ${pod.id} reasonCounts code ${code}`);
        }
      });
    }
    expect(problems).toEqual([]);
    // The scan must have seen both outcomes for every shape, or the comparison proves little.
    for (const idx of indices) {
      expect(idx.feasibleCount()).toBeGreaterThan(0);
      expect(idx.feasibleCount()).toBeLessThan(st.size);
    }
  });

  it('picks the highest weighted score, and on a tie the lowest rank (not the lowest index)', () => {
    const st = new ClusterState(
      [nodeSpec('a', 'l4x8'), nodeSpec('b', 'l4x8'), nodeSpec('c', 'l4x8'), nodeSpec('d', 't4x4')],
      (name) => ({ a: 3, b: 1, c: 2, d: 0 })[name] ?? 9,
    );
    const profile = profileWith([fit], [{ plugin: freeGpus, weight: 10 }]);
    const idx = new ScoreIndex(st, profile, makePod('p', { gpuCount: 1 }));
    idx.refresh();
    // a, b, c: 8 free GPUs (score 80); d: 4 (40). Tie between a, b, c → b has the lowest rank.
    expect(idx.best()).toBe(1);
    expect(idx.score[1]).toBe(80);
    expect(idx.best(2, 4)).toBe(2);
    expect(idx.best(3, 4)).toBe(3);
    expect(idx.best(2, 2)).toBe(-1);
    st.allocate({ podId: 'x', node: 'b', gpus: [0], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    idx.refresh();
    expect(idx.best()).toBe(2); // b now scores 70; c (rank 2) beats a (rank 3)
  });

  it('re-evaluates only the nodes that changed since the last refresh', () => {
    let calls = 0;
    const counting: Plugin = { name: 'counting', score: () => ++calls };
    // Labels make every node its own spec class, so the first build evaluates each (see the next test).
    const st = new ClusterState(Array.from({ length: 6 }, (_, i) => nodeSpec(`n${i}`, 'l4x8', { labels: { i: String(i) } })));
    const idx = new ScoreIndex(st, profileWith([fit], [{ plugin: counting, weight: 1 }]), makePod('p', { gpuCount: 1 }));
    idx.refresh();
    expect(calls).toBe(6);
    idx.refresh();
    expect(calls).toBe(6);
    st.allocate({ podId: 'x', node: 'n3', gpus: [0], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    st.allocate({ podId: 'y', node: 'n3', gpus: [1], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    idx.refresh();
    expect(calls).toBe(7);
    expect(idx.best()).toBe(3); // the counter makes the freshest evaluation the highest score
  });

  it('a build filters and scores one untouched node per spec class; touched nodes are evaluated one by one', () => {
    const evaluated: string[] = [];
    const spy: Plugin = { name: 'spy', filter: (p, n) => (evaluated.push(n.name), fitFilter(p, n)) };
    const loc = (rack: string): Partial<NodeSpec> => ({ location: { zone: 'z', block: 'b', rack } });
    const st = new ClusterState([
      nodeSpec('a1', 'l4x8', loc('r1')),
      nodeSpec('a2', 'l4x8', loc('r2')),
      nodeSpec('a3', 'l4x8', loc('r3')),
      nodeSpec('a4', 'l4x8', loc('r1')),
      nodeSpec('b1', 't4x4', loc('r1')),
      nodeSpec('b2', 't4x4', loc('r2')),
      nodeSpec('c1', 'l4x8', { ...loc('r2'), taints: [{ key: 'k', effect: 'NoSchedule' }] }),
    ]);
    // a3 is changed and changed back: the same state, but no longer provably so; a4 keeps a pod.
    st.allocate({ podId: 'x', node: 'a3', gpus: [0], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    st.release('x');
    st.allocate({ podId: 'y', node: 'a4', gpus: [1], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    const profile = profileWith([spy], SCORERS);
    const pod = makePod('p', { gpuCount: 2 });
    const idx = new ScoreIndex(st, profile, pod);
    idx.refresh();
    expect(evaluated.sort()).toEqual(['a1', 'a3', 'a4', 'b1', 'c1']);
    const b = brute(profile, pod, st);
    expect([...idx.reason]).toEqual(b.reasons);
    for (let i = 0; i < st.size; i++) if (b.reasons[i] === Reason.Fits) expect(idx.score[i]).toBe(b.scores[i]);
    expect(idx.best()).toBe(bruteBest(b, st, 0, st.size));
    expect(idx.feasibleCount()).toBe(b.reasons.filter((r) => r === Reason.Fits).length);
    // A node that took another's result is re-evaluated by itself once it changes.
    evaluated.length = 0;
    st.allocate({ podId: 'z', node: 'a2', gpus: [0, 1, 2, 3, 4, 5, 6], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    idx.refresh();
    expect(evaluated).toEqual(['a2']);
    const a2 = st.node('a2')!.idx;
    expect(idx.reason[a2]).toBe(Reason.Gpu);
    expect(idx.feasibleCount()).toBe(b.reasons.filter((r) => r === Reason.Fits).length - 1);
  });

  it.each([21, 22])('an index created after random changes equals a brute-force scan (seed %i)', (seed) => {
    const rng = seededRng(seed);
    const profile = profileWith([fit], SCORERS);
    const problems: string[] = [];
    for (let round = 0; round < 20; round++) {
      // Many nodes of few spec classes, a few of them changed: the build copies results within a class.
      const specs = Array.from({ length: 24 }, (_, i) =>
        nodeSpec(`n${String(i).padStart(2, '0')}`, i % 5 === 0 ? 't4x4' : 'l4x8', { location: { zone: 'z', block: 'b', rack: `r${i % 4}` } }),
      );
      const ranks = shuffle(
        Array.from({ length: specs.length }, (_, i) => i),
        rng,
      );
      const st = new ClusterState(specs, (_name, i) => ranks[i]!);
      const live: string[] = [];
      const next = { n: 0 };
      for (let c = rng.int(12); c > 0; c--) mutate(st, rng, live, next);
      for (const pod of PODS) {
        const idx = new ScoreIndex(st, profile, pod);
        idx.refresh();
        const b = brute(profile, pod, st);
        for (let i = 0; i < st.size; i++) {
          if (idx.reason[i] !== b.reasons[i]) problems.push(`round ${round} ${pod.id} reason of ${i}`);
          else if (b.reasons[i] === Reason.Fits && idx.score[i] !== b.scores[i]) problems.push(`round ${round} ${pod.id} score of ${i}`);
        }
        for (let s = 0; s <= st.size; s += 3)
          for (let e = s; e <= st.size; e += 2) if (idx.best(s, e) !== bruteBest(b, st, s, e)) problems.push(`round ${round} ${pod.id} best [${s},${e})`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('rebuilds from scratch when the change log no longer reaches back', () => {
    const st = new ClusterState([nodeSpec('a', 'l4x8'), nodeSpec('b', 't4x4')]);
    const idx = new ScoreIndex(st, profileWith([fit], [{ plugin: freeGpus, weight: 1 }]), makePod('p', { gpuCount: 4 }));
    idx.refresh();
    expect(idx.feasibleCount()).toBe(2);
    for (let i = 0; i < 2000; i++) {
      st.allocate({ podId: `t${i}`, node: 'b', gpus: [0], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
      st.release(`t${i}`);
    }
    st.allocate({ podId: 'keep', node: 'b', gpus: [2], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    expect(st.changesSince(0)).toBeUndefined();
    idx.refresh();
    expect(idx.feasibleCount()).toBe(1);
    expect(idx.reason[1]).toBe(Reason.Gpu);
    expect(idx.best()).toBe(0);
  });
});

describe('evaluateFilters', () => {
  it('returns the first failing filter in profile order', () => {
    const st = new ClusterState([nodeSpec('a', 'l4x8')]);
    const node = st.nodes[0]!;
    const says = (name: string, r: ReasonCode): Plugin => ({ name, filter: () => r });
    const pod = makePod('p', {});
    expect(evaluateFilters(profileWith([says('x', Reason.Fits), says('y', Reason.Cpu), says('z', Reason.Taint)], []), pod, node)).toBe(Reason.Cpu);
    expect(evaluateFilters(profileWith([says('x', Reason.Fits)], []), pod, node)).toBe(Reason.Fits);
    expect(evaluateFilters(profileWith([], []), pod, node)).toBe(Reason.Fits);
  });
});

describe('shapeKey', () => {
  it('equals the key built from the fields for random pods, seen once or many times, whatever their order', () => {
    const rng = seededRng(5);
    const pick = <T>(xs: readonly T[]): T => xs[rng.int(xs.length)] as T;
    const build = (pod: PodSpec): string => {
      const r = pod.request;
      let k = `${r.cpuMilli}|${r.memoryMiB}|${r.gpuCount}|${r.gpuMilli}|${r.gpuMemoryMiB ?? 0}|${pod.gpuModels.join(',')}|${pod.minComputeCapability}`;
      if (pod.tolerations.length > 0) k += `|t${JSON.stringify(pod.tolerations)}`;
      const sel = Object.keys(pod.nodeSelector);
      if (sel.length > 0) k += `|s${JSON.stringify(sel.sort().map((x) => [x, pod.nodeSelector[x]]))}`;
      return k;
    };
    const problems: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const gpuCount = pick([0, 1, 1, 2, 8]);
      const selector: Record<string, string> = {};
      for (const k of ['a', 'b', 'c']) if (rng.next() < 0.2) selector[k] = pick(['x', 'y']);
      const pod = makePod(
        `p${i}`,
        {
          gpuCount,
          gpuMilli: pick([1000, 500, 300]),
          cpuMilli: pick([1000, 2000]),
          memoryMiB: pick([1024, 2048]),
          ...(rng.next() < 0.2 ? { gpuMemoryMiB: pick([4096, 8192]) } : {}),
        },
        {
          gpuModels: pick([[], ['L4'], ['L4', 'T4'], ['T4', 'L4'], ['L4,T4']]),
          minComputeCapability: pick([0, 0, 80]),
          tolerations: pick([[], [], [{ key: 'gpu', operator: 'Exists' }], [{ key: 'gpu', operator: 'Equal', value: 'v' }]]),
          nodeSelector: selector,
        },
      );
      if (shapeKey(pod) !== build(pod)) problems.push(`${pod.id}: ${shapeKey(pod)} vs ${build(pod)}`);
    }
    expect(problems).toEqual([]);
  });

  it('is equal for pods that filter and score alike, whatever their id, gang or priority', () => {
    const a = makePod('a', { gpuCount: 2 }, { priority: 1 });
    const b = makePod('b', { gpuCount: 2 }, { gang: 'g', queue: 'other' });
    expect(shapeKey(a)).toBe(shapeKey(b));
  });

  it('differs when anything a filter reads differs; node selector order does not matter', () => {
    const base = makePod('a', { gpuCount: 1 });
    const variants = [
      makePod('a', { gpuCount: 1, gpuMilli: 500 }),
      makePod('a', { gpuCount: 2 }),
      makePod('a', { gpuCount: 1, cpuMilli: 2000 }),
      makePod('a', { gpuCount: 1, memoryMiB: 2048 }),
      makePod('a', { gpuCount: 1, gpuMemoryMiB: 4096 }),
      makePod('a', { gpuCount: 1 }, { gpuModels: ['L4'] }),
      makePod('a', { gpuCount: 1 }, { minComputeCapability: 80 }),
      makePod('a', { gpuCount: 1 }, { tolerations: [{ key: 'gpu', operator: 'Exists' }] }),
      makePod('a', { gpuCount: 1 }, { nodeSelector: { pool: 'x' } }),
      makePod('a', { gpuCount: 1 }, { nodeAffinity: { required: [{ matchExpressions: [{ key: 'pool', operator: 'Exists' }] }] } }),
      makePod('a', { gpuCount: 1 }, { nodeAffinity: { preferred: [{ weight: 1, preference: { matchExpressions: [{ key: 'pool', operator: 'Exists' }] } }] } }),
      makePod('a', { gpuCount: 1 }, { hostPorts: [{ port: 80, protocol: 'TCP', ip: '0.0.0.0' }] }),
      makePod('a', { gpuCount: 1 }, { hostPorts: [{ port: 80, protocol: 'UDP', ip: '0.0.0.0' }] }),
      makePod('a', { gpuCount: 1, scalar: { 'rdma/hca': 1 } }),
    ];
    const keys = new Set([shapeKey(base), ...variants.map(shapeKey)]);
    expect(keys.size).toBe(variants.length + 1);
    expect(shapeKey(makePod('s1', {}, { nodeSelector: { a: '1', b: '2' } }))).toBe(shapeKey(makePod('s2', {}, { nodeSelector: { b: '2', a: '1' } })));
  });

  it('a known shape with affinity, ports or other resources is found again, and told apart from one without', () => {
    const ports = (port: number) => makePod('x', { gpuCount: 1 }, { hostPorts: [{ port, protocol: 'TCP', ip: '0.0.0.0' }] });
    expect(shapeKey(ports(80))).toBe(shapeKey(ports(80)));
    expect(shapeKey(ports(81))).not.toBe(shapeKey(ports(80)));
    expect(shapeKey(makePod('y', { gpuCount: 1 }))).not.toBe(shapeKey(ports(80)));
  });
});

describe('ScoreIndex and the node name (matchFields)', () => {
  it('evaluates every node of a spec class for a shape that reads the node name, and shares results otherwise', () => {
    const st = new ClusterState(['a', 'b', 'c'].map((n) => nodeSpec(n, 'l4x8')));
    expect(st.specClasses().count).toBe(1);
    const byName = makePod('p', {}, { nodeAffinity: { required: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['b'] }] }] } });
    const fitWithName: Plugin = { name: 'fit', filter: fitFilter, readsNodeName: (p) => p.nodeAffinity !== undefined };
    const counters = { evaluations: 0, builds: 0 };
    const idx = new ScoreIndex(st, profileWith([fitWithName], []), byName, counters);
    idx.refresh();
    expect([...idx.reason]).toEqual([Reason.NodeAffinity, Reason.Fits, Reason.NodeAffinity]);
    expect(counters.evaluations).toBe(3);
    const plain = new ScoreIndex(st, profileWith([fitWithName], []), makePod('q', {}), counters);
    plain.refresh();
    expect(counters.evaluations).toBe(4);
  });

  it('leaves out scorers whose preScore says every node scores the same', () => {
    const st = new ClusterState(['a', 'b'].map((n) => nodeSpec(n, 'l4x8')));
    const calls: string[] = [];
    const skipped: Plugin = { name: 'skipped', preScore: () => false, score: () => (calls.push('skipped'), 50) };
    const kept: Plugin = { name: 'kept', preScore: () => true, score: () => (calls.push('kept'), 1) };
    const idx = new ScoreIndex(
      st,
      profileWith(
        [fit],
        [
          { plugin: skipped, weight: 1 },
          { plugin: kept, weight: 1 },
        ],
      ),
      makePod('p', {}),
    );
    idx.refresh();
    expect(calls).toEqual(['kept']); // one evaluation for the class, the skipped scorer never called
    expect(idx.score[0]).toBe(1);
  });
});

describe('ScoreIndex with kube-scheduler per-node fields (ports, other resources, node affinity, soft taints)', () => {
  it.each([21, 22])('equals a brute-force scan after random placements and releases that hold ports and resources (seed %i)', (seed) => {
    const rng = seededRng(seed);
    const specs = Array.from({ length: 10 }, (_, i) =>
      nodeSpec(`k${i}`, 'l4x8', {
        labels: i % 2 === 0 ? { zone: 'a' } : { zone: 'b' },
        ...(i % 3 === 0 ? { taints: [{ key: 'spot', effect: 'PreferNoSchedule' as const }] } : {}),
        ...(i < 5 ? { scalar: { 'rdma/hca': 2 } } : {}),
        location: { zone: 'z', block: 'b', rack: `r${i % 2}` },
      }),
    );
    const st = new ClusterState(specs);
    const profile = profileWith(
      [fitPlugin()],
      [
        { plugin: freeGpus, weight: 1 },
        { plugin: nodeAffinityPlugin(), weight: 2 },
        { plugin: taintTolerationPlugin(), weight: 3 },
      ],
    );
    const port = (n: number) => [{ port: n, protocol: 'TCP' as const, ip: '0.0.0.0' }];
    const pods = [
      makePod('port80', { gpuCount: 1 }, { hostPorts: port(80) }),
      makePod('rdma', { gpuCount: 1, scalar: { 'rdma/hca': 1 } }),
      makePod('named', { gpuCount: 1 }, { nodeAffinity: { required: [{ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['k7'] }] }] } }),
      makePod(
        'prefers-a',
        { gpuCount: 2 },
        { nodeAffinity: { preferred: [{ weight: 1, preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] } }] } },
      ),
    ];
    const indices = pods.map((p) => new ScoreIndex(st, profile, p));
    const live: string[] = [];
    const problems: string[] = [];
    const refused = new Set<string>();
    for (let step = 0; step < 150; step++) {
      if (rng.next() < 0.6 || live.length === 0) {
        const node = st.nodes[rng.int(st.size)]!;
        const g = node.gpuFree.findIndex((f) => f === 1000);
        const id = `x${step}`;
        const roll = rng.int(3);
        if (g >= 0) {
          st.allocate({
            podId: id,
            node: node.name,
            gpus: [g],
            gpuMilli: 1000,
            cpuMilli: 1000,
            memoryMiB: 1024,
            priority: 0,
            queue: 'q',
            ...(roll === 0 ? { hostPorts: port(80) } : roll === 1 && node.spec.scalar !== undefined ? { scalar: { 'rdma/hca': 1 } } : {}),
          });
          live.push(id);
        }
      } else st.release(live.splice(rng.int(live.length), 1)[0]!);
      indices.forEach((idx, k) => {
        idx.refresh();
        const b = brute(profile, pods[k]!, st);
        for (let i = 0; i < st.size; i++) if (idx.reason[i] !== b.reasons[i]) problems.push(`step ${step} ${pods[k]!.id} reason of ${i}`);
        if (idx.best() !== bruteBest(b, st, 0, st.size)) problems.push(`step ${step} ${pods[k]!.id} best`);
        for (const r of idx.reason) if (r !== Reason.Fits) refused.add(pods[k]!.id);
      });
    }
    expect(problems).toEqual([]);
    // Each filtering shape was refused somewhere at some step (ports, resources, the name), or the scan proves little.
    expect(['named', 'port80', 'rdma'].filter((id) => !refused.has(id))).toEqual([]);
  });
});
