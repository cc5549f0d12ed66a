/**
 * FGD (Fragmentation Gradient Descent): place a pod where the node's fragmentation for the expected workload
 * grows least (../shared/docs/fgd-reproduction.md §4). For a fractional pod every fitting GPU is tried and
 * the best kept (lowest index among equal integer scores); other pods take their n lowest-index fully free
 * GPUs. Score = trunc(σ((Frag(node) − Frag(after)) / 1000) × 100), with σ the logistic function.
 */
import type { PodSpec } from '../../model/pod.ts';
import type { NodeState } from '../../snapshot/cluster-state.ts';
import type { GpuMask, Plugin } from '../../framework/types.ts';
import { lowestFreeGpus } from '../baselines/gpu-pick.ts';
import { compileShapes, fragmentFromAggregates, modelMask, thresholdAggregates, type CompiledShapes } from './fragmentation.ts';
import { type TypicalShape } from '../../estimate/typical-shapes.ts';

export interface FgdChoice {
  readonly score: number;
  readonly gpus: readonly number[] | undefined;
}

const sigmoid = (d: number): number => 1 / (1 + Math.exp(-d));

/**
 * Caches each node's current fragment, threshold aggregates (see CompiledShapes) and model mask, keyed by
 * the node object and its version, so that "fragment after a hypothetical placement" costs
 * O(thresholds × changed GPUs + shapes) instead of a full re-evaluation.
 */
export class FragCache {
  readonly compiled: CompiledShapes;
  private readonly t: number;
  private owners: (NodeState | undefined)[] = [];
  private versions = new Int32Array(0);
  private frags = new Float64Array(0);
  private totals = new Int32Array(0);
  private fits = new Int32Array(0);
  private smalls = new Int32Array(0);
  private masks: (Uint8Array | undefined)[] = [];
  private readonly fit: Int32Array;
  private readonly small: Int32Array;

  constructor(readonly shapes: readonly TypicalShape[]) {
    this.compiled = compileShapes(shapes);
    this.t = this.compiled.thresholds.length;
    this.fit = new Int32Array(this.t);
    this.small = new Int32Array(this.t);
  }

  mask(node: NodeState): Uint8Array {
    this.ensure(node);
    return this.masks[node.idx] as Uint8Array;
  }

  /** Fragment of the node's current state. */
  current(node: NodeState): number {
    this.ensure(node);
    return this.frags[node.idx] as number;
  }

  /** Fragment of the node after taking cpu and `milli` from each GPU in `gpus`. */
  after(node: NodeState, cpuMilli: number, gpus: readonly number[], milli: number): number {
    this.load(node);
    for (const g of gpus) {
      const f = node.gpuFree[g] as number;
      this.change(f, f - milli);
    }
    return this.fromScratch(node, cpuMilli, gpus.length * milli);
  }

  /** Fragment after taking cpu, and `milli` from one GPU that has `free` milli free. */
  afterOne(node: NodeState, cpuMilli: number, free: number, milli: number): number {
    this.load(node);
    this.change(free, free - milli);
    return this.fromScratch(node, cpuMilli, milli);
  }

  /** Fragment after taking only cpu (a CPU-only pod). */
  afterCpu(node: NodeState, cpuMilli: number): number {
    this.load(node);
    return this.fromScratch(node, cpuMilli, 0);
  }

  /** Fragment after taking cpu and `count` fully free GPUs (any: all are equal for the fragment); undefined if too few. */
  afterWhole(node: NodeState, cpuMilli: number, count: number): number | undefined {
    let full = 0;
    for (let g = 0; g < node.gpuFree.length; g++) if (node.gpuUsable[g] === 1 && node.gpuFree[g] === 1000) full++;
    if (full < count) return undefined;
    this.load(node);
    for (let k = 0; k < count; k++) this.change(1000, 0);
    return this.fromScratch(node, cpuMilli, count * 1000);
  }

  private fromScratch(node: NodeState, cpuMilli: number, takenMilli: number): number {
    const i = node.idx;
    return fragmentFromAggregates(
      this.compiled,
      this.masks[i] as Uint8Array,
      node.cpuFreeMilli - cpuMilli,
      (this.totals[i] as number) - takenMilli,
      this.fit,
      this.small,
    );
  }

  /** Copies the node's aggregates into the scratch arrays. */
  private load(node: NodeState): void {
    this.ensure(node);
    const o = node.idx * this.t;
    for (let j = 0; j < this.t; j++) {
      this.fit[j] = this.fits[o + j] as number;
      this.small[j] = this.smalls[o + j] as number;
    }
  }

  /** One GPU's free milli goes from `from` to `to` in the scratch aggregates. */
  private change(from: number, to: number): void {
    const th = this.compiled.thresholds;
    const fit = this.fit;
    const small = this.small;
    for (let j = 0; j < th.length; j++) {
      const m = th[j] as number;
      if (from >= m) fit[j] = (fit[j] as number) - 1;
      else small[j] = (small[j] as number) - from;
      if (to >= m) fit[j] = (fit[j] as number) + 1;
      else small[j] = (small[j] as number) + to;
    }
  }

  private ensure(node: NodeState): void {
    const i = node.idx;
    if (i >= this.versions.length) this.grow(i + 1);
    if (this.owners[i] === node && this.versions[i] === node.version) return;
    if (this.owners[i] !== node) {
      this.owners[i] = node;
      this.masks[i] = modelMask(this.shapes, node.spec.gpus[0]?.model ?? '');
    }
    const o = i * this.t;
    const fit = this.fits.subarray(o, o + this.t);
    const small = this.smalls.subarray(o, o + this.t);
    const total = thresholdAggregates(this.compiled, node.gpuFree, fit, small);
    this.totals[i] = total;
    this.frags[i] = fragmentFromAggregates(this.compiled, this.masks[i] as Uint8Array, node.cpuFreeMilli, total, fit, small);
    this.versions[i] = node.version;
  }

  private grow(len: number): void {
    const n = Math.max(len, this.versions.length * 2, 64);
    const v = new Int32Array(n);
    v.set(this.versions);
    const f = new Float64Array(n);
    f.set(this.frags);
    const tot = new Int32Array(n);
    tot.set(this.totals);
    const fits = new Int32Array(n * this.t);
    fits.set(this.fits);
    const smalls = new Int32Array(n * this.t);
    smalls.set(this.smalls);
    this.versions = v;
    this.frags = f;
    this.totals = tot;
    this.fits = fits;
    this.smalls = smalls;
  }
}

/**
 * The paper's FGD choice on one node: integer score and the GPUs it implies. A fractional pod tries each
 * fitting GPU in index order and keeps the first with the highest integer score; GPUs with equal free
 * milli give equal scores, so only the first GPU of each free value is tried. With `allowed`, the same
 * choice among the allowed GPUs only (the score then is that choice's).
 */
export function fgdChoice(cache: FragCache, pod: PodSpec, node: NodeState, allowed?: GpuMask): FgdChoice {
  const r = pod.request;
  const before = cache.current(node);
  if (r.gpuCount === 1 && r.gpuMilli < 1000) {
    let best = -1;
    let bestGpu = -1;
    const free = node.gpuFree;
    for (let g = 0; g < free.length; g++) {
      const f = free[g] as number;
      if (node.gpuUsable[g] !== 1 || f < r.gpuMilli || (allowed !== undefined && allowed[g] !== 1) || seenBefore(node, g, f, allowed)) continue;
      const sc = Math.trunc(sigmoid((before - cache.afterOne(node, r.cpuMilli, f, r.gpuMilli)) / 1000) * 100);
      if (sc > best) {
        best = sc;
        bestGpu = g;
      }
    }
    return bestGpu < 0 ? { score: 0, gpus: undefined } : { score: best, gpus: [bestGpu] };
  }
  const gpus = r.gpuCount === 0 ? [] : lowestFreeGpus(node, r.gpuCount, 1000, allowed);
  if (gpus === undefined) return { score: 0, gpus: undefined };
  const score = Math.trunc(sigmoid((before - cache.after(node, r.cpuMilli, gpus, r.gpuMilli)) / 1000) * 100);
  return { score, gpus };
}

/** A usable (and allowed) GPU before index g has the same free milli (and so the same score). */
export function seenBefore(node: NodeState, g: number, f: number, allowed?: GpuMask): boolean {
  for (let k = 0; k < g; k++) if (node.gpuFree[k] === f && node.gpuUsable[k] === 1 && (allowed === undefined || allowed[k] === 1)) return true;
  return false;
}

export const fgdPlugin = (shapes: readonly TypicalShape[]): Plugin => {
  const cache = new FragCache(shapes);
  return {
    name: 'fgd',
    score: (pod, node) => fgdChoice(cache, pod, node).score,
    pickGpus: (pod, node, _ctx, allowed) => fgdChoice(cache, pod, node, allowed).gpus,
  };
};
