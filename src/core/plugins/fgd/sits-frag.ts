/**
 * SITS fragmentation score: FGD's objective (least growth of the expected-workload fragment) with lookahead
 * terms that FGD lacks, all learned from the typical workload and the cluster (docs/adr/0003, 0106, 0189):
 *
 *   D = ΔFrag + (β − 1) · W_na(model) · taken − γ·π(M)·taken − (λ·f(φ) + γ·π(M)) · (ΔS_cpu + ΔS_mem) − η · ΔW_hole
 *       − μ·(1 − φ)/κ · cpuLeft(after)
 *   score = trunc(100 · σ(D / 1000)),   σ(x) = 1 / (1 + e^−x)
 *
 * - ΔFrag = Frag(node) − Frag(after), the paper's node fragment (fragmentation.ts) for the typical shapes.
 * - Model pressure, γ = 1: π(M) ∈ [0, 1] is the share of model M's capacity that the pods restricted to
 *   model lists containing M need when demand equals capacity (`modelPressure`; capacity per model is read
 *   from the cluster in PreScore). Taking, or stranding, capacity of a pressed model costs what the
 *   constrained pods lose. Without constrained shapes π = 0.
 * - Scarce-model weight β: W_na(model) = Σ p_t over GPU shapes whose model list excludes the node's model;
 *   β = 1 since ADR 0106 (FGD's own NA count only; the pressure term does the job better).
 * - CPU stranding: S(x) = max(0, F − cpuLeft / κ_M) is the free GPU milli the node's CPU cannot feed,
 *   with κ_M = Σ p_t·cpu_t / Σ p_t·n_t·m_t over the GPU shapes that may use the node's model M. A placement
 *   that makes the node more CPU-starved than it was pays λ = 2 per milli (never a reward: a node that is
 *   CPU-poor by build does not attract pods for that reason). ΔS = max(0, S(after) − S(before)).
 * - Memory stranding: the same with the node's free memory and the workload's memory per GPU milli
 *   (off when the typical shapes carry no memory).
 * - Hole waste (fractional pods only): a GPU left with h milli free wastes W_M(h) = h · (1 − φ_M(h))^K, where
 *   φ_M(h) is the share of the single-GPU typical pods that may use model M which fit in h: the chance that
 *   none of the next K = 100 such pods could use the hole. Holes that only rare shapes fit (< ~1 % of pods,
 *   e.g. 60 milli beside two 470s, or 210 beside 470 + 320) are dead; holes that common shapes fit cost ~0.
 *   The pod pays η = 2 per milli of W(free − m) − W(free) on the GPU it takes. FGD's fragment sees the same
 *   hole only through the next pod (one draw), and so rates a 210-milli hole nearly like a 30-milli one.
 * - CPU supply (ADR 0189): φ = the share of the GPU pods' CPU need that the cluster's CPU covers once the
 *   CPU-only pods took theirs, at GPU demand = capacity (`supplyShare`, from the typical shapes and the
 *   cluster in PreScore). While φ = 1 (every given trace and the first 26 variants) nothing below changes.
 *   When φ < 1, GPUs will be stranded whatever the placement, and what decides how many GPUs get used is how
 *   tightly the CPU is packed: κ becomes φ·κ, λ fades to λ·f(φ) = λ·max(φ^k, 0.1) (k = 20), and every pod pays
 *   μ·(1 − φ)/κ per CPU milli it leaves free on the node (μ = 0.3), i.e. CPU best fit.
 * Integer truncation is kept on purpose: equal scores go to the fixed node order (ranks), which
 * consolidates placements like first fit; removing it loses ~1.4 pp on the default trace.
 *
 * GPU choice: a fractional pod tries every fitting GPU (one per distinct free value) and takes the first
 * index with the highest score; whole GPUs go to the topology-aware pick (NVLink/NUMA/PCIe), which on a
 * flat node is the lowest-index free GPUs. All whole GPUs are equal for the fragment, so the score uses
 * "any n fully free GPUs" and never runs the topology search.
 */
import type { PodSpec } from '../../model/pod.ts';
import type { ClusterState, NodeState } from '../../snapshot/cluster-state.ts';
import type { GpuMask, Plugin } from '../../framework/types.ts';
import { pickTopologyGpus } from '../topology/gpu-topology-pick.ts';
import { FragCache, seenBefore } from './fgd.ts';
import type { TypicalShape } from '../../estimate/typical-shapes.ts';

const sigmoid = (d: number): number => 1 / (1 + Math.exp(-d));

/**
 * Weight of capacity that some constrained typical shape may not use (FGD's NA category counts 1). Was 3
 * (ADR 0003); the model-pressure term replaces it (β = 1: FGD's count only), which the sweep of ADR 0106
 * found better on every constrained training variant.
 */
export const SCARCE_MODEL_WEIGHT = 1;
/** Penalty per milli of GPU capacity newly stranded by lack of CPU (and, the same, of memory); ADR 0106 sweep. */
export const CPU_STRAND_WEIGHT = 2;
/** γ: cost per milli a pod takes on a model, times the model's pressure π (ADR 0106 sweep). */
export const MODEL_PRESSURE_WEIGHT = 1;
/** Penalty per milli of expected hole waste a fractional pod leaves on its GPU. */
export const HOLE_WASTE_WEIGHT = 2;
/** Pods a hole waits through: a hole that none of the next K single-GPU pods fits is counted dead. */
export const HOLE_LOOKAHEAD_PODS = 100;

/**
 * k: when the cluster's CPU cannot feed all the GPU demand (φ < 1, ADR 0189), GPUs will be stranded
 * whatever the placement, so the stranding penalty λ fades as λ·φ^k (φ = 0.89 → λ·0.1).
 */
export const CPU_STRAND_DECAY = 20;
/**
 * …but never below λ·0.1: the packing term pulls pods onto CPU-poor nodes, and without some stranding cost
 * it strands their free GPUs wholesale (cpu350: 24.8 % unallocated at λ·φ^20 = λ·0.005; ADR 0189).
 */
export const CPU_STRAND_FLOOR = 0.1;
/** μ: when CPU is short (φ < 1), CPU left free costs μ·(1 − φ)/κ per milli: pack the scarce resource (ADR 0189). */
export const CPU_FIT_WEIGHT = 0.3;

/** The constants of the score (ADR 0003, swept in ADR 0106); experiments pass other values. */
export interface SitsFragParams {
  readonly scarceModelWeight: number;
  readonly strandWeight: number;
  readonly holeWasteWeight: number;
  readonly holeLookahead: number;
  /** Learn κ and W(h) per GPU model from the shapes that may use it (false: from all shapes, as before). */
  readonly modelAware: boolean;
  /** φ_M(h) over the pods that may use the model ('allowed') or over all single-GPU pods ('all'). */
  readonly holeShareOf: 'allowed' | 'all';
  /** γ: cost per milli taken (and per milli stranded, on top of λ) on a model, times its pressure π(M). */
  readonly pressureWeight: number;
  /** Strand against φ·κ, the CPU per GPU milli the cluster can afford, instead of κ (memory likewise). */
  readonly kappaBySupply: boolean;
  /** k: λ is scaled by max(φ^k, floor), φ = the CPU supply share (`supplyShare`); 0 = never scaled. */
  readonly strandDecay: number;
  /** The least share of λ kept however short the CPU is. */
  readonly strandFloor: number;
  /** μ: cost per milli of CPU left free on the node, times (1 − φ)/κ; 0 while CPU suffices (φ = 1). */
  readonly cpuFitWeight: number;
}

export const SITS_FRAG_DEFAULTS: SitsFragParams = {
  scarceModelWeight: SCARCE_MODEL_WEIGHT,
  strandWeight: CPU_STRAND_WEIGHT,
  holeWasteWeight: HOLE_WASTE_WEIGHT,
  holeLookahead: HOLE_LOOKAHEAD_PODS,
  modelAware: true,
  holeShareOf: 'allowed',
  pressureWeight: MODEL_PRESSURE_WEIGHT,
  kappaBySupply: true,
  strandDecay: CPU_STRAND_DECAY,
  strandFloor: CPU_STRAND_FLOOR,
  cpuFitWeight: CPU_FIT_WEIGHT,
};

/** Whether typical shape `s` may run on GPU model `model` (no list = any model). */
export const allowsModel = (s: TypicalShape, model: string): boolean => s.gpuModels.length === 0 || s.gpuModels.includes(model);

export interface SitsChoice {
  readonly score: number;
  /** The GPU a fractional pod should take; -1 for other pods (their GPUs come from the topology pick). */
  readonly gpu: number;
}

/** κ: expected CPU milli per GPU milli of the typical GPU shapes; 0 when there are none. */
export function cpuPerGpuMilli(shapes: readonly TypicalShape[], allowed: (s: TypicalShape) => boolean = () => true): number {
  let cpu = 0;
  let gpu = 0;
  for (const s of shapes) {
    if (s.gpuMilli <= 0 || s.gpuCount <= 0 || !allowed(s)) continue;
    cpu += s.weight * s.cpuMilli;
    gpu += s.weight * s.gpuMilli * s.gpuCount;
  }
  return gpu > 0 ? cpu / gpu : 0;
}

/** Expected memory MiB per GPU milli of the typical GPU shapes; 0 when they carry no memory. */
export function memPerGpuMilli(shapes: readonly TypicalShape[], allowed: (s: TypicalShape) => boolean = () => true): number {
  let mem = 0;
  let gpu = 0;
  for (const s of shapes) {
    if (s.gpuMilli <= 0 || s.gpuCount <= 0 || s.memoryMiB === undefined || !allowed(s)) continue;
    mem += s.weight * s.memoryMiB;
    gpu += s.weight * s.gpuMilli * s.gpuCount;
  }
  return gpu > 0 ? mem / gpu : 0;
}

/**
 * W(h) for h = 0..1000: expected waste of a GPU hole of h milli, h · (1 − φ(h))^K, with φ(h) the share of
 * single-GPU typical pods whose milli ≤ h. With `allowed`, only shapes it accepts can fill the hole, and
 * φ is their share among the accepted shapes (`shareOf` 'allowed') or among all single-GPU shapes ('all').
 * All zeros without single-GPU shapes.
 */
export function holeWaste(
  shapes: readonly TypicalShape[],
  lookahead = HOLE_LOOKAHEAD_PODS,
  allowed: (s: TypicalShape) => boolean = () => true,
  shareOf: 'allowed' | 'all' = 'allowed',
): Float64Array {
  const w = new Float64Array(1001);
  let all = 0;
  const weightAt = new Float64Array(1001);
  for (const s of shapes) {
    if (s.gpuCount !== 1 || s.gpuMilli <= 0 || s.gpuMilli > 1000) continue;
    const ok = allowed(s);
    if (ok || shareOf === 'all') all += s.weight;
    if (ok) weightAt[s.gpuMilli] = (weightAt[s.gpuMilli] as number) + s.weight;
  }
  if (all === 0) return w;
  let fits = 0;
  for (let h = 0; h <= 1000; h++) {
    fits += weightAt[h] as number;
    w[h] = h * Math.pow(Math.max(0, 1 - fits / all), lookahead);
  }
  return w;
}

/** S: free GPU milli that the node's CPU cannot feed at κ CPU milli per GPU milli (0 when κ = 0). */
export function strandedGpuMilli(freeGpuMilli: number, cpuLeftMilli: number, kappa: number): number {
  return kappa > 0 ? Math.max(0, freeGpuMilli - cpuLeftMilli / kappa) : 0;
}

/** W_na: weight of the GPU shapes that may not use `model`. */
export function excludedWeight(shapes: readonly TypicalShape[], model: string): number {
  let w = 0;
  for (const s of shapes) if (s.gpuMilli > 0 && s.gpuModels.length > 0 && !s.gpuModels.includes(model)) w += s.weight;
  return w;
}

/** The workload constants as seen from nodes of one GPU model: what the shapes that may use it need. */
export interface ModelView {
  readonly model: string;
  readonly kappa: number;
  readonly memKappa: number;
  readonly holeWaste: Float64Array;
  readonly excluded: number;
  /** min(1, π(M)): see `modelPressure`. */
  readonly pressure: number;
  readonly strandScale: number;
  /** μ·(1 − φ)/κ: cost per CPU milli left free on the node after the pod (0 when CPU suffices). */
  readonly cpuFit: number;
}

/**
 * π(M) per GPU model: the share of M's capacity that the pods restricted to a model list containing M
 * would need if the arriving GPU demand equalled the cluster's capacity, each list's demand spread over its
 * models in proportion to their capacity: π(M) = Σ_{t: M ∈ L_t} (d_t / D) · C / cap(L_t), with d_t = p_t n_t m_t,
 * D = Σ d_t over GPU shapes, C = Σ cap. 0 for every model when no shape has a list (or no capacity is known).
 */
export function modelPressure(shapes: readonly TypicalShape[], capacity: ReadonlyMap<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  let total = 0;
  for (const c of capacity.values()) total += c;
  let demand = 0;
  for (const s of shapes) if (s.gpuMilli > 0 && s.gpuCount > 0) demand += s.weight * s.gpuCount * s.gpuMilli;
  if (total <= 0 || demand <= 0) return out;
  for (const s of shapes) {
    if (s.gpuMilli <= 0 || s.gpuCount <= 0 || s.gpuModels.length === 0) continue;
    const models = [...new Set(s.gpuModels)].filter((m) => (capacity.get(m) ?? 0) > 0);
    const cap = models.reduce((a, m) => a + (capacity.get(m) as number), 0);
    if (cap <= 0) continue;
    const share = ((s.weight * s.gpuCount * s.gpuMilli) / demand) * (total / cap);
    for (const m of models) out.set(m, (out.get(m) ?? 0) + share);
  }
  return out;
}

/**
 * φ for one resource: the share of the GPU pods' expected need that the cluster can supply once the
 * GPU-less pods took theirs, when the arriving GPU demand equals the GPU capacity; 1 when supply suffices.
 */
export function supplyShare(shapes: readonly TypicalShape[], gpuCapacity: number, supply: number, need: (s: TypicalShape) => number | undefined): number {
  let gpu = 0;
  let withGpu = 0;
  let without = 0;
  for (const s of shapes) {
    const x = need(s);
    if (x === undefined) continue;
    if (s.gpuMilli > 0 && s.gpuCount > 0) {
      gpu += s.weight * s.gpuCount * s.gpuMilli;
      withGpu += s.weight * x;
    } else without += s.weight * x;
  }
  if (gpu <= 0 || withGpu <= 0 || gpuCapacity <= 0) return 1;
  const scale = gpuCapacity / gpu;
  return Math.max(0, Math.min(1, (supply - without * scale) / (withGpu * scale)));
}

/** Everything the score needs besides pod and node: the fragment cache and the workload constants. */
export class SitsFragModel {
  readonly cache: FragCache;
  readonly kappa: number;
  /** Memory MiB per GPU milli (the memory analogue of κ). */
  readonly memKappa: number;
  /** W(h), indexed by free milli. */
  readonly holeWaste: Float64Array;
  /** GPU chosen by the last `sitsFragScore` for a fractional pod (-1 otherwise): no object per evaluation. */
  chosenGpu = -1;
  private readonly excluded = new Map<string, number>();
  private readonly views = new Map<string, ModelView>();
  private pressures = new Map<string, number>();
  private observedNodes = -1;
  private cpuSupply = 1;
  private memSupply = 1;
  /** The view of each node's model by node index: one array read per score instead of a Map lookup. */
  private nodeViews: (ModelView | undefined)[] = [];

  constructor(
    readonly shapes: readonly TypicalShape[],
    readonly params: SitsFragParams = SITS_FRAG_DEFAULTS,
  ) {
    this.cache = new FragCache(shapes);
    this.kappa = cpuPerGpuMilli(shapes);
    this.memKappa = memPerGpuMilli(shapes);
    this.holeWaste = holeWaste(shapes, params.holeLookahead);
  }

  /**
   * Learns the GPU capacity per model from the cluster (the supply side of π). Static capacity in
   * practice; recomputed when the node count changes. Scores cached before that keep the old π until
   * their node changes (ADR 0106).
   */
  observe(state: ClusterState): void {
    if (
      state.size === this.observedNodes ||
      (this.params.pressureWeight === 0 && !this.params.kappaBySupply && this.params.strandDecay === 0 && this.params.cpuFitWeight === 0)
    )
      return;
    this.observedNodes = state.size;
    const cap = new Map<string, number>();
    let cpu = 0;
    let mem = 0;
    let gpus = 0;
    for (const n of state.nodes) {
      cpu += n.spec.cpuMilli;
      mem += n.spec.memoryMiB;
      const model = n.spec.gpus[0]?.model;
      if (model === undefined) continue;
      gpus += 1000 * n.spec.gpus.length;
      cap.set(model, (cap.get(model) ?? 0) + 1000 * n.spec.gpus.length);
    }
    this.pressures = this.params.pressureWeight === 0 ? new Map() : modelPressure(this.shapes, cap);
    this.cpuSupply = supplyShare(this.shapes, gpus, cpu, (s) => s.cpuMilli);
    this.memSupply = supplyShare(this.shapes, gpus, mem, (s) => s.memoryMiB);
    this.views.clear();
    this.nodeViews = [];
  }

  /** `view` of the node's GPU model. */
  viewOf(node: NodeState): ModelView {
    const model = node.spec.gpus[0]?.model ?? '';
    let v = this.nodeViews[node.idx];
    // The model check keeps a reused index (another state, a replaced node) from reading a stale view.
    if (v === undefined || v.model !== model) {
      v = this.view(model);
      this.nodeViews[node.idx] = v;
    }
    return v;
  }

  /** κ, memory κ, W(h), W_na and π for nodes of `model`, computed once per model. */
  view(model: string): ModelView {
    let v = this.views.get(model);
    if (v === undefined) {
      const excluded = this.excludedWeight(model);
      const pressure = Math.min(1, this.pressures.get(model) ?? 0);
      const fc = this.params.kappaBySupply ? this.cpuSupply : 1;
      const fm = this.params.kappaBySupply ? this.memSupply : 1;
      const strandScale = this.cpuSupply < 1 ? Math.max(Math.pow(this.cpuSupply, this.params.strandDecay), this.params.strandFloor) : 1;
      const cpuFit = this.kappa > 0 ? (this.params.cpuFitWeight * (1 - this.cpuSupply)) / this.kappa : 0;
      if (!this.params.modelAware)
        v = { model, kappa: this.kappa * fc, memKappa: this.memKappa * fm, holeWaste: this.holeWaste, excluded, pressure, strandScale, cpuFit };
      else {
        const allowed = (s: TypicalShape): boolean => allowsModel(s, model);
        v = {
          model,
          strandScale,
          cpuFit,
          kappa: cpuPerGpuMilli(this.shapes, allowed) * fc,
          memKappa: memPerGpuMilli(this.shapes, allowed) * fm,
          holeWaste: holeWaste(this.shapes, this.params.holeLookahead, allowed, this.params.holeShareOf),
          excluded,
          pressure,
        };
      }
      this.views.set(model, v);
    }
    return v;
  }

  excludedWeight(model: string): number {
    let w = this.excluded.get(model);
    if (w === undefined) {
      w = excludedWeight(this.shapes, model);
      this.excluded.set(model, w);
    }
    return w;
  }
}

/** max(0, S(after) − S(before)) for one resource: GPU milli newly left without `left` to feed it. */
function newlyStranded(freeGpu: number, takenGpu: number, left: number, taken: number, perGpuMilli: number): number {
  return Math.max(0, strandedGpuMilli(freeGpu - takenGpu, left - taken, perGpuMilli) - strandedGpuMilli(freeGpu, left, perGpuMilli));
}

const toScore = (d: number): number => Math.trunc(sigmoid(d / 1000) * 100);

/** Score and chosen GPU of `pod` on `node` (see the file comment for the rule). */
export function sitsFragChoice(model: SitsFragModel, pod: PodSpec, node: NodeState): SitsChoice {
  const score = sitsFragScore(model, pod, node);
  return { score, gpu: model.chosenGpu };
}

/**
 * Score of `pod` on `node`; for a fractional pod the GPU it implies is left in `model.chosenGpu`. With
 * `allowed` (a pick restricted to some GPUs), only those GPUs are tried.
 */
export function sitsFragScore(model: SitsFragModel, pod: PodSpec, node: NodeState, allowed?: GpuMask): number {
  const r = pod.request;
  const cache = model.cache;
  model.chosenGpu = -1;
  const before = cache.current(node);
  const taken = r.gpuCount * r.gpuMilli;
  const freeBefore = node.gpuFreeMilli();
  const view = model.viewOf(node);
  const cpuStrand = newlyStranded(freeBefore, taken, node.cpuFreeMilli, r.cpuMilli, view.kappa);
  const memStrand = newlyStranded(freeBefore, taken, node.memFreeMiB, r.memoryMiB, view.memKappa);
  const p = model.params;
  const gp = p.pressureWeight * view.pressure;
  const extra =
    (p.scarceModelWeight - 1) * view.excluded * taken -
    gp * taken -
    (p.strandWeight * view.strandScale + gp) * (cpuStrand + memStrand) -
    view.cpuFit * (node.cpuFreeMilli - r.cpuMilli);
  if (r.gpuCount === 1 && r.gpuMilli < 1000) {
    let best = -1;
    let bestGpu = -1;
    const free = node.gpuFree;
    const waste = view.holeWaste;
    for (let g = 0; g < free.length; g++) {
      const f = free[g] as number;
      if (node.gpuUsable[g] !== 1 || f < r.gpuMilli || (allowed !== undefined && allowed[g] !== 1) || seenBefore(node, g, f, allowed)) continue;
      const hole = p.holeWasteWeight * ((waste[f - r.gpuMilli] as number) - (waste[f] as number));
      const sc = toScore(before - cache.afterOne(node, r.cpuMilli, f, r.gpuMilli) + extra - hole);
      if (sc > best) {
        best = sc;
        bestGpu = g;
      }
    }
    model.chosenGpu = bestGpu;
    return bestGpu < 0 ? 0 : best;
  }
  if (r.gpuCount === 0 || r.gpuMilli === 0) return toScore(before - cache.afterCpu(node, r.cpuMilli) + extra);
  const after = r.gpuMilli >= 1000 ? cache.afterWhole(node, r.cpuMilli, r.gpuCount) : undefined;
  return after === undefined ? 0 : toScore(before - after + extra);
}

export const sitsFragPlugin = (shapes: readonly TypicalShape[], params: SitsFragParams = SITS_FRAG_DEFAULTS): Plugin => {
  const model = new SitsFragModel(shapes, params);
  return {
    name: 'sits-frag',
    // Not a skip: the cluster's GPU capacity per model is read here, before any node is scored.
    preScore: (_pod, state) => {
      model.observe(state);
      return true;
    },
    score: (pod, node) => sitsFragScore(model, pod, node),
    pickGpus: (pod, node, _ctx, allowed) => {
      const r = pod.request;
      if (r.gpuCount === 1 && r.gpuMilli < 1000) {
        sitsFragScore(model, pod, node, allowed);
        return model.chosenGpu < 0 ? undefined : [model.chosenGpu];
      }
      return pickTopologyGpus(pod, node, allowed);
    },
  };
};
