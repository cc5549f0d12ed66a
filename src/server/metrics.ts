/**
 * Every metric of the SITS scheduler process, in one module, on a prom-client registry. Names are
 * `sits_<noun>_<unit>`, counters end in `_total`, durations are in seconds, GPUs in GPUs (0.25 = 250 milli).
 * Most values are read at scrape time (prom-client `collect()` callbacks) from what the scheduler and the API
 * client already count or hold (queues, nodes, fragmentation: `LiveScheduler.metricsView()`); histograms and
 * event counters are fed by the scheduler's `onAttempt` hook and its `LiveObserver`. Cardinality is bounded:
 * see docs/metrics.md (per-GPU series only with `perGpu`, queue labels capped at MAX_QUEUE_LABELS).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RunningJob } from '../core/actions/jobs.ts';
import { jobResources } from '../core/actions/jobs.ts';
import type { ExtensionPoint } from '../core/framework/types.ts';
import { clusterFragmentation } from '../core/plugins/fgd/fragmentation.ts';
import { deservedGpu } from '../core/queue/fair-share.ts';
import { makeQueue, type QueueSpec } from '../core/queue/model.ts';
import { borrowedBy } from '../core/queue/quota.ts';
import type { LiveMetricsView, LiveObserver, PreemptionReason } from '../kube/telemetry/live-observer.ts';

export type AttemptResult = 'scheduled' | 'unschedulable';

/** The scheduler's numbers the metrics show, read at one instant. */
export interface SchedulerStats {
  readonly cycles: number;
  readonly bound: number;
  readonly bindErrors: number;
  readonly gangsBound: number;
  readonly rollbacks: number;
  readonly recoveries: number;
  readonly pendingPods: number;
  readonly nodes: number;
  /** Healthy GPUs, and those of them with any part allocated. */
  readonly gpus: number;
  readonly gpusAllocated: number;
  readonly leader: boolean;
}

/** The one seam between the metrics and the scheduler: called once per scrape. */
export type SchedulerStatsSource = () => SchedulerStats;

/** What the metrics and the server read from the live scheduler today (LiveScheduler satisfies it). */
export interface SchedulerView {
  readonly stats: {
    readonly cycles: number;
    readonly bound: number;
    readonly bindErrors: number;
    readonly failedAttempts: number;
    readonly gangsBound: number;
    readonly rollbacks: number;
    readonly recoveries: number;
  };
  readonly cache: {
    readonly pending: { readonly size: number };
    readonly nodeCount: number;
    state(): { readonly nodes: readonly { readonly gpuUsable: Uint8Array; readonly gpuFree: Int32Array }[] };
  };
  isLeader(): boolean;
  onAttempt?: ((seconds: number, result: AttemptResult) => void) | undefined;
  /** Queues, nodes and fragmentation at scrape time (LiveScheduler has it). */
  metricsView?(): LiveMetricsView;
  observer?: LiveObserver | undefined;
}

/** What the metrics read from the API client (KubeClient satisfies it). */
export interface ClientView {
  readonly stats: { readonly requests: number; readonly errors: number };
}

/** The only code that knows where a SchedulerView keeps its numbers: rewire here when the scheduler changes. */
export function schedulerStatsOf(s: SchedulerView): SchedulerStatsSource {
  return () => {
    let gpus = 0;
    let gpusAllocated = 0;
    // state() may rebuild the cache's ClusterState after a node change: work the next cycle would do anyway.
    for (const n of s.cache.state().nodes) {
      for (let g = 0; g < n.gpuUsable.length; g++) {
        if (n.gpuUsable[g] !== 1) continue;
        gpus++;
        if ((n.gpuFree[g] as number) < 1000) gpusAllocated++;
      }
    }
    const st = s.stats;
    return {
      cycles: st.cycles,
      bound: st.bound,
      bindErrors: st.bindErrors,
      gangsBound: st.gangsBound,
      rollbacks: st.rollbacks,
      recoveries: st.recoveries,
      pendingPods: s.cache.pending.size,
      nodes: s.cache.nodeCount,
      gpus,
      gpusAllocated,
      leader: s.isLeader(),
    };
  };
}

/** Before a scheduler is attached every series reads 0. */
const NO_SCHEDULER: SchedulerStats = {
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
};

export const METRIC = {
  attempts: 'sits_scheduling_attempts_total',
  attemptDuration: 'sits_scheduling_attempt_duration_seconds',
  cycles: 'sits_scheduling_cycles_total',
  bindings: 'sits_bindings_total',
  bindingErrors: 'sits_binding_errors_total',
  pendingPods: 'sits_pending_pods',
  gangsBound: 'sits_gangs_bound_total',
  gangRollbacks: 'sits_gang_rollbacks_total',
  gangRecoveries: 'sits_gang_recoveries_total',
  leader: 'sits_leader_status',
  apiRequests: 'sits_api_requests_total',
  apiErrors: 'sits_api_request_errors_total',
  nodes: 'sits_cluster_nodes',
  gpus: 'sits_cluster_gpus',
  gpusAllocated: 'sits_cluster_gpus_allocated',
  buildInfo: 'sits_build_info',
  startTime: 'sits_process_start_time_seconds',
} as const;

/** The metrics of issue 15 (queues, nodes, GPUs, fragmentation, framework latency, preemption, expected starts). */
export const METRIC_DETAIL = {
  queuePending: 'sits_queue_pending_jobs',
  queueAdmitted: 'sits_queue_admitted_jobs',
  queueUsed: 'sits_queue_used_gpus',
  queueNominal: 'sits_queue_nominal_gpus',
  queueBorrowed: 'sits_queue_borrowed_gpus',
  queueFairShare: 'sits_queue_fair_share_gpus',
  queueAdmissionWait: 'sits_queue_admission_wait_seconds',
  pendingJobs: 'sits_pending_jobs',
  nodeGpus: 'sits_node_gpus',
  nodeAllocated: 'sits_node_allocated_gpus',
  nodeUnhealthy: 'sits_node_unhealthy_gpus',
  gpuAllocated: 'sits_gpu_allocated_ratio',
  gpuHealthy: 'sits_gpu_healthy',
  clusterUnhealthy: 'sits_cluster_unhealthy_gpus',
  fragmentation: 'sits_cluster_gpu_fragmentation_ratio',
  extensionPoint: 'sits_framework_extension_point_duration_seconds',
  preemptions: 'sits_preemptions_total',
  preemptionVictims: 'sits_preemption_victims_total',
  startError: 'sits_expected_start_error_seconds',
} as const;

/** Extension points as labelled: the framework's (types.ts) and the binding cycle's Bind. */
export const EXTENSION_POINTS: readonly (ExtensionPoint | 'Bind')[] = ['PreFilter', 'FilterScore', 'PickGpus', 'Reserve', 'Permit', 'Bind'];
/** Seconds: one plugin call over a cached index is microseconds, a full index build over 10k nodes tens of ms, a binding an API round trip. */
export const EXTENSION_BUCKETS = [0.00001, 0.00003, 0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3];
/** Seconds from arrival to start: immediate admissions to a day in the queue. */
export const WAIT_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400];
/** Seconds between the published expected start and the real one. */
export const START_ERROR_BUCKETS = [1, 10, 30, 60, 300, 900, 1800, 3600, 7200, 21600, 86400];
/** Distinct `queue` label values at most; further queues are summed under `queue="_other"` (names come from pod labels too). */
export const MAX_QUEUE_LABELS = 500;
export const OTHER_QUEUE = '_other';
const PREEMPTION_REASONS: readonly PreemptionReason[] = ['priority', 'reclaim'];

/** Seconds: a single pod decision takes well under a millisecond on a small cluster, a large gang can take seconds. */
export const ATTEMPT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface SitsMetricsOptions {
  readonly version?: string;
  /** Process start, seconds since the epoch. */
  readonly startTimeSeconds?: number;
  /** One series per GPU (node × device index): off by default, 2 × GPUs series (docs/metrics.md). */
  readonly perGpu?: boolean;
  /**
   * prom-client's default process metrics (process_resident_memory_bytes, nodejs_heap_*, nodejs_eventloop_lag_*,
   * nodejs_gc_duration_seconds, ...): on for the served registry, off by default so tests' registries stay exact.
   */
  readonly processMetrics?: boolean;
}

/** One scrape's numbers derived from a LiveMetricsView. */
interface Detail {
  readonly queues: readonly {
    readonly name: string;
    readonly pending: number;
    readonly admitted: number;
    readonly usedGpus: number;
    readonly nominalGpus: number | undefined;
    readonly borrowedGpus: number;
    readonly fairShareGpus: number;
  }[];
  readonly nodes: readonly {
    readonly name: string;
    readonly gpus: number;
    readonly allocated: number;
    readonly unhealthy: number;
    readonly perGpu: readonly { readonly allocated: number; readonly healthy: boolean }[];
  }[];
  readonly unhealthy: number;
  readonly fragmentation: number;
  readonly queueCounts: { readonly active: number; readonly backoff: number; readonly unschedulable: number };
}

const NO_DETAIL: Detail = { queues: [], nodes: [], unhealthy: 0, fragmentation: 0, queueCounts: { active: 0, backoff: 0, unschedulable: 0 } };

/** Queue, node and cluster numbers of one view (exported for the tests). */
export function detailOf(v: LiveMetricsView): Detail {
  const gpuMilli = (r: RunningJob): number => r.resources.gpuMilli;
  const names = new Set<string>([...v.queues.keys(), ...v.pending.map((j) => j.queue), ...v.running.map((r) => r.queue)]);
  const spec = (q: string): QueueSpec => v.queues.get(q) ?? makeQueue(q);
  const pending = new Map<string, { jobs: number; gpuMilli: number }>();
  for (const j of v.pending) {
    const e = pending.get(j.queue) ?? { jobs: 0, gpuMilli: 0 };
    e.jobs++;
    e.gpuMilli += jobResources(j).gpuMilli;
    pending.set(j.queue, e);
  }
  const running = new Map<string, { jobs: number; used: RunningJob['resources'] }>();
  for (const r of v.running) {
    const e = running.get(r.queue) ?? { jobs: 0, used: { gpuMilli: 0, cpuMilli: 0, memoryMiB: 0 } };
    e.jobs++;
    e.used = { gpuMilli: e.used.gpuMilli + gpuMilli(r), cpuMilli: e.used.cpuMilli + r.resources.cpuMilli, memoryMiB: e.used.memoryMiB + r.resources.memoryMiB };
    running.set(r.queue, e);
  }
  let capacity = 0;
  let unhealthy = 0;
  const nodes: Detail['nodes'][number][] = [];
  for (const n of v.state.nodes) {
    let allocated = 0;
    let bad = 0;
    const perGpu: { allocated: number; healthy: boolean }[] = [];
    for (let g = 0; g < n.gpuUsable.length; g++) {
      const healthy = n.gpuUsable[g] === 1;
      const used = healthy ? 1000 - (n.gpuFree[g] as number) : 0;
      if (healthy) allocated += used;
      else bad++;
      perGpu.push({ allocated: used / 1000, healthy });
    }
    capacity += (n.gpuUsable.length - bad) * 1000;
    unhealthy += bad;
    nodes.push({ name: n.name, gpus: n.gpuUsable.length, allocated: allocated / 1000, unhealthy: bad, perGpu });
  }
  const deserved = deservedGpu(
    [...names].map((q) => ({ queue: spec(q), demandGpuMilli: (running.get(q)?.used.gpuMilli ?? 0) + (pending.get(q)?.gpuMilli ?? 0) })),
    capacity,
  );
  const queues = [...names].sort().map((q) => {
    const used = running.get(q)?.used ?? { gpuMilli: 0, cpuMilli: 0, memoryMiB: 0 };
    const nominal = spec(q).nominal.gpuMilli;
    return {
      name: q,
      pending: pending.get(q)?.jobs ?? 0,
      admitted: running.get(q)?.jobs ?? 0,
      usedGpus: used.gpuMilli / 1000,
      nominalGpus: Number.isFinite(nominal) ? nominal / 1000 : undefined,
      borrowedGpus: Number.isFinite(nominal) ? borrowedBy(spec(q), used).gpuMilli / 1000 : 0,
      fairShareGpus: (deserved.get(q) ?? 0) / 1000,
    };
  });
  return { queues, nodes, unhealthy, fragmentation: clusterFragmentation(v.state.nodes, v.shapes).ratio, queueCounts: v.queueCounts };
}

const RESULTS: readonly AttemptResult[] = ['scheduled', 'unschedulable'];

export class SitsMetrics {
  /** Its own registry, not prom-client's global one: several SitsMetrics may live in one process (tests). */
  readonly registry = new Registry();
  private source: SchedulerStatsSource | undefined;
  private client: ClientView | undefined;
  private snapshot: SchedulerStats | undefined;
  private detailSource: (() => LiveMetricsView) | undefined;
  private detailSnapshot: Detail | undefined;
  private readonly attempts: Counter<'result'>;
  private readonly duration: Histogram<'result'>;
  private readonly extension: Histogram<'extension_point'>;
  private readonly admissionWait: Histogram<'queue'>;
  private readonly preemptions: Counter<'reason'>;
  private readonly victims: Counter<'reason'>;
  private readonly startError: Histogram<'direction'>;
  /** Queue label values handed out so far (bounded by MAX_QUEUE_LABELS), and those whose admission-wait series exist. */
  private readonly queueLabels = new Set<string>();
  private readonly waitSeries = new Set<string>();

  constructor(opts: SitsMetricsOptions = {}) {
    const registers = [this.registry];
    this.attempts = new Counter({ name: METRIC.attempts, help: 'Scheduling attempts (one pod, or one gang) by result.', labelNames: ['result'], registers });
    this.duration = new Histogram({
      name: METRIC.attemptDuration,
      help: 'Time to decide one scheduling attempt (one pod, or one gang including its binding), by result.',
      buckets: ATTEMPT_BUCKETS,
      labelNames: ['result'],
      registers,
    });
    // Both results show (at 0) before the first attempt.
    for (const result of RESULTS) {
      this.attempts.inc({ result }, 0);
      this.duration.zero({ result });
    }
    this.registerTotals(registers, opts);
    this.registerQueueSeries(registers);
    this.admissionWait = new Histogram({
      name: METRIC_DETAIL.queueAdmissionWait,
      help: "Time from a job's arrival to its admission (start), by queue.",
      labelNames: ['queue'],
      buckets: WAIT_BUCKETS,
      registers,
    });
    this.registerClusterSeries(registers, opts.perGpu === true);
    this.extension = new Histogram({
      name: METRIC_DETAIL.extensionPoint,
      help: 'Time of one extension point for one pod or gang of a live cycle (FilterScore: the score index filters and scores in one pass); Bind: one pods/binding call.',
      labelNames: ['extension_point'],
      buckets: EXTENSION_BUCKETS,
      registers,
    });
    for (const extension_point of EXTENSION_POINTS) this.extension.zero({ extension_point });
    this.preemptions = new Counter({
      name: METRIC_DETAIL.preemptions,
      help: 'Preemptor jobs that evicted running jobs, by reason (priority: within the queue; reclaim: a queue under its fair share).',
      labelNames: ['reason'],
      registers,
    });
    this.victims = new Counter({ name: METRIC_DETAIL.preemptionVictims, help: 'Running jobs preempted, by reason.', labelNames: ['reason'], registers });
    for (const reason of PREEMPTION_REASONS) {
      this.preemptions.inc({ reason }, 0);
      this.victims.inc({ reason }, 0);
    }
    this.startError = new Histogram({
      name: METRIC_DETAIL.startError,
      help: "How far a job's real start was from the expected start SITS published for it (absolute seconds); direction late: it started after the expected time.",
      labelNames: ['direction'],
      buckets: START_ERROR_BUCKETS,
      registers,
    });
    for (const direction of ['early', 'late']) this.startError.zero({ direction });
  }

  /** Totals read from the scheduler at scrape time, and the build's identity. */
  private registerTotals(registers: Registry[], opts: SitsMetricsOptions): void {
    const counter = (name: string, help: string, read: () => number): void => readCounter(registers, name, help, read);
    const gauge = (name: string, help: string, read: () => number): void => readGauge(registers, name, help, read);
    const s = (): SchedulerStats => this.stats();
    counter(METRIC.cycles, 'Scheduling cycles run (passes over the pending pods).', () => s().cycles);
    counter(METRIC.bindings, 'Pods bound through pods/binding.', () => s().bound);
    counter(METRIC.bindingErrors, 'Bindings the API server refused or that failed.', () => s().bindErrors);
    gauge(METRIC.pendingPods, 'Pods for this scheduler that wait for a node.', () => s().pendingPods);
    counter(METRIC.gangsBound, 'Gangs bound all together.', () => s().gangsBound);
    counter(METRIC.gangRollbacks, 'Gang plans rolled back (nothing of the gang left bound).', () => s().rollbacks);
    counter(METRIC.gangRecoveries, 'Gang plans of a previous leader completed after a crash.', () => s().recoveries);
    gauge(METRIC.leader, '1 when this replica holds the leader-election Lease (or runs without leader election), else 0.', () => (s().leader ? 1 : 0));
    counter(METRIC.apiRequests, 'Requests sent to the Kubernetes API server (watches not included).', () => this.client?.stats.requests ?? 0);
    counter(METRIC.apiErrors, 'API requests that failed (HTTP status outside 2xx, or no response).', () => this.client?.stats.errors ?? 0);
    gauge(METRIC.nodes, 'Nodes the scheduler knows with a valid GPU description.', () => s().nodes);
    gauge(METRIC.gpus, 'Healthy GPUs on those nodes.', () => s().gpus);
    gauge(METRIC.gpusAllocated, 'Healthy GPUs with any part allocated to a pod.', () => s().gpusAllocated);
    new Gauge({ name: METRIC.buildInfo, help: 'Always 1; the labels say which build runs.', labelNames: ['version'], registers }).set(
      { version: opts.version ?? 'unknown' },
      1,
    );
    new Gauge({ name: METRIC.startTime, help: 'Start time of the process, seconds since the Unix epoch.', registers }).set(opts.startTimeSeconds ?? 0);
    if (opts.processMetrics === true) collectDefaultMetrics({ register: this.registry });
  }

  /** Issue 15: per-queue series, read at scrape time from the scheduler's view (queue label values bounded). */
  private registerQueueSeries(registers: Registry[]): void {
    const perQueue = (name: string, help: string, value: (q: Detail['queues'][number]) => number | undefined): void =>
      labelledGauge(registers, name, help, ['queue'], (set) => {
        const sums = new Map<string, number>();
        for (const q of this.detail().queues) {
          const v = value(q);
          if (v === undefined) continue;
          const label = this.queueLabel(q.name);
          sums.set(label, (sums.get(label) ?? 0) + v);
        }
        for (const [queue, v] of sums) set({ queue }, v);
      });
    perQueue(METRIC_DETAIL.queuePending, 'Jobs (a pod or a gang) of the queue waiting to be admitted.', (q) => q.pending);
    perQueue(METRIC_DETAIL.queueAdmitted, 'Jobs of the queue admitted and running (pods bound).', (q) => q.admitted);
    perQueue(METRIC_DETAIL.queueUsed, "GPUs the queue's running jobs hold (fractions of a GPU count as such).", (q) => q.usedGpus);
    perQueue(METRIC_DETAIL.queueNominal, 'Nominal GPU quota of the queue (queues without a GPU quota have no series).', (q) => q.nominalGpus);
    perQueue(METRIC_DETAIL.queueBorrowed, 'GPUs the queue uses above its nominal quota, borrowed from its cohort.', (q) => q.borrowedGpus);
    perQueue(
      METRIC_DETAIL.queueFairShare,
      'GPUs the queue is entitled to now by weighted fair share (water-filling over its demand and quota).',
      (q) => q.fairShareGpus,
    );
  }

  /** The scheduling queue, nodes, GPUs (per GPU only when asked) and fragmentation, read at scrape time. */
  private registerClusterSeries(registers: Registry[], perGpu: boolean): void {
    const d = (): Detail => this.detail();
    const labelled = <L extends string>(
      name: string,
      help: string,
      labelNames: readonly L[],
      fill: (set: (labels: Record<L, string>, v: number) => void) => void,
    ): void => labelledGauge(registers, name, help, labelNames, fill);
    const gauge = (name: string, help: string, read: () => number): void => readGauge(registers, name, help, read);
    labelled(
      METRIC_DETAIL.pendingJobs,
      'Jobs in the scheduling queue by where they wait: active (to be tried), backoff, unschedulable (parked until an event may help).',
      ['state'],
      (set) => {
        const c = d().queueCounts;
        set({ state: 'active' }, c.active);
        set({ state: 'backoff' }, c.backoff);
        set({ state: 'unschedulable' }, c.unschedulable);
      },
    );
    labelled(METRIC_DETAIL.nodeGpus, 'GPU devices of the node, healthy or not.', ['node'], (set) => {
      for (const n of d().nodes) set({ node: n.name }, n.gpus);
    });
    labelled(METRIC_DETAIL.nodeAllocated, 'GPUs of the node allocated to pods (0.25 = 250 milli-GPU), healthy GPUs only.', ['node'], (set) => {
      for (const n of d().nodes) set({ node: n.name }, n.allocated);
    });
    labelled(METRIC_DETAIL.nodeUnhealthy, 'GPUs of the node marked unhealthy (not schedulable).', ['node'], (set) => {
      for (const n of d().nodes) set({ node: n.name }, n.unhealthy);
    });
    if (perGpu) {
      labelled(METRIC_DETAIL.gpuAllocated, 'Share of the GPU allocated to pods (milli-GPU / 1000); 0 when unhealthy.', ['node', 'gpu'], (set) => {
        for (const n of d().nodes) n.perGpu.forEach((g, i) => set({ node: n.name, gpu: String(i) }, g.allocated));
      });
      labelled(METRIC_DETAIL.gpuHealthy, '1 when the GPU is healthy, 0 when it is marked unhealthy.', ['node', 'gpu'], (set) => {
        for (const n of d().nodes) n.perGpu.forEach((g, i) => set({ node: n.name, gpu: String(i) }, g.healthy ? 1 : 0));
      });
    }
    gauge(METRIC_DETAIL.clusterUnhealthy, 'GPUs marked unhealthy on the nodes the scheduler knows.', () => d().unhealthy);
    gauge(
      METRIC_DETAIL.fragmentation,
      "Fragmentation rate (FGD): share of the free GPU capacity the expected workload's typical shapes cannot use (0..1).",
      () => d().fragmentation,
    );
  }

  /** The events of the live scheduler, into these metrics. */
  readonly observer: LiveObserver = {
    extension: { nowMs: () => performance.now(), observe: (point, seconds) => this.extension.observe({ extension_point: point }, seconds) },
    admitted: (queue, waitSeconds) => this.admissionWait.observe({ queue: this.waitSeriesOf(queue) }, waitSeconds),
    preempted: (reason, victims) => {
      this.preemptions.inc({ reason });
      this.victims.inc({ reason }, victims);
    },
    startError: (seconds) => this.startError.observe({ direction: seconds > 0 ? 'late' : 'early' }, Math.abs(seconds)),
    bound: (seconds) => this.extension.observe({ extension_point: 'Bind' }, seconds),
  };

  /**
   * The queue's admission-wait label, its series created at 0 the first time (at a scrape that shows the queue,
   * or its first admission): a series born with its first observation would show no increase in rate().
   */
  private waitSeriesOf(queue: string): string {
    const label = this.queueLabel(queue);
    if (!this.waitSeries.has(label)) {
      this.waitSeries.add(label);
      this.admissionWait.zero({ queue: label });
    }
    return label;
  }

  /** The queue's label value: its name while fewer than MAX_QUEUE_LABELS names were seen, else `_other`. */
  private queueLabel(queue: string): string {
    if (this.queueLabels.has(queue)) return queue;
    if (this.queueLabels.size >= MAX_QUEUE_LABELS) return OTHER_QUEUE;
    this.queueLabels.add(queue);
    return queue;
  }

  /** Starts reading from a running scheduler and its client, and receives its attempt durations. */
  attach(scheduler: SchedulerView, client?: ClientView): void {
    this.attachSource(schedulerStatsOf(scheduler), client);
    scheduler.onAttempt = (seconds, result) => this.observeAttempt(seconds, result);
    if (scheduler.metricsView !== undefined) {
      this.detailSource = () => (scheduler.metricsView as () => LiveMetricsView).call(scheduler);
      scheduler.observer = this.observer;
    }
  }

  /** Reads queues, nodes and fragmentation from `source` at scrape time (for a scheduler that is not a SchedulerView). */
  attachDetail(source: () => LiveMetricsView): void {
    this.detailSource = source;
  }

  /** Reads the scheduler's numbers from `source` (for a scheduler that is not a SchedulerView). */
  attachSource(source: SchedulerStatsSource, client?: ClientView): void {
    this.source = source;
    this.client = client;
  }

  observeAttempt(seconds: number, result: AttemptResult): void {
    this.attempts.inc({ result });
    this.duration.observe({ result }, seconds);
  }

  /** The text exposition format (prom-client's `registry.metrics()`). */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private stats(): SchedulerStats {
    if (this.snapshot === undefined) {
      this.snapshot = this.source?.() ?? NO_SCHEDULER;
      // registry.metrics() runs every collect() in one synchronous pass: one read per scrape, so the
      // numbers of a scrape agree with each other and the GPU walk is done once.
      queueMicrotask(() => {
        this.snapshot = undefined;
      });
    }
    return this.snapshot;
  }

  private detail(): Detail {
    if (this.detailSnapshot === undefined) {
      this.detailSnapshot = this.detailSource === undefined ? NO_DETAIL : detailOf(this.detailSource());
      for (const q of this.detailSnapshot.queues) this.waitSeriesOf(q.name);
      queueMicrotask(() => {
        this.detailSnapshot = undefined;
      });
    }
    return this.detailSnapshot;
  }
}

/** A counter whose total lives elsewhere (the scheduler): a counter has no set(), so it starts from 0 at every scrape. */
function readCounter(registers: Registry[], name: string, help: string, read: () => number): void {
  void new Counter({
    name,
    help,
    registers,
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

function readGauge(registers: Registry[], name: string, help: string, read: () => number): void {
  void new Gauge({
    name,
    help,
    registers,
    collect() {
      this.set(read());
    },
  });
}

/** Series of queues and nodes that are gone disappear: the gauge starts from no series at every scrape. */
function labelledGauge<L extends string>(
  registers: Registry[],
  name: string,
  help: string,
  labelNames: readonly L[],
  fill: (set: (labels: Record<L, string>, v: number) => void) => void,
): void {
  void new Gauge<L>({
    name,
    help,
    labelNames,
    registers,
    collect() {
      this.reset();
      fill((labels, v) => this.set(labels as never, v));
    },
  });
}
