/**
 * A simulated cluster that feeds the dashboard: jobs arrive and finish in virtual time, the scheduling spine
 * runs its queue cycles (quotas, fair share, reservations, preemption — as `sits run` does), and the view input
 * carries each waiting job's last wait and, when asked for, the forward run's expected start. The host moves
 * virtual time on (`advanceTo`, `step`) at whatever pace it likes: `sits demo --serve` ties it to the wall clock,
 * `sits bench dashboard` steps it one event at a time. Deterministic for the same nodes, jobs and seed.
 */
import { estimateStarts } from '../core/actions/eta.ts';
import { startedJob, type QueuedJob, type RunningJob } from '../core/actions/jobs.ts';
import type { Waiting } from '../core/actions/queue-cycle.ts';
import { shapesOf } from '../core/estimate/expected-workload.ts';
import type { NodeSpec } from '../core/model/node.ts';
import type { GangSpec, PodSpec } from '../core/model/pod.ts';
import { seededRng } from '../core/ports.ts';
import type { QueueSpec } from '../core/queue/model.ts';
import type { ClusterState } from '../core/snapshot/cluster-state.ts';
import { Environment } from '../sim/engine.ts';
import { simAppOrThrow, type SimApp } from '../app/sim-app.ts';
import { simViewInput, type ViewSourceInput } from './cluster-view-sources.ts';

/** A job of the replay: a gang (a single pod is a gang of one) arriving at `arrivalMs` and running `durationMs`. */
export interface FeedJob {
  readonly id: string;
  readonly arrivalMs: number;
  readonly durationMs: number;
  readonly gang: GangSpec;
}

export interface SimFeedOptions {
  readonly nodes: readonly NodeSpec[];
  readonly jobs: readonly FeedJob[];
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly seed: number;
  readonly profile?: string;
  /** Expected starts by a forward run at most this often (virtual ms); undefined = none (large clusters). */
  readonly etaEveryMs?: number;
  /** Explain why each waiting job does not fit (default true; a pass over the nodes per failed job). */
  readonly explain?: boolean;
}

type Ev = { kind: 'arrive'; job: FeedJob } | { kind: 'finish'; id: string; version: number } | { kind: 'cycle' };

/** Virtual ms between periodic passes while jobs wait (the live scheduler's re-look at parked work). */
const PASS_MS = 60_000;

export class SimFeed {
  readonly app: SimApp;
  private readonly env: Environment<Ev>;
  private readonly pending = new Map<string, QueuedJob>();
  private readonly running = new Map<string, RunningJob>();
  private readonly waits = new Map<string, Waiting>();
  private readonly startedAt = new Map<string, number>();
  private readonly versions = new Map<string, number>();
  private readonly byId: ReadonlyMap<string, FeedJob>;
  private eta = new Map<string, number>();
  /** Jobs the last forward run looked at (a job it found no start for within the horizon is not asked again at once). */
  private estimated = new Set<string>();
  private etaAtMs = Number.NEGATIVE_INFINITY;
  private cycleQueued = false;
  private readonly remainingJobs: number;
  /** Jobs that have started at least once, and events handled. */
  readonly stats = { started: 0, finished: 0, preempted: 0, events: 0 };

  constructor(private readonly o: SimFeedOptions) {
    const pods: PodSpec[] = o.jobs.flatMap((j) => j.gang.members);
    this.app = simAppOrThrow({ nodes: o.nodes, profile: o.profile ?? 'sits', typicalShapes: shapesOf(pods), rng: seededRng(o.seed) });
    this.byId = new Map(o.jobs.map((j) => [j.id, j]));
    this.remainingJobs = o.jobs.length;
    this.env = new Environment<Ev>((e, en) => this.handle(e.payload, en));
    for (const j of o.jobs) this.env.at(j.arrivalMs, 1, { kind: 'arrive', job: j });
  }

  get nowMs(): number {
    return this.env.nowMs;
  }
  get state(): ClusterState {
    return this.app.state;
  }
  /** Events still to come (0: the replay is over). */
  get eventsLeft(): number {
    return this.env.pending;
  }
  get waiting(): number {
    return this.pending.size;
  }
  get jobs(): number {
    return this.remainingJobs;
  }

  /** Runs every event up to virtual time `ms`. */
  advanceTo(ms: number): void {
    this.env.run(ms);
    this.refreshEta();
  }

  /** Runs the next event (with its cycle); false when none is left. */
  step(): boolean {
    const ok = this.env.step();
    // An arrival or finish queues a cycle at the same instant: run it too, so each step is one visible change.
    if (ok) this.env.run(this.env.nowMs);
    this.refreshEta();
    return ok;
  }

  /** The dashboard's input now. */
  input(): ViewSourceInput {
    return simViewInput({
      nowMs: this.env.nowMs,
      state: this.app.state,
      queues: this.o.queues,
      pending: [...this.pending.values()],
      waiting: this.waits,
      eta: this.eta,
      startedMs: this.startedAt,
    });
  }

  private queued(j: FeedJob, arrivalMs: number): QueuedJob {
    return { id: j.id, queue: j.gang.queue, priority: j.gang.priority, arrivalMs, gang: j.gang, estRuntimeMs: j.durationMs };
  }

  private enqueue(j: QueuedJob, nowMs: number): void {
    this.pending.set(j.id, j);
    this.app.queue.add(j, nowMs);
    this.app.queue.onEvent({ kind: 'arrived', queue: j.queue }, nowMs);
  }

  private handle(ev: Ev, en: Environment<Ev>): void {
    this.stats.events++;
    const now = en.nowMs;
    if (ev.kind === 'arrive') this.enqueue(this.queued(ev.job, now), now);
    else if (ev.kind === 'finish') {
      const r = this.running.get(ev.id);
      if (r === undefined || this.versions.get(ev.id) !== ev.version) return;
      this.app.end(r.podIds);
      this.running.delete(ev.id);
      this.startedAt.delete(ev.id);
      this.stats.finished++;
      this.app.queue.onEvent({ kind: 'freed' }, now);
    } else {
      this.cycleQueued = false;
      this.cycle(now, en);
      return;
    }
    if (!this.cycleQueued) {
      this.cycleQueued = true;
      en.schedule(0, 9, { kind: 'cycle' });
    }
  }

  private cycle(now: number, en: Environment<Ev>): void {
    const res = this.app.spine.cycle({
      nowMs: now,
      scheduler: this.app.scheduler,
      queues: this.o.queues,
      running: this.running,
      options: { explain: this.o.explain ?? true },
    });
    for (const p of res.preempted) {
      // The victim goes back to its queue and runs again from the start (no checkpoints in this replay).
      this.running.delete(p.victim.id);
      this.startedAt.delete(p.victim.id);
      this.versions.set(p.victim.id, (this.versions.get(p.victim.id) ?? 0) + 1);
      this.stats.preempted++;
      const j = this.byId.get(p.victim.id);
      if (j !== undefined) this.enqueue(this.queued(j, now), now);
    }
    for (const [id, w] of res.waiting) this.waits.set(id, w);
    for (const s of res.started) {
      const j = this.byId.get(s.job.id);
      this.pending.delete(s.job.id);
      this.waits.delete(s.job.id);
      this.eta.delete(s.job.id);
      this.stats.started++;
      const model = this.app.state.node(s.placements[0]?.node ?? '')?.spec.gpus[0]?.model;
      this.running.set(s.job.id, startedJob(s.job, s.placements, now, { gpuModel: model }));
      this.startedAt.set(s.job.id, now);
      const version = this.versions.get(s.job.id) ?? 0;
      this.versions.set(s.job.id, version);
      en.schedule(j?.durationMs ?? s.job.estRuntimeMs, 0, { kind: 'finish', id: s.job.id, version });
    }
    for (const d of res.deferred) en.at(d.atMs, 8, { kind: 'cycle' });
    // Waiting work is looked at again a minute later (cooldowns, reservations, reclaim).
    if (this.pending.size > 0 && !this.cycleQueued) {
      this.cycleQueued = true;
      en.schedule(PASS_MS, 9, { kind: 'cycle' });
    }
  }

  /** The forward run's expected starts, at most every `etaEveryMs` of virtual time (and at once for a job without one). */
  private refreshEta(): void {
    const every = this.o.etaEveryMs;
    if (every === undefined || this.pending.size === 0) return;
    const now = this.env.nowMs;
    const fresh = [...this.pending.keys()].some((id) => !this.estimated.has(id));
    if (now - this.etaAtMs < (fresh ? Math.min(every, 60_000) : every)) return;
    this.etaAtMs = now;
    this.estimated = new Set(this.pending.keys());
    this.eta = estimateStarts({
      nowMs: now,
      state: this.app.state,
      profile: this.app.profile,
      rng: seededRng(this.o.seed + 7),
      queues: this.o.queues,
      pending: [...this.pending.values()],
      running: this.running,
      options: { explain: false },
    });
  }
}
