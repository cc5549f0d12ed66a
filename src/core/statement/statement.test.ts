import { describe, expect, it } from 'vitest';
import { Statement } from './statement.ts';
import { ClusterState, type Allocation } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import type { NodeSpec } from '../model/node.ts';
import { seededRng } from '../ports.ts';

function nodeSpec(name: string, shapeId: string): NodeSpec {
  const s = NODE_SHAPES[shapeId];
  if (s === undefined) throw new Error(`no preset ${shapeId}`);
  return {
    name,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack: 'r' },
    labels: {},
    taints: [],
    unschedulable: false,
  };
}

function alloc(podId: string, node: string, gpus: readonly number[], gpuMilli = 1000, cpuMilli = 1000, memoryMiB = 1024): Allocation {
  return { podId, node, gpus, gpuMilli: gpus.length === 0 ? 0 : gpuMilli, cpuMilli, memoryMiB, priority: 0, queue: 'default' };
}

/** The whole observable state: per node resources and allocations, plus the range sums. */
function snapshot(st: ClusterState): unknown {
  return {
    nodes: st.nodes.map((n) => ({
      name: n.name,
      cpu: n.cpuUsedMilli,
      mem: n.memUsedMiB,
      pods: n.podCount,
      free: [...n.gpuFree],
      allocations: [...n.allocations.values()].sort((a, b) => (a.podId < b.podId ? -1 : 1)),
      tags: [...n.gpuPodTags].sort(),
    })),
    pods: ['base-1', 'base-2', 'x', 'y', 'z'].map((id) => st.nodeOfPod(id)?.name ?? null),
    full: st.fullyFreeGpusIn(0, st.size),
    milli: st.gpuFreeMilliIn(0, st.size),
  };
}

function cluster(): ClusterState {
  const st = new ClusterState([nodeSpec('a', 'dgx-h100'), nodeSpec('b', 'l4x8')]);
  st.allocate(alloc('base-1', 'a', [0, 1], 1000, 8000, 65_536));
  st.allocate(alloc('base-2', 'b', [3], 500, 2000, 4096));
  return st;
}

describe('Statement', () => {
  it('rollback to a checkpoint restores the exact prior state, undoing allocations and releases newest first', () => {
    const st = cluster();
    const stmt = new Statement(st);
    stmt.allocate(alloc('x', 'a', [2], 1000, 1000, 1000));
    const afterX = snapshot(st);
    const cp = stmt.checkpoint();
    expect(cp).toBe(1);
    stmt.allocate(alloc('y', 'b', [3], 500, 500, 500)); // fills GPU 3 of b next to base-2
    expect(stmt.release('base-1')?.gpus).toEqual([0, 1]);
    stmt.allocate(alloc('z', 'a', [0, 1, 3], 1000)); // reuses the GPUs base-1 gave back
    expect(stmt.size).toBe(4);
    stmt.rollback(cp);
    expect(stmt.size).toBe(1);
    expect(snapshot(st)).toEqual(afterX);
    expect(st.allocation('base-1')?.gpus).toEqual([0, 1]);
    stmt.rollback();
    expect(snapshot(st)).toEqual(snapshot(cluster()));
  });

  it('releasing an unknown pod records nothing', () => {
    const st = cluster();
    const stmt = new Statement(st);
    expect(stmt.release('nobody')).toBeUndefined();
    expect(stmt.size).toBe(0);
  });

  it('commit keeps the state, returns the steps in order and closes the statement', () => {
    const st = cluster();
    const stmt = new Statement(st);
    stmt.allocate(alloc('x', 'b', [0]));
    stmt.release('base-2');
    const after = snapshot(st);
    const ops = stmt.commit();
    expect(ops.map((o) => [o.kind, o.allocation.podId])).toEqual([
      ['allocate', 'x'],
      ['release', 'base-2'],
    ]);
    expect(snapshot(st)).toEqual(after);
    expect(stmt.size).toBe(0);
    expect(() => stmt.allocate(alloc('y', 'a', [4]))).toThrow(/already committed/);
    expect(() => stmt.release('x')).toThrow(/already committed/);
    expect(() => stmt.rollback()).toThrow(/already committed/);
    expect(() => stmt.commit()).toThrow(/already committed/);
    expect(() => stmt.discard()).toThrow(/already committed/);
    expect(snapshot(st)).toEqual(after);
  });

  it('discard undoes everything and closes the statement', () => {
    const st = cluster();
    const before = snapshot(st);
    const stmt = new Statement(st);
    stmt.allocate(alloc('x', 'a', [5]));
    stmt.release('base-2');
    stmt.discard();
    expect(snapshot(st)).toEqual(before);
    expect(() => stmt.allocate(alloc('y', 'a', [4]))).toThrow(/discarded/);
  });

  it('an allocation the state refuses is not recorded, so rollback still restores the checkpoint', () => {
    const st = cluster();
    const before = snapshot(st);
    const stmt = new Statement(st);
    stmt.allocate(alloc('x', 'b', [3], 500));
    expect(() => stmt.allocate(alloc('y', 'b', [3], 100))).toThrow(/over-committed/);
    expect(stmt.size).toBe(1);
    stmt.rollback(0);
    expect(snapshot(st)).toEqual(before);
  });

  it('nested checkpoints over random steps each restore their own state', () => {
    const rng = seededRng(42);
    const st = cluster();
    const stmt = new Statement(st);
    const marks: { cp: number; snap: unknown }[] = [];
    let next = 0;
    for (let round = 0; round < 30; round++) {
      marks.push({ cp: stmt.checkpoint(), snap: snapshot(st) });
      const node = st.nodes[rng.int(st.size)]!;
      const g = rng.int(node.gpuFree.length);
      if (node.gpuFree[g] === 1000) stmt.allocate(alloc(`r${next++}`, node.name, [g], 1000, 10, 10));
      else if (node.allocations.size > 0) stmt.release([...node.allocations.keys()][rng.int(node.allocations.size)]!);
    }
    for (const m of marks.reverse()) {
      stmt.rollback(m.cp);
      expect(snapshot(st)).toEqual(m.snap);
    }
  });
});
