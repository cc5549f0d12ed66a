/**
 * kube-scheduler's TaintToleration, score half: PreferNoSchedule taints the pod does not tolerate. Toleration
 * matching (and the NoSchedule/NoExecute filter, in the fit filter) is model/taints.ts.
 */
import type { PodSpec } from '../../model/pod.ts';
import { tolerates } from '../../model/taints.ts';
import type { ClusterState, NodeState } from '../../snapshot/cluster-state.ts';
import type { Plugin } from '../../framework/types.ts';

/** PreferNoSchedule taints of the node that the pod's tolerations (without effect or with PreferNoSchedule) do not cover. */
export function intolerablePreferNoSchedule(pod: PodSpec, node: NodeState): number {
  let n = 0;
  for (const t of node.spec.taints) if (t.effect === 'PreferNoSchedule' && !tolerates(pod.tolerations, t)) n++;
  return n;
}

/**
 * 100 on a node without intolerable PreferNoSchedule taints, 100 / (1 + n) with n of them: fewer is better, as in
 * kube, on an absolute scale (kube reverses and rescales the counts over the cycle's nodes; ADR 0002 forbids that).
 */
export function taintTolerationScore(pod: PodSpec, node: NodeState): number {
  return 100 / (1 + intolerablePreferNoSchedule(pod, node));
}

export const taintTolerationPlugin = (): Plugin => ({
  name: 'taint-toleration',
  // Without a PreferNoSchedule taint in the cluster every node scores the same: skipped, so it costs nothing.
  preScore: (_pod, state: ClusterState) => state.hasPreferNoScheduleTaints(),
  score: taintTolerationScore,
});
