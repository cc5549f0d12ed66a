/**
 * kube-scheduler's InterPodAffinity PreFilter state for one pod shape, kept across cycles (ADR 0054): counts
 * of matching pods per topology domain for the pod's required affinity terms, its required anti-affinity
 * terms, and existing pods' required anti-affinity terms that match it (the symmetric check). Built once by
 * one scan of the pods, then moved by each changed node's difference; the domains whose verdict may have
 * changed are reported so that the score index re-checks exactly their nodes. The filter per node is then a
 * few array reads: no scan of pods per node.
 */
import type { PodSpec } from '../../model/pod.ts';
import { PLAIN_META, type Allocation, type ClusterState } from '../../snapshot/cluster-state.ts';
import { Reason, type ReasonCode } from '../reasons.ts';
import { DomainCounter } from './domain-counter.ts';
import {
  podNamespace,
  requiredAffinityTerms,
  requiredAntiAffinityTerms,
  resolveTerm,
  termMatchesPod,
  type PodMeta,
  type ResolvedTerm,
} from '../../model/terms.ts';
import { spreadConstraints, type Spread } from './spread.ts';

/** kube's InterPodAffinityArgs. */
export interface InterPodArgs {
  /** Weight of an existing pod's required affinity term that matches the incoming pod, in the score (kube: 1; 0 = off). */
  readonly hardPodAffinityWeight: number;
}
export const DEFAULT_INTER_POD_ARGS: InterPodArgs = { hardPodAffinityWeight: 1 };

/** The nodes whose verdict may have changed since the last flush. */
class DirtyNodes {
  private readonly flag: Uint8Array;
  private list: number[] = [];
  /** Every node may have changed. */
  all = false;
  /** The first scan is running: nothing is marked (a new state's nodes are all checked anyway). */
  building = true;

  constructor(size: number) {
    this.flag = new Uint8Array(size);
  }

  mark(nodes: Int32Array): void {
    for (let k = 0; k < nodes.length; k++) {
      const j = nodes[k] as number;
      if (this.flag[j] === 0) {
        this.flag[j] = 1;
        this.list.push(j);
      }
    }
  }

  /** Calls fn for every marked node (all nodes: fn(-1)), then forgets the marks. */
  flush(fn: (i: number) => void): void {
    if (this.all) {
      fn(-1);
    } else {
      for (const j of this.list) fn(j);
    }
    for (const j of this.list) this.flag[j] = 0;
    this.list = [];
    this.all = false;
  }
}

/** Domain counters by topology key, made on first use; also as a list, for the per-node loops. */
class CountersByKey {
  private readonly byKey = new Map<string, DomainCounter>();
  list: DomainCounter[] = [];

  of(state: ClusterState, key: string): DomainCounter {
    let c = this.byKey.get(key);
    if (c === undefined) {
      c = new DomainCounter(state.topology(key));
      this.byKey.set(key, c);
      this.list = [...this.byKey.values()];
    }
    return c;
  }
}

/**
 * Existing pods' terms that match this pod and score it (kube's processExistingPod): Σ signed weights per
 * domain, one counter per topology key (kube's topologyScore[key][value]); required affinity terms count
 * the profile's hardPodAffinityWeight.
 */
class TowardScore {
  readonly counters = new CountersByKey();
  /** Matching terms of existing pods counted now, by |weight|: the largest is their part of the score's scale. */
  private readonly weights = new Map<number, number>();
  count = 0;
  scale = 0;

  /** A term of `weight` counted (sign 1) or no longer (−1); true when whether the score applies, or its scale, changed. */
  countTerm(weight: number, sign: number): boolean {
    const w = Math.abs(weight);
    const n = (this.weights.get(w) ?? 0) + sign;
    if (n === 0) this.weights.delete(w);
    else this.weights.set(w, n);
    const hadAny = this.count > 0;
    this.count += sign;
    const scale = this.weights.size === 0 ? 0 : Math.max(...this.weights.keys());
    if (scale === this.scale && hadAny === this.count > 0) return false;
    this.scale = scale;
    return true;
  }
}

/** PodTopologySpread: DoNotSchedule constraints (filter) and ScheduleAnyway ones (score). */
interface Spreads {
  readonly all: readonly Spread[];
  readonly hard: readonly Spread[];
  readonly soft: readonly Spread[];
  /** Σ over soft constraints of their weights: the score's scale. */
  readonly softWeight: number;
}

export class InterPodState {
  private readonly affinity: readonly ResolvedTerm[];
  private readonly affCounters: readonly DomainCounter[];
  private readonly anti: readonly ResolvedTerm[];
  private readonly antiCounters: readonly DomainCounter[];
  /** Existing pods' required anti-affinity terms matching this pod, by topology key. */
  private readonly existing = new CountersByKey();
  /** kube: a pod whose affinity terms all match itself may be the first of its group. */
  private readonly selfMatchesAll: boolean;
  private readonly meta: PodMeta;
  private readonly dirty: DirtyNodes;
  private readonly spread: Spreads;
  /** Preferred terms with signed weights (affinity +, anti-affinity −) and their counters; Σ |weights|. */
  private readonly preferred: readonly ResolvedTerm[];
  private readonly prefCounters: readonly DomainCounter[];
  private readonly prefWeight: number;
  /** False when no counter can match a pod without meta: such allocations are skipped at once. */
  private readonly plainMatters: boolean;
  private readonly toward = new TowardScore();
  private readonly hardPodAffinityWeight: number;

  constructor(
    private readonly state: ClusterState,
    pod: PodSpec,
    args: InterPodArgs = DEFAULT_INTER_POD_ARGS,
  ) {
    this.hardPodAffinityWeight = args.hardPodAffinityWeight;
    this.meta = { namespace: podNamespace(pod), ...(pod.labels === undefined ? {} : { labels: pod.labels }) };
    this.affinity = requiredAffinityTerms(pod);
    this.anti = requiredAntiAffinityTerms(pod);
    this.affCounters = this.affinity.map((t) => new DomainCounter(state.topology(t.topologyKey)));
    this.antiCounters = this.anti.map((t) => new DomainCounter(state.topology(t.topologyKey)));
    const nsl = state.namespaceLabels;
    this.selfMatchesAll = this.affinity.every((t) => termMatchesPod(t, this.meta, nsl));
    this.dirty = new DirtyNodes(state.size);
    const spread = spreadConstraints(state, pod);
    const soft = spread.filter((c) => !c.hard);
    this.spread = { all: spread, hard: spread.filter((c) => c.hard), soft, softWeight: soft.reduce((a, c) => a + c.weight, 0) };
    this.preferred = [
      ...(pod.podAffinity?.preferred ?? []).map((p) => resolveTerm(p.term, pod, p.weight)),
      ...(pod.podAntiAffinity?.preferred ?? []).map((p) => resolveTerm(p.term, pod, -p.weight)),
    ];
    this.prefCounters = this.preferred.map((t) => new DomainCounter(state.topology(t.topologyKey)));
    this.prefWeight = this.preferred.reduce((a, t) => a + Math.abs(t.weight), 0);
    // Whether a pod without labels in the default namespace can match anything (an empty selector, NotIn…).
    this.plainMatters =
      (this.affinity.length > 0 && this.affinity.every((t) => termMatchesPod(t, PLAIN_META, nsl))) ||
      this.anti.some((t) => termMatchesPod(t, PLAIN_META, nsl)) ||
      this.preferred.some((t) => termMatchesPod(t, PLAIN_META, nsl)) ||
      spread.some((c) => c.matchesMeta(PLAIN_META));
    // The one scan: nodes with pods when the pod has terms of its own, else only nodes with anti-affinity pods.
    const own = this.affinity.length > 0 || this.anti.length > 0 || spread.length > 0 || this.preferred.length > 0;
    for (const n of state.nodes) {
      if (own ? n.podCount === 0 : (state.antiPodsOn[n.idx] as number) === 0) continue;
      for (const a of n.allocations.values()) this.apply(a, 1, n.idx);
    }
    for (const c of this.spread.hard) c.min = c.globalMin();
    this.dirty.building = false;
  }

  /** Brings the counters up to the state's change log (from `since`); false when the log no longer reaches back. */
  replay(since: number): boolean {
    return this.state.forEachPodChange(since, this.onPod);
  }

  private readonly onPod = (a: Allocation, sign: number, i: number): void => this.apply(a, sign, i);

  /**
   * One pod added (sign 1) or removed (−1) on node i: the counters it matches move by sign. A pod without
   * meta (default namespace, no labels) matches what `plain` says, computed once.
   */
  private apply(a: Allocation, sign: number, i: number): void {
    const m = a.meta;
    if (m === undefined && !this.plainMatters) return;
    const meta = m ?? PLAIN_META;
    const nsl = this.state.namespaceLabels;
    const aff = this.affinity;
    if (aff.length > 0) {
      let all = true;
      for (const t of aff) if (!termMatchesPod(t, meta, nsl)) all = false;
      if (all) {
        for (const c of this.affCounters) {
          const before = c.total;
          const v = c.add(i, sign);
          // "First of its group" depends on whether any pod matches at all: every node may change.
          if (v >= 0 && !this.dirty.building && (before === 0) !== (c.total === 0)) this.dirty.all = true;
          this.crossed(c, v);
        }
      }
    }
    const anti = this.anti;
    for (let k = 0; k < anti.length; k++)
      if (termMatchesPod(anti[k] as ResolvedTerm, meta, nsl))
        this.crossed(this.antiCounters[k] as DomainCounter, (this.antiCounters[k] as DomainCounter).add(i, sign));
    const theirs = m?.antiRequired;
    if (theirs !== undefined) {
      for (const t of theirs) {
        if (!termMatchesPod(t, this.meta, nsl)) continue;
        const c = this.existing.of(this.state, t.topologyKey);
        this.crossed(c, c.add(i, sign));
      }
    }
    if (m !== undefined) {
      if (m.affinityRequired !== undefined && this.hardPodAffinityWeight > 0)
        for (const t of m.affinityRequired) this.towardTerm(t, this.hardPodAffinityWeight, sign, i);
      if (m.preferred !== undefined) for (const t of m.preferred) this.towardTerm(t, t.weight, sign, i);
    }
    const pref = this.preferred;
    for (let k = 0; k < pref.length; k++) {
      if (!termMatchesPod(pref[k] as ResolvedTerm, meta, nsl)) continue;
      const c = this.prefCounters[k] as DomainCounter;
      const v = c.add(i, sign);
      if (v >= 0 && !this.dirty.building && !this.dirty.all) this.dirty.mark(c.topo.nodesOf[v] as Int32Array);
    }
    // Any change of a spread count may change its domain's verdict or score; a moved minimum is found at flush.
    for (const c of this.spread.all) {
      if (!c.counts(i, meta)) continue;
      const v = c.counter.add(i, sign);
      if (v < 0) continue;
      c.moved(v, c.counter.before, c.counter.before + sign);
      if (!this.dirty.building && !this.dirty.all) this.dirty.mark(c.counter.topo.nodesOf[v] as Int32Array);
    }
  }

  /** An existing pod's scoring term: when it matches this pod, its domain's score moves by its weight. */
  private towardTerm(t: ResolvedTerm, weight: number, sign: number, i: number): void {
    if (weight === 0 || !termMatchesPod(t, this.meta, this.state.namespaceLabels)) return;
    const c = this.toward.counters.of(this.state, t.topologyKey);
    // Whether the score applies and its scale are functions of the terms counted now (as a rebuild would see them).
    if (this.toward.countTerm(weight, sign) && !this.dirty.building) this.dirty.all = true;
    const v = c.add(i, sign * weight);
    if (v >= 0 && !this.dirty.building && !this.dirty.all) this.dirty.mark(c.topo.nodesOf[v] as Int32Array);
  }

  /** A domain's count moved: its nodes' verdict changes only when it crossed zero. */
  private crossed(c: DomainCounter, v: number): void {
    if (v < 0 || this.dirty.all || this.dirty.building) return;
    if (c.before > 0 !== (c.perValue[v] as number) > 0) this.dirty.mark(c.topo.nodesOf[v] as Int32Array);
  }

  /** Calls fn for every node whose verdict may have changed since the last flush (all nodes: fn(-1)). */
  flush(fn: (i: number) => void): void {
    for (const c of this.spread.hard) {
      const m = c.globalMin();
      if (m !== c.min) {
        c.min = m;
        this.dirty.all = true;
      }
    }
    this.dirty.flush(fn);
  }

  /** PodTopologySpread's Filter, then InterPodAffinity's in kube's order: affinity, anti-affinity, existing pods' anti-affinity. */
  filter(i: number): ReasonCode {
    for (const c of this.spread.hard) {
      const v = c.counter.topo.ids[i] as number;
      if (v < 0) return Reason.TopologySpreadLabel;
      // existing matching + self − global minimum ≤ maxSkew (a domain no eligible node is in counts 0).
      const matched = c.domainEligible[v] === 1 ? (c.counter.perValue[v] as number) : 0;
      if (matched + c.self - c.min > c.maxSkew) return Reason.TopologySpread;
    }
    if (this.affCounters.length > 0) {
      let podsExist = true;
      for (const c of this.affCounters) {
        if ((c.topo.ids[i] as number) < 0) return Reason.PodAffinity;
        if (c.at(i) <= 0) podsExist = false;
      }
      if (!podsExist && !(this.noAffinityMatches() && this.selfMatchesAll)) return Reason.PodAffinity;
    }
    for (const c of this.antiCounters) if (c.at(i) > 0) return Reason.PodAntiAffinity;
    for (const c of this.existing.list) if (c.at(i) > 0) return Reason.ExistingAntiAffinity;
    return Reason.Fits;
  }

  /**
   * ScheduleAnyway constraints on an absolute scale (ADR 0054): 100 / (1 + raw / Σ weights) with kube's raw
   * score Σ count·weight + (maxSkew − 1), weight = log(domains + 2); a node without every key scores 0.
   */
  spreadScore(i: number): number {
    const soft = this.spread.soft;
    if (soft.length === 0) return 0;
    let raw = 0;
    for (const c of soft) {
      const v = c.counter.topo.ids[i] as number;
      if (v < 0) {
        if (c.keyOptional) continue;
        return 0;
      }
      raw += (c.counter.perValue[v] as number) * c.weight + (c.maxSkew - 1);
    }
    return 100 / (1 + raw / this.spread.softWeight);
  }

  /**
   * Preferred pod affinity and anti-affinity on an absolute scale (ADR 0054): kube's raw score Σ ± weight ×
   * matching pods in the node's domain, mapped to 50 + 50·raw / (|raw| + Σ |weights|): 50 with no match,
   * toward 100 with affinity, toward 0 with anti-affinity. Existing pods' terms that match this pod add their
   * signed weights in their domains (ADR 0077); the scale then also counts the largest such weight.
   */
  preferredScore(i: number): number {
    let raw = 0;
    this.prefCounters.forEach((c, k) => {
      raw += (this.preferred[k] as ResolvedTerm).weight * c.at(i);
    });
    for (const c of this.toward.counters.list) raw += c.at(i);
    return 50 + (50 * raw) / (Math.abs(raw) + this.prefWeight + this.toward.scale);
  }

  /** Whether the InterPodAffinity score applies: own preferred terms, or existing pods' terms that match this pod. */
  get hasPreferred(): boolean {
    return this.preferred.length > 0 || this.toward.count > 0;
  }

  get hasSoftSpread(): boolean {
    return this.spread.soft.length > 0;
  }

  private noAffinityMatches(): boolean {
    for (const c of this.affCounters) if (c.total !== 0) return false;
    return true;
  }
}
