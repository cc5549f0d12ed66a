/**
 * The live SITS scheduler: informers keep the ClusterCache, the leader runs scheduling cycles with the
 * same core as the simulator, and commits reach the API server only through bindings (and, for gangs, a
 * plan written first so that a crash in the middle of a gang can be completed on restart, never left
 * half-bound). Pods of other schedulers count as allocated; pods of ours wait in the pending set.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { GangSpec, PodSpec, TopologyConstraint } from '../core/model/pod.ts';
import { TOPOLOGY_LEVELS, type TopologyLevel } from '../core/model/topology.ts';
import { Scheduler, type Explanation, type Placement } from '../core/framework/scheduler.ts';
import { formatProfileError, resolveProfile } from '../core/framework/registry.ts';
import type { Profile } from '../core/framework/types.ts';
import type { ClusterState } from '../core/snapshot/cluster-state.ts';
import { placeExisting } from '../core/snapshot/place-existing.ts';
import { seededRng } from '../core/ports.ts';
import { blendShapes, shapesOf, WHOLE_GPU_PRIOR } from '../core/estimate/expected-workload.ts';
import { isStatus, KubeApiError, type KubeClient } from './client.ts';
import { ClusterCache, type PendingPod } from './cluster-cache.ts';
import { ANNOTATION, API_PATH, LABEL, REASON, SCHEDULER_NAME } from '../api/wire.ts';
import { parseGpuIndices, podFromK8s, podKey } from './labels.ts';
import { LeaderElector } from './leader.ts';
import { objectKey, Reflector } from './reflector.ts';
import { DEFAULT_COOLDOWN_SECONDS, givenRuntimeMs, jobOfPod, queueFromObject, runningJobs, type QueueObject } from './queues.ts';
import { LiveRuntimes, requeueVictim } from './runtime-learning.ts';
import { DEFAULT_RUNTIME_MODEL } from '../core/estimate/runtime.ts';
import { requeueAfterCheckpoint } from '../core/estimate/job-runtimes.ts';
import { LiveArrivals } from './arrival-forecast.ts';
import { runCycle } from '../core/actions/queue-cycle.ts';
import { cloneState, estimateStarts } from '../core/actions/eta.ts';
import { Statement } from '../core/statement/statement.ts';
import { jobResources, type QueuedJob, type RunningJob } from '../core/actions/jobs.ts';
import type { QueueSpec } from '../core/queue/model.ts';

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
  /** Fault injection for crash tests: exit the process after this many gang-member bindings. */
  readonly crashAfterGangBinds?: number;
  readonly log?: (msg: string) => void;
}

export interface ExplainReport {
  readonly target: string;
  readonly state: 'bound' | 'fits' | 'waiting' | 'unknown';
  readonly lines: readonly string[];
  readonly etaMs?: number;
}

export interface PodGroupObject {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
  spec?: { minMember?: number; topology?: { required?: string; preferred?: string }; queue?: string; priorityClassName?: string };
}

interface FailedUnit {
  generation: number;
  retryAtMs: number;
  message: string;
  lastEventMs: number;
}

const RETRY_MS = 30_000;
/** Longest wait for preempted pods to terminate before their preemptor is bound anyway. */
const NOMINATION_WAIT_MS = 120_000;
const ETA_REFRESH_MS = 60_000;
/** Above this many waiting jobs the forward run is skipped (it would cost more than a cycle). */
const ETA_MAX_JOBS = 2000;
const EVENT_REPEAT_MS = 60_000;

export class LiveScheduler {
  readonly cache: ClusterCache;
  private readonly reflectors: Reflector<{ metadata?: { name?: string } }>[] = [];
  private readonly podGroups = new Map<string, PodGroupObject>();
  private readonly queueObjs = new Map<string, QueueObject>();
  /** Preemptors placed but not bound until their victims' pods are gone. */
  private nominated: { id: string; gang: string | undefined; plan: { pod: PendingPod; placement: Placement }[]; victims: string[]; sinceMs: number }[] = [];
  private lastQueueGen = -1;
  private lastQueueCycleMs = 0;
  private lastEtaMs = Number.NEGATIVE_INFINITY;
  private readonly failed = new Map<string, FailedUnit>();
  /** Runtimes learned from the jobs SITS bound (finished, stopped, running), for the expected starts. */
  readonly runtimes = new LiveRuntimes();
  /** Arrivals per queue seen so far, for the forecast of later work in the expected starts. */
  readonly arrivals = new LiveArrivals();
  private readonly inFlight = new Set<Promise<unknown>>();
  private leader: LeaderElector | undefined;
  private scheduler: Scheduler | undefined;
  private schedulerState: ClusterState | undefined;
  private profile: Profile | undefined;
  private profileShapesKey = '';
  private profileAtMs = 0;
  private wake: (() => void) | undefined;
  private stopped = false;
  private recovered = false;
  private gangBinds = 0;
  private loopDone: Promise<void> | undefined;
  readonly stats = { preemptions: 0, cycles: 0, bound: 0, bindErrors: 0, failedAttempts: 0, gangsBound: 0, rollbacks: 0, recoveries: 0 };
  /** Called after each scheduling attempt (one pod, or one gang with its binding) with its duration; for metrics. */
  onAttempt: ((seconds: number, result: 'scheduled' | 'unschedulable') => void) | undefined;
  private readonly schedulerName: string;
  private readonly log: (m: string) => void;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: LiveOptions,
  ) {
    this.schedulerName = opts.schedulerName ?? SCHEDULER_NAME;
    this.log = opts.log ?? (() => undefined);
    this.cache = new ClusterCache(this.schedulerName, this.log);
  }

  isLeader(): boolean {
    return this.leader === undefined ? true : this.leader.isLeader();
  }

  async start(): Promise<void> {
    const poke = (): void => this.poke();
    const nodes = new Reflector<V1Node>(this.client, '/api/v1/nodes', {
      add: (n) => (this.cache.upsertNode(n), poke()),
      update: (n) => (this.cache.upsertNode(n), poke()),
      delete: (n) => (this.cache.deleteNode(n), poke()),
      error: (e) => this.log(`nodes watch: ${e.message}`),
    });
    const pods = new Reflector<V1Pod>(this.client, '/api/v1/pods', {
      add: (p) => (this.cache.upsertPod(p), this.learn(p), poke()),
      update: (p) => (this.cache.upsertPod(p), this.learn(p), poke()),
      delete: (p) => (this.cache.deletePod(p), this.learn(p, true), poke()),
      error: (e) => this.log(`pods watch: ${e.message}`),
    });
    const groups = new Reflector<PodGroupObject>(this.client, `${API_PATH}/podgroups`, {
      add: (g) => (this.podGroups.set(objectKey(g), g), poke()),
      update: (g) => (this.podGroups.set(objectKey(g), g), poke()),
      delete: (g) => this.podGroups.delete(objectKey(g)),
      error: (e) => this.log(`podgroups watch: ${e.message}`),
    });
    const queueObjs = new Reflector<QueueObject>(this.client, `${API_PATH}/queues`, {
      add: (q) => (this.queueObjs.set(objectKey(q), q), poke()),
      update: (q) => (this.queueObjs.set(objectKey(q), q), poke()),
      delete: (q) => (this.queueObjs.delete(objectKey(q)), poke()),
      error: (e) => this.log(`queues watch: ${e.message}`),
    });
    this.reflectors.push(nodes, pods, groups);
    await nodes.start();
    await pods.start();
    try {
      await queueObjs.start();
      this.reflectors.push(queueObjs);
    } catch (e) {
      // Without the Queue CRD every pod is scheduled in priority/FIFO order with no quotas.
      if (!(e instanceof KubeApiError && e.status === 404)) throw e;
      this.log('Queue CRD not installed: no quotas or fair share');
    }
    try {
      await groups.start();
    } catch (e) {
      // Without the PodGroup CRD, gangs are described by pod annotations alone.
      if (!(e instanceof KubeApiError && e.status === 404)) throw e;
      this.log('PodGroup CRD not installed: gangs read from pod annotations');
      this.reflectors.splice(this.reflectors.indexOf(groups as unknown as Reflector<{ metadata?: { name?: string } }>), 1);
    }
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
    for (const r of this.reflectors) r.stop();
    await this.loopDone;
    await Promise.allSettled([...this.inFlight]);
    await this.leader?.stop(true);
  }

  /** Resolves when nothing is pending or in flight (tests, benchmarks). */
  async idle(timeoutMs = 60_000): Promise<boolean> {
    const end = performance.now() + timeoutMs;
    while (performance.now() < end) {
      if (this.inFlight.size === 0 && [...this.cache.pending.keys()].every((k) => this.failed.has(k) || this.failed.has(this.unitKeyOf(k)))) return true;
      await sleep(50);
    }
    return false;
  }

  private groupQueue = (group: string): string | undefined => this.podGroups.get(group)?.spec?.queue;

  /** Follows the runs of the jobs SITS bound, for learned runtimes (`LiveRuntimes`). */
  private learn(p: V1Pod, deleted = false): void {
    if (p.spec?.schedulerName !== this.schedulerName) return;
    const job = jobOfPod(p, this.groupQueue);
    if (deleted) {
      this.runtimes.gone(p, job, Date.now());
      return;
    }
    const gpus = (): number => {
      const s = podFromK8s(p);
      return s.ok ? (s.value.request.gpuCount * s.value.request.gpuMilli) / 1000 : 0;
    };
    this.runtimes.seen(p, job, gpus, Date.now());
  }

  /** The forward run's forecast of later arrivals (at most what keeps it within ETA_MAX_JOBS jobs). */
  private forecast(nowMs: number, waiting: number): QueuedJob[] {
    return this.arrivals.forecast(nowMs, (q, gpus) => this.runtimes.pendingRuntime(q, gpus, undefined), Math.max(0, ETA_MAX_JOBS - waiting));
  }

  /** The forward run's victims go back to their queue when their controller recreates them (`requeueVictim`). */
  private requeueOf(jobs: readonly QueuedJob[], forecast: readonly QueuedJob[]): (v: RunningJob, atMs: number) => QueuedJob | undefined {
    const byId = new Map(jobs.map((j) => [j.id, j]));
    const forecastById = new Map(forecast.map((j) => [j.id, j]));
    return (v, atMs) => {
      // A forecast job has no pods yet: assumed to be recreated like the jobs it repeats.
      const f = forecastById.get(v.id);
      if (f !== undefined) return requeueAfterCheckpoint({ ...f, arrivalMs: atMs }, v, 0);
      const pods = v.podIds.map((k) => this.cache.pod(k)).filter((x): x is V1Pod => x !== undefined);
      return requeueVictim(byId.get(v.id) ?? this.queuedFromPods(v, pods), v, pods, atMs);
    };
  }

  /** A running job in its queued form (for the forward run to put it back in its queue). */
  private queuedFromPods(v: RunningJob, pods: readonly V1Pod[]): QueuedJob | undefined {
    const members = pods.map(podFromK8s).flatMap((r) => (r.ok ? [r.value] : []));
    const first = pods[0];
    if (members.length === 0 || first === undefined) return undefined;
    const name = v.id.startsWith('gang:') ? v.id.slice(5) : v.id;
    const topology = v.id.startsWith('gang:') ? this.gangInfo(name, pods.map((obj) => ({ obj }))).topology : {};
    const cls = this.podGroups.get(name)?.spec?.priorityClassName ?? first.spec?.priorityClassName;
    return {
      id: v.id,
      queue: v.queue,
      priority: v.priority,
      arrivalMs: v.startMs,
      gang: { name, minMember: members.length, members, topology, priority: v.priority, queue: v.queue },
      estRuntimeMs: v.estEndMs - v.startMs,
      namespace: first.metadata?.namespace ?? 'default',
      ...(cls === undefined || cls === '' ? {} : { priorityClass: cls }),
    };
  }

  private unitKeyOf(podKeyStr: string): string {
    const p = this.cache.pending.get(podKeyStr);
    return p?.spec.gang === undefined ? podKeyStr : `gang:${p.spec.gang}`;
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
        setTimeout(resolve, 1000);
      });
      if (this.stopped) break;
      if (!this.isLeader()) continue;
      try {
        if (!this.recovered) {
          await this.recover();
          this.recovered = true;
        }
        await this.bindNominated();
        await this.cycle();
      } catch (e) {
        this.log(`cycle: ${(e as Error).stack ?? String(e)}`);
      }
    }
  }

  private ensureScheduler(): Scheduler {
    const state = this.cache.state();
    const now = performance.now();
    const pods: PodSpec[] = [...this.cache.pending.values()].map((p) => p.spec);
    const shapes = blendShapes(shapesOf(pods), WHOLE_GPU_PRIOR, pods.length === 0 ? 0 : 0.7);
    const key = JSON.stringify(shapes.map((s) => [s.cpuMilli, s.gpuMilli, s.gpuCount, s.gpuModels.join('|')]));
    const stale = this.profile === undefined || (key !== this.profileShapesKey && now - this.profileAtMs > 30_000);
    if (stale) {
      const p = resolveProfile(this.opts.profile ?? 'sits', { typicalShapes: shapes });
      if (!p.ok) throw new Error(formatProfileError(p.error));
      this.profile = p.value;
      this.profileShapesKey = key;
      this.profileAtMs = now;
    }
    if (stale || this.scheduler === undefined || this.schedulerState !== state) {
      this.scheduler = new Scheduler(this.profile as Profile, state, seededRng(1));
      this.schedulerState = state;
    }
    return this.scheduler;
  }

  /**
   * `sits explain`: for a pending pod or pod group (`namespace/name`), why it is not placed — the core's
   * explanation on the current state, the queue's reason from a cycle run on a copy, and the start time the
   * queue cycle predicts when run forward (as `publishEstimates`: runtimes given or learned, victims requeued,
   * later arrivals forecast from the pods this process has seen).
   * Nothing is written.
   */
  explain(target: string, nowMs: number): ExplainReport {
    const sch = this.ensureScheduler();
    const { singles, gangs } = this.pendingUnits();
    const single = singles.find((p) => p.key === target);
    const gangMembers = gangs.get(target);
    if (single === undefined && gangMembers === undefined) {
      const pod = this.cache.pod(target);
      if (pod !== undefined && (pod.spec?.nodeName ?? '') !== '') return { target, state: 'bound', lines: [`${target} is bound to ${pod.spec?.nodeName ?? ''} (GPUs ${pod.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? 'none'})`] };
      return { target, state: 'unknown', lines: [`${target}: no pending pod or pod group of ${this.schedulerName} with that name`] };
    }
    const lines: string[] = [];
    const { queues, jobs, running, minRuntimeMs } = this.queueInputs(sch, singles, gangs, false);
    const id = single !== undefined ? single.key : `gang:${target}`;
    const job = jobs.find((j) => j.id === id);
    if (job === undefined) {
      const members = gangMembers ?? [];
      const info = this.gangInfo(target, members);
      return { target, state: 'waiting', lines: [`gang ${target}: waiting for pods: ${members.length} pending of minMember ${info.minMember}`] };
    }
    // 1. Placement on the current state, rolled back.
    const trial = new Statement(sch.state);
    const r = sch.placeGang(job.gang, trial);
    trial.discard();
    lines.push(r.ok ? `fits now: ${[...new Set(r.placements.map((p) => p.node))].join(', ')}` : r.explanation.message);
    let eta: number | undefined;
    if (queues.size > 0) {
      // 2. The queue's view: one cycle over a copy of the cluster.
      const copy = new Scheduler(sch.profile, cloneState(sch.state), seededRng(1));
      const res = runCycle({ nowMs, scheduler: copy, queues, pending: jobs, running, options: { minRuntimeMs } });
      const w = res.waiting.get(id);
      if (w !== undefined) lines.push(`queue ${job.queue} holds it (${w.reason}): ${w.message}`);
      else if (res.started.some((x) => x.job.id === id)) lines.push(`queue ${job.queue}: admitted at the next cycle`);
      // 3. When: the cycle run forward in virtual time.
      const arrivals = this.forecast(nowMs, jobs.length);
      eta = estimateStarts({ nowMs, state: sch.state, profile: sch.profile, queues, pending: jobs, running, options: { minRuntimeMs }, untilStarted: id, requeue: this.requeueOf(jobs, arrivals), arrivals }).get(id);
      lines.push(eta === undefined ? 'expected start: not within 7 days at current estimates' : `expected start: ${new Date(eta).toISOString()} (in ${Math.max(0, Math.round((eta - nowMs) / 1000))} s)`);
    }
    return { target, state: r.ok ? 'fits' : 'waiting', lines, ...(eta === undefined ? {} : { etaMs: eta }) };
  }

  /** Pending pods as units: single pods, and gangs by pod group (pods inside a plan being bound are left out). */
  private pendingUnits(): { singles: PendingPod[]; gangs: Map<string, PendingPod[]> } {
    const singles: PendingPod[] = [];
    const gangs = new Map<string, PendingPod[]>();
    for (const p of this.cache.pending.values()) {
      if (p.obj.metadata?.annotations?.[ANNOTATION.planId] !== undefined && p.obj.metadata.annotations[ANNOTATION.assignedNode] !== undefined) continue;
      if (p.spec.gang === undefined) singles.push(p);
      else {
        const list = gangs.get(p.spec.gang) ?? [];
        list.push(p);
        gangs.set(p.spec.gang, list);
      }
    }
    return { singles, gangs };
  }

  /** One pass over the pending pods, in queue order; failed units wait for a relevant change. */
  private async cycle(): Promise<void> {
    if (this.cache.pending.size === 0) return;
    const sch = this.ensureScheduler();
    this.stats.cycles++;
    const now = performance.now();
    const gen = this.cache.generation;
    const { singles, gangs } = this.pendingUnits();
    if (this.queueObjs.size > 0) {
      await this.queueCycle(sch, singles, gangs);
      return;
    }
    type Unit = { key: string; priority: number; createdMs: number; seq: number; run: () => Promise<void> | void };
    const units: Unit[] = [];
    const bound = gangs.size === 0 ? new Map<string, number>() : this.boundByGroup();
    for (const p of singles) units.push({ key: p.key, priority: p.spec.priority, createdMs: p.createdMs, seq: p.seq, run: () => this.scheduleSingle(sch, p) });
    for (const [g, members] of gangs) {
      const first = members.reduce((a, b) => (a.seq < b.seq ? a : b));
      units.push({ key: `gang:${g}`, priority: Math.max(...members.map((m) => m.spec.priority)), createdMs: first.createdMs, seq: first.seq, run: () => this.scheduleGang(sch, g, members, bound) });
    }
    units.sort((a, b) => b.priority - a.priority || a.createdMs - b.createdMs || a.seq - b.seq);
    for (const u of units) {
      if (this.stopped || !this.isLeader()) return;
      const f = this.failed.get(u.key);
      if (f !== undefined && f.generation === gen && now < f.retryAtMs) continue;
      const startMs = performance.now();
      const failedBefore = this.stats.failedAttempts;
      await u.run();
      this.onAttempt?.((performance.now() - startMs) / 1000, this.stats.failedAttempts === failedBefore ? 'scheduled' : 'unschedulable');
    }
  }

  /**
   * With Queue objects present, a cycle is the core's queue cycle: quota and topology checked together,
   * weighted fair share across queues, reservations with backfill, and gang-aware preemption. Victims are
   * deleted whole (their owner requeues them); whatever waits says which queue holds it and why.
   */
  private async queueCycle(sch: Scheduler, singles: readonly PendingPod[], gangs: ReadonlyMap<string, PendingPod[]>): Promise<void> {
    const gen = this.cache.generation;
    const now = performance.now();
    if (gen === this.lastQueueGen && now - this.lastQueueCycleMs < RETRY_MS) return;
    this.lastQueueGen = gen;
    this.lastQueueCycleMs = now;
    const { queues, jobs, podsOf, running, minRuntimeMs } = this.queueInputs(sch, singles, gangs, true);
    const res = runCycle({ nowMs: Date.now(), scheduler: sch, queues, pending: jobs, running, options: { minRuntimeMs } });
    this.stats.cycles++;
    for (const p of res.preempted) {
      this.stats.preemptions++;
      const victims = p.victim.podIds.map((k) => this.cache.pod(k)).filter((x): x is V1Pod => x !== undefined);
      this.emitEvents(victims.map((pod) => ({ pod, reason: REASON.preempted, type: 'Warning' as const, message: `${p.reason} (whole gang ${p.victim.id} evicted)` })));
      for (const pod of p.victim.podIds) this.track(this.client.delete(podPath(pod)).catch((e: unknown) => this.log(`evict ${pod}: ${(e as Error).message}`)));
    }
    for (const s of res.started) {
      const members = podsOf.get(s.job.id) ?? [];
      this.failed.delete(s.job.id);
      for (const pl of s.placements) {
        const a = sch.state.allocation(pl.podId);
        if (a !== undefined) this.cache.assume(a);
      }
      const byKey = new Map(members.map((m) => [m.key, m]));
      const plan = s.placements.map((pl) => ({ pod: byKey.get(pl.podId) as PendingPod, placement: pl }));
      // A preemptor is bound only once its victims are gone: a kubelet would refuse it while they terminate.
      const victims = res.preempted.filter((p) => p.by === s.job.id).flatMap((p) => [...p.victim.podIds]);
      if (victims.length > 0) this.nominated.push({ id: s.job.id, gang: s.job.id.startsWith('gang:') ? s.job.gang.name : undefined, plan, victims, sinceMs: performance.now() });
      else await this.bindPlan(s.job.id.startsWith('gang:') ? s.job.gang.name : undefined, plan);
    }
    for (const [id, w] of res.waiting) {
      const members = podsOf.get(id) ?? [];
      const job = jobs.find((j) => j.id === id);
      const message = `queue ${job?.queue ?? '?'} holds ${id.startsWith('gang:') ? id.slice(5) : id} (${w.reason}): ${w.message}`;
      this.noteFailure(id, members, { subject: id, nodes: sch.state.size, fitting: 0, reasons: [], message, unresolvable: false });
    }
    this.publishEstimates(sch, queues, jobs, running, res, podsOf, minRuntimeMs);
  }

  /**
   * "When will my job start": at most once a minute, the queue cycle is run forward over a copy of the
   * cluster and each waiting pod gets annotation `ANNOTATION.expectedStart` (RFC 3339) when its estimate
   * moved by more than a minute; controllers copy it into their status. As in the simulator (ADR 0021):
   * runtimes are the user's (`expected-runtime-seconds`) or learned from the queue's finished jobs
   * (`LiveRuntimes`; running jobs end at their conditional expectation given the time they ran), victims of
   * the forward run go back to their queue if a controller recreates them, and later arrivals are forecast
   * per queue (`LiveArrivals`). No cadence: the live queue cycle runs on every change (within a second of a
   * completion or an arrival), which is the forward run's event-driven mode.
   */
  private publishEstimates(sch: Scheduler, queues: ReadonlyMap<string, QueueSpec>, jobs: readonly QueuedJob[], running: ReadonlyMap<string, RunningJob>, res: ReturnType<typeof runCycle>, podsOf: ReadonlyMap<string, readonly PendingPod[]>, minRuntimeMs: number): void {
    const nowMs = Date.now();
    if (res.waiting.size === 0 || res.waiting.size > ETA_MAX_JOBS || performance.now() - this.lastEtaMs < ETA_REFRESH_MS) return;
    this.lastEtaMs = performance.now();
    const started = new Set(res.started.map((x) => x.job.id));
    const stillRunning = new Map(running);
    for (const p of res.preempted) stillRunning.delete(p.victim.id);
    for (const x of res.started) {
      stillRunning.set(x.job.id, { id: x.job.id, queue: x.job.queue, priority: x.job.priority, startMs: nowMs, estEndMs: nowMs + x.job.estRuntimeMs, podIds: x.placements.map((pl) => pl.podId), resources: jobResources(x.job), preemptible: true });
    }
    const arrivals = this.forecast(nowMs, jobs.length);
    const eta = estimateStarts({ nowMs, state: sch.state, profile: sch.profile, queues, pending: jobs.filter((j) => !started.has(j.id)), running: stillRunning, options: { minRuntimeMs, explain: false }, requeue: this.requeueOf(jobs, arrivals), arrivals });
    for (const id of res.waiting.keys()) {
      const at = eta.get(id);
      if (at === undefined) continue;
      for (const p of podsOf.get(id) ?? []) {
        const prev = Date.parse(p.obj.metadata?.annotations?.[ANNOTATION.expectedStart] ?? '');
        if (Number.isFinite(prev) && Math.abs(prev - at) < 60_000) continue;
        this.track(this.client.mergePatch(podPath(p.key), { metadata: { annotations: { [ANNOTATION.expectedStart]: new Date(at).toISOString() } } }).catch((e: unknown) => this.log(`expected-start ${p.key}: ${(e as Error).message}`)));
      }
    }
  }

  private scheduleSingle(sch: Scheduler, p: PendingPod): void {
    const r = sch.schedulePod(p.spec);
    if (!r.ok) {
      this.noteFailure(p.key, [p], r.explanation);
      return;
    }
    this.failed.delete(p.key);
    const a = sch.state.allocation(p.spec.id);
    if (a !== undefined) this.cache.assume(a);
    this.track(this.bind(p, r.placement).catch(() => undefined));
  }

  private gangInfo(name: string, members: readonly { readonly obj: V1Pod }[]): { minMember: number; topology: TopologyConstraint } {
    const g = this.podGroups.get(name);
    const ann = members[0]?.obj.metadata?.annotations ?? {};
    const level = (v: string | undefined): TopologyLevel | undefined => ((TOPOLOGY_LEVELS as readonly string[]).includes(v ?? '') ? (v as TopologyLevel) : undefined);
    const required = level(g?.spec?.topology?.required ?? ann[ANNOTATION.topologyRequired]);
    const preferred = level(g?.spec?.topology?.preferred ?? ann[ANNOTATION.topologyPreferred]);
    const minMember = g?.spec?.minMember ?? Number(ann[ANNOTATION.minMember] ?? members.length);
    return { minMember: Number.isInteger(minMember) && minMember > 0 ? minMember : members.length, topology: { ...(required === undefined ? {} : { required }), ...(preferred === undefined ? {} : { preferred }) } };
  }

  /** What the queue cycle needs, from the cache: queues, pending jobs (with their pods), running jobs. */
  private queueInputs(sch: Scheduler, singles: readonly PendingPod[], gangs: ReadonlyMap<string, PendingPod[]>, note: boolean): { queues: Map<string, QueueSpec>; jobs: QueuedJob[]; podsOf: Map<string, readonly PendingPod[]>; running: Map<string, RunningJob>; minRuntimeMs: number } {
    const queues = new Map<string, QueueSpec>();
    for (const o of this.queueObjs.values()) {
      const q = queueFromObject(o);
      queues.set(q.name, q);
    }
    // Runtimes: the user's (annotation), else learned from this queue's jobs of the same size class (1 h with nothing learned).
    this.runtimes.flush((id) => (id.startsWith('gang:') ? this.groupQueue(id.slice(5)) : undefined));
    const gpusOf = (ps: readonly PendingPod[]): number => ps.reduce((s, p) => s + (p.spec.request.gpuCount * p.spec.request.gpuMilli) / 1000, 0);
    const runtimeOf = (p: PendingPod, queue: string, members: readonly PendingPod[]): number => this.runtimes.pendingRuntime(queue, gpusOf(members), givenRuntimeMs(p.obj));
    // Namespace and PriorityClass, which the queue may restrict (Queue spec.namespaces, spec.priorityClasses).
    const submitter = (p: PendingPod, g: PodGroupObject | undefined): { namespace: string; priorityClass?: string } => {
      const cls = g?.spec?.priorityClassName ?? p.obj.spec?.priorityClassName;
      return { namespace: p.obj.metadata?.namespace ?? 'default', ...(cls === undefined || cls === '' ? {} : { priorityClass: cls }) };
    };
    const jobs: QueuedJob[] = [];
    const podsOf = new Map<string, readonly PendingPod[]>();
    const bound = this.boundByGroup();
    for (const p of singles) {
      const gang: GangSpec = { name: p.key, minMember: 1, members: [p.spec], topology: {}, priority: p.spec.priority, queue: p.spec.queue };
      jobs.push({ id: p.key, queue: p.spec.queue, priority: p.spec.priority, arrivalMs: p.createdMs, gang, estRuntimeMs: runtimeOf(p, p.spec.queue, [p]), ...submitter(p, undefined) });
      podsOf.set(p.key, [p]);
    }
    for (const [name, members] of gangs) {
      const key = `gang:${name}`;
      const ready = this.readyGang(sch, name, members, bound, note);
      if (ready === undefined) continue;
      const { info, need } = ready;
      const sorted = [...members].sort((a, b) => (a.key < b.key ? -1 : 1));
      const priority = Math.max(...sorted.map((m) => m.spec.priority));
      const queue = this.podGroups.get(name)?.spec?.queue ?? sorted[0]?.spec.queue ?? 'default';
      const first = sorted.reduce((a, b) => (a.createdMs <= b.createdMs ? a : b));
      jobs.push({ id: key, queue, priority, arrivalMs: first.createdMs, gang: { name, minMember: Math.max(need, 1), members: sorted.map((m) => m.spec), topology: info.topology, priority, queue }, estRuntimeMs: runtimeOf(first, queue, sorted), ...submitter(first, this.podGroups.get(name)) });
      podsOf.set(key, sorted);
    }
    const listed = runningJobs(this.cache.allPods(), this.schedulerName, this.groupQueue, DEFAULT_RUNTIME_MODEL.fallbackMs, (n) => sch.state.node(n)?.spec.gpus[0]?.model);
    const running = this.runtimes.running(listed, (r) => givenRuntimeMs(this.cache.pod(r.podIds[0] ?? '')) !== undefined, Date.now());
    this.arrivals.observe(jobs, Date.now());
    // A victim is protected for its own queue's cooldown after it (re)started (Queue spec.preemption.cooldownSeconds,
    // carried by each QueueSpec); this default covers jobs whose queue has no Queue object.
    const minRuntimeMs = DEFAULT_COOLDOWN_SECONDS * 1000;
    return { queues, jobs, podsOf, running, minRuntimeMs };
  }

  private async bindPlan(gang: string | undefined, plan: { pod: PendingPod; placement: Placement }[]): Promise<void> {
    if (gang !== undefined) {
      const task = this.bindGang(gang, plan);
      this.track(task);
      await task;
      return;
    }
    const x = plan[0];
    if (x !== undefined) this.track(this.bind(x.pod, x.placement).catch(() => undefined));
  }

  /** Binds nominated preemptors whose victims have left (or after a bounded wait: the victims may hang). */
  private async bindNominated(): Promise<void> {
    const now = performance.now();
    const ready = this.nominated.filter((n) => n.victims.every((k) => this.cache.pod(k) === undefined) || now - n.sinceMs > NOMINATION_WAIT_MS);
    if (ready.length === 0) return;
    this.nominated = this.nominated.filter((n) => !ready.includes(n));
    for (const n of ready) await this.bindPlan(n.gang, n.plan);
  }

  /** Bound members per pod group (`namespace/name`), counted once per cycle. */
  private boundByGroup(): Map<string, number> {
    const m = new Map<string, number>();
    for (const p of this.cache.allPods()) {
      const g = p.metadata?.labels?.[LABEL.podGroup];
      if (g !== undefined && (p.spec?.nodeName ?? '') !== '') m.set(`${p.metadata?.namespace ?? 'default'}/${g}`, (m.get(`${p.metadata?.namespace ?? 'default'}/${g}`) ?? 0) + 1);
    }
    return m;
  }

  /** How many members the gang still needs placed, or undefined (noted as waiting) while too few pods exist. */
  private readyGang(sch: Scheduler, name: string, members: readonly PendingPod[], bound: ReadonlyMap<string, number>, note = true): { info: { minMember: number; topology: TopologyConstraint }; need: number } | undefined {
    const info = this.gangInfo(name, members);
    const boundAlready = bound.get(name) ?? 0;
    const need = Math.max(0, info.minMember - boundAlready);
    if (members.length >= need) return { info, need };
    const e: Explanation = { subject: `gang ${name}`, nodes: sch.state.size, fitting: 0, reasons: [], message: `gang ${name}: waiting for pods: ${members.length + boundAlready} of minMember ${info.minMember} exist`, unresolvable: false };
    if (note) this.noteFailure(`gang:${name}`, members, e, false);
    return undefined;
  }

  private async scheduleGang(sch: Scheduler, name: string, members: PendingPod[], bound: ReadonlyMap<string, number>): Promise<void> {
    const key = `gang:${name}`;
    const ready = this.readyGang(sch, name, members, bound);
    if (ready === undefined) return;
    const { info, need } = ready;
    const sorted = [...members].sort((a, b) => (a.key < b.key ? -1 : 1));
    const gang: GangSpec = { name, minMember: Math.max(need, 1), members: sorted.map((m) => m.spec), topology: info.topology, priority: sorted[0]?.spec.priority ?? 0, queue: sorted[0]?.spec.queue ?? 'default' };
    const r = sch.scheduleGang(gang);
    if (!r.ok) {
      this.noteFailure(key, members, r.explanation);
      return;
    }
    this.failed.delete(key);
    const byKey = new Map(sorted.map((m) => [m.key, m]));
    const plan = r.placements.map((pl) => ({ pod: byKey.get(pl.podId) as PendingPod, placement: pl }));
    for (const { placement } of plan) {
      const a = sch.state.allocation(placement.podId);
      if (a !== undefined) this.cache.assume(a);
    }
    const task = this.bindGang(name, plan);
    this.track(task);
    await task;
  }

  /**
   * Two phases: write the plan on every member (assigned node, GPUs, plan id and size), then bind. A crash
   * after phase 1 is completed by `recover()`; a failure in phase 1 undoes the plan before anything is bound.
   */
  private async bindGang(name: string, plan: { pod: PendingPod; placement: Placement }[]): Promise<void> {
    const planId = `${name.replace('/', '.')}.${Date.now().toString(36)}`;
    const annotate = plan.map(({ pod, placement }) =>
      this.client.mergePatch(podPath(pod.key), {
        metadata: { annotations: { [ANNOTATION.assignedNode]: placement.node, [ANNOTATION.gpuIndices]: placement.gpus.join(','), [ANNOTATION.planId]: planId, [ANNOTATION.planSize]: String(plan.length) } },
      }),
    );
    const results = await Promise.allSettled(annotate);
    if (results.some((x) => x.status === 'rejected')) {
      this.log(`gang ${name}: could not write the plan (${results.filter((x) => x.status === 'rejected').length} failed); undoing it`);
      await Promise.allSettled(plan.map(({ pod }) => this.client.mergePatch(podPath(pod.key), { metadata: { annotations: planCleared() } })));
      for (const { placement } of plan) this.cache.forget(placement.podId);
      this.stats.rollbacks++;
      return;
    }
    const bindOne = async ({ pod, placement }: { pod: PendingPod; placement: Placement }): Promise<void> => {
      await this.bind(pod, placement, false);
      this.gangBinds++;
      if (this.opts.crashAfterGangBinds !== undefined && this.gangBinds >= this.opts.crashAfterGangBinds) {
        this.log(`failpoint: crashing after ${this.gangBinds} gang bindings`);
        process.kill(process.pid, 'SIGKILL');
      }
    };
    // With the crash failpoint, bind one at a time so that the crash lands between two bindings.
    const binds: PromiseSettledResult<void>[] = [];
    if (this.opts.crashAfterGangBinds !== undefined) for (const x of plan) binds.push(...(await Promise.allSettled([bindOne(x)])));
    else binds.push(...(await Promise.allSettled(plan.map(bindOne))));
    if (binds.some((b) => b.status === 'rejected')) {
      this.log(`gang ${name}: some bindings failed; completing or rolling back`);
      await this.recoverPlan(planId);
    } else {
      this.stats.gangsBound++;
      this.emitEvents(plan.map(({ pod, placement }) => ({ pod: pod.obj, reason: REASON.scheduled, type: 'Normal', message: `Successfully assigned ${pod.key} to ${placement.node} (GPUs ${placement.gpus.join(',') || 'none'}; gang ${name})` })));
    }
  }

  private async bind(p: PendingPod, pl: Placement, event = true): Promise<void> {
    const [ns, name] = split(p.key);
    try {
      await this.client.post(`/api/v1/namespaces/${ns}/pods/${name}/binding`, {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name, namespace: ns, ...(p.obj.metadata?.uid === undefined ? {} : { uid: p.obj.metadata.uid }), annotations: { [ANNOTATION.gpuIndices]: pl.gpus.join(',') } },
        target: { apiVersion: 'v1', kind: 'Node', name: pl.node },
      });
      this.stats.bound++;
      if (event) this.emitEvents([{ pod: p.obj, reason: REASON.scheduled, type: 'Normal', message: `Successfully assigned ${p.key} to ${pl.node} (GPUs ${pl.gpus.join(',') || 'none'})` }]);
    } catch (e) {
      this.stats.bindErrors++;
      // 409: already bound (by another replica) or changed; 404: deleted. Either way the watch tells the truth.
      this.log(`bind ${p.key} → ${pl.node}: ${(e as Error).message}`);
      this.cache.forget(p.key);
      throw e;
    }
  }

  /** Completes a written plan, or rolls it back when it cannot be completed. */
  private async recoverPlan(planId: string): Promise<void> {
    const members = [...this.cache.allPods()].filter((p) => p.metadata?.annotations?.[ANNOTATION.planId] === planId);
    const size = Number(members[0]?.metadata?.annotations?.[ANNOTATION.planSize] ?? '0');
    const bound = members.filter((p) => (p.spec?.nodeName ?? '') !== '');
    const unbound = members.filter((p) => (p.spec?.nodeName ?? '') === '' && p.metadata?.deletionTimestamp === undefined);
    if (unbound.length === 0 && members.length >= size) return;
    let complete = members.length >= size;
    if (complete) {
      const state = this.cache.state();
      for (const p of unbound) {
        const node = p.metadata?.annotations?.[ANNOTATION.assignedNode] ?? '';
        const gpus = parseGpuIndices(p.metadata?.annotations?.[ANNOTATION.gpuIndices]) ?? [];
        const pending = this.cache.pending.get(podKey(p));
        const n = state.node(node);
        if (pending === undefined || n === undefined) {
          complete = false;
          break;
        }
        if (state.allocation(pending.key) === undefined) {
          const placed = placeExisting(state, pending.spec, node, 'planned', gpus);
          if (!placed.ok) {
            complete = false;
            break;
          }
          state.allocate(placed.value.allocation);
          const a = state.allocation(pending.key);
          if (a !== undefined) this.cache.assume(a);
        }
        try {
          await this.bind(pending, { podId: pending.key, node, gpus }, false);
        } catch (e) {
          if (!isStatus(e, 409)) {
            complete = false;
            break;
          }
        }
      }
    }
    if (complete) {
      this.stats.recoveries++;
      this.log(`plan ${planId}: completed ${unbound.length} bindings`);
      return;
    }
    // Roll back: bound members are deleted (their owner recreates them), the rest lose the plan.
    this.stats.rollbacks++;
    this.log(`plan ${planId}: rolling back ${bound.length} bound members`);
    await Promise.allSettled(bound.map((p) => this.client.delete(podPath(podKey(p)))));
    await Promise.allSettled(unbound.map((p) => this.client.mergePatch(podPath(podKey(p)), { metadata: { annotations: planCleared() } })));
    for (const p of unbound) this.cache.forget(podKey(p));
  }

  /** After (re)gaining leadership: finish or undo every gang plan left by a previous leader. */
  private async recover(): Promise<void> {
    const plans = new Set<string>();
    for (const p of this.cache.allPods()) {
      const id = p.metadata?.annotations?.[ANNOTATION.planId];
      if (id !== undefined && p.spec?.schedulerName === this.schedulerName) plans.add(id);
    }
    for (const id of [...plans].sort()) await this.recoverPlan(id);
  }

  private noteFailure(key: string, pods: readonly PendingPod[], e: Explanation, unschedulable = true): void {
    this.stats.failedAttempts++;
    const now = performance.now();
    const prev = this.failed.get(key);
    const repeat = prev !== undefined && prev.message === e.message && now - prev.lastEventMs < EVENT_REPEAT_MS;
    this.failed.set(key, { generation: this.cache.generation, retryAtMs: now + RETRY_MS, message: e.message, lastEventMs: repeat ? (prev?.lastEventMs ?? now) : now });
    if (repeat) {
      // No new event for the same words, but a pod that does not carry them yet (e.g. a gang recreated by its
      // controller) still gets its PodScheduled condition: controllers read it.
      if (unschedulable) {
        for (const p of pods) {
          const c = p.obj.status?.conditions?.find((x) => x.type === 'PodScheduled');
          if (c?.status !== 'False' || c.message !== e.message) this.track(this.markUnschedulable(p, e.message).catch(() => undefined));
        }
      }
      return;
    }
    // A gang still waiting for its pods is not a scheduling failure: say so without a Warning.
    this.emitEvents(pods.map((p) => ({ pod: p.obj, reason: unschedulable ? REASON.failedScheduling : REASON.waitingForGang, type: unschedulable ? 'Warning' : 'Normal', message: e.message })));
    if (unschedulable) for (const p of pods) this.track(this.markUnschedulable(p, e.message).catch(() => undefined));
  }

  private async markUnschedulable(p: PendingPod, message: string): Promise<void> {
    await this.client.request('PATCH', `${podPath(p.key)}/status`, {
      contentType: 'application/strategic-merge-patch+json',
      body: { status: { conditions: [{ type: 'PodScheduled', status: 'False', reason: REASON.unschedulable, message, lastTransitionTime: new Date().toISOString() }] } },
    });
  }

  private emitEvents(list: { pod: V1Pod; reason: string; type: 'Normal' | 'Warning'; message: string }[]): void {
    if (this.opts.events === false) return;
    for (const ev of list) {
      const ns = ev.pod.metadata?.namespace ?? 'default';
      const now = new Date().toISOString();
      this.track(
        this.client
          .post(`/api/v1/namespaces/${ns}/events`, {
            apiVersion: 'v1',
            kind: 'Event',
            metadata: { generateName: `${ev.pod.metadata?.name ?? 'pod'}.`, namespace: ns },
            involvedObject: { apiVersion: 'v1', kind: 'Pod', name: ev.pod.metadata?.name, namespace: ns, uid: ev.pod.metadata?.uid },
            reason: ev.reason,
            message: ev.message.slice(0, 1000),
            type: ev.type,
            source: { component: this.schedulerName },
            reportingComponent: this.schedulerName,
            reportingInstance: this.opts.identity,
            firstTimestamp: now,
            lastTimestamp: now,
            count: 1,
          })
          .catch((e: unknown) => this.log(`event: ${(e as Error).message}`)),
      );
    }
  }

  private track(p: Promise<unknown>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }
}

function split(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}

function podPath(key: string): string {
  const [ns, name] = split(key);
  return `/api/v1/namespaces/${ns}/pods/${name}`;
}

function planCleared(): Record<string, null> {
  return { [ANNOTATION.assignedNode]: null, [ANNOTATION.planId]: null, [ANNOTATION.planSize]: null };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
