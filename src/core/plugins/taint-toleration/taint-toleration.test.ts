import { describe, expect, it } from 'vitest';
import { intolerablePreferNoSchedule, taintTolerationPlugin, taintTolerationScore } from './taint-toleration.ts';
import { tolerates, untoleratedTaint } from '../../model/taints.ts';
import { ClusterState, type NodeState } from '../../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../../model/presets.ts';
import type { NodeSpec, Taint } from '../../model/node.ts';
import { makePod } from '../../model/pod.ts';

function spec(name: string, taints: Taint[]): NodeSpec {
  const s = NODE_SHAPES['l4x8'];
  if (s === undefined) throw new Error('no preset');
  return {
    name,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack: 'r' },
    labels: {},
    taints,
    unschedulable: false,
  };
}

const hard: Taint = { key: 'dedicated', value: 'infer', effect: 'NoSchedule' };
const exec: Taint = { key: 'maintenance', effect: 'NoExecute' };
const soft: Taint = { key: 'spot', value: 'true', effect: 'PreferNoSchedule' };
const soft2: Taint = { key: 'old', effect: 'PreferNoSchedule' };

describe('tolerates (v1.Toleration.ToleratesTaint)', () => {
  it('an empty key (absent or "") with Exists tolerates every taint of every effect', () => {
    for (const t of [hard, exec, soft]) {
      expect(tolerates([{ operator: 'Exists' }], t)).toBe(true);
      expect(tolerates([{ key: '', operator: 'Exists' }], t)).toBe(true);
    }
    expect(tolerates([{ operator: 'Exists', effect: 'NoExecute' }], hard)).toBe(false);
  });

  it('an empty effect matches every effect; tolerationSeconds plays no part', () => {
    expect(tolerates([{ key: 'maintenance', operator: 'Exists' }], exec)).toBe(true);
    expect(tolerates([{ key: 'maintenance', operator: 'Exists', effect: 'NoExecute' }], exec)).toBe(true);
    expect(tolerates([{ key: 'maintenance', operator: 'Exists', effect: 'NoSchedule' }], exec)).toBe(false);
  });

  it('Equal compares values (an absent value is the empty one)', () => {
    expect(tolerates([{ key: 'dedicated', operator: 'Equal', value: 'infer' }], hard)).toBe(true);
    expect(tolerates([{ key: 'dedicated', operator: 'Equal', value: 'train' }], hard)).toBe(false);
    expect(tolerates([{ key: 'maintenance', operator: 'Equal' }], exec)).toBe(true);
  });
});

describe('filter and score halves', () => {
  it('names the first NoSchedule/NoExecute taint not tolerated; PreferNoSchedule never filters', () => {
    expect(untoleratedTaint([], [soft, hard, exec])).toBe(hard);
    expect(untoleratedTaint([{ key: 'dedicated', operator: 'Exists' }], [soft, hard, exec])).toBe(exec);
    expect(untoleratedTaint([], [soft])).toBeUndefined();
  });

  it('scores 100 without intolerable PreferNoSchedule taints, 100 / (1 + n) with n', () => {
    const st = new ClusterState([spec('a', []), spec('b', [soft]), spec('c', [soft, soft2, hard])]);
    const [a, b, c] = st.nodes as NodeState[];
    const pod = makePod('p', {});
    expect([a, b, c].map((n) => taintTolerationScore(pod, n as NodeState))).toEqual([100, 50, 100 / 3]);
    // A toleration without effect, or with PreferNoSchedule, covers the soft taint; one for NoSchedule does not.
    expect(intolerablePreferNoSchedule(makePod('p', {}, { tolerations: [{ key: 'spot', operator: 'Exists' }] }), c as NodeState)).toBe(1);
    expect(
      intolerablePreferNoSchedule(makePod('p', {}, { tolerations: [{ key: 'spot', operator: 'Exists', effect: 'PreferNoSchedule' }] }), c as NodeState),
    ).toBe(1);
    expect(intolerablePreferNoSchedule(makePod('p', {}, { tolerations: [{ key: 'spot', operator: 'Exists', effect: 'NoSchedule' }] }), c as NodeState)).toBe(2);
  });

  it('skips scoring in a cluster without PreferNoSchedule taints', () => {
    const plugin = taintTolerationPlugin();
    expect(plugin.preScore?.(makePod('p', {}), new ClusterState([spec('a', [hard])]))).toBe(false);
    expect(plugin.preScore?.(makePod('p', {}), new ClusterState([spec('a', [soft])]))).toBe(true);
  });
});
