/**
 * What feeds the cluster view: the live scheduler's cache (its snapshot, Queue objects, pending pods with the
 * wait message and expected start SITS wrote on them) and a simulator host's own state and queue. Reads only:
 * nothing here changes what the scheduler decides.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { QueuedJob } from '../core/actions/jobs.ts';
import type { Waiting } from '../core/actions/queue-cycle.ts';
import type { QueueSpec } from '../core/queue/model.ts';
import type { ClusterState } from '../core/snapshot/cluster-state.ts';
import { ANNOTATION } from '../api/wire.ts';
import type { PendingPod } from '../kube/cache/cluster-cache.ts';
import type { LiveScheduler } from '../kube/scheduler/live-scheduler.ts';
import { queueFromObject } from '../kube/cache/queues.ts';
import { jobOfAllocation, pendingFromJobs, splitWaitMessage, type PendingInput, type ViewInput } from './cluster-view.ts';

export type ViewSourceInput = Omit<ViewInput, 'seq'>;

const time = (s: unknown): number | undefined => {
  if (s === undefined || s === null) return undefined;
  const t = s instanceof Date ? s.getTime() : Date.parse(String(s));
  return Number.isFinite(t) ? t : undefined;
};

/** The wait SITS wrote on a pending pod (PodScheduled=False, reason Unschedulable), if any. */
function waitOf(p: V1Pod): string | undefined {
  const c = p.status?.conditions?.find((x) => x.type === 'PodScheduled');
  return c?.status === 'False' && c.message !== undefined && c.message !== '' ? c.message : undefined;
}

function pendingRow(id: string, pods: readonly PendingPod[], queue: string, parked: Waiting | undefined): PendingInput {
  const message = pods.map((p) => waitOf(p.obj)).find((m) => m !== undefined);
  const eta = pods.map((p) => time(p.obj.metadata?.annotations?.[ANNOTATION.expectedStart])).find((t) => t !== undefined);
  // The leader's own queue knows the last wait (reason kind and message); a standby, which does not cycle,
  // has only what the leader wrote on the pods.
  const split =
    parked !== undefined
      ? { explanation: splitWaitMessage(parked.message).explanation, queueReason: parked.reason }
      : message === undefined
        ? undefined
        : splitWaitMessage(message);
  return {
    id,
    queue,
    priority: Math.max(...pods.map((p) => p.spec.priority)),
    pods: pods.length,
    gpuMilli: pods.reduce((s, p) => s + p.spec.request.gpuCount * p.spec.request.gpuMilli, 0),
    arrivalMs: Math.min(...pods.map((p) => p.createdMs)),
    ...(split === undefined ? {} : split),
    ...(eta === undefined ? {} : { etaMs: eta }),
  };
}

/** The live scheduler's view input at `nowMs` (wall clock): everything comes from its watch-fed cache. */
export function liveViewInput(s: LiveScheduler, nowMs: number): ViewSourceInput {
  const state = s.cache.state();
  const queues = new Map<string, QueueSpec>();
  for (const o of s.jobs.queueObjs.values()) {
    const q = queueFromObject(o);
    queues.set(q.name, q);
  }
  const { singles, gangs } = s.jobs.pendingUnits();
  const pending: PendingInput[] = singles.map((p) => pendingRow(p.key, [p], p.spec.queue, s.queue.lastWait(p.key)));
  for (const [name, members] of gangs)
    pending.push(pendingRow(`gang:${name}`, members, s.jobs.groupQueue(name) ?? members[0]?.spec.queue ?? 'default', s.queue.lastWait(`gang:${name}`)));
  const startedMs = new Map<string, number>();
  for (const n of state.nodes) {
    for (const a of n.allocations.values()) {
      if (a.gpus.length === 0) continue;
      const pod = s.cache.pod(a.podId);
      const t = time(pod?.status?.startTime) ?? time(pod?.metadata?.creationTimestamp);
      if (t === undefined) continue;
      const id = jobOfAllocation(a);
      startedMs.set(id, Math.min(startedMs.get(id) ?? Infinity, t));
    }
  }
  return { source: 'live', atMs: nowMs, state, queues, pending, startedMs, gangQueue: (g) => s.jobs.groupQueue(g) };
}

/** A simulator host's view input: its state, queue specs and waiting jobs with the last cycle's waits and the forward run's starts. */
export function simViewInput(o: {
  readonly nowMs: number;
  readonly state: ClusterState;
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly pending: readonly QueuedJob[];
  readonly waiting: ReadonlyMap<string, Waiting>;
  readonly eta: ReadonlyMap<string, number>;
  readonly startedMs?: ReadonlyMap<string, number>;
}): ViewSourceInput {
  return {
    source: 'sim',
    atMs: o.nowMs,
    state: o.state,
    queues: o.queues,
    pending: pendingFromJobs(o.pending, o.waiting, o.eta),
    ...(o.startedMs === undefined ? {} : { startedMs: o.startedMs }),
  };
}
