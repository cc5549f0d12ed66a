/**
 * The controllers' metrics under controller-runtime's names, so the dashboards and alerts written for
 * controller-runtime operators (kubebuilder, Kueue) read SITS as they are: reconciles by result, their errors and
 * durations per controller, and each work queue's depth, adds and wait. One instance per registry; every
 * ControllerRunner given it adds its own `controller` / `name` label value (the primary kind, lower case).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** controller-runtime's result label values. */
export type ReconcileResult = 'success' | 'error' | 'requeue' | 'requeue_after';

/** What a work queue reports (kube/client/work-queue.ts). */
export interface QueueObserver {
  added(): void;
  /** A key left the queue for a worker after waiting `seconds`. */
  started(seconds: number): void;
}

// controller-runtime's buckets: reconcile time 5 ms .. 60 s; queue wait 1 µs .. 10^3 s (exponential, factor 10).
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10,
  15, 20, 25, 30, 40, 50, 60,
];
const QUEUE_BUCKETS = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000];

export class ControllerMetrics {
  private readonly reconciles: Counter<'controller' | 'result'>;
  private readonly errors: Counter<'controller'>;
  private readonly reconcileTime: Histogram<'controller'>;
  private readonly adds: Counter<'name'>;
  private readonly queueDuration: Histogram<'name'>;
  /** Depth read at scrape time from each queue. */
  private readonly depths = new Map<string, () => number>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.reconciles = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.errors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.adds = new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: ['name'], registers });
    this.queueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    const depths = this.depths;
    new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, depth] of depths) this.set({ name }, depth());
      },
    });
  }

  /** Registers controller `name`: its depth is read from `depth` at each scrape; returns what its queue reports to. */
  register(name: string, depth: () => number): QueueObserver {
    this.depths.set(name, depth);
    // Series exist from the start (at 0), as controller-runtime's do, so rate() works from the first scrape.
    this.adds.inc({ name }, 0);
    this.errors.inc({ controller: name }, 0);
    for (const result of ['success', 'error', 'requeue', 'requeue_after'] as const) this.reconciles.inc({ controller: name, result }, 0);
    return { added: () => this.adds.inc({ name }), started: (s) => this.queueDuration.observe({ name }, s) };
  }

  reconciled(controller: string, result: ReconcileResult, seconds: number): void {
    this.reconciles.inc({ controller, result });
    if (result === 'error') this.errors.inc({ controller });
    this.reconcileTime.observe({ controller }, seconds);
  }
}
