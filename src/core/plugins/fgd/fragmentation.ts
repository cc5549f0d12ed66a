/**
 * Fragmentation of a node for a target workload (FGD, ATC '23; ../shared/docs/fgd-reproduction.md §5).
 * The fragment of node n for a typical pod shape t is the free GPU milli that t could not use:
 * - t is CPU-only, or n's GPU model is not allowed for t: all free milli;
 * - n has ≥ n_t GPUs with free ≥ m_t and CPU ≥ cpu_t: only the free milli of GPUs with free < m_t;
 * - otherwise (too few GPUs, or too little CPU): all free milli.
 * Node fragment = Σ_t p_t · fragment(t). An idle GPU is partly "fragment" because CPU-only shapes count.
 */
import type { TypicalShape } from '../../estimate/typical-shapes.ts';

/** Per-node precomputation of which typical shapes its GPU model allows. */
export interface FragModel {
  readonly shapes: readonly TypicalShape[];
}

/**
 * Fragment of a node state. `free` holds the free milli of each usable GPU (any order), `modelAllowed[t]`
 * whether shape t may use this node's GPU model.
 */
export function nodeFragment(shapes: readonly TypicalShape[], modelAllowed: Uint8Array, cpuLeftMilli: number, free: ArrayLike<number>): number {
  let total = 0;
  for (let g = 0; g < free.length; g++) total += free[g] as number;
  if (total === 0) return 0;
  // Summed per category (Q1, Q2, Q4, XL, XR, NA) in shape order, then the categories in that order,
  // exactly as the paper's code: FGD truncates scores, so the last bit of rounding can flip a choice.
  let q1 = 0;
  let q2 = 0;
  let q4 = 0;
  let xl = 0;
  let xr = 0;
  let na = 0;
  for (let t = 0; t < shapes.length; t++) {
    const s = shapes[t] as TypicalShape;
    const cpuOk = cpuLeftMilli >= s.cpuMilli;
    if (s.gpuMilli === 0) {
      if (cpuOk) xl += s.weight * total;
      else xr += s.weight * total;
      continue;
    }
    if (modelAllowed[t] === 0) {
      na += s.weight * total;
      continue;
    }
    let fitting = 0;
    let small = 0;
    for (let g = 0; g < free.length; g++) {
      const f = free[g] as number;
      if (f >= s.gpuMilli) fitting++;
      else small += f;
    }
    if (fitting >= s.gpuCount) {
      if (cpuOk) q2 += s.weight * small;
      else q4 += s.weight * total;
    } else if (cpuOk) q2 += s.weight * total;
    else q1 += s.weight * total;
  }
  return q1 + q2 + q4 + xl + xr + na;
}

/**
 * A typical workload compiled for fast evaluation: the distinct per-GPU shares ("thresholds") of its GPU
 * shapes, ascending, and per shape the index of its threshold. For a node, per threshold j, fit[j] = GPUs
 * with free ≥ M_j and small[j] = Σ free of GPUs with free < M_j decide every shape's category, so the
 * fragment costs O(thresholds × GPUs + shapes) instead of O(shapes × GPUs), and a change of one GPU
 * updates fit/small in O(thresholds). Results are bit-identical to `nodeFragment` (same float sums in the
 * same order; fit and small are exact integers).
 */
export interface CompiledShapes {
  readonly shapes: readonly TypicalShape[];
  readonly thresholds: Int32Array;
  /** Threshold index per shape, -1 for CPU-only shapes. */
  readonly thrOf: Int32Array;
  readonly cpu: Float64Array;
  readonly count: Int32Array;
  readonly weight: Float64Array;
}

export function compileShapes(shapes: readonly TypicalShape[]): CompiledShapes {
  const values = [...new Set(shapes.filter((s) => s.gpuMilli > 0).map((s) => s.gpuMilli))].sort((a, b) => a - b);
  const thrIndex = new Map(values.map((v, i) => [v, i]));
  return {
    shapes,
    thresholds: Int32Array.from(values),
    thrOf: Int32Array.from(shapes.map((s) => (s.gpuMilli > 0 ? (thrIndex.get(s.gpuMilli) as number) : -1))),
    cpu: Float64Array.from(shapes.map((s) => s.cpuMilli)),
    count: Int32Array.from(shapes.map((s) => s.gpuCount)),
    weight: Float64Array.from(shapes.map((s) => s.weight)),
  };
}

/** fit[j] and small[j] of `free` for every threshold j (see CompiledShapes); returns Σ free. */
export function thresholdAggregates(c: CompiledShapes, free: ArrayLike<number>, fit: Int32Array, small: Int32Array): number {
  const th = c.thresholds;
  let total = 0;
  for (let j = 0; j < th.length; j++) {
    fit[j] = 0;
    small[j] = 0;
  }
  for (let g = 0; g < free.length; g++) {
    const f = free[g] as number;
    total += f;
    for (let j = 0; j < th.length; j++) {
      if (f >= (th[j] as number)) fit[j] = (fit[j] as number) + 1;
      else small[j] = (small[j] as number) + f;
    }
  }
  return total;
}

/** The node fragment from threshold aggregates: the same sums, in the same order, as `nodeFragment`. */
export function fragmentFromAggregates(
  c: CompiledShapes,
  modelAllowed: Uint8Array,
  cpuLeftMilli: number,
  total: number,
  fit: Int32Array,
  small: Int32Array,
): number {
  if (total === 0) return 0;
  let q1 = 0;
  let q2 = 0;
  let q4 = 0;
  let xl = 0;
  let xr = 0;
  let na = 0;
  const thrOf = c.thrOf;
  const cpu = c.cpu;
  const w = c.weight;
  const count = c.count;
  for (let t = 0; t < thrOf.length; t++) {
    const j = thrOf[t] as number;
    const cpuOk = cpuLeftMilli >= (cpu[t] as number);
    const wt = w[t] as number;
    if (j < 0) {
      if (cpuOk) xl += wt * total;
      else xr += wt * total;
      continue;
    }
    if (modelAllowed[t] === 0) {
      na += wt * total;
      continue;
    }
    if ((fit[j] as number) >= (count[t] as number)) {
      if (cpuOk) q2 += wt * (small[j] as number);
      else q4 += wt * total;
    } else if (cpuOk) q2 += wt * total;
    else q1 += wt * total;
  }
  return q1 + q2 + q4 + xl + xr + na;
}

export function modelMask(shapes: readonly TypicalShape[], model: string): Uint8Array {
  const m = new Uint8Array(shapes.length);
  shapes.forEach((s, i) => {
    m[i] = s.gpuModels.length === 0 || s.gpuModels.includes(model) ? 1 : 0;
  });
  return m;
}

/** What `clusterFragmentation` reads of a node (NodeState has it). */
export interface FragNode {
  readonly spec: { readonly gpus: readonly { readonly model: string }[] };
  readonly cpuFreeMilli: number;
  /** Free milli per GPU (0 for an unhealthy one). */
  readonly gpuFree: ArrayLike<number>;
}

/**
 * The cluster's fragmentation rate for the expected workload (FGD's measure, as `sits demo` reports it): the
 * share of the free GPU milli that the typical shapes could not use, Σ nodeFragment / Σ free; 0 with nothing free.
 */
export function clusterFragmentation(
  nodes: Iterable<FragNode>,
  shapes: readonly TypicalShape[],
): { readonly fragmentMilli: number; readonly freeMilli: number; readonly ratio: number } {
  const masks = new Map<string, Uint8Array>();
  let frag = 0;
  let free = 0;
  for (const n of nodes) {
    const model = n.spec.gpus[0]?.model ?? '';
    let mask = masks.get(model);
    if (mask === undefined) {
      mask = modelMask(shapes, model);
      masks.set(model, mask);
    }
    for (let g = 0; g < n.gpuFree.length; g++) free += n.gpuFree[g] as number;
    frag += nodeFragment(shapes, mask, n.cpuFreeMilli, n.gpuFree);
  }
  return { fragmentMilli: frag, freeMilli: free, ratio: free === 0 ? 0 : frag / free };
}
