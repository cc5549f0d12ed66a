import { describe, expect, it } from 'vitest';
import type { TraceRequest } from '../../serving/sim/trace.ts';
import { runServingTraces, traceVariants } from './trace-variants.ts';

const trace: TraceRequest[] = Array.from({ length: 9 }, (_, i) => ({ arrivalSec: i * 10, promptTokens: 100 + i, outputTokens: 5 }));

describe('serving trace variants', () => {
  it('halves, reverses and thins the trace, each starting at 0 s', () => {
    const v = Object.fromEntries(traceVariants(trace).map((x) => [x.name, x.trace]));
    expect(Object.keys(v)).toEqual(['as-is', 'first-half', 'second-half', 'reversed', 'every-2', 'every-4', 'every-8']);
    expect(v['first-half']?.map((r) => r.promptTokens)).toEqual([100, 101, 102, 103]);
    expect(v['second-half']?.map((r) => [r.arrivalSec, r.promptTokens])).toEqual([[0, 104], [10, 105], [20, 106], [30, 107], [40, 108]]);
    expect(v.reversed?.map((r) => [r.arrivalSec, r.promptTokens]).slice(0, 2)).toEqual([[0, 108], [10, 107]]);
    expect(v['every-4']?.map((r) => r.promptTokens)).toEqual([100, 104, 108]);
    expect(v['every-8']?.map((r) => r.promptTokens)).toEqual([100, 108]);
  });
  it('runs the serving bench on the chosen variants and checks ≤ 1.0× static at ≥ 99 % on each', () => {
    // A light load one replica serves: SITS must not spend more than static's single replica.
    const light: TraceRequest[] = Array.from({ length: 400 }, (_, i) => ({ arrivalSec: i * 2, promptTokens: 500 + ((i * 37) % 900), outputTokens: 10 }));
    const r = runServingTraces(light, { seed: 1, sloTtftSec: 1, tuneFraction: 0.4, maxReplicas: 4, only: ['as-is'], sitsGrid: [{ historyWindowSec: 120, demandQuantile: 0.95, smoothingSec: 1, scaleDownDelaySec: 120 }] });
    expect(r.variants.map((v) => v.name)).toEqual(['as-is']);
    const v = r.variants[0];
    expect(v?.staticReplicas).toBe(1);
    expect(v?.sits.sloAttainmentPct).toBe(100);
    expect(v?.sitsGpuHoursVsStatic).toBeLessThanOrEqual(1);
    expect(v?.goalMet).toBe(true);
    expect(v?.reactiveBoundWithinPct).toBe(100);
    // As shipped, untuned: the same light load needs no more than static's replica either.
    expect(v?.sitsDefaults.sloAttainmentPct).toBe(100);
    expect(v?.sitsDefaultsVsStatic).toBeLessThanOrEqual(1);
    expect(v?.defaultsGoalMet).toBe(true);
  });
  it('bounds what any reactive policy reaches: a burst past every earlier need keeps it under 99 %', () => {
    const light: TraceRequest[] = Array.from({ length: 400 }, (_, i) => ({ arrivalSec: i * 2, promptTokens: 500 + ((i * 37) % 900), outputTokens: 10 }));
    const burst: TraceRequest[] = Array.from({ length: 150 }, (_, i) => ({ arrivalSec: 700 + i * 0.02, promptTokens: 4000, outputTokens: 10 }));
    const trace = [...light, ...burst].sort((a, b) => a.arrivalSec - b.arrivalSec);
    const one = { historyWindowSec: 120, demandQuantile: 0.95, smoothingSec: 1, scaleDownDelaySec: 120 };
    const v = runServingTraces(trace, { seed: 1, sloTtftSec: 1, tuneFraction: 0.4, maxReplicas: 8, only: ['as-is'], sitsGrid: [one] }).variants[0];
    expect(v?.staticReplicas).toBeGreaterThan(1);
    expect(v?.reactiveBoundWithinPct).toBeLessThan(99);
    expect(v?.goalMet).toBe(false);
    expect(v?.sitsDefaults.sloAttainmentPct).toBeLessThanOrEqual(v?.reactiveBoundWithinPct ?? 0);
    expect(v?.defaultsGoalMet).toBe(false);
  });
});
