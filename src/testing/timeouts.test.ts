import { describe, expect, it } from 'vitest';
import { scaled, TIMEOUT_SCALE, timeoutScaleFor } from './timeouts.ts';

describe('test timeout scale', () => {
  it('is the load average per CPU, clamped to [1, 4]', () => {
    expect(timeoutScaleFor(undefined, 0.3, 2)).toBe(1);
    expect(timeoutScaleFor(undefined, 5, 2)).toBe(2.5);
    expect(timeoutScaleFor(undefined, 40, 2)).toBe(4);
    expect(timeoutScaleFor('', 5, 2)).toBe(2.5);
    expect(timeoutScaleFor(undefined, 3, 0)).toBe(3);
  });

  it('SITS_TEST_TIMEOUT_SCALE wins, and must be a positive number', () => {
    expect(timeoutScaleFor('1.5', 40, 2)).toBe(1.5);
    expect(timeoutScaleFor('6', 0, 2)).toBe(6);
    expect(() => timeoutScaleFor('fast', 0, 2)).toThrow(/SITS_TEST_TIMEOUT_SCALE must be a positive number/);
    expect(() => timeoutScaleFor('0', 0, 2)).toThrow(/positive/);
  });

  it('scaled() multiplies by the process factor', () => {
    expect(TIMEOUT_SCALE).toBeGreaterThan(0);
    expect(scaled(1000)).toBe(Math.round(1000 * TIMEOUT_SCALE));
  });
});
