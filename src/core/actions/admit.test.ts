import { describe, expect, it } from 'vitest';
import { makeQueue } from '../queue/model.ts';
import { admit } from './admit.ts';
import { cluster, G, job, queues, sessionOf } from './cycle-testing.ts';

describe('admit: admission before placement', () => {
  it('a job naming a queue that does not exist is held as inadmissible, without an attempt', () => {
    const ses = sessionOf(cluster('dgx-h100', 1, 1), queues(makeQueue('a')), []);
    const a = ses.attemptFor(job('x', 'nope', 1, 1));
    expect(admit(ses, a)).toBe(true);
    expect(ses.out.waiting.get('x')).toEqual({ reason: 'inadmissible', message: 'queue nope does not exist (no Queue object of that name)' });
    expect(ses.attempted).toBe(0);
  });

  it('a job over its queue’s nominal quota waits on quota', () => {
    const ses = sessionOf(cluster('dgx-h100', 1, 1), queues(makeQueue('a', { nominal: G(4) })), []);
    const a = ses.attemptFor(job('x', 'a', 1, 8));
    expect(admit(ses, a)).toBe(true);
    expect(ses.out.waiting.get('x')).toEqual({ reason: 'quota', message: 'queue a quota: 8 GPU would exceed nominal 4 GPU' });
    expect(ses.out.started).toEqual([]);
  });

  it('an admitted job opens its placement attempt (counted, with its shape) and is left to the next action', () => {
    const ses = sessionOf(cluster('dgx-h100', 1, 1), queues(makeQueue('a')), []);
    const a = ses.attemptFor(job('x', 'a', 1, 8));
    expect(admit(ses, a)).toBe(false);
    expect(ses.attempted).toBe(1);
    expect(a.shape).toContain('|1|');
    expect(ses.out.waiting.size).toBe(0);
  });

  it('a parked job keeps its wait unless it could get a reservation (it heads its queue and a slot is left)', () => {
    const parked = new Map([['x', { reason: 'capacity' as const, message: 'still no room' }]]);
    const noBackfill = sessionOf(cluster('dgx-h100', 1, 1), queues(makeQueue('a')), [], [], 10_000_000, { backfill: false }, { parked });
    expect(admit(noBackfill, noBackfill.attemptFor(job('x', 'a', 1, 8)))).toBe(true);
    expect(noBackfill.out.waiting.get('x')).toEqual({ reason: 'capacity', message: 'still no room' });
    const withBackfill = sessionOf(cluster('dgx-h100', 1, 1), queues(makeQueue('a')), [], [], 10_000_000, {}, { parked });
    expect(admit(withBackfill, withBackfill.attemptFor(job('x', 'a', 1, 8)))).toBe(false);
  });

  it('a gang of a shape that failed since the last release is not tried again: it gets that wait, in its own name', () => {
    const ses = sessionOf(cluster('dgx-h100', 1, 1), queues(makeQueue('a')), []);
    ses.headReserved.add('a'); // the queue's head already had its reservation chance
    const first = ses.attemptFor(job('j1', 'a', 2, 8));
    expect(admit(ses, first)).toBe(false);
    first.why = '0/1 nodes fit gang j1 (2×8 GPU)';
    ses.settle(first);
    const second = ses.attemptFor(job('j2', 'a', 2, 8));
    expect(admit(ses, second)).toBe(true);
    expect(ses.out.waiting.get('j2')).toEqual({ reason: 'capacity', message: '0/1 nodes fit gang j2 (2×8 GPU)' });
    expect(ses.attempted).toBe(1);
    ses.releases++; // a preemption freed GPUs: the same shape is tried again
    expect(admit(ses, ses.attemptFor(job('j3', 'a', 2, 8)))).toBe(false);
    expect(ses.attempted).toBe(2);
  });
});
