/**
 * What a placement is worth to a data-parallel training job: the predicted time of one training step on the
 * GPUs the job actually got (issue 19, ADR 0103).
 *
 *   step = compute + exposed communication
 *   compute = tokens per GPU per step × FLOPs per token / (peak × MFU)
 *   FLOPs per token = 6·P (+ 12·layers·d_model·seq for attention, as llm-foundry counts MFU)
 *
 * Communication is the gradient all-reduce (DDP) or the all-gather + reduce-scatter (FSDP, 1.5× the bytes),
 * cut in buckets (DDP's 25 MB default) and timed with NCCL's alpha–beta model per bucket:
 *   ring: 2(n−1)·α + 2(n−1)/n · S / B
 *   tree: 2(⌈log2 nodes⌉ + g−1)·α + 2(n−1)/n · S / (B · TREE_BW_FACTOR)   (only across nodes, as NCCL does)
 * NCCL takes the faster of the two per size; so does the model. B is the bus bandwidth of the slowest link of
 * the ring: inside a node the ring bottleneck over the job's GPUs there (NVSwitch, NVLink, PCIe switch,
 * host bridge, cross-socket: `ringBottleneckGBps`), between nodes the NICs of the job's GPUs on the node with
 * the fewest of them, at the network class of the narrowest level all nodes share. Line rates are derated
 * to what NCCL achieves (LINK_EFFICIENCY). α is the per-hop latency of the slowest hop.
 *
 * Overlap: DDP all-reduces each bucket as soon as the backward pass has produced it, so only what does not
 * fit under the backward pass — and never less than the last bucket — is exposed. FSDP prefetches in the
 * forward pass too (the whole compute hides communication), with one layer's unit exposed.
 *
 * Pure: numbers in, numbers out; the figures and their sources are in docs/adr/0103-step-time-model.md.
 */
import { nodeGpuModel, type NodeSpec } from '../model/node.ts';
import { bestGpuSet } from '../model/gpu-sets.ts';
import { DEFAULT_NETWORK_GBPS, ringBottleneckGBps, type LinkClass, type NodeGpuTopology, type NodeLocation, type TopologyLevel } from '../model/topology.ts';

/** Dense BF16/FP16 tensor-core peak, TFLOP/s (vendor data sheets, no sparsity). */
export const GPU_PEAK_TFLOPS: Readonly<Record<string, number>> = {
  'H100-SXM': 989,
  H200: 989,
  'A100-80G': 312,
  'A100-40G': 312,
  A800: 312,
  A10: 125,
  L4: 121,
  T4: 65,
  V100: 125,
  V100M16: 125,
  V100M32: 125,
  P100: 18.7,
};

/**
 * Model FLOPs utilisation of the compute part, per GPU model: llm-foundry's published single-node MFU at
 * sequence length 2048 (A100-80GB 1B/3B/7B: 59.9/62.1/64.2 %; H100 1B/3B: 41.8/43.7 %), rounded down to one
 * value per generation. Other GPUs take the A100 figure.
 */
export const GPU_MFU: Readonly<Record<string, number>> = { 'H100-SXM': 0.42, H200: 0.42 };
export const DEFAULT_MFU = 0.6;

/** Share of the line rate NCCL's bus bandwidth reaches (NVLink: ~20 % protocol overhead, nccl-tests#212). */
export const LINK_EFFICIENCY: Readonly<Record<LinkClass | 'network', number>> = {
  nvswitch: 0.8,
  nvlink: 0.8,
  // The PCIe classes' figures are already effective peer-to-peer rates (seed 000 §2.4: ~16 GB/s).
  'pcie-switch': 1,
  numa: 1,
  'cross-socket': 1,
  // nccl-tests#119: 3×8 A100 with 4×HDR per node, 84.8 GB/s average and 96 GB/s peak busbw of 100 GB/s line.
  network: 0.9,
};

/** Per-hop latency α by link class, µs (seed 000 §2.4: NVLink < 2 µs). */
export const LINK_LATENCY_US: Readonly<Record<LinkClass, number>> = { nvswitch: 2, nvlink: 2, 'pcie-switch': 3, numa: 4, 'cross-socket': 6 };

/** NCCL's tree moves the same bytes per rank as the ring but pipelines less well at large sizes. */
export const TREE_BW_FACTOR = 0.85;

export type NetworkLevel = Exclude<TopologyLevel, 'node'> | 'cluster';

/** Between nodes: per-NIC line rate (GB/s) and latency (µs) by the narrowest level two nodes share. */
export interface NetworkModel {
  readonly nicGBps: Readonly<Record<NetworkLevel, number>>;
  readonly latencyUs: Readonly<Record<NetworkLevel, number>>;
  /** NICs per node usable by one job (a GPU's traffic leaves through its own NIC, up to this many). */
  readonly nicsPerNode: number;
}

/** The cluster default of model/topology.ts: one 400 Gb/s NIC per GPU; InfiniBand-class latencies. */
export const DEFAULT_NETWORK: NetworkModel = {
  nicGBps: { ...DEFAULT_NETWORK_GBPS },
  latencyUs: { 'nvlink-domain': 3, rack: 8, block: 12, zone: 25, cluster: 80 },
  nicsPerNode: 8,
};

/** A data-parallel training job: what it computes and what it exchanges per step. */
export interface TrainingModel {
  readonly name: string;
  /** Parameters. */
  readonly params: number;
  /** Tokens each GPU processes per optimizer step (micro-batch × sequence length × accumulation). */
  readonly tokensPerGpuPerStep: number;
  /** For the attention FLOPs (12·layers·d_model·seq per token); absent: 6·P only. */
  readonly layers?: number;
  readonly dModel?: number;
  readonly seqLen?: number;
  /** ddp: all-reduce of gradients; fsdp: all-gather (fwd, bwd) + reduce-scatter, 1.5× the all-reduce bytes. */
  readonly parallelism: 'ddp' | 'fsdp';
  /** Bytes per gradient element on the wire (DDP with AMP keeps FP32 gradients: 4; BF16: 2). */
  readonly gradBytes: number;
  /** DDP's bucket_cap_mb (25 MB default). */
  readonly bucketMB?: number;
  /** Activation checkpointing: one more forward pass per step (compute × 4/3). */
  readonly recompute?: boolean;
}

/** Where the job's GPUs are: one entry per node it uses, with the GPU indices it holds there. */
export interface JobNodeShare {
  readonly name: string;
  readonly gpuModel: string;
  readonly topology: NodeGpuTopology;
  readonly location: NodeLocation;
  readonly gpus: readonly number[];
}

export interface StepTime {
  readonly gpus: number;
  readonly nodes: number;
  readonly computeSec: number;
  /** All communication of a step (sum over buckets). */
  readonly commSec: number;
  /** The part of it not hidden behind compute. */
  readonly exposedCommSec: number;
  readonly stepSec: number;
  /** Whole job: tokens per second over all its GPUs. */
  readonly tokensPerSec: number;
  /** Share of the step the GPUs compute (compute / step), 0–1. */
  readonly gpuUtilization: number;
  /** Bus bandwidth the collective runs at (GB/s) and what limits it. */
  readonly busGBps: number;
  readonly bottleneck: LinkClass | NetworkLevel | 'none';
  readonly algorithm: 'ring' | 'tree' | 'none';
}

export function flopsPerToken(m: TrainingModel): number {
  const attn = m.layers !== undefined && m.dModel !== undefined && m.seqLen !== undefined ? 12 * m.layers * m.dModel * m.seqLen : 0;
  return 6 * m.params + attn;
}

/** Seconds of compute per step on one GPU of `gpuModel`. Slowest GPU of a mixed job sets the pace. */
export function computeSec(m: TrainingModel, gpuModel: string): number {
  const peak = GPU_PEAK_TFLOPS[gpuModel] ?? GPU_PEAK_TFLOPS['A100-80G'] ?? 312;
  const mfu = GPU_MFU[gpuModel] ?? DEFAULT_MFU;
  const passes = m.recompute === true ? 4 / 3 : 1;
  return (passes * m.tokensPerGpuPerStep * flopsPerToken(m)) / (peak * 1e12 * mfu);
}

/** The narrowest level every node of `locs` shares. */
export function sharedLevel(locs: readonly NodeLocation[]): NetworkLevel {
  const first = locs[0];
  if (first === undefined) return 'cluster';
  const all = (f: (l: NodeLocation) => string | undefined): boolean => {
    const v = f(first);
    return v !== undefined && locs.every((l) => f(l) === v);
  };
  if (all((l) => l.nvlinkDomain)) return 'nvlink-domain';
  if (all((l) => `${l.zone}/${l.block}/${l.rack}`)) return 'rack';
  if (all((l) => `${l.zone}/${l.block}`)) return 'block';
  if (all((l) => l.zone)) return 'zone';
  return 'cluster';
}

/** Slowest link class on a ring through `gpus` of one node whose bandwidth is `gbps`. */
function classAt(t: NodeGpuTopology, gpus: readonly number[], gbps: number): LinkClass {
  let worst: LinkClass = 'nvswitch';
  const order: readonly LinkClass[] = ['nvswitch', 'nvlink', 'pcie-switch', 'numa', 'cross-socket'];
  for (let i = 0; i < gpus.length; i++) {
    for (let j = i + 1; j < gpus.length; j++) {
      const a = gpus[i] as number;
      const b = gpus[j] as number;
      if ((t.bandwidthGBps[a * t.gpuCount + b] ?? 0) !== gbps) continue;
      const c = t.links[a * t.gpuCount + b] ?? 'cross-socket';
      if (order.indexOf(c) > order.indexOf(worst)) worst = c;
    }
  }
  return worst;
}

interface Fabric {
  readonly n: number;
  readonly nodes: number;
  readonly maxPerNode: number;
  readonly busGBps: number;
  readonly alphaUs: number;
  readonly intraAlphaUs: number;
  readonly netAlphaUs: number;
  readonly bottleneck: LinkClass | NetworkLevel | 'none';
}

/** Bus bandwidth and latencies of the collective over `shares`. */
export function fabricOf(shares: readonly JobNodeShare[], net: NetworkModel = DEFAULT_NETWORK): Fabric {
  const n = shares.reduce((s, x) => s + x.gpus.length, 0);
  let bus = Number.POSITIVE_INFINITY;
  let bottleneck: LinkClass | NetworkLevel | 'none' = 'none';
  let intraAlpha = 0;
  let maxPerNode = 0;
  for (const s of shares) {
    maxPerNode = Math.max(maxPerNode, s.gpus.length);
    if (s.gpus.length < 2) continue;
    const raw = ringBottleneckGBps(s.topology, s.gpus);
    const cls = classAt(s.topology, s.gpus, raw);
    const eff = raw * (LINK_EFFICIENCY[cls] ?? 1);
    intraAlpha = Math.max(intraAlpha, LINK_LATENCY_US[cls]);
    if (eff < bus) {
      bus = eff;
      bottleneck = cls;
    }
  }
  let netAlpha = 0;
  if (shares.length > 1) {
    const level = sharedLevel(shares.map((s) => s.location));
    const nics = Math.min(net.nicsPerNode, ...shares.map((s) => s.gpus.length));
    const eff = net.nicGBps[level] * nics * LINK_EFFICIENCY.network;
    netAlpha = net.latencyUs[level];
    if (eff < bus) {
      bus = eff;
      bottleneck = level;
    }
  }
  return {
    n,
    nodes: shares.length,
    maxPerNode,
    busGBps: Number.isFinite(bus) ? bus : 0,
    alphaUs: Math.max(intraAlpha, netAlpha),
    intraAlphaUs: intraAlpha,
    netAlphaUs: netAlpha,
    bottleneck,
  };
}

/** One all-reduce of `bytes` over the fabric: the faster of ring and (across nodes) tree. */
export function allReduceSec(bytes: number, f: Fabric): { sec: number; algorithm: 'ring' | 'tree' | 'none' } {
  if (f.n < 2 || bytes <= 0) return { sec: 0, algorithm: 'none' };
  const volume = (2 * (f.n - 1)) / f.n;
  const ring = 2 * (f.n - 1) * f.alphaUs * 1e-6 + (volume * bytes) / (f.busGBps * 1e9);
  if (f.nodes < 2) return { sec: ring, algorithm: 'ring' };
  const depth = Math.ceil(Math.log2(f.nodes));
  const tree = 2 * (depth * f.netAlphaUs + (f.maxPerNode - 1) * f.intraAlphaUs) * 1e-6 + (volume * bytes) / (f.busGBps * TREE_BW_FACTOR * 1e9);
  return tree < ring ? { sec: tree, algorithm: 'tree' } : { sec: ring, algorithm: 'ring' };
}

/** The predicted step of `m` on `shares`. */
export function stepTime(m: TrainingModel, shares: readonly JobNodeShare[], net: NetworkModel = DEFAULT_NETWORK): StepTime {
  const f = fabricOf(shares, net);
  // A job spread over GPU models runs at the pace of its slowest GPU (synchronous data parallelism).
  const compute = Math.max(0, ...shares.map((s) => computeSec(m, s.gpuModel)));
  const gradBytes = m.params * m.gradBytes;
  const bucket = (m.bucketMB ?? 25) * 1e6;
  const buckets = Math.max(1, Math.ceil(gradBytes / bucket));
  const full = allReduceSec(Math.min(bucket, gradBytes), f);
  const lastBytes = gradBytes - (buckets - 1) * bucket;
  const last = allReduceSec(lastBytes, f);
  const scale = m.parallelism === 'fsdp' ? 1.5 : 1;
  const comm = scale * ((buckets - 1) * full.sec + last.sec);
  // DDP hides communication behind the backward pass (2/3 of compute); FSDP also behind the forward pass.
  const hiding = m.parallelism === 'fsdp' ? compute : (2 / 3) * compute;
  const exposed = f.n < 2 ? 0 : Math.max(scale * last.sec, comm - hiding);
  const step = compute + exposed;
  const n = Math.max(1, f.n);
  return {
    gpus: f.n,
    nodes: f.nodes,
    computeSec: compute,
    commSec: comm,
    exposedCommSec: exposed,
    stepSec: step,
    tokensPerSec: step > 0 ? (n * m.tokensPerGpuPerStep) / step : 0,
    gpuUtilization: step > 0 ? compute / step : 0,
    busGBps: f.busGBps,
    bottleneck: f.bottleneck,
    algorithm: full.algorithm,
  };
}

/** Published MPT configurations (llm-foundry yamls): parameters, layers and width. */
export const REFERENCE_MODELS = {
  'bert-large': { params: 340e6, layers: 24, dModel: 1024 },
  'gpt-125m': { params: 125e6, layers: 12, dModel: 768 },
  'gpt-350m': { params: 356e6, layers: 24, dModel: 1024 },
  'gpt-760m': { params: 760e6, layers: 24, dModel: 1536 },
  'gpt-1b': { params: 1.316e9, layers: 24, dModel: 2048 },
  'gpt-3b': { params: 2.652e9, layers: 32, dModel: 2560 },
  'gpt-7b': { params: 6.659e9, layers: 32, dModel: 4096 },
} as const;
export type ReferenceModel = keyof typeof REFERENCE_MODELS;

/** A DDP job of a reference model: `seqLen` tokens × `microBatch` sequences per GPU per step, FP32 gradients. */
/** What a step time depends on of a training model: a key for memos of step times. */
export function trainingModelKey(m: TrainingModel): string {
  return `${m.name}|${m.params}|${m.tokensPerGpuPerStep}|${m.parallelism}|${m.gradBytes}`;
}

export function ddpJob(model: ReferenceModel, seqLen: number, microBatch: number): TrainingModel {
  const r = REFERENCE_MODELS[model];
  return {
    name: model,
    params: r.params,
    layers: r.layers,
    dModel: r.dModel,
    seqLen,
    tokensPerGpuPerStep: seqLen * microBatch,
    parallelism: 'ddp',
    gradBytes: 4,
  };
}

/**
 * The job the scheduler assumes when a gang says nothing about its model: a 1.3B-parameter GPT in DDP with
 * 8 sequences of 2048 tokens per GPU (the size class of the seed's example jobs; ADR 0103).
 */
export const DEFAULT_TRAINING_MODEL: TrainingModel = ddpJob('gpt-1b', 2048, 8);

/**
 * The best layout of `gpus` GPUs on nodes like `like` (its shape, GPU model and location): whole empty nodes
 * filled with the topology's best ring sets, all in one rack — what a perfect scheduler could give the job.
 */
export function idealShares(like: Omit<JobNodeShare, 'gpus' | 'name'>, gpus: number): JobNodeShare[] {
  const per = like.topology.gpuCount;
  const out: JobNodeShare[] = [];
  let left = gpus;
  for (let i = 0; left > 0; i++) {
    const take = Math.min(per, left);
    const free = Array.from({ length: per }, (_, g) => g);
    const set = bestGpuSet(like.topology, free, take) ?? free.slice(0, take);
    out.push({ ...like, name: `ideal-${i}`, gpus: set, location: { zone: like.location.zone, block: like.location.block, rack: like.location.rack } });
    left -= take;
  }
  return out;
}

/** A scheduler's placements of one job (pods → node + GPU indices) as per-node shares of its GPUs. */
export function sharesOf(
  placements: readonly { readonly node: string; readonly gpus: readonly number[] }[],
  nodeOf: (name: string) => NodeSpec | undefined,
): JobNodeShare[] {
  const byNode = new Map<string, number[]>();
  for (const p of placements) {
    const g = byNode.get(p.node) ?? [];
    for (const i of p.gpus) if (!g.includes(i)) g.push(i);
    byNode.set(p.node, g);
  }
  const out: JobNodeShare[] = [];
  for (const [name, gpus] of byNode) {
    const spec = nodeOf(name);
    if (spec === undefined || gpus.length === 0) continue;
    out.push({ name, gpuModel: nodeGpuModel(spec), topology: spec.topology, location: spec.location, gpus: gpus.sort((a, b) => a - b) });
  }
  return out;
}
