/**
 * Per GPU model quotas: placement decides the model, so the models without room are taken out of the gang's
 * choice before it is placed (quota and topology together); none left means a quota wait.
 */
import type { QueueSpec, Resources } from '../queue/model.ts';
import { checkQuota } from '../queue/quota.ts';
import type { CycleSession } from '../session/session.ts';
import type { QueuedJob } from './jobs.ts';

/** The job with its members limited to GPU models whose per-model quota has room, or why none has. */
export function withinModelQuotas(s: CycleSession, job: QueuedJob, q: QueueSpec, demand: Resources): QueuedJob | string {
  if (demand.gpuMilli === 0 || Object.keys(q.models).length === 0) return job;
  const refused = new Map<string, string>();
  for (const m of s.clusterModels) {
    if (q.models[m] === undefined) continue;
    const v = checkQuota(q, s.queues, s.usage, demand, m);
    if (!v.ok) refused.set(m, v.reason);
  }
  if (refused.size === 0) return job;
  const members = job.gang.members.map((pod) => {
    const allowed = (pod.gpuModels.length > 0 ? pod.gpuModels : s.clusterModels).filter((m) => !refused.has(m));
    return allowed.length === 0 ? undefined : { ...pod, gpuModels: allowed };
  });
  if (members.some((m) => m === undefined)) return [...refused.values()].join('; ');
  return { ...job, gang: { ...job.gang, members: members as QueuedJob['gang']['members'] } };
}
