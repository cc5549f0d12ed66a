import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TENANTS_TRACE } from '../tenants/bench-tenants.ts';
import { parsePhilly } from '../tenants/philly-window.ts';
import { oscillates } from './bench-live.ts';
import { gpuSeconds, gpusAt, replayMetrics, replayQueueObjects, sharesBetween, steadyFrom, swings, type ReplaySample, type ReplayTrace } from './replay.ts';
import { replayNodes, simulateReplay } from './sim-replay.ts';
import { gangShape, replayWorkload, type ReplayWorkload } from './workload.ts';
import { queueFromObject } from '../../kube/cache/queues.ts';

const trace = parsePhilly(readFileSync(DEFAULT_TENANTS_TRACE, 'utf8'), DEFAULT_TENANTS_TRACE);
const tiny = { nodes: 2, shape: 'dgx-h100', windowHours: 0.5, compress: 150, maxDurationHours: 0.25, maxJobs: 24, seed: 1 };

describe('replay workload', () => {
  it('is deterministic by seed, compressed, and keeps every queue in a small sample', () => {
    const a = replayWorkload(trace, tiny);
    expect(replayWorkload(trace, tiny)).toEqual(a);
    expect(replayWorkload(trace, { ...tiny, seed: 2 }).jobs).not.toEqual(a.jobs);
    expect(a.jobs).toHaveLength(24);
    expect(a.horizonSec).toBe(12);
    expect(new Set(a.jobs.map((j) => j.queue))).toEqual(new Set(['gold', 'silver', 'bronze']));
    for (const j of a.jobs) {
      expect(Object.keys(j).sort()).toEqual(['gpus', 'id', 'queue', 'runSeconds', 'submitAtSec']);
      expect(j.id).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      expect(Number.isInteger(j.runSeconds) && j.runSeconds >= 1 && j.runSeconds <= (0.25 * 3600) / 150 + 1).toBe(true);
      expect(j.submitAtSec).toBeGreaterThanOrEqual(0);
      expect(j.submitAtSec).toBeLessThan(a.horizonSec);
    }
    expect([...a.jobs].sort((x, y) => x.submitAtSec - y.submitAtSec)).toEqual(a.jobs);
    expect(a.queues).toEqual([{ name: 'gold', weight: 4 }, { name: 'silver', weight: 2 }, { name: 'bronze', weight: 1 }]);
  });

  it('picks a window where every queue asks for more than its weighted share of the cluster, unlike the single busiest one', () => {
    const w = replayWorkload(trace, { nodes: 4, shape: 'dgx-h100', windowHours: 4, compress: 30, maxDurationHours: 2, seed: 1 });
    const capacity = 32 * w.horizonSec;
    const weights = w.queues.reduce((s, q) => s + q.weight, 0);
    for (const q of w.queues) expect(w.jobs.filter((j) => j.queue === q.name).reduce((s, j) => s + j.gpus * j.runSeconds, 0)).toBeGreaterThan((capacity * q.weight) / weights);
    expect(w.source.busiestRank).toBeGreaterThan(1);
    expect(w.jobs.every((j) => j.gpus <= 8)).toBe(true);
  });

  it('names the field of bad options', () => {
    expect(() => replayWorkload(trace, { ...tiny, compress: 0 })).toThrow(/compress/);
    expect(() => replayWorkload(trace, { ...tiny, maxJobs: 1.5 })).toThrow(/maxJobs/);
  });

  it('shapes gangs as equal replicas that fit a node', () => {
    expect(gangShape(1, 8)).toEqual({ replicas: 1, gpusPerReplica: 1 });
    expect(gangShape(8, 8)).toEqual({ replicas: 1, gpusPerReplica: 8 });
    expect(gangShape(16, 8)).toEqual({ replicas: 2, gpusPerReplica: 8 });
    expect(gangShape(12, 8)).toEqual({ replicas: 2, gpusPerReplica: 6 });
    expect(gangShape(11, 8)).toEqual({ replicas: 11, gpusPerReplica: 1 });
    expect(() => gangShape(0, 8)).toThrow(/gpus/);
  });
});

describe('replay queues and metrics', () => {
  it('splits the cluster into nominal quotas by weight that add up to it', () => {
    const w = replayWorkload(trace, tiny);
    const qs = replayQueueObjects(w, 16, 4).map(queueFromObject);
    expect(qs.reduce((s, q) => s + q.nominal.gpuMilli, 0)).toBe(16_000);
    expect(qs.map((q) => q.weight)).toEqual([4, 2, 1]);
    expect(qs.every((q) => q.cohort === 'replay' && q.preemption?.cooldownMs === 4000)).toBe(true);
  });

  it('counts zig-zag swings of at least the given size', () => {
    expect(swings([0, 5, 9, 5, 0], 10)).toBe(0);
    expect(swings([0, 20, 40, 40, 40], 10)).toBe(0);
    expect(swings([0, 20, 5, 25, 0], 10)).toBe(3);
    expect(swings([50, 30, 50, 30, 50], 10)).toBe(3);
  });

  it('calls a queue oscillating only beyond the simulated swings and some slack', () => {
    expect(oscillates(2, 0)).toBe(false);
    expect(oscillates(3, 0)).toBe(true);
    expect(oscillates(12, 10)).toBe(false);
    expect(oscillates(14, 10)).toBe(true);
  });

  it('computes shares over the steady part, waits from submit to start, and utilisation', () => {
    const w: ReplayWorkload = {
      queues: [{ name: 'a', weight: 2 }, { name: 'b', weight: 1 }],
      jobs: [
        { id: 'x', queue: 'a', submitAtSec: 0, runSeconds: 10, gpus: 2 },
        { id: 'y', queue: 'b', submitAtSec: 1, runSeconds: 10, gpus: 1 },
        { id: 'z', queue: 'b', submitAtSec: 2, runSeconds: 10, gpus: 1 },
      ],
      nodes: 1,
      shape: 'dgx-h100',
      horizonSec: 4,
      source: { windowStartHoursIntoTrace: 0, busiestRank: 1, windowHours: 1, compress: 1, jobsInWindow: 3, demandGpuHours: 0 },
    };
    const t: ReplayTrace = {
      samples: [0, 1, 2, 3, 4].map((s) => ({ t: s, gpus: { a: s >= 1 ? 2 : 0, b: s >= 3 ? 1 : 0 } })),
      firstStartSec: new Map([['x', 0.5], ['y', 3]]),
      preemptions: 1,
      preemptionsAtSec: [2],
      changes: [
        { t: 0, gpus: { a: 0, b: 0 } },
        { t: 1, gpus: { a: 2, b: 0 } },
        { t: 3, gpus: { a: 2, b: 1 } },
      ],
    };
    expect(steadyFrom(t, 3, 4)).toBe(3);
    const m = replayMetrics(w, t, 3, 3);
    expect(m.queues.a?.sharePct).toBeCloseTo(66.67, 2);
    expect(m.queues.b?.sharePct).toBeCloseTo(33.33, 2);
    expect(m.queues.b?.waitSec).toEqual({ p50: 2, p99: 2 });
    expect(m.queues.b?.neverStarted).toBe(1);
    expect(m.waitSec).toEqual({ p50: 0.5, p99: 2 });
    expect(m.utilizationPct).toBeCloseTo((100 * 10) / 15, 1);
    expect(m.steadyUtilizationPct).toBe(100);
    expect(m.preemptions).toBe(1);
    expect(m.preemptionsAtSec).toEqual([2]);
  });
});

describe('shares from the change points', () => {
  // a: 2 GPUs from 1 s, 8 more from 2.5 s to 4.25 s; b: 1 GPU from 3 s.
  const changes: ReplaySample[] = [
    { t: 0, gpus: { a: 0, b: 0 } },
    { t: 1, gpus: { a: 2, b: 0 } },
    { t: 2.5, gpus: { a: 10, b: 0 } },
    { t: 3, gpus: { a: 10, b: 1 } },
    { t: 4.25, gpus: { a: 2, b: 1 } },
  ];
  it('reads the step function between and at change points', () => {
    expect(gpusAt(changes, -1)).toEqual({});
    expect(gpusAt(changes, 2.49)).toEqual({ a: 2, b: 0 });
    expect(gpusAt(changes, 2.5)).toEqual({ a: 10, b: 0 });
    expect(gpusAt(changes, 99)).toEqual({ a: 2, b: 1 });
  });
  it('integrates GPU-seconds exactly, whatever whole seconds a sample would fall on', () => {
    // a: 2 × (2.5 − 2) + 10 × (4.25 − 2.5) + 2 × (5 − 4.25) = 1 + 17.5 + 1.5; b: 1 × (5 − 3).
    expect(gpuSeconds(changes, ['a', 'b'], 2, 5)).toEqual({ a: 20, b: 2 });
    expect(gpuSeconds(changes, ['a', 'b'], 5, 5)).toEqual({ a: 0, b: 0 });
    expect(sharesBetween(changes, ['a', 'b'], 2, 5)).toEqual({ a: 90.91, b: 9.09 });
    expect(sharesBetween(changes, ['a', 'b'], 0, 0.5)).toEqual({ a: 0, b: 0 });
  });
});

describe('simulated replay', () => {
  it('records every change of its running GPUs: each whole-second sample is the step function at that second', () => {
    const w = replayWorkload(trace, tiny);
    const a = simulateReplay(w, { nodes: 2, shape: 'dgx-h100', queues: replayQueueObjects(w, 16, 4), seed: 1, namespace: 'replay' });
    expect(a.changes.length).toBeGreaterThan(2);
    for (let i = 1; i < a.changes.length; i++) expect((a.changes[i] as ReplaySample).t).toBeGreaterThan((a.changes[i - 1] as ReplaySample).t);
    for (const s of a.samples) expect(gpusAt(a.changes, s.t)).toEqual(s.gpus);
    // Some change falls between two whole seconds (the simulator steps every 0.5 s), which samples alone would miss.
    expect(a.changes.some((c) => !Number.isInteger(c.t))).toBe(true);
  });

  it('runs on the dev cluster nodes, never above capacity, and is deterministic', () => {
    const w = replayWorkload(trace, tiny);
    const queues = replayQueueObjects(w, 16, 4);
    expect(replayNodes(2, 'dgx-h100').map((n) => [n.name, n.gpus.length])).toEqual([['dgx-h100-000', 8], ['dgx-h100-001', 8]]);
    const a = simulateReplay(w, { nodes: 2, shape: 'dgx-h100', queues, seed: 1, namespace: 'replay' });
    expect(a.samples).toHaveLength(w.horizonSec + 1);
    for (const s of a.samples) expect(Object.values(s.gpus).reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(16);
    expect(a.preemptionsAtSec).toHaveLength(a.preemptions);
    expect(a.firstStartSec.size).toBeGreaterThan(0);
    for (const [id, at] of a.firstStartSec) expect(at).toBeGreaterThanOrEqual(w.jobs.find((j) => j.id === id)?.submitAtSec ?? Infinity);
    expect(simulateReplay(w, { nodes: 2, shape: 'dgx-h100', queues, seed: 1, namespace: 'replay' })).toEqual(a);
  });
});
