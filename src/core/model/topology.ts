/**
 * GPU topology inside a node, as a link class for every GPU pair, and the cluster hierarchy between nodes.
 * Bandwidths are per direction, in GB/s; defaults follow seed 000 §2.4 (PCIe ~16 GB/s, NVLink 3.0 ~300 GB/s).
 */

/** Link classes ordered from fastest to slowest; `nvidia-smi topo -m` names in brackets. */
export const LINK_CLASSES = ['nvswitch', 'nvlink', 'pcie-switch', 'numa', 'cross-socket'] as const;
export type LinkClass = (typeof LINK_CLASSES)[number];

export const DEFAULT_LINK_GBPS: Readonly<Record<LinkClass, number>> = {
  nvswitch: 300, // NVLink 3.0 through NVSwitch (A100); H100 presets override with 450
  nvlink: 100, // direct NVLink bridge(s); per-pair figures come from the link count when known
  'pcie-switch': 16, // PIX/PXB: peer-to-peer under one PCIe switch (seed 000 §2.4)
  numa: 12, // PHB/NODE: through the host bridge of one socket
  'cross-socket': 8, // SYS: across the inter-socket link (UPI/xGMI)
};

/** A NIC of the node and where it sits: under the PCIe switch of a GPU (PIX/PXB) or only on a NUMA node. */
export interface NicPlacement {
  /** The net device name NCCL matches (`mlx5_0`). */
  readonly name: string;
  /** GPU index it shares a PCIe switch with, when any. */
  readonly nearGpu?: number;
  /** NUMA node it hangs off. */
  readonly numa: number;
}

/** What the node agent knows of the node's PCI devices beyond the GPU links: what an NCCL topology file needs. */
export interface NodePci {
  /** GPU PCI bus ids by index (Linux form `0000:07:00.0`). */
  readonly busIds: readonly string[];
  readonly nics: readonly NicPlacement[];
}

export interface NodeGpuTopology {
  readonly gpuCount: number;
  /** linkClass[i * gpuCount + j] for i ≠ j. */
  readonly links: readonly LinkClass[];
  /** bandwidth GB/s per pair, same layout; diagonal unused. */
  readonly bandwidthGBps: readonly number[];
  /** NUMA node of each GPU. */
  readonly numaOf: readonly number[];
  /** PCIe switch id of each GPU (unique per node). */
  readonly pcieSwitchOf: readonly number[];
  /** NVLink island id of each GPU: GPUs joined by NVLink/NVSwitch paths share an island. */
  readonly islandOf: readonly number[];
}

export function linkBetween(t: NodeGpuTopology, a: number, b: number): LinkClass {
  return t.links[a * t.gpuCount + b] ?? 'cross-socket';
}

export function bandwidthBetween(t: NodeGpuTopology, a: number, b: number): number {
  return t.bandwidthGBps[a * t.gpuCount + b] ?? 0;
}

export interface TopologyInput {
  readonly gpuCount: number;
  readonly numaOf: readonly number[];
  readonly pcieSwitchOf: readonly number[];
  /** Explicit pair classes; missing pairs are derived from NUMA/PCIe placement. */
  readonly pair?: (a: number, b: number) => { cls: LinkClass; gbps?: number } | undefined;
  readonly gbps?: Partial<Record<LinkClass, number>>;
}

/** Builds a full topology; pairs without NVLink fall back to PCIe switch, NUMA or cross-socket. */
export function buildTopology(input: TopologyInput): NodeGpuTopology {
  const n = input.gpuCount;
  const links: LinkClass[] = new Array<LinkClass>(n * n).fill('cross-socket');
  const bw: number[] = new Array<number>(n * n).fill(0);
  const gbps = { ...DEFAULT_LINK_GBPS, ...input.gbps };
  for (let a = 0; a < n; a++) {
    for (let b = 0; b < n; b++) {
      if (a === b) continue;
      const explicit = input.pair?.(a, b) ?? input.pair?.(b, a);
      let cls: LinkClass;
      let bandwidth: number;
      if (explicit !== undefined) {
        cls = explicit.cls;
        bandwidth = explicit.gbps ?? gbps[cls];
      } else {
        if (input.pcieSwitchOf[a] === input.pcieSwitchOf[b]) cls = 'pcie-switch';
        else if (input.numaOf[a] === input.numaOf[b]) cls = 'numa';
        else cls = 'cross-socket';
        bandwidth = gbps[cls];
      }
      links[a * n + b] = cls;
      bw[a * n + b] = bandwidth;
    }
  }
  return { gpuCount: n, links, bandwidthGBps: bw, numaOf: [...input.numaOf], pcieSwitchOf: [...input.pcieSwitchOf], islandOf: islands(n, links) };
}

function islands(n: number, links: readonly LinkClass[]): number[] {
  const island = new Array<number>(n).fill(-1);
  let next = 0;
  for (let s = 0; s < n; s++) {
    if (island[s] !== -1) continue;
    const stack = [s];
    island[s] = next;
    while (stack.length > 0) {
      const a = stack.pop() as number;
      for (let b = 0; b < n; b++) {
        const cls = links[a * n + b];
        if (b !== a && island[b] === -1 && (cls === 'nvswitch' || cls === 'nvlink')) {
          island[b] = next;
          stack.push(b);
        }
      }
    }
    next++;
  }
  return island;
}

/** A node without GPU-pair information: every pair is treated as one NUMA domain. */
export function flatTopology(gpuCount: number): NodeGpuTopology {
  return buildTopology({ gpuCount, numaOf: new Array<number>(gpuCount).fill(0), pcieSwitchOf: Array.from({ length: gpuCount }, (_, i) => i) });
}

/**
 * Ring all-reduce bottleneck over `gpus` of one node: the largest bandwidth b such that some ring through
 * all of them uses only links ≥ b. Exact (bitmask Hamiltonian-cycle search), fine for ≤ 16 GPUs.
 * One GPU: Infinity (no communication inside the node).
 */
export function ringBottleneckGBps(t: NodeGpuTopology, gpus: readonly number[]): number {
  const k = gpus.length;
  if (k <= 1) return Number.POSITIVE_INFINITY;
  if (k === 2) return bandwidthBetween(t, gpus[0] as number, gpus[1] as number);
  const levels = new Set<number>();
  for (let i = 0; i < k; i++) for (let j = i + 1; j < k; j++) levels.add(bandwidthBetween(t, gpus[i] as number, gpus[j] as number));
  const sorted = [...levels].sort((x, y) => y - x);
  for (const threshold of sorted) {
    if (hasRing(t, gpus, threshold)) return threshold;
  }
  return 0;
}

function hasRing(t: NodeGpuTopology, gpus: readonly number[], threshold: number): boolean {
  const k = gpus.length;
  const adj = new Array<number>(k).fill(0);
  for (let i = 0; i < k; i++) {
    for (let j = 0; j < k; j++) {
      if (i !== j && bandwidthBetween(t, gpus[i] as number, gpus[j] as number) >= threshold) adj[i] = (adj[i] as number) | (1 << j);
    }
  }
  // reach[mask] = bitset of end vertices v such that a path from vertex 0 covering mask ends at v.
  const full = (1 << k) - 1;
  const reach = new Int32Array(1 << k);
  reach[1] = 1;
  for (let mask = 1; mask <= full; mask += 2) {
    const ends = reach[mask] as number;
    if (ends === 0) continue;
    for (let v = 0; v < k; v++) {
      if ((ends & (1 << v)) === 0) continue;
      let nexts = (adj[v] as number) & ~mask;
      while (nexts !== 0) {
        const u = 31 - Math.clz32(nexts & -nexts);
        nexts &= nexts - 1;
        const nm = mask | (1 << u);
        reach[nm] = (reach[nm] as number) | (1 << u);
      }
    }
  }
  const ends = reach[full] as number;
  return (ends & (adj[0] as number)) !== 0;
}

/**
 * Levels of the cluster hierarchy, from the smallest to the widest. `nvlink-domain` is a multi-node NVLink
 * domain (NVL72-style) inside a rack; a node outside any such domain is its own domain, and then a gang
 * required to stay in one NVLink domain must also stay inside one NVLink island of that node.
 */
export const TOPOLOGY_LEVELS = ['node', 'nvlink-domain', 'rack', 'block', 'zone'] as const;
export type TopologyLevel = (typeof TOPOLOGY_LEVELS)[number];

/** Where a node sits between nodes. A node without `nvlinkDomain` is its own NVLink domain. */
export interface NodeLocation {
  readonly zone: string;
  readonly block: string;
  readonly rack: string;
  /** Multi-node NVLink domain (NVL72-style), nested inside the rack. */
  readonly nvlinkDomain?: string;
}

/** Inter-node bandwidth (GB/s per GPU pair) by the narrowest level two nodes share. */
export const DEFAULT_NETWORK_GBPS = {
  'nvlink-domain': 450, // multi-node NVLink (GB200 NVL72 class)
  rack: 50, // one 400 Gb/s NIC per GPU under the same leaf
  block: 25, // across leaves under one spine (oversubscribed 2:1)
  zone: 12.5,
  cluster: 3,
} as const;

/** GPUs grouped by the fastest path they share without the host bridge, and how many groups a node has. */
export interface FastGroups {
  /**
   * Group of each GPU: its NVLink island when that holds more than one GPU, else its PCIe switch when that does, else
   * one group of the node's other GPUs (a node without topology information is one group).
   */
  readonly of: readonly number[];
  readonly count: number;
}

const fastGroupMemo = new WeakMap<NodeGpuTopology, FastGroups>();

/**
 * The groups a ring can stay in on one node without crossing the host bridge or socket: NVLink islands, and on
 * GPUs without NVLink their PCIe switches. A gang spread one group per node keeps each node's part of the ring
 * there (ADR 0202). Without pair information (flatTopology) nothing tells GPUs apart: one group, no spread.
 */
export function fastGroupsOf(t: NodeGpuTopology): FastGroups {
  const known = fastGroupMemo.get(t);
  if (known !== undefined) return known;
  const islandSize = new Map<number, number>();
  for (const k of t.islandOf) islandSize.set(k, (islandSize.get(k) ?? 0) + 1);
  const switchSize = new Map<number, number>();
  for (const k of t.pcieSwitchOf) switchSize.set(k, (switchSize.get(k) ?? 0) + 1);
  const of = t.islandOf.map((k, g) => {
    if ((islandSize.get(k) ?? 0) > 1) return k;
    const sw = t.pcieSwitchOf[g] ?? -1;
    return (switchSize.get(sw) ?? 0) > 1 ? t.gpuCount + sw : 2 * t.gpuCount;
  });
  const groups: FastGroups = { of, count: new Set(of).size };
  fastGroupMemo.set(t, groups);
  return groups;
}

/**
 * The widest fast group of a node counting only the GPUs `counts` keeps (all of them by default), ties to the lowest
 * group key, and its size; group -1 and size 0 when it keeps none. The spread trial's next node (free GPUs) and the
 * layouts its references measure (all GPUs) pick the group the same way.
 */
export function widestFastGroup(t: NodeGpuTopology, counts?: (gpu: number) => boolean): { group: number; size: number } {
  const { of } = fastGroupsOf(t);
  const size = new Map<number, number>();
  for (let g = 0; g < of.length; g++) if (counts === undefined || counts(g)) size.set(of[g] as number, (size.get(of[g] as number) ?? 0) + 1);
  let group = -1;
  let wide = 0;
  for (const [k, c] of size) if (c > wide || (c === wide && k < group)) [group, wide] = [k, c];
  return { group, size: wide };
}
