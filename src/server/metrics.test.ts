import { describe, expect, it } from 'vitest';
import { parsePromText, sampleValue } from '../harness/prom-text.ts';
import { METRIC, SitsMetrics, schedulerStatsOf, type SchedulerStats, type SchedulerView } from './metrics.ts';

const stats = (o: Partial<SchedulerStats> = {}): SchedulerStats => ({ cycles: 0, bound: 0, bindErrors: 0, gangsBound: 0, rollbacks: 0, recoveries: 0, pendingPods: 0, nodes: 0, gpus: 0, gpusAllocated: 0, leader: false, ...o });

describe('SitsMetrics', () => {
  it('keeps every metric name, type and label set (dashboards and alerts depend on them)', async () => {
    const families = parsePromText(await new SitsMetrics().metrics());
    const shape = [...families.values()].map((f) => [f.name, f.type, [...new Set(f.samples.flatMap((s) => Object.keys(s.labels)))].sort().join(',')]);
    expect(shape).toEqual([
      [METRIC.attempts, 'counter', 'result'],
      [METRIC.attemptDuration, 'histogram', 'le,result'],
      [METRIC.cycles, 'counter', ''],
      [METRIC.bindings, 'counter', ''],
      [METRIC.bindingErrors, 'counter', ''],
      [METRIC.pendingPods, 'gauge', ''],
      [METRIC.gangsBound, 'counter', ''],
      [METRIC.gangRollbacks, 'counter', ''],
      [METRIC.gangRecoveries, 'counter', ''],
      [METRIC.leader, 'gauge', ''],
      [METRIC.apiRequests, 'counter', ''],
      [METRIC.apiErrors, 'counter', ''],
      [METRIC.nodes, 'gauge', ''],
      [METRIC.gpus, 'gauge', ''],
      [METRIC.gpusAllocated, 'gauge', ''],
      [METRIC.buildInfo, 'gauge', 'version'],
      [METRIC.startTime, 'gauge', ''],
    ]);
    expect(Object.values(METRIC)).toEqual(shape.map((s) => s[0]));
  });

  it('reads the stats source once per scrape, at scrape time, and follows it when the totals change', async () => {
    const m = new SitsMetrics();
    let reads = 0;
    let bound = 4;
    m.attachSource(() => {
      reads++;
      return stats({ bound, gpus: 8, gpusAllocated: 3, leader: true });
    });
    expect(reads).toBe(0);
    const first = parsePromText(await m.metrics());
    expect(reads).toBe(1);
    expect([sampleValue(first, METRIC.bindings), sampleValue(first, METRIC.gpus), sampleValue(first, METRIC.gpusAllocated), sampleValue(first, METRIC.leader)]).toEqual([4, 8, 3, 1]);
    bound = 9;
    expect(sampleValue(parsePromText(await m.metrics()), METRIC.bindings)).toBe(9);
    // A scheduler that starts over (a new process behind the same source) is shown as it is, not summed.
    bound = 2;
    expect(sampleValue(parsePromText(await m.metrics()), METRIC.bindings)).toBe(2);
    expect(reads).toBe(3);
  });

  it('schedulerStatsOf reads a SchedulerView: its counters, its cache, the healthy and allocated GPUs', () => {
    const view: SchedulerView = {
      stats: { cycles: 7, bound: 12, bindErrors: 1, failedAttempts: 3, gangsBound: 2, rollbacks: 1, recoveries: 4 },
      cache: {
        pending: { size: 5 },
        nodeCount: 2,
        // GPU 1 of the first node half used, GPU 0 full; GPU 2 of the second unhealthy (its use does not count).
        state: () => ({ nodes: [{ gpuUsable: Uint8Array.from([1, 1, 1]), gpuFree: Int32Array.from([0, 500, 1000]) }, { gpuUsable: Uint8Array.from([1, 1, 0]), gpuFree: Int32Array.from([1000, 1000, 0]) }] }),
      },
      isLeader: () => false,
    };
    expect(schedulerStatsOf(view)()).toEqual({ cycles: 7, bound: 12, bindErrors: 1, gangsBound: 2, rollbacks: 1, recoveries: 4, pendingPods: 5, nodes: 2, gpus: 5, gpusAllocated: 2, leader: false });
  });

  it('a source that throws fails the scrape instead of serving half the numbers', async () => {
    const m = new SitsMetrics();
    m.attachSource(() => {
      throw new Error('cache gone');
    });
    await expect(m.metrics()).rejects.toThrow(/cache gone/);
  });
});
