import { describe, expect, it } from 'vitest';
import type { QueuedJob } from '../actions/jobs.ts';
import { makePod } from '../model/pod.ts';
import { LIVE_QUEUE_TIMING, SIM_QUEUE_TIMING, SchedulingQueue } from './scheduling-queue.ts';

const job = (id: string, o: { priority?: number; arrivalMs?: number; seq?: number; queue?: string } = {}): QueuedJob => {
  const queue = o.queue ?? 'q';
  const pod = makePod(`${id}-0`, { gpuCount: 1 }, { gang: id, queue });
  return {
    id,
    queue,
    priority: o.priority ?? 0,
    arrivalMs: o.arrivalMs ?? 0,
    seq: o.seq ?? 0,
    gang: { name: id, minMember: 1, members: [pod], topology: {}, priority: o.priority ?? 0, queue },
    estRuntimeMs: 1000,
  };
};
const capacity = { reason: 'capacity' as const, message: '0/4 nodes fit' };

describe('SchedulingQueue', () => {
  it('hands the cycle every queued job, parked or not (the cycle orders them)', () => {
    const q = new SchedulingQueue(SIM_QUEUE_TIMING);
    q.add(job('c', { arrivalMs: 5, seq: 2 }), 0);
    q.add(job('b', { arrivalMs: 5, seq: 1 }), 0);
    q.add(job('a', { arrivalMs: 9 }), 0);
    q.add(job('z', { priority: 10, arrivalMs: 100 }), 0);
    expect(
      q
        .forCycle()
        .jobs.map((j) => j.id)
        .sort(),
    ).toEqual(['a', 'b', 'c', 'z']);
  });

  it('parks a failed job until an event its hints name; other events leave it parked', () => {
    const q = new SchedulingQueue(SIM_QUEUE_TIMING);
    q.add(job('a'), 0);
    q.failed('a', capacity, { on: ['freed'] }, 0);
    expect(q.whereIs('a')).toBe('unschedulable');
    expect(q.hasActive()).toBe(false);
    expect(q.forCycle().parked.get('a')).toBe(capacity);
    expect(q.onEvent({ kind: 'arrived', queue: 'q' }, 1)).toBe(0);
    expect(q.whereIs('a')).toBe('unschedulable');
    expect(q.onEvent({ kind: 'freed' }, 2)).toBe(1);
    expect(q.whereIs('a')).toBe('active');
    expect(q.forCycle().parked.has('a')).toBe(false);
    // Woken, it still remembers why it waited last (until it is tried again).
    expect(q.lastWait('a')).toBe(capacity);
    expect(q.lastWait('nobody')).toBeUndefined();
  });

  it('a job without hints stays active (tried at every cycle)', () => {
    const q = new SchedulingQueue(SIM_QUEUE_TIMING);
    q.add(job('a'), 0);
    q.failed('a', { reason: 'reservation', message: 'would delay b' }, undefined, 0);
    expect(q.whereIs('a')).toBe('active');
  });

  it('an active job whose wait ends by itself (a victim’s grace) makes a cycle due then; a past time does not', () => {
    const q = new SchedulingQueue(LIVE_QUEUE_TIMING);
    q.add(job('a'), 0);
    q.failed('a', { reason: 'checkpoint-victim', message: 'waits for the checkpoint asked of v', retryAtMs: 10_000 }, undefined, 1000);
    expect(q.whereIs('a')).toBe('active');
    expect(q.nextWakeMs()).toBe(10_000);
    q.failed('a', { reason: 'reservation', message: 'would delay b' }, undefined, 2000);
    expect(q.nextWakeMs()).toBe(Number.POSITIVE_INFINITY);
    q.failed('a', { reason: 'checkpoint-victim', message: 'late', retryAtMs: 2500 }, undefined, 3000);
    expect(q.nextWakeMs()).toBe(Number.POSITIVE_INFINITY);
  });

  it('a hint time wakes the job when it comes, and the live safety net after five minutes', () => {
    const q = new SchedulingQueue(LIVE_QUEUE_TIMING);
    q.add(job('a'), 0);
    q.add(job('b'), 0);
    q.failed('a', capacity, { on: ['freed'], atMs: 30_000 }, 0);
    q.failed('b', capacity, { on: ['freed'] }, 0);
    expect(q.nextWakeMs()).toBe(30_000);
    q.flush(29_999);
    expect(q.whereIs('a')).toBe('unschedulable');
    q.flush(30_000);
    expect(q.whereIs('a')).toBe('active');
    q.flush(299_999);
    expect(q.whereIs('b')).toBe('unschedulable');
    q.flush(300_000);
    expect(q.whereIs('b')).toBe('active');
  });

  it('live: a job woken during its backoff waits it out (1 s doubling to 10 s per failed attempt)', () => {
    const q = new SchedulingQueue(LIVE_QUEUE_TIMING);
    q.add(job('a'), 0);
    const backoffs: number[] = [];
    let t = 0;
    for (let attempt = 1; attempt <= 6; attempt++) {
      q.failed('a', capacity, { on: ['freed'] }, t);
      q.onEvent({ kind: 'freed' }, t);
      expect(q.whereIs('a')).toBe('backoff');
      expect(q.forCycle().parked.has('a')).toBe(true);
      const until = q.nextWakeMs();
      backoffs.push(until - t);
      q.flush(until - 1);
      expect(q.whereIs('a')).toBe('backoff');
      q.flush(until);
      expect(q.whereIs('a')).toBe('active');
      t = until;
    }
    expect(backoffs).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000]);
  });

  it('a changed job wakes; an unchanged re-add keeps it parked; a new job is active', () => {
    const q = new SchedulingQueue(SIM_QUEUE_TIMING);
    q.add(job('a'), 0);
    q.failed('a', capacity, { on: ['freed'] }, 0);
    q.add(job('a'), 1, false);
    expect(q.whereIs('a')).toBe('unschedulable');
    q.add(job('a', { priority: 5 }), 2, true);
    expect(q.whereIs('a')).toBe('active');
    expect(q.get('a')?.priority).toBe(5);
    expect(q.delete('a')).toBe(true);
    expect(q.size).toBe(0);
    expect(q.counts()).toEqual({ active: 0, backoff: 0, unschedulable: 0 });
  });
});
