/**
 * kube-scheduler's TaintToleration (`v1.Toleration.ToleratesTaint`): a toleration's effect, when given, must
 * equal the taint's; its key, when given, must equal the taint's; `Exists` then tolerates any value, `Equal`
 * (the default) needs equal values. An empty key is only valid with `Exists` (the apiserver rejects the rest),
 * and then tolerates every taint. `tolerationSeconds` only matters for eviction, never for scheduling.
 * NoSchedule and NoExecute taints filter (in the fit filter); PreferNoSchedule taints score.
 */
import type { PodSpec, Toleration } from '../../model/pod.ts';
import type { Taint } from '../../model/node.ts';
import type { ClusterState, NodeState } from '../../snapshot/cluster-state.ts';
import type { Plugin } from '../../framework/types.ts';

export function tolerates(tolerations: readonly Toleration[], taint: Taint): boolean {
  for (const t of tolerations) {
    if (t.effect !== undefined && t.effect !== taint.effect) continue;
    if (t.key === undefined || t.key === '') {
      if (t.operator === 'Exists') return true;
      continue;
    }
    if (t.key !== taint.key) continue;
    if (t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '')) return true;
  }
  return false;
}

/** The first NoSchedule/NoExecute taint the pod does not tolerate, in node order (kube names it in its reason). */
export function untoleratedTaint(tolerations: readonly Toleration[], taints: readonly Taint[]): Taint | undefined {
  for (const t of taints) if (t.effect !== 'PreferNoSchedule' && !tolerates(tolerations, t)) return t;
  return undefined;
}

/** The taint `kubectl cordon` stands for: NodeUnschedulable lets a pod that tolerates it onto a cordoned node. */
export const UNSCHEDULABLE_TAINT: Taint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };

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
