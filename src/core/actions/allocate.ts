/**
 * Allocation (Volcano's allocate): a topology-feasible placement of the whole gang, in a statement. A job may
 * take a reserved node only as a backfill job: if it ends before the reservation starts or leaves the node the
 * GPUs the reserved job needs there; otherwise it waits for the reservation. A gang that does not fit is left
 * to the next action with the placement's explanation.
 */
import { trainingModelKey } from '../estimate/step-time.ts';
import { describeDelaySteady, type GangDelay } from '../framework/gang-choice.ts';
import type { Placement } from '../framework/scheduler.ts';
import type { Attempt, CycleSession } from '../session/session.ts';
import type { Reservation } from '../session/cycle-types.ts';
import { planReservation } from './reserve.ts';

export function allocate(s: CycleSession, a: Attempt): boolean {
  const job = a.job;
  const stmt = s.scheduler.statement();
  // Its wait so far and expected run let a step-aware choice hold it for a better placement (ADR 0188): the
  // wait since it was first held when the host tracks that (ADR 0191), else since it arrived.
  const since = s.input.heldSince === undefined ? job.arrivalMs : (s.input.heldSince.get(job.id) ?? s.nowMs);
  let placed = s.scheduler.placeGang(job.gang, stmt, { explain: s.opts.explain, waitedMs: Math.max(0, s.nowMs - since), runMs: job.estRuntimeMs });
  // Nothing else happening, a hold runs out then.
  const holdEndsMs = (d: GangDelay): number => s.nowMs + d.capMs - d.waitedMs;
  let expected = '';
  if (!placed.ok && placed.delay?.linkBound === true) {
    // Held for its layout to free (ADR 0200): only while the running jobs' expected ends free one before the hold's
    // end; when none is expected in time, it takes the best placement there is now.
    const startMs = expectedLayoutMs(s, a);
    if (startMs === undefined || startMs > holdEndsMs(placed.delay)) placed = s.scheduler.placeGang(job.gang, stmt, { explain: s.opts.explain });
    else expected = `; a better one expected free in ${Math.round((startMs - s.nowMs) / 1000)} s`;
  }
  if (!placed.ok && placed.delay !== undefined) {
    stmt.discard();
    s.wait(job.id, {
      reason: 'better-placement',
      message: placed.explanation.message + expected,
      steadyMessage: `${placed.explanation.subject} ${describeDelaySteady(placed.delay)}`,
      // A host that runs cycles only on events must run one when the hold runs out.
      retryAtMs: holdEndsMs(placed.delay),
    });
    return true;
  }
  if (!placed.ok) {
    stmt.discard();
    a.why = placed.explanation.message;
    a.reason = 'capacity';
    return false;
  }
  a.span?.set({ 'sits.topology.level': placed.level });
  const blocking = blockingReservation(s, job.id, s.nowMs + job.estRuntimeMs, placed.placements);
  if (blocking === undefined) {
    stmt.commit();
    s.start(job, a.demand, placed.placements);
    return true;
  }
  stmt.discard();
  const runs = `runs ${Math.round(job.estRuntimeMs / 1000)} s`;
  s.wait(job.id, {
    reason: 'reservation',
    message: `would delay the reservation of ${blocking.jobId} (starts in ${Math.round((blocking.startMs - s.nowMs) / 1000)} s on ${blocking.nodes.length} nodes); ${runs}`,
    steadyMessage: `would delay the reservation of ${blocking.jobId} (on ${blocking.nodes.length} nodes); ${runs}`,
  });
  return true;
}

/**
 * When a placement the held gang of `a` would take at once is expected to free: its reservation plan run with its hold.
 * The plan is a bisection over the running jobs with a trial placement at each step, so gangs alike share one per cycle.
 */
function expectedLayoutMs(s: CycleSession, a: Attempt): number | undefined {
  const job = a.job;
  const key = `${a.shape ?? job.id}|${trainingModelKey(s.scheduler.trainingModelOf(job.gang))}|${job.estRuntimeMs}`;
  const epoch = s.stateEpoch();
  const known = s.layoutPlans.get(key);
  if (known !== undefined && known.epoch === epoch) return known.startMs;
  const startMs = planReservation(s, job, { waitedMs: 0, runMs: job.estRuntimeMs })?.startMs;
  s.layoutPlans.set(key, { epoch, startMs });
  return startMs;
}

/**
 * The first reservation (the host's, then the cycle's) that `placements` of job `jobId`, running until `endMs`,
 * would delay; read while the placements are applied (the nodes' free GPUs are what would be left).
 */
function blockingReservation(s: CycleSession, jobId: string, endMs: number, placements: readonly Placement[]): Reservation | undefined {
  const blocks = (r: Reservation): boolean =>
    r.jobId !== jobId &&
    r.startMs < endMs &&
    placements.some((p) => r.nodes.includes(p.node) && (s.state.node(p.node)?.gpuFreeMilli() ?? 0) < (r.needs[p.node] ?? 0));
  return s.held.find(blocks) ?? s.out.reservations.find(blocks);
}
