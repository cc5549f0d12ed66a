/**
 * kube-scheduler's TaintToleration (`v1.Toleration.ToleratesTaint`): a toleration's effect, when given, must
 * equal the taint's; its key, when given, must equal the taint's; `Exists` then tolerates any value, `Equal`
 * (the default) needs equal values. An empty key is only valid with `Exists` (the apiserver rejects the rest),
 * and then tolerates every taint. `tolerationSeconds` only matters for eviction, never for scheduling.
 * NoSchedule and NoExecute taints filter (in the fit filter); PreferNoSchedule taints score (the
 * taint-toleration plugin, plugins/taint-toleration/taint-toleration.ts).
 */
import type { Toleration } from './pod.ts';
import type { Taint } from './node.ts';

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
