import { describe, expect, it } from 'vitest';
import { ArrivalHistory } from './arrivals.ts';

const MIN = 60_000;

describe('ArrivalHistory forecast', () => {
  it('repeats the recent rate, evenly spaced, cycling through the recent shapes', () => {
    const h = new ArrivalHistory<string>({ lookbackMs: 120 * MIN, horizonMs: 120 * MIN, minSpanMs: 15 * MIN });
    h.record('a', 0, 'x');
    h.record('a', 10 * MIN, 'y');
    h.record('a', 20 * MIN, 'z');
    // 3 arrivals over the 30 min observed → one every 10 min; no further ahead than 30 min of evidence.
    expect(h.rates(30 * MIN).get('a')).toBeCloseTo(3 / (30 * MIN), 15);
    expect(h.forecast(30 * MIN).map((f) => [f.id, f.atMs / MIN, f.template])).toEqual([
      ['forecast/a/1', 40, 'x'],
      ['forecast/a/2', 50, 'y'],
      ['forecast/a/3', 60, 'z'],
    ]);
  });

  it('forgets arrivals older than the lookback', () => {
    const h = new ArrivalHistory<string>({ lookbackMs: 20 * MIN, horizonMs: 120 * MIN, minSpanMs: 5 * MIN });
    for (const [t, s] of [
      [0, 'x'],
      [10, 'y'],
      [20, 'z'],
    ] as const)
      h.record('a', t * MIN, s);
    // At 30 min only the arrival at 20 min is within (10, 30]: 1 per 20 min, 20 min ahead.
    expect(h.forecast(30 * MIN).map((f) => [f.atMs / MIN, f.template])).toEqual([[50, 'z']]);
  });

  it('a single early arrival is spread over the minimum span; queues are forecast separately', () => {
    const h = new ArrivalHistory<number>({ lookbackMs: 120 * MIN, horizonMs: 60 * MIN, minSpanMs: 15 * MIN });
    h.record('a', 0, 1);
    h.record('b', 0.5 * MIN, 2);
    // Observed for 1 min, but the span is at least 15 min: a and b one job each every 15 min, 15 min ahead.
    expect(h.forecast(1 * MIN).map((f) => [f.queue, f.atMs / MIN])).toEqual([
      ['a', 16],
      ['b', 16],
    ]);
    expect(new ArrivalHistory().forecast(0)).toEqual([]);
  });

  it('prune forgets what is older than the lookback without forecasting', () => {
    const h = new ArrivalHistory<string>({ lookbackMs: 20 * MIN, horizonMs: 120 * MIN, minSpanMs: 5 * MIN });
    for (const [t, s] of [
      [0, 'x'],
      [10, 'y'],
      [20, 'z'],
    ] as const)
      h.record('a', t * MIN, s);
    h.prune(30 * MIN);
    expect(h.rates(30 * MIN).get('a')).toBeCloseTo(1 / (20 * MIN), 15);
  });
});
