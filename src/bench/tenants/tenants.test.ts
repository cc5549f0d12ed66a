import { describe, expect, it } from 'vitest';
import { busiestWindow, busiestWindows, parsePhilly, tierAssignment, type TenantJob } from './philly-window.ts';
import { podsFor, runTenantSim } from './tenant-sim.ts';

const CSV = `timestamp,duration,num_gpus,gpu_time,cluster
2017-10-01 00:00:00,600.0,1,600.0,aaa
2017-10-01 00:10:00,600.0,2,1200.0,aaa
2017-10-01 05:00:00,7200.0,8,57600.0,bbb
2017-10-01 05:30:00,3600.0,16,57600.0,ccc
2017-10-01 05:40:00,60.0,1,60.0,aaa

`;

describe('philly window', () => {
  it('parses rows and names file, line and field of a bad one', () => {
    expect(parsePhilly(CSV, 'p.csv')).toHaveLength(5);
    expect(() => parsePhilly(CSV.replace('7200.0,8', '7200.0,eight'), 'p.csv')).toThrow('p.csv:4: field "num_gpus"');
    expect(() => parsePhilly(CSV.replace('2017-10-01 05:30:00', '2017/10/01'), 'p.csv')).toThrow('p.csv:5: field "timestamp"');
  });

  it('deals virtual clusters to tiers by job count and picks the busiest window', () => {
    const jobs = parsePhilly(CSV, 'p.csv');
    expect(tierAssignment(jobs)).toEqual({ aaa: 'gold', bbb: 'silver', ccc: 'bronze' });
    const w = busiestWindow(jobs, { windowSec: 3600, maxDurationSec: 3600, maxGpus: 64 });
    // 05:00–06:00 holds 8 GPU × 1 h (clipped) + 16 × 1 h + 1 × 60 s.
    expect(w.jobs.map((j) => [j.tier, j.gpus, j.submitMs, j.durationMs])).toEqual([
      ['silver', 8, 0, 3_600_000],
      ['bronze', 16, 1_800_000, 3_600_000],
      ['gold', 1, 2_400_000, 60_000],
    ]);
  });

  it('ranks the windows by GPU-hours submitted, busiest first, without overlap', () => {
    const jobs = parsePhilly(CSV, 'p.csv');
    const ws = busiestWindows(jobs, { windowSec: 3600, maxDurationSec: 3600, maxGpus: 64 }, 5);
    // 05:00 (8 + 16 GPU-h + 1 GPU-min), then 00:00 (1 GPU × 10 min + 2 GPUs × 10 min); no other window has a job.
    expect(ws.map((w) => [w.windowStartSec - (ws[1] as (typeof ws)[number]).windowStartSec, Math.round(w.demandGpuHours * 60), w.jobs.length])).toEqual([
      [5 * 3600, 24 * 60 + 1, 3],
      [0, 30, 2],
    ]);
    expect(ws[0]).toEqual(busiestWindow(jobs, { windowSec: 3600, maxDurationSec: 3600, maxGpus: 64 }));
  });

  it('splits wide jobs into 8-GPU pods plus the rest', () => {
    expect(podsFor({ id: 'j', tier: 'gold', submitMs: 0, durationMs: 1, gpus: 12 }, 'gold').map((p) => p.request.gpuCount)).toEqual([8, 4]);
  });
});

describe('tenant simulation', () => {
  // Three tiers flood a 16-node (128 GPU) cluster with 1-GPU jobs of 1 h: shares must follow 4/2/1.
  // (On a much smaller cluster whole jobs cannot split 4/2/1 finely enough: 16 GPUs give 9/4/3 at best.)
  const flood: TenantJob[] = [];
  for (let i = 0; i < 200; i++) for (const tier of ['bronze', 'silver', 'gold'] as const) flood.push({ id: `${tier}-${i}`, tier, submitMs: i * 1000, durationMs: 3_600_000, gpus: 1 });
  const opts = { nodes: 16, shape: 'dgx-h100', windowMs: 4 * 3_600_000, checkpointEveryMs: 1_800_000, etaSamples: 10, seed: 1 };

  it('SITS gives contending tiers their weighted share; FIFO does not', () => {
    const sits = runTenantSim(flood, { ...opts, mode: 'sits' });
    const fifo = runTenantSim(flood, { ...opts, mode: 'fifo' });
    for (const t of ['gold', 'silver', 'bronze'] as const) {
      expect(Math.abs(sits.tiers[t].sharePct - sits.tiers[t].entitledPct) / sits.tiers[t].entitledPct).toBeLessThan(0.1);
    }
    expect(sits.jain).toBeGreaterThan(0.99);
    expect(fifo.jain).toBeLessThan(0.95);
    expect(sits.etaErrorPct?.samples).toBeGreaterThan(0);
  });

  it('told the true runtimes and arrivals, the forward run reproduces the simulator (median error 0)', () => {
    // A diagnostic, not the method: it checks that the forward run models the scheduler faithfully (its
    // one-minute cadence, preemption with requeueing), so that the reported error is only what is unknown.
    // Not every estimate is exact: the real cycles planned backfill with estimated runtimes, and jobs the
    // forward run starts have no checkpoint windows that would defer their preemption.
    const mixed: TenantJob[] = flood.map((j, i) => ({ ...j, durationMs: (1 + (i % 5)) * 900_000, gpus: 1 + (i % 3) }));
    const r = runTenantSim(mixed, { ...opts, mode: 'sits', etaSamples: 30, eta: { oracle: { runtimes: true, arrivals: true } } });
    expect(r.etaErrorPct?.samples).toBeGreaterThan(20);
    expect(r.etaErrorPct?.p50).toBe(0);
    expect(r.etaErrorPct?.p90).toBeLessThan(10);
  });

  it('a preemption deferred past a checkpoint window wakes one cycle, not a second periodic chain', () => {
    // Bronze holds the cluster; gold arrives every 30 min just inside bronze's checkpoint window (its first
    // minute), so each reclaim is deferred to the window's end. Each deferral once restarted the one-minute
    // cadence beside the running one: 1,579 cycles here instead of about 280.
    const jobs: TenantJob[] = [];
    for (let i = 0; i < 4; i++) jobs.push({ id: `b${i}`, tier: 'bronze', submitMs: i * 1000, durationMs: 4 * 3_600_000, gpus: 8 });
    for (let k = 0; k < 6; k++) for (let i = 0; i < 3; i++) jobs.push({ id: `g${k}-${i}`, tier: 'gold', submitMs: (k + 1) * 1_800_000 + 5000 + i * 1000, durationMs: 20 * 60_000, gpus: 8 });
    for (let k = 0; k < 30; k++) jobs.push({ id: `s${k}`, tier: 'silver', submitMs: k * 600_000, durationMs: 3_600_000, gpus: 1 });
    jobs.sort((a, b) => a.submitMs - b.submitMs);
    const o = { mode: 'sits' as const, nodes: 4, shape: 'dgx-h100', windowMs: 4 * 3_600_000, checkpointEveryMs: 1_800_000, etaSamples: 0, seed: 1 };
    for (const checkpoint of ['plain', 'aware'] as const) {
      const r = runTenantSim(jobs, { ...o, checkpoint });
      expect(r.preemptions).toBeGreaterThan(0);
      // At most one cycle a minute over the window, plus one per event instant (arrival, finish, commit, wakeup).
      expect(r.cycles).toBeLessThanOrEqual(o.windowMs / 60_000 + 3 * jobs.length);
    }
  });

  it('is deterministic: same input, same result', () => {
    expect(JSON.stringify(runTenantSim(flood, { ...opts, mode: 'sits' }))).toBe(JSON.stringify(runTenantSim(flood, { ...opts, mode: 'sits' })));
  });
});
