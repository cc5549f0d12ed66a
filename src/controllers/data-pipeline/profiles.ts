/**
 * Resource profiles for DataPipeline steps (issue 17, Deliver 4; seed 001 §5: training on A100×4, serving on L4×2,
 * `resource_profile: auto | low-latency | batch-throughput`). A profile turns a step (its kind and model) and the
 * cluster's GPU inventory into GPU model, GPUs per pod, pods, topology and queue, with one user-readable reason a
 * line. The decision rule is ADR 0123:
 *  - training → the biggest NVLink islands whose memory holds the model's training state (weights, gradients,
 *    optimizer), one pod per island, faster GPUs (the step-time model's compute) breaking ties;
 *  - low-latency → the smallest GPUs that hold the weights and the KV cache of the requested concurrency, with the
 *    fewest GPUs a replica, replicas spread over nodes (big islands stay free for training);
 *  - batch-throughput → the most tokens/s per GPU-hour (per price when the cluster gives prices), from the serving
 *    engine model scaled to the model and the GPU;
 *  - auto → training for training steps, low-latency for serving, batch-throughput for batch inference and GPU
 *    containers, CPU for containers without GPUs.
 * Per-step overrides win and are named in the reasons. Pure: plain data in, a value out; no error throws.
 */
import { GPU_MODELS } from '../../core/model/gpu.ts';
import { nodeGpuModel, type NodeSpec } from '../../core/model/node.ts';
import type { TopologyLevel } from '../../core/model/topology.ts';
import { TOPOLOGY_LEVELS } from '../../core/model/topology.ts';
import { computeSec, DEFAULT_TRAINING_MODEL, GPU_PEAK_TFLOPS, type TrainingModel } from '../../core/estimate/step-time.ts';
import { err, ok, type Result } from '../../core/result.ts';
import { LLAMA31_8B_H100, stepSeconds, type EngineModel } from '../../serving/engine-model.ts';
import type { ClusterSummary, GpuPool, ProfileRule } from './model.ts';
import type { FieldError } from './step-cache.ts';

export const RESOURCE_PROFILES = ['auto', 'low-latency', 'batch-throughput'] as const;
export type ResourceProfile = (typeof RESOURCE_PROFILES)[number];
/** The rule a profile resolved to (auto resolves to one of the others). */
export type StepKind = 'training' | 'serving' | 'batch-inference' | 'container';
export type Dtype = 'bf16' | 'fp16' | 'fp8' | 'int8' | 'int4';

export interface StepModel {
  /** Parameters, e.g. 8.03e9. */
  readonly params: number;
  /** Weight precision. Default: bf16. */
  readonly dtype?: Dtype;
  /** KV-cache bytes per token; else from layers × kvHeads × headDim, else estimated from the parameters. */
  readonly kvBytesPerToken?: number;
  readonly layers?: number;
  readonly kvHeads?: number;
  readonly headDim?: number;
}

/** What a profile needs to know of a step: the controller builds it from the step's spec. */
export interface ProfileStep {
  readonly name: string;
  readonly kind: StepKind;
  /** Path of the step in the object, for errors (e.g. `spec.steps[2]`). Default: `steps.<name>`. */
  readonly field?: string;
  readonly model?: StepModel;
  readonly training?: {
    /** full: weights, gradients and Adam state (16 bytes a parameter); lora: frozen weights plus small adapters. Default: full. */
    readonly method?: 'full' | 'lora';
    /** Tokens each GPU processes a step, for the step-time model. Default: the step-time model's default job. */
    readonly tokensPerGpuPerStep?: number;
  };
  readonly serving?: {
    /** Sequences a replica serves at once. Default: 16. */
    readonly concurrency?: number;
    /** Context (prompt + output) tokens a sequence holds in KV. Default: 4096. */
    readonly contextTokens?: number;
    /** Default: 1. */
    readonly replicas?: number;
  };
  /** GPUs a container step asks for; 0 or unset: a CPU step. */
  readonly gpus?: number;
}

/** Per-step choices that win over the profile's. */
export interface ProfileOverrides {
  readonly gpuModels?: readonly string[];
  readonly gpusPerPod?: number;
  readonly pods?: number;
  /** Required topology level, or none. */
  readonly topology?: TopologyLevel | 'none';
  readonly queue?: string;
}

export interface ProfileTopology {
  readonly required?: TopologyLevel;
  readonly preferred?: TopologyLevel;
  /** Spread the pods over nodes (one replica per node where there are enough nodes). */
  readonly spread: boolean;
}

export interface ResolvedProfile {
  /** As asked. */
  readonly profile: ResourceProfile;
  readonly rule: ProfileRule;
  /** Allowed GPU models, the chosen one first; empty for a CPU step. */
  readonly gpuModels: readonly string[];
  readonly gpusPerPod: number;
  readonly pods: number;
  /** Memory each GPU must have for the step, GiB (for gpu.minMemoryGiB). */
  readonly minMemoryGiB?: number;
  readonly topology: ProfileTopology;
  readonly queue?: string;
  /** One line each, user-readable. */
  readonly reasons: readonly string[];
}

const GiB = 1024 ** 3;

/** Share of a GPU's memory the serving engine may use (vLLM's gpu_memory_utilization, as in ADR 0080). */
export const SERVING_MEMORY_FRACTION = 0.9;
/**
 * Memory a serving GPU keeps for activations and CUDA graphs: what ADR 0080's KV capacity of Llama 3.1 8B on an
 * H100 leaves (0.9 × 80 GiB − 16 GB of weights − 435,000 tokens × 128 KiB ≈ 4 GB).
 */
export const SERVING_RESERVE_BYTES = 0.9 * GPU_MODELS['H100-SXM']!.memoryMiB * 1024 ** 2 - 16.06e9 - LLAMA31_8B_H100.kvCapacityTokens * 131_072;
/** Share of a training GPU's memory for the model state; the rest holds activations (with recomputation). */
export const TRAINING_MEMORY_FRACTION = 0.8;
/** Bytes a parameter in full mixed-precision training with Adam: bf16 weights and gradients, fp32 master and moments. */
export const FULL_TRAINING_BYTES_PER_PARAM = 16;
/** LoRA adapters' share of the parameters (with their gradients and Adam state, 16 bytes each); r ≤ 64 stays under 1 %. */
export const LORA_TRAINABLE_SHARE = 0.01;
export const DEFAULT_CONCURRENCY = 16;
export const DEFAULT_CONTEXT_TOKENS = 4096;
/** Parameters of the engine model's calibration model (Llama 3.1 8B). */
const ENGINE_PARAMS = 8.03e9;
/** KV bytes a token of the engine model (Llama 3.1 8B: 32 layers × 8 KV heads × 128 × K and V × 2 bytes). */
const ENGINE_KV_BYTES = 131_072;
/** Tensor-parallel efficiency a doubling of a replica's GPUs (an assumption, ADR 0123: all-reduce per layer). */
export const TP_EFFICIENCY = 0.9;
const TP_SIZES = [1, 2, 4, 8] as const;

const BYTES_PER_PARAM: Readonly<Record<Dtype, number>> = { bf16: 2, fp16: 2, fp8: 1, int8: 1, int4: 0.5 };
/** Compute capability the dtype needs: bf16 tensor cores from Ampere (sm_80), fp8 from Ada/Hopper (sm_89). */
const MIN_CC: Readonly<Record<Dtype, number>> = { bf16: 80, fp16: 0, fp8: 89, int8: 0, int4: 0 };

export function weightsBytes(m: StepModel): number {
  return m.params * BYTES_PER_PARAM[m.dtype ?? 'bf16'];
}

/** KV bytes a token and whether that is an estimate. */
export function kvBytesPerToken(m: StepModel): { bytes: number; estimated: boolean } {
  if (m.kvBytesPerToken !== undefined) return { bytes: m.kvBytesPerToken, estimated: false };
  if (m.layers !== undefined && m.kvHeads !== undefined && m.headDim !== undefined)
    return { bytes: 2 * m.layers * m.kvHeads * m.headDim * 2, estimated: false };
  // Proportional to the parameters from Llama 3.1 8B's figure: over-estimates grouped-query models, never under.
  return { bytes: ENGINE_KV_BYTES * Math.max(1, m.params / ENGINE_PARAMS), estimated: true };
}

export function trainingBytes(m: StepModel, method: 'full' | 'lora'): number {
  return method === 'full' ? m.params * FULL_TRAINING_BYTES_PER_PARAM : weightsBytes(m) + m.params * LORA_TRAINABLE_SHARE * FULL_TRAINING_BYTES_PER_PARAM;
}

/** The GPU inventory of `nodes`: healthy GPUs of schedulable nodes, by model, with NVLink islands and racks. */
export function summarizeCluster(nodes: readonly NodeSpec[], extra: Pick<ClusterSummary, 'pricePerGpuHour' | 'queues'> = {}): ClusterSummary {
  interface Acc {
    memoryMiB: number;
    cc: number;
    nodeGpus: number[];
    islands: number[];
    racks: Map<string, number>;
  }
  const by = new Map<string, Acc>();
  for (const n of nodes) {
    if (n.unschedulable) continue;
    const healthy = n.gpus.filter((g) => g.healthy);
    const model = nodeGpuModel(n);
    if (healthy.length === 0 || model === '') continue;
    const a: Acc = by.get(model) ?? {
      memoryMiB: Number.POSITIVE_INFINITY,
      cc: Number.POSITIVE_INFINITY,
      nodeGpus: [],
      islands: [],
      racks: new Map<string, number>(),
    };
    const perIsland = new Map<number, number>();
    for (const g of healthy) {
      a.memoryMiB = Math.min(a.memoryMiB, g.memoryMiB);
      a.cc = Math.min(a.cc, g.computeCapability);
      const island = n.topology.islandOf[g.index] ?? -1 - g.index;
      perIsland.set(island, (perIsland.get(island) ?? 0) + 1);
    }
    a.nodeGpus.push(healthy.length);
    a.islands.push(...perIsland.values());
    const rack = `${n.location.zone}/${n.location.block}/${n.location.rack}`;
    a.racks.set(rack, (a.racks.get(rack) ?? 0) + healthy.length);
    by.set(model, a);
  }
  const desc = (xs: number[]): number[] => xs.sort((x, y) => y - x);
  const pools = [...by.entries()]
    .sort(([x], [y]) => (x < y ? -1 : 1))
    .map(([model, a]) => ({
      model,
      memoryMiB: a.memoryMiB,
      computeCapability: a.cc,
      gpus: a.nodeGpus.reduce((s, x) => s + x, 0),
      nodeGpus: desc(a.nodeGpus),
      islands: desc(a.islands),
      rackGpus: Math.max(...a.racks.values()),
    }));
  return { pools, ...extra };
}

// ---- formatting: reasons are read by users ----

const gib = (bytes: number): string => `${(bytes / GiB).toFixed(bytes >= 100 * GiB ? 0 : 1)} GiB`;
const params = (p: number): string => (p >= 1e9 ? `${+(p / 1e9).toFixed(1)}B` : `${Math.round(p / 1e6)}M`);
const poolMem = (p: GpuPool): string => `${Math.round(p.memoryMiB / 1024)} GiB`;
const thousands = (x: number): string => String(Math.round(x)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

// ---- candidates ----

interface Candidate {
  readonly pool: GpuPool;
  readonly gpusPerPod: number;
  readonly pods: number;
  readonly topology: ProfileTopology;
  readonly minMemoryGiB: number;
  /** The clause of the main reason after "→". */
  readonly why: string;
  /** Sort key, smaller first. */
  readonly rank: readonly (number | string)[];
  /** A figure to name the runners-up by (batch-throughput). */
  readonly figure?: string;
}

type Rejection = string;

interface Ctx {
  readonly step: ProfileStep;
  readonly field: string;
  readonly cluster: ClusterSummary;
  readonly o: ProfileOverrides;
}

const memBytes = (p: GpuPool): number => p.memoryMiB * 1024 ** 2;
const servingUsable = (p: GpuPool, g: number): number => g * (memBytes(p) * SERVING_MEMORY_FRACTION - SERVING_RESERVE_BYTES);
const units = (sizes: readonly number[], size: number): number => sizes.filter((x) => x >= size).length;

function ccOk(p: GpuPool, m: StepModel | undefined): Rejection | undefined {
  const dtype = m?.dtype ?? 'bf16';
  const need = MIN_CC[dtype];
  if (p.memoryMiB <= 0) return `${p.model}: memory unknown`;
  return p.computeCapability >= need || need === 0 ? undefined : `${p.model}: ${dtype} needs sm_${need}, it has sm_${p.computeCapability}`;
}

function trainingCandidates(c: Ctx, m: StepModel, byThroughput: boolean): { cands: Candidate[]; rejected: Rejection[] } {
  const method = c.step.training?.method ?? 'full';
  const need = trainingBytes(m, method);
  const tm: TrainingModel = {
    ...DEFAULT_TRAINING_MODEL,
    name: c.step.name,
    params: m.params,
    tokensPerGpuPerStep: c.step.training?.tokensPerGpuPerStep ?? DEFAULT_TRAINING_MODEL.tokensPerGpuPerStep,
  };
  const cands: Candidate[] = [];
  const rejected: Rejection[] = [];
  for (const p of c.cluster.pools) {
    const bad = ccOk(p, m);
    if (bad !== undefined) {
      rejected.push(bad);
      continue;
    }
    const nvlink = (p.islands[0] ?? 0) >= 2;
    // Without NVLink a pod takes a whole node over PCIe; with it, one island.
    const size = c.o.gpusPerPod ?? (nvlink ? (p.islands[0] as number) : (p.nodeGpus[0] ?? 0));
    const sizes = nvlink && c.o.gpusPerPod === undefined ? p.islands : p.nodeGpus;
    const podBytes = size * memBytes(p) * TRAINING_MEMORY_FRACTION;
    const pods = c.o.pods ?? Math.max(1, Math.ceil(need / podBytes));
    if (size <= 0 || size > (p.nodeGpus[0] ?? 0)) {
      rejected.push(`${p.model}: no node has ${size} GPUs`);
      continue;
    }
    if (pods * podBytes < need) {
      rejected.push(`${p.model}: ${pods} × ${size} GPUs hold ${gib(pods * podBytes)} of model state, the step needs ${gib(need)}`);
      continue;
    }
    if (units(sizes, size) < pods) {
      rejected.push(`${p.model}: needs ${pods} ${nvlink ? 'NVLink islands' : 'nodes'} of ${size} GPUs, the cluster has ${units(sizes, size)}`);
      continue;
    }
    const oneIsland = pods === 1 && nvlink && size <= (p.islands[0] ?? 0);
    const topology: ProfileTopology = oneIsland
      ? { required: 'nvlink-domain', spread: false }
      : pods > 1
        ? p.rackGpus >= pods * size
          ? { required: 'rack', spread: false }
          : { preferred: 'rack', spread: false }
        : { spread: false };
    const sec = computeSec(tm, p.model);
    const perGpuHour = ((tm.tokensPerGpuPerStep / sec) * 3600) / (c.cluster.pricePerGpuHour?.[p.model] ?? 1);
    const where = oneIsland
      ? 'in one NVLink island'
      : pods > 1
        ? `${pods} pods${topology.required === 'rack' ? ' in one rack' : ''}`
        : nvlink
          ? ''
          : 'on one node (no NVLink: PCIe)';
    const why = `${p.model} ×${size}${pods > 1 ? ` per pod, ${where}` : where === '' ? '' : ` ${where}`} (${byThroughput ? `${thousands(tm.tokensPerGpuPerStep / sec)} tokens/s per GPU by the step-time model` : `the largest ${nvlink ? 'NVLink island' : 'node'} with ≥ ${gib(need)}: ${size} × ${poolMem(p)}`})`;
    cands.push({
      pool: p,
      gpusPerPod: size,
      pods,
      topology,
      minMemoryGiB: Math.ceil(need / (pods * size) / TRAINING_MEMORY_FRACTION / GiB),
      why,
      // NVLink islands before PCIe nodes, then fewest pods, then the biggest island, then the faster GPU.
      rank: byThroughput ? [-perGpuHour, pods, -size, p.model] : [nvlink ? 0 : 1, pods, -size, sec, p.model],
    });
  }
  return { cands, rejected };
}

/** The smallest tensor-parallel size on one node of `p` whose memory holds `need` bytes, or the forced one. */
function tpSize(p: GpuPool, need: number, forced: number | undefined): number | undefined {
  const sizes = forced === undefined ? TP_SIZES : [forced];
  return sizes.find((g) => g <= (p.nodeGpus[0] ?? 0) && servingUsable(p, g) >= need);
}

function servingDemand(c: Ctx, m: StepModel): { need: number; kv: number; seqs: number; ctx: number; est: boolean } {
  const seqs = c.step.serving?.concurrency ?? DEFAULT_CONCURRENCY;
  const ctx = c.step.serving?.contextTokens ?? DEFAULT_CONTEXT_TOKENS;
  const kv = kvBytesPerToken(m);
  return { need: weightsBytes(m) + seqs * ctx * kv.bytes, kv: seqs * ctx * kv.bytes, seqs, ctx, est: kv.estimated };
}

function lowLatencyCandidates(c: Ctx, m: StepModel): { cands: Candidate[]; rejected: Rejection[] } {
  const d = servingDemand(c, m);
  const replicas = c.o.pods ?? c.step.serving?.replicas ?? 1;
  const cands: Candidate[] = [];
  const rejected: Rejection[] = [];
  for (const p of c.cluster.pools) {
    const bad = ccOk(p, m);
    if (bad !== undefined) {
      rejected.push(bad);
      continue;
    }
    const g = tpSize(p, d.need, c.o.gpusPerPod);
    if (g === undefined) {
      rejected.push(
        `${p.model}: ${c.o.gpusPerPod ?? Math.min(8, p.nodeGpus[0] ?? 0)} × ${poolMem(p)} hold ${gib(servingUsable(p, c.o.gpusPerPod ?? Math.min(8, p.nodeGpus[0] ?? 0)))} for the engine, the replica needs ${gib(d.need)}`,
      );
      continue;
    }
    if (units(p.nodeGpus, g) === 0 || p.gpus < g * replicas) {
      rejected.push(`${p.model}: ${replicas} replica${replicas === 1 ? '' : 's'} × ${g} GPUs, the cluster has ${p.gpus}`);
      continue;
    }
    const nodes = units(p.nodeGpus, g);
    const island = (p.islands[0] ?? 0) >= g && g > 1;
    const topology: ProfileTopology = { ...(island ? { preferred: 'nvlink-domain' as const } : {}), spread: true };
    const spread = replicas > 1 ? (nodes >= replicas ? ', replicas on separate nodes' : `, replicas spread over ${nodes} nodes`) : '';
    cands.push({
      pool: p,
      gpusPerPod: g,
      pods: replicas,
      topology,
      minMemoryGiB: Math.ceil((d.need / g + SERVING_RESERVE_BYTES) / SERVING_MEMORY_FRACTION / GiB),
      why: `${p.model} ×${g} per replica (the least GPU memory that holds it: ${g} × ${poolMem(p)}${g > 1 ? (island ? ', tensor-parallel over NVLink' : ', tensor-parallel over PCIe') : ''})${spread}`,
      // The least GPU memory a replica holds: small GPUs first, one big GPU before many small ones.
      rank: [g * p.memoryMiB, g, -p.computeCapability, -(GPU_PEAK_TFLOPS[p.model] ?? 0), p.model],
    });
  }
  return { cands, rejected };
}

/** The engine model for `m` on one GPU of `gpu` ×g: ADR 0080's constants scaled by model size, KV size and peak compute. */
export function scaledEngine(m: StepModel, gpu: string, g: number): EngineModel | undefined {
  const peak = GPU_PEAK_TFLOPS[gpu];
  const ref = GPU_PEAK_TFLOPS['H100-SXM'];
  if (peak === undefined || ref === undefined) return undefined;
  const speed = (peak / ref) * g * TP_EFFICIENCY ** Math.log2(g);
  const size = m.params / ENGINE_PARAMS;
  const kv = kvBytesPerToken(m).bytes / ENGINE_KV_BYTES;
  const e = LLAMA31_8B_H100;
  return {
    ...e,
    name: `${params(m.params)} on ${gpu} ×${g}`,
    gpusPerReplica: g,
    stepBaseSec: (e.stepBaseSec * size) / speed,
    stepPerSeqSec: (e.stepPerSeqSec * size) / speed,
    stepPerContextTokenSec: (e.stepPerContextTokenSec * kv) / speed,
    prefillTokensPerSec: (e.prefillTokensPerSec * speed) / size,
  };
}

/** Decode tokens/s of one replica of `m` on `p` ×g at a full batch (as many sequences as KV and the engine allow). */
export function replicaTokensPerSec(m: StepModel, p: GpuPool, g: number, contextTokens: number): number | undefined {
  const e = scaledEngine(m, p.model, g);
  if (e === undefined) return undefined;
  const kvRoom = servingUsable(p, g) - weightsBytes(m);
  const seqs = Math.min(e.maxNumSeqs, Math.floor(kvRoom / (contextTokens * kvBytesPerToken(m).bytes)));
  if (seqs < 1) return 0;
  // Contexts grow from the prompt to the full context over a sequence: on average half of it is attended.
  return seqs / stepSeconds(e, seqs, (seqs * contextTokens) / 2, 0);
}

function throughputCandidates(c: Ctx, m: StepModel): { cands: Candidate[]; rejected: Rejection[] } {
  const d = servingDemand(c, m);
  const replicas = c.o.pods ?? c.step.serving?.replicas ?? 1;
  const cands: Candidate[] = [];
  const rejected: Rejection[] = [];
  for (const p of c.cluster.pools) {
    const bad = ccOk(p, m);
    if (bad !== undefined) {
      rejected.push(bad);
      continue;
    }
    if (GPU_PEAK_TFLOPS[p.model] === undefined) {
      rejected.push(`${p.model}: no throughput figure for this GPU`);
      continue;
    }
    const price = c.cluster.pricePerGpuHour?.[p.model];
    let best: { g: number; perGpu: number } | undefined;
    // One sequence of the context must fit; then the TP size with the most tokens/s per GPU.
    const min = tpSize(p, weightsBytes(m) + d.ctx * kvBytesPerToken(m).bytes, c.o.gpusPerPod);
    for (const g of c.o.gpusPerPod !== undefined ? [c.o.gpusPerPod] : TP_SIZES) {
      if (min === undefined || g < min || g > (p.nodeGpus[0] ?? 0) || p.gpus < g * replicas) continue;
      const perGpu = (replicaTokensPerSec(m, p, g, d.ctx) ?? 0) / g;
      if (perGpu > 0 && (best === undefined || perGpu > best.perGpu)) best = { g, perGpu };
    }
    if (best === undefined) {
      rejected.push(
        `${p.model}: no replica of ≤ ${Math.min(8, p.nodeGpus[0] ?? 0)} GPUs holds ${gib(weightsBytes(m))} of weights and one ${d.ctx}-token sequence${p.gpus < replicas ? ` for ${replicas} replicas` : ''}`,
      );
      continue;
    }
    const perHour = (best.perGpu * 3600) / (price ?? 1);
    const metric =
      price === undefined
        ? `${thousands(best.perGpu)} tokens/s per GPU`
        : `${thousands(perHour)} tokens per unit of price (${thousands(best.perGpu)} tokens/s per GPU at ${price}/GPU-hour)`;
    cands.push({
      pool: p,
      gpusPerPod: best.g,
      pods: replicas,
      topology: { ...(best.g > 1 && (p.islands[0] ?? 0) >= best.g ? { preferred: 'nvlink-domain' as const } : {}), spread: false },
      minMemoryGiB: Math.ceil((weightsBytes(m) / best.g + SERVING_RESERVE_BYTES) / SERVING_MEMORY_FRACTION / GiB),
      why: `${p.model} ×${best.g} per replica (${metric}, by the serving engine model)`,
      rank: [-perHour, p.memoryMiB, p.model],
      figure: `${p.model} ×${best.g} ${price === undefined ? `${thousands(best.perGpu)} tokens/s per GPU` : `${thousands(perHour)} tokens per unit of price`}`,
    });
  }
  return { cands, rejected };
}

const cmp = (a: readonly (number | string)[], b: readonly (number | string)[]): number => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === y) continue;
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    return x < y ? -1 : 1;
  }
  return 0;
};

function ruleFor(step: ProfileStep, profile: ResourceProfile): ProfileRule {
  if (step.kind === 'container' && (step.gpus ?? 0) === 0) return 'cpu';
  if (profile === 'low-latency') return 'low-latency';
  if (profile === 'batch-throughput') return step.kind === 'training' ? 'training' : 'batch-throughput';
  if (step.kind === 'training') return 'training';
  if (step.kind === 'serving') return 'low-latency';
  return 'batch-throughput';
}

const STEP_KINDS: readonly StepKind[] = ['training', 'serving', 'batch-inference', 'container'];

function validate(step: ProfileStep, profile: string, o: ProfileOverrides, f: string): FieldError | undefined {
  if (!(RESOURCE_PROFILES as readonly string[]).includes(profile))
    return { field: `${f}.resourceProfile`, message: `unknown profile ${JSON.stringify(profile)}: one of ${RESOURCE_PROFILES.join(', ')}` };
  if (!STEP_KINDS.includes(step.kind))
    return { field: `${f}.kind`, message: `unknown step kind ${JSON.stringify(step.kind)}: one of ${STEP_KINDS.join(', ')}` };
  if (profile === 'low-latency' && step.kind === 'training')
    return { field: `${f}.resourceProfile`, message: 'low-latency is for serving and inference steps: a training step takes auto or batch-throughput' };
  const posInt = (field: string, v: number | undefined, min = 1): FieldError | undefined =>
    v !== undefined && !(Number.isInteger(v) && v >= min) ? { field, message: `${v}: a whole number ≥ ${min}` } : undefined;
  const m = step.model;
  if (m !== undefined) {
    if (!(Number.isFinite(m.params) && m.params > 0)) return { field: `${f}.model.params`, message: `${m.params}: a positive number of parameters` };
    if (m.dtype !== undefined && !(m.dtype in BYTES_PER_PARAM))
      return { field: `${f}.model.dtype`, message: `unknown dtype ${JSON.stringify(m.dtype)}: one of ${Object.keys(BYTES_PER_PARAM).join(', ')}` };
    if (m.kvBytesPerToken !== undefined && !(m.kvBytesPerToken > 0))
      return { field: `${f}.model.kvBytesPerToken`, message: `${m.kvBytesPerToken}: must be > 0` };
  }
  if (o.topology !== undefined && o.topology !== 'none' && !TOPOLOGY_LEVELS.includes(o.topology))
    return { field: `${f}.overrides.topology`, message: `unknown level ${JSON.stringify(o.topology)}: none or one of ${TOPOLOGY_LEVELS.join(', ')}` };
  return (
    posInt(`${f}.serving.concurrency`, step.serving?.concurrency) ??
    posInt(`${f}.serving.contextTokens`, step.serving?.contextTokens) ??
    posInt(`${f}.serving.replicas`, step.serving?.replicas) ??
    posInt(`${f}.training.tokensPerGpuPerStep`, step.training?.tokensPerGpuPerStep) ??
    posInt(`${f}.gpus`, step.gpus, 0) ??
    posInt(`${f}.overrides.gpusPerPod`, o.gpusPerPod) ??
    posInt(`${f}.overrides.pods`, o.pods)
  );
}

/**
 * GPU model, GPUs per pod, pods, topology and queue for `step` under `profile` on `cluster`; `overrides` (the
 * step's own choices) win. An unknown profile or a request the cluster cannot hold is an error naming the field.
 */
export function resolveProfile(
  step: ProfileStep,
  profile: string,
  cluster: ClusterSummary,
  overrides: ProfileOverrides = {},
): Result<ResolvedProfile, FieldError> {
  const f = step.field ?? `steps.${step.name}`;
  const bad = validate(step, profile, overrides, f);
  if (bad !== undefined) return err(bad);
  const asked = profile as ResourceProfile;
  const rule = ruleFor(step, asked);
  const o = overrides;
  const reasons: string[] = [];
  const queue = o.queue ?? cluster.queues?.[rule];
  const named: string[] = [];
  if (o.gpuModels !== undefined) named.push(`gpuModels=${o.gpuModels.join(',')}`);
  if (o.gpusPerPod !== undefined) named.push(`gpusPerPod=${o.gpusPerPod}`);
  if (o.pods !== undefined) named.push(`pods=${o.pods}`);
  if (o.topology !== undefined) named.push(`topology=${o.topology}`);
  if (o.queue !== undefined) named.push(`queue=${o.queue}`);
  const kind = `${step.kind} step`;

  if (rule === 'cpu') {
    reasons.push(`${asked}: ${kind} asks for no GPU → CPU only${asked === 'auto' ? '' : ` (${asked} has no GPU to choose)`}`);
    return ok({
      profile: asked,
      rule,
      gpuModels: [],
      gpusPerPod: 0,
      pods: o.pods ?? 1,
      topology: topologyOf({ spread: false }, o),
      ...(queue === undefined ? {} : { queue }),
      reasons: withOverrides(reasons, named),
    });
  }

  // Restrict to the models the step names; a name the cluster lacks is an error, not a silent fallback.
  // Sorted by model so that the answer and its reasons do not depend on the order the pools come in.
  let pools = [...cluster.pools].sort((x, y) => (x.model < y.model ? -1 : x.model > y.model ? 1 : 0));
  if (o.gpuModels !== undefined) {
    const have = new Map(pools.map((p) => [p.model.toLowerCase(), p]));
    const picked: GpuPool[] = [];
    for (let i = 0; i < o.gpuModels.length; i++) {
      const p = have.get((o.gpuModels[i] as string).toLowerCase());
      if (p === undefined)
        return err({
          field: `${f}.overrides.gpuModels[${i}]`,
          message: `no ${o.gpuModels[i]} GPU in the cluster (it has ${pools.map((x) => x.model).join(', ') || 'no GPUs'})`,
        });
      picked.push(p);
    }
    pools = picked;
  }
  if (pools.length === 0) return err({ field: `${f}.resourceProfile`, message: `${kind} needs GPUs and the cluster has none` });

  const m = step.model;
  if (m === undefined) {
    // Without a model there is nothing to size: the step's own model and count are the whole answer.
    if (o.gpuModels !== undefined && (o.gpusPerPod ?? step.gpus) !== undefined) {
      const g = o.gpusPerPod ?? (step.gpus as number);
      const p = pools[0] as GpuPool;
      if (g > (p.nodeGpus[0] ?? 0)) return err({ field: `${f}.overrides.gpusPerPod`, message: `${g} GPUs per pod: no node has that many ${p.model}` });
      reasons.push(`${asked}: ${kind} without a model size → ${p.model} ×${g} as the step asks`);
      return ok({
        profile: asked,
        rule,
        gpuModels: pools.map((x) => x.model),
        gpusPerPod: g,
        pods: o.pods ?? step.serving?.replicas ?? 1,
        topology: topologyOf({ spread: rule === 'low-latency' }, o),
        ...(queue === undefined ? {} : { queue }),
        reasons: withOverrides(reasons, named),
      });
    }
    return err({ field: `${f}.model.params`, message: `${kind} needs the model's size to choose GPUs (or set overrides.gpuModels and gpusPerPod)` });
  }

  const c: Ctx = { step, field: f, cluster: { ...cluster, pools }, o };
  const { cands, rejected } =
    rule === 'training'
      ? trainingCandidates(c, m, asked === 'batch-throughput')
      : rule === 'low-latency'
        ? lowLatencyCandidates(c, m)
        : throughputCandidates(c, m);
  const sorted = [...cands].sort((a, b) => cmp(a.rank, b.rank));
  const best = sorted[0];
  const size = `${params(m.params)} params${m.dtype === undefined ? '' : ` ${m.dtype}`}`;
  const demand = describeDemand(c, m, rule);
  if (best === undefined) {
    const field =
      o.gpusPerPod !== undefined
        ? `${f}.overrides.gpusPerPod`
        : o.pods !== undefined
          ? `${f}.overrides.pods`
          : o.gpuModels !== undefined
            ? `${f}.overrides.gpuModels`
            : `${f}.model.params`;
    return err({ field, message: `no GPU of the cluster can hold this ${kind} (${size}, ${demand}): ${rejected.join('; ')}` });
  }
  const label = asked === 'auto' ? `auto chose ${rule} for a ${kind} (${size})` : `${asked}: ${kind} (${size})`;
  reasons.push(`${label}: ${demand} → ${best.why}`);
  const others = sorted.slice(1).map((x) => x.figure ?? `${x.pool.model} ×${x.gpusPerPod}`);
  if (rule === 'batch-throughput' && others.length > 0) reasons.push(`runners-up: ${others.join(', ')}`);
  else if (others.length > 0)
    reasons.push(
      `also possible: ${sorted
        .slice(1)
        .map((x) => `${x.pool.model} ×${x.gpusPerPod}${x.pods > 1 ? ` × ${x.pods} pods` : ''}`)
        .join(', ')}`,
    );
  if (rejected.length > 0) reasons.push(`not possible: ${rejected.join('; ')}`);
  if (kvBytesPerToken(m).estimated && rule !== 'training')
    reasons.push('KV cache estimated from the parameter count (give model.kvBytesPerToken or layers, kvHeads, headDim for an exact figure)');
  if (queue !== undefined && o.queue === undefined) reasons.push(`queue ${queue}: the cluster's queue for ${rule} steps`);
  return ok({
    profile: asked,
    rule,
    gpuModels: [best.pool.model],
    gpusPerPod: best.gpusPerPod,
    pods: best.pods,
    minMemoryGiB: best.minMemoryGiB,
    topology: topologyOf(best.topology, o),
    ...(queue === undefined ? {} : { queue }),
    reasons: withOverrides(reasons, named),
  });
}

function describeDemand(c: Ctx, m: StepModel, rule: ProfileRule): string {
  if (rule === 'training') {
    const method = c.step.training?.method ?? 'full';
    return method === 'full'
      ? `full training holds ${gib(trainingBytes(m, 'full'))} of weights, gradients and optimizer state`
      : `LoRA holds ${gib(trainingBytes(m, 'lora'))} (frozen weights and adapters)`;
  }
  const d = servingDemand(c, m);
  if (rule === 'low-latency') return `${gib(weightsBytes(m))} of weights + ${gib(d.kv)} of KV for ${d.seqs} × ${d.ctx} tokens`;
  return `${gib(weightsBytes(m))} of weights, batches of ${d.ctx}-token sequences`;
}

function topologyOf(t: ProfileTopology, o: ProfileOverrides): ProfileTopology {
  if (o.topology === undefined) return t;
  if (o.topology === 'none') return { spread: t.spread };
  return { required: o.topology, spread: t.spread };
}

function withOverrides(reasons: string[], named: readonly string[]): string[] {
  return named.length === 0 ? reasons : [...reasons, `overrides from the step win: ${named.join(', ')}`];
}
