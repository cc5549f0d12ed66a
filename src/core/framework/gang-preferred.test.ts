import { describe, expect, it } from 'vitest';
import { Scheduler } from './scheduler.ts';
import { buildProfile } from '../plugins/registry.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod, type GangSpec, type TopologyConstraint } from '../model/pod.ts';
import { seededRng } from '../ports.ts';

const shape = NODE_SHAPES.a800x4 as NonNullable<(typeof NODE_SHAPES)['a800x4']>;

/**
 * 30 racks whose 8 nodes each have exactly one free GPU (8 free per rack, but no node with 4), then rack 30
 * with one fully free node and rack 31 with two. A 2×4-GPU gang fits in one rack only in rack 31, the 31st
 * candidate in best-fit order — past the per-level trial cap.
 */
function fragmentedCluster(): Scheduler {
  const specs: NodeSpec[] = [];
  for (let r = 0; r < 32; r++) {
    for (let i = 0; i < 8; i++) {
      specs.push({
        name: `r${String(r).padStart(2, '0')}-n${i}`,
        cpuMilli: shape.cpuMilli,
        memoryMiB: shape.memoryMiB,
        maxPods: 110,
        gpus: shape.gpus,
        topology: shape.topology,
        location: { zone: 'z', block: 'b', rack: `rack-${String(r).padStart(2, '0')}` },
        labels: {},
        taints: [],
        unschedulable: false,
      });
    }
  }
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
  const s = new Scheduler(p.value, new ClusterState(specs), seededRng(1));
  for (const n of s.state.nodes) {
    const r = Number(n.spec.location.rack.slice(5));
    const i = Number(n.name.slice(-1));
    const free = r < 30 ? 1 : r === 30 ? (i === 0 ? 4 : 0) : i < 2 ? 4 : 0;
    const busy = [0, 1, 2, 3].slice(0, 4 - free);
    if (busy.length > 0)
      s.state.allocate({ podId: `busy-${n.name}`, node: n.name, gpus: busy, gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
  }
  return s;
}

const gang = (topology: TopologyConstraint): GangSpec => ({
  name: 'g',
  minMember: 2,
  members: [0, 1].map((k) => makePod(`g-${k}`, { gpuCount: 4 }, { gang: 'g' })),
  topology,
  priority: 0,
  queue: 'default',
});

describe('gang topology search honours the preferred level', () => {
  it('with preferred rack every rack is tried: both members land in rack 31', () => {
    const r = fragmentedCluster().scheduleGang(gang({ preferred: 'rack' }));
    if (!r.ok) throw new Error(r.explanation.message);
    expect(r.level).toBe('rack');
    expect(r.placements.map((p) => p.node)).toEqual(['r31-n0', 'r31-n1']);
  });

  it('without a preference the rack search is capped and the gang may span racks', () => {
    const r = fragmentedCluster().scheduleGang(gang({}));
    if (!r.ok) throw new Error(r.explanation.message);
    expect(r.level).not.toBe('rack');
  });
});
