// `sits bench live` end to end, tiny: 24 jobs of a Philly window compressed 100× (18 s) through the live scheduler on
// a dev cluster (real kube-apiserver, fake kubelet, TrainingJob controller) and through the simulator.
import { describe, expect, it } from 'vitest';
import { DEFAULT_TENANTS_TRACE } from '../tenants/bench-tenants.ts';
import { benchLive } from './bench-live.ts';

/**
 * Live shares agree this closely with the simulator run on the jobs as they reached the live scheduler
 * (diff.sharePpAsArrived, ADR 0194). At 150× against the trace's submit times the largest |diff| of a queue reached
 * 15.6 and 25.7 pp on the shared 2-core machine under load: the TrainingJob controller delays arrivals by up to 3 s
 * and reorders them, a third of a 12 s window. At 100× and as arrived it was 2.0–10.6 pp over 11 runs at load 10–19,
 * one over the bound (bench/notes/live-replay.md): what remains is the scheduler's own latency to preempt under
 * load. A window this small is divided by demand more than by weight: the bound catches gross divergences only (a
 * queue starved, a reclaim that never comes), not weights — equal live weights against the simulator's 4/2/1
 * measured 5.55 pp, 1/2/4 2.16 pp.
 */
const SHARE_BOUND_PP = 10;

describe('sits bench live (tiny)', () => {
  it('replays the same workload live and simulated and reports both side by side', async () => {
    const r = await benchLive({ trace: DEFAULT_TENANTS_TRACE, nodes: 2, windowHours: 0.5, compress: 100, maxDurationHours: 0.25, maxJobs: 24, seed: 1, cooldownTraceSec: 600 });
    expect(Object.keys(r).sort()).toEqual(['diff', 'goals', 'live', 'peer', 'simulated', 'workload']);
    expect(r.peer).toBeNull();
    expect(r.workload.jobs).toHaveLength(24);
    expect(r.workload.gpus).toBe(16);
    const names = r.workload.queues.map((q) => q.name);
    for (const s of [r.live, r.simulated]) {
      expect(Object.keys(s.queues).sort()).toEqual([...names].sort());
      // Shares of the GPUs in use add up to 100 % (rounding aside).
      expect(Math.abs(names.reduce((a, q) => a + (s.queues[q]?.sharePct ?? 0), 0) - 100)).toBeLessThan(0.1);
      expect(s.started).toBeGreaterThan(0);
      expect(s.started + s.neverStarted).toBe(24);
      expect(s.waitSec.p50).not.toBeNull();
      expect(s.utilizationPct).toBeGreaterThan(0);
      expect(s.utilizationPct).toBeLessThanOrEqual(100);
      for (const q of names) expect(s.shareOverTime.byQueue[q]).toHaveLength(Math.floor(r.workload.horizonSec / s.shareOverTime.everySec) + 1);
    }
    // Every gang restart of a TrainingJob comes from an eviction the watch saw.
    expect(r.live.restarts).toBeLessThanOrEqual(r.live.preemptions);
    for (const s of [r.live, r.simulated]) {
      expect(s.preemptionsAtSec).toHaveLength(s.preemptions);
      for (const t of s.preemptionsAtSec) expect(t).toBeLessThanOrEqual(r.workload.horizonSec);
    }
    for (const q of names) {
      expect(r.diff.sharePp[q]).toBeCloseTo((r.live.queues[q]?.sharePct ?? 0) - (r.simulated.queues[q]?.sharePct ?? 0), 1);
      expect(Math.abs(r.diff.sharePpAsArrived[q] ?? Infinity)).toBeLessThanOrEqual(SHARE_BOUND_PP);
    }
    // Both sides of the as-arrived difference are shares of GPUs in use: the differences cancel out.
    expect(Math.abs(names.reduce((a, q) => a + (r.diff.sharePpAsArrived[q] ?? 0), 0))).toBeLessThan(0.1);
    expect(r.goals.sharesWithin3pp).toBe(Object.values(r.diff.sharePp).every((d) => Math.abs(d) <= 3));
  });
});
