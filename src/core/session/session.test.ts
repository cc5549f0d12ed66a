import { describe, expect, it } from 'vitest';
import { cluster, G, job, queues, sessionOf, start } from '../actions/cycle-testing.ts';
import { makeQueue } from '../queue/model.ts';
import { CycleSession } from './session.ts';

describe('CycleSession: the cycle’s state', () => {
  it('usage of the running jobs by queue, and deserved shares from usage plus demand', () => {
    const s = cluster('dgx-h100', 1, 2); // 16 GPUs
    const r = start(s, job('r', 'a', 1, 8), 0);
    const ses = sessionOf(s, queues(makeQueue('a'), makeQueue('b', { weight: 3 })), [job('p', 'a', 1, 8), job('q', 'b', 2, 8)], [r]);
    expect(ses.usage.get('a')?.total.gpuMilli).toBe(8000);
    expect(ses.capacity.gpuMilli).toBe(16_000);
    // a demands 16, b 16; weights 1:3 split the 16 GPUs 4:12.
    expect([ses.deserved.get('a'), ses.deserved.get('b')]).toEqual([4000, 12_000]);
  });

  it('an undeclared queue has no quota (nominal = the cluster) and weight 1', () => {
    const ses = sessionOf(cluster('dgx-h100', 1, 1), queues(), []);
    expect(ses.queueOf('x')).toMatchObject({ name: 'x', weight: 1, nominal: ses.capacity, borrowingLimit: { gpuMilli: 0 } });
  });

  it('a reservation slot is offered once per list and only while slots are left', () => {
    const ses = sessionOf(cluster('dgx-h100', 1, 1), queues(makeQueue('a'), makeQueue('b')), [], [], 10_000_000, { maxReservations: 1 });
    expect(ses.mayReserve(job('x', 'a', 1, 1))).toBe(true);
    ses.headReserved.add('a');
    expect([ses.mayReserve(job('y', 'a', 1, 1)), ses.mayReserve(job('z', 'b', 1, 1))]).toEqual([false, true]);
    ses.out.reservations.push({ jobId: 'z', startMs: 0, nodes: [], needs: {} });
    expect(ses.mayReserve(job('z2', 'b', 1, 1))).toBe(false);
  });

  it('settle: the job waits with what the actions found, once; a begun attempt’s shape is remembered as failed', () => {
    const ses = sessionOf(cluster('dgx-h100', 1, 1), queues(makeQueue('a')), []);
    const a = ses.attemptFor(job('x', 'a', 1, 8));
    a.why = 'no room';
    ses.settle(a);
    expect(ses.out.waiting.get('x')).toEqual({ reason: 'capacity', message: 'no room' });
    expect(ses.failedShapes.size).toBe(0);
    const b = ses.attemptFor(job('y', 'a', 1, 8));
    expect(ses.beginAttempt(b, 'shape-y')).toBe(true);
    ses.wait('y', { reason: 'critical-victim', message: 'waits for v' });
    b.why = 'no room';
    ses.settle(b);
    expect(ses.out.waiting.get('y')).toEqual({ reason: 'critical-victim', message: 'waits for v' });
    expect(ses.failedShapes.get('shape-y')).toEqual({ releases: 0, waiting: { reason: 'critical-victim', message: 'waits for v' }, gang: 'y' });
  });

  it('start adds the job’s demand to its queue on the GPU model of its first node', () => {
    const s = cluster('dgx-h100', 1, 1);
    const ses = sessionOf(s, queues(makeQueue('a')), []);
    ses.start(job('x', 'a', 1, 8), G(8), [{ podId: 'x-0', node: 'r0-n0', gpus: [0] }]);
    const model = s.state.node('r0-n0')?.spec.gpus[0]?.model as string;
    expect(ses.usage.get('a')?.byModel).toEqual({ [model]: 8000 });
    expect(ses.result().started.map((x) => x.job.id)).toEqual(['x']);
  });

  it('asks the host for its disruption budgets once, when first needed', () => {
    let calls = 0;
    const s = cluster('dgx-h100', 1, 1);
    const ses = sessionOf(s, queues(), []);
    const withBudgets = new CycleSession({ ...ses.input, disruptionBudgets: () => (calls++, []) }, ses.opts);
    expect(calls).toBe(0);
    withBudgets.budgets();
    withBudgets.budgets();
    expect(calls).toBe(1);
  });
});
