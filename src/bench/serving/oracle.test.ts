import { describe, expect, it } from 'vitest';
import type { ServiceObservation } from '../../serving/autoscale/policy.ts';
import type { TraceRequest } from '../../serving/sim/trace.ts';
import { binMisses, binNeeds, fluidGpuHours, OraclePolicy, peakHold } from './oracle.ts';

const req = (arrivalSec: number): TraceRequest => ({ arrivalSec, promptTokens: 100, outputTokens: 1 });
// Bins of 10 s: bin 0 two requests, bin 1 none, bin 2 three requests; TTFTs under 1, 2 and 3 replicas.
const trace = [req(1), req(2), req(21), req(22), req(23)];
const ttft = [
  Float64Array.from([0.5, 2, 5, 5, 5]), // 1 replica: bin 0 misses one, bin 2 misses all three
  Float64Array.from([0.5, 0.5, 2, 0.5, 0.5]), // 2 replicas: bin 2 misses one
  Float64Array.from([0.5, 0.5, 0.5, 0.5, 0.5]),
];
const obs = (nowSec: number): ServiceObservation => ({
  nowSec,
  readyReplicas: 1,
  startingReplicas: 0,
  desiredReplicas: 1,
  waiting: 0,
  running: 0,
  kvCacheUsage: 0,
  promptTokensPerSec: 0,
  generatedTokensPerSec: 0,
  meanPromptTokens: 100,
});

describe('serving bench bound (oracle)', () => {
  const table = binMisses(trace, ttft, 1, 10);

  it('counts per bin the requests and those missing the SLO under each replica count', () => {
    expect(table.requests).toEqual([2, 0, 3]);
    expect(table.misses).toEqual([
      [1, 0, 0],
      [0, 0, 0],
      [3, 1, 0],
    ]);
  });

  it('needs the fewest replicas serving a whole bin, and spends a miss budget where it loses fewest requests', () => {
    expect(binNeeds(table, { fromSec: 0, missBudget: 0 })).toEqual([2, 1, 3]);
    // One miss allowed: bin 0 (2 → 1 loses 1) and bin 2 (3 → 2 loses 1) tie; the first is taken, then the budget is spent.
    expect(binNeeds(table, { fromSec: 0, missBudget: 1 })).toEqual([1, 1, 3]);
    // Bins before fromSec are not reported: their needs stay exact.
    expect(binNeeds(table, { fromSec: 20, missBudget: 1 })).toEqual([2, 1, 2]);
  });

  it('holds the needs without start-up for the fluid estimate', () => {
    expect(fluidGpuHours([2, 1, 3], 10, 0, 30, 1)).toBeCloseTo(60 / 3600, 9);
    expect(fluidGpuHours([2, 1, 3], 10, 15, 25, 2)).toBeCloseTo((5 * 1 * 2 + 5 * 3 * 2) / 3600, 9);
  });

  it('a reactive peak-hold serves what it saw one start-up earlier: it misses a new burst, not a recurring one', () => {
    const needs = binNeeds(table, { fromSec: 0, missBudget: 0 });
    // No lag: it holds the current need, nothing is missed.
    expect(peakHold(table, needs, { holdSec: 0, lagSec: 0, startupSec: 0, fromSec: 0, toSec: 30 }).withinPct).toBe(100);
    // Lag of one bin, hold 0: bin 0 has seen nothing (1 replica, misses 1), bin 2 has bin 1's need of 1 (misses 3).
    const late = peakHold(table, needs, { holdSec: 0, lagSec: 10, startupSec: 60, fromSec: 0, toSec: 30 });
    expect(late.withinPct).toBeCloseTo(100 - (100 * 4) / 5, 9);
    // Holding 10 s more: bin 2 still has bin 0's need of 2 (misses 1). GPU: 1, 2, 2 replicas × 10 s, and 60 s of
    // start-up for each replica added (the first one included).
    const held = peakHold(table, needs, { holdSec: 10, lagSec: 10, startupSec: 60, fromSec: 0, toSec: 30 });
    expect(held.withinPct).toBeCloseTo(100 - (100 * 2) / 5, 9);
    expect(held.gpuHours).toBeCloseTo((50 + 2 * 60) / 3600, 9);
    // Only bins from fromSec are scored.
    expect(peakHold(table, needs, { holdSec: 10, lagSec: 10, startupSec: 60, fromSec: 20, toSec: 30 })).toEqual({ withinPct: 100 - 100 / 3, gpuHours: 20 / 3600 });
  });

  it('the oracle asks now for the highest need until one start-up ahead, and at least one replica', () => {
    const o = new OraclePolicy([1, 1, 4, 1], 10, 15);
    expect(o.decide(obs(0))).toBe(1);
    expect(o.decide(obs(6))).toBe(4);
    expect(o.decide(obs(29))).toBe(4);
    expect(o.decide(obs(30))).toBe(1);
    expect(new OraclePolicy([0], 10, 0).decide(obs(0))).toBe(1);
  });
});
