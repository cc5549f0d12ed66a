import { describe, expect, it } from 'vitest';
import type { NodeSpec } from '../model/node.ts';
import { makePod, type PodSpec } from '../model/pod.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { placeExisting, type ExistingSource } from './place-existing.ts';

const L4 = NODE_SHAPES.l4x8;
if (L4 === undefined) throw new Error('no preset l4x8');
const node = (name: string, o: Partial<NodeSpec> = {}): NodeSpec => ({
  name,
  cpuMilli: L4.cpuMilli,
  memoryMiB: L4.memoryMiB,
  maxPods: L4.maxPods,
  gpus: L4.gpus,
  topology: L4.topology,
  location: { zone: 'z', block: 'b', rack: 'r' },
  labels: {},
  taints: [],
  unschedulable: false,
  ...o,
});

/** A state with GPUs 0 and 1 of n0 taken by a whole-GPU pod, and half of GPU 2. */
function busy(): ClusterState {
  const s = new ClusterState([node('n0')]);
  s.allocate({ podId: 'old', node: 'n0', gpus: [0, 1], gpuMilli: 1000, cpuMilli: 1000, memoryMiB: 1024, priority: 0, queue: 'q' });
  s.allocate({ podId: 'half', node: 'n0', gpus: [2], gpuMilli: 500, cpuMilli: 1000, memoryMiB: 1024, priority: 0, queue: 'q' });
  return s;
}

const place = (s: ClusterState, pod: PodSpec, source: ExistingSource, hint?: readonly number[], on = 'n0'): unknown => {
  const r = placeExisting(s, pod, on, source, hint);
  return r.ok ? { gpus: r.value.allocation.gpus, gpuMilli: r.value.allocation.gpuMilli, withoutDevices: r.value.withoutDevices } : r.error;
};

describe('placeExisting', () => {
  const two = makePod('p', { gpuCount: 2 });
  const frac = makePod('f', { gpuCount: 1, gpuMilli: 500 });
  const cpuOnly = makePod('c', { cpuMilli: 4000 });

  it('does not touch the state: the caller allocates', () => {
    const s = busy();
    const r = placeExisting(s, two, 'n0', 'declared');
    expect(r.ok).toBe(true);
    expect(s.allocation('p')).toBeUndefined();
    if (r.ok) s.allocate(r.value.allocation);
    expect(s.allocation('p')?.gpus).toEqual([3, 4]);
  });

  it('every source takes the hinted GPUs when they are free, else (declared, observed) the lowest free ones', () => {
    for (const source of ['declared', 'observed', 'planned'] as const)
      expect(place(busy(), two, source, [6, 7]), source).toEqual({ gpus: [6, 7], gpuMilli: 1000, withoutDevices: false });
    expect(place(busy(), two, 'declared')).toEqual({ gpus: [3, 4], gpuMilli: 1000, withoutDevices: false });
    expect(place(busy(), two, 'observed')).toEqual({ gpus: [3, 4], gpuMilli: 1000, withoutDevices: false });
    // A fractional pod may share the half-used GPU 2.
    expect(place(busy(), frac, 'observed', [2])).toEqual({ gpus: [2], gpuMilli: 500, withoutDevices: false });
    expect(place(busy(), frac, 'declared')).toEqual({ gpus: [2], gpuMilli: 500, withoutDevices: false });
    expect(place(busy(), cpuOnly, 'declared')).toEqual({ gpus: [], gpuMilli: 0, withoutDevices: false });
  });

  it('declared: a wrong input is an error naming the pod, the node and what is wrong', () => {
    expect(place(busy(), two, 'declared', [0, 5])).toBe('pod p: GPU 0 of n0 does not have 1000 milli free');
    expect(place(busy(), two, 'declared', [5])).toBe('pod p: 1 GPU indices given for 2 GPUs');
    expect(place(busy(), two, 'declared', [5, 8])).toBe('pod p: GPU 8 of n0 does not have 1000 milli free');
    expect(place(busy(), two, 'declared', [-1, 5])).toBe('pod p: GPU -1 of n0 does not have 1000 milli free');
    expect(place(busy(), two, 'declared', undefined, 'nx')).toBe('pod p: unknown node nx');
    expect(place(busy(), makePod('big', { gpuCount: 6 }), 'declared')).toMatch(/^pod big does not fit on n0: /);
    const cordoned = new ClusterState([node('n0', { unschedulable: true })]);
    expect(place(cordoned, cpuOnly, 'declared')).toBe('pod c does not fit on n0: node cordoned (unschedulable)');
  });

  it('observed: a pod the cluster runs is counted; a stale hint falls back to the lowest free GPUs, none left means no devices', () => {
    expect(place(busy(), two, 'observed', [0, 5])).toEqual({ gpus: [3, 4], gpuMilli: 1000, withoutDevices: false });
    expect(place(busy(), two, 'observed', [5])).toEqual({ gpus: [3, 4], gpuMilli: 1000, withoutDevices: false });
    const six = makePod('six', { gpuCount: 6, cpuMilli: 2000 });
    const r = placeExisting(busy(), six, 'n0', 'observed');
    expect(r.ok && r.value).toMatchObject({ withoutDevices: true, allocation: { gpus: [], gpuMilli: 0, cpuMilli: 2000 } });
    // Counted even where the fit filter would refuse it (a cordoned node).
    const cordoned = new ClusterState([node('n0', { unschedulable: true })]);
    expect(place(cordoned, cpuOnly, 'observed')).toEqual({ gpus: [], gpuMilli: 0, withoutDevices: false });
    expect(place(busy(), two, 'observed', undefined, 'nx')).toBe('pod p: unknown node nx');
  });

  it('planned: the planned GPUs and the CPU must still be free; no fallback', () => {
    expect(place(busy(), two, 'planned', [1, 5])).toBe('pod p: its planned GPUs 1,5 or 1000m CPU on n0 are no longer free');
    const hungry = makePod('h', { cpuMilli: L4.cpuMilli, gpuCount: 2 });
    expect(place(busy(), hungry, 'planned', [5, 6])).toMatch(/^pod h: its planned GPUs 5,6 or \d+m CPU on n0 are no longer free$/);
    expect(place(busy(), cpuOnly, 'planned')).toEqual({ gpus: [], gpuMilli: 0, withoutDevices: false });
  });

  it('never hands out an unhealthy GPU (ClusterState.allocate would refuse it)', () => {
    const s = busy();
    s.setGpuHealth('n0', 5, false);
    expect(place(s, two, 'declared', [5, 6])).toBe('pod p: GPU 5 of n0 does not have 1000 milli free');
    expect(place(s, two, 'observed', [5, 6])).toEqual({ gpus: [3, 4], gpuMilli: 1000, withoutDevices: false });
    expect(typeof place(s, two, 'planned', [5, 6])).toBe('string');
  });

  it('keeps the pod’s gang, priority and queue in the allocation', () => {
    const p = makePod('g-0', { gpuCount: 1 }, { gang: 'ml/g', priority: 7, queue: 'team' });
    const r = placeExisting(busy(), p, 'n0', 'observed', [3]);
    expect(r.ok && r.value.allocation).toEqual({
      podId: 'g-0',
      node: 'n0',
      gpus: [3],
      gpuMilli: 1000,
      cpuMilli: 1000,
      memoryMiB: 1024,
      priority: 7,
      queue: 'team',
      gang: 'ml/g',
    });
  });
});
