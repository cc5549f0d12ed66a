/**
 * One scheduling cycle over queued jobs (the session of Volcano/KAI, as a function):
 *   1. order: the queue with the lowest weighted dominant share goes next; inside a queue, priority then FIFO;
 *      a job whose priority class or namespace its queue does not accept is held ('inadmissible');
 *   2. admission: quota (nominal, borrowing within the cohort) AND a topology-feasible placement of the
 *      whole gang, both against the same cluster state — a job is admitted only by being placed;
 *   3. reservations: the first job of a queue that cannot be placed gets a reservation (the nodes and the
 *      time it would start as running jobs end), and later jobs backfill only where they cannot delay it;
 *   4. preemption: whole gangs only, fewest and cheapest victims, topology-aware, borrowed quota first,
 *      never a job in a critical phase (it gets a bounded grace instead), never a job younger than the
 *      cooldown, and never so that the preemptor's queue would exceed its deserved share (no loops). The
 *      preemptor's queue policy says whether it may preempt in its own queue (withinQueue) and other
 *      queues' jobs (reclaimWithinCohort: Never, LowerPriority, Any); the cooldown and the critical-phase
 *      grace are the victim's queue's. As kube-scheduler's DefaultPreemption (ADR 0059): a pod with
 *      `preemptionPolicy: Never` waits instead of preempting, and victims whose eviction would break a
 *      PodDisruptionBudget come last — the plan that breaks the fewest budgets wins, then the one with the
 *      lowest highest-priority victim, the fewest victims, the least work lost.
 * Everything happens in statements on the ClusterState; the caller carries out the result.
 */
import type { Placement } from '../framework/scheduler.ts';
import type { Scheduler } from '../framework/scheduler.ts';
import { shapeKey } from '../framework/score-index.ts';
import type { QueuedUnit } from '../framework/types.ts';
import type { TopologyLevel } from '../model/topology.ts';
import type { TraceAttributes, TraceSpan } from '../ports.ts';
import type { Allocation, ClusterState } from '../snapshot/cluster-state.ts';
import { Statement } from '../statement/statement.ts';
import { deservedGpu, weightedShare } from '../queue/fair-share.ts';
import { add, inadmissible, sub, ZERO, type QueueSpec, type Resources } from '../queue/model.ts';
import { borrowedBy, checkQuota, type QueueUsage } from '../queue/quota.ts';
import { lessCost, pdbViolations, type DisruptionBudget, type PreemptionCost } from './disruption.ts';
import { jobResources, lostWork, type QueuedJob, type RunningJob } from './jobs.ts';
import { checkpointCommitted, checkpointFailed, checkpointStep, DEFAULT_CHECKPOINT_GRACE_MS, inCriticalPhase } from './checkpoint.ts';

export interface CycleOptions {
  readonly backfill: boolean;
  readonly preemption: boolean;
  /** Queues ordered by weighted fair share; false = one FIFO over all jobs (the baseline). */
  readonly fairShare: boolean;
  /** A job that (re)started less than this ago is not preempted (cooldown against loops); a queue's own cooldown overrides it. */
  readonly minRuntimeMs: number;
  /** A victim in a critical phase ending within this is preempted when it ends; later ones are spared. A queue's own grace overrides it. */
  readonly criticalGraceMs: number;
  /** Reservations at most (one per queue head, in fair-share order). */
  readonly maxReservations: number;
  /** Explain why each waiting job did not fit (costs a pass over the nodes per failed job). */
  readonly explain: boolean;
  /**
   * Checkpoint-aware preemption (ADR 0093): victims ordered by the work they would lose first, a checkpoint in
   * flight counts as a critical phase, and a victim that can checkpoint is asked for one and evicted once it
   * is committed or its queue's checkpoint grace has run out. Off: preemption as before.
   */
  readonly checkpointAware: boolean;
  /** How long a victim may take to commit a requested checkpoint; a queue's own grace overrides it. */
  readonly checkpointGraceMs: number;
}

export const DEFAULT_CYCLE_OPTIONS: CycleOptions = {
  backfill: true,
  preemption: true,
  fairShare: true,
  minRuntimeMs: 5 * 60_000,
  criticalGraceMs: 10 * 60_000,
  maxReservations: 4,
  explain: true,
  checkpointAware: false,
  checkpointGraceMs: DEFAULT_CHECKPOINT_GRACE_MS,
};

export type WaitReason = 'quota' | 'capacity' | 'reservation' | 'fair-share' | 'critical-victim' | 'checkpoint-victim' | 'inadmissible';

export interface Waiting {
  readonly reason: WaitReason;
  readonly message: string;
  /**
   * When the wait can end with nothing else happening (a victim's grace or critical phase runs out): a host
   * that only runs cycles on events must run one then.
   */
  readonly retryAtMs?: number;
}

export interface Reservation {
  readonly jobId: string;
  readonly startMs: number;
  readonly nodes: readonly string[];
  /** GPU milli the reserved job needs on each of its nodes. */
  readonly needs: Readonly<Record<string, number>>;
}

/** The reservation of `jobId` from `startMs` on the nodes its pods would take, with the GPU milli each needs there. */
export function reservationFor(jobId: string, startMs: number, pods: Iterable<{ readonly node: string; readonly gpuMilli: number }>): Reservation {
  const needs: Record<string, number> = {};
  for (const p of pods) needs[p.node] = (needs[p.node] ?? 0) + p.gpuMilli;
  return { jobId, startMs, nodes: Object.keys(needs).sort(), needs };
}

export interface CycleInput {
  readonly nowMs: number;
  readonly scheduler: Scheduler;
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly pending: readonly QueuedJob[];
  readonly running: ReadonlyMap<string, RunningJob>;
  readonly options?: Partial<CycleOptions>;
  /**
   * Jobs the scheduling queue holds back (nothing that could help them happened since they last failed),
   * with the wait they got then. They count for demand and order but are not tried again, unless this cycle
   * frees resources by preemption or would give the job a reservation (it heads its queue): then the answer
   * could differ, and they are tried as before.
   */
  readonly parked?: ReadonlyMap<string, Waiting>;
  /**
   * PodDisruptionBudgets over the running pods: preemption avoids breaking them where it can. A function is
   * called at most once, when the cycle first plans a preemption (hosts whose budgets cost a pass over every
   * pod pay it only then).
   */
  readonly disruptionBudgets?: readonly DisruptionBudget[] | (() => readonly DisruptionBudget[]);
  /**
   * Reservations the host holds across cycles (a defragmentation plan's freed domain, ADR 0144): other jobs may
   * use those nodes only as a backfill job may use a reserved node, and the reserved job itself is not kept off
   * them. They take none of the cycle's own reservation slots.
   */
  readonly held?: readonly Reservation[];
}

export interface CycleResult {
  readonly started: readonly { readonly job: QueuedJob; readonly placements: readonly Placement[] }[];
  readonly preempted: readonly { readonly victim: RunningJob; readonly by: string; readonly reason: string }[];
  /** Victims in a critical phase: to be preempted for `by` once `atMs` passes. */
  readonly deferred: readonly { readonly victim: RunningJob; readonly by: string; readonly atMs: number }[];
  /** Victims to ask for a checkpoint for `by` (checkpoint-aware preemption): evicted once it commits or at `deadlineMs`. */
  readonly checkpointRequests: readonly CheckpointRequest[];
  readonly waiting: ReadonlyMap<string, Waiting>;
  readonly reservations: readonly Reservation[];
  /** Jobs whose placement was tried (the rest were admitted by reuse: parked, same shape as a failed one, or held). */
  readonly attempted: number;
}

export interface CheckpointRequest {
  readonly victim: RunningJob;
  readonly by: string;
  readonly deadlineMs: number;
}

const byId = (a: QueuedJob, b: QueuedJob): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function usageOf(running: Iterable<RunningJob>): Map<string, QueueUsage> {
  const m = new Map<string, { total: Resources; byModel: Record<string, number> }>();
  for (const r of running) {
    const u = m.get(r.queue) ?? { total: ZERO, byModel: {} };
    u.total = add(u.total, r.resources);
    if (r.gpuModel !== undefined) u.byModel[r.gpuModel] = (u.byModel[r.gpuModel] ?? 0) + r.resources.gpuMilli;
    m.set(r.queue, u);
  }
  return m;
}

/** Adds (or with sign −1 removes) `r` to queue `q`'s usage in `usage`, and its GPUs to `model`'s when known. */
function addUsageTo(usage: Map<string, QueueUsage>, q: string, r: Resources, sign: 1 | -1, model?: string): void {
  const u = usage.get(q) ?? { total: ZERO, byModel: {} };
  const byModel = { ...u.byModel };
  if (model !== undefined) byModel[model] = (byModel[model] ?? 0) + sign * r.gpuMilli;
  usage.set(q, { total: sign === 1 ? add(u.total, r) : sub(u.total, r), byModel });
}

/** Capacity and GPU models of a cluster state, per health version: static otherwise, and O(nodes) to count. */
const capacityCache = new WeakMap<ClusterState, { readonly version: number; readonly capacity: Resources; readonly models: readonly string[] }>();

function capacityOf(s: Scheduler): { readonly capacity: Resources; readonly models: readonly string[] } {
  const state = s.state;
  const hit = capacityCache.get(state);
  if (hit !== undefined && hit.version === state.healthVersion) return hit;
  const entry = {
    version: state.healthVersion,
    capacity: clusterCapacity(s),
    models: [...new Set(state.nodes.flatMap((n) => n.spec.gpus.map((g) => g.model)))].sort(),
  };
  capacityCache.set(state, entry);
  return entry;
}

/** What the cluster's healthy nodes hold (a scheduler, or any view with its state). */
export function clusterCapacity(s: { readonly state: ClusterState }): Resources {
  let gpuMilli = 0;
  let cpuMilli = 0;
  let memoryMiB = 0;
  for (const n of s.state.nodes) {
    gpuMilli += n.usableGpuCount() * 1000;
    cpuMilli += n.spec.cpuMilli;
    memoryMiB += n.spec.memoryMiB;
  }
  return { gpuMilli, cpuMilli, memoryMiB };
}

export function runCycle(input: CycleInput): CycleResult {
  const opts = { ...DEFAULT_CYCLE_OPTIONS, ...input.options };
  const { scheduler, queues, nowMs } = input;
  const state = scheduler.state;
  const tracer = scheduler.tracer;
  const running = new Map(input.running);
  const usage = usageOf(running.values());
  const { capacity, models: clusterModels } = capacityOf(scheduler);
  const started: { job: QueuedJob; placements: readonly Placement[] }[] = [];
  const preempted: { victim: RunningJob; by: string; reason: string }[] = [];
  const deferred: { victim: RunningJob; by: string; atMs: number }[] = [];
  const checkpointRequests: CheckpointRequest[] = [];
  const waiting = new Map<string, Waiting>();
  const reservations: Reservation[] = [];
  const hostHeld = input.held ?? [];
  const reservedNodes = new Set<string>(hostHeld.flatMap((r) => r.nodes));
  let budgetList: readonly DisruptionBudget[] | undefined;
  const budgetsOf = (): readonly DisruptionBudget[] => {
    const given = input.disruptionBudgets ?? NO_BUDGETS;
    return (budgetList ??= typeof given === 'function' ? given() : given);
  };
  // kube's preemptionPolicy binds pods outside any Queue; a Queue's spec.preemption governs its own jobs
  // (the PriorityClass admission copies the class's Never onto every pod, and the guard rule
  // preemption-interrupts-gangs advises Never so that only the queue preempts, whole gangs: ADR 0060).
  const neverPreempts = (job: QueuedJob): boolean => !queues.has(job.queue) && hasNeverMember(job);

  const demandByQueue = new Map<string, number>();
  for (const j of input.pending) demandByQueue.set(j.queue, (demandByQueue.get(j.queue) ?? 0) + jobResources(j).gpuMilli);
  const deserved = deservedGpu(
    [...queues.values()].map((q) => ({ queue: q, demandGpuMilli: (usage.get(q.name)?.total.gpuMilli ?? 0) + (demandByQueue.get(q.name) ?? 0) })),
    capacity.gpuMilli,
  );

  // Per-queue FIFO lists (or one global list for the baseline).
  // A cursor per list: shift() would make a large backlog quadratic.
  const lists = new Map<string, { items: QueuedJob[]; pos: number }>();
  for (const j of input.pending) {
    const key = opts.fairShare ? j.queue : '*';
    const l = lists.get(key) ?? { items: [], pos: 0 };
    l.items.push(j);
    lists.set(key, l);
  }
  // Inside a queue the profile's queue sort decides (priority, arrival, submission order), then the id; the
  // baseline's one global list is plain arrival order.
  const sort = scheduler.profile.queueSort.queueSort;
  const unit = (j: QueuedJob): QueuedUnit => ({ key: j.id, priority: j.priority, queue: j.queue, arrivalMs: j.arrivalMs, seq: j.seq ?? 0 });
  const jobOrder =
    sort === undefined
      ? (a: QueuedJob, b: QueuedJob) => b.priority - a.priority || a.arrivalMs - b.arrivalMs || byId(a, b)
      : (a: QueuedJob, b: QueuedJob) => sort(unit(a), unit(b)) || byId(a, b);
  for (const l of lists.values()) l.items.sort(opts.fairShare ? jobOrder : (a, b) => a.arrivalMs - b.arrivalMs || (a.seq ?? 0) - (b.seq ?? 0) || byId(a, b));
  const headReserved = new Set<string>();

  const queueOf = (name: string): QueueSpec =>
    queues.get(name) ?? { name, tenant: name, weight: 1, nominal: capacity, borrowingLimit: ZERO, lendingLimit: ZERO, guaranteed: ZERO, models: {} };
  const share = (q: string): number => weightedShare(queueOf(q), usage.get(q)?.total ?? ZERO, capacity);
  const addUsage = (q: string, r: Resources, sign: 1 | -1, model?: string): void => addUsageTo(usage, q, r, sign, model);

  const next = (): QueuedJob | undefined => {
    let bestKey: string | undefined;
    let bestShare = Infinity;
    for (const [key, l] of lists) {
      if (l.pos >= l.items.length) continue;
      const s = opts.fairShare ? share(key) : 0;
      if (s < bestShare || (s === bestShare && bestKey !== undefined && key < bestKey)) {
        bestShare = s;
        bestKey = key;
      }
    }
    if (bestKey === undefined) return undefined;
    const l = lists.get(bestKey) as { items: QueuedJob[]; pos: number };
    return l.items[l.pos++];
  };

  // Equivalence classes: a gang shape that failed (placement and preemption) fails again in this cycle
  // unless something was released since — skip the retry.
  const failedShapes = new Map<string, { releases: number; waiting: Waiting; gang: string }>();
  let releases = 0;
  let attempted = 0;
  const parked = input.parked;
  for (let job = next(); job !== undefined; job = next()) {
    const held = parked?.get(job.id);
    if (
      held !== undefined &&
      releases === 0 &&
      !(opts.backfill && reservations.length < opts.maxReservations && !headReserved.has(opts.fairShare ? job.queue : '*'))
    ) {
      waiting.set(job.id, held);
      continue;
    }
    const q = queueOf(job.queue);
    // With queues declared, a job naming one that does not exist waits for it (as Kueue holds a workload whose
    // queue is missing): running it in an undeclared queue without quota would escape the tenant's limits.
    const refused =
      queues.size > 0 && !queues.has(job.queue) && job.queue !== DEFAULT_QUEUE
        ? `queue ${job.queue} does not exist (no Queue object of that name)`
        : inadmissible(q, job);
    if (refused !== undefined) {
      waiting.set(job.id, { reason: 'inadmissible', message: refused });
      continue;
    }
    const demand = jobResources(job);
    // A queue nobody declared (a pod's queue label with no Queue object) has no quota: only capacity limits it.
    const quota = queues.has(job.queue) ? checkQuota(q, queues, usage, demand) : UNLIMITED_QUOTA;
    if (!quota.ok) {
      // Only the cohort's lendable quota is short (other queues borrowed it): a queue under its fair share
      // takes borrowed GPUs back, as with capacity (Kueue's fair-sharing preemption). Without this a queue
      // over its nominal quota but under its share waits on quota while others keep more than theirs.
      const reclaimable = quota.cohortShort === true && opts.preemption && !neverPreempts(job) ? withinModelQuotas(job, q, demand) : undefined;
      if (reclaimable !== undefined && typeof reclaimable !== 'string' && tryPreempt(reclaimable, demand, true) === 'started') continue;
      if (!waiting.has(job.id)) waiting.set(job.id, { reason: 'quota', message: quota.reason });
      continue;
    }
    // Per GPU model quotas: placement decides the model, so the models without room are taken out of the
    // gang's choice before it is placed (quota and topology together); none left means a quota wait.
    const restricted = withinModelQuotas(job, q, demand);
    if (typeof restricted === 'string') {
      waiting.set(job.id, { reason: 'quota', message: restricted });
      continue;
    }
    job = restricted;
    const shape = gangShapeKey(job, opts.preemption, neverPreempts(job));
    const prior = failedShapes.get(shape);
    if (prior !== undefined && prior.releases === releases && !(opts.backfill && !headReserved.has(opts.fairShare ? job.queue : '*'))) {
      waiting.set(job.id, renamed(prior.waiting, prior.gang, job.gang.name));
      continue;
    }
    attempted++;
    // One span per placement attempt (a pod is a gang of one); off (NO_TRACER) it costs this branch only.
    const span = tracer.enabled ? tracer.start('sits.attempt', attemptAttributes(job)) : undefined;
    try {
      const stmt = scheduler.statement();
      const placed = scheduler.placeGang(job.gang, stmt, { explain: opts.explain });
      if (placed.ok) {
        span?.set({ 'sits.topology.level': placed.level });
        const endMs = nowMs + job.estRuntimeMs;
        // A backfill job may share a reserved node only if it ends first or leaves the node enough free GPUs.
        const blocks = (r: Reservation): boolean =>
          r.jobId !== job?.id &&
          r.startMs < endMs &&
          placed.placements.some((p) => r.nodes.includes(p.node) && (state.node(p.node)?.gpuFreeMilli() ?? 0) < (r.needs[p.node] ?? 0));
        const blocking = hostHeld.find(blocks) ?? reservations.find(blocks);
        if (blocking === undefined) {
          stmt.commit();
          const model = state.node(placed.placements[0]?.node ?? '')?.spec.gpus[0]?.model;
          addUsage(job.queue, demand, 1, model);
          started.push({ job, placements: placed.placements });
          continue;
        }
        stmt.discard();
        waiting.set(job.id, {
          reason: 'reservation',
          message: `would delay the reservation of ${blocking.jobId} (starts in ${Math.round((blocking.startMs - nowMs) / 1000)} s on ${blocking.nodes.length} nodes); runs ${Math.round(job.estRuntimeMs / 1000)} s`,
        });
        continue;
      }
      stmt.discard();
      let why = placed.explanation.message;
      let reason: WaitReason = 'capacity';
      if (opts.preemption && neverPreempts(job)) why = `${why}; preemptionPolicy Never: waits for room, preempts nothing`;
      else if (opts.preemption) {
        const p = tryPreempt(job, demand);
        if (p === 'started') continue;
        // Other queues hold GPUs, but this one would pass its fair share: it waits for them, it does not reclaim.
        const over = opts.fairShare ? aboveShare(job, demand) : undefined;
        if (over !== undefined) {
          reason = 'fair-share';
          why = `${why}; ${over}`;
        }
      }
      if (opts.backfill && reservations.length < opts.maxReservations && !headReserved.has(opts.fairShare ? job.queue : '*')) {
        headReserved.add(opts.fairShare ? job.queue : '*');
        const r = planReservation(job);
        if (r !== undefined) {
          reservations.push(r);
          for (const n of r.nodes) reservedNodes.add(n);
          // A deferred preemption says more than the reservation: keep its reason.
          if (!waiting.has(job.id))
            waiting.set(job.id, { reason, message: `${why}; reserved ${r.nodes.length} nodes, expected start in ${Math.round((r.startMs - nowMs) / 1000)} s` });
          continue;
        }
      }
      if (!waiting.has(job.id)) waiting.set(job.id, { reason, message: why });
      failedShapes.set(shape, { releases, waiting: waiting.get(job.id) as Waiting, gang: job.gang.name });
    } finally {
      if (span !== undefined) endAttempt(span, job, started, preempted, waiting);
    }
  }

  return { started, preempted, deferred, checkpointRequests, waiting, reservations, attempted };

  /** The job with its members limited to GPU models whose per-model quota has room, or why none has. */
  function withinModelQuotas(job: QueuedJob, q: QueueSpec, demand: Resources): QueuedJob | string {
    if (demand.gpuMilli === 0 || Object.keys(q.models).length === 0) return job;
    const refused = new Map<string, string>();
    for (const m of clusterModels) {
      if (q.models[m] === undefined) continue;
      const v = checkQuota(q, queues, usage, demand, m);
      if (!v.ok) refused.set(m, v.reason);
    }
    if (refused.size === 0) return job;
    const members = job.gang.members.map((pod) => {
      const allowed = (pod.gpuModels.length > 0 ? pod.gpuModels : clusterModels).filter((m) => !refused.has(m));
      return allowed.length === 0 ? undefined : { ...pod, gpuModels: allowed };
    });
    if (members.some((m) => m === undefined)) return [...refused.values()].join('; ');
    return { ...job, gang: { ...job.gang, members: members as QueuedJob['gang']['members'] } };
  }

  /** Earliest start of `job` as running jobs end in estimated order; reserved nodes of earlier reservations are off limits. */
  function planReservation(job: QueuedJob): Reservation | undefined {
    const stmt = new Statement(state);
    blockNodes(stmt, reservedNodes);
    const order = [...running.values()].sort((a, b) => a.estEndMs - b.estEndMs || (a.id < b.id ? -1 : 1));
    // Placement is monotone in the set of jobs released, so the shortest prefix can be found by bisection.
    const base = stmt.checkpoint();
    const feasibleAfter = (k: number): Placement[] | undefined => {
      stmt.rollback(base);
      for (let i = 0; i < k; i++) for (const pod of (order[i] as RunningJob).podIds) stmt.release(pod);
      const cp = stmt.checkpoint();
      const r = scheduler.placeGang(job.gang, stmt, { explain: false });
      stmt.rollback(cp);
      return r.ok ? [...r.placements] : undefined;
    };
    let lo = 0;
    let hi = order.length;
    if (feasibleAfter(hi) === undefined) {
      stmt.discard();
      return undefined;
    }
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (feasibleAfter(mid) !== undefined) hi = mid;
      else lo = mid + 1;
    }
    const placements = feasibleAfter(lo) as Placement[];
    stmt.discard();
    const startMs = Math.max(nowMs, lo === 0 ? nowMs : (order[lo - 1] as RunningJob).estEndMs);
    return reservationFor(
      job.id,
      startMs,
      placements.map((p) => {
        const member = job.gang.members.find((m) => m.id === p.podId);
        return { node: p.node, gpuMilli: member === undefined ? 0 : member.request.gpuCount * member.request.gpuMilli };
      }),
    );
  }

  /** Takes every free GPU of the given nodes with placeholder allocations (YuniKorn-style), inside stmt. */
  function blockNodes(stmt: Statement, nodes: ReadonlySet<string>): void {
    for (const name of nodes) {
      const n = state.node(name);
      if (n === undefined) continue;
      const gpus: number[] = [];
      for (let g = 0; g < n.gpuFree.length; g++) if (n.gpuUsable[g] === 1 && n.gpuFree[g] === 1000) gpus.push(g);
      if (gpus.length > 0) stmt.allocate({ podId: `reservation/${name}`, node: name, gpus, gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: '' });
    }
  }

  /**
   * Frees room for `job` by preempting whole gangs. With `forQuota` the victims must also bring the job within
   * its quota (they return what their queues borrowed from the cohort), not only make the gang fit.
   */
  function tryPreempt(job: QueuedJob, demand: Resources, forQuota = false): 'started' | 'no' {
    if (!tracer.enabled) return planPreemption(job, demand, forQuota);
    const span = tracer.start('sits.preempt', { 'sits.job.id': job.id, 'sits.queue': job.queue, 'sits.preempt.for_quota': forQuota });
    const before = preempted.length;
    try {
      const r = planPreemption(job, demand, forQuota);
      const victims = preempted.slice(before).map((p) => p.victim.id);
      span.set({ 'sits.result': r, 'sits.preempt.victims': victims.length, ...(victims.length === 0 ? {} : { 'sits.preempt.victim_ids': capped(victims) }) });
      return r;
    } finally {
      span.end();
    }
  }

  function planPreemption(job: QueuedJob, demand: Resources, forQuota: boolean): 'started' | 'no' {
    const myUsage = usage.get(job.queue)?.total ?? ZERO;
    const myDeserved = deserved.get(job.queue) ?? 0;
    const reclaimAllowed = myUsage.gpuMilli + demand.gpuMilli <= myDeserved + 1e-6;
    if (forQuota && !reclaimAllowed) return 'no';
    const policy = queueOf(job.queue).preemption ?? {};
    const withinQueue = policy.withinQueue ?? 'LowerPriority';
    const reclaim = policy.reclaimWithinCohort ?? 'Any';
    const aware = opts.checkpointAware;
    const candidates: { r: RunningJob; borrowing: boolean; violates: boolean; cost: number; critical: boolean }[] = [];
    for (const r of running.values()) {
      const vq = queueOf(r.queue);
      if (!r.preemptible || nowMs - r.startMs < (vq.preemption?.cooldownMs ?? opts.minRuntimeMs)) continue;
      const vUsage = usage.get(r.queue)?.total ?? ZERO;
      if (r.queue === job.queue) {
        if (withinQueue === 'Never' || r.priority >= job.priority) continue;
      } else {
        if (reclaim === 'Never' || (reclaim === 'LowerPriority' && r.priority >= job.priority) || !reclaimAllowed) continue;
        const overShare = vUsage.gpuMilli > (deserved.get(r.queue) ?? 0) + 1e-6 && vUsage.gpuMilli - r.resources.gpuMilli >= vq.guaranteed.gpuMilli;
        if (!overShare) continue;
      }
      candidates.push({
        r,
        borrowing: borrowedBy(vq, vUsage).gpuMilli > 0,
        violates: false,
        cost: lostWork(r, nowMs),
        critical: aware && inCriticalPhase(r, nowMs),
      });
    }
    if (candidates.length === 0) return 'no';
    const budgets = budgetsOf();
    if (budgets.length > 0) for (const c of candidates) c.violates = pdbViolations(c.r.podIds, budgets).count > 0;
    // Borrowed quota first, then victims no PodDisruptionBudget protects (so the greedy pass takes them
    // first and the pruning reprieves the protected ones first, as kube does), then lower priority, then the
    // least work lost, then the newest.
    // Checkpoint-aware, jobs in a critical phase go last (a plan without them need not wait).
    candidates.sort(
      (a, b) =>
        Number(b.borrowing) - Number(a.borrowing) ||
        Number(a.violates) - Number(b.violates) ||
        Number(a.critical) - Number(b.critical) ||
        a.r.priority - b.r.priority ||
        a.cost - b.cost ||
        b.r.startMs - a.r.startMs,
    );
    const level: TopologyLevel | undefined = job.gang.topology.required ?? job.gang.topology.preferred;
    const groups = level === undefined ? [candidates] : byDomain(candidates, level);
    let best: { victims: RunningJob[]; placements: Placement[]; cost: PreemptionCost; critical: number } | undefined;
    for (const group of groups) {
      const plan = victimsFor(
        job,
        group.map((c) => c.r),
        forQuota ? (victims) => quotaAllowsWithout(job, demand, victims) : undefined,
      );
      if (plan === undefined) continue;
      const lost = plan.victims.reduce((s, v) => s + lostWork(v, nowMs), 0);
      const pdb = pdbViolations(
        plan.victims.flatMap((v) => v.podIds),
        budgets,
      ).count;
      const top = Math.max(...plan.victims.map((v) => v.priority));
      // Checkpoint-aware, the work lost decides before the number of victims: two freshly checkpointed gangs
      // cost less than one that would redo hours. The third key is then lost work, the fourth the count.
      const cost: PreemptionCost = aware ? [pdb, top, lost, plan.victims.length] : [pdb, top, plan.victims.length, lost];
      // Checkpoint-aware, a plan that needs no victim in a critical phase beats any that does (it need not wait).
      const crit = aware ? plan.victims.filter((v) => inCriticalPhase(v, nowMs)).length : 0;
      if (best === undefined || crit < best.critical || (crit === best.critical && lessCost(cost, best.cost))) best = { ...plan, cost, critical: crit };
    }
    if (best === undefined) return 'no';
    const critical = best.victims.filter((v) => (v.criticalUntilMs ?? 0) > nowMs);
    if (critical.length > 0) {
      const waitMs = Math.max(...critical.map((v) => (v.criticalUntilMs as number) - nowMs));
      const withinGrace = critical.every(
        (v) => (v.criticalUntilMs as number) - nowMs <= (queueOf(v.queue).preemption?.criticalGraceMs ?? opts.criticalGraceMs),
      );
      if (withinGrace) for (const v of critical) deferred.push({ victim: v, by: job.id, atMs: v.criticalUntilMs as number });
      waiting.set(job.id, {
        reason: 'critical-victim',
        message: `preemption of ${critical.map((v) => v.id).join(', ')} waits for their critical phase (checkpoint/all-reduce) to end in ${Math.round(waitMs / 1000)} s`,
        retryAtMs: nowMs + waitMs,
      });
      return 'no';
    }
    // Checkpoint-aware: a checkpoint the victim started itself has no known end: the preemptor waits for it.
    const writing = aware ? best.victims.filter((v) => inCriticalPhase(v, nowMs)) : [];
    if (writing.length > 0) {
      waiting.set(job.id, {
        reason: 'critical-victim',
        message: `preemption of ${writing.map((v) => v.id).join(', ')} waits for the checkpoint they are writing`,
      });
      return 'no';
    }
    const graceOf = (v: RunningJob): number => queueOf(v.queue).preemption?.checkpointGraceMs ?? opts.checkpointGraceMs;
    if (aware) {
      const steps = best.victims.map((v) => ({ v, step: checkpointStep(v, nowMs, graceOf(v)) }));
      const unready = steps.filter((s) => s.step !== 'ready');
      if (unready.length > 0) {
        for (const s of unready) if (s.step === 'request') checkpointRequests.push({ victim: s.v, by: job.id, deadlineMs: nowMs + graceOf(s.v) });
        const deadline = Math.max(...unready.map((s) => (s.step === 'request' ? nowMs : (s.v.checkpointRequestedMs as number)) + graceOf(s.v)));
        waiting.set(job.id, {
          reason: 'checkpoint-victim',
          message: `preemption of ${unready.map((s) => s.v.id).join(', ')} waits for the checkpoint asked of them (evicted at the latest in ${Math.round((deadline - nowMs) / 1000)} s)`,
          retryAtMs: deadline,
        });
        return 'no';
      }
    }
    const stmt = scheduler.statement();
    // Breaking a budget is said, as it is the exception (no plan without it).
    const broken =
      best.cost[0] > 0
        ? pdbViolations(
            best.victims.flatMap((v) => v.podIds),
            budgets,
          ).budgets
        : [];
    const brokenNote = broken.length === 0 ? '' : `; no plan kept PodDisruptionBudget ${broken.join(', ')}`;
    const checkpointNote = (v: RunningJob): string => {
      if (!aware || v.checkpointable !== true) return '';
      if (checkpointCommitted(v)) return `; after the checkpoint it committed ${Math.round((nowMs - (v.lastCheckpointMs as number)) / 1000)} s ago`;
      return checkpointFailed(v)
        ? '; the checkpoint asked of it failed (its TrainingJob says why)'
        : `; the checkpoint asked of it did not commit within its grace of ${Math.round(graceOf(v) / 1000)} s`;
    };
    const reasonFor = (v: RunningJob): string =>
      (v.queue === job.queue ? `preempted by higher-priority ${job.id}` : `reclaimed by queue ${job.queue} (under its fair share) for ${job.id}`) +
      brokenNote +
      checkpointNote(v);
    for (const v of best.victims) for (const pod of v.podIds) stmt.release(pod, `${reasonFor(v)} (whole gang ${v.id} evicted)`);
    const placed = scheduler.placeGang(job.gang, stmt, { explain: false });
    if (!placed.ok) {
      stmt.discard();
      return 'no';
    }
    // Victims and preemptor in one statement: the binder binds the preemptor once the victims are gone.
    stmt.commit();
    releases++;
    for (const v of best.victims) {
      running.delete(v.id);
      addUsage(v.queue, v.resources, -1, v.gpuModel);
      preempted.push({ victim: v, by: job.id, reason: reasonFor(v) });
    }
    const model = state.node(placed.placements[0]?.node ?? '')?.spec.gpus[0]?.model;
    addUsage(job.queue, demand, 1, model);
    started.push({ job, placements: placed.placements });
    return 'started';
  }

  /** Why `job`'s queue may not reclaim GPUs from other queues that hold some, or undefined when it may (or none do). */
  function aboveShare(job: QueuedJob, demand: Resources): string | undefined {
    const mine = (usage.get(job.queue)?.total.gpuMilli ?? 0) + demand.gpuMilli;
    const fair = deserved.get(job.queue) ?? 0;
    if (mine <= fair + 1e-6) return undefined;
    for (const r of running.values())
      if (r.queue !== job.queue)
        return `queue ${job.queue} would be above its fair share (${mine / 1000} of ${Math.round(fair) / 1000} GPU), so it waits for GPUs other queues hold`;
    return undefined;
  }

  /** Whether `job`'s quota admits it once `victims` no longer count against their queues. */
  function quotaAllowsWithout(job: QueuedJob, demand: Resources, victims: readonly RunningJob[]): boolean {
    const after = new Map(usage);
    for (const v of victims) addUsageTo(after, v.queue, v.resources, -1, v.gpuModel);
    return checkQuota(queueOf(job.queue), queues, after, demand).ok;
  }

  /**
   * Greedy: release victims in cost order until the gang fits (and `enough` holds for the victims so far),
   * then drop every victim not needed.
   */
  function victimsFor(
    job: QueuedJob,
    cands: readonly RunningJob[],
    enough?: (victims: readonly RunningJob[]) => boolean,
  ): { victims: RunningJob[]; placements: Placement[] } | undefined {
    const stmt = new Statement(state);
    const chosen: RunningJob[] = [];
    const saved = new Map<string, Allocation>();
    let fit: Placement[] | undefined;
    for (const c of cands) {
      for (const pod of c.podIds) {
        const a = stmt.release(pod);
        if (a !== undefined) saved.set(pod, a);
      }
      chosen.push(c);
      if (enough !== undefined && !enough(chosen)) continue;
      const cp = stmt.checkpoint();
      const r = scheduler.placeGang(job.gang, stmt, { explain: false });
      stmt.rollback(cp);
      if (r.ok) {
        fit = [...r.placements];
        break;
      }
    }
    if (fit === undefined) {
      stmt.discard();
      return undefined;
    }
    // Prune: put back each victim (most expensive first) if the gang still fits without it.
    for (let i = chosen.length - 1; i >= 0 && chosen.length > 1; i--) {
      const v = chosen[i] as RunningJob;
      if (enough !== undefined && !enough(chosen.filter((_, k) => k !== i))) continue;
      const cp = stmt.checkpoint();
      if (!reallocate(stmt, v, saved)) {
        stmt.rollback(cp);
        continue;
      }
      const trial = stmt.checkpoint();
      const r = scheduler.placeGang(job.gang, stmt, { explain: false });
      stmt.rollback(trial);
      if (r.ok) {
        fit = [...r.placements];
        chosen.splice(i, 1);
      } else stmt.rollback(cp);
    }
    stmt.discard();
    return { victims: chosen, placements: fit };
  }

  function reallocate(stmt: Statement, v: RunningJob, saved: ReadonlyMap<string, Allocation>): boolean {
    for (const pod of v.podIds) {
      const a = saved.get(pod);
      if (a === undefined) return false;
      const n = state.node(a.node);
      if (n === undefined || !a.gpus.every((g) => (n.gpuFree[g] as number) >= a.gpuMilli)) return false;
      stmt.allocate(a);
    }
    return true;
  }

  function byDomain(cands: readonly { r: RunningJob }[], level: TopologyLevel): { r: RunningJob }[][] {
    const groups = new Map<number, { r: RunningJob }[]>();
    for (const c of cands) {
      const doms = new Set<number>();
      for (const pod of c.r.podIds) {
        const n = state.nodeOfPod(pod);
        if (n !== undefined) doms.add(state.domainOf[level][n.idx] as number);
      }
      for (const d of doms) groups.set(d, [...(groups.get(d) ?? []), c]);
    }
    return [...groups.values()].slice(0, 32);
  }
}

const UNLIMITED_QUOTA = { ok: true } as const;
const NO_BUDGETS: readonly DisruptionBudget[] = [];

/** A gang with a `preemptionPolicy: Never` member (kube's PodEligibleToPreemptOthers says no to it). */
export function hasNeverMember(job: QueuedJob): boolean {
  return job.gang.members.some((m) => m.preemptionPolicy === 'Never');
}
/** The queue of a job that names none: undeclared, it has no quota. */
export const DEFAULT_QUEUE = 'default';

/** A reused explanation names the gang it is shown for ("0/4 nodes fit gang b-50 …", not b-49). */
function renamed(w: Waiting, from: string, to: string): Waiting {
  if (from === to) return w;
  for (const kind of ['gang', 'pod']) {
    const at = w.message.indexOf(`fit ${kind} ${from}`);
    if (at >= 0) return { ...w, message: `${w.message.slice(0, at)}fit ${kind} ${to}${w.message.slice(at + `fit ${kind} ${from}`.length)}` };
  }
  return w;
}

/** Everything placement and preemption look at: member shapes, minMember, topology, and for preemption queue and priority. */
function gangShapeKey(job: QueuedJob, preemption: boolean, never: boolean): string {
  const g = job.gang;
  // A member's claims decide where it may go (VolumeBinding, ADR 0070) but are not part of its shape key (they are
  // resolved per attempt): jobs with other claims must not reuse this one's failure.
  const claims = (m: QueuedJob['gang']['members'][number]): string =>
    m.claims === undefined ? '' : `|c${JSON.stringify([m.namespace ?? 'default', m.claims])}`;
  return `${preemption ? `${job.queue}|${job.priority}${never ? '|never' : ''}` : ''}|${g.minMember}|${g.topology.required ?? ''}|${g.topology.preferred ?? ''}|${g.members.map((m) => shapeKey(m) + claims(m)).join(';')}`;
}

/** Most list values a span attribute carries (a gang of 1,000 pods names its first ones). */
const MAX_LISTED = 32;
const capped = (xs: readonly string[]): readonly string[] => (xs.length <= MAX_LISTED ? xs : [...xs.slice(0, MAX_LISTED), `+${xs.length - MAX_LISTED} more`]);

/** What a placement attempt is about: the job, its queue, its pod (a pod job) or its gang. */
function attemptAttributes(job: QueuedJob): TraceAttributes {
  const g = job.gang;
  const single = g.members.length === 1 && g.minMember <= 1 && g.name === g.members[0]?.id;
  return {
    'sits.job.id': job.id,
    'sits.queue': job.queue,
    'sits.priority': job.priority,
    ...(single
      ? { 'sits.job.kind': 'pod', 'sits.pod': g.name }
      : {
          'sits.job.kind': 'gang',
          'sits.gang': g.name,
          'sits.gang.members': g.members.length,
          'sits.gang.min_member': g.minMember,
          'sits.pods': capped(g.members.map((m) => m.id)),
        }),
    ...(g.topology.required === undefined ? {} : { 'sits.topology.required': g.topology.required }),
    ...(g.topology.preferred === undefined ? {} : { 'sits.topology.preferred': g.topology.preferred }),
  };
}

/** The attempt's result: scheduled (with its nodes and the victims it preempted) or the wait reason and message. */
function endAttempt(
  span: TraceSpan,
  job: QueuedJob,
  started: readonly { readonly job: QueuedJob; readonly placements: readonly Placement[] }[],
  preempted: readonly { readonly victim: RunningJob; readonly by: string }[],
  waiting: ReadonlyMap<string, Waiting>,
): void {
  const last = started[started.length - 1];
  if (last !== undefined && last.job.id === job.id) {
    const victims = preempted.filter((p) => p.by === job.id).length;
    span.set({
      'sits.result': 'scheduled',
      'sits.nodes': capped([...new Set(last.placements.map((p) => p.node))]),
      'sits.placed': last.placements.length,
      ...(victims === 0 ? {} : { 'sits.preempt.victims': victims }),
    });
  } else {
    const w = waiting.get(job.id);
    span.set({ 'sits.result': w?.reason ?? 'unknown', ...(w === undefined ? {} : { 'sits.message': w.message }) });
  }
  span.end();
}
