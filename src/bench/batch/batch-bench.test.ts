import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LLAMA31_8B_H100 } from '../../serving/engine-model.ts';
import { parseAzureTrace } from '../../serving/sim/trace.ts';
import { randomFaultPlan, runBatchBench } from './batch-bench.ts';
import { ceilingBreakdown, ceilingTokensPerSec, EngineSim } from './engine-sim.ts';
import { capacityBoundMs, runFixed, runSits, runStatic } from './policies.ts';
import { DEFAULT_BATCH_TRACE } from './run.ts';

const trace = parseAzureTrace(readFileSync(DEFAULT_BATCH_TRACE, 'utf8'), DEFAULT_BATCH_TRACE);
const reqs = trace.slice(0, 400).map((t, i) => ({ index: i, promptTokens: t.promptTokens, outputTokens: t.outputTokens }));
const m = LLAMA31_8B_H100;

describe('engine simulation on the serving engine model', () => {
  it('a lone request: one prefill step, then one step per further output token', () => {
    const e = new EngineSim(m);
    e.submit({ index: 0, promptTokens: 1000, outputTokens: 3 });
    const steps: number[] = [];
    for (let t = e.nowMs, d = e.step(); d !== undefined; t = e.nowMs, d = e.step()) steps.push(e.nowMs - t);
    expect(steps.length).toBe(3);
    expect(steps[0]).toBeCloseTo((m.stepBaseSec + 1000 / m.prefillTokensPerSec) * 1000, 6);
    expect(steps[1]).toBeCloseTo((m.stepBaseSec + m.stepPerSeqSec + m.stepPerContextTokenSec * 1001) * 1000, 6);
  });
  it('never runs past the KV cache or the batch size it is given', () => {
    const e = new EngineSim(m, 10_000);
    e.maxSeqs = 3;
    for (let i = 0; i < 10; i++) e.submit({ index: i, promptTokens: 3000, outputTokens: 10 });
    e.step();
    expect(e.kvFraction).toBeLessThanOrEqual(1);
    expect(e.kvFraction).toBeCloseTo(9030 / 10_000);
  });
  it('the ceiling\'s time on this trace is mostly prefill (what no batching policy can amortise)', () => {
    const b = ceilingBreakdown(m, reqs);
    expect(b.prefillPct + b.decodePct + b.fixedPct).toBeCloseTo(100, 1);
    expect(b.prefillPct).toBeGreaterThan(85);
  });
  it('achieved throughput stays under the ceiling', () => {
    for (const r of [runStatic(m, reqs, 2), runFixed(m, reqs, 2)]) expect(r.jobTokens / (r.makespanMs / 1000) / 2).toBeLessThan(ceilingTokensPerSec(m, reqs));
  });
});

describe('the SITS run', () => {
  it('every record once, with a failing device, a straggler, a killed worker and a coordinator restart', () => {
    const clean = runSits(m, reqs, 4, { slaP99Ms: 5000, kvHitRate: 0 });
    const T = clean.makespanMs;
    const faults = {
      brokenDevices: [{ worker: 1, fromMs: T * 0.3, kind: 'oom' as const, failAfterMs: 1000 }],
      stragglers: [{ worker: 2, speed: 0.3, fromMs: 0, untilMs: T }],
      kills: [{ worker: 3, atMs: T * 0.4 }],
      coordinatorRestartsMs: [T * 0.5],
    };
    const r = runSits(m, reqs, 4, { slaP99Ms: 5000, kvHitRate: 0, faults });
    expect(r).toMatchObject({ recordsLost: 0, recordsDuplicated: 0, outputState: 'complete' });
    expect(r.quarantined).toEqual([expect.stringContaining('node-1/0: oom on node-1/0 at rung 1')]);
    expect(r.events.some((e) => e.startsWith('epoch 2:'))).toBe(true);
    expect(r.events.some((e) => e.includes('worker w3 lost'))).toBe(true);
    expect(r.makespanMs).toBeGreaterThanOrEqual(capacityBoundMs(faults, 4, T, m.startupSec * 1000, 15 * 60_000) - 1000);
  });
  it('keeps p99 near the SLA it is given: a tighter SLA, a lower p99', () => {
    const tight = runSits(m, reqs, 2, { slaP99Ms: 2000, kvHitRate: 0 });
    const loose = runSits(m, reqs, 2, { slaP99Ms: 20_000, kvHitRate: 0 });
    const p99 = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(0.99 * xs.length) - 1] as number;
    expect(p99(tight.latenciesMs)).toBeLessThan(p99(loose.latenciesMs));
    expect(loose.makespanMs).toBeLessThan(tight.makespanMs);
  });
});

describe('runBatchBench', () => {
  it('tiers get their weighted share within 10 %, with two and three tenants', () => {
    const r = runBatchBench(trace, { records: 300, frontier: [] });
    for (const s of [...Object.values(r.json.tenants), ...Object.values(r.details.twoTenants)]) expect(Math.abs(s.sharePct - s.entitledPct)).toBeLessThanOrEqual(0.1 * s.entitledPct);
    expect(r.json.tenants.gold.entitledPct).toBeCloseTo(57.14, 1);
    expect(r.details.twoTenants.gold?.entitledPct).toBe(80);
    expect(r.json.faults).toMatchObject({ recordsLost: 0, recordsDuplicated: 0 });
  });
});

describe('held-out fault plans', () => {
  it('are drawn from the seed alone, one fault of each kind on distinct workers', () => {
    expect(randomFaultPlan(7, 4, 100_000)).toEqual(randomFaultPlan(7, 4, 100_000));
    expect(randomFaultPlan(7, 4, 100_000)).not.toEqual(randomFaultPlan(8, 4, 100_000));
    for (let seed = 1; seed <= 20; seed++) {
      const p = randomFaultPlan(seed, 4, 100_000);
      const ws = [p.brokenDevices?.[0]?.worker, p.stragglers?.[0]?.worker, p.kills?.[0]?.worker];
      expect(new Set(ws).size).toBe(3);
      expect(p.stragglers?.[0]?.speed).toBeGreaterThanOrEqual(0.2);
    }
  });
  it('--fault-seeds: every held-out run keeps every record exactly once and reports its bound', () => {
    const r = runBatchBench(trace, { records: 300, frontier: [], faultSeeds: [1, 2] });
    expect(r.details.heldOutFaults?.map((h) => [h.seed, h.recordsLost, h.recordsDuplicated])).toEqual([[1, 0, 0], [2, 0, 0]]);
    for (const h of r.details.heldOutFaults ?? []) expect(h.capacityBoundRatio).toBeGreaterThan(0);
    expect(r.details.oracle.maxThroughputVsStatic).toBeGreaterThan(1);
  });
});
