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
    ['10.0', 100],
    ['75', 75],
    ['120', 120],
    // A major version alone: every sm code has two or more digits.
    ['9', 90],
    [89, 89],
    // Numbers as YAML gives them: 9.0 and 9 are both 9; 8.6 stays 8.6.
    [9, 90],
    [8.6, 86],
    [12.1, 121],
    [120, 120],
  ] as const)('%j → %i', (text, cc) => {
    expect(parseComputeCapability(text)).toBe(cc);
  });

  it.each(['sm_x', '', 'sm_9', '9.0.1', 'ampere', '8.65', '9.10', '0.5', '0', '-9.0', 'NaN', '12', '10', 'sm_200', '200'])('rejects %j', (text) => {
    expect(parseComputeCapability(text)).toBeUndefined();
  });

  it('rejects numbers that are no capability, or ambiguous ones (12: sm_12 or 12.0?)', () => {
    for (const n of [0, -90, -9, 200, 8.65, 0.5, Number.NaN, Number.POSITIVE_INFINITY, 12, 15]) expect(parseComputeCapability(n), String(n)).toBeUndefined();
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
    expect(makeGpus(1, 'H100-SXM', { memoryMiB: 100, healthy: false })[0]).toEqual({
      index: 0,
      model: 'H100-SXM',
      memoryMiB: 100,
      computeCapability: 90,
      healthy: false,
    });
    expect(makeGpus(1, 'L40S')[0]).toEqual({ index: 0, model: 'L40S', memoryMiB: 0, computeCapability: 0, healthy: true });
    expect(makeGpus(1, 'L40S', { computeCapability: 89 })[0]?.computeCapability).toBe(89);
    expect(makeGpus(0, 'L4')).toEqual([]);
  });
});
