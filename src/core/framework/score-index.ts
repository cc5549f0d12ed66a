/**
 * Per pod-shape index of filter results and scores over all nodes, kept incrementally: a placement changes
 * one node, so only that node is re-evaluated (lazily, when the shape is next scheduled) instead of
 * rescanning the cluster. Every node is still filtered and scored — results are just reused while the
 * node's state is unchanged. A segment tree over node index answers "best node in [start, end)" in
 * O(log N), which makes topology domains (contiguous ranges) cheap to search.
 */
import type { PodSpec } from '../model/pod.ts';
import type { ClusterState, NodeState } from '../snapshot/cluster-state.ts';
import { Reason, type ReasonCode } from './reasons.ts';
import type { Profile } from './types.ts';

export class ScoreIndex {
  private readonly n: number;
  private readonly size: number;
  /** Winner node index per tree slot, -1 = none feasible. */
  private readonly tree: Int32Array;
  /** Feasible node count per tree slot. */
  private readonly count: Int32Array;
  readonly score: Float64Array;
  readonly reason: Uint8Array;
  private readonly version: Int32Array;
  private readonly rank: Int32Array;
  private seenSeq = -1;
  lastUsed = 0;

  constructor(
    private readonly state: ClusterState,
    private readonly profile: Profile,
    /** Representative pod of the shape: every pod with the same shape key evaluates the same. */
    readonly pod: PodSpec,
  ) {
    this.n = state.size;
    let size = 1;
    while (size < this.n) size <<= 1;
    this.size = size;
    this.tree = new Int32Array(2 * size).fill(-1);
    this.count = new Int32Array(2 * size);
    this.score = new Float64Array(this.n);
    this.reason = new Uint8Array(this.n);
    this.version = new Int32Array(this.n).fill(-1);
    this.rank = new Int32Array(this.n);
    for (const node of state.nodes) this.rank[node.idx] = node.rank;
  }

  /** Brings every entry up to date with the cluster state. */
  refresh(): void {
    const st = this.state;
    if (this.seenSeq >= 0 && st.forEachChange(this.seenSeq, (i) => this.update(i))) {
      this.seenSeq = st.seq;
      return;
    }
    for (let i = 0; i < this.n; i++) this.evaluate(i);
    for (let p = this.size - 1; p >= 1; p--) this.pull(p);
    this.seenSeq = st.seq;
  }

  /** Filters and scores node i into the leaf (no tree update). */
  private evaluate(i: number): void {
    const node = this.state.nodes[i] as NodeState;
    this.version[i] = node.version;
    const leaf = this.size + i;
    const r = evaluateFilters(this.profile, this.pod, node);
    this.reason[i] = r;
    if (r !== Reason.Fits) {
      this.tree[leaf] = -1;
      this.count[leaf] = 0;
      return;
    }
    let total = 0;
    for (const s of this.profile.scorers) total += s.weight * (s.plugin.score as (p: PodSpec, n: NodeState) => number)(this.pod, node);
    this.score[i] = total;
    this.tree[leaf] = i;
    this.count[leaf] = 1;
  }

  private update(i: number): void {
    const node = this.state.nodes[i] as NodeState;
    if (this.version[i] === node.version) return;
    this.evaluate(i);
    for (let p = (this.size + i) >> 1; p >= 1; p >>= 1) this.pull(p);
  }

  private pull(p: number): void {
    const l = 2 * p;
    this.tree[p] = this.better(this.tree[l] as number, this.tree[l + 1] as number);
    this.count[p] = (this.count[l] as number) + (this.count[l + 1] as number);
  }

  private better(a: number, b: number): number {
    if (a < 0) return b;
    if (b < 0) return a;
    const sa = this.score[a] as number;
    const sb = this.score[b] as number;
    if (sa !== sb) return sa > sb ? a : b;
    return (this.rank[a] as number) <= (this.rank[b] as number) ? a : b;
  }

  /** Best feasible node index in [start, end), -1 if none. Call refresh() first. */
  best(start = 0, end = this.n): number {
    let res = -1;
    let l = start + this.size;
    let r = end + this.size;
    while (l < r) {
      if (l & 1) res = this.better(res, this.tree[l++] as number);
      if (r & 1) res = this.better(res, this.tree[--r] as number);
      l >>= 1;
      r >>= 1;
    }
    return res;
  }

  /** Number of feasible nodes in [start, end). */
  feasibleCount(start = 0, end = this.n): number {
    let c = 0;
    let l = start + this.size;
    let r = end + this.size;
    while (l < r) {
      if (l & 1) c += this.count[l++] as number;
      if (r & 1) c += this.count[--r] as number;
      l >>= 1;
      r >>= 1;
    }
    return c;
  }

  /** The k-th (0-based) feasible node at or after `start` in index order, -1 if none. */
  kthFeasibleFrom(start: number, k: number): number {
    const target = this.feasibleCount(0, start) + k;
    if (target >= (this.count[1] as number)) return -1;
    let p = 1;
    let rem = target;
    while (p < this.size) {
      const left = this.count[2 * p] as number;
      if (rem < left) p = 2 * p;
      else {
        rem -= left;
        p = 2 * p + 1;
      }
    }
    return p - this.size;
  }

  /** Counts of filter reasons over [start, end); index = ReasonCode. */
  reasonCounts(start = 0, end = this.n): Int32Array {
    const c = new Int32Array(32);
    for (let i = start; i < end; i++) c[this.reason[i] as number] = (c[this.reason[i] as number] as number) + 1;
    return c;
  }
}

export function evaluateFilters(profile: Profile, pod: PodSpec, node: NodeState): ReasonCode {
  for (const f of profile.filters) {
    const r = (f.filter as (p: PodSpec, n: NodeState) => ReasonCode)(pod, node);
    if (r !== Reason.Fits) return r;
  }
  return Reason.Fits;
}

const shapeKeys = new WeakMap<PodSpec, string>();

/** Everything filters and node scores may read of a pod; pods with equal keys are interchangeable. */
export function shapeKey(pod: PodSpec): string {
  let k = shapeKeys.get(pod);
  if (k === undefined) {
    const r = pod.request;
    k = `${r.cpuMilli}|${r.memoryMiB}|${r.gpuCount}|${r.gpuMilli}|${r.gpuMemoryMiB ?? 0}|${pod.gpuModels.join(',')}|${pod.minComputeCapability}`;
    if (pod.tolerations.length > 0) k += `|t${JSON.stringify(pod.tolerations)}`;
    const sel = Object.keys(pod.nodeSelector);
    if (sel.length > 0) k += `|s${JSON.stringify(sel.sort().map((x) => [x, pod.nodeSelector[x]]))}`;
    shapeKeys.set(pod, k);
  }
  return k;
}
