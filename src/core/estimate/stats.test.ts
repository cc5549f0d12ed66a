import { describe, expect, it } from 'vitest';
import { percentile } from './stats.ts';

describe('percentile (nearest rank)', () => {
  it('picks the value at ceil(p·n) of an ascending list', () => {
    const xs = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(100);
    expect(percentile(xs, 10)).toBe(10);
    expect(percentile(xs, 0)).toBe(10);
    expect(percentile([], 50)).toBe(0);
  });
});
