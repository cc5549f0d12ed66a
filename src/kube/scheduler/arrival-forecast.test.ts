import { describe, expect, it } from 'vitest';
import type { QueuedJob } from '../../core/actions/jobs.ts';
import { makePod } from '../../core/model/pod.ts';
import { LiveArrivals } from './arrival-forecast.ts';

const MIN = 60_000;
const job = (id: string, queue: string, atMin: number, gpusPerPod: number, pods = 1): QueuedJob => {
  const members = Array.from({ length: pods }, (_, i) => makePod(`${id}-${i}`, { gpuCount: gpusPerPod }, pods > 1 ? { gang: id, queue } : { queue }));
  return {
    id,
    queue,
    priority: 5,
    arrivalMs: atMin * MIN,
    gang: { name: id, minMember: pods, members, topology: { preferred: 'rack' }, priority: 5, queue },
    estRuntimeMs: 1,
    namespace: 'ml',
    priorityClass: 'high',
  };
};

describe('live arrival forecast', () => {
  it('each job is one arrival at its creation time, however often it is seen waiting', () => {
    const a = new LiveArrivals({ lookbackMs: 120 * MIN, horizonMs: 120 * MIN, minSpanMs: 15 * MIN });
    a.observe([job('ml/a', 'q', 0, 1)], 1 * MIN);
    a.observe([job('ml/a', 'q', 0, 1), job('gang:ml/g', 'q', 10, 4, 2)], 11 * MIN);
    // The gang is preempted and recreated: same id, not a new arrival.
    a.observe([job('gang:ml/g', 'q', 25, 4, 2)], 29 * MIN);
    // 2 arrivals over the 30 min observed → one every 15 min, 30 min ahead, shapes in arrival order.
    const f = a.forecast(30 * MIN, (q, gpus) => (q === 'q' ? gpus * MIN : 0));
    expect(f.map((j) => [j.id, j.arrivalMs / MIN, j.gang.members.length, j.estRuntimeMs / MIN])).toEqual([
      ['forecast/q/1', 45, 1, 1],
      ['forecast/q/2', 60, 2, 8],
    ]);
    // Own ids for the job and its pods (the forward run places them next to the real ones); the rest is the shape's.
    const g = f[1] as QueuedJob;
    expect(g.gang.name).toBe('forecast/q/2');
    expect(g.gang.members.map((m) => [m.id, m.gang])).toEqual([
      ['forecast/q/2/0', 'forecast/q/2'],
      ['forecast/q/2/1', 'forecast/q/2'],
    ]);
    expect([g.priority, g.namespace, g.priorityClass, g.gang.topology, g.gang.minMember]).toEqual([5, 'ml', 'high', { preferred: 'rack' }, 2]);
    expect((f[0] as QueuedJob).gang.members[0]?.gang).toBeUndefined();
  });

  it('at most `max` forecast jobs, the earliest', () => {
    const a = new LiveArrivals({ lookbackMs: 120 * MIN, horizonMs: 120 * MIN, minSpanMs: 15 * MIN });
    a.observe([job('ml/a', 'q', 0, 1), job('ml/b', 'r', 0, 1)], 1 * MIN);
    expect(a.forecast(1 * MIN, () => 1, 1).map((j) => j.id)).toEqual(['forecast/q/1']);
    expect(a.forecast(1 * MIN, () => 1, 0)).toEqual([]);
  });

  it('forgets arrivals older than the lookback', () => {
    const a = new LiveArrivals({ lookbackMs: 20 * MIN, horizonMs: 120 * MIN, minSpanMs: 5 * MIN });
    a.observe([job('ml/a', 'q', 0, 1)], 0);
    a.observe([job('ml/b', 'q', 30, 1)], 30 * MIN);
    // Only b (at 30) is within the last 20 min: one per 20 min, 20 min ahead.
    expect(a.forecast(30 * MIN, () => 1).map((j) => j.arrivalMs / MIN)).toEqual([50]);
  });
});
