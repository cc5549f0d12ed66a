/**
 * The scheduling spine, the same in every host: the scheduling queue hands the queue cycle every waiting job
 * (parked ones with the wait they got), the cycle decides in statements whose commits reach the cluster
 * through the host's Binder and Evictor (the scheduler's commit target, `commitToPorts`), and the spine
 * then tells the queue what happened (started jobs leave it, waiting ones are parked with the hints of
 * their wait) and the cluster what waits and why (StatusWriter, EventSink).
 *
 *   host events ─► SchedulingQueue ─► runCycle (statements over the snapshot) ─► commit ─► Binder / Evictor
 *                        ▲                                   │
 *                        └──── failed(hints) / delete ◄──────┴──► StatusWriter, EventSink
 *
 * Hosts (the simulator's and the live scheduler's) only keep the queue fed (jobs arriving, leaving, events)
 * and the running jobs current, and call `cycle`.
 */
import type { DisruptionBudget } from '../actions/disruption.ts';
import type { RunningJob } from '../actions/jobs.ts';
import { DEFAULT_CYCLE_OPTIONS, runCycle, type CycleOptions, type CycleResult, type Reservation, type Waiting } from '../actions/queue-cycle.ts';
import type { Scheduler } from '../framework/scheduler.ts';
import type { EventSink, StatusWriter } from '../ports.ts';
import type { QueueSpec } from '../queue/model.ts';
import type { Hints, QueueEvent, SchedulingQueue } from '../queue/scheduling-queue.ts';

export interface SpineCycleInput {
  readonly nowMs: number;
  readonly scheduler: Scheduler;
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly running: ReadonlyMap<string, RunningJob>;
  readonly options?: Partial<CycleOptions>;
  /** PodDisruptionBudgets over the running pods (preemption avoids breaking them where it can). */
  readonly disruptionBudgets?: readonly DisruptionBudget[] | (() => readonly DisruptionBudget[]);
  /** Reservations the host holds across cycles (runCycle's `held`). */
  readonly held?: readonly Reservation[];
  /**
   * First-hold times the host read back for its waiting jobs (written through `StatusWriter.heldSince` by this or
   * an earlier leader): a job held before a restart or failover keeps its clock instead of starting it again.
   */
  readonly recordedHolds?: ReadonlyMap<string, number>;
}

/** What the spine says about waiting and preempted pods; the placements go through the scheduler's commit target. */
export interface SpinePorts {
  readonly events: EventSink;
  readonly status: StatusWriter;
}

export class SchedulingSpine {
  /** Last message reported per job, so that an unchanged wait is not written again every cycle. */
  private readonly reported = new Map<string, string>();
  /** When each job was first held for a better placement: the hold's clock (runCycle's `heldSince`, ADR 0191). */
  private readonly heldSince = new Map<string, number>();

  constructor(
    readonly queue: SchedulingQueue,
    private readonly ports: SpinePorts,
  ) {}

  /** One cycle over the queue at `nowMs`. */
  cycle(input: SpineCycleInput): CycleResult {
    const { nowMs } = input;
    const queue = this.queue;
    queue.flush(nowMs);
    const { jobs, parked } = queue.forCycle();
    for (const [id, ms] of input.recordedHolds ?? []) if (!this.heldSince.has(id) && queue.get(id) !== undefined) this.heldSince.set(id, ms);
    const res = runCycle({
      nowMs,
      scheduler: input.scheduler,
      queues: input.queues,
      pending: jobs,
      running: input.running,
      parked,
      ...(input.options === undefined ? {} : { options: input.options }),
      ...(input.disruptionBudgets === undefined ? {} : { disruptionBudgets: input.disruptionBudgets }),
      ...(input.held === undefined || input.held.length === 0 ? {} : { held: input.held }),
      heldSince: this.heldSince,
    });
    const opts = { ...DEFAULT_CYCLE_OPTIONS, ...input.options };
    const startedQueues = new Set<string>();
    for (const s of res.started) {
      queue.delete(s.job.id);
      this.reported.delete(s.job.id);
      this.heldSince.delete(s.job.id);
      startedQueues.add(s.job.queue);
    }
    for (const p of res.preempted) {
      const message = `${p.reason} (whole gang ${p.victim.id} evicted)`;
      for (const pod of p.victim.podIds) this.ports.events.emit({ kind: 'Preempted', subject: pod, message });
    }
    const reserved = new Set(res.reservations.map((r) => r.jobId));
    let wakeAtMs: number | undefined;
    let wakeKnown = false;
    for (const [id, w] of res.waiting) {
      const job = queue.get(id);
      // Not tried this cycle: it stays where it was, with what it was told.
      if (job === undefined || parked.get(id) === w) continue;
      if (w.reason === 'better-placement' && !this.heldSince.has(id)) {
        this.heldSince.set(id, nowMs);
        this.ports.status.heldSince?.(
          job.gang.members.map((m) => m.id),
          nowMs,
        );
      }
      // A job heading its queue with a reservation is looked at every cycle (its reservation must stand).
      if (!wakeKnown) {
        wakeAtMs = opts.preemption ? nextEligibleMs(input.running, input.queues, opts, nowMs) : undefined;
        wakeKnown = true;
      }
      queue.failed(id, w, reserved.has(id) ? undefined : hintsFor(w, opts, wakeAtMs), nowMs);
      // Without a Queue object for it, the job is in its queue label's default queue: the wait speaks for itself.
      // Written in its steady words: a wait retried every cycle whose message counts seconds is written once.
      const steady = w.steadyMessage === undefined ? w : { ...w, message: w.steadyMessage };
      const message = input.queues.has(job.queue) ? heldMessage(job.queue, job.gang.name, steady) : steady.message;
      if (this.reported.get(id) === message) continue;
      this.reported.set(id, message);
      const pods = job.gang.members.map((m) => m.id);
      this.ports.status.unschedulable(pods, message);
      for (const pod of pods) this.ports.events.emit({ kind: 'FailedScheduling', subject: pod, message });
    }
    // Jobs tried before these started did not see their queues' usage: a reclaim may now be possible.
    for (const q of startedQueues) queue.onEvent({ kind: 'started', queue: q }, nowMs);
    return res;
  }

  /** The job's pods were replaced (a controller recreated them): tell them why they wait, even in the same words. */
  forgetReported(id: string): void {
    this.reported.delete(id);
  }

  /** A job left without starting (deleted, no longer ours): it no longer counts for demand. */
  withdraw(id: string, nowMs: number): void {
    const job = this.queue.get(id);
    if (job === undefined) return;
    this.queue.delete(id);
    this.reported.delete(id);
    this.heldSince.delete(id);
    this.queue.onEvent({ kind: 'withdrawn', queue: job.queue }, nowMs);
  }
}

/** `queue q holds train-a (capacity): 0/12 nodes fit gang train-a (16×1 GPU): ...` */
export function heldMessage(queue: string, name: string, w: Waiting): string {
  return `queue ${queue} holds ${name} (${w.reason}): ${w.message}`;
}

/**
 * What could change a wait's outcome. Inadmissible: only its queue's spec. Quota or capacity without
 * preemption: released resources (usage falls, room appears) or a changed queue. With preemption — and for
 * a job over its fair share — also whatever changes who may be preempted: a job started (usage above a
 * share), arrived or withdrawn (the fair shares move), or a running job leaving its cooldown (`atMs`).
 * Retried every cycle: a job held behind a reservation (its message counts down to the reserved start), one
 * waiting for a victim's critical phase (time), and jobs holding a reservation (it must stand).
 */
export function hintsFor(w: Waiting, opts: CycleOptions, eligibleAtMs: number | undefined): Hints | undefined {
  switch (w.reason) {
    case 'inadmissible':
      return { on: ['queue-changed'] };
    case 'quota':
    case 'capacity':
    case 'fair-share':
      if (!opts.preemption) return { on: ['freed', 'queue-changed'] };
      return eligibleAtMs === undefined ? { on: ANY_CHANGE } : { on: ANY_CHANGE, atMs: eligibleAtMs };
    case 'reservation':
    case 'better-placement':
    case 'critical-victim':
    case 'checkpoint-victim':
      return undefined;
  }
}

const ANY_CHANGE: readonly QueueEvent['kind'][] = ['freed', 'queue-changed', 'started', 'arrived', 'withdrawn'];

/** When the next running job leaves its cooldown (becomes a possible victim); undefined when none is in one. */
export function nextEligibleMs(
  running: ReadonlyMap<string, RunningJob>,
  queues: ReadonlyMap<string, QueueSpec>,
  opts: CycleOptions,
  nowMs: number,
): number | undefined {
  let t = Number.POSITIVE_INFINITY;
  for (const r of running.values()) {
    if (!r.preemptible) continue;
    const until = r.startMs + (queues.get(r.queue)?.preemption?.cooldownMs ?? opts.minRuntimeMs);
    if (until > nowMs && until < t) t = until;
  }
  return Number.isFinite(t) ? t : undefined;
}
