import { describe, expect, it } from 'vitest';
import type { QueuedJob, RunningJob } from '../actions/jobs.ts';
import { makePod } from '../model/pod.ts';
import { expectedRemaining, requeueAfterCheckpoint, runtimeKeys, sizeClass, withLearnedEnds } from './job-runtimes.ts';
import { RuntimeModel } from './runtime.ts';

const S = 1000;
const runningJob = (id: string, queue: string, gpus: number, startMs: number, estEndMs: number): RunningJob => ({
  id,
  queue,
  priority: 0,
  startMs,
  estEndMs,
  podIds: [id],
  resources: { gpuMilli: gpus * 1000, cpuMilli: 0, memoryMiB: 0 },
  preemptible: true,
});

describe('runtime classes', () => {
  it('size classes: no GPU, one (or a fraction), one node, several nodes', () => {
    expect([0, 0.5, 1, 2, 8, 9, 64].map(sizeClass)).toEqual(['0', '1', '1', '2-8', '2-8', '9+', '9+']);
  });

  it('keys go from queue × size to the queue', () => {
    expect(runtimeKeys('gold', 4)).toEqual(['gold|2-8', 'gold']);
  });
});

describe('running jobs end at their conditional expectation', () => {
  it('censors the model at the work done and sets estEndMs = now + E[T | T > done] − done', () => {
    const m = new RuntimeModel();
    for (const d of [10, 20, 30]) m.observeFinished(runtimeKeys('q', 1), d * S);
    const r = runningJob('a', 'q', 1, 0, 999 * S);
    const out = withLearnedEnds(m, new Map([['a', r]]), (x) => ({ keys: runtimeKeys(x.queue, x.resources.gpuMilli / 1000), doneMs: 15 * S }), 15 * S);
    // Finished 10, 20, 30 and the running job censored at 15: S = 3/4 after 10, 3/8 after 20, 0 after 30.
    // E[T | T > 15] = 15 + (3/4·5 + 3/8·10) / (3/4) = 25 → 10 s left, ends at 25 s.
    expect(out.get('a')?.estEndMs).toBeCloseTo(25 * S, 6);
    expect(expectedRemaining(m, runtimeKeys('q', 1), 15 * S)).toBeCloseTo(10 * S, 6);
  });

  it('a job whose estimate is kept (user-given runtime) keeps it but still censors its class', () => {
    const m = new RuntimeModel();
    const r = runningJob('a', 'q', 1, 0, 500 * S);
    const out = withLearnedEnds(m, new Map([['a', r]]), () => ({ keys: ['q'], doneMs: 40 * S, keepEstimate: true }), 40 * S);
    expect(out.get('a')).toBe(r);
    // Nothing finished, one job running for 40 s: a new job of q is expected to run twice that (ADR 0021).
    expect(m.expectedTotal(['q'], 0)).toBe(80 * S);
  });

  it('never less than a second left', () => {
    const m = new RuntimeModel();
    m.observeFinished(['q'], 10 * S);
    expect(expectedRemaining(m, ['q'], 0)).toBe(10 * S);
    expect(expectedRemaining(new RuntimeModel({ fallbackMs: 0 }), ['x'], 0)).toBe(1000);
  });
});

describe('a forward-run victim back in its queue', () => {
  const base: QueuedJob = {
    id: 'a',
    queue: 'q',
    priority: 0,
    arrivalMs: 5,
    gang: { name: 'a', minMember: 1, members: [makePod('a', { gpuCount: 1 })], topology: {}, priority: 0, queue: 'q' },
    estRuntimeMs: 1,
  };
  it('runs what was expected less the work its checkpoint kept', () => {
    expect(requeueAfterCheckpoint(base, runningJob('a', 'q', 1, 0, 100 * S), 30 * S)).toEqual({ ...base, estRuntimeMs: 70 * S });
    expect(requeueAfterCheckpoint(base, runningJob('a', 'q', 1, 0, 100 * S), 100 * S).estRuntimeMs).toBe(1000);
  });
});

describe('stopped jobs are censored observations', () => {
  it('a job preempted after 60 s says the class runs at least that long (doubling tail: 120 s)', () => {
    const m = new RuntimeModel();
    m.observeStopped(['q'], 60 * S);
    expect(m.expectedTotal(['q'], 0)).toBe(120 * S);
    m.observeFinished(['q'], 30 * S);
    // Finished 30, stopped 60: S = 1/2 after 30, flat to M = 60, tail S(M)·M = 30 → 30 + 15 + 30 = 75 s.
    expect(m.expectedTotal(['q'], 0)).toBe(75 * S);
  });

  it('only the most recent `recent` stopped jobs of a class count', () => {
    const m = new RuntimeModel({ recent: 1 });
    m.observeStopped(['q'], 600 * S);
    m.observeStopped(['q'], 60 * S);
    expect(m.expectedTotal(['q'], 0)).toBe(120 * S);
  });
});
