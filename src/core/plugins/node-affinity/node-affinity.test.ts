import { describe, expect, it } from 'vitest';
import { preferredAffinityScore } from './node-affinity.ts';
import { affinityReadsNodeName, requiredAffinityMatches, requirementMatches, termMatches } from '../../model/node-affinity.ts';
import { ClusterState, type NodeState } from '../../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../../model/presets.ts';
import type { NodeSpec } from '../../model/node.ts';
import { makePod, type NodeSelectorRequirement } from '../../model/pod.ts';

function node(name: string, labels: Record<string, string>): NodeState {
  const s = NODE_SHAPES['l4x8'];
  if (s === undefined) throw new Error('no preset');
  const spec: NodeSpec = {
    name,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack: 'r' },
    labels,
    taints: [],
    unschedulable: false,
  };
  return new ClusterState([spec]).nodes[0] as NodeState;
}

const req = (key: string, operator: NodeSelectorRequirement['operator'], values?: string[]): NodeSelectorRequirement => ({
  key,
  operator,
  ...(values === undefined ? {} : { values }),
});
const labels = { zone: 'a', gen: '9', big: '9223372036854775807', text: 'x9' };

describe('requirementMatches (kube labels.Requirement.Matches)', () => {
  it('In / NotIn: NotIn matches a missing label', () => {
    expect(requirementMatches(req('zone', 'In', ['a', 'b']), labels)).toBe(true);
    expect(requirementMatches(req('zone', 'In', ['b']), labels)).toBe(false);
    expect(requirementMatches(req('missing', 'In', ['a']), labels)).toBe(false);
    expect(requirementMatches(req('zone', 'NotIn', ['b']), labels)).toBe(true);
    expect(requirementMatches(req('zone', 'NotIn', ['a']), labels)).toBe(false);
    expect(requirementMatches(req('missing', 'NotIn', ['a']), labels)).toBe(true);
  });

  it('Exists / DoesNotExist: DoesNotExist matches a missing label', () => {
    expect(requirementMatches(req('zone', 'Exists'), labels)).toBe(true);
    expect(requirementMatches(req('missing', 'Exists'), labels)).toBe(false);
    expect(requirementMatches(req('zone', 'DoesNotExist'), labels)).toBe(false);
    expect(requirementMatches(req('missing', 'DoesNotExist'), labels)).toBe(true);
  });

  it('Gt / Lt parse both sides as 64-bit integers; a label that is not one never matches', () => {
    expect(requirementMatches(req('gen', 'Gt', ['8']), labels)).toBe(true);
    expect(requirementMatches(req('gen', 'Gt', ['9']), labels)).toBe(false);
    expect(requirementMatches(req('gen', 'Lt', ['10']), labels)).toBe(true); // numerically, not as text ("9" > "10")
    expect(requirementMatches(req('gen', 'Lt', ['-1']), labels)).toBe(false);
    expect(requirementMatches(req('gen', 'Gt', ['+8']), labels)).toBe(true);
    expect(requirementMatches(req('big', 'Gt', ['9223372036854775806']), labels)).toBe(true); // beyond 2^53, exact
    expect(requirementMatches(req('text', 'Gt', ['1']), labels)).toBe(false);
    expect(requirementMatches(req('missing', 'Lt', ['1']), labels)).toBe(false);
    expect(requirementMatches(req('zone', 'Lt', ['1']), { zone: '9223372036854775808' })).toBe(false); // overflows int64
  });

  it('requirements kube cannot build a selector from are invalid (their term matches nothing)', () => {
    expect(requirementMatches(req('zone', 'In', []), labels)).toBeUndefined();
    expect(requirementMatches(req('zone', 'NotIn'), labels)).toBeUndefined();
    expect(requirementMatches(req('zone', 'Exists', ['a']), labels)).toBeUndefined();
    expect(requirementMatches(req('missing', 'DoesNotExist', ['a']), labels)).toBeUndefined();
    expect(requirementMatches(req('gen', 'Gt', ['1', '2']), labels)).toBeUndefined();
    expect(requirementMatches(req('gen', 'Gt', ['one']), labels)).toBeUndefined();
  });
});

describe('terms', () => {
  const n = node('gpu-7', labels);
  it('ANDs the expressions of a term; an empty term matches nothing; an invalid requirement fails its term', () => {
    expect(termMatches({ matchExpressions: [req('zone', 'In', ['a']), req('gen', 'Gt', ['3'])] }, n)).toBe(true);
    expect(termMatches({ matchExpressions: [req('zone', 'In', ['a']), req('gen', 'Gt', ['30'])] }, n)).toBe(false);
    expect(termMatches({}, n)).toBe(false);
    expect(termMatches({ matchExpressions: [] }, n)).toBe(false);
    expect(termMatches({ matchExpressions: [req('zone', 'In', [])] }, n)).toBe(false);
  });

  it('matchFields knows metadata.name (In / NotIn with one value)', () => {
    expect(termMatches({ matchFields: [req('metadata.name', 'In', ['gpu-7'])] }, n)).toBe(true);
    expect(termMatches({ matchFields: [req('metadata.name', 'In', ['gpu-8'])] }, n)).toBe(false);
    expect(termMatches({ matchFields: [req('metadata.name', 'NotIn', ['gpu-8'])] }, n)).toBe(true);
    expect(termMatches({ matchFields: [req('metadata.name', 'In', ['gpu-7', 'gpu-8'])] }, n)).toBe(false);
    expect(termMatches({ matchFields: [req('metadata.name', 'Exists')] }, n)).toBe(false);
    expect(termMatches({ matchFields: [req('metadata.name', 'In', ['gpu-7'])], matchExpressions: [req('zone', 'In', ['b'])] }, n)).toBe(false);
  });

  it('ORs the required terms', () => {
    expect(requiredAffinityMatches({ required: [{ matchExpressions: [req('zone', 'In', ['b'])] }, { matchExpressions: [req('zone', 'In', ['a'])] }] }, n)).toBe(
      true,
    );
    expect(requiredAffinityMatches({ required: [{ matchExpressions: [req('zone', 'In', ['b'])] }] }, n)).toBe(false);
    expect(requiredAffinityMatches({ required: [] }, n)).toBe(false);
    expect(requiredAffinityMatches({ preferred: [] }, n)).toBe(true);
  });

  it('a pod reads the node name only when a term uses matchFields', () => {
    expect(affinityReadsNodeName(makePod('p', {}))).toBe(false);
    expect(affinityReadsNodeName(makePod('p', {}, { nodeAffinity: { required: [{ matchExpressions: [req('zone', 'Exists')] }] } }))).toBe(false);
    expect(
      affinityReadsNodeName(
        makePod('p', {}, { nodeAffinity: { preferred: [{ weight: 1, preference: { matchFields: [req('metadata.name', 'In', ['x'])] } }] } }),
      ),
    ).toBe(true);
  });
});

describe('preferredAffinityScore', () => {
  const pod = makePod(
    'p',
    {},
    {
      nodeAffinity: {
        preferred: [
          { weight: 60, preference: { matchExpressions: [req('zone', 'In', ['a'])] } },
          { weight: 20, preference: { matchExpressions: [req('gen', 'Gt', ['5'])] } },
          { weight: 20, preference: { matchExpressions: [req('ssd', 'Exists')] } },
        ],
      },
    },
  );
  it('is the matched share of the total weight, 0–100, on a per-pod scale', () => {
    expect(preferredAffinityScore(pod, node('n', labels))).toBe(80);
    expect(preferredAffinityScore(pod, node('n', { ...labels, ssd: '' }))).toBe(100);
    expect(preferredAffinityScore(pod, node('n', { gen: '1' }))).toBe(0);
    expect(preferredAffinityScore(makePod('q', {}), node('n', labels))).toBe(0);
  });
});
