/**
 * Every metric of the SITS scheduler process, in one module, on a prom-client registry. Names are
 * `sits_<noun>_<unit>`, counters end in `_total`, durations are in seconds. Most values are read at scrape
 * time (prom-client `collect()` callbacks) from what the scheduler and the API client already count; the
 * attempt counter and duration histogram are fed by the scheduler's `onAttempt` hook.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

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
    return { cycles: st.cycles, bound: st.bound, bindErrors: st.bindErrors, gangsBound: st.gangsBound, rollbacks: st.rollbacks, recoveries: st.recoveries, pendingPods: s.cache.pending.size, nodes: s.cache.nodeCount, gpus, gpusAllocated, leader: s.isLeader() };
  };
}

/** Before a scheduler is attached every series reads 0. */
const NO_SCHEDULER: SchedulerStats = { cycles: 0, bound: 0, bindErrors: 0, gangsBound: 0, rollbacks: 0, recoveries: 0, pendingPods: 0, nodes: 0, gpus: 0, gpusAllocated: 0, leader: false };

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

/** Seconds: a single pod decision takes well under a millisecond on a small cluster, a large gang can take seconds. */
export const ATTEMPT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface SitsMetricsOptions {
  readonly version?: string;
  /** Process start, seconds since the epoch. */
  readonly startTimeSeconds?: number;
}

const RESULTS: readonly AttemptResult[] = ['scheduled', 'unschedulable'];

export class SitsMetrics {
  /** Its own registry, not prom-client's global one: several SitsMetrics may live in one process (tests). */
  readonly registry = new Registry();
  private source: SchedulerStatsSource | undefined;
  private client: ClientView | undefined;
  private snapshot: SchedulerStats | undefined;
  private readonly attempts: Counter<'result'>;
  private readonly duration: Histogram<'result'>;

  constructor(opts: SitsMetricsOptions = {}) {
    const registers = [this.registry];
    const counter = (name: string, help: string, read: () => number): void =>
      void new Counter({
        name,
        help,
        registers,
        collect() {
          // A counter has no set(): the total lives in the scheduler, so start from 0 at every scrape.
          this.reset();
          this.inc(read());
        },
      });
    const gauge = (name: string, help: string, read: () => number): void =>
      void new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    const s = (): SchedulerStats => this.stats();

    this.attempts = new Counter({ name: METRIC.attempts, help: 'Scheduling attempts (one pod, or one gang) by result.', labelNames: ['result'], registers });
    this.duration = new Histogram({ name: METRIC.attemptDuration, help: 'Time to decide one scheduling attempt (one pod, or one gang including its binding), by result.', buckets: ATTEMPT_BUCKETS, labelNames: ['result'], registers });
    // Both results show (at 0) before the first attempt.
    for (const result of RESULTS) {
      this.attempts.inc({ result }, 0);
      this.duration.zero({ result });
    }
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
    new Gauge({ name: METRIC.buildInfo, help: 'Always 1; the labels say which build runs.', labelNames: ['version'], registers }).set({ version: opts.version ?? 'unknown' }, 1);
    new Gauge({ name: METRIC.startTime, help: 'Start time of the process, seconds since the Unix epoch.', registers }).set(opts.startTimeSeconds ?? 0);
  }

  /** Starts reading from a running scheduler and its client, and receives its attempt durations. */
  attach(scheduler: SchedulerView, client?: ClientView): void {
    this.attachSource(schedulerStatsOf(scheduler), client);
    scheduler.onAttempt = (seconds, result) => this.observeAttempt(seconds, result);
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
}
