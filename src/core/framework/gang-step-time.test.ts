import { describe, expect, it } from 'vitest';
import { Scheduler } from './scheduler.ts';
import { PROFILES, buildProfile } from '../plugins/registry.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod, type GangSpec } from '../model/pod.ts';
import { seededRng } from '../ports.ts';

/**
 * Two A100 nodes in one rack: `a-pcie` (PCIe only, 3 GPUs busy: 5 free) and `b-nvswitch` (NVSwitch, 8 free).
 * Best fit (fewest free GPUs left) takes the PCIe node for a 4-GPU gang; by step time the NVSwitch one wins.
 */
function cluster(profileName: 'first-fit' | 'sits' | 'sits-step'): Scheduler {
  const pcie = NODE_SHAPES.l4x8 as NonNullable<(typeof NODE_SHAPES)['l4x8']>;
  const nv = NODE_SHAPES['hgx-a100'] as NonNullable<(typeof NODE_SHAPES)['hgx-a100']>;
  const a100 = nv.gpus;
  const node = (name: string, topology: NodeSpec['topology']): NodeSpec => ({
    name,
    cpuMilli: 256_000,
    memoryMiB: 1_048_576,
    maxPods: 110,
    gpus: a100,
    topology,
    location: { zone: 'z', block: 'b', rack: 'r' },
    labels: {},
    taints: [],
    unschedulable: false,
  });
  // first-fit: sits without a gang choice (its `gangChoice: first-fit` in --config), the best-fit order alone.
  const sits = PROFILES.sits;
  if (sits === undefined) throw new Error('sits');
  const { gangChoice: _choice, ...firstFit } = sits;
  const cfg = profileName === 'first-fit' ? firstFit : PROFILES[profileName];
  if (cfg === undefined) throw new Error(profileName);
  const p = buildProfile(cfg, { typicalShapes: [] });
  if (!p.ok) throw new Error('profile');
  const s = new Scheduler(p.value, new ClusterState([node('a-pcie', pcie.topology), node('b-nvswitch', nv.topology)]), seededRng(1));
  s.state.allocate({ podId: 'busy', node: 'a-pcie', gpus: [5, 6, 7], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
  return s;
}

const gang: GangSpec = {
  name: 'g',
  minMember: 4,
  members: [0, 1, 2, 3].map((k) => makePod(`g-${k}`, { gpuCount: 1 }, { gang: 'g' })),
  topology: {},
  priority: 0,
  queue: 'q',
};

describe('gangChoice: step-time (ADR 0105)', () => {
  it('best fit puts a 4-GPU gang on the fuller PCIe node; by step time (sits-step, and sits since ADR 0188) it goes to the NVSwitch node', () => {
    const first = cluster('first-fit').scheduleGang(gang);
    const fast = cluster('sits-step').scheduleGang(gang);
    const aware = cluster('sits').scheduleGang(gang);
    expect(first.ok && fast.ok && aware.ok).toBe(true);
    if (!first.ok || !fast.ok || !aware.ok) return;
    expect(new Set(first.placements.map((p) => p.node))).toEqual(new Set(['a-pcie']));
    expect(new Set(fast.placements.map((p) => p.node))).toEqual(new Set(['b-nvswitch']));
    expect(new Set(aware.placements.map((p) => p.node))).toEqual(new Set(['b-nvswitch']));
  });

  it('the chosen placement is committed once: the GPUs it holds are the only ones taken', () => {
    const s = cluster('sits-step');
    const r = s.scheduleGang(gang);
    expect(r.ok).toBe(true);
    expect(s.state.node('b-nvswitch')?.gpuFree.filter((f) => f === 0).length).toBe(4);
    expect(s.state.node('a-pcie')?.gpuFree.filter((f) => f === 0).length).toBe(3);
  });
});
