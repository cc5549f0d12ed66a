/**
 * kube-scheduler's NodeAffinity, score half: the preferred score is the sum of the weights of the matching terms
 * as a share of the sum of all weights (0–100): a per-pod scale, not kube's per-cycle max over nodes (no
 * normalisation across nodes, ADR 0002). The term matching (and the required half, in the fit filter) is
 * model/node-affinity.ts.
 */
import type { NodeAffinity, PodSpec } from '../../model/pod.ts';
import { affinityReadsNodeName, termMatches } from '../../model/node-affinity.ts';
import type { NodeState } from '../../snapshot/cluster-state.ts';
import type { Plugin } from '../../framework/types.ts';

function preferredTotal(a: NodeAffinity | undefined): number {
  let s = 0;
  for (const p of a?.preferred ?? []) if (p.weight > 0) s += p.weight;
  return s;
}

/** Σ weights of matching preferred terms × 100 / Σ all weights; 0 without preferred terms. */
export function preferredAffinityScore(pod: PodSpec, node: NodeState): number {
  const a = pod.nodeAffinity;
  const total = preferredTotal(a);
  if (total === 0) return 0;
  let s = 0;
  for (const p of (a as NodeAffinity).preferred ?? []) if (p.weight > 0 && termMatches(p.preference, node)) s += p.weight;
  return (s * 100) / total;
}

/** The score half (the filter half is in the fit filter, which keeps its reasons in one documented order). */
export const nodeAffinityPlugin = (): Plugin => ({
  name: 'node-affinity',
  preScore: (pod) => preferredTotal(pod.nodeAffinity) > 0,
  score: preferredAffinityScore,
  readsNodeName: affinityReadsNodeName,
});
