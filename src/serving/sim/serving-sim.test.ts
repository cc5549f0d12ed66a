import { describe, expect, it } from 'vitest';
import { StaticPolicy } from '../autoscale/static.ts';
import type { Autoscaler, ServiceObservation } from '../autoscale/policy.ts';
import { LLAMA31_8B_H100, stepSeconds, type EngineModel } from '../engine-model.ts';
import { LatencyHistogram, simulateService } from './serving-sim.ts';
import type { TraceRequest } from './trace.ts';

const M = LLAMA31_8B_H100;
const fixed = (n: number): Autoscaler => new StaticPolicy(n);
const base = { engine: M, sloTtftSec: 1, seed: 1 };

describe('one replica', () => {
  it('answers a lone request after one prefill step, then one decode step per token', () => {
    const trace: TraceRequest[] = [{ arrivalSec: 0, promptTokens: 1000, outputTokens: 5 }];
    const r = simulateService(trace, { ...base, policy: fixed(1), initialReplicas: 1 });
    expect(r.ttftSec.p50).toBeCloseTo(stepSeconds(M, 1, 0, 1000), 9);
    expect(r.sloAttainmentPct).toBe(100);
    // Four decode steps of one sequence with 1001..1004 tokens of context.
    expect(r.itlSec.p99).toBeGreaterThan(stepSeconds(M, 1, 1003, 0));
    expect(r.itlSec.p99).toBeLessThan(stepSeconds(M, 1, 1003, 0) * 1.011);
  });
  it('queues a burst: requests arriving together wait for the prefills before them', () => {
    const trace: TraceRequest[] = Array.from({ length: 40 }, () => ({ arrivalSec: 0, promptTokens: 4000, outputTokens: 2 }));
    const r = simulateService(trace, { ...base, policy: fixed(1), initialReplicas: 1 });
    // 160,000 prompt tokens at 25,000 tokens/s: the last first token after more than 6 s.
    expect(r.ttftSec.p99).toBeGreaterThan(6);
    expect(r.sloAttainmentPct).toBeLessThan(20);
  });
  it('admits no more than the KV cache holds: a tiny cache serialises long requests', () => {
    const tiny: EngineModel = { ...M, kvCapacityTokens: 5000 };
    const trace: TraceRequest[] = Array.from({ length: 3 }, () => ({ arrivalSec: 0, promptTokens: 3000, outputTokens: 200 }));
    const wide = simulateService(trace, { ...base, policy: fixed(1), initialReplicas: 1 });
    const narrow = simulateService(trace, { ...base, engine: tiny, policy: fixed(1), initialReplicas: 1 });
    expect(narrow.ttftSec.p99).toBeGreaterThan(wide.ttftSec.p99 + 2 * 200 * M.stepBaseSec);
  });
});

describe('scaling', () => {
  const burst: TraceRequest[] = [
    ...Array.from({ length: 10 }, (_, i) => ({ arrivalSec: i, promptTokens: 500, outputTokens: 10 })),
    ...Array.from({ length: 600 }, (_, i) => ({ arrivalSec: 100 + i * 0.1, promptTokens: 5000, outputTokens: 10 })),
  ];
  it('more static replicas, better TTFT and more GPU-hours; GPU time counted from the report start', () => {
    const one = simulateService(burst, { ...base, policy: fixed(1), initialReplicas: 1 });
    const four = simulateService(burst, { ...base, policy: fixed(4), initialReplicas: 4 });
    expect(four.sloAttainmentPct).toBeGreaterThan(one.sloAttainmentPct);
    expect(four.gpuHours).toBeCloseTo((4 * (burst.at(-1) as TraceRequest).arrivalSec) / 3600, 2);
    const late = simulateService(burst, { ...base, policy: fixed(4), initialReplicas: 4, reportFromSec: 100 });
    expect(late.requests).toBe(600);
    expect(late.gpuHours).toBeCloseTo((4 * ((burst.at(-1) as TraceRequest).arrivalSec - 100)) / 3600, 2);
  });
  it('a replica asked for holds its GPU at once but serves only after the engine start-up; runs are deterministic', () => {
    let calls = 0;
    const upAt100: Autoscaler = { name: 'step', decide: (o: ServiceObservation) => (calls++, o.nowSec >= 100 ? 2 : 1) };
    const r = simulateService(burst, { ...base, policy: upAt100, initialReplicas: 1 });
    const second = r.replicaTimeline.find(([, n]) => n === 2);
    expect(second?.[0]).toBe(100);
    expect(calls).toBeGreaterThan(100);
    const again = simulateService(burst, { ...base, policy: { name: 'step', decide: (o) => (o.nowSec >= 100 ? 2 : 1) }, initialReplicas: 1 });
    expect(again).toEqual(r);
    // The start-up delay is paid: an engine that starts at once serves the burst better.
    const instant = simulateService(burst, {
      ...base,
      engine: { ...M, startupSec: 0 },
      policy: { name: 'step', decide: (o) => (o.nowSec >= 100 ? 2 : 1) },
      initialReplicas: 1,
    });
    expect(instant.sloAttainmentPct).toBeGreaterThan(r.sloAttainmentPct);
  });
  it('drains a replica asked away: it finishes its batch, takes no new request, and its GPU is released', () => {
    const down: Autoscaler = { name: 'down', decide: (o) => (o.nowSec >= 50 ? 1 : 3) };
    const r = simulateService(burst, { ...base, policy: down, initialReplicas: 3 });
    expect(r.replicaTimeline.at(-1)?.[1]).toBe(1);
    expect(r.maxReplicas).toBe(3);
    expect(r.requests).toBe(burst.length);
  });
});

describe('the latency histogram', () => {
  it('answers quantiles within its 1 % buckets', () => {
    const h = new LatencyHistogram();
    for (let i = 1; i <= 1000; i++) h.add(i / 1000, 1);
    expect(h.quantile(0.99)).toBeGreaterThanOrEqual(0.99);
    expect(h.quantile(0.99)).toBeLessThan(0.99 * 1.011);
    expect(new LatencyHistogram().quantile(0.5)).toBe(0);
  });
});
