import { describe, expect, it } from 'vitest';
import { evaluateFilters, ScoreIndex, shapeKey } from './score-index.ts';
import { Reason, type ReasonCode } from './reasons.ts';
import type { Plugin, Profile } from './types.ts';
import { fitFilter } from '../plugins/fit/fit.ts';
import { ClusterState, type NodeState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod, type PodSpec } from '../model/pod.ts';
import { seededRng, shuffle, type Rng } from '../ports.ts';

function nodeSpec(name: string, shapeId: string, extra: Partial<NodeSpec> = {}): NodeSpec {
  const s = NODE_SHAPES[shapeId];
  if (s === undefined) throw new Error(`no preset ${shapeId}`);
  return { name, cpuMilli: s.cpuMilli, memoryMiB: s.memoryMiB, maxPods: s.maxPods, gpus: s.gpus, topology: s.topology, location: { zone: 'z', block: 'b', rack: 'r' }, labels: {}, taints: [], unschedulable: false, ...extra };
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
    scores.push(r === Reason.Fits ? profile.scorers.reduce((s, x) => s + x.weight * (x.plugin.score as (p: PodSpec, n: NodeState) => number)(pod, n), 0) : Number.NaN);
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
  const ranks = shuffle(Array.from({ length: specs.length }, (_, i) => i), rng);
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
          for (let k2 = 0; k2 <= after.length; k2++) if (idx.kthFeasibleFrom(s, k2) !== (after[k2] ?? -1)) problems.push(`step ${step} ${pod.id} kth(${s},${k2})`);
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
    const st = new ClusterState([nodeSpec('a', 'l4x8'), nodeSpec('b', 'l4x8'), nodeSpec('c', 'l4x8'), nodeSpec('d', 't4x4')], (name) => ({ a: 3, b: 1, c: 2, d: 0 })[name] ?? 9);
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
    const st = new ClusterState(Array.from({ length: 6 }, (_, i) => nodeSpec(`n${i}`, 'l4x8')));
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
    ];
    const keys = new Set([shapeKey(base), ...variants.map(shapeKey)]);
    expect(keys.size).toBe(variants.length + 1);
    expect(shapeKey(makePod('s1', {}, { nodeSelector: { a: '1', b: '2' } }))).toBe(shapeKey(makePod('s2', {}, { nodeSelector: { b: '2', a: '1' } })));
  });
});
