/**
 * The simulated cluster behind the ports: what a kube-apiserver and its kubelets are to the live scheduler.
 * It knows the pods the host created, binds them (all members of a batch or none), evicts them, and keeps
 * what the scheduler said about each (events, PodScheduled condition, expected start). Decisions reach it
 * only through the ports, from committed statements; the host learns of them through the hooks (a bound
 * job starts running, an evicted one goes back to its queue) — as a live host learns from its watches.
 *
 * The scheduler's ClusterState is the simulator's cache and snapshot at once: a committed statement has
 * already applied its steps to it, and the simulated cluster confirms them at once (no watch latency).
 */
import type { BindBatch, BindRequest, Binder, ClusterPorts, EventSink, Evictor, SchedulingEvent, StatusWriter } from '../core/ports.ts';

export interface SimClusterHooks {
  /** A batch was bound (every member of it). */
  readonly onBind?: (batch: BindBatch) => void;
  /** Pods were evicted (a preemption victim's). */
  readonly onEvict?: (podIds: readonly string[], reason: string) => void;
}

export interface SimClusterOptions {
  /** Keep every event (tests, scenario logs); off in benchmarks. */
  readonly recordEvents?: boolean;
  /**
   * Refuse bindings of pods the host never created (`create`), as an API server would (404); off by default:
   * hosts that replay traces create nothing.
   */
  readonly strictPods?: boolean;
}

export class SimCluster {
  private readonly known = new Set<string>();
  readonly bound = new Map<string, BindRequest>();
  readonly events: SchedulingEvent[] = [];
  readonly unschedulable = new Map<string, string>();
  readonly expected = new Map<string, number>();
  readonly stats = { bound: 0, evicted: 0, refused: 0 };
  readonly ports: ClusterPorts;

  constructor(
    private readonly hooks: SimClusterHooks = {},
    private readonly opts: SimClusterOptions = {},
  ) {
    const binder: Binder = { bind: (b) => this.bind(b) };
    const evictor: Evictor = { evict: (p, r) => this.evict(p, r) };
    const events: EventSink = { emit: (e) => this.emit(e) };
    const status: StatusWriter = {
      unschedulable: (pods, message) => {
        for (const p of pods) if (!this.bound.has(p)) this.unschedulable.set(p, message);
      },
      expectedStart: (pods, atMs) => {
        for (const p of pods) this.expected.set(p, atMs);
      },
    };
    this.ports = { binder, evictor, events, status };
  }

  /** The host submitted these pods (only checked with `strictPods`). */
  create(podIds: readonly string[]): void {
    for (const p of podIds) this.known.add(p);
  }

  /** A pod ended or was deleted by the host (not by the scheduler). */
  remove(podIds: readonly string[]): void {
    for (const p of podIds) {
      this.known.delete(p);
      this.bound.delete(p);
      this.unschedulable.delete(p);
      this.expected.delete(p);
    }
  }

  exists(podId: string): boolean {
    return this.opts.strictPods === true ? this.known.has(podId) : this.bound.has(podId) || this.known.has(podId);
  }

  private bind(batch: BindBatch): void {
    // Victims of the same statement were evicted first (commit order): nothing to wait for here.
    if (this.opts.strictPods === true && !batch.requests.every((r) => this.known.has(r.podId))) {
      this.stats.refused++;
      return;
    }
    for (const r of batch.requests) {
      this.bound.set(r.podId, r);
      this.unschedulable.delete(r.podId);
      this.expected.delete(r.podId);
      this.stats.bound++;
      if (this.opts.recordEvents === true)
        this.events.push({
          kind: 'Scheduled',
          subject: r.podId,
          message: `Successfully assigned ${r.podId} to ${r.node} (GPUs ${r.gpus.join(',') || 'none'}${batch.gang === undefined ? '' : `; gang ${batch.gang}`})`,
        });
    }
    this.hooks.onBind?.(batch);
  }

  private evict(podIds: readonly string[], reason: string): void {
    for (const p of podIds) {
      this.bound.delete(p);
      this.known.delete(p);
      this.stats.evicted++;
    }
    this.hooks.onEvict?.(podIds, reason);
  }

  private emit(e: SchedulingEvent): void {
    if (this.opts.recordEvents === true) this.events.push(e);
  }
}
