/**
 * PodDisruptionBudgets (`policy/v1`) as the core's DisruptionBudgets. The disruptions each allows are
 * computed here from the pods in the cache, as kube-controller-manager's disruption controller computes
 * `status.disruptionsAllowed` (ADR 0059: the status lags the evictions SITS just made and is absent where
 * no controller manager runs): healthy = Ready and not being deleted; expected = the pods it selects (for a
 * percentage or maxUnavailable, the ones not finished, standing in for their controllers' scale).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { disruptionsAllowed, type DisruptionBudget } from '../../core/actions/disruption.ts';
import { podKey } from './labels.ts';

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface PdbObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  spec?: { selector?: LabelSelector | null; minAvailable?: number | string; maxUnavailable?: number | string };
}

/** metav1.LabelSelector semantics: every matchLabels pair and every expression (In, NotIn, Exists, DoesNotExist); an unknown operator matches nothing. */
export function matchesSelector(sel: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    switch (e.operator) {
      case 'In':
        if (!has || !(e.values ?? []).includes(value as string)) return false;
        break;
      case 'NotIn':
        if (has && (e.values ?? []).includes(value as string)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

const ready = (p: V1Pod): boolean =>
  p.metadata?.deletionTimestamp === undefined && (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
const finished = (p: V1Pod): boolean => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';

/** The budgets over `pods`, in name order. A null selector selects nothing (policy/v1); an empty one, every pod of the namespace. */
export function budgetsOf(pdbs: Iterable<PdbObject>, pods: Iterable<V1Pod>): DisruptionBudget[] {
  const byNs = new Map<string, V1Pod[]>();
  for (const p of pods) {
    const ns = p.metadata?.namespace ?? 'default';
    const list = byNs.get(ns);
    if (list === undefined) byNs.set(ns, [p]);
    else list.push(p);
  }
  const out: DisruptionBudget[] = [];
  for (const b of pdbs) {
    const ns = b.metadata?.namespace ?? 'default';
    const sel = b.spec?.selector;
    const selected = sel === undefined || sel === null ? [] : (byNs.get(ns) ?? []).filter((p) => matchesSelector(sel, p.metadata?.labels ?? {}));
    const spec = b.spec ?? {};
    const field = (v: number | string | undefined): number | string | undefined => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v);
    const maxUnavailable = field(spec.maxUnavailable);
    const minAvailable = field(spec.minAvailable);
    // An integer minAvailable counts the pods selected; the other forms scale with the controllers' size.
    const scaled = maxUnavailable !== undefined || typeof minAvailable === 'string';
    const expected = scaled ? selected.filter((p) => !finished(p)).length : selected.length;
    const healthy = selected.filter(ready).length;
    out.push({
      name: `${ns}/${b.metadata?.name ?? ''}`,
      podIds: new Set(selected.map(podKey)),
      disruptionsAllowed: disruptionsAllowed(
        { ...(maxUnavailable === undefined ? {} : { maxUnavailable }), ...(minAvailable === undefined ? {} : { minAvailable }) },
        expected,
        healthy,
      ),
    });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
