import { describe, expect, it } from 'vitest';
import { makePod } from '../../model/pod.ts';
import { seededRng } from '../../ports.ts';
import { FragCache, fgdChoice, fgdPlugin } from './fgd.ts';
import { modelMask, nodeFragment } from './fragmentation.ts';
import { type TypicalShape } from '../../estimate/typical-shapes.ts';
import { oneNode } from './test-helpers.ts';

const shapes: TypicalShape[] = [
  { cpuMilli: 2000, gpuMilli: 500, gpuCount: 1, gpuModels: [], weight: 0.5 },
  { cpuMilli: 4000, gpuMilli: 1000, gpuCount: 1, gpuModels: [], weight: 0.4 },
  { cpuMilli: 8000, gpuMilli: 0, gpuCount: 0, gpuModels: [], weight: 0.1 },
];
const sigma = (d: number): number => 1 / (1 + Math.exp(-d));

describe('FragCache', () => {
  it('after / afterOne / afterWhole / afterCpu equal nodeFragment of the changed state', () => {
    const rng = seededRng(3);
    for (let k = 0; k < 200; k++) {
      const free = Array.from({ length: 4 }, () => (rng.next() < 0.4 ? 1000 : 100 * rng.int(10)));
      const cpuLeft = 1000 * rng.int(16);
      const { node } = oneNode(4, 'T4', 16000, free, cpuLeft);
      const cache = new FragCache(shapes);
      const mask = modelMask(shapes, 'T4');
      expect(cache.current(node)).toBe(nodeFragment(shapes, mask, cpuLeft, free));
      const g = rng.int(4);
      const m = Math.min(free[g] as number, 100 * rng.int(10));
      const changed = [...free];
      changed[g] = (changed[g] as number) - m;
      expect(cache.after(node, 1000, [g], m)).toBe(nodeFragment(shapes, mask, cpuLeft - 1000, changed));
      expect(cache.afterOne(node, 1000, free[g] as number, m)).toBe(nodeFragment(shapes, mask, cpuLeft - 1000, changed));
      expect(cache.afterCpu(node, 500)).toBe(nodeFragment(shapes, mask, cpuLeft - 500, free));
      const full = free.filter((f) => f === 1000).length;
      if (full === 0) expect(cache.afterWhole(node, 0, 1)).toBeUndefined();
      else {
        const i = free.indexOf(1000);
        const emptied = [...free];
        emptied[i] = 0;
        expect(cache.afterWhole(node, 0, 1)).toBe(nodeFragment(shapes, mask, cpuLeft, emptied));
      }
    }
  });
});

describe('fgdChoice', () => {
  it('a fractional pod takes the GPU whose leftover stays useful: 500 on [1000, 500] fills the half GPU', () => {
    const { node } = oneNode(2, 'T4', 16000, [1000, 500], 16000);
    const c = fgdChoice(new FragCache(shapes), makePod('p', { cpuMilli: 2000, gpuCount: 1, gpuMilli: 500 }), node);
    expect(c.gpus).toEqual([1]);
    // Before: the 500 GPU is fragment for the whole-GPU shape (0.4 × 500) plus XL 0.1 × 1500 = 350. After: 0.1 × 1000 = 100.
    expect(c.score).toBe(Math.trunc(sigma((350 - 100) / 1000) * 100));
  });
  it('equal integer scores keep the lowest GPU index', () => {
    const { node } = oneNode(3, 'T4', 16000, [1000, 1000, 1000], 16000);
    expect(fgdChoice(new FragCache(shapes), makePod('p', { cpuMilli: 2000, gpuCount: 1, gpuMilli: 500 }), node).gpus).toEqual([0]);
  });
  it('whole GPUs are the lowest-index fully free ones; none → no fit', () => {
    const { node } = oneNode(4, 'T4', 16000, [500, 1000, 0, 1000], 16000);
    expect(fgdChoice(new FragCache(shapes), makePod('p', { cpuMilli: 1000, gpuCount: 2 }), node).gpus).toEqual([1, 3]);
    expect(fgdChoice(new FragCache(shapes), makePod('p', { cpuMilli: 1000, gpuCount: 3 }), node).gpus).toBeUndefined();
  });
  it('the plugin scores and picks consistently', () => {
    const { node } = oneNode(2, 'T4', 16000, [1000, 500], 16000);
    const p = fgdPlugin(shapes);
    const pod = makePod('p', { cpuMilli: 2000, gpuCount: 1, gpuMilli: 500 });
    expect(p.pickGpus?.(pod, node, { state: undefined as never, rng: seededRng(1) })).toEqual([1]);
    expect(p.score?.(pod, node)).toBeGreaterThan(50);
  });
  it('with an allowed mask picks among the allowed GPUs only', () => {
    const { node } = oneNode(4, 'T4', 16000, [1000, 500, 1000, 1000], 16000);
    const p = fgdPlugin(shapes);
    const ctx = { state: undefined as never, rng: seededRng(1) };
    expect(p.pickGpus?.(makePod('p', { cpuMilli: 2000, gpuCount: 1, gpuMilli: 500 }), node, ctx, [0, 0, 1, 1])).toEqual([2]);
    expect(p.pickGpus?.(makePod('p', { cpuMilli: 1000, gpuCount: 2 }), node, ctx, [0, 1, 1, 1])).toEqual([2, 3]);
    expect(p.pickGpus?.(makePod('p', { cpuMilli: 1000, gpuCount: 2 }), node, ctx, [1, 1, 0, 0])).toBeUndefined();
  });
});
