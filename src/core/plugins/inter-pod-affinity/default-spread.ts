/**
 * kube-scheduler's PodTopologySpread defaulting (ADR 0077): a pod without topologySpreadConstraints gets the
 * profile's default constraints, with the selector of the Services, ReplicaSets, StatefulSets and
 * ReplicationControllers that own or select it (the host computes it: kube's `DefaultSelector`). No such
 * selector — nothing owns the pod — means no constraints, as in kube.
 */
import type { LabelSelector, PodSpec } from '../../model/pod.ts';
import { SYSTEM_DEFAULT_SPREAD, type SpreadDefaults } from '../../framework/types.ts';

export function withDefaultSpread(pod: PodSpec, defaults: SpreadDefaults | undefined, selector: LabelSelector | undefined): PodSpec {
  if ((pod.topologySpread?.length ?? 0) > 0 || selector === undefined) return pod;
  if (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0) return pod;
  const d = defaults ?? SYSTEM_DEFAULT_SPREAD;
  if (d.constraints.length === 0) return pod;
  const system = d.defaultingType === 'System';
  return {
    ...pod,
    topologySpread: d.constraints.map((c) => ({
      maxSkew: c.maxSkew,
      topologyKey: c.topologyKey,
      whenUnsatisfiable: c.whenUnsatisfiable,
      labelSelector: selector,
      ...(system ? { systemDefault: true as const } : {}),
    })),
  };
}

/** A Service as kube's `GetPodServices` reads it: its namespace and `spec.selector` (nil or empty: selects nothing). */
export interface SelectingService {
  readonly namespace: string;
  readonly selector?: Readonly<Record<string, string>>;
}

/**
 * kube's `DefaultSelector`: the merged selectors of the Services in the pod's namespace that select it, plus
 * its controller's selector (a ReplicationController's map, a ReplicaSet's or StatefulSet's LabelSelector);
 * undefined when nothing selects or owns it.
 */
export function defaultSelector(
  pod: { readonly namespace: string; readonly labels?: Readonly<Record<string, string>> },
  services: Iterable<SelectingService>,
  controller?: LabelSelector,
): LabelSelector | undefined {
  const labels = pod.labels ?? {};
  let matchLabels: Record<string, string> = {};
  for (const s of services) {
    const sel = s.selector;
    if (s.namespace !== pod.namespace || sel === undefined || Object.keys(sel).length === 0) continue;
    if (Object.entries(sel).every(([k, v]) => labels[k] === v)) matchLabels = { ...matchLabels, ...sel };
  }
  if (controller !== undefined) matchLabels = { ...matchLabels, ...controller.matchLabels };
  const matchExpressions = controller?.matchExpressions ?? [];
  if (Object.keys(matchLabels).length === 0 && matchExpressions.length === 0) return undefined;
  return { matchLabels, ...(matchExpressions.length === 0 ? {} : { matchExpressions }) };
}
