import { describe, expect, it } from 'vitest';
import { cloneState, estimateStarts } from './eta.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';
import { resolveProfile } from '../plugins/registry.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import { makePod } from '../model/pod.ts';
import { makeQueue } from '../queue/model.ts';
import { seededRng } from '../ports.ts';

const shape = NODE_SHAPES['dgx-h100'] as NonNullable<(typeof NODE_SHAPES)['dgx-h100']>;
const specs = [0, 1].map((i) => ({
  name: `n${i}`,
  cpuMilli: shape.cpuMilli,
  memoryMiB: shape.memoryMiB,
  maxPods: 110,
  gpus: shape.gpus,
  topology: shape.topology,
  location: { zone: 'z', block: 'b', rack: 'r' },
  labels: {},
  taints: [],
  unschedulable: false,
}));
const profile = (): ReturnType<typeof resolveProfile> => resolveProfile('sits', { typicalShapes: [] });

function job(id: string, gpus: number, runtimeMs: number, arrivalMs: number, queue = 'q'): QueuedJob {
  const members = [makePod(`${id}-0`, { gpuCount: gpus }, { gang: id, queue })];
  return { id, queue, priority: 0, arrivalMs, gang: { name: id, minMember: 1, members, topology: {}, priority: 0, queue }, estRuntimeMs: runtimeMs };
}

const H = 3_600_000;

/** Both nodes full: r1 on n0 until `end1`, r2 on n1 until `end2`, both of queue `queue`. */
function fullCluster(end1: number, end2: number, queue = 'q'): { state: ClusterState; running: Map<string, RunningJob> } {
  const state = new ClusterState(specs);
  const running = new Map<string, RunningJob>();
  for (const [id, node, end] of [
    ['r1', 'n0', end1],
    ['r2', 'n1', end2],
  ] as const) {
    state.allocate({ podId: `${id}-0`, node, gpus: [0, 1, 2, 3, 4, 5, 6, 7], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue });
    running.set(id, {
      id,
      queue,
      priority: 0,
      startMs: 0,
      estEndMs: end,
      podIds: [`${id}-0`],
      resources: { gpuMilli: 8000, cpuMilli: 0, memoryMiB: 0 },
      preemptible: true,
    });
  }
  return { state, running };
}

describe('estimateStarts', () => {
  it('replays the queue forward: jobs start as running jobs end, in queue order', () => {
    const state = new ClusterState(specs);
    const H = 3_600_000;
    state.allocate({ podId: 'r1-0', node: 'n0', gpus: [0, 1, 2, 3, 4, 5, 6, 7], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    state.allocate({ podId: 'r2-0', node: 'n1', gpus: [0, 1, 2, 3, 4, 5, 6, 7], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    const running = new Map<string, RunningJob>([
      [
        'r1',
        {
          id: 'r1',
          queue: 'q',
          priority: 0,
          startMs: 0,
          estEndMs: 1 * H,
          podIds: ['r1-0'],
          resources: { gpuMilli: 8000, cpuMilli: 0, memoryMiB: 0 },
          preemptible: true,
        },
      ],
      [
        'r2',
        {
          id: 'r2',
          queue: 'q',
          priority: 0,
          startMs: 0,
          estEndMs: 3 * H,
          podIds: ['r2-0'],
          resources: { gpuMilli: 8000, cpuMilli: 0, memoryMiB: 0 },
          preemptible: true,
        },
      ],
    ]);
    const p = profile();
    if (!p.ok) throw new Error('profile');
    const eta = estimateStarts({
      nowMs: 0,
      state,
      profile: p.value,
      rng: seededRng(7),
      queues: new Map([['q', makeQueue('q')]]),
      pending: [job('a', 8, 4 * H, 1), job('b', 8, H, 2), job('c', 4, H, 3)],
      running,
    });
    expect(eta.get('a')).toBe(1 * H); // n0 frees at 1 h
    expect(eta.get('b')).toBe(3 * H); // n1 frees at 3 h
    expect(eta.get('c')).toBe(4 * H); // after b ends (a runs until 5 h)
    // The real state is untouched.
    expect(state.nodes.map((n) => n.fullyFreeGpus())).toEqual([0, 0]);
  });

  it('with a cadence, jobs start at the first cycle at or after the GPUs free up', () => {
    const { state, running } = fullCluster(H + 10_000, 3 * H);
    const p = profile();
    if (!p.ok) throw new Error('profile');
    const eta = estimateStarts({
      nowMs: 0,
      state,
      profile: p.value,
      rng: seededRng(7),
      queues: new Map([['q', makeQueue('q')]]),
      pending: [job('a', 8, H, 1)],
      running,
      cadence: { nextMs: 30_000, everyMs: 60_000 },
    });
    // Cycles at 30 s + k·60 s: the first one after 1 h 10 s is 30 s + 60·60 s = 1 h 30 s.
    expect(eta.get('a')).toBe(H + 30_000);
    // The first cycle is the next one, not now: a job that fits now starts at 30 s.
    const free = new ClusterState(specs);
    expect(
      estimateStarts({
        nowMs: 0,
        state: free,
        profile: p.value,
        rng: seededRng(7),
        queues: new Map([['q', makeQueue('q')]]),
        pending: [job('a', 8, H, 1)],
        running: new Map(),
        cadence: { nextMs: 30_000, everyMs: 60_000 },
      }).get('a'),
    ).toBe(30_000);
  });

  it('a forecast arrival of a queue under its fair share goes first', () => {
    // Queue a holds the whole cluster (r1 until 1 h, r2 until 2 h) and x waits in it; queue b is idle.
    const { state, running } = fullCluster(H, 2 * H, 'a');
    const p = profile();
    if (!p.ok) throw new Error('profile');
    const queues = new Map([
      ['a', makeQueue('a')],
      ['b', makeQueue('b')],
    ]);
    const base = { nowMs: 0, state, profile: p.value, rng: seededRng(7), queues, pending: [job('x', 8, H, 1, 'a')], running, options: { preemption: false } };
    expect(estimateStarts(base).get('x')).toBe(H);
    // b is expected to submit an 8-GPU job at 30 min: at 1 h b (share 0) goes before a (share ½).
    const eta = estimateStarts({ ...base, arrivals: [job('forecast/b/1', 8, H, 0.5 * H, 'b')] });
    expect(eta.get('x')).toBe(2 * H);
    expect(eta.has('forecast/b/1')).toBe(false); // forecast jobs get no estimate of their own
  });

  it('a victim of the forward run returns to its queue when requeue says how', () => {
    const { state, running } = fullCluster(3 * H, 2 * H, 'a');
    const p = profile();
    if (!p.ok) throw new Error('profile');
    const queues = new Map([
      ['a', makeQueue('a')],
      ['b', makeQueue('b')],
    ]);
    // At 30 min y (queue b, under its share) reclaims r1 (r1 and r2 cost the same; the first one is taken)
    // and runs 1 h.
    const base = {
      nowMs: 0,
      state,
      profile: p.value,
      rng: seededRng(7),
      queues,
      pending: [job('x', 8, H, 1, 'a')],
      running,
      arrivals: [job('forecast/b/1', 8, H, 0.5 * H, 'b')],
    };
    const dropped = estimateStarts(base).get('x') as number;
    const requeued = estimateStarts({ ...base, requeue: (v) => job(v.id, 8, v.estEndMs - v.startMs, 0, v.queue) }).get('x') as number;
    // Dropped victim: x takes the GPUs y frees at 1.5 h. Requeued victim (submitted at 0, before x) goes
    // first there, and x waits for r2 to end at 2 h.
    expect(dropped).toBe(1.5 * H);
    expect(requeued).toBe(2 * H);
  });

  it('cloneState copies allocations and GPU health, independently', () => {
    const state = new ClusterState(specs);
    state.allocate({ podId: 'x', node: 'n0', gpus: [1], gpuMilli: 500, cpuMilli: 100, memoryMiB: 10, priority: 0, queue: 'q' });
    state.setGpuHealth('n1', 3, false);
    const c = cloneState(state);
    expect([...(c.node('n0')?.gpuFree ?? [])]).toEqual([...(state.node('n0')?.gpuFree ?? [])]);
    expect(c.node('n1')?.gpuUsable[3]).toBe(0);
    c.release('x');
    expect(state.allocation('x')).toBeDefined();
  });
});

describe('estimateStarts with checkpoint-aware preemption (ADR 0093)', () => {
  it('a preemptor starts once its victim has committed the checkpoint asked of it; without a commit, at the grace', () => {
    const p = profile();
    if (!p.ok) throw new Error('profile');
    const urgent = { ...job('u', 8, H, 0), priority: 10 };
    const run = (checkpointMs?: (v: RunningJob) => number): number | undefined => {
      const { state, running } = fullCluster(100 * H, 100 * H);
      for (const [id, r] of running) running.set(id, { ...r, checkpointable: true });
      return estimateStarts({
        nowMs: 2 * H,
        state,
        profile: p.value,
        rng: seededRng(1),
        queues: new Map([['q', makeQueue('q')]]),
        pending: [urgent],
        running,
        options: { checkpointAware: true, minRuntimeMs: 0 },
        untilStarted: 'u',
        ...(checkpointMs === undefined ? {} : { checkpointMs }),
      }).get('u');
    };
    expect(run(() => 89_000)).toBe(2 * H + 89_000);
    expect(run()).toBe(2 * H + 300_000);
  });
});
