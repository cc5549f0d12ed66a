/**
 * The cycle's order (Volcano's job order, KAI's queue order): the queue with the lowest weighted dominant share
 * goes next; inside a queue the profile's queue sort decides (priority, arrival, submission order), then the
 * id. The baseline (fairShare off) is one global list in plain arrival order.
 */
import type { QueuedUnit } from '../framework/types.ts';
import type { CycleSession } from '../session/session.ts';
import type { QueuedJob } from './jobs.ts';

const byId = (a: QueuedJob, b: QueuedJob): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The pending jobs in cycle order, one at a time: shares are read as each job is asked for, so they reflect what was placed. */
export function jobOrder(s: CycleSession): () => QueuedJob | undefined {
  // Per-queue lists (or one global list for the baseline). A cursor per list: shift() would make a large backlog quadratic.
  const lists = new Map<string, { items: QueuedJob[]; pos: number }>();
  for (const j of s.input.pending) {
    const key = s.listOf(j);
    const l = lists.get(key) ?? { items: [], pos: 0 };
    l.items.push(j);
    lists.set(key, l);
  }
  const fairShare = s.opts.fairShare;
  const inQueue = fairShare ? queueSortOrder(s) : (a: QueuedJob, b: QueuedJob) => a.arrivalMs - b.arrivalMs || (a.seq ?? 0) - (b.seq ?? 0) || byId(a, b);
  for (const l of lists.values()) l.items.sort(inQueue);
  return () => {
    let bestKey: string | undefined;
    let bestShare = Infinity;
    for (const [key, l] of lists) {
      if (l.pos >= l.items.length) continue;
      const share = fairShare ? s.share(key) : 0;
      if (share < bestShare || (share === bestShare && bestKey !== undefined && key < bestKey)) {
        bestShare = share;
        bestKey = key;
      }
    }
    if (bestKey === undefined) return undefined;
    const l = lists.get(bestKey) as { items: QueuedJob[]; pos: number };
    return l.items[l.pos++];
  };
}

/** Inside a queue: the profile's queue sort, then the id (without one: priority, arrival, id). */
function queueSortOrder(s: CycleSession): (a: QueuedJob, b: QueuedJob) => number {
  const sort = s.scheduler.profile.queueSort.queueSort;
  if (sort === undefined) return (a, b) => b.priority - a.priority || a.arrivalMs - b.arrivalMs || byId(a, b);
  const unit = (j: QueuedJob): QueuedUnit => ({ key: j.id, priority: j.priority, queue: j.queue, arrivalMs: j.arrivalMs, seq: j.seq ?? 0 });
  return (a, b) => sort(unit(a), unit(b)) || byId(a, b);
}
