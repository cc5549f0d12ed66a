/**
 * Kubernetes → core translation for the live scheduler: the pods waiting for SITS become queued jobs (a pod
 * alone, or a gang by pod group: minMember and topology from the PodGroup or the pods' annotations), bound
 * pods become running jobs, Queue objects become QueueSpecs (no Queue objects: every pod is in its queue
 * label's default queue). Runtimes are the user's (annotation) or learned from finished jobs; arrivals per
 * queue are recorded for the expected-start forecast.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { QueuedJob, RunningJob } from '../../core/actions/jobs.ts';
import { DEFAULT_RUNTIME_MODEL } from '../../core/estimate/runtime.ts';
import { requeueAfterCheckpoint } from '../../core/estimate/job-runtimes.ts';
import type { GangSpec, TopologyConstraint } from '../../core/model/pod.ts';
import { TOPOLOGY_LEVELS, type TopologyLevel } from '../../core/model/topology.ts';
import type { Clock } from '../../core/ports.ts';
import type { QueueSpec } from '../../core/queue/model.ts';
import type { ClusterState } from '../../core/snapshot/cluster-state.ts';
import { LiveArrivals } from '../scheduler/arrival-forecast.ts';
import type { PdbObject } from './disruption-budgets.ts';
import type { ClusterCache, PendingPod } from './cluster-cache.ts';
import { ANNOTATION, LABEL } from '../../api/wire.ts';
import { podFromK8s } from './labels.ts';
import { isOurs, type SchedulerNames } from '../scheduler/scheduler-names.ts';
import { SpreadOwners } from './spread-owners.ts';
import { DEFAULT_COOLDOWN_SECONDS, givenRuntimeMs, jobOfPod, queueFromObject, runningJobs, type InFlightView, type QueueObject } from './queues.ts';
import { LiveRuntimes, requeueVictim } from '../scheduler/runtime-learning.ts';

export interface PodGroupObject {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
  spec?: { minMember?: number; topology?: { required?: string; preferred?: string }; queue?: string; priorityClassName?: string };
  /** Written by the scheduler (object-status.ts); read only to skip unchanged writes. */
  status?: unknown;
}

/** A gang whose pods do not all exist yet: not a job until they do. */
export interface GangShort {
  readonly id: string;
  readonly pods: readonly PendingPod[];
  readonly message: string;
}

export interface JobsView {
  readonly queues: Map<string, QueueSpec>;
  readonly jobs: QueuedJob[];
  readonly podsOf: ReadonlyMap<string, readonly PendingPod[]>;
  /** Computed when first read. */
  readonly running: Map<string, RunningJob>;
  readonly short: readonly GangShort[];
  /** Victim cooldown for jobs whose queue has no Queue object. */
  readonly minRuntimeMs: number;
}

/**
 * When each waiting job was first held for a better placement, as its pods' `held-since` annotation says (the
 * earliest member's): the hold's clock a leader wrote (ADR 0195). Jobs whose pods say nothing are absent.
 */
export function recordedHolds(view: Pick<JobsView, 'podsOf'>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [id, pods] of view.podsOf) {
    let first = Number.POSITIVE_INFINITY;
    for (const p of pods) {
      const t = Date.parse(p.obj.metadata?.annotations?.[ANNOTATION.heldSince] ?? '');
      if (Number.isFinite(t) && t < first) first = t;
    }
    if (Number.isFinite(first)) out.set(id, first);
  }
  return out;
}

/** Above this many waiting jobs the forward run is skipped (it would cost more than a cycle). */
export const ETA_MAX_JOBS = 2000;

export class PodJobs {
  readonly podGroups = new Map<string, PodGroupObject>();
  readonly queueObjs = new Map<string, QueueObject>();
  /** Services and pod controllers, for the default spread constraints (spread-owners.ts, ADR 0077). */
  readonly owners = new SpreadOwners();
  /** policy/v1 PodDisruptionBudgets by `namespace/name`, for preemption (disruption-budgets.ts). */
  readonly pdbs = new Map<string, PdbObject>();
  /** Runtimes learned from the jobs SITS bound (finished, stopped, running), for the expected starts. */
  readonly runtimes = new LiveRuntimes();
  /** Arrivals per queue seen so far, for the forecast of later work in the expected starts. */
  readonly arrivals = new LiveArrivals();
  /**
   * Whether PodGroup objects are watched (the CRD is installed): then a gang's pods wait for their PodGroup
   * unless their annotations describe the gang, so that a gang is never placed with the members seen so far.
   */
  podGroupsWatched = false;

  constructor(
    private readonly cache: ClusterCache,
    private readonly schedulerName: SchedulerNames,
    private readonly clock: Clock,
    /** What the scheduler knows of the running jobs that its cache does not show yet (its own checkpoint asks). */
    private readonly runningOverlay: (running: Map<string, RunningJob>) => Map<string, RunningJob> = (r) => r,
  ) {}

  readonly groupQueue = (group: string): string | undefined => this.podGroups.get(group)?.spec?.queue;

  /** The scheduler's own decisions the watch has not reported yet, as the queues must count them (`runningJobs`). */
  inFlight(nowMs: number): InFlightView {
    return { nowMs, assumedNode: (k) => this.cache.assumedNode(k), leaving: (k) => this.cache.isLeaving(k) };
  }

  /** Follows the runs of the jobs SITS bound, for learned runtimes (`LiveRuntimes`). */
  learn(p: V1Pod, deleted = false): void {
    if (!isOurs(this.schedulerName, p.spec?.schedulerName)) return;
    const job = jobOfPod(p, this.groupQueue);
    if (deleted) {
      this.runtimes.gone(p, job, this.clock.nowMs());
      return;
    }
    const gpus = (): number => {
      const s = podFromK8s(p);
      return s.ok ? (s.value.request.gpuCount * s.value.request.gpuMilli) / 1000 : 0;
    };
    this.runtimes.seen(p, job, gpus, this.clock.nowMs());
  }

  /** Pending pods as units: single pods, and gangs by pod group (pods inside a plan being bound are left out). */
  pendingUnits(): { singles: PendingPod[]; gangs: Map<string, PendingPod[]> } {
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

  gangInfo(name: string, members: readonly { readonly obj: V1Pod }[]): { minMember: number; topology: TopologyConstraint } {
    const g = this.podGroups.get(name);
    const ann = members[0]?.obj.metadata?.annotations ?? {};
    const level = (v: string | undefined): TopologyLevel | undefined =>
      (TOPOLOGY_LEVELS as readonly string[]).includes(v ?? '') ? (v as TopologyLevel) : undefined;
    const required = level(g?.spec?.topology?.required ?? ann[ANNOTATION.topologyRequired]);
    const preferred = level(g?.spec?.topology?.preferred ?? ann[ANNOTATION.topologyPreferred]);
    const minMember = g?.spec?.minMember ?? Number(ann[ANNOTATION.minMember] ?? members.length);
    return {
      minMember: Number.isInteger(minMember) && minMember > 0 ? minMember : members.length,
      topology: { ...(required === undefined ? {} : { required }), ...(preferred === undefined ? {} : { preferred }) },
    };
  }

  /** Bound members per pod group (`namespace/name`). */
  private boundByGroup(): Map<string, number> {
    const m = new Map<string, number>();
    for (const p of this.cache.allPods()) {
      const g = p.metadata?.labels?.[LABEL.podGroup];
      if (g === undefined || (p.spec?.nodeName ?? '') === '') continue;
      const key = `${p.metadata?.namespace ?? 'default'}/${g}`;
      m.set(key, (m.get(key) ?? 0) + 1);
    }
    return m;
  }

  /** Queue specs, waiting jobs (with their pods), running jobs and gangs still short of pods, from the cache. */
  view(state: ClusterState): JobsView {
    const queues = new Map<string, QueueSpec>();
    for (const o of this.queueObjs.values()) {
      const q = queueFromObject(o);
      queues.set(q.name, q);
    }
    const nowMs = this.clock.nowMs();
    // Runtimes: the user's (annotation), else learned from this queue's jobs of the same size class (1 h with nothing learned).
    this.runtimes.flush((id) => (id.startsWith('gang:') ? this.groupQueue(id.slice(5)) : undefined));
    const gpusOf = (ps: readonly PendingPod[]): number => ps.reduce((s, p) => s + (p.spec.request.gpuCount * p.spec.request.gpuMilli) / 1000, 0);
    const runtimeOf = (p: PendingPod, queue: string, members: readonly PendingPod[]): number =>
      this.runtimes.pendingRuntime(queue, gpusOf(members), givenRuntimeMs(p.obj));
    // Namespace and PriorityClass, which the queue may restrict (Queue spec.namespaces, spec.priorityClasses).
    const submitter = (p: PendingPod, g: PodGroupObject | undefined): { namespace: string; priorityClass?: string } => {
      const cls = g?.spec?.priorityClassName ?? p.obj.spec?.priorityClassName;
      return { namespace: p.obj.metadata?.namespace ?? 'default', ...(cls === undefined || cls === '' ? {} : { priorityClass: cls }) };
    };
    const { singles, gangs } = this.pendingUnits();
    const jobs: QueuedJob[] = [];
    const podsOf = new Map<string, readonly PendingPod[]>();
    const short: GangShort[] = [];
    for (const p of singles) {
      const gang: GangSpec = { name: p.key, minMember: 1, members: [p.spec], topology: {}, priority: p.spec.priority, queue: p.spec.queue };
      jobs.push({
        id: p.key,
        queue: p.spec.queue,
        priority: p.spec.priority,
        arrivalMs: p.createdMs,
        seq: p.seq,
        gang,
        estRuntimeMs: runtimeOf(p, p.spec.queue, [p]),
        ...submitter(p, undefined),
      });
      podsOf.set(p.key, [p]);
    }
    const bound = gangs.size === 0 ? new Map<string, number>() : this.boundByGroup();
    for (const [name, members] of gangs) {
      const key = `gang:${name}`;
      if (this.podGroupsWatched && !this.podGroups.has(name) && members.every((m) => m.obj.metadata?.annotations?.[ANNOTATION.minMember] === undefined)) {
        short.push({ id: key, pods: members, message: `gang ${name}: waiting for PodGroup ${name} (its pods name it; no ${ANNOTATION.minMember} annotation)` });
        continue;
      }
      const info = this.gangInfo(name, members);
      const boundAlready = bound.get(name) ?? 0;
      const need = Math.max(0, info.minMember - boundAlready);
      if (members.length < need) {
        short.push({
          id: key,
          pods: members,
          message: `gang ${name}: waiting for pods: ${members.length + boundAlready} of minMember ${info.minMember} exist`,
        });
        continue;
      }
      const sorted = [...members].sort((a, b) => (a.key < b.key ? -1 : 1));
      const priority = Math.max(...sorted.map((m) => m.spec.priority));
      const queue = this.podGroups.get(name)?.spec?.queue ?? sorted[0]?.spec.queue ?? 'default';
      const first = sorted.reduce((a, b) => (a.createdMs < b.createdMs || (a.createdMs === b.createdMs && a.seq <= b.seq) ? a : b));
      jobs.push({
        id: key,
        queue,
        priority,
        arrivalMs: first.createdMs,
        seq: first.seq,
        gang: { name, minMember: Math.max(need, 1), members: sorted.map((m) => m.spec), topology: info.topology, priority, queue },
        estRuntimeMs: runtimeOf(first, queue, sorted),
        ...submitter(first, this.podGroups.get(name)),
      });
      podsOf.set(key, sorted);
    }
    this.arrivals.observe(jobs, nowMs);
    // Running jobs are O(pods) to list: only when a cycle or a forward run needs them (not on an idle turn).
    let running: Map<string, RunningJob> | undefined;
    const runningNow = (): Map<string, RunningJob> => {
      if (running === undefined) {
        const listed = runningJobs(
          this.cache.allPods(),
          this.schedulerName,
          this.groupQueue,
          DEFAULT_RUNTIME_MODEL.fallbackMs,
          (n) => state.node(n)?.spec.gpus[0]?.model,
          this.inFlight(nowMs),
        );
        running = this.runningOverlay(this.runtimes.running(listed, (r) => givenRuntimeMs(this.cache.pod(r.podIds[0] ?? '')) !== undefined, nowMs));
      }
      return running;
    };
    // A victim is protected for its own queue's cooldown after it (re)started (Queue spec.preemption.cooldownSeconds,
    // carried by each QueueSpec); this default covers jobs whose queue has no Queue object.
    return {
      queues,
      jobs,
      podsOf,
      get running() {
        return runningNow();
      },
      short,
      minRuntimeMs: DEFAULT_COOLDOWN_SECONDS * 1000,
    };
  }

  /** The forward run's forecast of later arrivals (at most what keeps it within ETA_MAX_JOBS jobs). */
  forecast(nowMs: number, waiting: number): QueuedJob[] {
    return this.arrivals.forecast(nowMs, (q, gpus) => this.runtimes.pendingRuntime(q, gpus, undefined), Math.max(0, ETA_MAX_JOBS - waiting));
  }

  /** The forward run's victims go back to their queue when their controller recreates them (`requeueVictim`). */
  requeueOf(jobs: readonly QueuedJob[], forecast: readonly QueuedJob[]): (v: RunningJob, atMs: number) => QueuedJob | undefined {
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
    const topology = v.id.startsWith('gang:')
      ? this.gangInfo(
          name,
          pods.map((obj) => ({ obj })),
        ).topology
      : {};
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
}
