/**
 * The scheduling queue (kube-scheduler's, for jobs): every job waiting to start is in exactly one of
 *   - active: tried at the next cycle;
 *   - backoff: failed recently and something that could help has happened, but it waits out its backoff
 *     (initial doubling to max per failed attempt) so that a hot loop cannot form;
 *   - unschedulable: failed, and nothing that could help has happened since ("parked").
 * A parked job records what could help it (its hints, derived from why it waited): events move only the
 * jobs whose hints match, a hint time moves it when that time comes, and after `maxUnschedulableMs` any
 * parked job is retried anyway (kube-scheduler's podMaxInUnschedulablePodsDuration, a safety net).
 *
 * The queue cycle still sees every queued job (for demand, fair-share order and reservations); parked ones
 * come with the wait they got, which the cycle reuses instead of trying them again (see CycleInput.parked).
 * Pure: time comes in as `nowMs` arguments.
 */
import type { QueuedJob } from '../actions/jobs.ts';
import type { Waiting } from '../session/cycle-types.ts';

/** Something that happened in the cluster or the queues, as far as waiting jobs are concerned. */
export type QueueEvent =
  /** Resources were released: a pod ended or was deleted, a node was added or grew, a GPU became healthy. */
  | { readonly kind: 'freed' }
  /** A Queue (quota, weight, policy) was created, changed or deleted. */
  | { readonly kind: 'queue-changed' }
  /** A job joined a queue (changes the demand every fair share is computed from). */
  | { readonly kind: 'arrived'; readonly queue: string }
  /** A waiting job left without starting (deleted): demand fell. */
  | { readonly kind: 'withdrawn'; readonly queue: string }
  /** A job started (its queue's usage rose: a preemption victim or a reclaim may have appeared). */
  | { readonly kind: 'started'; readonly queue: string };

/** What could help a parked job: event kinds (any queue), and a time after which it is retried. */
export interface Hints {
  readonly on: readonly QueueEvent['kind'][];
  readonly atMs?: number;
}

/** The order of jobs is the queue cycle's (fair share across queues, the profile's queue sort inside one). */
export interface SchedulingQueueOptions {
  /** 0 in the simulator: a job woken by an event is tried at once, as the simulator always did. */
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly maxUnschedulableMs: number;
}

/** kube-scheduler's defaults: podInitialBackoffSeconds 1, podMaxBackoffSeconds 10, 5 minutes unschedulable. */
export const LIVE_QUEUE_TIMING = { initialBackoffMs: 1000, maxBackoffMs: 10_000, maxUnschedulableMs: 300_000 } as const;
/** The simulator retries at once what an event may have helped, and never needs the safety net. */
export const SIM_QUEUE_TIMING = { initialBackoffMs: 0, maxBackoffMs: 0, maxUnschedulableMs: Number.POSITIVE_INFINITY } as const;

type Where = 'active' | 'backoff' | 'unschedulable';

interface Entry {
  job: QueuedJob;
  where: Where;
  /** Failed attempts in a row (for the backoff). */
  attempts: number;
  /** Backoff ends (ms). */
  backoffUntilMs: number;
  /** Parked since (ms). */
  parkedAtMs: number;
  hints: Hints | undefined;
  waiting: Waiting | undefined;
  /** Active after a wait that can end by itself then (`Waiting.retryAtMs`). */
  retryAtMs: number | undefined;
}

export interface QueueCounts {
  readonly active: number;
  readonly backoff: number;
  readonly unschedulable: number;
}

export class SchedulingQueue {
  private readonly entries = new Map<string, Entry>();
  private readonly opts: SchedulingQueueOptions;

  constructor(opts: SchedulingQueueOptions) {
    this.opts = opts;
  }

  get size(): number {
    return this.entries.size;
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  get(id: string): QueuedJob | undefined {
    return this.entries.get(id)?.job;
  }

  /**
   * Adds a job, or replaces the queued one with the same id. A new job is active; a changed one that was
   * parked may now fit (a member was added, its request changed) and moves on as after an event that helps.
   * An unchanged one keeps its place.
   */
  add(job: QueuedJob, nowMs: number, changed = true): void {
    const e = this.entries.get(job.id);
    if (e === undefined) {
      this.entries.set(job.id, {
        job,
        where: 'active',
        attempts: 0,
        backoffUntilMs: 0,
        parkedAtMs: 0,
        hints: undefined,
        waiting: undefined,
        retryAtMs: undefined,
      });
      return;
    }
    e.job = job;
    if (changed && e.where === 'unschedulable') this.wake(e, nowMs);
  }

  /** The job left the queue (started, deleted, or no longer ours). */
  delete(id: string): boolean {
    return this.entries.delete(id);
  }

  /**
   * The job waited for `waiting`: with hints it is parked until one of them matches; without, it stays active
   * (tried at the next cycle, e.g. while it holds a reservation or waits for time to pass).
   */
  failed(id: string, waiting: Waiting, hints: Hints | undefined, nowMs: number): void {
    const e = this.entries.get(id);
    if (e === undefined) return;
    e.attempts++;
    e.waiting = waiting;
    e.backoffUntilMs = nowMs + this.backoffMs(e.attempts);
    if (hints === undefined) {
      e.where = 'active';
      e.hints = undefined;
      // Tried at the next cycle; with nothing else happening, that cycle is due when the wait can end by itself.
      e.retryAtMs = waiting.retryAtMs !== undefined && waiting.retryAtMs > nowMs ? waiting.retryAtMs : undefined;
      return;
    }
    e.where = 'unschedulable';
    e.parkedAtMs = nowMs;
    e.hints = hints;
    e.retryAtMs = undefined;
  }

  /** Moves the parked jobs the event could help (to backoff or active). */
  onEvent(ev: QueueEvent, nowMs: number): number {
    let moved = 0;
    for (const e of this.entries.values()) {
      if (e.where !== 'unschedulable' || e.hints === undefined || !e.hints.on.includes(ev.kind)) continue;
      this.wake(e, nowMs);
      moved++;
    }
    return moved;
  }

  /** Time passes: backoffs that ended, hint times that came and parked jobs past the safety net become active. */
  flush(nowMs: number): void {
    for (const e of this.entries.values()) {
      if (e.where === 'backoff' && nowMs >= e.backoffUntilMs) e.where = 'active';
      else if (e.where === 'unschedulable' && ((e.hints?.atMs !== undefined && nowMs >= e.hints.atMs) || nowMs - e.parkedAtMs >= this.opts.maxUnschedulableMs))
        this.wake(e, nowMs);
    }
  }

  /** Whether a cycle has anything to try. */
  hasActive(): boolean {
    for (const e of this.entries.values()) if (e.where === 'active') return true;
    return false;
  }

  /**
   * The earliest time at which a job in backoff or parked with a hint time becomes active, or an active job's
   * wait can end by itself (`Waiting.retryAtMs`): for hosts that otherwise run cycles only on events.
   */
  nextWakeMs(): number {
    let t = Number.POSITIVE_INFINITY;
    for (const e of this.entries.values()) {
      if (e.where === 'backoff') t = Math.min(t, e.backoffUntilMs);
      else if (e.where === 'active' && e.retryAtMs !== undefined) t = Math.min(t, e.retryAtMs);
      else if (e.where === 'unschedulable') t = Math.min(t, e.hints?.atMs ?? Number.POSITIVE_INFINITY, e.parkedAtMs + this.opts.maxUnschedulableMs);
    }
    return t;
  }

  /**
   * What the cycle gets: every queued job (the cycle orders them: fair share across queues, the queue sort
   * inside one), and the jobs it should not try again with the wait they got (parked, or still in backoff).
   */
  forCycle(): { readonly jobs: QueuedJob[]; readonly parked: ReadonlyMap<string, Waiting> } {
    const jobs: QueuedJob[] = [];
    const parked = new Map<string, Waiting>();
    for (const e of this.entries.values()) {
      jobs.push(e.job);
      if (e.where !== 'active' && e.waiting !== undefined) parked.set(e.job.id, e.waiting);
    }
    return { jobs, parked };
  }

  counts(): QueueCounts {
    let active = 0;
    let backoff = 0;
    let unschedulable = 0;
    for (const e of this.entries.values()) {
      if (e.where === 'active') active++;
      else if (e.where === 'backoff') backoff++;
      else unschedulable++;
    }
    return { active, backoff, unschedulable };
  }

  /** The wait the job got at its last failed attempt, whether parked or still active (the dashboard's queue reason). */
  lastWait(id: string): Waiting | undefined {
    return this.entries.get(id)?.waiting;
  }

  /** Where a job is (tests, `sits explain`). */
  whereIs(id: string): Where | undefined {
    return this.entries.get(id)?.where;
  }

  private wake(e: Entry, nowMs: number): void {
    e.hints = undefined;
    e.where = nowMs >= e.backoffUntilMs ? 'active' : 'backoff';
  }

  private backoffMs(attempts: number): number {
    const { initialBackoffMs, maxBackoffMs } = this.opts;
    if (initialBackoffMs <= 0) return 0;
    return Math.min(maxBackoffMs, initialBackoffMs * 2 ** Math.min(30, attempts - 1));
  }
}
