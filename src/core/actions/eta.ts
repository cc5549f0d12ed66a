/**
 * "When will my job start": run the same queue cycle forward in virtual time over a copy of the cluster,
 * letting running jobs end at their estimated times and pending jobs start as the cycle decides (with its
 * quotas, fair share, reservations and preemption). Estimates are only as good as the runtime estimates
 * and, for jobs that later arrivals can overtake (a queue under its fair share goes first), the forecast of
 * those arrivals (ADR 0021).
 */
import { Scheduler } from '../framework/scheduler.ts';
import type { Profile } from '../framework/types.ts';
import type { Rng } from '../ports.ts';
import type { QueueSpec } from '../queue/model.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { startedJob, type QueuedJob, type RunningJob } from './jobs.ts';
import { runCycle, type CycleOptions } from './queue-cycle.ts';

export interface EtaInput {
  readonly nowMs: number;
  readonly state: ClusterState;
  readonly profile: Profile;
  /** Randomness of the forward run's scheduler (a profile with random choices; hosts pass a seeded one). */
  readonly rng: Rng;
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly pending: readonly QueuedJob[];
  readonly running: ReadonlyMap<string, RunningJob>;
  readonly options?: Partial<CycleOptions>;
  /** Stop looking this far ahead (default 7 days). */
  readonly horizonMs?: number;
  /** Stop as soon as this job has started (the question asked is usually about one job). */
  readonly untilStarted?: string;
  /**
   * Work expected to arrive later — a forecast (e.g. `forecastArrivals`), never known future jobs: each joins
   * the pending jobs at its `arrivalMs`. Forecast jobs get no estimate of their own.
   */
  readonly arrivals?: readonly QueuedJob[];
  /**
   * A job preempted during the forward run goes back to its queue as this job (e.g. with the runtime still
   * expected after its last checkpoint); without it, or when it returns undefined, the victim is dropped.
   */
  readonly requeue?: (victim: RunningJob, atMs: number) => QueuedJob | undefined;
  /** Runtime estimate of a job started in the forward run (default its estRuntimeMs). */
  readonly runtimeOf?: (job: QueuedJob) => number;
  /**
   * When the scheduler runs its cycles: at `nextMs` and every `everyMs` after (a periodic pass that also
   * picks up arrivals and completions). Without it a cycle runs at every event (an event-driven scheduler).
   */
  readonly cadence?: { readonly nextMs: number; readonly everyMs: number };
  /**
   * Checkpoint-aware preemption in the forward run (ADR 0093): a victim asked for a checkpoint commits it this
   * long after the request (pausing its training as long) and is evicted then; without it a request never
   * commits and the victim goes at its grace deadline.
   */
  readonly checkpointMs?: (victim: RunningJob) => number;
  /** Whether a job started in the forward run can checkpoint when asked (default: no). */
  readonly checkpointable?: (job: QueuedJob) => boolean;
}

/** A copy of the cluster state: same nodes, ranks and allocations, independent from now on. */
export function cloneState(state: ClusterState): ClusterState {
  const ranks = new Map(state.nodes.map((n) => [n.name, n.rank]));
  const copy = new ClusterState(
    state.nodes.map((n) => n.spec),
    (name) => ranks.get(name) as number,
  );
  for (const n of state.nodes) {
    for (let g = 0; g < n.gpuUsable.length; g++) if (n.gpuUsable[g] === 0) copy.setGpuHealth(n.name, g, false);
    for (const a of n.allocations.values()) copy.allocate(a);
  }
  return copy;
}

/** Estimated start time per pending job id; a job missing from the map does not start within the horizon. */
export function estimateStarts(input: EtaInput): Map<string, number> {
  const state = cloneState(input.state);
  const scheduler = new Scheduler(input.profile, state, input.rng);
  const running = new Map(input.running);
  let pending = [...input.pending];
  const arrivals = [...(input.arrivals ?? [])].sort((a, b) => a.arrivalMs - b.arrivalMs || (a.id < b.id ? -1 : 1));
  const forecast = new Set(arrivals.map((a) => a.id));
  let nextArrival = 0;
  const eta = new Map<string, number>();
  const horizon = input.nowMs + (input.horizonMs ?? 7 * 86_400_000);
  const c = input.cadence;
  const grid = (t: number): number =>
    c === undefined || t <= c.nextMs ? Math.max(t, c?.nextMs ?? t) : c.nextMs + Math.ceil((t - c.nextMs) / c.everyMs) * c.everyMs;
  // Moving the clock: running jobs that end by then release their GPUs, forecast arrivals join their queues.
  const admit = (to: number): void => {
    while (nextArrival < arrivals.length && (arrivals[nextArrival] as QueuedJob).arrivalMs <= to) pending.push(arrivals[nextArrival++] as QueuedJob);
  };
  // Requested checkpoints of the forward run: victim → commit time and the deadline of its request.
  const commits = new Map<string, { atMs: number; pauseMs: number }>();
  const deadlines = new Set<number>();
  const advance = (to: number): void => {
    for (const [id, c] of commits) {
      const j = running.get(id);
      if (c.atMs > to) continue;
      commits.delete(id);
      if (j !== undefined) running.set(id, { ...j, lastCheckpointMs: c.atMs, estEndMs: j.estEndMs + c.pauseMs });
    }
    for (const [id, j] of running) {
      if (j.estEndMs <= to) {
        for (const pod of j.podIds) state.release(pod);
        running.delete(id);
      }
    }
    admit(to);
  };
  // The first cycle sees the cluster as it is (a job past its estimated end still holds its GPUs then).
  let now = grid(input.nowMs);
  if (now > input.nowMs) advance(now);
  else admit(now);
  let real = pending.filter((j) => !forecast.has(j.id)).length;
  for (let step = 0; step < 10_000 && real > 0 && now <= horizon; step++) {
    const r = runCycle({ nowMs: now, scheduler, queues: input.queues, pending, running, ...(input.options === undefined ? {} : { options: input.options }) });
    const requeued: QueuedJob[] = [];
    for (const q of r.checkpointRequests) {
      const j = running.get(q.victim.id);
      if (j === undefined) continue;
      running.set(j.id, { ...j, checkpointRequestedMs: now });
      deadlines.add(q.deadlineMs);
      const pause = input.checkpointMs?.(j);
      if (pause !== undefined) commits.set(j.id, { atMs: now + pause, pauseMs: pause });
    }
    for (const p of r.preempted) {
      running.delete(p.victim.id);
      const back = input.requeue?.(p.victim, now);
      if (back !== undefined) requeued.push(back);
    }
    for (const s of r.started) {
      if (!forecast.has(s.job.id) && !eta.has(s.job.id)) eta.set(s.job.id, now);
      const model = state.node(s.placements[0]?.node ?? '')?.spec.gpus[0]?.model;
      running.set(
        s.job.id,
        startedJob(s.job, s.placements, now, {
          estEndMs: now + Math.max(1, input.runtimeOf?.(s.job) ?? s.job.estRuntimeMs),
          gpuModel: model,
          checkpointable: input.checkpointable?.(s.job),
        }),
      );
    }
    if (input.untilStarted !== undefined && eta.has(input.untilStarted)) break;
    const startedIds = new Set(r.started.map((s) => s.job.id));
    pending = [...pending.filter((j) => !startedIds.has(j.id)), ...requeued];
    real = pending.filter((j) => !forecast.has(j.id) && !eta.has(j.id)).length;
    // Next event: the earliest estimated end among running jobs (ends already past release now), or the
    // next forecast arrival; with a cadence, the first cycle at or after it.
    let next = nextArrival < arrivals.length ? (arrivals[nextArrival] as QueuedJob).arrivalMs : Infinity;
    for (const j of running.values()) next = Math.min(next, j.estEndMs);
    for (const c of commits.values()) next = Math.min(next, c.atMs);
    for (const d of deadlines) if (d > now) next = Math.min(next, d);
    if (!Number.isFinite(next)) break;
    now = grid(Math.max(now + 1, next));
    advance(now);
  }
  return eta;
}
