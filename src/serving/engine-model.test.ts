import { describe, expect, it } from 'vitest';
import { decodeRunSeconds, LLAMA31_8B_H100 as M, stepSeconds } from './engine-model.ts';

describe('the engine model (Llama 3.1 8B, vLLM, H100; ADR 0080)', () => {
  it('reproduces the published decode step times it was fitted on', () => {
    // ~10 sequences of a few hundred tokens: 7.56 ms median TPOT (LambdaLabsML/vllm-benchmark, 1xH100).
    expect(stepSeconds(M, 10, 10 * 400, 0)).toBeGreaterThan(0.0072);
    expect(stepSeconds(M, 10, 10 * 400, 0)).toBeLessThan(0.0079);
    // 256 sequences (max-num-seqs) of ShareGPT length: 25.57 ms median TPOT (vLLM v0.6.0, same report).
    const full = stepSeconds(M, 256, 256 * 500, 0);
    expect(full).toBeGreaterThan(0.024);
    expect(full).toBeLessThan(0.028);
  });
  it('prefills 1,369 prompt tokens in about the published 62 ms TTFT', () => {
    const t = stepSeconds(M, 10, 0, 1369);
    expect(t).toBeGreaterThan(0.055);
    expect(t).toBeLessThan(0.07);
  });
  it('grows the step with the attended context (the KV read from HBM)', () => {
    expect(stepSeconds(M, 64, 64 * 8000, 0) - stepSeconds(M, 64, 0, 0)).toBeCloseTo((64 * 8000 * 131072) / 3.35e12, 9);
  });
  it('sums a decode-only run as the arithmetic series of its steps', () => {
    let sum = 0;
    for (let i = 0; i < 50; i++) sum += stepSeconds(M, 7, 7 * 100 + i * 7, 0);
    expect(decodeRunSeconds(M, 7, 700, 50)).toBeCloseTo(sum, 12);
    expect(decodeRunSeconds(M, 7, 700, 1)).toBeCloseTo(stepSeconds(M, 7, 700, 0), 15);
  });
  it('holds the KV cache an H100 leaves for an 8B model at 128 KiB per token', () => {
    // 81,559 MiB on the card, 0.9 of it for vLLM, 15,348 MiB of weights (vLLM's "took 14.9888 GB" log), ~3.5 GiB of activations.
    const mib = 0.9 * 81_559 - 15_348 - 3_500;
    expect(M.kvCapacityTokens * 0.125).toBeLessThanOrEqual(mib);
    expect(M.kvCapacityTokens * 0.125).toBeGreaterThan(mib * 0.99);
  });
});
