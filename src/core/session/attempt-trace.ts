/** The tracing of placement attempts: one span per attempt, named for its job, ended with what became of it. */
import type { Placement } from '../framework/scheduler.ts';
import type { TraceAttributes, TraceSpan } from '../ports.ts';
import type { QueuedJob, RunningJob } from '../actions/jobs.ts';
import type { Waiting } from './cycle-types.ts';

/** Most list values a span attribute carries (a gang of 1,000 pods names its first ones). */
const MAX_LISTED = 32;
export const capped = (xs: readonly string[]): readonly string[] =>
  xs.length <= MAX_LISTED ? xs : [...xs.slice(0, MAX_LISTED), `+${xs.length - MAX_LISTED} more`];

/** What a placement attempt is about: the job, its queue, its pod (a pod job) or its gang. */
export function attemptAttributes(job: QueuedJob): TraceAttributes {
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
export function endAttempt(
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
