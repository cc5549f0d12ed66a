/**
 * FGD (Fragmentation Gradient Descent): place a pod where the node's fragmentation for the expected workload
 * grows least (../shared/docs/fgd-reproduction.md §4). For a fractional pod every fitting GPU is tried and
 * the best kept (lowest index among equal integer scores); other pods take their n lowest-index fully free
 * GPUs. Score = trunc(σ((Frag(node) − Frag(after)) / 1000) × 100), with σ the logistic function.
 */
import type { PodSpec } from '../../model/pod.ts';
import type { NodeState } from '../../snapshot/cluster-state.ts';
import type { Plugin } from '../../framework/types.ts';
import { lowestFreeGpus } from '../baselines/gpu-pick.ts';
import { modelMask, nodeFragment, type TypicalShape } from './fragmentation.ts';

export interface FgdChoice {
  readonly score: number;
  readonly gpus: readonly number[] | undefined;
}

const sigmoid = (d: number): number => 1 / (1 + Math.exp(-d));

/** Caches each node's current fragment and model mask, keyed by node index and version. */
export class FragCache {
  private versions = new Int32Array(0);
  private frags = new Float64Array(0);
  private masks: Uint8Array[] = [];
  private scratch = new Int32Array(16);

  constructor(readonly shapes: readonly TypicalShape[]) {}

  mask(node: NodeState): Uint8Array {
    let m = this.masks[node.idx];
    if (m === undefined) {
      m = modelMask(this.shapes, node.spec.gpus[0]?.model ?? '');
      this.masks[node.idx] = m;
    }
    return m;
  }

  current(node: NodeState): number {
    const i = node.idx;
    if (i >= this.versions.length) this.grow(i + 1);
    if (this.versions[i] === node.version + 1) return this.frags[i] as number;
    const f = nodeFragment(this.shapes, this.mask(node), node.cpuFreeMilli, node.gpuFree);
    this.versions[i] = node.version + 1;
    this.frags[i] = f;
    return f;
  }

  /** Fragment of the node after taking cpu and `milli` from each GPU in `gpus`. */
  after(node: NodeState, cpuMilli: number, gpus: readonly number[], milli: number): number {
    const n = node.gpuFree.length;
    if (this.scratch.length < n) this.scratch = new Int32Array(n);
    const free = this.scratch.subarray(0, n);
    free.set(node.gpuFree);
    for (const g of gpus) free[g] = (free[g] as number) - milli;
    return nodeFragment(this.shapes, this.mask(node), node.cpuFreeMilli - cpuMilli, free);
  }

  private grow(len: number): void {
    const v = new Int32Array(Math.max(len, this.versions.length * 2));
    v.set(this.versions);
    const f = new Float64Array(v.length);
    f.set(this.frags);
    this.versions = v;
    this.frags = f;
  }
}

/** The paper's FGD choice on one node: integer score and the GPUs it implies. */
export function fgdChoice(cache: FragCache, pod: PodSpec, node: NodeState): FgdChoice {
  const r = pod.request;
  const before = cache.current(node);
  if (r.gpuCount === 1 && r.gpuMilli < 1000) {
    let best = -1;
    let bestGpu = -1;
    const one = [0];
    for (let g = 0; g < node.gpuFree.length; g++) {
      if (node.gpuUsable[g] !== 1 || (node.gpuFree[g] as number) < r.gpuMilli) continue;
      one[0] = g;
      const sc = Math.trunc(sigmoid((before - cache.after(node, r.cpuMilli, one, r.gpuMilli)) / 1000) * 100);
      if (sc > best) {
        best = sc;
        bestGpu = g;
      }
    }
    return bestGpu < 0 ? { score: 0, gpus: undefined } : { score: best, gpus: [bestGpu] };
  }
  const gpus = r.gpuCount === 0 ? [] : lowestFreeGpus(node, r.gpuCount);
  if (gpus === undefined) return { score: 0, gpus: undefined };
  const score = Math.trunc(sigmoid((before - cache.after(node, r.cpuMilli, gpus, r.gpuMilli)) / 1000) * 100);
  return { score, gpus };
}

export const fgdPlugin = (shapes: readonly TypicalShape[]): Plugin => {
  const cache = new FragCache(shapes);
  return {
    name: 'fgd',
    score: (pod, node) => fgdChoice(cache, pod, node).score,
    pickGpus: (pod, node) => fgdChoice(cache, pod, node).gpus,
  };
};
