// A tiny `sits bench soak` through the real control plane: samples are taken while pods and gangs churn, every pod
// is bound, completes (the fake kubelet) and is deleted, nothing waits in the scheduler at the end, and the summary's
// fields are computed from the samples.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { maxOldSpaceMiB } from '../../deploy/heap-cap.ts';
import { CHART_MEMORY_LIMIT } from './run.ts';
import { runSoak } from './soak.ts';
import { churnPlan } from './soak-measure.ts';

describe('sits bench soak (tiny)', () => {
  it('churns pods and gangs to completion while sampling the SITS process', async () => {
    const o = { nodes: 20, gpusPerNode: 4, durationS: 12, rate: 4, lifetimeS: 3, gangFraction: 0.2, seed: 2, sampleEveryS: 1.5, maxInFlight: 16, drainTimeoutS: 30 };
    const status: string[] = [];
    const r = await runSoak({ ...o, progress: { line: () => undefined, status: (m) => status.push(m) } });
    const plan = churnPlan({ rate: o.rate, durationS: o.durationS, lifetimeS: o.lifetimeS, gangFraction: o.gangFraction, seed: o.seed });
    expect(r.plan.pods).toBe(plan.reduce((n, a) => n + a.members, 0));
    expect(r.plan.gangs).toBeGreaterThan(0);
    const n = r.plan.pods;
    expect(r.pods).toEqual({ submitted: n, bound: n, completed: n, deleted: n, leftAtEnd: 0, schedulerPendingAtEnd: 0, schedulerQueuedAtEnd: 0 });

    // A sample about every 1.5 s of the churn, then the drain's.
    expect(r.samples.filter((s) => s.phase === 'churn').length).toBeGreaterThanOrEqual(5);
    expect(r.samples.at(-1)?.phase).toBe('drain');
    expect(status.length).toBe(r.samples.length);
    // The SITS process ran with the old-space cap of the chart's container, not V8's default for this host.
    const capped = (args: string[]): number =>
      // To 0.1 MiB, as the child reports it.
      Math.round(Number(execFileSync(process.execPath, [...args, '-e', 'console.log(require("v8").getHeapStatistics().heap_size_limit / 2 ** 20 * 10)'], { encoding: 'utf8' }))) / 10;
    const heapLimitMiB = capped([`--max-old-space-size=${maxOldSpaceMiB(CHART_MEMORY_LIMIT)}`]);
    expect(heapLimitMiB).not.toBe(capped([]));
    for (const s of r.samples) {
      expect(s.heapLimitMiB).toBe(heapLimitMiB);
      expect(s.rssMiB).toBeGreaterThan(20);
      expect(s.heapUsedMiB).toBeGreaterThan(1);
      expect(s.lag.p99Ms).toBeGreaterThanOrEqual(0);
      expect(s.footprint['informer:/api/v1/nodes']).toBe(o.nodes);
    }
    // Pods were seen running; at the end the scheduler's caches hold none of them.
    expect(Math.max(...r.samples.map((s) => s.footprint['informer:/api/v1/pods'] ?? 0))).toBeGreaterThan(0);
    const end = r.samples.at(-1)?.footprint ?? {};
    expect([end['informer:/api/v1/pods'], end['cache.pods'], end['cache.assumed'], end['runtimes.following'], end['binder.busy']]).toEqual([0, 0, 0, 0, 0]);

    const s = r.summary;
    expect(s.window.samples).toBeGreaterThanOrEqual(2);
    expect(s.window.fromS).toBeGreaterThanOrEqual(o.durationS / 2);
    expect(Number.isFinite(s.rss.slopeMiBPerHour)).toBe(true);
    expect(Number.isFinite(s.heapUsed.slopeMiBPerHour)).toBe(true);
    expect(s.lag.maxMs).toBeGreaterThanOrEqual(s.lag.p99MaxMs);
    expect(s.expected.steadyPods).toBe(12);
    expect(s.expected.maxLivePods).toBeGreaterThan(0);
    expect(s.footprint['cache.pending']).toBeDefined();
    expect(r.loadAverage.start).toHaveLength(3);
    expect(r.loadAverage.end).toHaveLength(3);
  }, 180_000);
});
