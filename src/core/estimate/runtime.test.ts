import { describe, expect, it } from 'vitest';
import { expectedDuration, survival } from './runtime.ts';

const done = (...ds: number[]) => ds.map((durationMs) => ({ durationMs, finished: true }));

describe('Kaplan–Meier runtime estimates', () => {
  it('with only finished jobs, the expected duration is their mean', () => {
    expect(expectedDuration(done(10, 20, 30, 40))).toBe(25);
  });

  it('conditioned on elapsed time, only longer jobs count', () => {
    // Ran 25 already: the jobs that lasted longer were 30 and 40.
    expect(expectedDuration(done(10, 20, 30, 40), 25)).toBe(35);
  });

  it('censored running jobs lengthen the estimate (no early-finisher bias)', () => {
    const finishedOnly = expectedDuration(done(10, 20)) as number;
    const withRunning = expectedDuration([...done(10, 20), { durationMs: 100, finished: false }, { durationMs: 100, finished: false }]) as number;
    expect(finishedOnly).toBe(15);
    // S: 3/4 after 10, 2/4 after 20, then flat to 100 (restricted mean) → 10 + 0.75·10 + 0.5·80 = 57.5.
    expect(withRunning).toBeCloseTo(57.5, 9);
  });

  it('survival steps by hand', () => {
    const c = survival([...done(5, 5, 9), { durationMs: 7, finished: false }]);
    expect(c.t).toEqual([5, 9]);
    expect(c.s[0]).toBeCloseTo(0.5, 12); // 2 of 4 die at 5
    expect(c.s[1]).toBeCloseTo(0, 12); // 1 at risk after the censored 7, dies at 9
  });

  it('no finished observation: no estimate', () => {
    expect(expectedDuration([{ durationMs: 50, finished: false }])).toBeUndefined();
  });
});
