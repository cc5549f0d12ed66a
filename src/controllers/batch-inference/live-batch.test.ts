import { describe, expect, it } from 'vitest';
import { LiveBatchSize, batchPolicyOf, parseBatchPolicy, tokenMixOf } from './live-batch.ts';

describe('the live batch-size policy', () => {
  it('comes from spec.batching.dynamic and spec.strategy.batchSize, and is absent without either', () => {
    expect(batchPolicyOf({ batching: { batchSize: 32 } })).toBeUndefined();
    expect(batchPolicyOf({ batching: { batchSize: 32, dynamic: { minBatchSize: 2, maxBatchSize: 64, targetLatencyMs: 800 } } })).toEqual({ start: 32, min: 2, max: 64, targetP99Ms: 800 });
    const plugin = { file: 'p.wasm', sha256: 'a'.repeat(64) };
    expect(batchPolicyOf({ batching: { batchSize: 8 }, strategy: { batchSize: { wasm: plugin } } })).toEqual({ start: 8, min: 1, max: 2048, plugin });
  });
  it('round-trips through the --batching flag and names a bad field', () => {
    const p = { start: 32, min: 2, max: 64, targetP99Ms: 800, plugin: { file: 'p.wasm', sha256: 'a'.repeat(64) } };
    expect(parseBatchPolicy(JSON.stringify(p))).toEqual(p);
    expect(parseBatchPolicy('{"start":0,"min":1,"max":2}')).toEqual({ error: '--batching: start must be a positive integer, got 0' });
    expect(parseBatchPolicy('{"start":4,"min":8,"max":2}')).toEqual({ error: '--batching: min 8 is over max 2' });
    expect(parseBatchPolicy('{"start":4,"min":1,"max":8,"targetP99Ms":-3}')).toEqual({ error: '--batching: targetP99Ms must be a positive integer, got -3' });
    expect(parseBatchPolicy('nope')).toMatchObject({ error: expect.stringMatching(/^--batching: not JSON/) });
  });
  it('steps by AIMD once a window: +start/8 under the SLA, ×0.7 over it, within the bounds', () => {
    const s = new LiveBatchSize({ start: 16, min: 4, max: 20, targetP99Ms: 100 }, tokenMixOf([{ prompt: 'x' }]), undefined, 4);
    for (let i = 0; i < 3; i++) expect(s.observe(50)).toBeUndefined();
    expect(s.observe(50)).toMatchObject({ size: 18, p99Ms: 50, source: 'builtin' });
    for (let i = 0; i < 4; i++) s.observe(50);
    expect(s.size).toBe(20);
    for (let i = 0; i < 3; i++) s.observe(50);
    // One slow request in the window is its p99.
    expect(s.observe(500)).toMatchObject({ size: 14, p99Ms: 500, why: 'p99 500 ms over 100 ms' });
    for (let k = 0; k < 5; k++) for (let i = 0; i < 4; i++) s.observe(500);
    expect(s.size).toBe(4);
  });
});

describe('the live batch size reads the engine KV cache', () => {
  it('gives the window peak use to AIMD (shrinks past 0.9) and the free tokens to the plugin', () => {
    const reads = [{ usedFraction: 0.5, freeFraction: 0.5, capacityTokens: 1000, freeTokens: 500 }, { usedFraction: 0.95, freeFraction: 0.05 }];
    const seen: number[][] = [];
    const plugin = { name: 'echo', call: (_e: string, args: readonly number[]) => (seen.push([...args]), { ok: false as const, reason: 'no' }) };
    const s = new LiveBatchSize({ start: 10, min: 1, max: 40, targetP99Ms: 100 }, tokenMixOf([{ prompt: 'x' }]), plugin, 2, () => reads.shift());
    s.observe(10);
    expect(s.observe(10)).toMatchObject({ size: 11, source: 'builtin' });
    // batch_size(current, min, max, kvCapacityTokens, …, memoryFraction): the free tokens and the use.
    expect([seen[1]?.[3], seen[1]?.[10]]).toEqual([500, 0.5]);
    s.observe(10);
    // p99 10 ms is well under the SLA: only the memory miss (95 % > 90 %) shrinks 11 to 7.
    expect(s.observe(10)).toMatchObject({ size: 7, why: 'plugin echo: no; built-in batch size 7 used' });
    expect(seen[2]?.[10]).toBe(0.95);
    expect(s.lastKv).toEqual({ usedFraction: 0.95, freeFraction: 0.05 });
  });
});

describe('the plugin start decision with the engine KV cache', () => {
  it('is asked again with the free tokens once the engine is read, and not after a window', () => {
    const seen: number[] = [];
    const plugin = { name: 'kv', call: (_e: string, args: readonly number[]) => (seen.push(args[3] as number), { ok: true as const, value: Math.max(1, Math.min(64, Math.floor((args[3] as number) / 100))) }) };
    const s = new LiveBatchSize({ start: 8, min: 1, max: 64, targetP99Ms: 100 }, tokenMixOf([{ prompt: 'x' }]), plugin, 2);
    // Before the engine is up the KV is unknown (0): a memory-bound plugin answers its minimum.
    expect([s.size, seen]).toEqual([1, [0]]);
    expect(s.startWithKv({ usedFraction: 0.2, freeFraction: 0.8, capacityTokens: 4000, freeTokens: 3200 })).toBe(true);
    expect([s.size, s.source, seen]).toEqual([32, 'plugin', [0, 3200]]);
    s.observe(10);
    s.observe(10);
    expect(s.startWithKv({ usedFraction: 0, freeFraction: 1, capacityTokens: 4000, freeTokens: 4000 })).toBe(false);
    expect(new LiveBatchSize({ start: 8, min: 1, max: 64 }, tokenMixOf([{ prompt: 'x' }])).startWithKv({ usedFraction: 0, freeFraction: 1 })).toBe(false);
  });
});
