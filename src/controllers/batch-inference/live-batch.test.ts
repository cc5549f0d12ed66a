import { describe, expect, it } from 'vitest';
import { LiveBatchSize, batchPolicyOf, memoryStart, parseBatchPolicy, sharedPrefixFraction, tokenMixOf } from './live-batch.ts';

describe('the live batch-size policy', () => {
  it('comes from spec.batching.dynamic and spec.strategy.batchSize, and is absent without either', () => {
    expect(batchPolicyOf({ batching: { batchSize: 32 } })).toBeUndefined();
    expect(
      batchPolicyOf({ batching: { batchSize: 32, dynamic: { minBatchSize: 2, maxBatchSize: 64, targetLatencyMs: 800, maxGpuMemoryPercent: 80 } } }),
    ).toEqual({ start: 32, min: 2, max: 64, targetP99Ms: 800, maxMemoryFraction: 0.8 });
    const plugin = { file: 'p.wasm', sha256: 'a'.repeat(64) };
    expect(batchPolicyOf({ batching: { batchSize: 8 }, strategy: { batchSize: { wasm: plugin } } })).toEqual({ start: 8, min: 1, max: 2048, plugin });
  });
  it('round-trips through the --batching flag and names a bad field', () => {
    const p = { start: 32, min: 2, max: 64, targetP99Ms: 800, maxMemoryFraction: 0.9, plugin: { file: 'p.wasm', sha256: 'a'.repeat(64) } };
    expect(parseBatchPolicy(JSON.stringify(p))).toEqual(p);
    expect(parseBatchPolicy('{"start":0,"min":1,"max":2}')).toEqual({ error: '--batching: start must be a positive integer, got 0' });
    expect(parseBatchPolicy('{"start":4,"min":8,"max":2}')).toEqual({ error: '--batching: min 8 is over max 2' });
    expect(parseBatchPolicy('{"start":4,"min":1,"max":8,"targetP99Ms":-3}')).toEqual({ error: '--batching: targetP99Ms must be a positive integer, got -3' });
    expect(parseBatchPolicy('{"start":4,"min":1,"max":8,"maxMemoryFraction":1.5}')).toEqual({
      error: '--batching: maxMemoryFraction must be a number in (0, 1], got 1.5',
    });
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
    const reads = [
      { usedFraction: 0.5, freeFraction: 0.5, capacityTokens: 1000, freeTokens: 500 },
      { usedFraction: 0.95, freeFraction: 0.05 },
    ];
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
    const plugin = {
      name: 'kv',
      call: (_e: string, args: readonly number[]) => (
        seen.push(args[3] as number),
        { ok: true as const, value: Math.max(1, Math.min(64, Math.floor((args[3] as number) / 100))) }
      ),
    };
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

describe('the built-in start from the engine (seed 004 §2.3)', () => {
  // 20 records: prompts 100..290 counted tokens (p90 271), outputs 50 (max_tokens).
  const counted = { promptTokens: Array.from({ length: 20 }, (_, i) => 100 + 10 * i), outputTokens: Array.from({ length: 20 }, () => 50) };
  const kv = { usedFraction: 0, freeFraction: 1, capacityTokens: 100_000, freeTokens: 100_000 };
  it('fits the free KV tokens × maxGpuMemoryPercent at the p90 counted prompt + p90 output, a shared prefix once', () => {
    // p90 prompt by the stats module's percentile of 100..290.
    const m = memoryStart(kv, counted, 0, 0.9, { min: 1, max: 2048 });
    const perSeq = (m?.why.match(/at (\d+) tokens a sequence/) ?? [])[1];
    expect(Number(perSeq)).toBeGreaterThan(300);
    expect(m?.size).toBe(Math.floor(90_000 / Number(perSeq)));
    // Half of each prompt shared: more sequences fit.
    const shared = memoryStart(kv, counted, 0.5, 0.9, { min: 1, max: 2048 });
    expect(shared?.size).toBeGreaterThan((m?.size ?? 0) * 1.5);
    expect(shared?.why).toMatch(/-token shared prefix held once/);
    expect(memoryStart(kv, counted, 0, 0.9, { min: 1, max: 64 })).toMatchObject({ size: 64, why: expect.stringMatching(/fit, bounded to \[1, 64\]\)$/) });
    expect(memoryStart({ usedFraction: 0.3, freeFraction: 0.7 }, counted, 0, 0.9, { min: 1, max: 64 })).toBeUndefined();
    // An engine that runs 4 sequences at once (llama-server's slots) gets 4: more would only queue there.
    expect(memoryStart(kv, counted, 0, 0.9, { min: 1, max: 2048 }, 4)).toMatchObject({
      size: 4,
      why: expect.stringMatching(/fit, the engine runs 4 at once\)$/),
    });
    expect(memoryStart(kv, counted, 0, 0.9, { min: 6, max: 2048 }, 4)?.size).toBe(6);
  });
  it('the common prefix of the prompts, as a share of their length', () => {
    const sys = 'You are a careful assistant that answers in one word. '.repeat(4);
    const bodies = ['cats', 'dogs', 'a much longer question about birds'].map((q) => ({
      messages: [
        { role: 'system', content: sys },
        { role: 'user', content: q },
      ],
    }));
    const f = sharedPrefixFraction(bodies);
    expect(f).toBeGreaterThan(0.8);
    expect(f).toBeLessThan(1);
    expect(sharedPrefixFraction([{ prompt: 'abc' }, { prompt: 'xyz' }])).toBeLessThan(0.3);
    expect(sharedPrefixFraction([{ prompt: 'only one' }])).toBe(0);
  });
  it('replaces the spec start once, before the first window, with dynamic batching only; a plugin is asked again instead', () => {
    const s = new LiveBatchSize({ start: 8, min: 1, max: 2048, targetP99Ms: 1000, maxMemoryFraction: 0.9 }, tokenMixOf([{ prompt: 'x' }]), undefined, 2);
    expect(s.size).toBe(8);
    expect(s.startFromEngine(kv, counted, 0)).toMatch(
      /^batch size \d+ \(builtin\): start from the engine's memory: 90000 of its 100000 free KV tokens \(90 %\)/,
    );
    expect(s.size).toBe(memoryStart(kv, counted, 0, 0.9, { min: 1, max: 2048 })?.size);
    s.observe(10);
    s.observe(10);
    expect(s.startFromEngine(kv, counted, 0)).toBeUndefined();
    // A plugin-only policy (no dynamic batching, no maxMemoryFraction) keeps its start; no capacity keeps it too.
    const plain = new LiveBatchSize({ start: 8, min: 1, max: 2048 }, tokenMixOf([{ prompt: 'x' }]));
    expect([plain.startFromEngine(kv, counted, 0), plain.size]).toEqual([undefined, 8]);
    const noCap = new LiveBatchSize({ start: 8, min: 1, max: 2048, maxMemoryFraction: 0.9 }, tokenMixOf([{ prompt: 'x' }]));
    expect([noCap.startFromEngine({ usedFraction: 0, freeFraction: 1 }, counted, 0), noCap.size]).toEqual([undefined, 8]);
    const seen: number[][] = [];
    const plugin = { name: 'kv', call: (_e: string, args: readonly number[]) => (seen.push([...args]), { ok: true as const, value: 5 }) };
    const withPlugin = new LiveBatchSize({ start: 8, min: 1, max: 64, maxMemoryFraction: 0.9 }, tokenMixOf([{ prompt: 'x' }]), plugin, 2);
    expect(withPlugin.startFromEngine(kv, counted, 0)).toMatch(/^batch size 5 \(plugin\): start decision with the engine's 100000 free KV tokens/);
    // The second ask carries the free tokens and the counted mix (a different prompt-length input than the first).
    expect(seen[1]?.[3]).toBe(100_000);
    expect(seen[1]?.slice(4)).not.toEqual(seen[0]?.slice(4));
  });
});
