import { describe, expect, it } from 'vitest';
import { clusterFragmentation, compileShapes, fragmentFromAggregates, modelMask, nodeFragment, thresholdAggregates } from './fragmentation.ts';
import { typicalShapes, type TypicalShape } from '../../estimate/typical-shapes.ts';
import { seededRng } from '../../ports.ts';

// A: 1 GPU at 500 milli, 4 cores (p 0.5); B: CPU-only, 8 cores (p 0.25); C: 2 whole V100s, 2 cores (p 0.25).
const shapes: TypicalShape[] = [
  { cpuMilli: 4000, gpuMilli: 500, gpuCount: 1, gpuModels: [], weight: 0.5 },
  { cpuMilli: 8000, gpuMilli: 0, gpuCount: 0, gpuModels: [], weight: 0.25 },
  { cpuMilli: 2000, gpuMilli: 1000, gpuCount: 2, gpuModels: ['V100'], weight: 0.25 },
];

describe('nodeFragment (hand-computed)', () => {
  it('T4 node, 6 cores left, GPUs free [1000, 300, 0, 700]: A → Q3 with 300 small, B → XR, C → NA', () => {
    // F = 2000. A: 0.5 × 300 = 150; B: 0.25 × 2000 = 500; C: 0.25 × 2000 = 500.
    expect(nodeFragment(shapes, modelMask(shapes, 'T4'), 6000, [1000, 300, 0, 700])).toBe(1150);
  });
  it('V100 node with the same state: C has one whole GPU of the two it needs → Q2, all 2000', () => {
    expect(nodeFragment(shapes, modelMask(shapes, 'V100'), 6000, [1000, 300, 0, 700])).toBe(1150);
  });
  it('3 cores left: A fits on GPUs but not on CPU → Q4 (all free); C → Q2', () => {
    // A: 0.5 × 2000 = 1000; B: 500; C (V100, cpu ok, too few GPUs): 500.
    expect(nodeFragment(shapes, modelMask(shapes, 'V100'), 3000, [1000, 300, 0, 700])).toBe(2000);
  });
  it('1 core left: C lacks CPU and GPUs → Q1 (all free)', () => {
    expect(nodeFragment(shapes, modelMask(shapes, 'V100'), 1000, [1000, 1000])).toBe(2000);
  });
  it('a node with no free GPU has no fragment', () => {
    expect(nodeFragment(shapes, modelMask(shapes, 'T4'), 64000, [0, 0])).toBe(0);
  });
  it('an idle GPU is fragment only for CPU-only shapes (XL) when everything else fits', () => {
    const s: TypicalShape[] = [
      { cpuMilli: 1000, gpuMilli: 1000, gpuCount: 1, gpuModels: [], weight: 0.75 },
      { cpuMilli: 1000, gpuMilli: 0, gpuCount: 0, gpuModels: [], weight: 0.25 },
    ];
    expect(nodeFragment(s, modelMask(s, 'X'), 8000, [1000])).toBe(250);
  });
});

describe('compiled aggregates', () => {
  it('give bit-identical fragments to nodeFragment on random states', () => {
    const rng = seededRng(7);
    const many: TypicalShape[] = Array.from({ length: 30 }, (_, i) => ({
      cpuMilli: 1000 * (1 + rng.int(16)),
      gpuMilli: i % 7 === 0 ? 0 : i % 3 === 0 ? 1000 : 50 * (1 + rng.int(19)),
      gpuCount: i % 7 === 0 ? 0 : i % 3 === 0 ? 1 + rng.int(4) : 1,
      gpuModels: i % 5 === 0 ? ['A'] : [],
      weight: rng.next() / 30,
    }));
    const c = compileShapes(many);
    const fit = new Int32Array(c.thresholds.length);
    const small = new Int32Array(c.thresholds.length);
    for (let k = 0; k < 500; k++) {
      const free = Array.from({ length: 1 + rng.int(8) }, () => (rng.next() < 0.3 ? 1000 : 10 * rng.int(101)));
      const cpu = 1000 * rng.int(40);
      const mask = modelMask(many, rng.next() < 0.5 ? 'A' : 'B');
      const total = thresholdAggregates(c, free, fit, small);
      expect(fragmentFromAggregates(c, mask, cpu, total, fit, small)).toBe(nodeFragment(many, mask, cpu, free));
    }
  });
});

describe('typicalShapes', () => {
  it('keeps the most frequent shapes up to 95 % of pods, ties by larger key, weights renormalised', () => {
    const pods = [
      ...Array.from({ length: 10 }, () => ({ cpuMilli: 1000, gpuMilli: 500, gpuCount: 1, gpuModels: [] })),
      ...Array.from({ length: 5 }, () => ({ cpuMilli: 2000, gpuMilli: 0, gpuCount: 0, gpuModels: [] })),
      ...Array.from({ length: 5 }, () => ({ cpuMilli: 3000, gpuMilli: 1000, gpuCount: 1, gpuModels: [] })),
      { cpuMilli: 9000, gpuMilli: 1000, gpuCount: 8, gpuModels: [] },
    ];
    const t = typicalShapes(pods);
    expect(t.map((s) => s.cpuMilli)).toEqual([1000, 3000, 2000]);
    expect(t.map((s) => s.weight)).toEqual([10 / 21 / (20 / 21), 5 / 21 / (20 / 21), 5 / 21 / (20 / 21)]);
  });
  it('CPU-only pods form one key per CPU request, whatever their GPU fields', () => {
    const t = typicalShapes([
      { cpuMilli: 1000, gpuMilli: 300, gpuCount: 0, gpuModels: ['X'] },
      { cpuMilli: 1000, gpuMilli: 0, gpuCount: 0, gpuModels: [] },
    ]);
    expect(t).toEqual([{ cpuMilli: 1000, gpuMilli: 0, gpuCount: 0, gpuModels: [], weight: 1 }]);
  });
  it('a shape carries the mean memory of its pods when memory is given (not part of the key)', () => {
    const t = typicalShapes([
      { cpuMilli: 1000, gpuMilli: 500, gpuCount: 1, gpuModels: [], memoryMiB: 4000 },
      { cpuMilli: 1000, gpuMilli: 500, gpuCount: 1, gpuModels: [], memoryMiB: 8000 },
      { cpuMilli: 2000, gpuMilli: 0, gpuCount: 0, gpuModels: [] },
    ]);
    expect(t).toEqual([
      { cpuMilli: 1000, gpuMilli: 500, gpuCount: 1, gpuModels: [], weight: 2 / 3, memoryMiB: 6000 },
      { cpuMilli: 2000, gpuMilli: 0, gpuCount: 0, gpuModels: [], weight: 1 / 3 },
    ]);
  });
});

describe('clusterFragmentation', () => {
  it('sums the node fragments over the free milli of every node, one model mask per GPU model', () => {
    const node = (model: string, gpuFree: number[]) => ({ spec: { gpus: gpuFree.map(() => ({ model })) }, cpuFreeMilli: 6000, gpuFree });
    // The two hand-computed nodes above (1150 of 2000 each) and a full node (nothing free, no fragment).
    const r = clusterFragmentation([node('T4', [1000, 300, 0, 700]), node('V100', [1000, 300, 0, 700]), node('T4', [0, 0])], shapes);
    expect(r).toEqual({ fragmentMilli: 2300, freeMilli: 4000, ratio: 0.575 });
    expect(clusterFragmentation([node('T4', [0, 0])], shapes).ratio).toBe(0);
  });
});
