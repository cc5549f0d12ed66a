/**
 * The live SITS scheduler, kube-scheduler's shape around the core's spine:
 *   informers → cache → per-cycle snapshot → pod→job translation → scheduling queue → queue cycle
 *   → statements committed to the Binder / Evictor → StatusWriter and EventSink, then the ETA publisher.
 * One path with or without Queue objects (without them each pod is in its queue label's default queue), so
 * preemption and reservations work for every pod. Only the leader cycles; a new leader first completes or
 * undoes the gang plans a previous one left (ADR 0006). Pods of other schedulers count as allocated.
 * Several profiles (ADR 0076) share the cache and each cycle's snapshot; each has its own queue and spine lane.
 * This is the loop only: the collaborators it drives are built and handed in by the composition root
 * (app/live.ts `buildLiveScheduler`).
 */
import { buildProfile, formatProfileError, profileConfig, type ProfileConfig } from '../../core/plugins/registry.ts';
import { Scheduler } from '../../core/framework/scheduler.ts';
import type { Profile } from '../../core/framework/types.ts';
import { blendShapes, shapesOf, WHOLE_GPU_PRIOR } from '../../core/estimate/expected-workload.ts';
import type { QueuedJob } from '../../core/actions/jobs.ts';
import type { CycleResult } from '../../core/actions/queue-cycle.ts';
import { DEFAULT_RUNTIME_MODEL } from '../../core/estimate/runtime.ts';
import type { TypicalShape } from '../../core/estimate/typical-shapes.ts';
import type { PodSpec } from '../../core/model/pod.ts';
import type { Clock, Rng, TraceSpan } from '../../core/ports.ts';
import { LIVE_QUEUE_TIMING, SchedulingQueue } from '../../core/queue/scheduling-queue.ts';
import type { ClusterState } from '../../core/snapshot/cluster-state.ts';
import { SchedulingSpine } from '../../core/spine/scheduling-spine.ts';
import { commitToPorts } from '../../core/statement/commit-to-ports.ts';
import { withDefaultSpread } from '../../core/plugins/inter-pod-affinity/default-spread.ts';
import type { KubeBinder } from '../adapters/binder.ts';
import { budgetsOf } from '../cache/disruption-budgets.ts';
import type { ClusterCache } from '../cache/cluster-cache.ts';
import type { EtaPublisher } from './eta-publisher.ts';
import type { KubeEventSink } from '../adapters/event-sink.ts';
import type { KubeEvictor } from '../adapters/evictor.ts';
import type { KubeCheckpointRequester } from '../adapters/checkpoint-requester.ts';
import type { Defragmenter } from './defragmenter.ts';
import { podFromK8s } from '../cache/labels.ts';
import { explainTarget, type ExplainReport } from './explain.ts';
import type { Informers } from '../cache/informers.ts';
import type { LeaderElector } from './leader.ts';
import type { LiveMetricsView, LiveObserver } from '../telemetry/live-observer.ts';
import { recordedHolds, type GangShort, type JobsView, type PodJobs } from '../cache/pod-jobs.ts';
import type { PendingPod } from '../cache/cluster-cache.ts';
import { queueFromObject, runningJobs } from '../cache/queues.ts';
import type { ObjectStatusWriter } from '../adapters/object-status.ts';
import type { KubeStatusWriter } from '../adapters/status-writer.ts';
import type { Tracing } from '../telemetry/tracing.ts';

export type { ExplainReport } from './explain.ts';
export type { PodGroupObject } from '../cache/pod-jobs.ts';

/** One profile of the process (ADR 0076): the pods with this schedulerName, scheduled with this profile. */
export interface LiveProfile {
  readonly schedulerName: string;
  /** A named profile, or a configuration (`sits run --config`). */
  readonly config: ProfileConfig | string;
}

/** Longest idle wait of the loop: backoffs and hint times are looked at least this often. */
const LOOP_TICK_MS = 1000;

/** The Clock port on the wall clock (ms since the epoch). */
export const WALL_CLOCK: Clock = { nowMs: () => Date.now() };

/** One profile's part of the spine: its queue, its scheduler over the shared snapshot, its expected starts. */
export class Lane {
  readonly queue = new SchedulingQueue(LIVE_QUEUE_TIMING);
  readonly spine: SchedulingSpine;
  readonly eta: EtaPublisher;
  scheduler: Scheduler | undefined;
  profile: Profile | undefined;
  profileShapesKey = '';
  profileShapes: readonly TypicalShape[] = WHOLE_GPU_PRIOR;
  profileAtMs = 0;
  readonly shortReported = new Map<string, string>();
  /** Pod uids of each queued job, to tell recreated pods from the ones already told. */
  readonly podUids = new Map<string, string>();

  constructor(
    readonly schedulerName: string,
    readonly config: ProfileConfig | string,
    ports: { readonly events: KubeEventSink; readonly status: KubeStatusWriter },
    eta: EtaPublisher,
  ) {
    this.spine = new SchedulingSpine(this.queue, ports);
    this.eta = eta;
  }
}

/** What the loop is told about how to run (built by the composition root, app/live.ts). */
export interface LiveSettings {
  /** The first profile's schedulerName: the Lease's name and the running jobs' scheduler in the metrics. */
  readonly schedulerName: string;
  /** Watch only, never schedule or lead (`sits explain`). */
  readonly passive: boolean;
  /** Checkpoint-aware preemption (ADR 0093). */
  readonly checkpointAware: boolean;
  readonly log: (m: string) => void;
  readonly clock: Clock;
  readonly rng: (purpose: 'scheduler' | 'forward-run') => Rng;
  readonly tracing: Tracing;
}

/** The collaborators the loop drives, each built by the composition root (app/live.ts `buildLiveScheduler`). */
export type LiveParts = Pick<LiveScheduler, 'cache' | 'jobs' | 'binder' | 'evictor' | 'checkpoints' | 'defragmenter' | 'events' | 'status' | 'objectStatus'> & {
  /** One per profile, in the order a cycle tries them (the first is the default). */
  readonly lanes: readonly Lane[];
  /** Lists and watches the cluster into the cache (called by `start`). */
  readonly startInformers: () => Promise<Informers>;
  /** Undefined: no leader election (one replica, or passive). */
  readonly leader: LeaderElector | undefined;
  readonly settings: LiveSettings;
};

/** The profiles by schedulerName, and which one schedules a pending pod. */
class Lanes {
  readonly all: readonly Lane[];
  readonly first: Lane;
  private readonly byName: ReadonlyMap<string, Lane>;

  constructor(lanes: readonly Lane[]) {
    if (lanes.length === 0) throw new Error('LiveScheduler: at least one profile (lane)');
    this.all = lanes;
    this.first = lanes[0] as Lane;
    this.byName = new Map(lanes.map((l) => [l.schedulerName, l]));
  }

  /** The profile that schedules a pending pod (by its schedulerName; the first for one profile). */
  of(p: PendingPod): Lane {
    return this.all.length === 1 ? this.first : (this.byName.get(p.obj.spec?.schedulerName ?? '') ?? this.first);
  }
}

/** The loop's own state between turns: what woke it, whether it stops, its pending wake-up. */
class LoopState {
  /** Watch events since the last cycle (start: the first cycle sees everything listed). */
  changed = true;
  queuesChanged = false;
  /** A new leader's first turn always cycles. */
  recoveredJustNow = false;
  recovered = false;
  stopped = false;
  wake: (() => void) | undefined;
  done: Promise<void> | undefined;
}

/** What the cycles did: running counts, and the last cycle's view, starts and reservations (metrics, status). */
class CycleRecord {
  readonly counters = { preemptions: 0, cycles: 0, failedAttempts: 0 };
  /** The last cycle's view and the jobs it started (every profile's), for `metricsView()`. */
  view: JobsView | undefined;
  started = new Set<string>();
  /** Jobs holding a reservation after the last cycle, per profile (for the Queue status). */
  readonly reserving = new Map<string, ReadonlySet<string>>();
}

export class LiveScheduler {
  readonly cache: ClusterCache;
  readonly jobs: PodJobs;
  readonly binder: KubeBinder;
  readonly evictor: KubeEvictor;
  readonly checkpoints: KubeCheckpointRequester;
  /** Defragmentation by migration (ADR 0144): acts only for gangs of a Queue with defragmentByMigration. */
  readonly defragmenter: Defragmenter;
  readonly events: KubeEventSink;
  readonly status: KubeStatusWriter;
  /** Queue and PodGroup status (kubectl's columns), written in the background at most every few seconds. */
  readonly objectStatus: ObjectStatusWriter;
  /** Called after each cycle once per job tried, with the cycle's time per job; for metrics. */
  onAttempt: ((seconds: number, result: 'scheduled' | 'unschedulable') => void) | undefined;
  /** Admissions, preemptions, expected-start errors, extension-point and binding times; for metrics. */
  observer: LiveObserver | undefined;
  /** Called after every watch event and every loop turn that cycled; for the dashboard's live view (reads only). */
  onChange: (() => void) | undefined;
  private readonly lanes: Lanes;
  private readonly settings: LiveSettings;
  private readonly startInformers: () => Promise<Informers>;
  private readonly leader: LeaderElector | undefined;
  private informers: Informers | undefined;
  private readonly loopState = new LoopState();
  private readonly record = new CycleRecord();

  constructor(parts: LiveParts) {
    this.cache = parts.cache;
    this.jobs = parts.jobs;
    this.binder = parts.binder;
    this.evictor = parts.evictor;
    this.checkpoints = parts.checkpoints;
    this.defragmenter = parts.defragmenter;
    this.events = parts.events;
    this.status = parts.status;
    this.objectStatus = parts.objectStatus;
    this.lanes = new Lanes(parts.lanes);
    this.startInformers = parts.startInformers;
    this.leader = parts.leader;
    this.settings = parts.settings;
  }

  /** The first profile's queue (the only one without `profiles`). */
  get queue(): SchedulingQueue {
    return this.lanes.first.queue;
  }

  get stats(): {
    preemptions: number;
    cycles: number;
    bound: number;
    bindErrors: number;
    failedAttempts: number;
    gangsBound: number;
    rollbacks: number;
    recoveries: number;
  } {
    const b = this.binder.stats;
    return { ...this.record.counters, bound: b.bound, bindErrors: b.bindErrors, gangsBound: b.gangsBound, rollbacks: b.rollbacks, recoveries: b.recoveries };
  }

  /**
   * Entries of every structure that lives as long as the process and could grow with churn: the watches' caches,
   * the cluster cache's maps, the pod→job translation's maps, learned runtimes, arrivals, and each profile's queue
   * and bookkeeping (`sits bench soak` samples these; flat under steady churn).
   */
  footprint(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [path, n] of Object.entries(this.informers?.sizes() ?? {})) out[`informer:${path}`] = n;
    for (const [k, n] of Object.entries(this.cache.sizes())) out[`cache.${k}`] = n;
    const arrivals = this.jobs.arrivals.sizes();
    Object.assign(out, {
      'jobs.podGroups': this.jobs.podGroups.size,
      'jobs.queueObjs': this.jobs.queueObjs.size,
      'jobs.pdbs': this.jobs.pdbs.size,
      'runtimes.following': this.jobs.runtimes.following,
      'runtimes.closed': this.jobs.runtimes.closedCount,
      'arrivals.counted': arrivals.counted,
      'arrivals.kept': arrivals.arrivals,
      'record.started': this.record.started.size,
      'binder.busy': this.binder.busy,
      'events.recent': this.events.sizes().recent,
      'events.inFlight': this.events.sizes().inFlight,
    });
    for (const lane of this.lanes.all) {
      const eta = lane.eta.sizes();
      const p = `lane:${lane.schedulerName}`;
      Object.assign(out, {
        [`${p}.queue`]: lane.queue.size,
        [`${p}.shortReported`]: lane.shortReported.size,
        [`${p}.podUids`]: lane.podUids.size,
        [`${p}.eta.estimated`]: eta.estimated,
        [`${p}.eta.published`]: eta.published,
      });
    }
    return out;
  }

  get runtimes(): PodJobs['runtimes'] {
    return this.jobs.runtimes;
  }

  isLeader(): boolean {
    return this.leader === undefined ? true : this.leader.isLeader();
  }

  async start(): Promise<void> {
    this.informers = await this.startInformers();
    if (this.settings.passive) return;
    this.leader?.start();
    this.loopState.done = this.loop();
  }

  /** A watch event or a requeued binding: the next loop turn has a cycle to run. */
  noteChange(): void {
    this.loopState.changed = true;
    this.poke();
    this.onChange?.();
  }

  /** A Queue object changed: queue-held jobs may now be admitted. */
  noteQueuesChanged(): void {
    this.loopState.queuesChanged = true;
  }

  /** This replica just became the leader: complete or undo the previous leader's gang plans first (ADR 0006). */
  startedLeading(): void {
    this.loopState.recovered = false;
    this.poke();
  }

  /** The jobs holding a reservation after the last cycle, every profile's (for the Queue status). */
  reservingJobs(): Set<string> {
    return new Set([...this.record.reserving.values()].flatMap((s) => [...s]));
  }

  async stop(): Promise<void> {
    this.loopState.stopped = true;
    this.poke();
    this.informers?.stop();
    await this.loopState.done;
    await Promise.allSettled([
      this.binder.drain(),
      this.evictor.drain(),
      this.defragmenter.drain(),
      this.checkpoints.drain(),
      this.events.drain(),
      this.status.drain(),
    ]);
    await this.leader?.stop(true);
  }

  /** Resolves when no job waits to be tried and no binding is in flight (tests, benchmarks). */
  async idle(timeoutMs = 60_000): Promise<boolean> {
    const end = performance.now() + timeoutMs;
    while (performance.now() < end) {
      if (this.binder.busy === 0 && this.lanes.all.every((l) => !l.queue.hasActive()) && this.everyPendingPodQueued()) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }

  private everyPendingPodQueued(): boolean {
    for (const p of this.cache.pending.values()) {
      const id = p.spec.gang === undefined ? p.key : `gang:${p.spec.gang}`;
      const lane = this.lanes.of(p);
      if (!lane.queue.has(id) && !lane.shortReported.has(id)) return false;
    }
    return true;
  }

  /** What the metrics read at scrape time; reads the cache, changes nothing (O(pods) for the running jobs). */
  metricsView(): LiveMetricsView {
    const state = this.cache.state();
    const running = runningJobs(
      this.cache.allPods(),
      this.settings.schedulerName,
      this.jobs.groupQueue,
      DEFAULT_RUNTIME_MODEL.fallbackMs,
      (n) => state.node(n)?.spec.gpus[0]?.model,
      this.jobs.inFlight(this.settings.clock.nowMs()),
    );
    const v = this.record.view;
    // The Queue objects as watched now (the last view's may predate a new queue: its series show before its first job).
    const queues = new Map([...this.jobs.queueObjs.values()].map((o) => queueFromObject(o)).map((q) => [q.name, q]));
    const counts = { active: 0, backoff: 0, unschedulable: 0 };
    for (const l of this.lanes.all) {
      const c = l.queue.counts();
      counts.active += c.active;
      counts.backoff += c.backoff;
      counts.unschedulable += c.unschedulable;
    }
    // The fragmentation measure uses the first profile's typical shapes (the only one without `profiles`).
    const shapes = this.lanes.first.profileShapes;
    return {
      state,
      queues,
      pending: v === undefined ? [] : v.jobs.filter((j) => !this.record.started.has(j.id)),
      running: [...running.values()],
      shapes,
      queueCounts: counts,
    };
  }

  /** `sits explain` (see explain.ts). */
  explain(target: string, nowMs: number): ExplainReport {
    const pod =
      this.cache.pending.get(target) ??
      [...this.cache.pending.values()].find((p) => p.spec.gang !== undefined && (p.spec.gang === target || `gang:${p.spec.gang}` === target));
    const lane = pod === undefined ? this.lanes.first : this.lanes.of(pod);
    return explainTarget(
      { cache: this.cache, jobs: this.jobs, profile: this.profileFor(lane), schedulerName: lane.schedulerName, rng: () => this.settings.rng('forward-run') },
      target,
      nowMs,
    );
  }

  private poke(): void {
    const w = this.loopState.wake;
    this.loopState.wake = undefined;
    w?.();
  }

  private async loop(): Promise<void> {
    const st = this.loopState;
    while (!st.stopped) {
      await new Promise<void>((resolve) => {
        st.wake = resolve;
        setTimeout(resolve, LOOP_TICK_MS);
      });
      if (st.stopped) break;
      if (!this.isLeader()) continue;
      try {
        if (!st.recovered) {
          await this.binder.recover();
          st.recovered = true;
          st.recoveredJustNow = true;
        }
        this.binder.tick();
        this.cycle();
        this.defragmenter.tick();
        this.objectStatus.tick(this.settings.clock.nowMs());
        this.onChange?.();
      } catch (e) {
        this.settings.log(`cycle: ${(e as Error).stack ?? String(e)}`);
      }
    }
  }

  /**
   * One cycle, synchronous from the snapshot to the last commit: no watch event can land in between (they
   * only mark the cache dirty for the next snapshot). The bindings it commits proceed in the background.
   */
  private cycle(): void {
    const nowMs = this.settings.clock.nowMs();
    const st = this.loopState;
    // Nothing changed and nothing is due (a backoff, a hint time, an expected-start refresh): an idle turn
    // costs nothing, however many pods the cluster holds.
    if (!st.changed && !st.recoveredJustNow && this.lanes.all.every((l) => l.queue.nextWakeMs() > nowMs && l.eta.dueAtMs() > nowMs)) return;
    st.changed = false;
    st.recoveredJustNow = false;
    const { state, freed } = this.cache.snapshot();
    const queuesChanged = st.queuesChanged;
    st.queuesChanged = false;
    const view = this.jobs.view(state);
    this.record.view = view;
    this.record.started = new Set();
    const views = this.lanes.all.length === 1 ? [view] : this.splitView(view);
    // One snapshot, the profiles in their order: each sees what the ones before it committed (no over-commit).
    this.lanes.all.forEach((lane, i) => this.laneCycle(lane, views[i] as JobsView, state, nowMs, freed, queuesChanged));
  }

  private laneCycle(lane: Lane, raw: JobsView, state: ClusterState, nowMs: number, freed: boolean, queuesChanged: boolean): void {
    const view = this.withDefaultSpread(lane, raw);
    if (freed) lane.queue.onEvent({ kind: 'freed' }, nowMs);
    if (queuesChanged) lane.queue.onEvent({ kind: 'queue-changed' }, nowMs);
    this.sync(lane, view, nowMs);
    lane.queue.flush(nowMs);
    if (!lane.queue.hasActive()) {
      // Nothing to try: only a due refresh of the expected starts (every queued job waits).
      if (lane.eta.dueAtMs() <= nowMs) lane.eta.publish(nowMs, state, this.profileFor(lane), view, new Set(view.jobs.map((j) => j.id)));
      return;
    }
    if (!this.settings.tracing.enabled) return this.tryJobs(lane, nowMs, state, view, undefined);
    // A span for each cycle that tries jobs (watch events that leave nothing to try make none). The binds and
    // evictions it commits run in its context: their log lines carry its trace id.
    this.settings.tracing.run('sits.cycle', { 'sits.scheduler': lane.schedulerName, 'sits.cycle': this.record.counters.cycles + 1 }, (span) =>
      this.tryJobs(lane, nowMs, state, view, span),
    );
  }

  private tryJobs(lane: Lane, nowMs: number, state: ClusterState, view: JobsView, span: TraceSpan | undefined): void {
    const sch = this.schedulerFor(lane, state);
    const t0 = performance.now();
    // Every job tried counts as an attempt, as kube-scheduler counts a pod refused at PreFilter (here: quota).
    const tried = lane.queue.counts().active;
    // Budgets over every pod of the cache (O(pods × budgets)): computed only when a preemption is planned.
    const budgets = this.jobs.pdbs.size === 0 ? undefined : () => budgetsOf(this.jobs.pdbs.values(), this.cache.allPods());
    const held = this.defragmenter.held(nowMs);
    const res = lane.spine.cycle({
      nowMs,
      scheduler: sch,
      queues: view.queues,
      running: view.running,
      ...(held.length === 0 ? {} : { held }),
      options: { minRuntimeMs: view.minRuntimeMs, ...(this.settings.checkpointAware ? { checkpointAware: true } : {}) },
      ...(budgets === undefined ? {} : { disruptionBudgets: budgets }),
      // Holds an earlier leader (or this one before a restart) started: their clocks run on.
      recordedHolds: recordedHolds(view),
    });
    this.record.counters.cycles++;
    this.record.counters.preemptions += res.preempted.length;
    for (const q of res.checkpointRequests) this.checkpoints.request(q.victim.podIds, q.by, q.deadlineMs);
    // Defragmentation by migration, only where a Queue asks for it (listing the running jobs costs O(pods)).
    if ([...view.queues.values()].some((q) => q.preemption?.defragmentByMigration === true)) {
      this.defragmenter.consider({
        nowMs,
        scheduler: sch,
        queues: view.queues,
        jobs: view.jobs,
        waiting: res.waiting,
        running: view.running.values(),
        pod: (k) => this.cache.pod(k),
        specOf: (p) => {
          const r = podFromK8s(p);
          return r.ok ? r.value : undefined;
        },
      });
    }
    const failed = Math.max(0, tried - res.started.length);
    this.record.counters.failedAttempts += failed;
    span?.set({
      'sits.profile': sch.profile.name,
      'sits.nodes': state.size,
      'sits.cycle.queued': view.jobs.length,
      'sits.cycle.tried': tried,
      'sits.cycle.attempted': res.attempted,
      'sits.cycle.started': res.started.length,
      'sits.cycle.waiting': res.waiting.size,
      'sits.cycle.preempted': res.preempted.length,
    });
    if (res.started.length > 0 || res.preempted.length > 0) this.settings.log(startedLine(res));
    if (this.onAttempt !== undefined && tried > 0) {
      const each = (performance.now() - t0) / 1000 / tried;
      for (let i = 0; i < res.started.length; i++) this.onAttempt(each, 'scheduled');
      for (let i = 0; i < failed; i++) this.onAttempt(each, 'unschedulable');
    }
    this.observe(lane, res, view, nowMs);
    this.record.reserving.set(lane.schedulerName, new Set(res.reservations.map((r) => r.jobId)));
    lane.eta.publish(nowMs, state, sch.profile, view, new Set(res.waiting.keys()), res);
  }

  /** Tells the observer what the cycle did; forgets the expected starts of the jobs it started either way. */
  private observe(lane: Lane, res: CycleResult, view: JobsView, nowMs: number): void {
    for (const x of res.started) this.record.started.add(x.job.id);
    const o = this.observer;
    for (const x of res.started) {
      const at = lane.eta.takePublished(x.job.id);
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

  /**
   * The profile's default spread constraints on its pods without their own (kube's PodTopologySpread
   * defaulting, ADR 0077), with the selector of the Services and controllers that select or own each pod.
   * Nothing when the cluster has none of those objects (or they are not readable).
   */
  private withDefaultSpread(lane: Lane, view: JobsView): JobsView {
    const owners = this.jobs.owners;
    if (owners.empty) return view;
    const defaults = (typeof lane.config === 'string' ? profileConfig(lane.config) : lane.config)?.spreadDefaults;
    let changed = false;
    const jobs = view.jobs.map((j) => {
      const pods = view.podsOf.get(j.id) ?? [];
      let any = false;
      const members = j.gang.members.map((m, k) => {
        const obj = pods[k]?.obj;
        const d = obj === undefined ? m : withDefaultSpread(m, defaults, owners.selectorOf(obj));
        if (d !== m) any = true;
        return d;
      });
      if (!any) return j;
      changed = true;
      return { ...j, gang: { ...j.gang, members } };
    });
    if (!changed) return view;
    return {
      queues: view.queues,
      jobs,
      podsOf: view.podsOf,
      get running() {
        return view.running;
      },
      short: view.short,
      minRuntimeMs: view.minRuntimeMs,
    };
  }

  /** Each profile's part of the translation: its jobs and short gangs (queues and running jobs are shared). */
  private splitView(view: JobsView): JobsView[] {
    const nameOf = (pods: readonly PendingPod[] | undefined): string => pods?.[0]?.obj.spec?.schedulerName ?? '';
    const lanes = this.lanes.all.map(() => ({ jobs: [] as JobsView['jobs'], short: [] as GangShort[] }));
    const index = new Map(this.lanes.all.map((l, i) => [l.schedulerName, i]));
    for (const j of view.jobs) lanes[index.get(nameOf(view.podsOf.get(j.id))) ?? 0]?.jobs.push(j);
    for (const g of view.short) lanes[index.get(nameOf(g.pods)) ?? 0]?.short.push(g);
    return lanes.map((l) => ({
      queues: view.queues,
      jobs: l.jobs,
      podsOf: view.podsOf,
      // Listing running jobs is O(pods): still only when a cycle reads them.
      get running() {
        return view.running;
      },
      short: l.short,
      minRuntimeMs: view.minRuntimeMs,
    }));
  }

  /** Feeds the queue from the translation: new jobs arrive, changed ones are replaced, vanished ones withdrawn. */
  private sync(lane: Lane, view: JobsView, nowMs: number): void {
    const seen = new Set<string>();
    const arrived = new Set<string>();
    for (const j of view.jobs) {
      seen.add(j.id);
      const old = lane.queue.get(j.id);
      if (old === undefined) arrived.add(j.queue);
      // Pods recreated under the same names (a controller's restart) are new objects: they must hear why they wait.
      const uids = (view.podsOf.get(j.id) ?? []).map((p) => p.obj.metadata?.uid ?? '').join(',');
      const recreated = lane.podUids.get(j.id) !== uids;
      if (recreated) {
        lane.podUids.set(j.id, uids);
        lane.spine.forgetReported(j.id);
      }
      lane.queue.add(j, nowMs, old === undefined || recreated || signature(old) !== signature(j));
    }
    for (const id of [...lane.podUids.keys()]) if (!seen.has(id)) lane.podUids.delete(id);
    for (const job of lane.queue.forCycle().jobs) if (!seen.has(job.id)) lane.spine.withdraw(job.id, nowMs);
    for (const q of arrived) lane.queue.onEvent({ kind: 'arrived', queue: q }, nowMs);
    // A gang still short of pods is not a scheduling failure: say so without a Warning, once per change.
    const short = new Set<string>();
    for (const s of view.short) {
      short.add(s.id);
      if (lane.shortReported.get(s.id) === s.message) continue;
      lane.shortReported.set(s.id, s.message);
      for (const p of s.pods) this.events.emit({ kind: 'WaitingForGang', subject: p.key, message: s.message });
    }
    for (const id of [...lane.shortReported.keys()]) if (!short.has(id)) lane.shortReported.delete(id);
  }

  /** A profile, re-resolved when the typical pending shapes of its pods changed (at most every 30 s). */
  private profileFor(lane: Lane): Profile {
    const now = performance.now();
    const pods: PodSpec[] = [];
    for (const p of this.cache.pending.values()) if (this.lanes.all.length === 1 || this.lanes.of(p) === lane) pods.push(p.spec);
    const shapes = blendShapes(shapesOf(pods), WHOLE_GPU_PRIOR, pods.length === 0 ? 0 : 0.7);
    const key = JSON.stringify(shapes.map((s) => [s.cpuMilli, s.gpuMilli, s.gpuCount, s.gpuModels.join('|')]));
    if (lane.profile === undefined || (key !== lane.profileShapesKey && now - lane.profileAtMs > 30_000)) {
      const cfg = typeof lane.config === 'string' ? profileConfig(lane.config) : lane.config;
      if (cfg === undefined) throw new Error(formatProfileError({ code: 'UnknownProfile', profile: lane.config as string }));
      const p = buildProfile(cfg, { typicalShapes: shapes });
      if (!p.ok) throw new Error(formatProfileError(p.error));
      lane.profile = p.value;
      lane.profileShapes = shapes;
      lane.profileShapesKey = key;
      lane.profileAtMs = now;
    }
    return lane.profile;
  }

  /** A profile's scheduler over this snapshot, committing to the live ports (new when the state or profile changed). */
  private schedulerFor(lane: Lane, state: ClusterState): Scheduler {
    const profile = this.profileFor(lane);
    if (lane.scheduler === undefined || lane.scheduler.state !== state || lane.scheduler.profile !== profile) {
      lane.scheduler = new Scheduler(
        profile,
        state,
        this.settings.rng('scheduler'),
        commitToPorts({ binder: this.binder, evictor: this.evictor }),
        this.settings.tracing,
      );
    }
    lane.scheduler.timer = this.observer?.extension;
    return lane.scheduler;
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
