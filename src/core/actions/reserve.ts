/**
 * Reservation (Volcano's reserve, YuniKorn's placeholders): the first job of a list that cannot be placed gets a
 * reservation — the nodes and the time it would start as running jobs end in their estimated order — and later
 * jobs backfill only where they cannot delay it (allocate.ts). At most maxReservations per cycle.
 */
import type { Placement } from '../framework/scheduler.ts';
import type { Attempt, CycleSession } from '../session/session.ts';
import { Statement } from '../statement/statement.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';
import type { Reservation } from '../session/cycle-types.ts';

/** The reservation of `jobId` from `startMs` on the nodes its pods would take, with the GPU milli each needs there. */
export function reservationFor(jobId: string, startMs: number, pods: Iterable<{ readonly node: string; readonly gpuMilli: number }>): Reservation {
  const needs: Record<string, number> = {};
  for (const p of pods) needs[p.node] = (needs[p.node] ?? 0) + p.gpuMilli;
  return { jobId, startMs, nodes: Object.keys(needs).sort(), needs };
}

export function reserve(s: CycleSession, a: Attempt): boolean {
  const job = a.job;
  if (!s.mayReserve(job)) return false;
  s.headReserved.add(s.listOf(job));
  // A guard against starvation, not a queue discipline: until the head has waited this long, the jobs behind it
  // start wherever they fit (ADR 0199). Its slot stays used, so no later job of the list reserves ahead of it.
  if (s.nowMs - job.arrivalMs < (a.queue.reserveAfterMs ?? s.opts.reserveAfterMs)) return false;
  const r = planReservation(s, job);
  if (r === undefined) return false;
  s.out.reservations.push(r);
  for (const n of r.nodes) s.reservedNodes.add(n);
  // A deferred preemption says more than the reservation: keep its reason.
  // A job holding a reservation is retried every cycle: the pods get the wait without the countdown (ADR 0195); the
  // expected start itself is the `expected-start` annotation's.
  const reserved = `${a.why}; reserved ${r.nodes.length} nodes`;
  s.waitUnlessSaid(job.id, {
    reason: a.reason,
    message: `${reserved}, expected start in ${Math.round((r.startMs - s.nowMs) / 1000)} s`,
    steadyMessage: reserved,
  });
  return true;
}

/**
 * Earliest start of `job` as running jobs end in estimated order; reserved nodes of earlier reservations are off
 * limits. With `attempt` (a wait so far and an expected run), a placement the gang would hold out against does not
 * count: the plan is then when a placement it takes at once frees (allocate.ts, ADR 0200).
 */
export function planReservation(
  s: CycleSession,
  job: QueuedJob,
  attempt: { readonly waitedMs?: number; readonly runMs?: number } = {},
): Reservation | undefined {
  const stmt = new Statement(s.state);
  blockNodes(s, stmt, s.reservedNodes);
  const order = [...s.running.values()].sort((a, b) => a.estEndMs - b.estEndMs || (a.id < b.id ? -1 : 1));
  // Placement is monotone in the set of jobs released, so the shortest prefix can be found by bisection.
  const base = stmt.checkpoint();
  const feasibleAfter = (k: number): Placement[] | undefined => {
    stmt.rollback(base);
    for (let i = 0; i < k; i++) for (const pod of (order[i] as RunningJob).podIds) stmt.release(pod);
    const cp = stmt.checkpoint();
    const r = s.scheduler.placeGang(job.gang, stmt, { explain: false, ...attempt });
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
  const startMs = Math.max(s.nowMs, lo === 0 ? s.nowMs : (order[lo - 1] as RunningJob).estEndMs);
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
function blockNodes(s: CycleSession, stmt: Statement, nodes: ReadonlySet<string>): void {
  for (const name of nodes) {
    const n = s.state.node(name);
    if (n === undefined) continue;
    const gpus: number[] = [];
    for (let g = 0; g < n.gpuFree.length; g++) if (n.gpuUsable[g] === 1 && n.gpuFree[g] === 1000) gpus.push(g);
    if (gpus.length > 0) stmt.allocate({ podId: `reservation/${name}`, node: name, gpus, gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: '' });
  }
}
