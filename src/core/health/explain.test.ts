import { describe, expect, it } from 'vitest';
import { Scheduler } from '../framework/scheduler.ts';
import { buildProfile } from '../plugins/registry.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod } from '../model/pod.ts';
import { seededRng } from '../ports.ts';
import { quarantineText } from './quarantine.ts';

function nodeSpec(name: string, sick: ReadonlyMap<number, string | undefined> = new Map()): NodeSpec {
  const s = NODE_SHAPES['l4x8'];
  if (s === undefined) throw new Error('no preset');
  const gpus = s.gpus.map((g) => {
    if (!sick.has(g.index)) return g;
    const why = sick.get(g.index);
    return why === undefined ? { ...g, healthy: false } : { ...g, healthy: false, unhealthyReason: why };
  });
  return {
    name,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack: 'r' },
    labels: {},
    taints: [],
    unschedulable: false,
  };
}

function scheduler(specs: readonly NodeSpec[]): Scheduler {
  const p = buildProfile(
    {
      name: 't',
      description: 't',
      queueSort: 'priority-fifo',
      filters: ['fit'],
      scorers: [],
      devicePicker: 'gpu-topology',
      selector: 'best',
      gangSearch: 'topology',
    },
    { typicalShapes: [] },
  );
  if (!p.ok) throw new Error('profile');
  return new Scheduler(p.value, new ClusterState(specs), seededRng(1));
}

const UNTIL = Date.UTC(2026, 11, 1, 17, 15);
const why = quarantineText({ reason: 'XID 79 (GPU has fallen off the bus)', untilMs: UNTIL });

describe('quarantined GPUs in placement and sits explain', () => {
  it('no placement lands on a quarantined GPU', () => {
    const s = scheduler([nodeSpec('a', new Map([[3, why]]))]);
    const used: number[] = [];
    for (let i = 0; i < 7; i++) {
      const o = s.schedulePod(makePod(`p${i}`, { gpuCount: 1 }));
      expect(o.ok).toBe(true);
      if (o.ok) used.push(...o.placement.gpus);
    }
    expect(used).not.toContain(3);
    expect(s.schedulePod(makePod('p7', { gpuCount: 1 })).ok).toBe(false);
  });

  it('a pod that needs every GPU is told which GPU is quarantined, why and until when', () => {
    const s = scheduler([nodeSpec('a', new Map([[3, why]])), nodeSpec('b', new Map([[5, undefined]]))]);
    const o = s.schedulePod(makePod('all8', { gpuCount: 8 }));
    expect(o.ok).toBe(false);
    if (o.ok) return;
    expect(o.explanation.message).toBe(
      '0/2 nodes fit pod all8: 1 GPUs unhealthy, 1 GPUs unhealthy (GPU 3 quarantined until 2026-12-01T17:15:00.000Z: XID 79 (GPU has fallen off the bus))',
    );
  });

  it('setGpuHealth carries a reason; marking the GPU healthy again clears it', () => {
    const s = scheduler([nodeSpec('a')]);
    s.state.setGpuHealth('a', 2, false, why);
    const o = s.schedulePod(makePod('all8', { gpuCount: 8 }));
    expect(!o.ok && o.explanation.message).toBe(`0/1 nodes fit pod all8: 1 GPUs unhealthy (GPU 2 ${why})`);
    s.state.setGpuHealth('a', 2, true);
    expect(s.state.nodes[0]?.healthReasons?.size).toBe(0);
    expect(s.schedulePod(makePod('all8', { gpuCount: 8 })).ok).toBe(true);
  });
});
