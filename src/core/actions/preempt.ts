/**
 * Preemption and reclaim (Volcano's preempt and reclaim): whole gangs only, fewest and cheapest victims,
 * topology-aware, borrowed quota first, never a job in a critical phase (it gets a bounded grace instead), never
 * a job younger than the cooldown, and never so that the preemptor's queue would exceed its deserved share (no
 * loops). The preemptor's queue policy says whether it may preempt in its own queue (withinQueue) and other
 * queues' jobs (reclaimWithinCohort: Never, LowerPriority, Any); the cooldown and the critical-phase grace are
 * the victim's queue's. As kube-scheduler's DefaultPreemption (ADR 0059): a pod with `preemptionPolicy: Never`
 * waits instead of preempting, and victims whose eviction would break a PodDisruptionBudget come last — the plan
 * that breaks the fewest budgets wins, then the one with the lowest highest-priority victim, the fewest victims,
 * the least work lost. Checkpoint-aware (ADR 0093), victims are asked for a checkpoint first.
 */
import type { TopologyLevel } from '../model/topology.ts';
import { ZERO, type Resources } from '../queue/model.ts';
import { borrowedBy, checkQuota } from '../queue/quota.ts';
import { capped } from '../session/attempt-trace.ts';
import type { Attempt, CycleSession } from '../session/session.ts';
import { addUsageTo } from '../session/usage.ts';
import { inCriticalPhase } from './checkpoint.ts';
import { lessCost, pdbViolations, type PreemptionCost } from './disruption.ts';
import { lostWork, type QueuedJob, type RunningJob } from './jobs.ts';
import { commitPreemption, waitsForVictims, type PreemptionPlan } from './preempt-commit.ts';
import { byDomain, victimsFor, type Candidate } from './victims.ts';

/** A plan: the victims, where the gang goes once they are gone, and what it costs. */
/** The action: a gang that did not fit preempts, or notes why it waits (preemptionPolicy Never, its fair share). */
export function preempt(s: CycleSession, a: Attempt): boolean {
  if (!s.opts.preemption) return false;
  if (s.neverPreempts(a.job)) {
    a.why = `${a.why}; preemptionPolicy Never: waits for room, preempts nothing`;
    return false;
  }
  if (tryPreempt(s, a.job, a.demand) === 'started') return true;
  // Other queues hold GPUs, but this one would pass its fair share: it waits for them, it does not reclaim.
  const over = s.opts.fairShare ? aboveShare(s, a.job, a.demand) : undefined;
  if (over !== undefined) {
    a.reason = 'fair-share';
    a.why = `${a.why}; ${over}`;
  }
  return false;
}

/**
 * Frees room for `job` by preempting whole gangs. With `forQuota` the victims must also bring the job within
 * its quota (they return what their queues borrowed from the cohort), not only make the gang fit.
 */
export function tryPreempt(s: CycleSession, job: QueuedJob, demand: Resources, forQuota = false): 'started' | 'no' {
  const tracer = s.scheduler.tracer;
  if (!tracer.enabled) return planPreemption(s, job, demand, forQuota);
  const span = tracer.start('sits.preempt', { 'sits.job.id': job.id, 'sits.queue': job.queue, 'sits.preempt.for_quota': forQuota });
  const before = s.out.preempted.length;
  try {
    const r = planPreemption(s, job, demand, forQuota);
    const victims = s.out.preempted.slice(before).map((p) => p.victim.id);
    span.set({ 'sits.result': r, 'sits.preempt.victims': victims.length, ...(victims.length === 0 ? {} : { 'sits.preempt.victim_ids': capped(victims) }) });
    return r;
  } finally {
    span.end();
  }
}

function planPreemption(s: CycleSession, job: QueuedJob, demand: Resources, forQuota: boolean): 'started' | 'no' {
  const myUsage = s.usage.get(job.queue)?.total ?? ZERO;
  const reclaimAllowed = myUsage.gpuMilli + demand.gpuMilli <= (s.deserved.get(job.queue) ?? 0) + 1e-6;
  if (forQuota && !reclaimAllowed) return 'no';
  const candidates = candidatesFor(s, job, reclaimAllowed);
  if (candidates.length === 0) return 'no';
  const best = bestPlan(s, job, candidates, forQuota ? (victims) => quotaAllowsWithout(s, job, demand, victims) : undefined);
  if (best === undefined || waitsForVictims(s, job, best)) return 'no';
  return commitPreemption(s, job, demand, best) ? 'started' : 'no';
}

/** The running jobs `job` may preempt, in the order the greedy pass takes them. */
function candidatesFor(s: CycleSession, job: QueuedJob, reclaimAllowed: boolean): Candidate[] {
  const policy = s.queueOf(job.queue).preemption ?? {};
  const withinQueue = policy.withinQueue ?? 'LowerPriority';
  const reclaim = policy.reclaimWithinCohort ?? 'Any';
  const aware = s.opts.checkpointAware;
  const candidates: Candidate[] = [];
  for (const r of s.running.values()) {
    const vq = s.queueOf(r.queue);
    if (!r.preemptible || s.nowMs - r.startMs < (vq.preemption?.cooldownMs ?? s.opts.minRuntimeMs)) continue;
    const vUsage = s.usage.get(r.queue)?.total ?? ZERO;
    if (r.queue === job.queue) {
      if (withinQueue === 'Never' || r.priority >= job.priority) continue;
    } else {
      if (reclaim === 'Never' || (reclaim === 'LowerPriority' && r.priority >= job.priority) || !reclaimAllowed) continue;
      const overShare = vUsage.gpuMilli > (s.deserved.get(r.queue) ?? 0) + 1e-6 && vUsage.gpuMilli - r.resources.gpuMilli >= vq.guaranteed.gpuMilli;
      if (!overShare) continue;
    }
    candidates.push({
      r,
      borrowing: borrowedBy(vq, vUsage).gpuMilli > 0,
      violates: false,
      cost: lostWork(r, s.nowMs),
      critical: aware && inCriticalPhase(r, s.nowMs),
    });
  }
  if (candidates.length === 0) return candidates;
  const budgets = s.budgets();
  if (budgets.length > 0) for (const c of candidates) c.violates = pdbViolations(c.r.podIds, budgets).count > 0;
  // Borrowed quota first, then victims no PodDisruptionBudget protects (so the greedy pass takes them
  // first and the pruning reprieves the protected ones first, as kube does), then lower priority, then the
  // least work lost, then the newest.
  // Checkpoint-aware, jobs in a critical phase go last (a plan without them need not wait).
  return candidates.sort(
    (a, b) =>
      Number(b.borrowing) - Number(a.borrowing) ||
      Number(a.violates) - Number(b.violates) ||
      Number(a.critical) - Number(b.critical) ||
      a.r.priority - b.r.priority ||
      a.cost - b.cost ||
      b.r.startMs - a.r.startMs,
  );
}

/** The cheapest plan over the candidates' topology domains (all of them without a topology constraint). */
function bestPlan(
  s: CycleSession,
  job: QueuedJob,
  candidates: readonly Candidate[],
  enough: ((victims: readonly RunningJob[]) => boolean) | undefined,
): PreemptionPlan | undefined {
  const aware = s.opts.checkpointAware;
  const budgets = s.budgets();
  const level: TopologyLevel | undefined = job.gang.topology.required ?? job.gang.topology.preferred;
  const groups = level === undefined ? [candidates] : byDomain(s.state, candidates, level);
  let best: PreemptionPlan | undefined;
  for (const group of groups) {
    const plan = victimsFor(
      s.scheduler,
      job,
      group.map((c) => c.r),
      enough,
    );
    if (plan === undefined) continue;
    const lost = plan.victims.reduce((sum, v) => sum + lostWork(v, s.nowMs), 0);
    const pdb = pdbViolations(
      plan.victims.flatMap((v) => v.podIds),
      budgets,
    ).count;
    const top = Math.max(...plan.victims.map((v) => v.priority));
    // Checkpoint-aware, the work lost decides before the number of victims: two freshly checkpointed gangs
    // cost less than one that would redo hours. The third key is then lost work, the fourth the count.
    const cost: PreemptionCost = aware ? [pdb, top, lost, plan.victims.length] : [pdb, top, plan.victims.length, lost];
    // Checkpoint-aware, a plan that needs no victim in a critical phase beats any that does (it need not wait).
    const crit = aware ? plan.victims.filter((v) => inCriticalPhase(v, s.nowMs)).length : 0;
    if (best === undefined || crit < best.critical || (crit === best.critical && lessCost(cost, best.cost))) best = { ...plan, cost, critical: crit };
  }
  return best;
}

/** Why `job`'s queue may not reclaim GPUs from other queues that hold some, or undefined when it may (or none do). */
function aboveShare(s: CycleSession, job: QueuedJob, demand: Resources): string | undefined {
  const mine = (s.usage.get(job.queue)?.total.gpuMilli ?? 0) + demand.gpuMilli;
  const fair = s.deserved.get(job.queue) ?? 0;
  if (mine <= fair + 1e-6) return undefined;
  for (const r of s.running.values())
    if (r.queue !== job.queue)
      return `queue ${job.queue} would be above its fair share (${mine / 1000} of ${Math.round(fair) / 1000} GPU), so it waits for GPUs other queues hold`;
  return undefined;
}

/** Whether `job`'s quota admits it once `victims` no longer count against their queues. */
function quotaAllowsWithout(s: CycleSession, job: QueuedJob, demand: Resources, victims: readonly RunningJob[]): boolean {
  const after = new Map(s.usage);
  for (const v of victims) addUsageTo(after, v.queue, v.resources, -1, v.gpuModel);
  return checkQuota(s.queueOf(job.queue), s.queues, after, demand).ok;
}
