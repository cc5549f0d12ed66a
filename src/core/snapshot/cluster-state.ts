/**
 * The scheduler's view of the cluster: node states in topology order (zone, block, rack, NVLink domain,
 * name) so that every domain of every level is a contiguous index range. Mutated only through
 * `allocate`/`release`, which a Statement records so that a gang can be rolled back.
 * Every mutation bumps the node's version and appends it to a change log that score indices replay.
 */
import type { NodeSpec } from '../model/node.ts';
import type { HostPort, PodSpec } from '../model/pod.ts';
import type { InlineDisk } from '../model/volume.ts';
import { TOPOLOGY_LEVELS, type TopologyLevel } from '../model/topology.ts';
import { usePorts, type UsedPorts } from '../model/host-ports.ts';
import type { AllocationVolumes, VolumeCatalog } from './volume-catalog.ts';
import { podClaimKeys } from '../model/volume.ts';
import {
  defaultNamespaceLabels,
  requiredAffinityTerms,
  requiredAntiAffinityTerms,
  resolveTerm,
  termMatchesPod,
  type NamespaceLabels,
  type PodMeta,
  type ResolvedTerm,
} from '../model/terms.ts';

export interface Allocation {
  readonly podId: string;
  readonly node: string;
  /** GPU device indices on the node, ascending. */
  readonly gpus: readonly number[];
  /** Milli taken from each of those GPUs. */
  readonly gpuMilli: number;
  readonly cpuMilli: number;
  readonly memoryMiB: number;
  readonly gang?: string;
  readonly priority: number;
  readonly queue: string;
  /** Requests other than cpu, memory and GPUs (PodRequest.scalar), when the pod has any. */
  readonly scalar?: Readonly<Record<string, number>>;
  /** Host ports the pod binds, when any. */
  readonly hostPorts?: readonly HostPort[];
  /** What other pods' inter-pod terms read of this pod, when it has a namespace, labels or required anti-affinity (ADR 0054). */
  readonly meta?: AllocationMeta;
  /** The claims the pod uses and the volume choices made for it at commit, when it uses any (ADR 0070). */
  readonly volumes?: AllocationVolumes;
  /** Its inline GCE PD / EBS / iSCSI / RBD disks, when any. */
  readonly disks?: readonly InlineDisk[];
}

export interface AllocationMeta extends PodMeta {
  /** Its required anti-affinity terms, resolved: incoming pods they match must keep out of its domains. */
  readonly antiRequired?: readonly ResolvedTerm[];
  /**
   * Its terms that score incoming pods they match (kube's InterPodAffinity score, from the existing pod's side):
   * required affinity terms (weight 0 here: the profile's hardPodAffinityWeight applies) and preferred
   * affinity (+weight) and anti-affinity (−weight) terms.
   */
  readonly affinityRequired?: readonly ResolvedTerm[];
  readonly preferred?: readonly ResolvedTerm[];
}

/** Whether an allocation carries terms that act on incoming pods (the symmetric check or the score toward them). */
const hasTermsTowardOthers = (m: AllocationMeta | undefined): m is AllocationMeta =>
  m !== undefined && (m.antiRequired !== undefined || m.affinityRequired !== undefined || m.preferred !== undefined);
const termsTowardOthers = (m: AllocationMeta): readonly ResolvedTerm[] => [...(m.antiRequired ?? []), ...(m.affinityRequired ?? []), ...(m.preferred ?? [])];

/** The pod side of an allocation without meta: the default namespace and no labels. */
export const PLAIN_META: AllocationMeta = { namespace: 'default' };

/** Nodes by their value of one label key (a topology key): value ids per node (-1 = no such label) and the nodes of each value. */
export interface TopologyValues {
  readonly key: string;
  readonly ids: Int32Array;
  readonly values: readonly string[];
  readonly nodesOf: readonly Int32Array[];
}

export interface Domain {
  readonly level: TopologyLevel;
  readonly key: string;
  /** Node index range [start, end). */
  readonly start: number;
  readonly end: number;
}

export class NodeState {
  cpuUsedMilli = 0;
  memUsedMiB = 0;
  podCount = 0;
  version = 0;
  /** Free milli per GPU; unhealthy GPUs are 0 and flagged in `gpuUsable`. */
  readonly gpuFree: Int32Array;
  readonly gpuUsable: Uint8Array;
  readonly allocations = new Map<string, Allocation>();
  /** GPU-pod kinds present (for clustering policies), as counts per tag. */
  readonly gpuPodTags = new Map<string, number>();
  /** Scalar resources in use (PodRequest.scalar), created with the first pod that requests any. */
  scalarUsed: Map<string, number> | undefined = undefined;
  /** Host ports in use, created with the first pod that binds any. */
  hostPorts: UsedPorts | undefined = undefined;
  /** Inline disks of the pods on the node, created with the first pod that mounts any. */
  disks: Map<string, readonly InlineDisk[]> | undefined = undefined;
  /** Index in topology order. */
  idx = 0;
  /** Tie-break priority: lower rank wins ties. */
  rank = 0;
  /** Why unhealthy GPUs are unhealthy, by index, where the reporter said (created with the first reason). */
  healthReasons: Map<number, string> | undefined = undefined;

  constructor(readonly spec: NodeSpec) {
    const n = spec.gpus.length;
    this.gpuFree = new Int32Array(n);
    this.gpuUsable = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const healthy = spec.gpus[i]?.healthy ?? false;
      this.gpuUsable[i] = healthy ? 1 : 0;
      this.gpuFree[i] = healthy ? 1000 : 0;
      const why = spec.gpus[i]?.unhealthyReason;
      if (!healthy && why !== undefined) (this.healthReasons ??= new Map()).set(i, why);
    }
  }

  get name(): string {
    return this.spec.name;
  }
  get cpuFreeMilli(): number {
    return this.spec.cpuMilli - this.cpuUsedMilli;
  }
  get memFreeMiB(): number {
    return this.spec.memoryMiB - this.memUsedMiB;
  }
  /** Σ free milli over usable GPUs. */
  gpuFreeMilli(): number {
    let s = 0;
    for (let i = 0; i < this.gpuFree.length; i++) s += this.gpuFree[i] as number;
    return s;
  }
  /** GPUs with all 1000 milli free. */
  fullyFreeGpus(): number {
    let c = 0;
    for (let i = 0; i < this.gpuFree.length; i++) if (this.gpuFree[i] === 1000) c++;
    return c;
  }
  usableGpuCount(): number {
    let c = 0;
    for (let i = 0; i < this.gpuUsable.length; i++) c += this.gpuUsable[i] as number;
    return c;
  }
}

/** GPU-pod tag used by clustering policies: `share`, `<n>-gpu`, or undefined for CPU-only pods. */
export function gpuPodTag(gpuCount: number, gpuMilli: number): string | undefined {
  if (gpuCount === 0 || gpuMilli === 0) return undefined;
  if (gpuCount === 1 && gpuMilli < 1000) return 'share';
  return WHOLE_TAGS[gpuCount] ?? `${gpuCount}-gpu`;
}
const WHOLE_TAGS = Array.from({ length: 65 }, (_, i) => `${i}-gpu`);

const LOG_SLACK = 4;
const LEVEL_POS = Object.fromEntries(TOPOLOGY_LEVELS.map((l, i) => [l, i])) as Record<TopologyLevel, number>;

/**
 * The change log: node indices in mutation order, with the allocation each entry added (+1) or removed (−1)
 * (undefined and 0 for health changes). Entries before `base` are dropped once the log outgrows its slack.
 */
class ChangeLog {
  private nodes: number[] = [];
  private pods: (Allocation | undefined)[] = [];
  private signs: number[] = [];
  private base = 0;

  get seq(): number {
    return this.base + this.nodes.length;
  }

  record(idx: number, a: Allocation | undefined, sign: number, nodeCount: number): void {
    this.pods.push(a);
    this.signs.push(sign);
    this.nodes.push(idx);
    if (this.nodes.length > LOG_SLACK * nodeCount + 1024) {
      const drop = this.nodes.length >> 1;
      this.nodes = this.nodes.slice(drop);
      this.pods = this.pods.slice(drop);
      this.signs = this.signs.slice(drop);
      this.base += drop;
    }
  }

  changesSince(since: number): readonly number[] | undefined {
    if (since < this.base) return undefined;
    return since === this.seq ? [] : this.nodes.slice(since - this.base);
  }

  forEachChange(since: number, fn: (idx: number) => void): boolean {
    if (since < this.base) return false;
    const log = this.nodes;
    for (let i = since - this.base; i < log.length; i++) fn(log[i] as number);
    return true;
  }

  forEachPodChange(since: number, fn: (a: Allocation, sign: number, idx: number) => void): boolean {
    if (since < this.base) return false;
    const log = this.nodes;
    for (let i = since - this.base; i < log.length; i++) {
      const a = this.pods[i];
      if (a !== undefined) fn(a, this.signs[i] as number, log[i] as number);
    }
    return true;
  }
}

/**
 * Free GPU capacity in aggregate, kept on every mutation: Fenwick trees over node index (fully free GPUs and
 * free GPU milli) and, per level (TOPOLOGY_LEVELS order) and domain, the same two sums.
 */
class FreeGpus {
  private readonly fenFull: Float64Array;
  private readonly fenMilli: Float64Array;
  private readonly lastFull: Int32Array;
  private readonly lastMilli: Int32Array;
  readonly domFull: Float64Array[] = [];
  readonly domMilli: Float64Array[] = [];
  private readonly levelOf: Int32Array[] = [];
  /** Per level: GPU devices in its largest domain. */
  readonly maxGpus: number[] = [];

  constructor(nodes: readonly NodeState[], domains: Readonly<Record<TopologyLevel, readonly Domain[]>>, domainOf: Readonly<Record<TopologyLevel, Int32Array>>) {
    this.fenFull = new Float64Array(nodes.length + 1);
    this.fenMilli = new Float64Array(nodes.length + 1);
    this.lastFull = new Int32Array(nodes.length);
    this.lastMilli = new Int32Array(nodes.length);
    for (const level of TOPOLOGY_LEVELS) {
      this.domFull.push(new Float64Array(domains[level].length));
      this.domMilli.push(new Float64Array(domains[level].length));
      this.levelOf.push(domainOf[level]);
      const gpus = new Float64Array(domains[level].length);
      const of = domainOf[level];
      for (const n of nodes) {
        const d = of[n.idx] as number;
        gpus[d] = (gpus[d] as number) + n.spec.gpus.length;
      }
      this.maxGpus.push(gpus.reduce((m, g) => Math.max(m, g), 0));
    }
    for (const n of nodes) this.refresh(n);
  }

  fullyFreeIn(start: number, end: number): number {
    return prefix(this.fenFull, end) - prefix(this.fenFull, start);
  }

  milliIn(start: number, end: number): number {
    return prefix(this.fenMilli, end) - prefix(this.fenMilli, start);
  }

  /** Moves the sums by the node's change since its last refresh. */
  refresh(n: NodeState): void {
    const full = n.fullyFreeGpus();
    const milli = n.gpuFreeMilli();
    const df = full - (this.lastFull[n.idx] as number);
    const dm = milli - (this.lastMilli[n.idx] as number);
    if (df !== 0) this.move(this.fenFull, this.domFull, n.idx, df);
    if (dm !== 0) this.move(this.fenMilli, this.domMilli, n.idx, dm);
    this.lastFull[n.idx] = full;
    this.lastMilli[n.idx] = milli;
  }

  /** Node i's sum moved by delta: its Fenwick tree and its domain at every level. */
  private move(fen: Float64Array, dom: readonly Float64Array[], i: number, delta: number): void {
    add(fen, i, delta);
    for (let l = 0; l < this.levelOf.length; l++) {
      const d = (this.levelOf[l] as Int32Array)[i] as number;
      const a = dom[l] as Float64Array;
      a[d] = (a[d] as number) + delta;
    }
  }
}

export class ClusterState {
  readonly nodes: readonly NodeState[];
  private readonly byName = new Map<string, NodeState>();
  /** Domains per level (node level included), each a contiguous range. */
  readonly domains: Readonly<Record<TopologyLevel, readonly Domain[]>>;
  /** domainOf[level][nodeIdx] = index into domains[level]. */
  readonly domainOf: Readonly<Record<TopologyLevel, Int32Array>>;
  private readonly podNode = new Map<string, NodeState>();
  private readonly changes = new ChangeLog();
  private readonly free: FreeGpus;
  /**
   * Pods with terms toward incoming pods (required anti-affinity: the symmetric check; required affinity and
   * preferred terms: their score) per node index, and in all.
   */
  readonly antiPodsOn: Int32Array;
  antiPodCount = 0;
  /** Distinct such terms of bound pods (by content), with how many pods carry each. */
  private readonly antiTerms = new Map<string, { readonly term: ResolvedTerm; count: number }>();
  private readonly topologies = new Map<string, TopologyValues>();
  /** Labels of a namespace for namespaceSelector; hosts that know them set this (default: kube's automatic name label). */
  namespaceLabels: NamespaceLabels = defaultNamespaceLabels;
  /**
   * PersistentVolumes, claims and StorageClasses, when the host knows any (ADR 0070). Set it before allocating
   * pods with claims: allocations record their volume assumptions in it.
   */
  volumes: VolumeCatalog | undefined = undefined;
  /** Spec class per node index (see specClasses), computed with the snapshot. */
  private specClassOf: Int32Array | undefined;
  private specClassCount = 0;

  /**
   * @param specs nodes in any order; they are sorted into topology order.
   * @param rankOf tie-break rank per node name (lower wins); default: name order.
   */
  constructor(specs: readonly NodeSpec[], rankOf?: (name: string, i: number) => number) {
    const sorted = [...specs].sort(compareTopology);
    const nodes = sorted.map((s) => new NodeState(s));
    const byName = [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const nameOrder = new Map(byName.map((n, i) => [n.name, i]));
    nodes.forEach((n, i) => {
      n.idx = i;
      n.rank = rankOf === undefined ? (nameOrder.get(n.name) as number) : rankOf(n.name, i);
      if (this.byName.has(n.name)) throw new Error(`duplicate node name ${n.name}`);
      this.byName.set(n.name, n);
    });
    this.nodes = nodes;
    this.antiPodsOn = new Int32Array(nodes.length);
    const domains = {} as Record<TopologyLevel, Domain[]>;
    const domainOf = {} as Record<TopologyLevel, Int32Array>;
    for (const level of TOPOLOGY_LEVELS) {
      const list: Domain[] = [];
      const of = new Int32Array(nodes.length);
      let start = 0;
      for (let i = 1; i <= nodes.length; i++) {
        const prev = nodes[i - 1] as NodeState;
        const cur = nodes[i];
        if (cur === undefined || domainKey(cur.spec, level) !== domainKey(prev.spec, level)) {
          for (let j = start; j < i; j++) of[j] = list.length;
          list.push({ level, key: domainKey(prev.spec, level), start, end: i });
          start = i;
        }
      }
      domains[level] = list;
      domainOf[level] = of;
    }
    this.domains = domains;
    this.domainOf = domainOf;
    this.free = new FreeGpus(nodes, domains, domainOf);
    // Static, like the domains: computed with the snapshot, not by the first score index that needs them.
    this.specClasses();
    this.ranks();
  }

  /** GPU devices (healthy or not) of the largest domain of the level: no demand above it fits any domain. */
  maxDomainGpus(level: TopologyLevel): number {
    return this.free.maxGpus[LEVEL_POS[level]] as number;
  }

  get size(): number {
    return this.nodes.length;
  }
  node(name: string): NodeState | undefined {
    return this.byName.get(name);
  }
  nodeOfPod(podId: string): NodeState | undefined {
    return this.podNode.get(podId);
  }
  allocation(podId: string): Allocation | undefined {
    return this.podNode.get(podId)?.allocations.get(podId);
  }
  /** Current change sequence number. */
  get seq(): number {
    return this.changes.seq;
  }
  /** Node indices changed since `since`, or undefined when the log no longer reaches back that far. */
  changesSince(since: number): readonly number[] | undefined {
    return this.changes.changesSince(since);
  }
  /** Like changesSince but calls `fn` for each entry without copying. Returns false if out of reach. */
  forEachChange(since: number, fn: (idx: number) => void): boolean {
    return this.changes.forEachChange(since, fn);
  }

  /** Like forEachChange, with the allocation each entry added (sign 1) or removed (−1); health changes are skipped. */
  forEachPodChange(since: number, fn: (a: Allocation, sign: number, idx: number) => void): boolean {
    return this.changes.forEachPodChange(since, fn);
  }

  /** Applies an allocation; the caller has checked that it fits. */
  allocate(a: Allocation): void {
    const n = this.byName.get(a.node);
    if (n === undefined) throw new Error(`allocate: unknown node ${a.node}`);
    if (this.podNode.has(a.podId)) throw new Error(`allocate: pod ${a.podId} already allocated`);
    // Check every GPU before touching anything, so that a refused allocation leaves the node as it was.
    for (let k = 0; k < a.gpus.length; k++) {
      const g = a.gpus[k] as number;
      if (n.gpuUsable[g] !== 1 || (n.gpuFree[g] as number) < a.gpuMilli || a.gpus.indexOf(g) !== k)
        throw new Error(`allocate: GPU ${g} of ${a.node} over-committed by ${a.podId}`);
    }
    n.cpuUsedMilli += a.cpuMilli;
    n.memUsedMiB += a.memoryMiB;
    n.podCount += 1;
    for (const g of a.gpus) n.gpuFree[g] = (n.gpuFree[g] as number) - a.gpuMilli;
    const tag = gpuPodTag(a.gpus.length, a.gpuMilli);
    if (tag !== undefined) n.gpuPodTags.set(tag, (n.gpuPodTags.get(tag) ?? 0) + 1);
    if (a.scalar !== undefined) addScalar((n.scalarUsed ??= new Map()), a.scalar, 1);
    if (a.hostPorts !== undefined) usePorts((n.hostPorts ??= new Map()), a.hostPorts, 1);
    if (hasTermsTowardOthers(a.meta)) {
      this.antiPodsOn[n.idx] = (this.antiPodsOn[n.idx] as number) + 1;
      this.antiPodCount++;
      for (const t of termsTowardOthers(a.meta)) {
        const k = termKey(t);
        const e = this.antiTerms.get(k);
        if (e === undefined) this.antiTerms.set(k, { term: t, count: 1 });
        else e.count++;
      }
    }
    if (a.volumes !== undefined) this.volumes?.take(a.volumes, a.node);
    if (a.disks !== undefined) (n.disks ??= new Map()).set(a.podId, a.disks);
    n.allocations.set(a.podId, a);
    this.podNode.set(a.podId, n);
    this.touched(n, a, 1);
  }

  release(podId: string): Allocation | undefined {
    const n = this.podNode.get(podId);
    if (n === undefined) return undefined;
    const a = n.allocations.get(podId) as Allocation;
    n.cpuUsedMilli -= a.cpuMilli;
    n.memUsedMiB -= a.memoryMiB;
    n.podCount -= 1;
    // An unhealthy GPU stays at 0 free; setGpuHealth recomputes its share when it comes back.
    for (const g of a.gpus) if (n.gpuUsable[g] === 1) n.gpuFree[g] = (n.gpuFree[g] as number) + a.gpuMilli;
    const tag = gpuPodTag(a.gpus.length, a.gpuMilli);
    if (tag !== undefined) {
      const c = (n.gpuPodTags.get(tag) ?? 1) - 1;
      if (c === 0) n.gpuPodTags.delete(tag);
      else n.gpuPodTags.set(tag, c);
    }
    if (a.scalar !== undefined && n.scalarUsed !== undefined) addScalar(n.scalarUsed, a.scalar, -1);
    if (a.hostPorts !== undefined && n.hostPorts !== undefined) usePorts(n.hostPorts, a.hostPorts, -1);
    if (hasTermsTowardOthers(a.meta)) {
      this.antiPodsOn[n.idx] = (this.antiPodsOn[n.idx] as number) - 1;
      this.antiPodCount--;
      for (const t of termsTowardOthers(a.meta)) {
        const k = termKey(t);
        const e = this.antiTerms.get(k) as { count: number };
        if (--e.count === 0) this.antiTerms.delete(k);
      }
    }
    if (a.volumes !== undefined) this.volumes?.give(a.volumes);
    if (a.disks !== undefined) n.disks?.delete(podId);
    n.allocations.delete(podId);
    this.podNode.delete(podId);
    this.touched(n, a, -1);
    return a;
  }

  /**
   * Marks a GPU healthy or not (device plugin health, a quarantine); allocations on it stay until their pods
   * go. `reason`: why it is unhealthy, for `sits explain`.
   */
  setGpuHealth(nodeName: string, gpu: number, healthy: boolean, reason?: string): void {
    const n = this.byName.get(nodeName);
    if (n === undefined || gpu < 0 || gpu >= n.gpuFree.length) return;
    if (healthy) n.healthReasons?.delete(gpu);
    else if (reason !== undefined) (n.healthReasons ??= new Map()).set(gpu, reason);
    if ((n.gpuUsable[gpu] === 1) === healthy) return;
    let used = 1000;
    for (const a of n.allocations.values()) if (a.gpus.includes(gpu)) used -= a.gpuMilli;
    n.gpuUsable[gpu] = healthy ? 1 : 0;
    n.gpuFree[gpu] = healthy ? used : 0;
    this.healthVersion++;
    this.touched(n, undefined, 0);
  }

  private preferNoSchedule: boolean | undefined;
  /** Whether any node carries a PreferNoSchedule taint (specs are fixed for a state's life). */
  hasPreferNoScheduleTaints(): boolean {
    this.preferNoSchedule ??= this.nodes.some((n) => n.spec.taints.some((t) => t.effect === 'PreferNoSchedule'));
    return this.preferNoSchedule;
  }

  /**
   * Whether some bound pod's term toward others (required anti-affinity: the symmetric check; required
   * affinity or preferred terms: the score) matches a pod of this namespace and labels.
   */
  antiAffinityMatches(m: PodMeta): boolean {
    if (this.antiPodCount === 0) return false;
    for (const e of this.antiTerms.values()) if (termMatchesPod(e.term, m, this.namespaceLabels)) return true;
    return false;
  }

  /** Nodes grouped by their value of a topology key (node labels; see `nodeTopologyValue`), made once per key. */
  topology(key: string): TopologyValues {
    let t = this.topologies.get(key);
    if (t === undefined) {
      const ids = new Int32Array(this.nodes.length).fill(-1);
      const byValue = new Map<string, number[]>();
      for (const n of this.nodes) {
        const v = nodeTopologyValue(n.spec, key);
        if (v === undefined) continue;
        let list = byValue.get(v);
        if (list === undefined) byValue.set(v, (list = []));
        list.push(n.idx);
      }
      const values = [...byValue.keys()];
      const valueId = new Map(values.map((v, i) => [v, i]));
      for (const n of this.nodes) {
        const v = nodeTopologyValue(n.spec, key);
        ids[n.idx] = v === undefined ? -1 : (valueId.get(v) as number);
      }
      t = { key, ids, values, nodesOf: values.map((v) => Int32Array.from(byValue.get(v) as number[])) };
      this.topologies.set(key, t);
    }
    return t;
  }

  /** Bumped whenever a GPU's health changes: capacity derived from the nodes is stale then. */
  healthVersion = 0;

  /** Sum of fully free GPUs over node index range [start, end). */
  fullyFreeGpusIn(start: number, end: number): number {
    return this.free.fullyFreeIn(start, end);
  }
  gpuFreeMilliIn(start: number, end: number): number {
    return this.free.milliIn(start, end);
  }

  private rankArray: Int32Array | undefined;
  /** Tie-break rank per node index (fixed at construction), shared by every score index. Read only. */
  ranks(): Int32Array {
    if (this.rankArray === undefined) {
      const r = new Int32Array(this.nodes.length);
      for (const n of this.nodes) r[n.idx] = n.rank;
      this.rankArray = r;
    }
    return this.rankArray;
  }

  /** Fully free GPUs in domain `d` (an index into `domains[level]`); O(1), kept up to date on every mutation. */
  domainFullyFreeGpus(level: TopologyLevel, d: number): number {
    return (this.free.domFull[LEVEL_POS[level]] as Float64Array)[d] as number;
  }
  /** Free GPU milli in domain `d` of `level`; O(1). */
  domainGpuFreeMilli(level: TopologyLevel, d: number): number {
    return (this.free.domMilli[LEVEL_POS[level]] as Float64Array)[d] as number;
  }
  /**
   * Both per-domain counts of a level as arrays indexed like `domains[level]`, for scans over all domains.
   * Live views: read them, never write them.
   */
  domainFreeCounts(level: TopologyLevel): { readonly fullyFreeGpus: Float64Array; readonly gpuFreeMilli: Float64Array } {
    const l = LEVEL_POS[level];
    return { fullyFreeGpus: this.free.domFull[l] as Float64Array, gpuFreeMilli: this.free.domMilli[l] as Float64Array };
  }

  /**
   * Equivalence classes of node specs: nodes get the same class id when their specs are equal in every field
   * but `name` and `location` (resources, GPU devices, GPU topology, labels, taints, unschedulable, shape).
   * Filter and score plugins may read neither name nor location (types.ts), so two nodes of one class in the
   * same state evaluate the same for every pod. `count` = number of classes; ids are 0..count-1.
   */
  specClasses(): { readonly of: Int32Array; readonly count: number } {
    if (this.specClassOf === undefined) {
      const of = new Int32Array(this.nodes.length);
      const ids = new Map<string, number>();
      // Sub-objects (GPU list, topology, labels, taints) become small ids by content, cached by identity:
      // nodes usually share them, and the class key then stays short.
      const contentIds = new Map<string, number>();
      const byObject = new Map<object, number>();
      const sub = (o: object): number => {
        let id = byObject.get(o);
        if (id === undefined) {
          const json = JSON.stringify(o);
          id = contentIds.get(json);
          if (id === undefined) {
            id = contentIds.size;
            contentIds.set(json, id);
          }
          byObject.set(o, id);
        }
        return id;
      };
      const same = (a: object, b: object): boolean => a === b || sub(a) === sub(b);
      const noLabels = (x: NodeSpec): boolean => Object.keys(x.labels).length === 0;
      let prev: NodeSpec | undefined;
      let prevId = -1;
      for (const n of this.nodes) {
        const s = n.spec;
        // Neighbours in topology order are usually alike: compare with the previous node before building a key.
        if (
          prev !== undefined &&
          s.cpuMilli === prev.cpuMilli &&
          s.memoryMiB === prev.memoryMiB &&
          s.maxPods === prev.maxPods &&
          s.unschedulable === prev.unschedulable &&
          s.shape === prev.shape &&
          same(s.gpus, prev.gpus) &&
          same(s.topology, prev.topology) &&
          (noLabels(s) ? noLabels(prev) : !noLabels(prev) && same(s.labels, prev.labels)) &&
          (s.taints.length === 0 ? prev.taints.length === 0 : prev.taints.length > 0 && same(s.taints, prev.taints)) &&
          (s.scalar === undefined ? prev.scalar === undefined : prev.scalar !== undefined && same(s.scalar, prev.scalar))
        ) {
          of[n.idx] = prevId;
          continue;
        }
        const labels = noLabels(s) ? -1 : sub(s.labels);
        const taints = s.taints.length === 0 ? -1 : sub(s.taints);
        const scalar = s.scalar === undefined ? '' : `|${sub(s.scalar)}`;
        const key = `${s.cpuMilli}|${s.memoryMiB}|${s.maxPods}|${s.unschedulable}|${s.shape ?? ''}|${sub(s.gpus)}|${sub(s.topology)}|${labels}|${taints}${scalar}`;
        let id = ids.get(key);
        if (id === undefined) {
          id = ids.size;
          ids.set(key, id);
        }
        of[n.idx] = id;
        prev = s;
        prevId = id;
      }
      this.specClassOf = of;
      this.specClassCount = ids.size;
    }
    return { of: this.specClassOf, count: this.specClassCount };
  }

  /** A mutation of node n: its version, the change log (with the allocation added or removed) and the free-GPU sums. */
  private touched(n: NodeState, a: Allocation | undefined, sign: number): void {
    n.version++;
    this.changes.record(n.idx, a, sign, this.nodes.length);
    this.free.refresh(n);
  }
}

function add(fen: Float64Array, i: number, v: number): void {
  for (let x = i + 1; x < fen.length; x += x & -x) fen[x] = (fen[x] as number) + v;
}
function prefix(fen: Float64Array, end: number): number {
  let s = 0;
  for (let x = end; x > 0; x -= x & -x) s += fen[x] as number;
  return s;
}

/** Well-known topology labels a node of a cluster file has by its place (live nodes carry them as labels). */
const LOCATION_LABELS: Readonly<Record<string, (s: NodeSpec) => string>> = {
  'kubernetes.io/hostname': (s) => s.name,
  'topology.kubernetes.io/zone': (s) => s.location.zone,
  'ai.sits2026.dev/block': (s) => s.location.block,
  'ai.sits2026.dev/rack': (s) => s.location.rack,
};

const withPlace = new WeakMap<NodeSpec, Readonly<Record<string, string>>>();

/** The node's labels with the well-known ones its place implies where it does not carry them (made once per spec). */
export function labelsWithPlace(spec: NodeSpec): Readonly<Record<string, string>> {
  let l = withPlace.get(spec);
  if (l === undefined) {
    const out: Record<string, string> = {};
    for (const k in LOCATION_LABELS) {
      const v = (LOCATION_LABELS[k] as (s: NodeSpec) => string)(spec);
      if (v !== '') out[k] = v;
    }
    l = { ...out, ...spec.labels };
    withPlace.set(spec, l);
  }
  return l;
}

/** The node's value of a topology key: its label, else the well-known label its place implies; undefined = none. */
export function nodeTopologyValue(spec: NodeSpec, key: string): string | undefined {
  if (Object.hasOwn(spec.labels, key)) return spec.labels[key];
  return LOCATION_LABELS[key]?.(spec);
}

export function domainKey(spec: NodeSpec, level: TopologyLevel): string {
  const l = spec.location;
  switch (level) {
    case 'zone':
      return l.zone;
    case 'block':
      return `${l.zone}/${l.block}`;
    case 'rack':
      return `${l.zone}/${l.block}/${l.rack}`;
    case 'nvlink-domain':
      return `${l.zone}/${l.block}/${l.rack}/${l.nvlinkDomain ?? `node:${spec.name}`}`;
    case 'node':
      return spec.name;
  }
}

function compareTopology(a: NodeSpec, b: NodeSpec): number {
  const ka = domainKey(a, 'nvlink-domain');
  const kb = domainKey(b, 'nvlink-domain');
  if (ka !== kb) return ka < kb ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function addScalar(used: Map<string, number>, r: Readonly<Record<string, number>>, sign: 1 | -1): void {
  for (const k in r) {
    const v = (used.get(k) ?? 0) + sign * (r[k] as number);
    if (v === 0) used.delete(k);
    else used.set(k, v);
  }
}

/** Allocation of a pod on a node with given GPUs (no checks). */
export function allocationFor(pod: PodSpec, node: string, gpus: readonly number[]): Allocation {
  const r = pod.request;
  const withMeta = pod.namespace !== undefined || pod.labels !== undefined || pod.podAntiAffinity !== undefined || pod.podAffinity !== undefined;
  if (r.scalar !== undefined || pod.hostPorts !== undefined || withMeta || pod.claims !== undefined || pod.inlineDisks !== undefined) {
    return {
      ...plainAllocation(pod, node, gpus),
      ...(r.scalar === undefined ? {} : { scalar: r.scalar }),
      ...(pod.hostPorts === undefined ? {} : { hostPorts: pod.hostPorts }),
      ...(withMeta ? { meta: metaOf(pod) } : {}),
      // A running pod's claims count for ReadWriteOncePod; the scheduler adds its choices for the pods it places.
      ...(pod.claims === undefined ? {} : { volumes: { claims: podClaimKeys(pod), binds: [], provisions: [] } }),
      ...(pod.inlineDisks === undefined ? {} : { disks: pod.inlineDisks }),
    };
  }
  return plainAllocation(pod, node, gpus);
}

function plainAllocation(pod: PodSpec, node: string, gpus: readonly number[]): Allocation {
  const r = pod.request;
  const gpuMilli = r.gpuCount === 0 ? 0 : r.gpuMilli;
  return pod.gang === undefined
    ? { podId: pod.id, node, gpus, gpuMilli, cpuMilli: r.cpuMilli, memoryMiB: r.memoryMiB, priority: pod.priority, queue: pod.queue }
    : { podId: pod.id, node, gpus, gpuMilli, cpuMilli: r.cpuMilli, memoryMiB: r.memoryMiB, priority: pod.priority, queue: pod.queue, gang: pod.gang };
}

function metaOf(pod: PodSpec): AllocationMeta {
  const anti = pod.podAntiAffinity?.required;
  const aff = pod.podAffinity?.required;
  const preferred = [
    ...(pod.podAffinity?.preferred ?? []).map((p) => resolveTerm(p.term, pod, p.weight)),
    ...(pod.podAntiAffinity?.preferred ?? []).map((p) => resolveTerm(p.term, pod, -p.weight)),
  ];
  return {
    namespace: pod.namespace ?? 'default',
    ...(pod.labels === undefined ? {} : { labels: pod.labels }),
    ...(anti === undefined || anti.length === 0 ? {} : { antiRequired: requiredAntiAffinityTerms(pod) }),
    ...(aff === undefined || aff.length === 0 ? {} : { affinityRequired: requiredAffinityTerms(pod) }),
    ...(preferred.length === 0 ? {} : { preferred }),
  };
}

/** A resolved term's content as a key (selector, namespaces, topology key). */
function termKey(t: ResolvedTerm): string {
  const sel = (x: ResolvedTerm['selector'] | undefined): unknown =>
    x === undefined ? null : [x.nothing, x.reqs.map((r) => [r.key, r.op, [...r.values].sort()])];
  return JSON.stringify([t.topologyKey, sel(t.selector), [...t.namespaces].sort(), sel(t.namespaceSelector)]);
}
