import { describe, expect, it } from 'vitest';
import { cloneState, estimateStarts } from './eta.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';
import { resolveProfile } from '../framework/registry.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import { makePod } from '../model/pod.ts';
import { makeQueue } from '../queue/model.ts';

const shape = NODE_SHAPES['dgx-h100'] as NonNullable<(typeof NODE_SHAPES)['dgx-h100']>;
const specs = [0, 1].map((i) => ({ name: `n${i}`, cpuMilli: shape.cpuMilli, memoryMiB: shape.memoryMiB, maxPods: 110, gpus: shape.gpus, topology: shape.topology, location: { zone: 'z', block: 'b', rack: 'r' }, labels: {}, taints: [], unschedulable: false }));
const profile = (): ReturnType<typeof resolveProfile> => resolveProfile('sits', { typicalShapes: [] });

function job(id: string, gpus: number, runtimeMs: number, arrivalMs: number): QueuedJob {
  const members = [makePod(`${id}-0`, { gpuCount: gpus }, { gang: id, queue: 'q' })];
  return { id, queue: 'q', priority: 0, arrivalMs, gang: { name: id, minMember: 1, members, topology: {}, priority: 0, queue: 'q' }, estRuntimeMs: runtimeMs };
}

describe('estimateStarts', () => {
  it('replays the queue forward: jobs start as running jobs end, in queue order', () => {
    const state = new ClusterState(specs);
    const H = 3_600_000;
    state.allocate({ podId: 'r1-0', node: 'n0', gpus: [0, 1, 2, 3, 4, 5, 6, 7], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    state.allocate({ podId: 'r2-0', node: 'n1', gpus: [0, 1, 2, 3, 4, 5, 6, 7], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    const running = new Map<string, RunningJob>([
      ['r1', { id: 'r1', queue: 'q', priority: 0, startMs: 0, estEndMs: 1 * H, podIds: ['r1-0'], resources: { gpuMilli: 8000, cpuMilli: 0, memoryMiB: 0 }, preemptible: true }],
      ['r2', { id: 'r2', queue: 'q', priority: 0, startMs: 0, estEndMs: 3 * H, podIds: ['r2-0'], resources: { gpuMilli: 8000, cpuMilli: 0, memoryMiB: 0 }, preemptible: true }],
    ]);
    const p = profile();
    if (!p.ok) throw new Error('profile');
    const eta = estimateStarts({ nowMs: 0, state, profile: p.value, queues: new Map([['q', makeQueue('q')]]), pending: [job('a', 8, 4 * H, 1), job('b', 8, H, 2), job('c', 4, H, 3)], running });
    expect(eta.get('a')).toBe(1 * H); // n0 frees at 1 h
    expect(eta.get('b')).toBe(3 * H); // n1 frees at 3 h
    expect(eta.get('c')).toBe(4 * H); // after b ends (a runs until 5 h)
    // The real state is untouched.
    expect(state.nodes.map((n) => n.fullyFreeGpus())).toEqual([0, 0]);
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
