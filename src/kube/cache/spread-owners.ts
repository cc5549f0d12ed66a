/**
 * What kube-scheduler's PodTopologySpread defaulting reads of the cluster (ADR 0077): Services (their
 * `spec.selector`) and the ReplicationControllers, ReplicaSets and StatefulSets that control pods, so that a
 * pod without constraints of its own gets the profile's default constraints with kube's `DefaultSelector`.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { LabelSelector } from '../../core/model/pod.ts';
import { defaultSelector, type SelectingService } from '../../core/plugins/inter-pod-affinity/default-spread.ts';

/** The fields read of a Service, ReplicationController, ReplicaSet or StatefulSet. */
export interface SelectorObject {
  metadata?: { name?: string; namespace?: string };
  spec?: { selector?: unknown };
}

export type ControllerKind = 'ReplicationController' | 'ReplicaSet' | 'StatefulSet';

export class SpreadOwners {
  /** Services per namespace, by name. */
  private readonly services = new Map<string, Map<string, SelectingService>>();
  /** Controllers' selectors by `kind/namespace/name`. */
  private readonly controllers = new Map<string, LabelSelector>();

  get empty(): boolean {
    return this.services.size === 0 && this.controllers.size === 0;
  }

  upsertService(s: SelectorObject): void {
    const ns = s.metadata?.namespace ?? 'default';
    const sel = s.spec?.selector;
    const m = this.services.get(ns) ?? new Map<string, SelectingService>();
    m.set(s.metadata?.name ?? '', { namespace: ns, ...(isStringMap(sel) ? { selector: sel } : {}) });
    this.services.set(ns, m);
  }
  deleteService(s: SelectorObject): void {
    const ns = s.metadata?.namespace ?? 'default';
    const m = this.services.get(ns);
    m?.delete(s.metadata?.name ?? '');
    if (m?.size === 0) this.services.delete(ns);
  }

  upsertController(kind: ControllerKind, o: SelectorObject): void {
    const sel = o.spec?.selector;
    // A ReplicationController's selector is a map; a ReplicaSet's and StatefulSet's a LabelSelector.
    const selector: LabelSelector | undefined =
      kind === 'ReplicationController' ? (isStringMap(sel) ? { matchLabels: sel } : undefined) : isLabelSelector(sel) ? sel : undefined;
    const key = `${kind}/${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`;
    if (selector === undefined) this.controllers.delete(key);
    else this.controllers.set(key, selector);
  }
  deleteController(kind: ControllerKind, o: SelectorObject): void {
    this.controllers.delete(`${kind}/${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`);
  }

  /** kube's DefaultSelector for the pod: its Services' selectors merged, plus its controller's; undefined when none. */
  selectorOf(p: V1Pod): LabelSelector | undefined {
    const ns = p.metadata?.namespace ?? 'default';
    const owner = p.metadata?.ownerReferences?.find((o) => o.controller === true);
    let controller: LabelSelector | undefined;
    if (owner !== undefined) {
      const group = owner.apiVersion.includes('/') ? owner.apiVersion.split('/')[0] : '';
      const kind =
        (group === '' && owner.kind === 'ReplicationController') || (group === 'apps' && (owner.kind === 'ReplicaSet' || owner.kind === 'StatefulSet'))
          ? (owner.kind as ControllerKind)
          : undefined;
      if (kind !== undefined) controller = this.controllers.get(`${kind}/${ns}/${owner.name}`);
    }
    const services = this.services.get(ns);
    if (services === undefined && controller === undefined) return undefined;
    return defaultSelector({ namespace: ns, ...(p.metadata?.labels === undefined ? {} : { labels: p.metadata.labels }) }, services?.values() ?? [], controller);
  }
}

function isStringMap(v: unknown): v is Record<string, string> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');
}

function isLabelSelector(v: unknown): v is LabelSelector {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const s = v as { matchLabels?: unknown; matchExpressions?: unknown };
  return (s.matchLabels === undefined || isStringMap(s.matchLabels)) && (s.matchExpressions === undefined || Array.isArray(s.matchExpressions));
}
