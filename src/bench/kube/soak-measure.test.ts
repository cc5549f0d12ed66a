import { describe, expect, it } from 'vitest';
import { churnPlan, leastSquaresSlope, steadyPods, summarizeSoak, type SoakSample } from './soak-measure.ts';

function sample(t: number, over: Partial<SoakSample> = {}): SoakSample {
  return {
    t,
    phase: 'churn',
    rssMiB: 100,
    heapUsedMiB: 40,
    heapLimitMiB: 1216,
    heapTotalMiB: 60,
    externalMiB: 2,
    lag: { p50Ms: 10, p99Ms: 20, maxMs: 30, meanMs: 11 },
    cpuSeconds: t / 10,
    footprint: { 'informer:/api/v1/pods': 100, grows: 0 },
    pods: { submitted: t, bound: t, completed: t, deleted: t, live: 100 },
    load1: 1,
    ...over,
  };
}

describe('least-squares slope', () => {
  it('is the slope of an exact line, and of a noisy one around it', () => {
    expect(leastSquaresSlope([0, 1, 2, 3].map((x) => ({ x, y: 3 * x + 7 })))).toBeCloseTo(3, 12);
    // Symmetric noise (+1, -1, -1, +1) around y = 2x does not tilt the fit.
    expect(leastSquaresSlope([{ x: 0, y: 1 }, { x: 1, y: 1 }, { x: 2, y: 3 }, { x: 3, y: 7 }])).toBeCloseTo(2, 12);
    expect(leastSquaresSlope([{ x: 0, y: 5 }, { x: 10, y: 5 }])).toBe(0);
  });

  it('is NaN with fewer than two distinct x', () => {
    expect(leastSquaresSlope([])).toBeNaN();
    expect(leastSquaresSlope([{ x: 1, y: 2 }])).toBeNaN();
    expect(leastSquaresSlope([{ x: 1, y: 2 }, { x: 1, y: 5 }])).toBeNaN();
  });
});

describe('the soak summary', () => {
  // 20 min churn sampled every 60 s, then a drain sample: RSS grows 1 MiB per minute in the warm-up only.
  const churnS = 1200;
  const samples: SoakSample[] = [];
  for (let t = 0; t <= churnS; t += 60) {
    const warm = Math.min(t, 600) / 60;
    samples.push(
      sample(t, {
        rssMiB: 100 + warm,
        heapUsedMiB: 40 + t / 120, // 0.5 MiB per minute throughout: 30 MiB per hour
        lag: { p50Ms: 10, p99Ms: t === 900 ? 80 : 20, maxMs: t === 300 ? 250 : 30, meanMs: 11 },
        footprint: { 'informer:/api/v1/pods': 90 + (t % 120 === 0 ? 10 : 0), grows: t },
        pods: { submitted: t, bound: t, completed: t, deleted: t, live: 95 + (t % 120 === 0 ? 10 : 0) },
      }),
    );
  }
  samples.push(sample(1300, { phase: 'drain', rssMiB: 500, footprint: { 'informer:/api/v1/pods': 0, grows: 0 } }));
  const s = summarizeSoak(samples, churnS, 100, 'informer:/api/v1/pods');

  it('fits the memory slopes over the second half of the churn only (warm-up and drain left out)', () => {
    expect(s.window).toEqual({ fromS: 600, toS: 1200, samples: 11 });
    expect(s.rss.slopeMiBPerHour).toBe(0);
    expect(s.rss.windowStartMiB).toBe(110);
    expect(s.rss.windowEndMiB).toBe(110);
    expect(s.heapUsed.slopeMiBPerHour).toBe(30);
    // The maximum is over every sample, the drain's included.
    expect(s.rss.maxMiB).toBe(500);
  });

  it('reports the worst and the median per-sample p99 lag and the largest delay', () => {
    expect(s.lag).toEqual({ p99MaxMs: 80, p99MedianMs: 20, maxMs: 250 });
  });

  it('names the structures that grew over the window and not the ones that only fluctuate', () => {
    expect(s.growing).toEqual(['grows']);
    expect(s.footprint.grows).toEqual({ max: 1200, windowStart: 600, windowEnd: 1200, slopePerHour: 3600 });
    expect(s.footprint['informer:/api/v1/pods']?.max).toBe(100);
  });

  it('compares the pod cache with the steady state of Little’s law', () => {
    expect(s.expected).toEqual({ steadyPods: 100, maxLivePods: 105, maxPodCache: 100, podCacheOverExpected: 1 });
  });
});

describe('the churn plan', () => {
  const o = { rate: 20, durationS: 600, lifetimeS: 60, gangFraction: 0.1, seed: 3 };

  it('is the same for the same seed and differs for another', () => {
    expect(churnPlan(o)).toEqual(churnPlan(o));
    expect(churnPlan({ ...o, seed: 4 })).not.toEqual(churnPlan(o));
  });

  it('submits pods at about the asked rate, with gangs of 2-4 and lifetimes within 0.5-1.5 × the mean', () => {
    const plan = churnPlan(o);
    const pods = plan.reduce((n, a) => n + a.members, 0);
    expect(pods / o.durationS).toBeGreaterThan(o.rate * 0.9);
    expect(pods / o.durationS).toBeLessThan(o.rate * 1.1);
    const gangs = plan.filter((a) => a.members > 1);
    expect(gangs.length / plan.length).toBeGreaterThan(0.07);
    expect(gangs.length / plan.length).toBeLessThan(0.13);
    expect(gangs.every((a) => a.members >= 2 && a.members <= 4)).toBe(true);
    expect(plan.every((a) => a.lifetimeS >= 30 && a.lifetimeS <= 90 && a.atS >= 0 && a.atS < o.durationS)).toBe(true);
    expect(new Set(plan.map((a) => a.name)).size).toBe(plan.length);
    expect(steadyPods(o)).toBe(1200);
  });
});
