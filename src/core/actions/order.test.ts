import { describe, expect, it } from 'vitest';
import { makeQueue } from '../queue/model.ts';
import { cluster, job, queues, sessionOf, start } from './cycle-testing.ts';
import type { QueuedJob } from './jobs.ts';
import { jobOrder } from './order.ts';

const drain = (next: () => QueuedJob | undefined): string[] => {
  const ids: string[] = [];
  for (let j = next(); j !== undefined; j = next()) ids.push(j.id);
  return ids;
};

describe('order: the cycle’s job order', () => {
  const pending = (): QueuedJob[] => [
    job('a1', 'a', 1, 1, { arrivalMs: 1 }),
    job('a2', 'a', 1, 1, { arrivalMs: 2, priority: 5 }),
    job('b1', 'b', 1, 1, { arrivalMs: 3 }),
    job('b2', 'b', 1, 1, { arrivalMs: 4 }),
  ];

  it('the queue with the lowest weighted share goes next; inside a queue priority, then arrival', () => {
    const s = cluster('dgx-h100', 1, 1);
    const busy = start(s, job('busy', 'a', 1, 4), 0); // a holds half the cluster, b nothing
    const ses = sessionOf(s, queues(makeQueue('a'), makeQueue('b')), pending(), [busy]);
    expect(drain(jobOrder(ses))).toEqual(['b1', 'b2', 'a2', 'a1']);
  });

  it('shares are read as each job is asked for: usage added meanwhile changes which queue is next', () => {
    const s = cluster('dgx-h100', 1, 1);
    const busy = start(s, job('busy', 'a', 1, 4), 0);
    const ses = sessionOf(s, queues(makeQueue('a'), makeQueue('b')), pending(), [busy]);
    const next = jobOrder(ses);
    expect(next()?.id).toBe('b1');
    ses.addUsage('b', { gpuMilli: 8000, cpuMilli: 0, memoryMiB: 0 }, 1); // b now holds the whole cluster
    expect(drain(next)).toEqual(['a2', 'a1', 'b2']);
  });

  it('without fair share (the baseline) one FIFO over all queues, by arrival, priority ignored', () => {
    const s = cluster('dgx-h100', 1, 1);
    const ses = sessionOf(s, queues(makeQueue('a'), makeQueue('b')), pending().reverse(), [], 10_000_000, { fairShare: false });
    expect(drain(jobOrder(ses))).toEqual(['a1', 'a2', 'b1', 'b2']);
  });
});
