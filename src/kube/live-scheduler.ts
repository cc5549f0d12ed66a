/**
 * The live SITS scheduler, kube-scheduler's shape around the core's spine:
 *   informers → cache → per-cycle snapshot → pod→job translation → scheduling queue → queue cycle
 *   → statements committed to the Binder / Evictor → StatusWriter and EventSink, then the ETA publisher.
 * One path with or without Queue objects (without them each pod is in its queue label's default queue), so
 * preemption and reservations work for every pod. Only the leader cycles; a new leader first completes or
 * undoes the gang plans a previous one left (ADR 0006). Pods of other schedulers count as allocated.
 */
import { formatProfileError, resolveProfile } from '../core/framework/registry.ts';
import { Scheduler } from '../core/framework/scheduler.ts';
import type { Profile } from '../core/framework/types.ts';
import { blendShapes, shapesOf, WHOLE_GPU_PRIOR } from '../core/estimate/expected-workload.ts';
import type { QueuedJob } from '../core/actions/jobs.ts';
import type { CycleResult } from '../core/actions/queue-cycle.ts';
import { DEFAULT_RUNTIME_MODEL } from '../core/estimate/runtime.ts';
import type { TypicalShape } from '../core/plugins/fgd/fragmentation.ts';
import type { PodSpec } from '../core/model/pod.ts';
import { seededRng, type Clock, type Rng, type TraceSpan } from '../core/ports.ts';
import { LIVE_QUEUE_TIMING, SchedulingQueue } from '../core/queue/scheduling-queue.ts';
import type { ClusterState } from '../core/snapshot/cluster-state.ts';
import { SchedulingSpine } from '../core/spine/scheduling-spine.ts';
import { commitToPorts } from '../core/statement/commit-to-ports.ts';
import type { KubeClient } from './client.ts';
import { KubeBinder } from './binder.ts';
import { budgetsOf } from './disruption-budgets.ts';
import { ClusterCache } from './cluster-cache.ts';
import { EtaPublisher } from './eta-publisher.ts';
import { KubeEventSink } from './event-sink.ts';
import { KubeEvictor } from './evictor.ts';
import { explainTarget, type ExplainReport } from './explain.ts';
import { startInformers, type Informers } from './informers.ts';
import { SCHEDULER_NAME } from '../api/wire.ts';
import { LeaderElector } from './leader.ts';
import type { LiveMetricsView, LiveObserver } from './live-observer.ts';
import { PodJobs, type JobsView } from './pod-jobs.ts';
import { queueFromObject, runningJobs } from './queues.ts';
import { KubeStatusWriter } from './status-writer.ts';
import { NO_TRACING, withTraceIds, type Tracing } from './tracing.ts';

export type { ExplainReport } from './explain.ts';
export type { PodGroupObject } from './pod-jobs.ts';

export interface LiveOptions {
  readonly profile?: string;
  readonly schedulerName?: string;
  readonly identity: string;
  /** Lease namespace; undefined = no leader election (single replica). */
  readonly leaseNamespace?: string;
  readonly leaseDurationSec?: number;
  readonly events?: boolean;
  /** Watch only, never schedule or lead (used by `sits explain`). */
  readonly passive?: boolean;
  readonly log?: (msg: string) => void;
  /** Wall clock (default Date.now). */
  readonly clock?: Clock;
  /** Randomness for the scheduler and its forward runs (default seeded: the same choices on every run). */
  readonly rng?: (purpose: 'scheduler' | 'forward-run') => Rng;
  /** Test seam of the binder (see KubeBinderOptions.afterGangMemberBound). */
  readonly afterGangMemberBound?: (count: number) => void;
  /** Spans of cycles, attempts and preemptions (default off); log lines written inside one carry its ids. */
  readonly tracing?: Tracing;
}

/** Longest idle wait of the loop: backoffs and hint times are looked at least this often. */
const LOOP_TICK_MS = 1000;

/** The Clock port on the wall clock (ms since the epoch). */
export const WALL_CLOCK: Clock = { nowMs: () => Date.now() };
const DEFAULT_RNG = (purpose: 'scheduler' | 'forward-run'): Rng => seededRng(purpose === 'scheduler' ? 1 : 7);

export class LiveScheduler {
  readonly cache: ClusterCache;
  readonly jobs: PodJobs;
  readonly queue: SchedulingQueue;
  readonly binder: KubeBinder;
  readonly evictor: KubeEvictor;
  readonly events: KubeEventSink;
  readonly status: KubeStatusWriter;
  private readonly spine: SchedulingSpine;
  private readonly eta: EtaPublisher;
  private readonly counters = { preemptions: 0, cycles: 0, failedAttempts: 0 };
  private informers: Informers | undefined;
  private leader: LeaderElector | undefined;
  private scheduler: Scheduler | undefined;
  private profile: Profile | undefined;
  private profileShapesKey = '';
  private profileAtMs = 0;
  private queuesChanged = false;
  /** Watch events since the last cycle (start: the first cycle sees everything listed). */
  private changed = true;
  /** A new leader's first turn always cycles. */
  private recoveredJustNow = false;
  private readonly shortReported = new Map<string, string>();
  /** Pod uids of each queued job, to tell recreated pods from the ones already told. */
  private readonly podUids = new Map<string, string>();
  private wake: (() => void) | undefined;
  private stopped = false;
  private recovered = false;
  private loopDone: Promise<void> | undefined;
  /** Called after each cycle once per job tried, with the cycle's time per job; for metrics. */
  onAttempt: ((seconds: number, result: 'scheduled' | 'unschedulable') => void) | undefined;
  /** Admissions, preemptions, expected-start errors, extension-point and binding times; for metrics. */
  observer: LiveObserver | undefined;
  /** The last cycle's view and the jobs it started, for `metricsView()`. */
  private lastView: JobsView | undefined;
  private lastStarted: ReadonlySet<string> = new Set();
  private profileShapes: readonly TypicalShape[] = WHOLE_GPU_PRIOR;
  /** Called after every watch event and every loop turn that cycled; for the dashboard's live view (reads only). */
  onChange: (() => void) | undefined;
  private readonly schedulerName: string;
  private readonly log: (m: string) => void;
  private readonly clock: Clock;
  private readonly rng: (purpose: 'scheduler' | 'forward-run') => Rng;
  private readonly tracing: Tracing;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: LiveOptions,
  ) {
    this.schedulerName = opts.schedulerName ?? SCHEDULER_NAME;
    this.tracing = opts.tracing ?? NO_TRACING;
    this.log = withTraceIds(this.tracing, opts.log ?? (() => undefined));
    this.clock = opts.clock ?? WALL_CLOCK;
    this.rng = opts.rng ?? DEFAULT_RNG;
    const nowMs = (): number => this.clock.nowMs();
    this.cache = new ClusterCache(this.schedulerName, this.log);
    this.jobs = new PodJobs(this.cache, this.schedulerName, this.clock);
    this.events = new KubeEventSink(client, this.cache, { component: this.schedulerName, instance: opts.identity, enabled: opts.events !== false, log: this.log, nowMs });
    this.status = new KubeStatusWriter(client, this.cache, { log: this.log, nowMs });
    this.binder = new KubeBinder(client, this.cache, { schedulerName: this.schedulerName, events: this.events, log: this.log, nowMs, requeued: () => this.noteChange(), bound: (seconds, ok) => this.observer?.bound?.(seconds, ok), ...(opts.afterGangMemberBound === undefined ? {} : { afterGangMemberBound: opts.afterGangMemberBound }) });
    this.evictor = new KubeEvictor(client, { log: this.log, nowMs });
    this.queue = new SchedulingQueue(LIVE_QUEUE_TIMING);
    this.spine = new SchedulingSpine(this.queue, { events: this.events, status: this.status });
    this.eta = new EtaPublisher(this.jobs, this.status, () => this.rng('forward-run'));
  }

  get stats(): { preemptions: number; cycles: number; bound: number; bindErrors: number; failedAttempts: number; gangsBound: number; rollbacks: number; recoveries: number } {
    const b = this.binder.stats;
    return { ...this.counters, bound: b.bound, bindErrors: b.bindErrors, gangsBound: b.gangsBound, rollbacks: b.rollbacks, recoveries: b.recoveries };
  }

  get runtimes(): PodJobs['runtimes'] {
    return this.jobs.runtimes;
  }

  isLeader(): boolean {
    return this.leader === undefined ? true : this.leader.isLeader();
  }

  async start(): Promise<void> {
    this.informers = await startInformers(this.client, this.cache, this.jobs, { changed: () => this.noteChange(), queuesChanged: () => (this.queuesChanged = true), log: this.log });
    if (this.opts.passive === true) return;
    if (this.opts.leaseNamespace !== undefined) {
      this.leader = new LeaderElector(this.client, {
        namespace: this.opts.leaseNamespace,
        name: this.schedulerName,
        identity: this.opts.identity,
        ...(this.opts.leaseDurationSec === undefined ? {} : { leaseDurationSec: this.opts.leaseDurationSec, renewDeadlineSec: Math.max(1, this.opts.leaseDurationSec * 0.66), retryPeriodSec: Math.max(0.5, this.opts.leaseDurationSec / 7) }),
        log: this.log,
        onStartedLeading: () => {
          this.recovered = false;
          this.poke();
        },
      });
      this.leader.start();
    }
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.poke();
    this.informers?.stop();
    await this.loopDone;
    await Promise.allSettled([this.binder.drain(), this.evictor.drain(), this.events.drain(), this.status.drain()]);
    await this.leader?.stop(true);
  }

  /** Resolves when no job waits to be tried and no binding is in flight (tests, benchmarks). */
  async idle(timeoutMs = 60_000): Promise<boolean> {
    const end = performance.now() + timeoutMs;
    while (performance.now() < end) {
      if (this.binder.busy === 0 && !this.queue.hasActive() && this.everyPendingPodQueued()) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }

  private everyPendingPodQueued(): boolean {
    for (const p of this.cache.pending.values()) {
      const id = p.spec.gang === undefined ? p.key : `gang:${p.spec.gang}`;
      if (!this.queue.has(id) && !this.shortReported.has(id)) return false;
    }
    return true;
  }

  /** What the metrics read at scrape time; reads the cache, changes nothing (O(pods) for the running jobs). */
  metricsView(): LiveMetricsView {
    const state = this.cache.state();
    const running = runningJobs(this.cache.allPods(), this.schedulerName, this.jobs.groupQueue, DEFAULT_RUNTIME_MODEL.fallbackMs, (n) => state.node(n)?.spec.gpus[0]?.model);
    const v = this.lastView;
    // The Queue objects as watched now (the last view's may predate a new queue: its series show before its first job).
    const queues = new Map([...this.jobs.queueObjs.values()].map((o) => queueFromObject(o)).map((q) => [q.name, q]));
    return { state, queues, pending: v === undefined ? [] : v.jobs.filter((j) => !this.lastStarted.has(j.id)), running: [...running.values()], shapes: this.profileShapes, queueCounts: this.queue.counts() };
  }

  /** `sits explain` (see explain.ts). */
  explain(target: string, nowMs: number): ExplainReport {
    return explainTarget({ cache: this.cache, jobs: this.jobs, profile: this.profileFor(), schedulerName: this.schedulerName, rng: () => this.rng('forward-run') }, target, nowMs);
  }

  /** A watch event: the next loop turn has a cycle to run. */
  private noteChange(): void {
    this.changed = true;
    this.poke();
    this.onChange?.();
  }

  private poke(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, LOOP_TICK_MS);
      });
      if (this.stopped) break;
      if (!this.isLeader()) continue;
      try {
        if (!this.recovered) {
          await this.binder.recover();
          this.recovered = true;
          this.recoveredJustNow = true;
        }
        this.binder.tick();
        this.cycle();
        this.onChange?.();
      } catch (e) {
        this.log(`cycle: ${(e as Error).stack ?? String(e)}`);
      }
    }
  }

  /**
   * One cycle, synchronous from the snapshot to the last commit: no watch event can land in between (they
   * only mark the cache dirty for the next snapshot). The bindings it commits proceed in the background.
   */
  private cycle(): void {
    const nowMs = this.clock.nowMs();
    // Nothing changed and nothing is due (a backoff, a hint time, an expected-start refresh): an idle turn
    // costs nothing, however many pods the cluster holds.
    if (!this.changed && !this.recoveredJustNow && this.queue.nextWakeMs() > nowMs && this.eta.dueAtMs() > nowMs) return;
    this.changed = false;
    this.recoveredJustNow = false;
    const { state, freed } = this.cache.snapshot();
    if (freed) this.queue.onEvent({ kind: 'freed' }, nowMs);
    if (this.queuesChanged) {
      this.queuesChanged = false;
      this.queue.onEvent({ kind: 'queue-changed' }, nowMs);
    }
    const view = this.jobs.view(state);
    this.lastView = view;
    this.lastStarted = new Set();
    this.sync(view, nowMs);
    this.queue.flush(nowMs);
    if (!this.queue.hasActive()) {
      // Nothing to try: only a due refresh of the expected starts (every queued job waits).
      if (this.eta.dueAtMs() <= nowMs) this.eta.publish(nowMs, state, this.profileFor(), view, new Set(view.jobs.map((j) => j.id)));
      return;
    }
    if (!this.tracing.enabled) return this.tryJobs(nowMs, state, view, undefined);
    // A span for each cycle that tries jobs (watch events that leave nothing to try make none). The binds and
    // evictions it commits run in its context: their log lines carry its trace id.
    this.tracing.run('sits.cycle', { 'sits.scheduler': this.schedulerName, 'sits.cycle': this.counters.cycles + 1 }, (span) => this.tryJobs(nowMs, state, view, span));
  }

  private tryJobs(nowMs: number, state: ClusterState, view: JobsView, span: TraceSpan | undefined): void {
    const sch = this.schedulerFor(state);
    const t0 = performance.now();
    // Every job tried counts as an attempt, as kube-scheduler counts a pod refused at PreFilter (here: quota).
    const tried = this.queue.counts().active;
    // Budgets over every pod of the cache (O(pods × budgets)): computed only when a preemption is planned.
    const budgets = this.jobs.pdbs.size === 0 ? undefined : () => budgetsOf(this.jobs.pdbs.values(), this.cache.allPods());
    const res = this.spine.cycle({ nowMs, scheduler: sch, queues: view.queues, running: view.running, options: { minRuntimeMs: view.minRuntimeMs }, ...(budgets === undefined ? {} : { disruptionBudgets: budgets }) });
    this.counters.cycles++;
    this.counters.preemptions += res.preempted.length;
    const failed = Math.max(0, tried - res.started.length);
    this.counters.failedAttempts += failed;
    span?.set({ 'sits.profile': sch.profile.name, 'sits.nodes': state.size, 'sits.cycle.queued': view.jobs.length, 'sits.cycle.tried': tried, 'sits.cycle.attempted': res.attempted, 'sits.cycle.started': res.started.length, 'sits.cycle.waiting': res.waiting.size, 'sits.cycle.preempted': res.preempted.length });
    if (res.started.length > 0 || res.preempted.length > 0) this.log(startedLine(res));
    if (this.onAttempt !== undefined && tried > 0) {
      const each = (performance.now() - t0) / 1000 / tried;
      for (let i = 0; i < res.started.length; i++) this.onAttempt(each, 'scheduled');
      for (let i = 0; i < failed; i++) this.onAttempt(each, 'unschedulable');
    }
    this.observe(res, view, nowMs);
    this.eta.publish(nowMs, state, sch.profile, view, new Set(res.waiting.keys()), res);
  }

  /** Tells the observer what the cycle did; forgets the expected starts of the jobs it started either way. */
  private observe(res: CycleResult, view: JobsView, nowMs: number): void {
    this.lastStarted = new Set(res.started.map((x) => x.job.id));
    const o = this.observer;
    for (const x of res.started) {
      const at = this.eta.takePublished(x.job.id);
      o?.admitted?.(x.job.queue, Math.max(0, (nowMs - x.job.arrivalMs) / 1000));
      if (at !== undefined) o?.startError?.((nowMs - at) / 1000);
    }
    if (o?.preempted === undefined || res.preempted.length === 0) return;
    const queueOf = new Map(view.jobs.map((j) => [j.id, j.queue]));
    const byPreemptor = new Map<string, { reason: 'priority' | 'reclaim'; victims: number }>();
    for (const p of res.preempted) {
      const e = byPreemptor.get(p.by) ?? { reason: queueOf.get(p.by) === p.victim.queue ? 'priority' : 'reclaim', victims: 0 };
      e.victims++;
      byPreemptor.set(p.by, e);
    }
    for (const e of byPreemptor.values()) o.preempted(e.reason, e.victims);
  }

  /** Feeds the queue from the translation: new jobs arrive, changed ones are replaced, vanished ones withdrawn. */
  private sync(view: JobsView, nowMs: number): void {
    const seen = new Set<string>();
    const arrived = new Set<string>();
    for (const j of view.jobs) {
      seen.add(j.id);
      const old = this.queue.get(j.id);
      if (old === undefined) arrived.add(j.queue);
      // Pods recreated under the same names (a controller's restart) are new objects: they must hear why they wait.
      const uids = (view.podsOf.get(j.id) ?? []).map((p) => p.obj.metadata?.uid ?? '').join(',');
      const recreated = this.podUids.get(j.id) !== uids;
      if (recreated) {
        this.podUids.set(j.id, uids);
        this.spine.forgetReported(j.id);
      }
      this.queue.add(j, nowMs, old === undefined || recreated || signature(old) !== signature(j));
    }
    for (const id of [...this.podUids.keys()]) if (!seen.has(id)) this.podUids.delete(id);
    for (const job of this.queue.forCycle().jobs) if (!seen.has(job.id)) this.spine.withdraw(job.id, nowMs);
    for (const q of arrived) this.queue.onEvent({ kind: 'arrived', queue: q }, nowMs);
    // A gang still short of pods is not a scheduling failure: say so without a Warning, once per change.
    const short = new Set<string>();
    for (const s of view.short) {
      short.add(s.id);
      if (this.shortReported.get(s.id) === s.message) continue;
      this.shortReported.set(s.id, s.message);
      for (const p of s.pods) this.events.emit({ kind: 'WaitingForGang', subject: p.key, message: s.message });
    }
    for (const id of [...this.shortReported.keys()]) if (!short.has(id)) this.shortReported.delete(id);
  }

  /** The profile, re-resolved when the typical pending shapes changed (at most every 30 s). */
  private profileFor(): Profile {
    const now = performance.now();
    const pods: PodSpec[] = [...this.cache.pending.values()].map((p) => p.spec);
    const shapes = blendShapes(shapesOf(pods), WHOLE_GPU_PRIOR, pods.length === 0 ? 0 : 0.7);
    const key = JSON.stringify(shapes.map((s) => [s.cpuMilli, s.gpuMilli, s.gpuCount, s.gpuModels.join('|')]));
    if (this.profile === undefined || (key !== this.profileShapesKey && now - this.profileAtMs > 30_000)) {
      const p = resolveProfile(this.opts.profile ?? 'sits', { typicalShapes: shapes });
      if (!p.ok) throw new Error(formatProfileError(p.error));
      this.profile = p.value;
      this.profileShapes = shapes;
      this.profileShapesKey = key;
      this.profileAtMs = now;
    }
    return this.profile;
  }

  /** The scheduler over this snapshot, committing to the live ports (new when the state or profile changed). */
  private schedulerFor(state: ClusterState): Scheduler {
    const profile = this.profileFor();
    if (this.scheduler === undefined || this.scheduler.state !== state || this.scheduler.profile !== profile) {
      this.scheduler = new Scheduler(profile, state, this.rng('scheduler'), commitToPorts({ binder: this.binder, evictor: this.evictor }), this.tracing);
    }
    this.scheduler.timer = this.observer?.extension;
    return this.scheduler;
  }
}

/** What placement depends on: a changed signature wakes a parked job. */
function signature(j: QueuedJob): string {
  const g = j.gang;
  return `${j.queue}|${j.priority}|${g.minMember}|${g.topology.required ?? ''}|${g.topology.preferred ?? ''}|${j.priorityClass ?? ''}|${g.members.map((m) => m.id).join(',')}`;
}

/** `cycle: started default/p → node-1; gang:ml/train (4 pods) → node-2, node-3; preempted 1` (the first 8 jobs named). */
function startedLine(res: CycleResult): string {
  const shown = res.started.slice(0, 8).map((s) => {
    const nodes = [...new Set(s.placements.map((p) => p.node))];
    const pods = s.placements.length === 1 ? '' : ` (${s.placements.length} pods)`;
    return `${s.job.id}${pods} → ${nodes.slice(0, 4).join(', ')}${nodes.length > 4 ? ` +${nodes.length - 4}` : ''}`;
  });
  const more = res.started.length > 8 ? `; +${res.started.length - 8} more` : '';
  const pre = res.preempted.length === 0 ? '' : `${res.started.length === 0 ? '' : '; '}preempted ${res.preempted.length}`;
  return `cycle: ${res.started.length === 0 ? '' : `started ${shown.join('; ')}${more}`}${pre}`;
}
