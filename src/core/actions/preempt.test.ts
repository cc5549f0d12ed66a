import { describe, expect, it } from 'vitest';
import { makePod } from '../model/pod.ts';
import { makeQueue } from '../queue/model.ts';
import { cluster, job, queues, sessionOf, start } from './cycle-testing.ts';
import type { QueuedJob } from './jobs.ts';
import { preempt } from './preempt.ts';

const NOW = 10_000_000;

describe('preempt: whole gangs for a gang that did not fit', () => {
  it('a higher-priority job preempts the lower-priority whole gang of its queue and starts in its place', () => {
    const s = cluster('dgx-h100', 1, 1);
    const low = start(s, job('low', 'a', 2, 4), 0);
    const ses = sessionOf(s, queues(makeQueue('a')), [], [low], NOW);
    expect(preempt(ses, ses.attemptFor(job('hi', 'a', 1, 8, { priority: 10 })))).toBe(true);
    expect(ses.out.preempted.map((p) => [p.victim.id, p.by, p.reason])).toEqual([['low', 'hi', 'preempted by higher-priority hi']]);
    expect(ses.out.started.map((x) => x.job.id)).toEqual(['hi']);
    expect([ses.releases, ses.running.has('low'), ses.usage.get('a')?.total.gpuMilli]).toEqual([1, false, 8000]);
  });

  it('spares a victim younger than the cooldown, and one of equal priority', () => {
    const s = cluster('dgx-h100', 1, 1);
    const young = start(s, job('young', 'a', 1, 8), NOW - 1000);
    const ses = sessionOf(s, queues(makeQueue('a')), [], [young], NOW);
    expect(preempt(ses, ses.attemptFor(job('hi', 'a', 1, 8, { priority: 10 })))).toBe(false);
    const s2 = cluster('dgx-h100', 1, 1);
    const same = start(s2, job('same', 'a', 1, 8), 0);
    const ses2 = sessionOf(s2, queues(makeQueue('a')), [], [same], NOW);
    expect(preempt(ses2, ses2.attemptFor(job('other', 'a', 1, 8)))).toBe(false);
    expect([ses.out.preempted, ses2.out.preempted]).toEqual([[], []]);
  });

  it('with preemption off it leaves the job to the next action untouched', () => {
    const s = cluster('dgx-h100', 1, 1);
    const low = start(s, job('low', 'a', 1, 8), 0);
    const ses = sessionOf(s, queues(makeQueue('a')), [], [low], NOW, { preemption: false });
    const a = ses.attemptFor(job('hi', 'a', 1, 8, { priority: 10 }));
    a.why = 'no room';
    expect(preempt(ses, a)).toBe(false);
    expect([a.why, a.reason, ses.out.preempted]).toEqual(['no room', 'capacity', []]);
  });

  it('a pod outside any queue with preemptionPolicy Never preempts nothing and says so', () => {
    const s = cluster('dgx-h100', 1, 1);
    const low = start(s, job('low', 'x', 1, 8), 0);
    const ses = sessionOf(s, queues(), [], [low], NOW);
    const never: QueuedJob = {
      ...job('n', 'x', 1, 8, { priority: 10 }),
      gang: {
        ...job('n', 'x', 1, 8, { priority: 10 }).gang,
        members: [makePod('n-0', { gpuCount: 8 }, { gang: 'n', queue: 'x', priority: 10, preemptionPolicy: 'Never' })],
      },
    };
    const a = ses.attemptFor(never);
    a.why = 'no room';
    expect(preempt(ses, a)).toBe(false);
    expect(a.why).toBe('no room; preemptionPolicy Never: waits for room, preempts nothing');
    expect(ses.out.preempted).toEqual([]);
  });

  it('a queue that would pass its fair share does not reclaim from another: it waits, reason fair-share', () => {
    const s = cluster('dgx-h100', 1, 1);
    const other = start(s, job('other', 'b', 1, 8), 0);
    // a and b each demand 8 GPUs of the 8: each deserves 4, and b holds all 8.
    const big = job('big', 'a', 1, 8, { priority: 10 });
    const ses = sessionOf(s, queues(makeQueue('a'), makeQueue('b')), [big, job('x', 'b', 1, 8)], [other], NOW);
    const a = ses.attemptFor(big);
    a.why = 'no room';
    expect(preempt(ses, a)).toBe(false);
    expect(a.reason).toBe('fair-share');
    expect(a.why).toBe('no room; queue a would be above its fair share (8 of 4 GPU), so it waits for GPUs other queues hold');
  });
});
