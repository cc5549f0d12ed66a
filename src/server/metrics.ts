/**
 * Every metric of the SITS scheduler process, in one module. Names are `sits_<noun>_<unit>`, counters end
 * in `_total`, durations are in seconds. Most values are read at scrape time from what the scheduler and
 * the API client already count (`LiveScheduler.stats`, its cache, `KubeClient.stats`); the attempt
 * duration histogram is fed by the scheduler's `onAttempt` hook.
 */
import { Registry, type Histogram } from './prometheus.ts';

export type AttemptResult = 'scheduled' | 'unschedulable';

/** What the metrics read from the live scheduler (LiveScheduler satisfies it). */
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

export class SitsMetrics {
  readonly registry = new Registry();
  private scheduler: SchedulerView | undefined;
  private client: ClientView | undefined;
  private readonly attempts = new Map<AttemptResult, number>([
    ['scheduled', 0],
    ['unschedulable', 0],
  ]);
  private readonly duration: Histogram;

  constructor(opts: SitsMetricsOptions = {}) {
    const r = this.registry;
    const s = (): SchedulerView['stats'] | undefined => this.scheduler?.stats;
    r.collected(METRIC.attempts, 'Scheduling attempts (one pod, or one gang) by result.', 'counter', ['result'], () => [...this.attempts].map(([result, v]) => [{ result }, v] as const));
    this.duration = r.histogram(METRIC.attemptDuration, 'Time to decide one scheduling attempt (one pod, or one gang including its binding), by result.', ATTEMPT_BUCKETS, ['result']);
    for (const result of this.attempts.keys()) this.duration.touch({ result });
    r.collected(METRIC.cycles, 'Scheduling cycles run (passes over the pending pods).', 'counter', [], () => s()?.cycles ?? 0);
    r.collected(METRIC.bindings, 'Pods bound through pods/binding.', 'counter', [], () => s()?.bound ?? 0);
    r.collected(METRIC.bindingErrors, 'Bindings the API server refused or that failed.', 'counter', [], () => s()?.bindErrors ?? 0);
    r.collected(METRIC.pendingPods, 'Pods for this scheduler that wait for a node.', 'gauge', [], () => this.scheduler?.cache.pending.size ?? 0);
    r.collected(METRIC.gangsBound, 'Gangs bound all together.', 'counter', [], () => s()?.gangsBound ?? 0);
    r.collected(METRIC.gangRollbacks, 'Gang plans rolled back (nothing of the gang left bound).', 'counter', [], () => s()?.rollbacks ?? 0);
    r.collected(METRIC.gangRecoveries, 'Gang plans of a previous leader completed after a crash.', 'counter', [], () => s()?.recoveries ?? 0);
    r.collected(METRIC.leader, '1 when this replica holds the leader-election Lease (or runs without leader election), else 0.', 'gauge', [], () => (this.scheduler?.isLeader() === true ? 1 : 0));
    r.collected(METRIC.apiRequests, 'Requests sent to the Kubernetes API server (watches not included).', 'counter', [], () => this.client?.stats.requests ?? 0);
    r.collected(METRIC.apiErrors, 'API requests that failed (HTTP status outside 2xx, or no response).', 'counter', [], () => this.client?.stats.errors ?? 0);
    r.collected(METRIC.nodes, 'Nodes the scheduler knows with a valid GPU description.', 'gauge', [], () => this.scheduler?.cache.nodeCount ?? 0);
    r.collected(METRIC.gpus, 'Healthy GPUs on those nodes.', 'gauge', [], () => this.gpus().total);
    r.collected(METRIC.gpusAllocated, 'Healthy GPUs with any part allocated to a pod.', 'gauge', [], () => this.gpus().allocated);
    r.collected(METRIC.buildInfo, 'Always 1; the labels say which build runs.', 'gauge', ['version'], () => [[{ version: opts.version ?? 'unknown' }, 1]]);
    r.collected(METRIC.startTime, 'Start time of the process, seconds since the Unix epoch.', 'gauge', [], () => opts.startTimeSeconds ?? 0);
  }

  /** Starts reading from a running scheduler and its client, and receives its attempt durations. */
  attach(scheduler: SchedulerView, client?: ClientView): void {
    this.scheduler = scheduler;
    this.client = client;
    scheduler.onAttempt = (seconds, result) => this.observeAttempt(seconds, result);
  }

  observeAttempt(seconds: number, result: AttemptResult): void {
    this.attempts.set(result, (this.attempts.get(result) ?? 0) + 1);
    this.duration.observe(seconds, { result });
  }

  private gpus(): { total: number; allocated: number } {
    let total = 0;
    let allocated = 0;
    if (this.scheduler === undefined) return { total, allocated };
    // state() may rebuild the cache's ClusterState after a node change: work the next cycle would do anyway.
    for (const n of this.scheduler.cache.state().nodes) {
      for (let g = 0; g < n.gpuUsable.length; g++) {
        if (n.gpuUsable[g] !== 1) continue;
        total++;
        if ((n.gpuFree[g] as number) < 1000) allocated++;
      }
    }
    return { total, allocated };
  }

  render(): string {
    return this.registry.render();
  }
}
