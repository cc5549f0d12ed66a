import { describe, expect, it } from 'vitest';
import { DEFAULT_DETECTOR } from '../../core/health/detector.ts';
import { healthBenchDetail, runHealthBench, wilson95 } from './health.ts';
import { faultSeries } from './fault-series.ts';

// Small sizes: the issue-size run is scripts/health-bench.ts (numbers in docs/adr/0096-predictive-gpu-health.md).
const small = { seeds: [1], devices: 60, days: 2 } as const;

describe('health bench', () => {
  it('is deterministic by seed and returns the two numbers sits bench checkpoint reports', () => {
    const a = runHealthBench(small);
    expect(Object.keys(a)).toEqual(['foreseenPct', 'falseQuarantinesPer1000GpuDays']);
    expect(runHealthBench(small)).toEqual(a);
    expect(healthBenchDetail({ ...small, seeds: [2] })).not.toEqual(healthBenchDetail(small));
  });

  it('foresees degrading devices, never a sudden failure; a blind detector foresees less', () => {
    const d = healthBenchDetail(small);
    expect(d.failures).toBeGreaterThan(0);
    expect(d.foreseen).toBeGreaterThan(0);
    expect(d.byKind.sudden.foreseen).toBe(0);
    const blind = healthBenchDetail({ ...small, detector: { ...DEFAULT_DETECTOR, sbePerWindow: Infinity, nvlinkCrcPerWindow: Infinity, tempSuspectC: Infinity, tempRiseCPerHour: Infinity, creepRateCPerHour: Infinity } });
    expect(blind.foreseen).toBeLessThan(d.foreseen);
  });

  it('a checkpoint longer than every lead time foresees nothing', () => {
    expect(runHealthBench({ ...small, checkpointMs: 10 * 24 * 3_600_000 }).foreseenPct).toBe(0);
  });

  it('the series: failing devices stop at their failure with its fatal signal; healthy ones run the whole series', () => {
    const series = faultSeries({ seed: 7, devices: 40, days: 1 });
    const failing = series.find((s) => s.fault !== undefined && s.fault.kind !== 'sudden');
    const healthy = series.find((s) => s.fault === undefined);
    if (failing?.fault === undefined || healthy === undefined) throw new Error('seed 7 should have both');
    let last = 0;
    let lastXid = 0;
    failing.run((t, f) => {
      last = t;
      lastXid = f.lastXid ?? 0;
    });
    expect(last).toBeLessThanOrEqual(failing.fault.failMs);
    expect(last).toBeGreaterThan(failing.fault.failMs - 60_000);
    expect([48, 94, 95, 79, 74, 64]).toContain(lastXid);
    let n = 0;
    healthy.run(() => n++);
    expect(n).toBe(24 * 60 + 1);
  });

  it('the Wilson interval: a known value, it holds the share, and it narrows with more failures', () => {
    // 339 of 385 (ADR 0154's held-out count): 84.43–90.92 % by the Wilson formula (checked with a separate computation).
    expect(wilson95(339, 385)).toEqual([84.43, 90.92]);
    const [lo, hi] = wilson95(678, 770);
    expect(lo).toBeLessThan(88.05);
    expect(hi).toBeGreaterThan(88.05);
    expect(hi - lo).toBeLessThan(90.92 - 84.43);
    expect(wilson95(0, 0)).toEqual([0, 100]);
    const d = healthBenchDetail(small);
    expect(d.foreseenPctCi95[0]).toBeLessThanOrEqual(d.foreseenPct);
    expect(d.foreseenPctCi95[1]).toBeGreaterThanOrEqual(d.foreseenPct);
  });
});
