/**
 * kube-scheduler's NodeAffinity: `nodeSelector` and the required terms both apply (the terms are ORed, the
 * expressions and fields of one term ANDed); preferred terms score. Operators as in
 * `k8s.io/apimachinery/pkg/labels` (`Requirement.Matches`): In, NotIn, Exists, DoesNotExist, Gt, Lt — NotIn and
 * DoesNotExist match a missing label, Gt/Lt parse both sides as 64-bit integers and fail when either is not
 * one. A requirement kube cannot turn into a selector (In without values, Exists with values, Gt with two
 * values) makes its term match nothing, as kube's lazy-error selector does. `matchFields` knows only
 * `metadata.name` (In/NotIn with exactly one value), like kube: a pod that uses it reads the node's name, so
 * its shape opts out of spec-class sharing (`readsNodeName`, ADR 0049).
 *
 * The matching lives in the model: the fit filter, topology spread and volume binding all read it; the
 * preferred-terms score is the node-affinity plugin (plugins/node-affinity/node-affinity.ts).
 */
import type { NodeSpec } from './node.ts';
import type { NodeAffinity, PodSpec } from './pod.ts';
import type { NodeSelectorRequirement, NodeSelectorTerm } from './selectors.ts';

/** What the matching reads of a node: its spec (labels and name); the snapshot's NodeState is one. */
interface NodeLike {
  readonly spec: NodeSpec;
}

const INT64 = /^[+-]?\d+$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** strconv.ParseInt(s, 10, 64), or undefined. */
function parseInt64(s: string): bigint | undefined {
  if (!INT64.test(s)) return undefined;
  const v = BigInt(s);
  return v < INT64_MIN || v > INT64_MAX ? undefined : v;
}

/** Whether one label requirement holds for the labels; undefined = the requirement is invalid (its term matches nothing). */
export function requirementMatches(r: NodeSelectorRequirement, labels: Readonly<Record<string, string>>): boolean | undefined {
  const values = r.values ?? [];
  const has = Object.hasOwn(labels, r.key);
  switch (r.operator) {
    case 'In':
      if (values.length === 0) return undefined;
      return has && values.includes(labels[r.key] as string);
    case 'NotIn':
      if (values.length === 0) return undefined;
      return !has || !values.includes(labels[r.key] as string);
    case 'Exists':
      if (values.length > 0) return undefined;
      return has;
    case 'DoesNotExist':
      if (values.length > 0) return undefined;
      return !has;
    case 'Gt':
    case 'Lt': {
      if (values.length !== 1 || parseInt64(values[0] as string) === undefined) return undefined;
      if (!has) return false;
      const lv = parseInt64(labels[r.key] as string);
      if (lv === undefined) return false;
      const rv = parseInt64(values[0] as string) as bigint;
      return r.operator === 'Gt' ? lv > rv : lv < rv;
    }
    default:
      return undefined;
  }
}

/** A field requirement against the node's fields (`metadata.name`; other keys read as empty, as kube's field set does). */
function fieldMatches(r: NodeSelectorRequirement, nodeName: string): boolean | undefined {
  const values = r.values ?? [];
  if (values.length !== 1 || (r.operator !== 'In' && r.operator !== 'NotIn')) return undefined;
  const field = r.key === 'metadata.name' ? nodeName : '';
  return r.operator === 'In' ? field === values[0] : field !== values[0];
}

export function termMatches(t: NodeSelectorTerm, node: NodeLike): boolean {
  const exprs = t.matchExpressions ?? [];
  const fields = t.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  const labels = node.spec.labels;
  for (const r of exprs) if (requirementMatches(r, labels) !== true) return false;
  for (const r of fields) if (fieldMatches(r, node.spec.name) !== true) return false;
  return true;
}

/** The required terms (any one matches); true when the pod has none. nodeSelector is checked by the caller. */
export function requiredAffinityMatches(a: NodeAffinity, node: NodeLike): boolean {
  const terms = a.required;
  if (terms === undefined) return true;
  for (const t of terms) if (termMatches(t, node)) return true;
  return false;
}

const usesFields = (t: NodeSelectorTerm): boolean => (t.matchFields?.length ?? 0) > 0;

/** Whether the pod's affinity reads the node's name (matchFields): its results differ between nodes of one spec class. */
export function affinityReadsNodeName(pod: PodSpec): boolean {
  const a = pod.nodeAffinity;
  if (a === undefined) return false;
  return (a.required ?? []).some(usesFields) || (a.preferred ?? []).some((p) => usesFields(p.preference));
}
