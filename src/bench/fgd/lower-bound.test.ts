import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import { loadOpenbNodes, loadOpenbPods } from '../../sim/trace/openb.ts';
import type { TraceNode } from '../../sim/trace/types.ts';
import { fgdLowerBound, lastEventOfBucket, packingFunctions, solveBoundLp } from './lower-bound.ts';
import { prepareFgdTrace, runFgd } from './run.ts';

const fixture = (f: string): string => fileURLToPath(new URL(`../../sim/testdata/${f}`, import.meta.url));
const node = (name: string, gpuCount: number, model = 'G2', cpuMilli = 96000): TraceNode => ({ name, cpuMilli, memoryMiB: 1 << 20, gpuCount, model, line: 0 });
const gpuPod = (m: number, n = 1, models: readonly string[] = [], cpu = 1000) => ({ cpu, mem: 1, n, m, models });

describe('packing functions', () => {
  it('are dual feasible: per-GPU milli that fit in one GPU never sum above 1', () => {
    const millis = [810, 650, 520, 470, 320, 230, 160, 50, 1000];
    const fs = packingFunctions(millis);
    expect(fs.length).toBe(1 + 6 + 3);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: 1, maxLength: 12 }), (items) => {
        const fitting: number[] = [];
        let used = 0;
        for (const m of items) if (used + m <= 1000) {
          fitting.push(m);
          used += m;
        }
        for (const f of fs) expect(fitting.reduce((a, m) => a + f(m), 0)).toBeLessThanOrEqual(1 + 1e-12);
      }),
    );
  });
});

describe('the LP bound', () => {
  it('two 600-milli pods on one GPU: only one fits, which the GPU-milli row alone would not see', async () => {
    expect(await solveBoundLp([node('a', 1)], [gpuPod(600), gpuPod(600)])).toBeCloseTo(600, 6);
    expect(await solveBoundLp([node('a', 1)], [gpuPod(500), gpuPod(500)])).toBeCloseTo(1000, 6);
  });
  it('respects models, CPU and GPUs per node', async () => {
    expect(await solveBoundLp([node('a', 2, 'T4')], [gpuPod(1000, 1, ['V100'])])).toBe(0);
    // 4 cores for two 3-core pods: a relaxation, it places 4/3 of a pod (an upper bound on the 1 that fits).
    expect(await solveBoundLp([node('a', 2, 'T4', 4000)], [gpuPod(1000, 1, [], 3000), gpuPod(1000, 1, [], 3000)])).toBeCloseTo(4000 / 3, 6);
    expect(await solveBoundLp([node('a', 4), node('b', 4)], [gpuPod(1000, 8)])).toBe(0);
  });
  it('the bucket-100 event: the last pod whose arrived % rounds to 100, or the nearest bucket the meter falls back to', () => {
    // 10 GPUs: bucket = round(arrived / 100 milli).
    // Arrived 90, 99, 100, 100.4, 100.6 (→ 101), 110.6 %.
    expect(lastEventOfBucket([9000, 900, 100, 40, 20, 1000], 10_000)).toBe(3);
    // No event in bucket 100: the meter averages buckets 99..101, so the last event of 101 counts.
    expect(lastEventOfBucket([9000, 1100, 500], 10_000)).toBe(1);
    expect(lastEventOfBucket([1000], 10_000)).toBe(-1);
  });
  it('on the tiny trace it is below every policy on every seed', async () => {
    const trace = prepareFgdTrace('tiny_pods.csv', loadOpenbNodes(fixture('tiny_nodes.csv')), loadOpenbPods(fixture('tiny_pods.csv')).pods);
    for (const seed of [42, 43]) {
      const bound = await fgdLowerBound(trace, seed);
      expect(bound).not.toBeNull();
      for (const p of ['bestfit', 'fgd', 'sits']) {
        const u = 100 - (runFgd(trace, p, seed).buckets.allocPct[100] as number);
        expect(bound as number, `${p} seed ${seed}`).toBeLessThanOrEqual(u);
      }
      expect(bound as number).toBeGreaterThanOrEqual(0);
    }
  });
});
