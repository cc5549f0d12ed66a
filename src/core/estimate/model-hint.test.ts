import { describe, expect, it } from 'vitest';
import { formatModelHint, modelFromHint, parseModelHint } from './model-hint.ts';
import { DEFAULT_NETWORK, idealShares, stepTime } from './step-time.ts';
import { NODE_SHAPES } from '../model/presets.ts';

describe('model hints (TrainingJob spec.model, ADR 0188)', () => {
  it('round-trips through the pod annotation', () => {
    const h = { kind: 'bert', parameters: 340_000_000, parallelism: 'fsdp' } as const;
    expect(formatModelHint(h)).toBe('bert/340000000/fsdp');
    expect(parseModelHint(formatModelHint(h))).toEqual({ ok: true, value: h });
    expect(formatModelHint({ kind: 'gpt', parameters: 1.3e9 })).toBe('gpt/1300000000/ddp');
  });

  it.each([
    ['gpt/1e9', /is not <kind>\/<parameters>\/<parallelism>/],
    ['mamba/1e9/ddp', /kind "mamba" is not one of gpt, bert/],
    ['gpt/1000/ddp', /parameters "1000" is not a number from 1000000 to 10000000000000/],
    ['gpt//ddp', /parameters "" is not a number/],
    ['gpt/1e9/zero3', /parallelism "zero3" is not one of ddp, fsdp/],
  ])('rejects %j saying which part is wrong', (text, message) => {
    const r = parseModelHint(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(message);
  });

  it('a larger model is more communication-bound on the same PCIe placement', () => {
    const pcie = NODE_SHAPES.l4x8 as NonNullable<(typeof NODE_SHAPES)['l4x8']>;
    const like = { gpuModel: 'A100-80G', topology: pcie.topology, location: { zone: 'z', block: 'b', rack: 'r' } };
    const share = idealShares(like, 8);
    const util = (parameters: number) => stepTime(modelFromHint({ kind: 'gpt', parameters }), share, DEFAULT_NETWORK).gpuUtilization;
    expect(util(125e6)).toBeGreaterThan(util(7e9));
    // The depth and width come from the reference model closest in size.
    expect(modelFromHint({ kind: 'gpt', parameters: 1.2e9 })).toMatchObject({ layers: 24, dModel: 2048, seqLen: 2048, tokensPerGpuPerStep: 16_384 });
    expect(modelFromHint({ kind: 'bert', parameters: 3.4e8 })).toMatchObject({ seqLen: 512, tokensPerGpuPerStep: 16_384, parallelism: 'ddp' });
  });
});
