import { describe, expect, it } from 'vitest';
import { parsePromText, sampleValue } from '../harness/prom-text.ts';
import { simAppOrThrow } from '../app/sim-app.ts';
import { NODE_SHAPES } from '../core/model/presets.ts';
import { makePod } from '../core/model/pod.ts';
import { makeQueue } from '../core/queue/model.ts';
import { seededRng } from '../core/ports.ts';
import type { QueuedJob, RunningJob } from '../core/actions/jobs.ts';
import type { LiveMetricsView } from '../kube/telemetry/live-observer.ts';
import { clusterFragmentation } from '../core/plugins/fgd/fragmentation.ts';
import { dashboardQueries } from '../deploy/grafana-dashboard.ts';
import {
  METRIC,
  METRIC_DETAIL,
  MAX_QUEUE_LABELS,
  OTHER_QUEUE,
  SitsMetrics,
  detailOf,
  schedulerStatsOf,
  type SchedulerStats,
  type SchedulerView,
} from './metrics.ts';

const stats = (o: Partial<SchedulerStats> = {}): SchedulerStats => ({
  cycles: 0,
  bound: 0,
  bindErrors: 0,
  gangsBound: 0,
  rollbacks: 0,
  recoveries: 0,
  pendingPods: 0,
  nodes: 0,
  gpus: 0,
  gpusAllocated: 0,
  leader: false,
  ...o,
});

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
      // Issue 15 (docs/metrics.md). The per-queue and per-node gauges have no series without a scheduler.
      [METRIC_DETAIL.queuePending, 'gauge', ''],
      [METRIC_DETAIL.queueAdmitted, 'gauge', ''],
      [METRIC_DETAIL.queueUsed, 'gauge', ''],
      [METRIC_DETAIL.queueNominal, 'gauge', ''],
      [METRIC_DETAIL.queueBorrowed, 'gauge', ''],
      [METRIC_DETAIL.queueFairShare, 'gauge', ''],
      [METRIC_DETAIL.queueAdmissionWait, 'histogram', ''],
      [METRIC_DETAIL.pendingJobs, 'gauge', 'state'],
      [METRIC_DETAIL.nodeGpus, 'gauge', ''],
      [METRIC_DETAIL.nodeAllocated, 'gauge', ''],
      [METRIC_DETAIL.nodeUnhealthy, 'gauge', ''],
      [METRIC_DETAIL.clusterUnhealthy, 'gauge', ''],
      [METRIC_DETAIL.fragmentation, 'gauge', ''],
      [METRIC_DETAIL.extensionPoint, 'histogram', 'extension_point,le'],
      [METRIC_DETAIL.preemptions, 'counter', 'reason'],
      [METRIC_DETAIL.preemptionVictims, 'counter', 'reason'],
      [METRIC_DETAIL.startError, 'histogram', 'direction,le'],
    ]);
    expect([
      ...Object.values(METRIC),
      ...Object.values(METRIC_DETAIL).filter((n) => n !== METRIC_DETAIL.gpuAllocated && n !== METRIC_DETAIL.gpuHealthy),
    ]).toEqual(shape.map((s) => s[0]));
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
    expect([
      sampleValue(first, METRIC.bindings),
      sampleValue(first, METRIC.gpus),
      sampleValue(first, METRIC.gpusAllocated),
      sampleValue(first, METRIC.leader),
    ]).toEqual([4, 8, 3, 1]);
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
        state: () => ({
          nodes: [
            { gpuUsable: Uint8Array.from([1, 1, 1]), gpuFree: Int32Array.from([0, 500, 1000]) },
            { gpuUsable: Uint8Array.from([1, 1, 0]), gpuFree: Int32Array.from([1000, 1000, 0]) },
          ],
        }),
      },
      isLeader: () => false,
    };
    expect(schedulerStatsOf(view)()).toEqual({
      cycles: 7,
      bound: 12,
      bindErrors: 1,
      gangsBound: 2,
      rollbacks: 1,
      recoveries: 4,
      pendingPods: 5,
      nodes: 2,
      gpus: 5,
      gpusAllocated: 2,
      leader: false,
    });
  });

  it('a source that throws fails the scrape instead of serving half the numbers', async () => {
    const m = new SitsMetrics();
    m.attachSource(() => {
      throw new Error('cache gone');
    });
    await expect(m.metrics()).rejects.toThrow(/cache gone/);
  });
});

/** A real cluster state after real placements: 2 nodes of 8 H100s, one GPU unhealthy, pods placed by the sits profile. */
function scheduled(): { view: LiveMetricsView; timed: string[] } {
  const shape = NODE_SHAPES['dgx-h100'] as NonNullable<(typeof NODE_SHAPES)[string]>;
  const nodes = [0, 1].map((i) => ({
    name: `n${i}`,
    cpuMilli: shape.cpuMilli,
    memoryMiB: shape.memoryMiB,
    maxPods: shape.maxPods,
    gpus: shape.gpus,
    topology: shape.topology,
    location: { zone: 'z', block: 'b', rack: 'r0' },
    labels: {},
    taints: [],
    unschedulable: false,
    shape: shape.id,
  }));
  const app = simAppOrThrow({ nodes, profile: 'sits', rng: seededRng(1) });
  const timed: string[] = [];
  app.scheduler.timer = { nowMs: () => performance.now(), observe: (p) => void timed.push(p) };
  for (const [id, gpuCount, gpuMilli] of [
    ['a', 4, 1000],
    ['b', 1, 500],
  ] as const)
    expect(app.scheduler.schedulePod(makePod(id, { gpuCount, gpuMilli })).ok).toBe(true);
  app.state.setGpuHealth('n1', 7, false);
  const running: RunningJob[] = [
    {
      id: 'a',
      queue: 'team-a',
      priority: 0,
      startMs: 0,
      estEndMs: 1,
      podIds: ['a'],
      resources: { gpuMilli: 4000, cpuMilli: 1000, memoryMiB: 1024 },
      preemptible: true,
    },
    {
      id: 'b',
      queue: 'team-b',
      priority: 0,
      startMs: 0,
      estEndMs: 1,
      podIds: ['b'],
      resources: { gpuMilli: 500, cpuMilli: 1000, memoryMiB: 1024 },
      preemptible: true,
    },
  ];
  const pendingPod = makePod('c', { gpuCount: 8 });
  const pending: QueuedJob[] = [
    {
      id: 'c',
      queue: 'team-b',
      priority: 0,
      arrivalMs: 0,
      gang: { name: 'c', members: [pendingPod], minMember: 1, topology: {}, priority: 0, queue: 'team-b' },
      estRuntimeMs: 1,
    },
  ];
  const queues = new Map([
    ['team-a', makeQueue('team-a', { nominal: { gpuMilli: 2000, cpuMilli: Infinity, memoryMiB: Infinity }, cohort: 'c' })],
    ['team-b', makeQueue('team-b', { nominal: { gpuMilli: 8000, cpuMilli: Infinity, memoryMiB: Infinity }, cohort: 'c' })],
  ]);
  const shapes = [{ cpuMilli: 1000, gpuMilli: 1000, gpuCount: 8, gpuModels: [], weight: 1 }];
  return { view: { state: app.state, queues, pending, running, shapes, queueCounts: { active: 0, backoff: 1, unschedulable: 2 } }, timed };
}

describe('SitsMetrics: queues, nodes, GPUs, fragmentation (issue 15)', () => {
  it('the framework times its extension points only when a timer is set, for each pod placed', () => {
    const { timed } = scheduled();
    expect(new Set(timed)).toEqual(new Set(['PreFilter', 'FilterScore', 'PickGpus', 'Reserve']));
  });

  it('renders per-queue, per-node and cluster series from a scheduled state, parsed back from the text format', async () => {
    const { view } = scheduled();
    const m = new SitsMetrics();
    m.attachDetail(() => view);
    const f = parsePromText(await m.metrics());
    const q = (name: string, queue: string): number | undefined => sampleValue(f, name, { queue });
    expect([q(METRIC_DETAIL.queuePending, 'team-a'), q(METRIC_DETAIL.queuePending, 'team-b')]).toEqual([0, 1]);
    expect([q(METRIC_DETAIL.queueAdmitted, 'team-a'), q(METRIC_DETAIL.queueAdmitted, 'team-b')]).toEqual([1, 1]);
    expect([q(METRIC_DETAIL.queueUsed, 'team-a'), q(METRIC_DETAIL.queueUsed, 'team-b')]).toEqual([4, 0.5]);
    expect([q(METRIC_DETAIL.queueNominal, 'team-a'), q(METRIC_DETAIL.queueNominal, 'team-b')]).toEqual([2, 8]);
    // team-a uses 4 of its nominal 2: 2 borrowed.
    expect([q(METRIC_DETAIL.queueBorrowed, 'team-a'), q(METRIC_DETAIL.queueBorrowed, 'team-b')]).toEqual([2, 0]);
    // 15 healthy GPUs; demands 4 and 8.5, both under the ceilings (no borrowing limit): each gets its demand.
    expect([q(METRIC_DETAIL.queueFairShare, 'team-a'), q(METRIC_DETAIL.queueFairShare, 'team-b')]).toEqual([4, 8.5]);
    const node = (name: string, n: string): number | undefined => sampleValue(f, name, { node: n });
    expect([node(METRIC_DETAIL.nodeGpus, 'n0'), node(METRIC_DETAIL.nodeGpus, 'n1')]).toEqual([8, 8]);
    expect([node(METRIC_DETAIL.nodeUnhealthy, 'n0'), node(METRIC_DETAIL.nodeUnhealthy, 'n1')]).toEqual([0, 1]);
    const allocated = (node(METRIC_DETAIL.nodeAllocated, 'n0') ?? 0) + (node(METRIC_DETAIL.nodeAllocated, 'n1') ?? 0);
    expect(allocated).toBe(4.5);
    expect(sampleValue(f, METRIC_DETAIL.clusterUnhealthy)).toBe(1);
    expect(sampleValue(f, METRIC_DETAIL.fragmentation)).toBeCloseTo(clusterFragmentation(view.state.nodes, view.shapes).ratio, 12);
    // The 8-GPU shape fits on no node any more (4 + 0.5 used on one, one GPU down on the other): everything free is fragment.
    expect(sampleValue(f, METRIC_DETAIL.fragmentation)).toBe(1);
    expect(['active', 'backoff', 'unschedulable'].map((state) => sampleValue(f, METRIC_DETAIL.pendingJobs, { state }))).toEqual([0, 1, 2]);
    // Per-GPU series only when asked for.
    expect(f.has(METRIC_DETAIL.gpuAllocated)).toBe(false);
    const perGpu = new SitsMetrics({ perGpu: true });
    perGpu.attachDetail(() => view);
    const g = parsePromText(await perGpu.metrics());
    expect(g.get(METRIC_DETAIL.gpuAllocated)?.samples).toHaveLength(16);
    expect(sampleValue(g, METRIC_DETAIL.gpuHealthy, { node: 'n1', gpu: '7' })).toBe(0);
    expect(g.get(METRIC_DETAIL.gpuAllocated)?.samples.reduce((s, x) => s + x.value, 0)).toBe(4.5);
  });

  it('feeds the histograms and counters from the observer; queue labels are capped', async () => {
    const m = new SitsMetrics();
    m.observer.admitted?.('team-a', 42);
    m.observer.preempted?.('reclaim', 3);
    m.observer.startError?.(-90);
    m.observer.bound?.(0.02, true);
    m.observer.extension?.observe('FilterScore', 0.001);
    for (let i = 0; i < MAX_QUEUE_LABELS + 5; i++) m.observer.admitted?.(`q${i}`, 1);
    const f = parsePromText(await m.metrics());
    expect(sampleValue(f, `${METRIC_DETAIL.queueAdmissionWait}_count`, { queue: 'team-a' })).toBe(1);
    expect(sampleValue(f, `${METRIC_DETAIL.queueAdmissionWait}_sum`, { queue: 'team-a' })).toBe(42);
    expect(sampleValue(f, `${METRIC_DETAIL.queueAdmissionWait}_count`, { queue: OTHER_QUEUE })).toBe(6);
    expect(new Set(f.get(METRIC_DETAIL.queueAdmissionWait)?.samples.map((s) => s.labels.queue)).size).toBe(MAX_QUEUE_LABELS + 1);
    expect([
      sampleValue(f, METRIC_DETAIL.preemptions, { reason: 'reclaim' }),
      sampleValue(f, METRIC_DETAIL.preemptionVictims, { reason: 'reclaim' }),
      sampleValue(f, METRIC_DETAIL.preemptions, { reason: 'priority' }),
    ]).toEqual([1, 3, 0]);
    expect([
      sampleValue(f, `${METRIC_DETAIL.startError}_count`, { direction: 'early' }),
      sampleValue(f, `${METRIC_DETAIL.startError}_sum`, { direction: 'early' }),
    ]).toEqual([1, 90]);
    expect(sampleValue(f, `${METRIC_DETAIL.extensionPoint}_count`, { extension_point: 'Bind' })).toBe(1);
    expect(sampleValue(f, `${METRIC_DETAIL.extensionPoint}_bucket`, { extension_point: 'FilterScore', le: '0.001' })).toBe(1);
  });

  it('detailOf leaves out the nominal of a queue without a GPU quota and counts a queue known only from its jobs', () => {
    const { view } = scheduled();
    const d = detailOf({ ...view, queues: new Map() });
    expect(d.queues.map((q) => [q.name, q.nominalGpus, q.borrowedGpus])).toEqual([
      ['team-a', undefined, 0],
      ['team-b', undefined, 0],
    ]);
  });
});

describe('the Grafana dashboard and the metrics', () => {
  it('every metric a dashboard query names is one SITS exposes (the e2e test runs the queries against Prometheus)', () => {
    const known = new Set<string>([...Object.values(METRIC), ...Object.values(METRIC_DETAIL)]);
    const histograms = [METRIC.attemptDuration, METRIC_DETAIL.queueAdmissionWait, METRIC_DETAIL.extensionPoint, METRIC_DETAIL.startError];
    for (const h of histograms) for (const suffix of ['_bucket', '_sum', '_count']) known.add(`${h}${suffix}`);
    const named = new Set(dashboardQueries().flatMap((q) => q.expr.match(/\bsits_[a-z_]+/g) ?? []));
    expect([...named].filter((n) => !known.has(n))).toEqual([]);
    // And the dashboard shows every family but the build and start-time ones.
    const unused = [...Object.values(METRIC), ...Object.values(METRIC_DETAIL)].filter((n) => ![...named].some((x) => x === n || x.startsWith(`${n}_`)));
    expect(unused.sort()).toEqual([METRIC.buildInfo, METRIC.startTime].sort());
  });
});

describe('SitsMetrics: process metrics (issue 31)', () => {
  it("with processMetrics serves prom-client's default collectors: RSS, heap, event-loop lag, GC", async () => {
    const families = parsePromText(await new SitsMetrics({ processMetrics: true }).metrics());
    expect(sampleValue(families, 'process_resident_memory_bytes')).toBeGreaterThan(1_000_000);
    expect(families.get('nodejs_eventloop_lag_seconds')?.type).toBe('gauge');
    expect(sampleValue(families, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sampleValue(families, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(families.get('nodejs_gc_duration_seconds')?.type).toBe('histogram');
  });

  it("without it the registry holds only the scheduler's own families", async () => {
    const families = parsePromText(await new SitsMetrics().metrics());
    expect([...families.keys()].filter((n) => n.startsWith('process_') || n.startsWith('nodejs_'))).toEqual([]);
  });
});
