/**
 * Matching pods per topology domain, kept incrementally (kube-scheduler's topologyToMatchedTermCount, but
 * kept across cycles): each pod added or removed moves its node's domain by one, and callers learn which
 * domain changed.
 */
import type { TopologyValues } from '../../snapshot/cluster-state.ts';

export class DomainCounter {
  /** Count per value id of the topology key. */
  readonly perValue: Int32Array;
  /** Σ perValue: pods counted on nodes that have the key. */
  total = 0;
  /** The changed domain's count before the last `add`. */
  before = 0;

  constructor(readonly topo: TopologyValues) {
    this.perValue = new Int32Array(topo.values.length);
  }

  /** Adds d pods on node i; returns the value id whose count changed (-1 when the node lacks the key). */
  add(i: number, d: number): number {
    const v = this.topo.ids[i] as number;
    if (v < 0) return -1;
    this.before = this.perValue[v] as number;
    this.perValue[v] = this.before + d;
    this.total += d;
    return v;
  }

  /** Count of the domain node i is in; 0 when the node lacks the key. */
  at(i: number): number {
    const v = this.topo.ids[i] as number;
    return v < 0 ? 0 : (this.perValue[v] as number);
  }
}
