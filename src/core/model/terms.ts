/**
 * Label selectors and pod affinity terms as kube-scheduler compiles them (framework.AffinityTerm): a term is
 * resolved once against the pod that carries it (its namespace and labels: `namespaces` defaulting,
 * `matchLabelKeys`/`mismatchLabelKeys` merged into the selector as kube-apiserver merges them), then matched
 * against other pods. Pure functions; see ADR 0054.
 */
import type { LabelSelector, PodAffinityTerm, PodSpec } from './pod.ts';

/** One requirement with its values as a set. */
interface Requirement {
  readonly key: string;
  readonly op: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values: ReadonlySet<string>;
}

/** A compiled selector; `nothing` = kube's labels.Nothing() (a nil selector). */
export interface Selector {
  readonly nothing: boolean;
  readonly reqs: readonly Requirement[];
}

export const NOTHING: Selector = { nothing: true, reqs: [] };

/** LabelSelectorAsSelector: undefined → nothing; {} → everything. Extra requirements are appended (matchLabelKeys). */
export function compileSelector(s: LabelSelector | undefined, extra: readonly Requirement[] = []): Selector {
  if (s === undefined) return NOTHING;
  const reqs: Requirement[] = [];
  for (const k of Object.keys(s.matchLabels ?? {}).sort())
    reqs.push({ key: k, op: 'In', values: new Set([(s.matchLabels as Record<string, string>)[k] as string]) });
  for (const r of s.matchExpressions ?? []) reqs.push({ key: r.key, op: r.operator, values: new Set(r.values ?? []) });
  return { nothing: false, reqs: [...reqs, ...extra] };
}

/** labels.Requirement.Matches for each requirement (NotIn and DoesNotExist match a missing label). */
export function selectorMatches(s: Selector, labels: Readonly<Record<string, string>> | undefined): boolean {
  if (s.nothing) return false;
  for (const r of s.reqs) {
    const v = labels === undefined || !Object.hasOwn(labels, r.key) ? undefined : labels[r.key];
    switch (r.op) {
      case 'In':
        if (v === undefined || !r.values.has(v)) return false;
        break;
      case 'NotIn':
        if (v !== undefined && r.values.has(v)) return false;
        break;
      case 'Exists':
        if (v === undefined) return false;
        break;
      case 'DoesNotExist':
        if (v !== undefined) return false;
        break;
    }
  }
  return true;
}

/** What a term needs of a pod to match it: namespace and labels (and the namespace's labels). */
export interface PodMeta {
  readonly namespace: string;
  readonly labels?: Readonly<Record<string, string>>;
}

/** A term resolved against its own pod. */
export interface ResolvedTerm {
  readonly topologyKey: string;
  readonly selector: Selector;
  /** Namespaces named (or the pod's own when neither field is given). */
  readonly namespaces: ReadonlySet<string>;
  /** undefined = no namespaceSelector (kube: Nothing); an empty selector matches every namespace. */
  readonly namespaceSelector: Selector | undefined;
  readonly weight: number;
}

export const podNamespace = (p: PodSpec): string => p.namespace ?? 'default';

/** Kube's default labels of a namespace: every namespace carries kubernetes.io/metadata.name. */
export type NamespaceLabels = (namespace: string) => Readonly<Record<string, string>>;
export const defaultNamespaceLabels: NamespaceLabels = (ns) => ({ 'kubernetes.io/metadata.name': ns });

export function resolveTerm(t: PodAffinityTerm, owner: PodSpec, weight = 0): ResolvedTerm {
  const labels = owner.labels ?? {};
  const extra: Requirement[] = [];
  // kube-apiserver merges these into the selector at creation, only for labels the pod has (and only with a selector).
  if (t.labelSelector !== undefined) {
    for (const k of t.matchLabelKeys ?? []) if (Object.hasOwn(labels, k)) extra.push({ key: k, op: 'In', values: new Set([labels[k] as string]) });
    for (const k of t.mismatchLabelKeys ?? []) if (Object.hasOwn(labels, k)) extra.push({ key: k, op: 'NotIn', values: new Set([labels[k] as string]) });
  }
  const names = t.namespaces ?? [];
  return {
    topologyKey: t.topologyKey,
    selector: compileSelector(t.labelSelector, extra),
    namespaces: new Set(names.length === 0 && t.namespaceSelector === undefined ? [podNamespace(owner)] : names),
    namespaceSelector: t.namespaceSelector === undefined ? undefined : compileSelector(t.namespaceSelector),
    weight,
  };
}

/** AffinityTerm.Matches: the pod's namespace is named or selected, and its labels match. */
export function termMatchesPod(t: ResolvedTerm, pod: PodMeta, nsLabels: NamespaceLabels): boolean {
  if (!t.namespaces.has(pod.namespace) && !(t.namespaceSelector !== undefined && selectorMatches(t.namespaceSelector, nsLabels(pod.namespace)))) return false;
  return selectorMatches(t.selector, pod.labels);
}

/** Required pod affinity terms of a pod, resolved; [] when none. */
export const requiredAffinityTerms = (p: PodSpec): ResolvedTerm[] => (p.podAffinity?.required ?? []).map((t) => resolveTerm(t, p));
export const requiredAntiAffinityTerms = (p: PodSpec): ResolvedTerm[] => (p.podAntiAffinity?.required ?? []).map((t) => resolveTerm(t, p));

/** Whether a pod carries anything InterPodAffinity or PodTopologySpread read of it as the incoming pod. */
export function hasInterPodFields(p: PodSpec): boolean {
  return p.podAffinity !== undefined || p.podAntiAffinity !== undefined || p.topologySpread !== undefined;
}
