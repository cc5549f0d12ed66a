/**
 * Admission (Kueue's admission, Volcano's enqueue): a parked job stays parked unless something could change its
 * answer; a job its queue does not accept (priority class, namespace, a queue that does not exist) is held;
 * then quota — nominal, borrowing within the cohort, per GPU model — and, when only the cohort's lendable quota
 * is short, reclaim of borrowed GPUs by preemption. An admitted job begins its placement attempt: the actions
 * after this one (allocate, preempt, reserve) try to place it — a job is admitted only by being placed.
 */
import { shapeKey } from '../framework/score-index.ts';
import { inadmissible } from '../queue/model.ts';
import { checkQuota } from '../queue/quota.ts';
import type { Attempt, CycleSession } from '../session/session.ts';
import { DEFAULT_QUEUE, type QueuedJob } from './jobs.ts';
import { withinModelQuotas } from './model-quota.ts';
import { tryPreempt } from './preempt.ts';

const UNLIMITED_QUOTA = { ok: true } as const;

export function admit(s: CycleSession, a: Attempt): boolean {
  const job = a.job;
  const held = s.input.parked?.get(job.id);
  if (held !== undefined && s.releases === 0 && !s.mayReserve(job)) {
    s.wait(job.id, held);
    return true;
  }
  const refused = refusal(s, a);
  if (refused !== undefined) {
    s.wait(job.id, { reason: 'inadmissible', message: refused });
    return true;
  }
  if (!withinQuota(s, a)) return true;
  const restricted = withinModelQuotas(s, job, a.queue, a.demand);
  if (typeof restricted === 'string') {
    s.wait(job.id, { reason: 'quota', message: restricted });
    return true;
  }
  a.job = restricted;
  return !s.beginAttempt(a, gangShapeKey(restricted, s.opts.preemption, s.neverPreempts(restricted)));
}

/** Why the job's queue does not take it, or undefined. */
function refusal(s: CycleSession, a: Attempt): string | undefined {
  // With queues declared, a job naming one that does not exist waits for it (as Kueue holds a workload whose
  // queue is missing): running it in an undeclared queue without quota would escape the tenant's limits.
  const q = a.job.queue;
  if (s.queues.size > 0 && !s.queues.has(q) && q !== DEFAULT_QUEUE) return `queue ${q} does not exist (no Queue object of that name)`;
  return inadmissible(a.queue, a.job);
}

/** Whether the quota admits the job; if not, it was started by reclaim or waits on quota (false either way). */
function withinQuota(s: CycleSession, a: Attempt): boolean {
  const job = a.job;
  // A queue nobody declared (a pod's queue label with no Queue object) has no quota: only capacity limits it.
  const quota = s.queues.has(job.queue) ? checkQuota(a.queue, s.queues, s.usage, a.demand) : UNLIMITED_QUOTA;
  if (quota.ok) return true;
  // Only the cohort's lendable quota is short (other queues borrowed it): a queue under its fair share
  // takes borrowed GPUs back, as with capacity (Kueue's fair-sharing preemption). Without this a queue
  // over its nominal quota but under its share waits on quota while others keep more than theirs.
  const reclaimable = quota.cohortShort === true && s.opts.preemption && !s.neverPreempts(job) ? withinModelQuotas(s, job, a.queue, a.demand) : undefined;
  if (reclaimable !== undefined && typeof reclaimable !== 'string' && tryPreempt(s, reclaimable, a.demand, true) === 'started') return false;
  s.waitUnlessSaid(job.id, { reason: 'quota', message: quota.reason });
  return false;
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
