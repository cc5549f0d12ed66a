/**
 * "When will my job start": run the same queue cycle forward in virtual time over a copy of the cluster,
 * letting running jobs end at their estimated times and pending jobs start as the cycle decides (with its
 * quotas, fair share, reservations and preemption). Estimates are only as good as the runtime estimates.
 */
import { Scheduler } from '../framework/scheduler.ts';
import type { Profile } from '../framework/types.ts';
import { seededRng } from '../ports.ts';
import type { QueueSpec } from '../queue/model.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { jobResources, type QueuedJob, type RunningJob } from './jobs.ts';
import { runCycle, type CycleOptions } from './queue-cycle.ts';

export interface EtaInput {
  readonly nowMs: number;
  readonly state: ClusterState;
  readonly profile: Profile;
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly pending: readonly QueuedJob[];
  readonly running: ReadonlyMap<string, RunningJob>;
  readonly options?: Partial<CycleOptions>;
  /** Stop looking this far ahead (default 7 days). */
  readonly horizonMs?: number;
  /** Stop as soon as this job has started (the question asked is usually about one job). */
  readonly untilStarted?: string;
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
  const scheduler = new Scheduler(input.profile, state, seededRng(7));
  const running = new Map(input.running);
  let pending = [...input.pending];
  const eta = new Map<string, number>();
  let now = input.nowMs;
  const horizon = input.nowMs + (input.horizonMs ?? 7 * 86_400_000);
  for (let step = 0; step < 10_000 && pending.length > 0 && now <= horizon; step++) {
    const r = runCycle({ nowMs: now, scheduler, queues: input.queues, pending, running, ...(input.options === undefined ? {} : { options: input.options }) });
    for (const p of r.preempted) running.delete(p.victim.id);
    for (const s of r.started) {
      eta.set(s.job.id, now);
      const model = state.node(s.placements[0]?.node ?? '')?.spec.gpus[0]?.model;
      running.set(s.job.id, {
        id: s.job.id,
        queue: s.job.queue,
        priority: s.job.priority,
        startMs: now,
        estEndMs: now + s.job.estRuntimeMs,
        podIds: s.placements.map((p) => p.podId),
        resources: jobResources(s.job),
        ...(model === undefined ? {} : { gpuModel: model }),
        preemptible: true,
      });
    }
    const startedIds = new Set(r.started.map((s) => s.job.id));
    if (input.untilStarted !== undefined && eta.has(input.untilStarted)) break;
    pending = pending.filter((j) => !startedIds.has(j.id));
    // Next event: the earliest estimated end among running jobs (ends already past release now).
    let nextEnd = Infinity;
    for (const j of running.values()) nextEnd = Math.min(nextEnd, j.estEndMs);
    if (!Number.isFinite(nextEnd)) break;
    now = Math.max(now + 1, nextEnd);
    for (const [id, j] of running) {
      if (j.estEndMs <= now) {
        for (const pod of j.podIds) state.release(pod);
        running.delete(id);
      }
    }
  }
  return eta;
}
