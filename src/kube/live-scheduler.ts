/**
 * The live SITS scheduler, kube-scheduler's shape around the core's spine:
 *   informers → cache → per-cycle snapshot → pod→job translation → scheduling queue → queue cycle
 *   → statements committed to the Binder / Evictor → StatusWriter and EventSink, then the ETA publisher.
 * One path with or without Queue objects (without them each pod is in its queue label's default queue), so
 * preemption and reservations work for every pod. Only the leader cycles; a new leader first completes or
 * undoes the gang plans a previous one left (ADR 0006). Pods of other schedulers count as allocated.
 * Several profiles (ADR 0076) share the cache and each cycle's snapshot; each has its own queue and spine lane.
 */
import { buildProfile, formatProfileError, profileConfig, type ProfileConfig } from '../core/plugins/registry.ts';
import { Scheduler } from '../core/framework/scheduler.ts';
import type { Profile } from '../core/framework/types.ts';
import { blendShapes, shapesOf, WHOLE_GPU_PRIOR } from '../core/estimate/expected-workload.ts';
import type { QueuedJob } from '../core/actions/jobs.ts';
import type { CycleResult } from '../core/actions/queue-cycle.ts';
import { DEFAULT_RUNTIME_MODEL } from '../core/estimate/runtime.ts';
import type { TypicalShape } from '../core/estimate/typical-shapes.ts';
import type { PodSpec } from '../core/model/pod.ts';
import { seededRng, type Clock, type Rng, type TraceSpan } from '../core/ports.ts';
import { LIVE_QUEUE_TIMING, SchedulingQueue } from '../core/queue/scheduling-queue.ts';
import type { ClusterState } from '../core/snapshot/cluster-state.ts';
import { SchedulingSpine } from '../core/spine/scheduling-spine.ts';
import { commitToPorts } from '../core/statement/commit-to-ports.ts';
import { withDefaultSpread } from '../core/plugins/inter-pod-affinity/default-spread.ts';
import type { KubeClient } from './client.ts';
import { KubeBinder } from './binder.ts';
import { budgetsOf } from './disruption-budgets.ts';
import { ClusterCache } from './cluster-cache.ts';
import { EtaPublisher } from './eta-publisher.ts';
import { KubeEventSink } from './event-sink.ts';
import { KubeEvictor } from './evictor.ts';
import { KubeCheckpointRequester } from './checkpoint-requester.ts';
import { Defragmenter } from './defragmenter.ts';
import { podFromK8s } from './labels.ts';
import { explainTarget, type ExplainReport } from './explain.ts';
import { startInformers, type Informers } from './informers.ts';
import { SCHEDULER_NAME } from '../api/wire.ts';
import { LeaderElector } from './leader.ts';
import type { LiveMetricsView, LiveObserver } from './live-observer.ts';
import { PodJobs, type GangShort, type JobsView } from './pod-jobs.ts';
import type { PendingPod } from './cluster-cache.ts';
import { queueFromObject, runningJobs } from './queues.ts';
import { ObjectStatusWriter } from './object-status.ts';
import { KubeStatusWriter } from './status-writer.ts';
import { NO_TRACING, withTraceIds, type Tracing } from './tracing.ts';

export type { ExplainReport } from './explain.ts';
export type { PodGroupObject } from './pod-jobs.ts';

/** One profile of the process (ADR 0076): the pods with this schedulerName, scheduled with this profile. */
export interface LiveProfile {
  readonly schedulerName: string;
  /** A named profile, or a configuration (`sits run --config`). */
  readonly config: ProfileConfig | string;
}

export interface LiveOptions {
  readonly profile?: string;
  readonly schedulerName?: string;
  /**
   * Several profiles in one process, as kube-scheduler's `profiles[]` (ADR 0076): one cache, one snapshot per
   * cycle, one queue per profile, tried in this order within a cycle. Given, `profile` and `schedulerName`
   * are not read; the first profile's name is the Lease's and the default event source.
   */
  readonly profiles?: readonly LiveProfile[];
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
  /** How often Queue and PodGroup status is written at most (default 5 s). */
  readonly statusIntervalMs?: number;
  /** Randomness for the scheduler and its forward runs (default seeded: the same choices on every run). */
  readonly rng?: (purpose: 'scheduler' | 'forward-run') => Rng;
  /** Test seam of the binder (see KubeBinderOptions.afterGangMemberBound). */
  readonly afterGangMemberBound?: (count: number) => void;
  /** Spans of cycles, attempts and preemptions (default off); log lines written inside one carry its ids. */
  readonly tracing?: Tracing;
  /**
   * Checkpoint-aware preemption (ADR 0093): a victim whose pods say `checkpointable` is asked for a checkpoint
   * (annotation `checkpoint-requested` on its pods and TrainingJob) and evicted once it commits or its
   * queue's checkpoint grace runs out. Off by default: preemption as before.
   */
  readonly checkpointAware?: boolean;
  /** Defragmentation by migration's timing (ADR 0144; on per Queue, `spec.preemption.defragmentByMigration`). */
  readonly defragment?: { readonly graceMs?: number; readonly announceMs?: number };
}

/** Longest idle wait of the loop: backoffs and hint times are looked at least this often. */
const LOOP_TICK_MS = 1000;

/** The Clock port on the wall clock (ms since the epoch). */
export const WALL_CLOCK: Clock = { nowMs: () => Date.now() };
const DEFAULT_RNG = (purpose: 'scheduler' | 'forward-run'): Rng => seededRng(purpose === 'scheduler' ? 1 : 7);

/** One profile's part of the spine: its queue, its scheduler over the shared snapshot, its expected starts. */
class Lane {
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

export class LiveScheduler {
  readonly cache: ClusterCache;
  readonly jobs: PodJobs;
  /** The first profile's queue (the only one without `profiles`). */
  readonly queue: SchedulingQueue;
  readonly binder: KubeBinder;
  readonly evictor: KubeEvictor;
  readonly checkpoints: KubeCheckpointRequester;
  /** Defragmentation by migration (ADR 0144): acts only for gangs of a Queue with defragmentByMigration. */
  readonly defragmenter: Defragmenter;
  private readonly checkpointAware: boolean;
  readonly events: KubeEventSink;
  readonly status: KubeStatusWriter;
  private readonly lanes: readonly Lane[];
  private readonly laneByName: ReadonlyMap<string, Lane>;
  private readonly counters = { preemptions: 0, cycles: 0, failedAttempts: 0 };
  private informers: Informers | undefined;
  private leader: LeaderElector | undefined;
  private queuesChanged = false;
  /** Watch events since the last cycle (start: the first cycle sees everything listed). */
  private changed = true;
  /** A new leader's first turn always cycles. */
  private recoveredJustNow = false;
  private wake: (() => void) | undefined;
  private stopped = false;
  private recovered = false;
  private loopDone: Promise<void> | undefined;
  /** Called after each cycle once per job tried, with the cycle's time per job; for metrics. */
  onAttempt: ((seconds: number, result: 'scheduled' | 'unschedulable') => void) | undefined;
  /** Admissions, preemptions, expected-start errors, extension-point and binding times; for metrics. */
  observer: LiveObserver | undefined;
  /** The last cycle's view and the jobs it started (every profile's), for `metricsView()`. */
  private lastView: JobsView | undefined;
  private lastStarted = new Set<string>();
  /** Jobs holding a reservation after the last cycle, per profile (for the Queue status). */
  private lastReserving = new Map<string, ReadonlySet<string>>();
  /** Queue and PodGroup status (kubectl's columns), written in the background at most every few seconds. */
  readonly objectStatus: ObjectStatusWriter;
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
    const specs: readonly LiveProfile[] =
      opts.profiles !== undefined && opts.profiles.length > 0
        ? opts.profiles
        : [{ schedulerName: opts.schedulerName ?? SCHEDULER_NAME, config: opts.profile ?? 'sits' }];
    this.schedulerName = (specs[0] as LiveProfile).schedulerName;
    const names = new Set(specs.map((p) => p.schedulerName));
    if (names.size !== specs.length) throw new Error(`profiles: each needs its own schedulerName (${specs.map((p) => p.schedulerName).join(', ')})`);
    // One name: exactly the single-profile scheduler of before.
    const ours = names.size === 1 ? this.schedulerName : names;
    this.tracing = opts.tracing ?? NO_TRACING;
    this.log = withTraceIds(this.tracing, opts.log ?? (() => undefined));
    this.clock = opts.clock ?? WALL_CLOCK;
    this.rng = opts.rng ?? DEFAULT_RNG;
    const nowMs = (): number => this.clock.nowMs();
    this.cache = new ClusterCache(ours, this.log);
    this.checkpoints = new KubeCheckpointRequester(client, { log: this.log, nowMs, pod: (k) => this.cache.pod(k) });
    this.jobs = new PodJobs(this.cache, ours, this.clock, (running) => this.checkpoints.withUnseenAsks(running));
    this.events = new KubeEventSink(client, this.cache, {
      component: this.schedulerName,
      ...(names.size === 1 ? {} : { componentOf: (n: string | undefined) => (n !== undefined && names.has(n) ? n : undefined) }),
      instance: opts.identity,
      enabled: opts.events !== false,
      log: this.log,
      nowMs,
    });
    this.status = new KubeStatusWriter(client, this.cache, { log: this.log, nowMs });
    this.binder = new KubeBinder(client, this.cache, {
      schedulerName: ours,
      events: this.events,
      log: this.log,
      nowMs,
      requeued: () => this.noteChange(),
      bound: (seconds, ok) => this.observer?.bound?.(seconds, ok),
      ...(opts.afterGangMemberBound === undefined ? {} : { afterGangMemberBound: opts.afterGangMemberBound }),
    });
    this.evictor = new KubeEvictor(client, {
      log: this.log,
      nowMs,
      labelsOf: (pod) => this.cache.pod(pod)?.metadata?.labels,
      leaving: (pods) => this.cache.markLeaving(pods),
      stayed: (pod) => this.cache.stayed(pod),
    });
    this.checkpointAware = opts.checkpointAware === true;
    this.defragmenter = new Defragmenter(client, {
      log: this.log,
      clock: this.clock,
      ...(opts.defragment?.graceMs === undefined ? {} : { graceMs: opts.defragment.graceMs }),
      ...(opts.defragment?.announceMs === undefined ? {} : { announceMs: opts.defragment.announceMs }),
    });
    this.lanes = specs.map(
      (p) =>
        new Lane(
          p.schedulerName,
          p.config,
          { events: this.events, status: this.status },
          new EtaPublisher(this.jobs, this.status, () => this.rng('forward-run')),
        ),
    );
    this.laneByName = new Map(this.lanes.map((l) => [l.schedulerName, l]));
    this.queue = (this.lanes[0] as Lane).queue;
    this.objectStatus = new ObjectStatusWriter(
      client,
      {
        view: () => this.metricsView(),
        reserving: () => new Set([...this.lastReserving.values()].flatMap((s) => [...s])),
        queues: () => this.jobs.queueObjs.values(),
        podGroups: () => this.jobs.podGroups.values(),
        pods: () => this.cache.allPods(),
      },
      { log: this.log, ...(opts.statusIntervalMs === undefined ? {} : { intervalMs: opts.statusIntervalMs }) },
    );
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
    return { ...this.counters, bound: b.bound, bindErrors: b.bindErrors, gangsBound: b.gangsBound, rollbacks: b.rollbacks, recoveries: b.recoveries };
  }

  get runtimes(): PodJobs['runtimes'] {
    return this.jobs.runtimes;
  }

  isLeader(): boolean {
    return this.leader === undefined ? true : this.leader.isLeader();
  }

  async start(): Promise<void> {
    this.informers = await startInformers(this.client, this.cache, this.jobs, {
      changed: () => this.noteChange(),
      queuesChanged: () => (this.queuesChanged = true),
      log: this.log,
    });
    if (this.opts.passive === true) return;
    if (this.opts.leaseNamespace !== undefined) {
      this.leader = new LeaderElector(this.client, {
        namespace: this.opts.leaseNamespace,
        name: this.schedulerName,
        identity: this.opts.identity,
        ...(this.opts.leaseDurationSec === undefined
          ? {}
          : {
              leaseDurationSec: this.opts.leaseDurationSec,
              renewDeadlineSec: Math.max(1, this.opts.leaseDurationSec * 0.66),
              retryPeriodSec: Math.max(0.5, this.opts.leaseDurationSec / 7),
            }),
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
      if (this.binder.busy === 0 && this.lanes.every((l) => !l.queue.hasActive()) && this.everyPendingPodQueued()) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }

  private everyPendingPodQueued(): boolean {
    for (const p of this.cache.pending.values()) {
      const id = p.spec.gang === undefined ? p.key : `gang:${p.spec.gang}`;
      const lane = this.laneOf(p);
      if (!lane.queue.has(id) && !lane.shortReported.has(id)) return false;
    }
    return true;
  }

  /** What the metrics read at scrape time; reads the cache, changes nothing (O(pods) for the running jobs). */
  metricsView(): LiveMetricsView {
    const state = this.cache.state();
    const running = runningJobs(
      this.cache.allPods(),
      this.schedulerName,
      this.jobs.groupQueue,
      DEFAULT_RUNTIME_MODEL.fallbackMs,
      (n) => state.node(n)?.spec.gpus[0]?.model,
      this.jobs.inFlight(this.clock.nowMs()),
    );
    const v = this.lastView;
    // The Queue objects as watched now (the last view's may predate a new queue: its series show before its first job).
    const queues = new Map([...this.jobs.queueObjs.values()].map((o) => queueFromObject(o)).map((q) => [q.name, q]));
    const counts = { active: 0, backoff: 0, unschedulable: 0 };
    for (const l of this.lanes) {
      const c = l.queue.counts();
      counts.active += c.active;
      counts.backoff += c.backoff;
      counts.unschedulable += c.unschedulable;
    }
    // The fragmentation measure uses the first profile's typical shapes (the only one without `profiles`).
    const shapes = (this.lanes[0] as Lane).profileShapes;
    return {
      state,
      queues,
      pending: v === undefined ? [] : v.jobs.filter((j) => !this.lastStarted.has(j.id)),
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
    const lane = pod === undefined ? (this.lanes[0] as Lane) : this.laneOf(pod);
    return explainTarget(
      { cache: this.cache, jobs: this.jobs, profile: this.profileFor(lane), schedulerName: lane.schedulerName, rng: () => this.rng('forward-run') },
      target,
      nowMs,
    );
  }

  /** The profile that schedules a pending pod (by its schedulerName; the first for one profile). */
  private laneOf(p: PendingPod): Lane {
    return this.lanes.length === 1 ? (this.lanes[0] as Lane) : (this.laneByName.get(p.obj.spec?.schedulerName ?? '') ?? (this.lanes[0] as Lane));
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
        this.defragmenter.tick();
        this.objectStatus.tick(this.clock.nowMs());
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
    if (!this.changed && !this.recoveredJustNow && this.lanes.every((l) => l.queue.nextWakeMs() > nowMs && l.eta.dueAtMs() > nowMs)) return;
    this.changed = false;
    this.recoveredJustNow = false;
    const { state, freed } = this.cache.snapshot();
    const queuesChanged = this.queuesChanged;
    this.queuesChanged = false;
    const view = this.jobs.view(state);
    this.lastView = view;
    this.lastStarted = new Set();
    const views = this.lanes.length === 1 ? [view] : this.splitView(view);
    // One snapshot, the profiles in their order: each sees what the ones before it committed (no over-commit).
    this.lanes.forEach((lane, i) => this.laneCycle(lane, views[i] as JobsView, state, nowMs, freed, queuesChanged));
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
    if (!this.tracing.enabled) return this.tryJobs(lane, nowMs, state, view, undefined);
    // A span for each cycle that tries jobs (watch events that leave nothing to try make none). The binds and
    // evictions it commits run in its context: their log lines carry its trace id.
    this.tracing.run('sits.cycle', { 'sits.scheduler': lane.schedulerName, 'sits.cycle': this.counters.cycles + 1 }, (span) =>
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
      options: { minRuntimeMs: view.minRuntimeMs, ...(this.checkpointAware ? { checkpointAware: true } : {}) },
      ...(budgets === undefined ? {} : { disruptionBudgets: budgets }),
    });
    this.counters.cycles++;
    this.counters.preemptions += res.preempted.length;
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
    this.counters.failedAttempts += failed;
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
    if (res.started.length > 0 || res.preempted.length > 0) this.log(startedLine(res));
    if (this.onAttempt !== undefined && tried > 0) {
      const each = (performance.now() - t0) / 1000 / tried;
      for (let i = 0; i < res.started.length; i++) this.onAttempt(each, 'scheduled');
      for (let i = 0; i < failed; i++) this.onAttempt(each, 'unschedulable');
    }
    this.observe(lane, res, view, nowMs);
    this.lastReserving.set(lane.schedulerName, new Set(res.reservations.map((r) => r.jobId)));
    lane.eta.publish(nowMs, state, sch.profile, view, new Set(res.waiting.keys()), res);
  }

  /** Tells the observer what the cycle did; forgets the expected starts of the jobs it started either way. */
  private observe(lane: Lane, res: CycleResult, view: JobsView, nowMs: number): void {
    for (const x of res.started) this.lastStarted.add(x.job.id);
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
    const lanes = this.lanes.map(() => ({ jobs: [] as JobsView['jobs'], short: [] as GangShort[] }));
    const index = new Map(this.lanes.map((l, i) => [l.schedulerName, i]));
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
    for (const p of this.cache.pending.values()) if (this.lanes.length === 1 || this.laneOf(p) === lane) pods.push(p.spec);
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
      lane.scheduler = new Scheduler(profile, state, this.rng('scheduler'), commitToPorts({ binder: this.binder, evictor: this.evictor }), this.tracing);
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
