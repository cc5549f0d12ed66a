/**
 * What the live scheduler tells its metrics: events as they happen (`LiveObserver`, called from the cycle and
 * the binder) and what is read at scrape time (`LiveMetricsView`). Both are plain data and callbacks, so the
 * scheduler knows nothing of Prometheus (server/metrics.ts does).
 */
import type { QueuedJob, RunningJob } from '../../core/actions/jobs.ts';
import type { ExtensionTimer } from '../../core/framework/types.ts';
import type { TypicalShape } from '../../core/estimate/typical-shapes.ts';
import type { QueueSpec } from '../../core/queue/model.ts';
import type { QueueCounts } from '../../core/queue/scheduling-queue.ts';
import type { ClusterState } from '../../core/snapshot/cluster-state.ts';

/**
 * Why victims were preempted, a closed set (the cycle's own reason is free text): `priority` = by a
 * higher-priority job of their own queue, `reclaim` = by a queue under its fair share taking GPUs back.
 */
export type PreemptionReason = 'priority' | 'reclaim';

export interface LiveObserver {
  /** Times the framework's extension points of the live cycles (not forward runs or explanations). */
  readonly extension?: ExtensionTimer;
  /** A job started `waitSeconds` after it arrived. */
  readonly admitted?: (queue: string, waitSeconds: number) => void;
  /** One preemptor job evicted `victims` running jobs for `reason`. */
  readonly preempted?: (reason: PreemptionReason, victims: number) => void;
  /** A job started `seconds` after (negative: before) the expected start SITS last published for it. */
  readonly startError?: (seconds: number) => void;
  /** One pods/binding call took `seconds`. */
  readonly bound?: (seconds: number, ok: boolean) => void;
}

/** The scheduler's state for one scrape. */
export interface LiveMetricsView {
  readonly state: ClusterState;
  readonly queues: ReadonlyMap<string, QueueSpec>;
  /** Jobs waiting after the last cycle (those it started left out). */
  readonly pending: readonly QueuedJob[];
  /** Jobs of this scheduler with bound pods now. */
  readonly running: readonly RunningJob[];
  /** The expected workload the fragmentation is measured against (the profile's typical shapes). */
  readonly shapes: readonly TypicalShape[];
  /** The scheduling queue's entries by where they wait (kube-scheduler's pending_pods{queue}). */
  readonly queueCounts: QueueCounts;
}
