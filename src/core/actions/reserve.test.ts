import { describe, expect, it } from 'vitest';
import { makeQueue } from '../queue/model.ts';
import { cluster, job, queues, sessionOf, start } from './cycle-testing.ts';
import { reservationFor, reserve } from './reserve.ts';

describe('reserve: the head that cannot be placed gets nodes and a start time', () => {
  it('reservationFor sums the GPU milli each node must hold, nodes sorted', () => {
    expect(
      reservationFor('j', 5, [
        { node: 'n1', gpuMilli: 4000 },
        { node: 'n0', gpuMilli: 8000 },
        { node: 'n1', gpuMilli: 4000 },
      ]),
    ).toEqual({ jobId: 'j', startMs: 5, nodes: ['n0', 'n1'], needs: { n0: 8000, n1: 8000 } });
  });

  it('reserves the node the first ending jobs free, at their end; the queue’s next job gets none', () => {
    const now = 1_000_000;
    const s = cluster('dgx-h100', 1, 2);
    const soon = start(s, job('soon', 'a', 1, 8), now - 1000, { estEndMs: now + 600_000 });
    const late = start(s, job('late', 'a', 1, 8), now - 1000, { estEndMs: now + 7_200_000 });
    const soonNode = s.state.nodeOfPod('soon-0')?.spec.name as string;
    const ses = sessionOf(s, queues(makeQueue('a', { reserveAfterMs: 0 })), [], [soon, late], now);
    const head = ses.attemptFor(job('head', 'a', 1, 8));
    head.why = 'no room';
    expect(reserve(ses, head)).toBe(true);
    expect(ses.out.reservations).toEqual([{ jobId: 'head', startMs: now + 600_000, nodes: [soonNode], needs: { [soonNode]: 8000 } }]);
    expect(ses.out.waiting.get('head')).toEqual({
      reason: 'capacity',
      message: 'no room; reserved 1 nodes, expected start in 600 s',
      steadyMessage: 'no room; reserved 1 nodes',
    });
    expect(ses.reservedNodes.has(soonNode)).toBe(true);
    expect(reserve(ses, ses.attemptFor(job('next', 'a', 1, 8)))).toBe(false);
    expect(ses.state.nodes.reduce((x, n) => x + n.gpuFreeMilli(), 0)).toBe(0); // planning changed nothing
  });

  it('the head reserves only once it has waited reserveAfterMs (4 h by default, the queue’s own when it sets one); until then no job of its queue does', () => {
    const now = 10 * 3_600_000;
    const H = 3_600_000;
    const setup = (q: ReturnType<typeof makeQueue>) => {
      const s = cluster('dgx-h100', 1, 1);
      const busy = start(s, job('busy', 'a', 1, 8), now - 1000, { estEndMs: now + 600_000 });
      return sessionOf(s, queues(q), [], [busy], now);
    };
    // Waited 3 h 59 min: no reservation, and the queue's next job (waited longer still) does not take the head's turn.
    const young = setup(makeQueue('a'));
    expect(reserve(young, young.attemptFor(job('head', 'a', 1, 8, { arrivalMs: now - 4 * H + 60_000 })))).toBe(false);
    expect(reserve(young, young.attemptFor(job('next', 'a', 1, 8, { arrivalMs: now - 9 * H })))).toBe(false);
    expect(young.out.reservations).toEqual([]);
    // Waited 4 h: it reserves.
    const old = setup(makeQueue('a'));
    expect(reserve(old, old.attemptFor(job('head', 'a', 1, 8, { arrivalMs: now - 4 * H })))).toBe(true);
    expect(old.out.reservations.map((r) => [r.jobId, r.startMs])).toEqual([['head', now + 600_000]]);
    // A queue that sets 30 min reserves for a head that waited 1 h.
    const eager = setup(makeQueue('a', { reserveAfterMs: 30 * 60_000 }));
    expect(reserve(eager, eager.attemptFor(job('head', 'a', 1, 8, { arrivalMs: now - H })))).toBe(true);
  });

  it('a gang that cannot fit even on an empty cluster gets no reservation', () => {
    const ses = sessionOf(cluster('dgx-h100', 1, 1), queues(makeQueue('a')), []);
    expect(reserve(ses, ses.attemptFor(job('huge', 'a', 2, 8)))).toBe(false);
    expect(ses.out.reservations).toEqual([]);
  });
});
