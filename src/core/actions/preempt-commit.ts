/**
 * The end of a preemption plan: it waits while a victim is in a critical phase or writing (or asked for) a
 * checkpoint, or it is carried out — victims released and the preemptor placed in one statement.
 */
import type { Resources } from '../queue/model.ts';
import type { CycleSession } from '../session/session.ts';
import { checkpointCommitted, checkpointFailed, checkpointStep, inCriticalPhase } from './checkpoint.ts';
import { pdbViolations } from './disruption.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';
import type { Placement } from '../framework/scheduler.ts';
import type { PreemptionCost } from './disruption.ts';

/** The victims a preemption chose, where the preemptor goes, and what it costs (preempt.ts plans it, this file carries it out). */
export interface PreemptionPlan {
  readonly victims: RunningJob[];
  readonly placements: Placement[];
  readonly cost: PreemptionCost;
  /** Victims in a critical phase (checkpoint-aware only). */
  readonly critical: number;
}

/** Whether `job` must wait for the plan's victims (critical phase, checkpoint); its wait is set then. */
export function waitsForVictims(s: CycleSession, job: QueuedJob, best: PreemptionPlan): boolean {
  const nowMs = s.nowMs;
  const aware = s.opts.checkpointAware;
  const critical = best.victims.filter((v) => (v.criticalUntilMs ?? 0) > nowMs);
  if (critical.length > 0) {
    const waitMs = Math.max(...critical.map((v) => (v.criticalUntilMs as number) - nowMs));
    const withinGrace = critical.every(
      (v) => (v.criticalUntilMs as number) - nowMs <= (s.queueOf(v.queue).preemption?.criticalGraceMs ?? s.opts.criticalGraceMs),
    );
    if (withinGrace) for (const v of critical) s.out.deferred.push({ victim: v, by: job.id, atMs: v.criticalUntilMs as number });
    const steady = `preemption of ${critical.map((v) => v.id).join(', ')} waits for their critical phase (checkpoint/all-reduce) to end`;
    s.wait(job.id, {
      reason: 'critical-victim',
      message: `${steady} in ${Math.round(waitMs / 1000)} s`,
      steadyMessage: steady,
      retryAtMs: nowMs + waitMs,
    });
    return true;
  }
  // Checkpoint-aware: a checkpoint the victim started itself has no known end: the preemptor waits for it.
  const writing = aware ? best.victims.filter((v) => inCriticalPhase(v, nowMs)) : [];
  if (writing.length > 0) {
    s.wait(job.id, {
      reason: 'critical-victim',
      message: `preemption of ${writing.map((v) => v.id).join(', ')} waits for the checkpoint they are writing`,
    });
    return true;
  }
  return aware && waitsForCheckpoints(s, job, best.victims);
}

/** Checkpoint-aware: victims not ready are asked for a checkpoint (or still writing it): the preemptor waits. */
function waitsForCheckpoints(s: CycleSession, job: QueuedJob, victims: readonly RunningJob[]): boolean {
  const nowMs = s.nowMs;
  const steps = victims.map((v) => ({ v, step: checkpointStep(v, nowMs, graceOf(s, v)) }));
  const unready = steps.filter((x) => x.step !== 'ready');
  if (unready.length === 0) return false;
  for (const x of unready) if (x.step === 'request') s.out.checkpointRequests.push({ victim: x.v, by: job.id, deadlineMs: nowMs + graceOf(s, x.v) });
  const deadline = Math.max(...unready.map((x) => (x.step === 'request' ? nowMs : (x.v.checkpointRequestedMs as number)) + graceOf(s, x.v)));
  const steady = `preemption of ${unready.map((x) => x.v.id).join(', ')} waits for the checkpoint asked of them`;
  s.wait(job.id, {
    reason: 'checkpoint-victim',
    message: `${steady} (evicted at the latest in ${Math.round((deadline - nowMs) / 1000)} s)`,
    steadyMessage: steady,
    retryAtMs: deadline,
  });
  return true;
}

const graceOf = (s: CycleSession, v: RunningJob): number => s.queueOf(v.queue).preemption?.checkpointGraceMs ?? s.opts.checkpointGraceMs;

/** Releases the plan's victims and places `job` in one statement; false (nothing changed) if it does not fit after all. */
export function commitPreemption(s: CycleSession, job: QueuedJob, demand: Resources, best: PreemptionPlan): boolean {
  const stmt = s.scheduler.statement();
  const reasonFor = preemptionReasons(s, job, best);
  for (const v of best.victims) for (const pod of v.podIds) stmt.release(pod, `${reasonFor(v)} (whole gang ${v.id} evicted)`);
  const placed = s.scheduler.placeGang(job.gang, stmt, { explain: false });
  if (!placed.ok) {
    stmt.discard();
    return false;
  }
  // Victims and preemptor in one statement: the binder binds the preemptor once the victims are gone.
  stmt.commit();
  s.releases++;
  for (const v of best.victims) {
    s.running.delete(v.id);
    s.addUsage(v.queue, v.resources, -1, v.gpuModel);
    s.out.preempted.push({ victim: v, by: job.id, reason: reasonFor(v) });
  }
  s.start(job, demand, placed.placements);
  return true;
}

/** Why each victim is preempted: by whom, a budget broken (the exception, so it is said), its checkpoint. */
function preemptionReasons(s: CycleSession, job: QueuedJob, best: PreemptionPlan): (v: RunningJob) => string {
  const aware = s.opts.checkpointAware;
  const broken =
    best.cost[0] > 0
      ? pdbViolations(
          best.victims.flatMap((v) => v.podIds),
          s.budgets(),
        ).budgets
      : [];
  const brokenNote = broken.length === 0 ? '' : `; no plan kept PodDisruptionBudget ${broken.join(', ')}`;
  const checkpointNote = (v: RunningJob): string => {
    if (!aware || v.checkpointable !== true) return '';
    if (checkpointCommitted(v)) return `; after the checkpoint it committed ${Math.round((s.nowMs - (v.lastCheckpointMs as number)) / 1000)} s ago`;
    return checkpointFailed(v)
      ? '; the checkpoint asked of it failed (its TrainingJob says why)'
      : `; the checkpoint asked of it did not commit within its grace of ${Math.round(graceOf(s, v) / 1000)} s`;
  };
  return (v) =>
    (v.queue === job.queue ? `preempted by higher-priority ${job.id}` : `reclaimed by queue ${job.queue} (under its fair share) for ${job.id}`) +
    brokenNote +
    checkpointNote(v);
}
