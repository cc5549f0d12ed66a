import { describe, expect, it } from 'vitest';
import { mean, median, nearestRank, percentile, percentiles } from './stats.ts';

describe('nearest-rank percentiles', () => {
  it('picks sorted[ceil(n·p/100) − 1], clamped to the list', () => {
    const xs = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    expect(nearestRank(xs, 50)).toBe(50);
    expect(nearestRank(xs, 99)).toBe(100);
    expect(nearestRank(xs, 90)).toBe(90);
    expect(nearestRank(xs, 10)).toBe(10);
    expect(nearestRank(xs, 0)).toBe(10);
    expect(nearestRank(xs, 100)).toBe(100);
    expect(
      nearestRank(
        Array.from({ length: 100 }, (_, i) => i + 1),
        99,
      ),
    ).toBe(99);
    // scheduler_perf's example: 10 samples, p99 is the maximum.
    expect(nearestRank([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99)).toBe(10);
    expect(nearestRank([], 50)).toBeUndefined();
  });

  it('sorts a copy when the values come in any order', () => {
    const xs = [5, 1, 3, 2, 4];
    expect(percentile(xs, 50)).toBe(3);
    expect(percentiles(xs, [0, 50, 100])).toEqual([1, 3, 5]);
    expect(xs).toEqual([5, 1, 3, 2, 4]);
    expect(percentile([], 99)).toBeUndefined();
  });
});

describe('median and mean', () => {
  it('median is the middle value, or the mean of the two middle ones (not the nearest rank)', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(percentile([4, 1, 3, 2], 50)).toBe(2);
    expect(median([])).toBeNaN();
  });

  it('mean sums left to right; NaN when empty', () => {
    expect(mean([1, 2, 3, 4])).toBe(2.5);
    expect(mean([0.1, 0.2, 0.3])).toBe((0.1 + 0.2 + 0.3) / 3);
    expect(mean([])).toBeNaN();
  });
});
