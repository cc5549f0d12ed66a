/**
 * The cluster as the dashboard and `sits top` show it: a JSON-serialisable view built from what the scheduler
 * knows (the ClusterState snapshot, queue specs, waiting jobs with their explanation, queue reason and
 * expected start), and its incremental form — the nodes that changed since the last view — so that a live
 * page of 10,000 nodes × 8 GPUs is not resent whole on every bind. Pure: no clock, no I/O; hosts (the live
 * scheduler, the simulator) gather the inputs and call these functions.
 *
 * Node order is the state's topology order (zone → block → rack → NVLink domain → name), so a renderer can
 * lay the heatmap out by walking the list; GPU order inside a node is device index, with each GPU's NVLink
 * island beside it.
 */
import { jobResources, type QueuedJob } from '../core/actions/jobs.ts';
import type { Waiting } from '../core/actions/queue-cycle.ts';
import type { TopologyLevel } from '../core/model/topology.ts';
import { deservedGpu } from '../core/queue/fair-share.ts';
import { makeQueue, type QueueSpec } from '../core/queue/model.ts';
import { borrowedBy } from '../core/queue/quota.ts';
import { domainKey, type Allocation, type ClusterState, type NodeState } from '../core/snapshot/cluster-state.ts';

/** Version of the JSON shape; bumped when a field changes meaning. */
export const CLUSTER_VIEW_VERSION = 1;

export type GpuStatus = 'free' | 'fraction' | 'whole' | 'unhealthy';

export interface GpuView {
  /** Device index (CUDA_VISIBLE_DEVICES). */
  readonly index: number;
  /** NVLink island inside the node: GPUs joined by NVLink/NVSwitch share one. */
  readonly island: number;
  /** Milli allocated (0–1000; a whole GPU is 1000, shares add up). */
  readonly usedMilli: number;
  /** allocatable < capacity (device plugin health) or an unhealthy-GPU annotation: false. */
  readonly healthy: boolean;
  readonly status: GpuStatus;
  /** Pods holding a share of it (ids into the node's `pods`). */
  readonly pods: readonly string[];
}

export interface PodOnNode {
  readonly pod: string;
  /** The job (queue unit) it belongs to: `gang:<namespace>/<group>` for gang members, the pod id otherwise. */
  readonly job: string;
  readonly queue: string;
  /** Device indices, ascending. */
  readonly gpus: readonly number[];
  /** Milli of each of those GPUs. */
  readonly gpuMilli: number;
}

export interface NodeView {
  readonly name: string;
  readonly zone: string;
  readonly block: string;
  readonly rack: string;
  /** Multi-node NVLink domain (NVL72-style), when the node is in one. */
  readonly nvlinkDomain?: string;
  readonly model: string;
  readonly unschedulable: boolean;
  readonly gpus: readonly GpuView[];
  /** Pods holding GPUs on the node (CPU-only pods are left out: they do not colour the heatmap). */
  readonly pods: readonly PodOnNode[];
}

/** GPU milli; `null` = unlimited (JSON has no Infinity). */
export type Milli = number | null;

export interface QueueView {
  readonly name: string;
  readonly cohort?: string;
  readonly weight: number;
  readonly nominalGpuMilli: Milli;
  readonly borrowingLimitGpuMilli: Milli;
  readonly usedGpuMilli: number;
  /** Usage above nominal: borrowed from the cohort. */
  readonly borrowedGpuMilli: number;
  /** What weighted water-filling over the cluster's healthy GPUs gives it (demand = usage + pending). */
  readonly fairShareGpuMilli: number;
  readonly pendingGpuMilli: number;
  readonly pendingJobs: number;
  readonly runningJobs: number;
  /** Whether a Queue object defines it (false: the default queue of a queue label). */
  readonly defined: boolean;
}

export interface PendingJobView {
  readonly id: string;
  readonly queue: string;
  readonly priority: number;
  readonly pods: number;
  readonly gpuMilli: number;
  readonly arrivalMs: number;
  /** One line: why the placement fails (or what the queue says when it holds the job before placement). */
  readonly explanation: string;
  /** The queue cycle's reason kind (quota, capacity, reservation, fair-share, critical-victim, inadmissible), when known. */
  readonly queueReason?: string;
  /** Expected start (ms since the epoch / virtual ms); absent = none within the horizon or not estimated yet. */
  readonly etaMs?: number;
}

/** The narrowest domain holding every GPU of a job: an NVLink island of one node, a node, a multi-node NVLink domain, …, the cluster. */
export type Span = 'island' | TopologyLevel | 'cluster';

export interface RunningJobView {
  readonly id: string;
  readonly queue: string;
  readonly pods: number;
  readonly gpuMilli: number;
  readonly nodes: readonly string[];
  readonly span: Span;
  /** All GPUs in one NVLink domain (an island of one node, or a multi-node NVLink domain). */
  readonly oneNvlinkDomain: boolean;
  /** GPU devices it holds (a shared GPU counts once). */
  readonly gpus: number;
  /**
   * The GPU count of the cluster's largest NVLink domain of the job's GPU model(s): when `gpus` is larger, no
   * domain could hold the job and `oneNvlinkDomain: false` is no fault of the placement (the page says so).
   */
  readonly largestNvlinkDomainGpus: number;
  readonly oneRack: boolean;
  readonly startMs?: number;
}

export interface ClusterTotals {
  readonly nodes: number;
  readonly gpus: number;
  readonly healthyGpus: number;
  readonly usedGpuMilli: number;
  readonly pendingJobs: number;
  readonly runningJobs: number;
}

/** A replay's progress (`sits demo --serve`): the page says when it ended and offers to restart it. */
export interface ReplayView {
  readonly state: 'running' | 'ended';
  /** Virtual ms at which the replay stops. */
  readonly endMs: number;
  /** Restarts automatically when it ends (`--loop`). */
  readonly loop: boolean;
  /** 1 for the first run, +1 per restart. */
  readonly run: number;
  /** Where the page POSTs to restart it (relative to the page). */
  readonly restartPath: string;
}

export interface ClusterView {
  readonly version: typeof CLUSTER_VIEW_VERSION;
  readonly source: 'live' | 'sim';
  /** A replay host's progress; absent on a live cluster. */
  readonly replay?: ReplayView;
  /** Increases with every view a host builds; a patch goes from one to the next. */
  readonly seq: number;
  readonly atMs: number;
  readonly totals: ClusterTotals;
  readonly nodes: readonly NodeView[];
  readonly queues: readonly QueueView[];
  readonly pending: readonly PendingJobView[];
  readonly running: readonly RunningJobView[];
}

/**
 * The change from the view at `fromSeq` to the one at `seq`: nodes replaced whole (8 GPUs a node: finer is not
 * worth it), by their position in the node list, and the tables when they changed. The node set must be the same
 * (a node added or gone changes the layout: hosts send the full view then — `diffViews` says so).
 */
export interface ClusterViewPatch {
  readonly fromSeq: number;
  readonly seq: number;
  readonly atMs: number;
  /** Always carried when the view has one (a few bytes). */
  readonly replay?: ReplayView;
  readonly totals: ClusterTotals;
  readonly nodes: readonly { readonly at: number; readonly node: NodeView }[];
  readonly queues?: readonly QueueView[];
  /** Rows added or changed (by id) and rows gone; the list is then re-sorted by its order (comparePending, compareRunning). */
  readonly pending?: ListDelta<PendingJobView>;
  readonly running?: ListDelta<RunningJobView>;
}

/** The change of a keyed table: thousands of running jobs are not resent because one started. */
export interface ListDelta<T> {
  readonly upsert: readonly T[];
  readonly remove: readonly string[];
}

const byIdOrder = (a: { readonly id: string }, b: { readonly id: string }): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
/** The order of the running table: most GPUs first, then by id. */
export const compareRunning = (a: RunningJobView, b: RunningJobView): number => b.gpuMilli - a.gpuMilli || byIdOrder(a, b);
/** The order of the pending table: highest priority first, then the longest waiting, then by id. */
export const comparePending = (
  a: { readonly priority: number; readonly arrivalMs: number; readonly id: string },
  b: { readonly priority: number; readonly arrivalMs: number; readonly id: string },
): number => b.priority - a.priority || a.arrivalMs - b.arrivalMs || byIdOrder(a, b);

/** The delta from `prev` to `next` (both keyed by id), or undefined when nothing changed. */
export function diffList<T extends { readonly id: string }>(prev: readonly T[], next: readonly T[]): ListDelta<T> | undefined {
  const before = new Map(prev.map((r) => [r.id, r]));
  const upsert: T[] = [];
  const seen = new Set<string>();
  for (const r of next) {
    seen.add(r.id);
    const old = before.get(r.id);
    if (old === undefined || (old !== r && !sameJson(old, r))) upsert.push(r);
  }
  const remove = prev.filter((r) => !seen.has(r.id)).map((r) => r.id);
  return upsert.length === 0 && remove.length === 0 ? undefined : { upsert, remove };
}

/** `list` with `delta` applied, in `order`. */
export function applyListDelta<T extends { readonly id: string }>(
  list: readonly T[],
  delta: ListDelta<T> | undefined,
  order: (a: T, b: T) => number,
): readonly T[] {
  if (delta === undefined) return list;
  const drop = new Set([...delta.remove, ...delta.upsert.map((r) => r.id)]);
  return [...list.filter((r) => !drop.has(r.id)), ...delta.upsert].sort(order);
}

/** A job waiting in a queue, as the host knows it. */
export interface PendingInput {
  readonly id: string;
  readonly queue: string;
  readonly priority: number;
  readonly pods: number;
  readonly gpuMilli: number;
  readonly arrivalMs: number;
  readonly explanation?: string;
  readonly queueReason?: string;
  readonly etaMs?: number;
}

export interface ViewInput {
  readonly source: 'live' | 'sim';
  readonly seq: number;
  readonly atMs: number;
  readonly state: ClusterState;
  /** Queue specs by name (Queue objects); queues named only by jobs get a default (unlimited) one. */
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly pending: readonly PendingInput[];
  /** Start time of running jobs, by job id, when the host knows it. */
  readonly startedMs?: ReadonlyMap<string, number>;
  /** The queue of a gang when its PodGroup names one (live: the pods' queue label otherwise, as the allocation carries). */
  readonly gangQueue?: (gang: string) => string | undefined;
  /** At most this many pending rows (the oldest first after priority); default 1000. Totals count them all. */
  readonly maxPending?: number;
  readonly replay?: ReplayView;
}

/** The job of an allocation: `gang:<gang>` for members of a gang, the pod otherwise (the queue's job ids). */
export function jobOfAllocation(a: Allocation): string {
  return a.gang === undefined ? a.podId : `gang:${a.gang}`;
}

const unlimited = (x: number): Milli => (Number.isFinite(x) ? x : null);

const queueOf = (a: Allocation, gangQueue: ViewInput['gangQueue']): string =>
  a.gang === undefined || gangQueue === undefined ? a.queue : (gangQueue(a.gang) ?? a.queue);

/** One node's view from its state. */
export function nodeView(n: NodeState, gangQueue?: ViewInput['gangQueue']): NodeView {
  const spec = n.spec;
  const count = spec.gpus.length;
  const used = new Array<number>(count).fill(0);
  const holders: string[][] = Array.from({ length: count }, () => []);
  const pods: PodOnNode[] = [];
  for (const a of n.allocations.values()) {
    if (a.gpus.length === 0 || a.gpuMilli === 0) continue;
    pods.push({ pod: a.podId, job: jobOfAllocation(a), queue: queueOf(a, gangQueue), gpus: a.gpus, gpuMilli: a.gpuMilli });
  }
  // Allocation order is insertion order in the state; sort so that equal states give equal views.
  pods.sort((x, y) => (x.pod < y.pod ? -1 : x.pod > y.pod ? 1 : 0));
  for (const p of pods) {
    for (const g of p.gpus) {
      if (g < 0 || g >= count) continue;
      used[g] = (used[g] as number) + p.gpuMilli;
      (holders[g] as string[]).push(p.pod);
    }
  }
  const gpus: GpuView[] = [];
  for (let i = 0; i < count; i++) {
    const healthy = n.gpuUsable[i] === 1;
    const u = used[i] as number;
    gpus.push({
      index: i,
      island: spec.topology.islandOf[i] ?? i,
      usedMilli: u,
      healthy,
      status: !healthy ? 'unhealthy' : u === 0 ? 'free' : u >= 1000 ? 'whole' : 'fraction',
      pods: holders[i] as string[],
    });
  }
  const l = spec.location;
  return {
    name: spec.name,
    zone: l.zone,
    block: l.block,
    rack: l.rack,
    ...(l.nvlinkDomain === undefined ? {} : { nvlinkDomain: l.nvlinkDomain }),
    model: spec.gpus[0]?.model ?? '',
    unschedulable: spec.unschedulable,
    gpus,
    pods,
  };
}

/** Where a job's allocations sit: the narrowest domain holding them all. */
export function spanOf(state: ClusterState, allocations: readonly Allocation[]): Span {
  const nodes = new Set(allocations.map((a) => a.node));
  if (nodes.size === 1) {
    const n = state.node(allocations[0]?.node ?? '');
    const islands = new Set<number>();
    for (const a of allocations) for (const g of a.gpus) islands.add(n?.spec.topology.islandOf[g] ?? g);
    return islands.size <= 1 ? 'island' : 'node';
  }
  const specs = [...nodes].map((name) => state.node(name)?.spec);
  for (const level of ['nvlink-domain', 'rack', 'block', 'zone'] as const) {
    const keys = new Set(specs.map((s) => (s === undefined ? '' : domainKey(s, level))));
    // A node outside a multi-node NVLink domain is its own domain: two such nodes never share one.
    if (keys.size === 1 && (level !== 'nvlink-domain' || specs[0]?.location.nvlinkDomain !== undefined)) return level;
  }
  return 'cluster';
}

/**
 * The GPU count of the largest NVLink domain per GPU model: a multi-node NVLink domain whole (per model), else
 * the largest NVLink island of one node (1 on a PCIe-only node: each GPU its own island).
 */
export function largestNvlinkDomains(state: ClusterState): Map<string, number> {
  const multi = new Map<string, number>();
  const out = new Map<string, number>();
  const raise = (model: string, n: number): void => void out.set(model, Math.max(out.get(model) ?? 0, n));
  for (const n of state.nodes) {
    const spec = n.spec;
    const model = spec.gpus[0]?.model ?? '';
    if (spec.gpus.length === 0) continue;
    if (spec.location.nvlinkDomain !== undefined) {
      const key = `${domainKey(spec, 'nvlink-domain')}\u0000${model}`;
      const total = (multi.get(key) ?? 0) + spec.gpus.length;
      multi.set(key, total);
      raise(model, total);
      continue;
    }
    const sizes = new Map<number, number>();
    spec.gpus.forEach((_, i) => {
      const island = spec.topology.islandOf[i] ?? i;
      sizes.set(island, (sizes.get(island) ?? 0) + 1);
    });
    raise(model, Math.max(...sizes.values()));
  }
  return out;
}

/** The largest NVLink domain that a job on these allocations' GPU models could have had. */
function largestFor(state: ClusterState, allocs: readonly Allocation[], largest: ReadonlyMap<string, number>): number {
  let m = 0;
  for (const a of allocs) m = Math.max(m, largest.get(state.node(a.node)?.spec.gpus[0]?.model ?? '') ?? 0);
  return m;
}

/** GPU devices held by a job's allocations (two pods sharing a GPU count it once). */
function devicesOf(allocs: readonly Allocation[]): number {
  const seen = new Set<string>();
  for (const a of allocs) for (const g of a.gpus) seen.add(`${a.node}\u0000${g}`);
  return seen.size;
}

const SPAN_ORDER: readonly Span[] = ['island', 'node', 'nvlink-domain', 'rack', 'block', 'zone', 'cluster'];
const within = (s: Span, level: Span): boolean => SPAN_ORDER.indexOf(s) <= SPAN_ORDER.indexOf(level);

/** Running rows of the last build with the allocations they were made from (ClusterViewTracker keeps one). */
export type RunningRowCache = Map<string, { readonly allocs: readonly Allocation[]; readonly row: RunningJobView }>;

/** The whole view. */
export function buildClusterView(input: ViewInput): ClusterView {
  return { ...buildTables(input), nodes: input.state.nodes.map((n) => nodeView(n, input.gangQueue)) };
}

/**
 * Everything but the node views: totals, queues, pending and running jobs. O(nodes + allocations), without a
 * view object per GPU, so that a live update that changed a few nodes does not pay for all of them.
 */
export function buildTables(input: ViewInput, rows?: RunningRowCache): Omit<ClusterView, 'nodes'> {
  const { state } = input;
  const nextRows: RunningRowCache | undefined = rows === undefined ? undefined : new Map();
  // Running jobs: every GPU-holding allocation, grouped by job.
  const byJob = new Map<string, Allocation[]>();
  let gpus = 0;
  let healthyGpus = 0;
  let usedGpuMilli = 0;
  for (const n of state.nodes) {
    gpus += n.gpuUsable.length;
    healthyGpus += n.usableGpuCount();
    for (const a of n.allocations.values()) {
      if (a.gpus.length === 0 || a.gpuMilli === 0) continue;
      usedGpuMilli += a.gpus.length * a.gpuMilli;
      const id = jobOfAllocation(a);
      const list = byJob.get(id);
      if (list === undefined) byJob.set(id, [a]);
      else list.push(a);
    }
  }
  const running: RunningJobView[] = [];
  // O(nodes), and a node set that changes (a node added) changes the answer: computed per build.
  const largest = largestNvlinkDomains(state);
  const usedByQueue = new Map<string, number>();
  const runningByQueue = new Map<string, number>();
  for (const [id, allocs] of byJob) {
    const first = allocs[0];
    const queue = first === undefined ? 'default' : queueOf(first, input.gangQueue);
    const start = input.startedMs?.get(id);
    // A running job's allocations are the same objects until it changes: its row is reused, and the patch's
    // delta then skips it by identity (thousands of rows are not rebuilt and compared on every bind).
    const cached = rows?.get(id);
    let row: RunningJobView;
    if (
      cached !== undefined &&
      cached.row.queue === queue &&
      cached.row.startMs === start &&
      cached.row.largestNvlinkDomainGpus === largestFor(state, allocs, largest) &&
      cached.allocs.length === allocs.length &&
      cached.allocs.every((a, i) => a === allocs[i])
    )
      row = cached.row;
    else {
      const gpuMilli = allocs.reduce((s, a) => s + a.gpus.length * a.gpuMilli, 0);
      const span = spanOf(state, allocs);
      row = {
        id,
        queue,
        pods: allocs.length,
        gpuMilli,
        nodes: [...new Set(allocs.map((a) => a.node))].sort(),
        span,
        oneNvlinkDomain:
          span === 'island' || span === 'nvlink-domain' || (span === 'node' && state.node(allocs[0]?.node ?? '')?.spec.location.nvlinkDomain !== undefined),
        oneRack: within(span, 'rack'),
        gpus: devicesOf(allocs),
        largestNvlinkDomainGpus: largestFor(state, allocs, largest),
        ...(start === undefined ? {} : { startMs: start }),
      };
    }
    nextRows?.set(id, { allocs, row });
    running.push(row);
    usedByQueue.set(queue, (usedByQueue.get(queue) ?? 0) + row.gpuMilli);
    runningByQueue.set(queue, (runningByQueue.get(queue) ?? 0) + 1);
  }
  if (rows !== undefined && nextRows !== undefined) {
    rows.clear();
    for (const [k, v] of nextRows) rows.set(k, v);
  }
  running.sort(compareRunning);

  const pendingByQueue = new Map<string, { jobs: number; gpuMilli: number }>();
  for (const p of input.pending) {
    const e = pendingByQueue.get(p.queue) ?? { jobs: 0, gpuMilli: 0 };
    e.jobs++;
    e.gpuMilli += p.gpuMilli;
    pendingByQueue.set(p.queue, e);
  }
  const specs = new Map(input.queues);
  for (const q of [...usedByQueue.keys(), ...pendingByQueue.keys()]) if (!specs.has(q)) specs.set(q, makeQueue(q));
  const ordered = [...specs.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const deserved = deservedGpu(
    ordered.map((queue) => ({ queue, demandGpuMilli: (usedByQueue.get(queue.name) ?? 0) + (pendingByQueue.get(queue.name)?.gpuMilli ?? 0) })),
    healthyGpus * 1000,
  );
  const queues: QueueView[] = ordered.map((q) => {
    const used = usedByQueue.get(q.name) ?? 0;
    const pend = pendingByQueue.get(q.name);
    return {
      name: q.name,
      ...(q.cohort === undefined ? {} : { cohort: q.cohort }),
      weight: q.weight,
      nominalGpuMilli: unlimited(q.nominal.gpuMilli),
      borrowingLimitGpuMilli: unlimited(q.borrowingLimit.gpuMilli),
      usedGpuMilli: used,
      borrowedGpuMilli: borrowedBy(q, { gpuMilli: used, cpuMilli: 0, memoryMiB: 0 }).gpuMilli,
      fairShareGpuMilli: Math.round(deserved.get(q.name) ?? 0),
      pendingGpuMilli: pend?.gpuMilli ?? 0,
      pendingJobs: pend?.jobs ?? 0,
      runningJobs: runningByQueue.get(q.name) ?? 0,
      defined: input.queues.has(q.name),
    };
  });

  const pending: PendingJobView[] = [...input.pending]
    .sort(comparePending)
    .slice(0, input.maxPending ?? 1000)
    .map((p) => ({
      id: p.id,
      queue: p.queue,
      priority: p.priority,
      pods: p.pods,
      gpuMilli: p.gpuMilli,
      arrivalMs: p.arrivalMs,
      explanation: p.explanation ?? 'not tried yet',
      ...(p.queueReason === undefined ? {} : { queueReason: p.queueReason }),
      ...(p.etaMs === undefined ? {} : { etaMs: p.etaMs }),
    }));

  return {
    version: CLUSTER_VIEW_VERSION,
    source: input.source,
    ...(input.replay === undefined ? {} : { replay: input.replay }),
    seq: input.seq,
    atMs: input.atMs,
    totals: { nodes: state.nodes.length, gpus, healthyGpus, usedGpuMilli, pendingJobs: input.pending.length, runningJobs: running.length },
    queues,
    pending,
    running,
  };
}

const replayOf = (v: { readonly replay?: ReplayView }): { replay?: ReplayView } => (v.replay === undefined ? {} : { replay: v.replay });

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

function sameNode(a: NodeView, b: NodeView): boolean {
  if (a.name !== b.name || a.unschedulable !== b.unschedulable || a.pods.length !== b.pods.length || a.gpus.length !== b.gpus.length) return false;
  for (let i = 0; i < a.gpus.length; i++) {
    const x = a.gpus[i] as GpuView;
    const y = b.gpus[i] as GpuView;
    if (x.usedMilli !== y.usedMilli || x.healthy !== y.healthy || x.pods.length !== y.pods.length) return false;
  }
  return sameJson(a.pods, b.pods);
}

/**
 * The patch from `prev` to `next`, or undefined when the node list differs (a node added, gone or moved:
 * the renderer must lay the heatmap out again, so the host sends `next` whole).
 */
export function diffViews(prev: ClusterView, next: ClusterView): ClusterViewPatch | undefined {
  if (prev.nodes.length !== next.nodes.length) return undefined;
  const nodes: { at: number; node: NodeView }[] = [];
  for (let i = 0; i < next.nodes.length; i++) {
    const a = prev.nodes[i] as NodeView;
    const b = next.nodes[i] as NodeView;
    if (
      a.name !== b.name ||
      a.gpus.length !== b.gpus.length ||
      a.rack !== b.rack ||
      a.zone !== b.zone ||
      a.block !== b.block ||
      a.nvlinkDomain !== b.nvlinkDomain
    )
      return undefined;
    if (!sameNode(a, b)) nodes.push({ at: i, node: b });
  }
  return { fromSeq: prev.seq, seq: next.seq, atMs: next.atMs, ...replayOf(next), totals: next.totals, nodes, ...changedTables(prev, next) };
}

/** Whether a patch changes nothing but the time (hosts skip sending those). */
export function emptyPatch(p: ClusterViewPatch): boolean {
  return p.nodes.length === 0 && p.queues === undefined && p.pending === undefined && p.running === undefined;
}

/** `view` with `patch` applied; an error when the patch does not start from this view. */
export function applyPatch(view: ClusterView, patch: ClusterViewPatch): ClusterView {
  if (patch.fromSeq !== view.seq) throw new Error(`cluster view patch from seq ${patch.fromSeq} does not apply to seq ${view.seq}`);
  const nodes = [...view.nodes];
  for (const { at, node } of patch.nodes) {
    if (at < 0 || at >= nodes.length || nodes[at]?.name !== node.name) throw new Error(`cluster view patch: node ${node.name} is not at position ${at}`);
    nodes[at] = node;
  }
  return {
    ...view,
    seq: patch.seq,
    atMs: patch.atMs,
    ...replayOf(patch),
    totals: patch.totals,
    nodes,
    queues: patch.queues ?? view.queues,
    pending: applyListDelta(view.pending, patch.pending, comparePending),
    running: applyListDelta(view.running, patch.running, compareRunning),
  };
}

function optional<K extends string, V>(key: K, v: V | undefined): { [k in K]?: V } {
  return (v === undefined ? {} : { [key]: v }) as { [k in K]?: V };
}

/** The tables of a patch: those that differ from `prev`. */
function changedTables(prev: ClusterView, next: Omit<ClusterView, 'nodes'>): Pick<ClusterViewPatch, 'queues' | 'pending' | 'running'> {
  return {
    ...(sameJson(prev.queues, next.queues) ? {} : { queues: next.queues }),
    ...optional('pending', diffList(prev.pending, next.pending)),
    ...optional('running', diffList(prev.running, next.running)),
  };
}

/**
 * Keeps the last view of one host and turns the next inputs into patches. With the same ClusterState object
 * as last time only the nodes its change log names are rebuilt (an update costs the nodes that changed, not
 * 80,000 GPUs); a new state object (the live cache rebuilt it) is built whole and diffed.
 */
export class ClusterViewTracker {
  private last: ClusterView | undefined;
  private lastState: ClusterState | undefined;
  private lastStateSeq = 0;
  private seq = 0;
  private readonly rows: RunningRowCache = new Map();

  /** The current view (undefined before the first update). */
  get view(): ClusterView | undefined {
    return this.last;
  }

  /** Builds the next view; `patch` is undefined for the first view and when the node list changed (send `view` whole). */
  update(input: Omit<ViewInput, 'seq'>): { readonly view: ClusterView; readonly patch?: ClusterViewPatch } {
    const seq = ++this.seq;
    const prev = this.last;
    const state = input.state;
    let view: ClusterView;
    let patch: ClusterViewPatch | undefined;
    const changed = prev !== undefined && this.lastState === state ? changedNodes(state, this.lastStateSeq) : undefined;
    if (prev !== undefined && changed !== undefined) {
      const tables = buildTables({ ...input, seq }, this.rows);
      const nodes = [...prev.nodes];
      const patched: { at: number; node: NodeView }[] = [];
      for (const idx of changed) {
        const node = nodeView(state.nodes[idx] as NodeState, input.gangQueue);
        if (!sameNode(prev.nodes[idx] as NodeView, node)) {
          nodes[idx] = node;
          patched.push({ at: idx, node });
        }
      }
      view = { ...tables, nodes };
      patch = { fromSeq: prev.seq, seq, atMs: view.atMs, ...replayOf(view), totals: view.totals, nodes: patched, ...changedTables(prev, tables) };
    } else {
      view = { ...buildTables({ ...input, seq }, this.rows), nodes: state.nodes.map((n) => nodeView(n, input.gangQueue)) };
      patch = prev === undefined ? undefined : diffViews(prev, view);
    }
    this.last = view;
    this.lastState = state;
    this.lastStateSeq = state.seq;
    return patch === undefined ? { view } : { view, patch };
  }
}

/** Node indices changed since `since` (deduplicated, ascending), or undefined when the change log no longer reaches back. */
function changedNodes(state: ClusterState, since: number): number[] | undefined {
  const set = new Set<number>();
  if (!state.forEachChange(since, (i) => set.add(i))) return undefined;
  return [...set].sort((a, b) => a - b);
}

/**
 * Pending rows from the queue's jobs (the simulator's and the live scheduler's QueuedJob), with the last cycle's
 * wait per job (its reason kind and message) and the forward run's expected starts.
 */
export function pendingFromJobs(jobs: readonly QueuedJob[], waiting: ReadonlyMap<string, Waiting>, eta: ReadonlyMap<string, number>): PendingInput[] {
  return jobs.map((j) => {
    const w = waiting.get(j.id);
    const at = eta.get(j.id);
    return {
      id: j.id,
      queue: j.queue,
      priority: j.priority,
      pods: j.gang.members.length,
      gpuMilli: jobResources(j).gpuMilli,
      arrivalMs: j.arrivalMs,
      ...(w === undefined ? {} : { explanation: w.message, queueReason: w.reason }),
      ...(at === undefined ? {} : { etaMs: at }),
    };
  });
}

const HELD = /^queue \S+ holds \S+ \(([a-z-]+)\): (.*)$/s;

/**
 * A wait message as the spine writes it into a pod's PodScheduled condition (`queue Q holds NAME (reason): why`,
 * or the bare explanation when the queue has no Queue object) split into the reason kind and the one-line why.
 */
export function splitWaitMessage(message: string): { readonly explanation: string; readonly queueReason?: string } {
  const m = HELD.exec(message);
  const line = (s: string): string => s.split('\n')[0] ?? s;
  return m === null ? { explanation: line(message) } : { explanation: line(m[2] as string), queueReason: m[1] as string };
}
