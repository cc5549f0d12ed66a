import { describe, expect, it } from 'vitest';
import { makeQueue } from '../queue/model.ts';
import { allocate } from './allocate.ts';
import { cluster, job, queues, sessionOf } from './cycle-testing.ts';

const freeGpus = (ses: ReturnType<typeof sessionOf>): number => ses.state.nodes.reduce((s, n) => s + n.gpuFreeMilli(), 0);

describe('allocate: placement of the whole gang', () => {
  it('places and commits the gang: it starts, its queue’s usage grows, the GPUs are taken', () => {
    const ses = sessionOf(cluster('dgx-h100', 1, 2), queues(makeQueue('a')), []);
    const a = ses.attemptFor(job('g', 'a', 2, 8));
    expect(allocate(ses, a)).toBe(true);
    expect(ses.out.started.map((x) => [x.job.id, x.placements.map((p) => p.node).sort()])).toEqual([['g', ['r0-n0', 'r0-n1']]]);
    expect(ses.usage.get('a')?.total.gpuMilli).toBe(16_000);
    expect(freeGpus(ses)).toBe(0);
  });

  it('a gang that does not fit is left to the next action with the explanation, nothing taken', () => {
    const ses = sessionOf(cluster('dgx-h100', 1, 2), queues(makeQueue('a')), []);
    const a = ses.attemptFor(job('g', 'a', 3, 8));
    expect(allocate(ses, a)).toBe(false);
    expect(a.reason).toBe('capacity');
    expect(a.why).toMatch(/^0\/2 nodes fit gang g \(3×8 GPU\)/);
    expect(ses.out.started).toEqual([]);
    expect(freeGpus(ses)).toBe(16_000);
  });

  it('on a reserved node only a backfill job that ends before the reservation starts', () => {
    const now = 1_000_000;
    const held = [{ jobId: 'big', startMs: now + 90_000, nodes: ['r0-n0'], needs: { 'r0-n0': 8000 } }];
    const ses = sessionOf(cluster('dgx-h100', 1, 1), queues(makeQueue('a')), [], [], now, {}, { held });
    const long = ses.attemptFor(job('long', 'a', 1, 4, { estRuntimeMs: 3_600_000 }));
    expect(allocate(ses, long)).toBe(true);
    expect(ses.out.waiting.get('long')).toEqual({
      reason: 'reservation',
      message: 'would delay the reservation of big (starts in 90 s on 1 nodes); runs 3600 s',
      steadyMessage: 'would delay the reservation of big (on 1 nodes); runs 3600 s',
    });
    expect(freeGpus(ses)).toBe(8000);
    const short = ses.attemptFor(job('short', 'a', 1, 4, { estRuntimeMs: 60_000 }));
    expect(allocate(ses, short)).toBe(true);
    expect(ses.out.started.map((x) => x.job.id)).toEqual(['short']);
  });
});
