import { describe, expect, it } from 'vitest';
import type { TraceRequest } from '../../serving/sim/trace.ts';
import { PEAK_HOLD_SEC, runServingBench } from './serving-bench.ts';

/** A small bursty trace: quiet minutes, then bursts of long prompts (the shape of the Azure code trace). */
function trace(): TraceRequest[] {
  const out: TraceRequest[] = [];
  let t = 0;
  for (let minute = 0; minute < 20; minute++) {
    const busy = minute % 4 === 1;
    const n = busy ? 120 : 6;
    for (let i = 0; i < n; i++) {
      t = minute * 60 + (60 * i) / n;
      out.push({ arrivalSec: t, promptTokens: 1000 + ((i * 977) % 4000), outputTokens: 1 + ((i * 31) % 60) });
    }
  }
  return out;
}

describe('sits bench serving', () => {
  const opts = { seed: 1, sloTtftSec: 1, tuneFraction: 0.4, maxReplicas: 8 };
  const a = runServingBench(trace(), opts);

  it('writes exactly the JSON shape issue 12 gives', () => {
    const P = ['sloAttainmentPct', 'gpuHours', 'ttftSec', 'itlSec'];
    expect(Object.keys(a.json)).toEqual(['sloTtftSec', 'policies', 'sharing']);
    expect(Object.keys(a.json.policies)).toEqual(['static', 'keda', 'concurrency', 'sits']);
    for (const p of Object.values(a.json.policies)) {
      expect(Object.keys(p)).toEqual(P);
      expect(Object.keys(p.ttftSec)).toEqual(['p50', 'p99']);
      expect(Object.keys(p.itlSec)).toEqual(['p99']);
      for (const v of [p.sloAttainmentPct, p.gpuHours, p.ttftSec.p50, p.ttftSec.p99, p.itlSec.p99]) expect(Number.isFinite(v)).toBe(true);
    }
    expect(Object.keys(a.json.sharing)).toEqual(['sloAttainmentPct', 'trainingGpuHoursLent', 'trainingGpuHoursLost']);
    expect(a.json.sloTtftSec).toBe(1);
  });
  it('is deterministic for a seed', () => {
    expect(JSON.stringify(runServingBench(trace(), opts))).toBe(JSON.stringify(a));
  });
  it('tunes on the first part only and reports the second part', () => {
    expect(a.details.splitSec).toBeCloseTo(0.4 * (trace().at(-1) as TraceRequest).arrivalSec, 3);
    expect(a.details.reportedRequests).toBe(trace().filter((r) => r.arrivalSec >= a.details.splitSec).length);
    expect(a.details.tuning.map((t) => t.policy)).toEqual(expect.arrayContaining(['keda', 'concurrency', 'sits']));
    // Static is sized for the peak: the fewest replicas meeting the SLO, so it meets it.
    expect(a.json.policies.static.sloAttainmentPct).toBeGreaterThanOrEqual(99);
    expect(a.details.goal.sitsGpuHoursVsStatic).toBeCloseTo(a.json.policies.sits.gpuHours / a.json.policies.static.gpuHours, 2);
  });
  it('bounds what the reported part allows: hindsight static, the reactive peak-hold and the oracle with foresight', () => {
    const b = a.details.bound;
    expect(b.hindsightStatic.replicas).toBeLessThanOrEqual(a.details.chosen.static);
    expect(b.hindsightStatic.sloAttainmentPct).toBeGreaterThanOrEqual(99);
    // Foresight only helps: the oracle never needs more than static, and its fluid estimate (no start-up) is below it.
    expect(b.oracle.gpuHours).toBeLessThanOrEqual(a.json.policies.static.gpuHours);
    expect(b.oracle.fluidGpuHours).toBeLessThanOrEqual(b.oracle.gpuHours);
    expect(b.oracle99.fluidGpuHours).toBeLessThanOrEqual(b.oracle.fluidGpuHours);
    expect(b.reactivePeakHold.map((r) => r.holdSec)).toEqual([...PEAK_HOLD_SEC]);
    for (const r of b.reactivePeakHold) {
      expect(r.vsStatic).toBeCloseTo(r.gpuHours / a.json.policies.static.gpuHours, 2);
      for (const v of [r.withinPct, r.tunePartWithinPct]) expect(v >= 0 && v <= 100).toBe(true);
    }
  });
});
