import { describe, expect, it } from 'vitest';
import { formatComputeCapability, makeGpus, parseComputeCapability } from './gpu.ts';

describe('parseComputeCapability', () => {
  it.each([
    ['sm_90', 90],
    ['SM_86', 86],
    ['sm80', 80],
    [' sm_70 ', 70],
    ['9.0', 90],
    ['8.6', 86],
    ['12.0', 120],
    ['75', 75],
    [89, 89],
  ] as const)('%j → %i', (text, cc) => {
    expect(parseComputeCapability(text)).toBe(cc);
  });

  it.each(['sm_x', '', 'sm_9', '9', '9.0.1', 'ampere', '8.65'])('rejects %j', (text) => {
    expect(parseComputeCapability(text)).toBeUndefined();
  });

  it('rejects numbers that are not a plausible integer capability', () => {
    expect(parseComputeCapability(8.6)).toBeUndefined();
    expect(parseComputeCapability(0)).toBeUndefined();
    expect(parseComputeCapability(-90)).toBeUndefined();
    expect(parseComputeCapability(200)).toBeUndefined();
  });

  it('formats back as sm_NN', () => {
    expect(formatComputeCapability(90)).toBe('sm_90');
    expect(parseComputeCapability(formatComputeCapability(86))).toBe(86);
  });
});

describe('makeGpus', () => {
  it('fills memory and capability from the known model and numbers devices from 0', () => {
    expect(makeGpus(2, 'L4')).toEqual([
      { index: 0, model: 'L4', memoryMiB: 24_576, computeCapability: 89, healthy: true },
      { index: 1, model: 'L4', memoryMiB: 24_576, computeCapability: 89, healthy: true },
    ]);
  });

  it('lets overrides win and gives unknown models 0 memory and capability', () => {
    expect(makeGpus(1, 'H100-SXM', { memoryMiB: 100, healthy: false })[0]).toEqual({ index: 0, model: 'H100-SXM', memoryMiB: 100, computeCapability: 90, healthy: false });
    expect(makeGpus(1, 'L40S')[0]).toEqual({ index: 0, model: 'L40S', memoryMiB: 0, computeCapability: 0, healthy: true });
    expect(makeGpus(1, 'L40S', { computeCapability: 89 })[0]?.computeCapability).toBe(89);
    expect(makeGpus(0, 'L4')).toEqual([]);
  });
});
