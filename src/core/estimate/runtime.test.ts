import { describe, expect, it } from 'vitest';
import { expectedDuration, expectedWithTail, RuntimeModel, survival } from './runtime.ts';

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

const running = (...ds: number[]) => ds.map((durationMs) => ({ durationMs, finished: false }));

describe('doubling tail beyond the longest observation', () => {
  it('equals the Kaplan–Meier mean when every job finished (S(M) = 0)', () => {
    expect(expectedWithTail(survival(done(10, 20, 30, 40)))).toBe(25);
    expect(expectedWithTail(survival(done(10, 20, 30, 40)), 25)).toBe(35);
  });

  it('adds S(M)·M when jobs outlive the last death', () => {
    // S = 0.75 after 10, 0.5 after 20, M = 100: restricted mean 57.5, plus the tail 0.5·100.
    expect(expectedWithTail(survival([...done(10, 20), ...running(100, 100)]))).toBeCloseTo(107.5, 9);
    // Ran 50 already: S(50) = 0.5 → 50 + (0.5·50 + 0.5·100)/0.5 = 200.
    expect(expectedWithTail(survival([...done(10, 20), ...running(100, 100)]), 50)).toBeCloseTo(200, 9);
  });

  it('with nothing finished yet: twice the oldest running job, and a job older than every observation doubles its age', () => {
    expect(expectedWithTail(survival(running(50, 100)))).toBe(200);
    expect(expectedWithTail(survival(running(50, 100)), 150)).toBe(300);
    expect(expectedWithTail(survival(done(10, 20)), 30)).toBe(60);
    expect(expectedWithTail(survival([]))).toBeUndefined();
  });
});

describe('RuntimeModel', () => {
  it('uses the most specific class with enough finished jobs, else the coarsest class observed', () => {
    const m = new RuntimeModel({ minFinished: 3, fallbackMs: 1000 });
    m.observeFinished(['q|1', 'q'], 10_000);
    m.observeFinished(['q|1', 'q'], 20_000);
    for (let i = 0; i < 3; i++) m.observeFinished(['q|8', 'q'], 100_000);
    // q|1 has 2 < 3 finished: the queue's curve, mean of 10, 20, 100, 100, 100 s.
    expect(m.expectedTotal(['q|1', 'q'])).toBe(66_000);
    m.observeFinished(['q|1', 'q'], 30_000);
    expect(m.expectedTotal(['q|1', 'q'])).toBe(20_000);
    // Conditioned on 15 s run: the 20 and 30 s jobs.
    expect(m.expectedTotal(['q|1', 'q'], 15_000)).toBe(25_000);
  });

  it('running jobs are censored observations; nothing observed at all gives the fallback', () => {
    const m = new RuntimeModel({ minFinished: 1, fallbackMs: 3_600_000 });
    expect(m.expectedTotal(['q'])).toBe(3_600_000);
    expect(m.expectedTotal(['q'], 2 * 3_600_000)).toBe(4 * 3_600_000);
    m.setRunning([
      { keys: ['q'], elapsedMs: 600_000 },
      { keys: ['q'], elapsedMs: 1_200_000 },
    ]);
    // Nothing finished, two jobs running for 10 and 20 min: twice the oldest.
    expect(m.expectedTotal(['q'])).toBe(2_400_000);
    m.setRunning([]);
    expect(m.expectedTotal(['q'])).toBe(3_600_000);
  });

  it('keeps only the most recent finished jobs when asked to', () => {
    const m = new RuntimeModel({ minFinished: 1, recent: 2 });
    for (const d of [100_000, 10_000, 20_000]) m.observeFinished(['q'], d);
    expect(m.expectedTotal(['q'])).toBe(15_000);
  });
});
