import { describe, expect, it } from 'vitest';
import { makePod } from '../../model/pod.ts';
import { ClusterState } from '../../snapshot/cluster-state.ts';
import { FragCache, fgdChoice } from './fgd.ts';
import type { TypicalShape } from '../../estimate/typical-shapes.ts';
import {
  allowsModel,
  cpuPerGpuMilli,
  excludedWeight,
  holeWaste,
  memPerGpuMilli,
  modelPressure,
  SITS_FRAG_DEFAULTS,
  SitsFragModel,
  sitsFragChoice,
  sitsFragPlugin,
  strandedGpuMilli,
  supplyShare,
} from './sits-frag.ts';
import { nodeInState, nodeSpec, oneNode } from './test-helpers.ts';

const shapes: TypicalShape[] = [
  { cpuMilli: 2000, gpuMilli: 500, gpuCount: 1, gpuModels: [], weight: 0.4 },
  { cpuMilli: 8000, gpuMilli: 1000, gpuCount: 1, gpuModels: [], weight: 0.4 },
  { cpuMilli: 8000, gpuMilli: 1000, gpuCount: 1, gpuModels: ['V100'], weight: 0.1 },
  { cpuMilli: 16000, gpuMilli: 0, gpuCount: 0, gpuModels: [], weight: 0.1 },
];

describe('workload constants', () => {
  it('κ = Σ p·cpu / Σ p·n·m over GPU shapes', () => {
    // (0.4·2000 + 0.4·8000 + 0.1·8000) / (0.4·500 + 0.4·1000 + 0.1·1000) = 4800 / 700
    expect(cpuPerGpuMilli(shapes)).toBeCloseTo(4800 / 700, 12);
    expect(cpuPerGpuMilli([{ cpuMilli: 1, gpuMilli: 0, gpuCount: 0, gpuModels: [], weight: 1 }])).toBe(0);
  });
  it('stranded GPU = free GPU the CPU cannot feed, never negative, off when κ = 0', () => {
    expect(strandedGpuMilli(4000, 8000, 4)).toBe(2000);
    expect(strandedGpuMilli(1000, 8000, 4)).toBe(0);
    expect(strandedGpuMilli(4000, 0, 0)).toBe(0);
  });
  it('memory per GPU milli = Σ p·mem / Σ p·n·m over GPU shapes that carry memory, else 0', () => {
    const withMem: TypicalShape[] = [
      { cpuMilli: 2000, gpuMilli: 500, gpuCount: 1, gpuModels: [], weight: 0.5, memoryMiB: 8000 },
      { cpuMilli: 8000, gpuMilli: 1000, gpuCount: 2, gpuModels: [], weight: 0.5, memoryMiB: 32000 },
    ];
    // (0.5·8000 + 0.5·32000) / (0.5·500 + 0.5·2000) = 20000 / 1250
    expect(memPerGpuMilli(withMem)).toBeCloseTo(16, 12);
    expect(memPerGpuMilli(shapes)).toBe(0);
  });
  it('hole waste W(h) = h·(1 − φ(h))^100: a hole no single-GPU shape fits is all waste, one a common shape fits ~none', () => {
    const w = holeWaste(shapes);
    // Single-GPU shapes: 500 (0.4) and 1000 (0.4 + 0.1); φ = 0 below 500, 0.4 / 0.9 from 500.
    expect(w[0]).toBe(0);
    expect(w[100]).toBe(100);
    expect(w[499]).toBe(499);
    expect(w[600]).toBeCloseTo(600 * (5 / 9) ** 100, 12);
    expect(w[600]).toBeLessThan(1e-20);
    expect(w[1000]).toBe(0);
    // A shape of 1 % of pods barely keeps a hole alive over 100 pods: (0.99)^100 ≈ 0.37.
    const rare = holeWaste([
      { cpuMilli: 1, gpuMilli: 200, gpuCount: 1, gpuModels: [], weight: 0.01 },
      { cpuMilli: 1, gpuMilli: 1000, gpuCount: 1, gpuModels: [], weight: 0.99 },
    ]);
    expect(rare[300]).toBeCloseTo(300 * 0.99 ** 100, 9);
    expect(holeWaste([{ cpuMilli: 1, gpuMilli: 1000, gpuCount: 4, gpuModels: [], weight: 1 }]).every((x) => x === 0)).toBe(true);
  });
  it('excluded weight = GPU shapes whose model list leaves the model out', () => {
    expect(excludedWeight(shapes, 'T4')).toBeCloseTo(0.1, 12);
    expect(excludedWeight(shapes, 'V100')).toBe(0);
  });
});

describe('sitsFragChoice', () => {
  it('equals FGD when nothing is stranded and no shape is constrained', () => {
    const plain = shapes.filter((s) => s.gpuModels.length === 0);
    const { node } = oneNode(4, 'T4', 64000, [1000, 500, 1000, 300], 64000);
    const pod = makePod('p', { cpuMilli: 2000, gpuCount: 1, gpuMilli: 500 });
    const f = fgdChoice(new FragCache(plain), pod, node);
    const s = sitsFragChoice(new SitsFragModel(plain), pod, node);
    expect(s.score).toBe(f.score);
    expect([s.gpu]).toEqual(f.gpus);
  });
  it('a CPU-only pod avoids the node it would leave CPU-starved next to free GPUs', () => {
    const state = new ClusterState([nodeSpec('gpu-free', 4, 'T4', 40000), nodeSpec('gpu-full', 4, 'T4', 40000)]);
    const free = nodeInState(state, 'gpu-free', [1000, 1000, 1000, 1000], 40000);
    const full = nodeInState(state, 'gpu-full', [0, 0, 0, 0], 40000);
    const m = new SitsFragModel(shapes);
    const pod = makePod('cpu', { cpuMilli: 16000 });
    expect(sitsFragChoice(m, pod, full).score).toBeGreaterThan(sitsFragChoice(m, pod, free).score);
  });
  it('a pod that may run anywhere prefers the model that constrained pods cannot use', () => {
    const state = new ClusterState([nodeSpec('t4', 4, 'T4', 64000), nodeSpec('v100', 4, 'V100', 64000)]);
    const t4 = nodeInState(state, 't4', [1000, 1000, 1000, 1000], 64000);
    const v100 = nodeInState(state, 'v100', [1000, 1000, 1000, 1000], 64000);
    const m = new SitsFragModel(shapes);
    const pod = makePod('any', { cpuMilli: 8000, gpuCount: 2 });
    expect(sitsFragChoice(m, pod, t4).score).toBeGreaterThan(sitsFragChoice(m, pod, v100).score);
  });
  it('a fractional pod leaves a hole that common shapes fit rather than a dead one (FGD picks the dead one)', () => {
    const holes: TypicalShape[] = [
      { cpuMilli: 1000, gpuMilli: 300, gpuCount: 1, gpuModels: [], weight: 0.3 },
      { cpuMilli: 1000, gpuMilli: 500, gpuCount: 1, gpuModels: [], weight: 0.3 },
      { cpuMilli: 1000, gpuMilli: 1000, gpuCount: 1, gpuModels: [], weight: 0.4 },
    ];
    const { node } = oneNode(2, 'T4', 64000, [600, 800], 64000);
    const pod = makePod('p', { cpuMilli: 1000, gpuCount: 1, gpuMilli: 500 });
    // FGD: 600 → 100 gives the lower fragment (the 800 still fits 500); but 100 milli is dead, 300 is not.
    expect(fgdChoice(new FragCache(holes), pod, node).gpus).toEqual([0]);
    expect(sitsFragChoice(new SitsFragModel(holes), pod, node).gpu).toBe(1);
  });
  it('a pod avoids the node it would leave short of memory next to free GPUs', () => {
    const withMem = shapes.map((s) => ({ ...s, memoryMiB: s.gpuMilli > 0 ? 16 * s.gpuMilli * s.gpuCount : 4096 }));
    const state = new ClusterState([nodeSpec('gpu-free', 4, 'T4', 64000, 65536), nodeSpec('gpu-full', 4, 'T4', 64000, 65536)]);
    const free = nodeInState(state, 'gpu-free', [1000, 1000, 1000, 1000], 64000);
    const full = nodeInState(state, 'gpu-full', [0, 0, 0, 0], 64000);
    const pod = makePod('mem', { cpuMilli: 1000, memoryMiB: 60000 });
    const m = new SitsFragModel(withMem);
    expect(sitsFragChoice(m, pod, full).score).toBeGreaterThan(sitsFragChoice(m, pod, free).score);
    // Without memory in the typical shapes the term is off and the two nodes tie.
    const plain = new SitsFragModel(shapes);
    expect(sitsFragChoice(plain, pod, full).score).toBe(sitsFragChoice(plain, pod, free).score);
  });
  it('no fit → score 0 and no GPU', () => {
    const { node } = oneNode(2, 'T4', 16000, [300, 0], 16000);
    expect(sitsFragChoice(new SitsFragModel(shapes), makePod('p', { cpuMilli: 1000, gpuCount: 1, gpuMilli: 500 }), node)).toEqual({ score: 0, gpu: -1 });
    expect(sitsFragChoice(new SitsFragModel(shapes), makePod('p', { cpuMilli: 1000, gpuCount: 1 }), node).score).toBe(0);
  });
  it('the plugin gives a fractional pod its chosen GPU and whole GPUs from the topology pick', () => {
    const { node } = oneNode(4, 'T4', 64000, [1000, 500, 1000, 1000], 64000);
    const p = sitsFragPlugin(shapes);
    const ctx = { state: undefined as never, rng: { next: () => 0, int: () => 0 } };
    expect(p.pickGpus?.(makePod('f', { cpuMilli: 2000, gpuCount: 1, gpuMilli: 500 }), node, ctx)).toEqual([1]);
    expect(p.pickGpus?.(makePod('w', { cpuMilli: 2000, gpuCount: 2 }), node, ctx)).toEqual([0, 2]);
    // Restricted to GPUs 2 and 3: the same rules among them.
    expect(p.pickGpus?.(makePod('f', { cpuMilli: 2000, gpuCount: 1, gpuMilli: 500 }), node, ctx, [0, 0, 1, 1])).toEqual([2]);
    expect(p.pickGpus?.(makePod('w', { cpuMilli: 2000, gpuCount: 2 }), node, ctx, [0, 0, 1, 1])).toEqual([2, 3]);
    expect(p.pickGpus?.(makePod('w', { cpuMilli: 2000, gpuCount: 3 }), node, ctx, [0, 0, 1, 1])).toBeUndefined();
  });
});

describe('GPU models: the workload a node of one model serves, and the pressure on its capacity', () => {
  const constrained: TypicalShape[] = [
    { cpuMilli: 4000, gpuMilli: 1000, gpuCount: 1, gpuModels: [], weight: 0.5 },
    { cpuMilli: 16000, gpuMilli: 1000, gpuCount: 1, gpuModels: ['P100'], weight: 0.25 },
    { cpuMilli: 1000, gpuMilli: 500, gpuCount: 1, gpuModels: ['P100', 'T4'], weight: 0.25 },
  ];
  it('κ and W(h) per model come from the shapes that may use the model', () => {
    const onG2 = (s: TypicalShape): boolean => allowsModel(s, 'G2');
    expect(cpuPerGpuMilli(constrained, onG2)).toBe(4);
    // On P100 every shape counts: (0.5·4000 + 0.25·16000 + 0.25·1000) / (0.5·1000 + 0.25·1000 + 0.25·500).
    expect(cpuPerGpuMilli(constrained, (s) => allowsModel(s, 'P100'))).toBeCloseTo(6250 / 875, 12);
    // Only the 500-milli shape could fill a 600 hole, and it may not run on G2: dead there, alive on T4.
    expect(holeWaste(constrained, 100, onG2)[600]).toBe(600);
    expect(holeWaste(constrained, 100, (s) => allowsModel(s, 'T4'))[600]).toBeCloseTo(600 * (1 - 0.25 / 0.75) ** 100, 9);
  });
  it('π(M): the share of M that the pods restricted to lists with M need when demand equals capacity', () => {
    const cap = new Map([
      ['G2', 8000],
      ['P100', 1000],
      ['T4', 1000],
    ]);
    const p = modelPressure(constrained, cap);
    // D = 500 + 250 + 125 = 875; C = 10000. P100-only: (250/875)·10000/1000; P100|T4: (125/875)·10000/2000.
    expect(p.get('P100')).toBeCloseTo((250 / 875) * 10 + (125 / 875) * 5, 12);
    expect(p.get('T4')).toBeCloseTo((125 / 875) * 5, 12);
    expect(p.has('G2')).toBe(false);
    expect(
      modelPressure(
        shapes.filter((s) => s.gpuModels.length === 0),
        cap,
      ).size,
    ).toBe(0);
    expect(modelPressure(constrained, new Map()).size).toBe(0);
  });
  it('with the pressure term, a pod that may run anywhere leaves a pressed model for the pods that need it', () => {
    const state = new ClusterState([nodeSpec('g2', 8, 'G2', 96000), nodeSpec('p100', 2, 'P100', 64000)]);
    const g2 = nodeInState(state, 'g2', [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000], 96000);
    const p100 = nodeInState(state, 'p100', [1000, 1000], 64000);
    const pod = makePod('any', { cpuMilli: 4000, gpuCount: 1 });
    const plugin = sitsFragPlugin(constrained, { ...SITS_FRAG_DEFAULTS, pressureWeight: 1 });
    expect(plugin.preScore?.(pod, state)).toBe(true);
    expect(plugin.score?.(pod, g2)).toBeGreaterThan(plugin.score?.(pod, p100) as number);
    // Without the cluster (no preScore yet) or with γ = 0 there is no pressure: the score is the older one.
    const m0 = new SitsFragModel(constrained, { ...SITS_FRAG_DEFAULTS, pressureWeight: 1 });
    const m1 = new SitsFragModel(constrained, { ...SITS_FRAG_DEFAULTS, pressureWeight: 0 });
    m1.observe(state);
    expect(sitsFragChoice(m0, pod, p100).score).toBe(sitsFragChoice(m1, pod, p100).score);
    m0.observe(state);
    expect(m0.view('P100').pressure).toBe(1);
    expect(sitsFragChoice(m0, pod, p100).score).toBeLessThan(sitsFragChoice(m1, pod, p100).score);
  });
});

describe('CPU supply (ADR 0189): when the cluster cannot feed its GPUs, pack the CPU', () => {
  // Per GPU milli of demand: GPU pods need 16 CPU milli, CPU-only pods as much again.
  const heavy: TypicalShape[] = [
    { cpuMilli: 16000, gpuMilli: 1000, gpuCount: 1, gpuModels: [], weight: 0.5 },
    { cpuMilli: 16000, gpuMilli: 0, gpuCount: 0, gpuModels: [], weight: 0.5 },
  ];
  it('φ = what is left of the supply after the GPU-less pods, over what the GPU pods need, at demand = capacity', () => {
    // Capacity 8000 GPU milli: CPU-only pods need 8000·16 = 128000, GPU pods 128000.
    expect(supplyShare(heavy, 8000, 192000, (s) => s.cpuMilli)).toBeCloseTo(0.5, 12);
    expect(supplyShare(heavy, 8000, 256000, (s) => s.cpuMilli)).toBe(1);
    expect(supplyShare(heavy, 8000, 1000, (s) => s.cpuMilli)).toBe(0);
    // A resource the shapes do not carry (no memory) is never short.
    expect(supplyShare(heavy, 8000, 1, (s) => s.memoryMiB)).toBe(1);
  });
  it('short of CPU, λ fades as φ^k and κ becomes φ·κ; with enough CPU both stay', () => {
    const short = new ClusterState([nodeSpec('a', 4, 'T4', 96000), nodeSpec('b', 4, 'T4', 96000)]);
    const m = new SitsFragModel(heavy);
    m.observe(short);
    expect(m.view('T4').kappa).toBeCloseTo(8, 12);
    // 0.5^20 is below the floor: λ keeps a tenth.
    expect(m.view('T4').strandScale).toBe(SITS_FRAG_DEFAULTS.strandFloor);
    const mild = new SitsFragModel(heavy);
    mild.observe(new ClusterState([nodeSpec('a', 4, 'T4', 124800), nodeSpec('b', 4, 'T4', 124800)]));
    // φ = (249600 − 128000) / 128000 = 0.95.
    expect(mild.view('T4').strandScale).toBeCloseTo(0.95 ** SITS_FRAG_DEFAULTS.strandDecay, 12);
    const rich = new SitsFragModel(heavy);
    rich.observe(new ClusterState([nodeSpec('a', 4, 'T4', 200000), nodeSpec('b', 4, 'T4', 200000)]));
    expect(rich.view('T4')).toMatchObject({ kappa: 16, strandScale: 1, cpuFit: 0 });
  });
  it('short of CPU, a CPU-only pod takes the node it leaves with the least CPU free (best fit); with enough CPU the nodes tie', () => {
    const state = new ClusterState([nodeSpec('a', 4, 'T4', 96000), nodeSpec('b', 4, 'T4', 96000)]);
    const a = nodeInState(state, 'a', [0, 0, 0, 0], 40000);
    const b = nodeInState(state, 'b', [0, 0, 0, 0], 20000);
    const pod = makePod('cpu', { cpuMilli: 16000 });
    const plugin = sitsFragPlugin(heavy);
    // Before PreScore has seen the cluster, φ = 1: no GPU is free on either node, so nothing tells them apart.
    expect(plugin.score?.(pod, a)).toBe(plugin.score?.(pod, b));
    expect(plugin.preScore?.(pod, state)).toBe(true);
    expect(plugin.score?.(pod, b)).toBeGreaterThan(plugin.score?.(pod, a) as number);
    // μ = 0 turns the packing term off.
    const off = sitsFragPlugin(heavy, { ...SITS_FRAG_DEFAULTS, cpuFitWeight: 0 });
    off.preScore?.(pod, state);
    expect(off.score?.(pod, a)).toBe(off.score?.(pod, b));
  });
  it('with enough CPU the score is the one before ADR 0189, pod by pod', () => {
    const state = new ClusterState([nodeSpec('x', 4, 'T4', 64000), nodeSpec('y', 4, 'T4', 64000)]);
    const x = nodeInState(state, 'x', [1000, 500, 1000, 300], 30000);
    const y = nodeInState(state, 'y', [1000, 1000, 0, 0], 9000);
    const now = sitsFragPlugin(shapes);
    const before = sitsFragPlugin(shapes, { ...SITS_FRAG_DEFAULTS, kappaBySupply: false, strandDecay: 0, cpuFitWeight: 0 });
    const pods = [
      makePod('c', { cpuMilli: 8000 }),
      makePod('f', { cpuMilli: 2000, gpuCount: 1, gpuMilli: 500 }),
      makePod('w', { cpuMilli: 8000, gpuCount: 1 }),
    ];
    for (const pod of pods) {
      now.preScore?.(pod, state);
      before.preScore?.(pod, state);
      for (const n of [x, y]) expect(now.score?.(pod, n), `${pod.id} on ${n.spec.name}`).toBe(before.score?.(pod, n));
    }
  });
});
