import { describe, expect, it } from 'vitest';
import { LLAMA31_8B_H100 } from '../../serving/engine-model.ts';
import { aimdConfig, aimdStep, initialBatchSize, kvCapacityTokens, predictedP99Ms } from './batch-size.ts';

const m = LLAMA31_8B_H100;
const mix = (p: number, o: number, n = 100) => ({ promptTokens: Array.from({ length: n }, () => p), outputTokens: Array.from({ length: n }, () => o) });
const bounds = { min: 1, max: 2048 };

describe('initial batch size', () => {
  it('is bounded by KV memory: long prompts get smaller batches', () => {
    const short = initialBatchSize(m, undefined, mix(200, 50), 0, bounds);
    const long = initialBatchSize(m, undefined, mix(4000, 50), 0, bounds);
    expect(short).toMatchObject({ size: 256, limitedBy: 'engine' }); // max-num-seqs binds first
    expect(long.limitedBy).toBe('memory');
    expect(long.size).toBe(Math.floor(435_000 / 4050));
  });
  it('follows free memory: half the free memory, about half the batch', () => {
    const mem = (free: number) => ({ freeBytes: free, weightsBytes: 16e9, kvBytesPerToken: 131072, maxFraction: 0.9 });
    expect(kvCapacityTokens(m, mem(80e9))).toBe(Math.floor((72e9 - 16e9) / 131072));
    const full = initialBatchSize(m, mem(80e9), mix(4000, 50), 0, bounds).size;
    const half = initialBatchSize(m, mem(40e9), mix(4000, 50), 0, bounds).size;
    expect(half).toBeLessThan(full * 0.5);
    expect(initialBatchSize(m, mem(10e9), mix(4000, 50), 0, bounds)).toMatchObject({ size: 1, limitedBy: 'bounds' });
  });
  it('holds a shared prefix once: a high KV-cache hit rate allows a larger batch', () => {
    const cold = initialBatchSize(m, undefined, mix(4000, 50), 0, bounds).size; // 107
    const warm = initialBatchSize(m, undefined, mix(4000, 50), 0.5, bounds).size;
    expect(cold).toBe(107);
    expect(warm).toBe(Math.floor((435_000 - 2000) / 2050)); // the 2000 shared tokens once, 2000 + 50 per sequence
  });
  it('meets the SLA by the engine model: the largest size whose predicted p99 fits', () => {
    const free = initialBatchSize(m, undefined, mix(500, 200), 0, bounds);
    const tight = initialBatchSize(m, undefined, mix(500, 200), 0, bounds, 3000);
    expect(free.predictedP99Ms).toBeGreaterThan(3000);
    expect(tight.limitedBy).toBe('sla');
    expect(tight.predictedP99Ms).toBeLessThanOrEqual(3000);
    expect(predictedP99Ms(m, Math.ceil(tight.size / 0.9) + 1, mix(500, 200))).toBeGreaterThan(3000);
  });
  it("stays within the job's bounds", () => {
    expect(initialBatchSize(m, undefined, mix(200, 50), 0, { min: 8, max: 64 })).toMatchObject({ size: 64, limitedBy: 'bounds' });
  });
});

describe('AIMD on p99 against the SLA', () => {
  const c = aimdConfig(64, { min: 4, max: 256 }, 1000);
  it('adds while under the SLA, multiplies down on a miss or on memory pressure, within bounds', () => {
    expect(aimdStep(64, { p99Ms: 800, memoryFraction: 0.5 }, c)).toEqual({ size: 72, why: 'p99 800 ms within 1000 ms' });
    expect(aimdConfig(4, { min: 1, max: 256 }, 1000).increase).toBe(1);
    expect(aimdStep(64, { p99Ms: 1200, memoryFraction: 0.5 }, c)).toEqual({ size: 44, why: 'p99 1200 ms over 1000 ms' });
    expect(aimdStep(64, { p99Ms: 100, memoryFraction: 0.95 }, c).size).toBe(44);
    expect(aimdStep(5, { p99Ms: 5000, memoryFraction: 0 }, c).size).toBe(4);
    expect(aimdStep(250, { p99Ms: 1, memoryFraction: 0 }, c).size).toBe(256);
    // A miss the device's slowdown explains (1500 ms at ×2 slower = 750 ms healthy) keeps the size; one it does not, shrinks.
    expect(aimdStep(64, { p99Ms: 1500, memoryFraction: 0.5, slowdown: 2 }, c)).toEqual({
      size: 64,
      why: 'p99 1500 ms over 1000 ms, explained by the device running ×2.00 slower: size kept',
    });
    expect(aimdStep(64, { p99Ms: 2500, memoryFraction: 0.5, slowdown: 2 }, c).size).toBe(44);
    expect(aimdStep(64, { p99Ms: 1500, memoryFraction: 0.95, slowdown: 2 }, c).size).toBe(44);
    expect(aimdStep(64, { p99Ms: 1200, memoryFraction: 0.5, slowdown: 1 }, c).size).toBe(44);
  });
  it('converges to a size oscillating just below the knee of a latency curve', () => {
    // A plant whose p99 grows linearly with the batch: the SLA is met at 100 and below.
    let size = 8;
    const seen: number[] = [];
    for (let i = 0; i < 200; i++) {
      size = aimdStep(size, { p99Ms: size * 10, memoryFraction: 0.5 }, c).size;
      if (i >= 100) seen.push(size);
    }
    expect(Math.max(...seen)).toBeLessThanOrEqual(100 + c.increase);
    expect(Math.min(...seen)).toBeGreaterThanOrEqual(Math.floor(100 * 0.7) - 1);
  });
});
