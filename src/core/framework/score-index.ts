/**
 * Per pod-shape index of filter results and scores over all nodes, kept incrementally: a placement changes
 * one node, so only that node is re-evaluated (lazily, when the shape is next scheduled) instead of
 * rescanning the cluster. Every node is still filtered and scored — results are just reused while the
 * node's state is unchanged, and a first build shares one evaluation among untouched nodes of one spec class
 * (equal state, and plugins may not read name or location). A segment tree over node index answers "best
 * node in [start, end)" in O(log N), which makes topology domains (contiguous ranges) cheap to search.
 */
import type { PodSpec } from '../model/pod.ts';
import type { ClusterState, NodeState } from '../snapshot/cluster-state.ts';
import { Reason, REASON_SLOTS, type ReasonCode } from './reasons.ts';
import type { Profile, WeightedScorer } from './types.ts';
import { DEFAULT_INTER_POD_ARGS, InterPodState } from './inter-pod/inter-pod-state.ts';
import { hasInterPodFields } from '../model/terms.ts';

/** Work counters a host may read around a call (benchmarks: where an attempt's time went). */
export interface IndexCounters {
  /** Nodes filtered (and scored when feasible). */
  evaluations: number;
  /** Full builds (first use of a shape, or a change log that no longer reaches back). */
  builds: number;
}

/**
 * The per-node part of a shape whose results depend on other pods' domains (ADR 0054): filters and scores are
 * kept per node version in `reason`/`score`, and the inter-pod verdict is laid over them; nodes whose domain
 * counts changed get only the overlay re-done.
 */
class InterPodPart {
  /** Made at each full build. */
  inter: InterPodState | undefined;
  readonly reason: Uint8Array;
  readonly score: Float64Array;

  constructor(
    n: number,
    /** Profile weights of the overlay's scores (0 = the profile does not score them). */
    readonly spreadWeight: number,
    readonly affinityWeight: number,
  ) {
    this.reason = new Uint8Array(n);
    this.score = new Float64Array(n);
  }
}

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
  /** The profile's scorers that score this shape (PreScore: the others give every node the same). */
  private readonly scorers: readonly WeightedScorer[];
  /** False when a plugin reads the node's name for this shape: no result is shared within a spec class. */
  private readonly shareClasses: boolean;
  /** Set for shapes whose results depend on other pods' domains (ADR 0054). */
  private readonly interPod: InterPodPart | undefined;

  constructor(
    private readonly state: ClusterState,
    private readonly profile: Profile,
    /** Representative pod of the shape: every pod with the same shape key evaluates the same. */
    readonly pod: PodSpec,
    private readonly counters: IndexCounters = { evaluations: 0, builds: 0 },
    /** Whether bound pods' anti-affinity applies to this shape (the symmetric check); default: whenever any such pod is bound. */
    symmetric: boolean = state.antiPodCount > 0,
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
    this.rank = state.ranks();
    // Inter-pod scorers are not per node: the overlay adds them (below).
    this.scorers = profile.scorers.every((s) => s.plugin.preScore === undefined && s.plugin.score !== undefined)
      ? profile.scorers
      : profile.scorers.filter((s) => s.plugin.score !== undefined && (s.plugin.preScore?.(pod, state) ?? true));
    this.shareClasses = !profile.filters.some((f) => f.readsNodeName?.(pod) === true) && !this.scorers.some((s) => s.plugin.readsNodeName?.(pod) === true);
    // Pods without inter-pod fields need the state only for the symmetric check, when some pod has required anti-affinity.
    this.interPod =
      hasInterPodFields(pod) || symmetric
        ? new InterPodPart(
            this.n,
            profile.scorers.find((s) => s.plugin.interPodScore === 'spread')?.weight ?? 0,
            profile.scorers.find((s) => s.plugin.interPodScore === 'affinity')?.weight ?? 0,
          )
        : undefined;
  }

  /** Brings every entry up to date with the cluster state. */
  refresh(): void {
    const st = this.state;
    const inter = this.interPod?.inter;
    // Inter-pod counters first: every node re-evaluated below then reads the current counts.
    if (this.seenSeq >= 0 && (inter === undefined || inter.replay(this.seenSeq)) && st.forEachChange(this.seenSeq, this.onChange)) {
      this.seenSeq = st.seq;
      if (inter !== undefined) inter.flush(this.onDomainChange);
      return;
    }
    this.build();
    this.seenSeq = st.seq;
  }

  private readonly onChange = (i: number): void => this.update(i);

  /** A node's domain counts changed (-1: possibly every node's): its overlay is re-done on the kept per-node result. */
  private readonly onDomainChange = (i: number): void => {
    if (i < 0) {
      for (let j = 0; j < this.n; j++) this.overlay(j);
      for (let p = this.size - 1; p >= 1; p--) this.pull(p);
      return;
    }
    const leaf = this.size + i;
    const wasFeasible = (this.tree[leaf] as number) >= 0;
    const oldScore = this.score[i] as number;
    this.overlay(i);
    if ((this.tree[leaf] as number) >= 0 ? wasFeasible && this.score[i] === oldScore : !wasFeasible) return;
    for (let p = leaf >> 1; p >= 1; p >>= 1) this.pull(p);
  };

  /** Node i's final result: its kept per-node result with the inter-pod verdict over it. */
  private overlay(i: number): void {
    const leaf = this.size + i;
    const part = this.interPod as InterPodPart;
    const inter = part.inter as InterPodState;
    let r = part.reason[i] as number;
    if (r === Reason.Fits) r = inter.filter(i);
    this.reason[i] = r;
    if (r !== Reason.Fits) {
      this.tree[leaf] = -1;
      this.count[leaf] = 0;
      return;
    }
    let total = part.score[i] as number;
    if (part.spreadWeight !== 0 && inter.hasSoftSpread) total += part.spreadWeight * inter.spreadScore(i);
    if (part.affinityWeight !== 0 && inter.hasPreferred) total += part.affinityWeight * inter.preferredScore(i);
    this.score[i] = total;
    this.tree[leaf] = i;
    this.count[leaf] = 1;
  }

  /**
   * Evaluates every node. Nodes never mutated (version 0) are in their initial state, which their spec
   * determines; nodes of one spec class (equal but for name and location, which plugins may not read) then
   * evaluate the same, so the first such node is filtered and scored and the others take its result.
   */
  private build(): void {
    this.counters.builds++;
    if (this.interPod !== undefined) {
      this.interPod.inter = new InterPodState(this.state, this.pod, {
        hardPodAffinityWeight: this.profile.hardPodAffinityWeight ?? DEFAULT_INTER_POD_ARGS.hardPodAffinityWeight,
      });
      this.buildLocal(this.interPod);
      for (let p = this.size - 1; p >= 1; p--) this.pull(p);
      return;
    }
    const classes = this.state.specClasses();
    const of = classes.of;
    const first = new Int32Array(classes.count).fill(-1);
    const nodes = this.state.nodes;
    const { tree, count, reason, score, version } = this;
    const size = this.size;
    for (let i = 0; i < this.n; i++) {
      if (this.shareClasses && (nodes[i] as NodeState).version === 0) {
        const c = of[i] as number;
        const j = first[c] as number;
        if (j >= 0) {
          // Node i takes node j's result: same class, both unchanged since creation.
          version[i] = 0;
          const r = reason[j] as number;
          reason[i] = r;
          if (r === Reason.Fits) {
            score[i] = score[j] as number;
            tree[size + i] = i;
            count[size + i] = 1;
          } else {
            tree[size + i] = -1;
            count[size + i] = 0;
          }
          continue;
        }
        first[c] = i;
      }
      this.evaluate(i);
    }
    // pull() is hot in update(), hence compiled early: calling it beats inlining it in a loop that runs once per shape.
    for (let p = size - 1; p >= 1; p--) this.pull(p);
  }

  /** `build` for inter-pod shapes: the per-node part shared within spec classes as there, the overlay per node. */
  private buildLocal(part: InterPodPart): void {
    const classes = this.state.specClasses();
    const of = classes.of;
    const first = new Int32Array(classes.count).fill(-1);
    const nodes = this.state.nodes;
    const localReason = part.reason;
    const localScore = part.score;
    for (let i = 0; i < this.n; i++) {
      if (this.shareClasses && (nodes[i] as NodeState).version === 0) {
        const c = of[i] as number;
        const j = first[c] as number;
        if (j >= 0) {
          this.version[i] = 0;
          localReason[i] = localReason[j] as number;
          localScore[i] = localScore[j] as number;
          this.overlay(i);
          continue;
        }
        first[c] = i;
      }
      this.evaluate(i);
    }
  }

  /** Filters and scores node i into the leaf (no tree update). */
  private evaluate(i: number): void {
    if (this.interPod !== undefined) {
      this.evaluateLocal(this.interPod, i);
      this.overlay(i);
      return;
    }
    this.counters.evaluations++;
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
    for (const s of this.scorers) total += s.weight * (s.plugin.score as (p: PodSpec, n: NodeState) => number)(this.pod, node);
    this.score[i] = total;
    this.tree[leaf] = i;
    this.count[leaf] = 1;
  }

  /** The per-node part of an inter-pod shape into its reason/score. */
  private evaluateLocal(part: InterPodPart, i: number): void {
    this.counters.evaluations++;
    const node = this.state.nodes[i] as NodeState;
    this.version[i] = node.version;
    const r = evaluateFilters(this.profile, this.pod, node);
    part.reason[i] = r;
    if (r !== Reason.Fits) return;
    let total = 0;
    for (const s of this.scorers) total += s.weight * (s.plugin.score as (p: PodSpec, n: NodeState) => number)(this.pod, node);
    part.score[i] = total;
  }

  private update(i: number): void {
    const node = this.state.nodes[i] as NodeState;
    if (this.version[i] === node.version) return;
    const leaf = this.size + i;
    const wasFeasible = (this.tree[leaf] as number) >= 0;
    const oldScore = this.score[i] as number;
    this.evaluate(i);
    // Infeasible before and after, or the same score: no winner or count above the leaf changes.
    if ((this.tree[leaf] as number) >= 0 ? wasFeasible && this.score[i] === oldScore : !wasFeasible) return;
    for (let p = leaf >> 1; p >= 1; p >>= 1) this.pull(p);
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
    const c = new Int32Array(REASON_SLOTS);
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

/** Pods of every shape seen so far, by a hash of their fields: a known shape's key is found without building a string. */
const knownShapes = new Map<number, { readonly pod: PodSpec; readonly key: string; readonly tolerations: string; readonly ext: string }[]>();
let knownShapeCount = 0;
/** Bounds the table in a long-running scheduler; past it, the table starts over (keys stay the same). */
const MAX_KNOWN_SHAPES = 65_536;

/** Everything filters and node scores may read of a pod; pods with equal keys are interchangeable. */
export function shapeKey(pod: PodSpec): string {
  const r = pod.request;
  let h = Math.imul(r.cpuMilli | 0, 0x9e3779b1) ^ Math.imul(r.memoryMiB | 0, 0x85ebca6b) ^ Math.imul(r.gpuCount | 0, 0xc2b2ae35);
  h = Math.imul(h ^ (r.gpuMilli | 0), 0x27d4eb2f) ^ ((r.gpuMemoryMiB ?? 0) | 0) ^ Math.imul(pod.minComputeCapability | 0, 0x165667b1);
  h = (h ^ (pod.gpuModels.length << 8) ^ (pod.tolerations.length << 16)) | 0;
  let bucket = knownShapes.get(h);
  if (bucket !== undefined) {
    for (const known of bucket)
      if (sameShape(known.pod, known.tolerations, pod) && (known.ext === '' ? !hasExt(pod) : known.ext === extKey(pod))) return known.key;
  }
  const key = buildShapeKey(pod);
  if (knownShapeCount >= MAX_KNOWN_SHAPES) {
    knownShapes.clear();
    knownShapeCount = 0;
    bucket = undefined;
  }
  if (bucket === undefined) {
    bucket = [];
    knownShapes.set(h, bucket);
  }
  bucket.push({ pod, key, tolerations: pod.tolerations.length > 0 ? JSON.stringify(pod.tolerations) : '', ext: extKey(pod) });
  knownShapeCount++;
  return key;
}

/** Field by field: true only if the two pods' keys are equal (never a false match; a false miss only adds an entry). */
function sameShape(a: PodSpec, aTolerations: string, b: PodSpec): boolean {
  const ra = a.request;
  const rb = b.request;
  if (ra.cpuMilli !== rb.cpuMilli || ra.memoryMiB !== rb.memoryMiB || ra.gpuCount !== rb.gpuCount || ra.gpuMilli !== rb.gpuMilli) return false;
  if ((ra.gpuMemoryMiB ?? 0) !== (rb.gpuMemoryMiB ?? 0) || a.minComputeCapability !== b.minComputeCapability) return false;
  if (a.gpuModels.length !== b.gpuModels.length) return false;
  for (let i = 0; i < a.gpuModels.length; i++) if (a.gpuModels[i] !== b.gpuModels[i]) return false;
  if (a.tolerations.length !== b.tolerations.length) return false;
  if (b.tolerations.length > 0 && JSON.stringify(b.tolerations) !== aTolerations) return false;
  let na = 0;
  for (const k in a.nodeSelector) {
    if (!Object.hasOwn(a.nodeSelector, k)) continue;
    na++;
    if (!Object.hasOwn(b.nodeSelector, k) || b.nodeSelector[k] !== a.nodeSelector[k]) return false;
  }
  let nb = 0;
  for (const k in b.nodeSelector) if (Object.hasOwn(b.nodeSelector, k)) nb++;
  return na === nb;
}

function buildShapeKey(pod: PodSpec): string {
  const r = pod.request;
  let k = `${r.cpuMilli}|${r.memoryMiB}|${r.gpuCount}|${r.gpuMilli}|${r.gpuMemoryMiB ?? 0}|${pod.gpuModels.join(',')}|${pod.minComputeCapability}`;
  if (pod.tolerations.length > 0) k += `|t${JSON.stringify(pod.tolerations)}`;
  const sel = Object.keys(pod.nodeSelector);
  if (sel.length > 0) k += `|s${JSON.stringify(sel.sort().map((x) => [x, pod.nodeSelector[x]]))}`;
  const ext = extKey(pod);
  if (ext !== '') k += `|x${ext}`;
  return k;
}

/** Whether the pod has any of the fields of kube's per-node plugins that filters read (ADR 0049). */
function hasExt(pod: PodSpec): boolean {
  return (
    pod.nodeAffinity !== undefined ||
    pod.hostPorts !== undefined ||
    pod.request.scalar !== undefined ||
    pod.volumes !== undefined ||
    pod.inlineDisks !== undefined ||
    hasInterPodFields(pod)
  );
}

/** Node affinity, host ports and other resources as a key part; '' for the pods that have none (no cost for them). */
function extKey(pod: PodSpec): string {
  if (!hasExt(pod)) return '';
  const base: unknown[] = [pod.nodeAffinity ?? null, pod.hostPorts ?? null, pod.request.scalar ?? null];
  // Resolved volumes (ADR 0070) only when present: keys of pods without them are as before.
  if (pod.volumes !== undefined) base.push(`v${pod.volumes.key}`);
  if (pod.inlineDisks !== undefined) base.push(pod.inlineDisks);
  // Inter-pod terms read the pod's own namespace and labels too (self-match, matchLabelKeys).
  return JSON.stringify(
    hasInterPodFields(pod) ? [...base, podMetaKey(pod), pod.podAffinity ?? null, pod.podAntiAffinity ?? null, pod.topologySpread ?? null] : base,
  );
}

/** Namespace and labels as a key part: what existing pods' anti-affinity terms read of an incoming pod. */
export function podMetaKey(pod: PodSpec): string {
  const l = pod.labels;
  return `${pod.namespace ?? 'default'}|${
    l === undefined
      ? ''
      : JSON.stringify(
          Object.keys(l)
            .sort()
            .map((k) => [k, l[k]]),
        )
  }`;
}
