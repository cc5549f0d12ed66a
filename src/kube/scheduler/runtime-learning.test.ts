import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import type { QueuedJob, RunningJob } from '../../core/actions/jobs.ts';
import { makePod } from '../../core/model/pod.ts';
import { LiveRuntimes, requeueVictim } from './runtime-learning.ts';

const S = 1000;
const T0 = Date.parse('2026-11-29T10:00:00Z');
const iso = (s: number): string => new Date(T0 + s * S).toISOString();

interface PodOpts {
  node?: string;
  phase?: string;
  startS?: number;
  finishS?: number;
  deletingS?: number;
  owned?: boolean;
}
function pod(name: string, o: PodOpts = {}): V1Pod {
  return {
    metadata: {
      name,
      namespace: 'ml',
      uid: `uid-${name}`,
      ...(o.deletingS === undefined ? {} : { deletionTimestamp: iso(o.deletingS) as unknown as Date }),
      ...(o.owned === true ? { ownerReferences: [{ apiVersion: 'ai.sits2026.dev/v1', kind: 'TrainingJob', name: 'j', uid: 'u', controller: true }] } : {}),
    },
    spec: { containers: [{ name: 'main' }], ...(o.node === undefined ? {} : { nodeName: o.node }) },
    status: {
      ...(o.phase === undefined ? {} : { phase: o.phase }),
      ...(o.startS === undefined ? {} : { startTime: iso(o.startS) as unknown as Date }),
      ...(o.finishS === undefined
        ? {}
        : {
            containerStatuses: [
              {
                name: 'main',
                image: 'x',
                imageID: '',
                ready: false,
                restartCount: 0,
                state: { terminated: { exitCode: 0, finishedAt: iso(o.finishS) as unknown as Date } },
              },
            ],
          }),
    },
  };
}
const gang = { id: 'gang:ml/g', queue: 'q' };
const four = (): number => 4;
const keys8 = ['q|2-8', 'q'];

describe('live runtimes: a job SITS bound becomes one observation when none of its pods runs', () => {
  it('a gang that finished: first start to last container end (90 s), its GPUs summed (2×4 → 2-8)', () => {
    const rt = new LiveRuntimes();
    rt.seen(pod('g-0'), gang, four, T0); // unbound: not followed
    expect(rt.following).toBe(0);
    rt.seen(pod('g-0', { node: 'n1' }), gang, four, T0 - 5 * S); // bound, not started yet: the time it was seen
    rt.seen(pod('g-1', { node: 'n2' }), gang, four, T0 - 5 * S);
    rt.seen(pod('g-0', { node: 'n1', phase: 'Running', startS: 0 }), gang, four, T0);
    rt.seen(pod('g-1', { node: 'n2', phase: 'Running', startS: 2 }), gang, four, T0 + 2 * S);
    rt.seen(pod('g-0', { node: 'n1', phase: 'Succeeded', startS: 0, finishS: 60 }), gang, four, T0 + 61 * S);
    expect(rt.flush()).toBe(0); // g-1 still runs
    rt.seen(pod('g-1', { node: 'n2', phase: 'Succeeded', startS: 2, finishS: 90 }), gang, four, T0 + 95 * S);
    expect(rt.flush()).toBe(1);
    expect(rt.recorded).toEqual({ finished: 1, stopped: 0 });
    expect(rt.model.finishedCount('q|2-8')).toBe(1);
    expect(rt.model.expectedTotal(keys8, 0)).toBe(90 * S);
    // Later events of its pods (a controller cleaning up) do not open it again.
    rt.seen(pod('g-1', { node: 'n2', phase: 'Succeeded', startS: 2, finishS: 90, deletingS: 200 }), gang, four, T0 + 200 * S);
    rt.gone(pod('g-1', { node: 'n2', phase: 'Succeeded', startS: 2, finishS: 90 }), gang, T0 + 200 * S);
    expect(rt.flush()).toBe(0);
    expect(rt.model.finishedCount('q')).toBe(1);
  });

  it('a job whose pods were all deleted while running (preempted) is censored at the time it ran', () => {
    const rt = new LiveRuntimes();
    const job = { id: 'ml/p', queue: 'q' };
    rt.seen(pod('p', { node: 'n1', phase: 'Running', startS: 0 }), job, () => 1, T0);
    rt.seen(pod('p', { node: 'n1', phase: 'Running', startS: 0, deletingS: 60 }), job, () => 1, T0 + 61 * S);
    // It may still turn Failed while it terminates: it was deleted first.
    rt.seen(pod('p', { node: 'n1', phase: 'Failed', startS: 0, finishS: 63, deletingS: 60 }), job, () => 1, T0 + 63 * S);
    expect(rt.flush()).toBe(1);
    expect(rt.recorded).toEqual({ finished: 0, stopped: 1 });
    // Only a lower bound of 60 s: with the doubling tail a new job of q is expected at 120 s.
    expect(rt.model.expectedTotal(['q|1', 'q'], 0)).toBe(120 * S);
  });

  it('a delete event without a deletion timestamp ends it when the watch saw it', () => {
    const rt = new LiveRuntimes();
    const job = { id: 'ml/p', queue: 'q' };
    rt.seen(pod('p', { node: 'n1', phase: 'Running', startS: 0 }), job, () => 1, T0);
    rt.gone(pod('p', { node: 'n1', phase: 'Running', startS: 0 }), job, T0 + 30 * S);
    rt.flush();
    expect(rt.model.expectedTotal(['q'], 0)).toBe(60 * S);
  });

  it('a gang where one pod failed by itself and the rest were deleted ended on its own: finished', () => {
    const rt = new LiveRuntimes();
    rt.seen(pod('g-0', { node: 'n1', phase: 'Running', startS: 0 }), gang, four, T0);
    rt.seen(pod('g-1', { node: 'n2', phase: 'Running', startS: 0 }), gang, four, T0);
    rt.seen(pod('g-0', { node: 'n1', phase: 'Failed', startS: 0, finishS: 40 }), gang, four, T0 + 41 * S);
    rt.gone(pod('g-1', { node: 'n2', phase: 'Running', startS: 0, deletingS: 45 }), gang, T0 + 46 * S);
    rt.flush();
    expect(rt.recorded).toEqual({ finished: 1, stopped: 0 });
    expect(rt.model.expectedTotal(keys8, 0)).toBe(45 * S);
  });

  it('pods that ended before the scheduler started are learned from their status, if it has a start time', () => {
    const rt = new LiveRuntimes();
    rt.seen(pod('old', { node: 'n1', phase: 'Succeeded', startS: 0, finishS: 300 }), { id: 'ml/old', queue: 'q' }, () => 1, T0 + 3600 * S);
    rt.seen(pod('never', { node: 'n1', phase: 'Failed' }), { id: 'ml/never', queue: 'q' }, () => 1, T0 + 3600 * S);
    expect(rt.flush()).toBe(1);
    expect(rt.model.expectedTotal(['q|1', 'q'], 0)).toBe(300 * S);
  });

  it('keeps only the most recent jobs per class', () => {
    const rt = new LiveRuntimes(2);
    for (const [i, d] of [100, 20, 40].entries()) {
      const job = { id: `ml/p${i}`, queue: 'q' };
      rt.seen(pod(`p${i}`, { node: 'n1', phase: 'Succeeded', startS: 0, finishS: d }), job, () => 1, T0 + 500 * S);
      rt.flush();
    }
    expect(rt.model.finishedCount('q')).toBe(2);
    expect(rt.model.expectedTotal(['q'], 0)).toBe(30 * S);
  });

  it('records ended runs in the order they were opened, whatever order they ended in, and only once all their pods stopped', () => {
    // The model keeps the 2 most recent per class: recording p0, p1, p2 (opened in that order) keeps p1 and p2.
    const rt = new LiveRuntimes(2);
    const jobs = [0, 1, 2].map((i) => ({ id: `ml/p${i}`, queue: 'q' }));
    for (const [i, j] of jobs.entries()) rt.seen(pod(`p${i}`, { node: 'n1', phase: 'Running', startS: 0 }), j, () => 1, T0);
    rt.seen(pod('p-extra', { node: 'n2', phase: 'Running', startS: 0 }), jobs[0] as (typeof jobs)[0], () => 1, T0);
    for (const [i, d] of [
      [2, 40],
      [1, 20],
      [0, 100],
    ] as const)
      rt.seen(pod(`p${i}`, { node: 'n1', phase: 'Succeeded', startS: 0, finishS: d }), jobs[i] as (typeof jobs)[0], () => 1, T0 + 500 * S);
    expect(rt.flush()).toBe(2); // p0 still has p-extra running
    expect(rt.following).toBe(1);
    expect(rt.flush()).toBe(0);
    rt.seen(pod('p-extra', { node: 'n2', phase: 'Succeeded', startS: 0, finishS: 100 }), jobs[0] as (typeof jobs)[0], () => 1, T0 + 500 * S);
    expect(rt.flush()).toBe(1);
    // Opened order p0, p1, p2, but p0 was recorded last: the two kept are p2 (40 s) and p0 (100 s).
    expect(rt.model.expectedTotal(['q'], 0)).toBe(70 * S);
    expect(rt.following).toBe(0);
  });

  it('a queue named later by the pod group wins', () => {
    const rt = new LiveRuntimes();
    rt.seen(pod('g-0', { node: 'n1', phase: 'Succeeded', startS: 0, finishS: 10 }), { id: 'gang:ml/g', queue: 'default' }, four, T0 + 20 * S);
    rt.flush((id) => (id === 'gang:ml/g' ? 'team' : undefined));
    expect(rt.model.finishedCount('team')).toBe(1);
    expect(rt.model.finishedCount('default')).toBe(0);
  });
});

describe('live runtimes as estimates', () => {
  const running = (id: string, startMs: number, estEndMs: number): RunningJob => ({
    id,
    queue: 'q',
    priority: 0,
    startMs,
    estEndMs,
    podIds: [id],
    resources: { gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0 },
    preemptible: true,
  });

  it('a waiting job: the user-given runtime, else the learned one, else 1 h', () => {
    const rt = new LiveRuntimes();
    expect(rt.pendingRuntime('q', 1, undefined)).toBe(3_600_000);
    rt.seen(pod('a', { node: 'n1', phase: 'Succeeded', startS: 0, finishS: 30 }), { id: 'ml/a', queue: 'q' }, () => 1, T0 + 40 * S);
    rt.flush();
    expect(rt.pendingRuntime('q', 1, undefined)).toBe(30 * S);
    expect(rt.pendingRuntime('q', 1, 7 * S)).toBe(7 * S);
  });

  it('running jobs: learned remaining time given what they ran, unless the user gave a runtime', () => {
    const rt = new LiveRuntimes();
    for (const [i, d] of [10, 20, 30].entries())
      rt.seen(pod(`f${i}`, { node: 'n1', phase: 'Succeeded', startS: 0, finishS: d }), { id: `ml/f${i}`, queue: 'q' }, () => 1, T0 + 100 * S);
    rt.flush();
    const now = T0 + 100 * S;
    const jobs = new Map([
      ['a', running('a', now - 15 * S, now + 3_600_000)],
      ['b', running('b', now - 15 * S, now + 500 * S)],
    ]);
    const out = rt.running(jobs, (r) => r.id === 'b', now);
    // Finished 10, 20, 30; both running jobs censored at 15 (b's runtime is the user's, but it still ran 15 s).
    // At risk 5: one dies at 10 → S = 4/5; the two at 15 leave; at risk 2: dies at 20 → 2/5; at 30 → 0.
    // E[T | T > 15] = 15 + (4/5·5 + 2/5·10) / (4/5) = 15 + 10 = 25 → 10 s left.
    expect(out.get('a')?.estEndMs).toBeCloseTo(now + 10 * S, 6);
    expect(out.get('b')?.estEndMs).toBe(now + 500 * S);
  });
});

describe('a victim of the forward run', () => {
  const base: QueuedJob = {
    id: 'ml/a',
    queue: 'q',
    priority: 0,
    arrivalMs: 5,
    gang: { name: 'ml/a', minMember: 1, members: [makePod('ml/a', { gpuCount: 1 })], topology: {}, priority: 0, queue: 'q' },
    estRuntimeMs: 1,
  };
  const victim: RunningJob = {
    id: 'ml/a',
    queue: 'q',
    priority: 0,
    startMs: 0,
    estEndMs: 100 * S,
    podIds: ['ml/a'],
    resources: { gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0 },
    preemptible: true,
    lastCheckpointMs: 40 * S,
  };

  it('comes back only when a controller owns its pods: queued again when preempted, minus the checkpointed work', () => {
    expect(requeueVictim(base, victim, [pod('a')], 50 * S)).toBeUndefined();
    expect(requeueVictim(base, victim, [pod('a', { owned: true })], 50 * S)).toEqual({ ...base, arrivalMs: 50 * S, estRuntimeMs: 60 * S });
    const { lastCheckpointMs: _, ...noCheckpoint } = victim;
    expect(requeueVictim(base, noCheckpoint, [pod('a', { owned: true })], 50 * S)?.estRuntimeMs).toBe(100 * S);
    expect(requeueVictim(undefined, victim, [pod('a', { owned: true })], 50 * S)).toBeUndefined();
  });
});
