/**
 * kube-scheduler's PodTopologySpread constraints, compiled for one pod shape: which nodes count (every key
 * of the constraint set present, node inclusion policies), which domains exist, the pod's self-match, and
 * the counter of matching pods per domain (ADR 0054). Pods count only in the pod's own namespace, as kube
 * counts them.
 */
import type { PodSpec, TopologySpreadConstraint } from '../../model/pod.ts';
import type { ClusterState, NodeState } from '../../snapshot/cluster-state.ts';
import { DomainCounter } from './domain-counter.ts';
import { compileSelector, podNamespace, selectorMatches, type PodMeta, type Selector } from '../../model/terms.ts';
import { requiredAffinityMatches } from '../../model/node-affinity.ts';
import { tolerates } from '../../model/taints.ts';

export class Spread {
  /** Global minimum over eligible domains, as of the last flush (see InterPodState). */
  min = 0;
  readonly maxSkew: number;
  /** kube's topologyNormalizingWeight: log(domains + 2). */
  readonly weight: number;
  readonly self: 0 | 1;
  /** A System default constraint: a node without its key skips it when scored (kube's requireAllTopologies = false). */
  readonly keyOptional: boolean;
  private readonly minDomains: number;
  private readonly domains: number;

  constructor(
    readonly hard: boolean,
    c: TopologySpreadConstraint,
    private readonly selector: Selector,
    private readonly namespace: string,
    readonly counter: DomainCounter,
    private readonly eligibleNode: Uint8Array,
    readonly domainEligible: Uint8Array,
    selfLabels: PodSpec['labels'],
  ) {
    this.maxSkew = c.maxSkew;
    this.keyOptional = c.systemDefault === true;
    this.minDomains = c.minDomains ?? 1;
    let d = 0;
    for (let v = 0; v < domainEligible.length; v++) d += domainEligible[v] as number;
    this.domains = d;
    this.weight = Math.log(d + 2);
    this.self = selectorMatches(selector, selfLabels) ? 1 : 0;
  }

  /** Whether a pod on node i counts for this constraint. */
  counts(i: number, m: PodMeta): boolean {
    return this.eligibleNode[i] === 1 && this.matchesMeta(m);
  }

  matchesMeta(m: PodMeta): boolean {
    return m.namespace === this.namespace && selectorMatches(this.selector, m.labels);
  }

  /** Eligible domains per count, made at the first globalMin; with it the minimum is kept in O(1) per change. */
  private hist: Map<number, number> | undefined;
  private lo = 0;

  /** kube's minMatchNum: 0 while fewer domains than minDomains exist, else the least count of an eligible domain. */
  globalMin(): number {
    if (this.domains < this.minDomains) return 0;
    if (this.domains === 0) return Number.POSITIVE_INFINITY;
    if (this.hist === undefined) {
      const h = new Map<number, number>();
      let m = Number.POSITIVE_INFINITY;
      const per = this.counter.perValue;
      for (let v = 0; v < per.length; v++) {
        if (this.domainEligible[v] !== 1) continue;
        const c = per[v] as number;
        h.set(c, (h.get(c) ?? 0) + 1);
        if (c < m) m = c;
      }
      this.hist = h;
      this.lo = m;
    }
    return this.lo;
  }

  /** Domain v's count went from `before` to `after` (by one). */
  moved(v: number, before: number, after: number): void {
    const h = this.hist;
    if (h === undefined || this.domainEligible[v] !== 1) return;
    const left = (h.get(before) as number) - 1;
    if (left === 0) h.delete(before);
    else h.set(before, left);
    h.set(after, (h.get(after) ?? 0) + 1);
    if (after < this.lo) this.lo = after;
    else if (before === this.lo && left === 0) this.lo = after;
  }
}

/** Whether the node passes the constraint's inclusion policies (nodeAffinity Honor, nodeTaints Ignore by default). */
function included(pod: PodSpec, c: TopologySpreadConstraint, n: NodeState): boolean {
  if ((c.nodeAffinityPolicy ?? 'Honor') === 'Honor') {
    for (const k in pod.nodeSelector) if (n.spec.labels[k] !== pod.nodeSelector[k]) return false;
    if (pod.nodeAffinity !== undefined && !requiredAffinityMatches(pod.nodeAffinity, n)) return false;
  }
  if (c.nodeTaintsPolicy === 'Honor') {
    for (const t of n.spec.taints) if (t.effect !== 'PreferNoSchedule' && !tolerates(pod.tolerations, t)) return false;
  }
  return true;
}

export function spreadConstraints(state: ClusterState, pod: PodSpec): Spread[] {
  const all = pod.topologySpread ?? [];
  if (all.length === 0) return [];
  const out: Spread[] = [];
  const labels = pod.labels ?? {};
  for (const hard of [true, false]) {
    const set = all.filter((c) => (c.whenUnsatisfiable === 'DoNotSchedule') === hard);
    if (set.length === 0) continue;
    const topos = set.map((c) => state.topology(c.topologyKey));
    // kube counts only on nodes carrying every key of the set; for its System defaults, on nodes carrying the constraint's own key.
    const requireAll = !set.every((c) => c.systemDefault === true);
    const hasAll = new Uint8Array(state.size);
    for (let i = 0; i < state.size; i++) hasAll[i] = !requireAll || topos.every((t) => (t.ids[i] as number) >= 0) ? 1 : 0;
    set.forEach((c, k) => {
      const topo = topos[k] as (typeof topos)[number];
      const eligible = new Uint8Array(state.size);
      const domainEligible = new Uint8Array(topo.values.length);
      for (const n of state.nodes) {
        if (hasAll[n.idx] === 1 && (topo.ids[n.idx] as number) >= 0 && included(pod, c, n)) {
          eligible[n.idx] = 1;
          domainEligible[topo.ids[n.idx] as number] = 1;
        }
      }
      const extra = (c.matchLabelKeys ?? [])
        .filter((key) => Object.hasOwn(labels, key))
        .map((key) => ({ key, op: 'In' as const, values: new Set([labels[key] as string]) }));
      const selector = compileSelector(c.labelSelector, c.labelSelector === undefined ? [] : extra);
      out.push(new Spread(hard, c, selector, podNamespace(pod), new DomainCounter(topo), eligible, domainEligible, pod.labels));
    });
  }
  return out;
}
