/**
 * Matching pods per topology domain, kept incrementally (kube-scheduler's topologyToMatchedTermCount, but
 * kept across cycles): each node's last counted contribution is remembered, so a changed node moves its
 * domain's count by the difference, and callers learn which domains changed.
 */
import type { TopologyValues } from '../../snapshot/cluster-state.ts';

export class DomainCounter {
  /** Contribution last counted per node index. */
  readonly perNode: Int32Array;
  /** Count per value id of the topology key. */
  readonly perValue: Int32Array;
  /** Σ perValue: pods counted on nodes that have the key. */
  total = 0;
  /** The changed domain's count before the last `set` that changed one. */
  before = 0;

  constructor(readonly topo: TopologyValues) {
    this.perNode = new Int32Array(topo.ids.length);
    this.perValue = new Int32Array(topo.values.length);
  }

  /** Sets node i's contribution; returns the value id whose count changed (-1 when none did). */
  set(i: number, c: number): number {
    const v = this.topo.ids[i] as number;
    const old = this.perNode[i] as number;
    if (v < 0 || old === c) return -1;
    this.perNode[i] = c;
    this.before = this.perValue[v] as number;
    this.perValue[v] = (this.perValue[v] as number) + c - old;
    this.total += c - old;
    return v;
  }

  /** Count of the domain node i is in; 0 when the node lacks the key. */
  at(i: number): number {
    const v = this.topo.ids[i] as number;
    return v < 0 ? 0 : (this.perValue[v] as number);
  }
}
