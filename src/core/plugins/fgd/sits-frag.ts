/**
 * SITS fragmentation score: FGD's objective without its integer truncation, and a GPU choice that is
 * topology-aware for whole-GPU pods. Score = 100·σ((Frag(node) − Frag(after)) / 1000), a real number, so
 * near-equal nodes are not reduced to ties broken by name order.
 */
import type { PodSpec } from '../../model/pod.ts';
import type { NodeState } from '../../snapshot/cluster-state.ts';
import type { Plugin } from '../../framework/types.ts';
import { pickTopologyGpus } from '../topology/gpu-topology-pick.ts';
import { FragCache } from './fgd.ts';
import type { TypicalShape } from './fragmentation.ts';

const sigmoid = (d: number): number => 1 / (1 + Math.exp(-d));

export interface SitsChoice {
  readonly score: number;
  readonly gpus: readonly number[] | undefined;
}

export function sitsFragChoice(cache: FragCache, pod: PodSpec, node: NodeState): SitsChoice {
  const r = pod.request;
  const before = cache.current(node);
  if (r.gpuCount === 1 && r.gpuMilli < 1000) {
    let best = Number.NEGATIVE_INFINITY;
    let bestGpu = -1;
    let bestFree = Number.POSITIVE_INFINITY;
    const one = [0];
    for (let g = 0; g < node.gpuFree.length; g++) {
      const free = node.gpuFree[g] as number;
      if (node.gpuUsable[g] !== 1 || free < r.gpuMilli) continue;
      one[0] = g;
      const sc = sigmoid((before - cache.after(node, r.cpuMilli, one, r.gpuMilli)) / 1000) * 100;
      // Equal fragmentation change: fill the fuller GPU first (keeps whole GPUs whole).
      if (sc > best + 1e-9 || (Math.abs(sc - best) <= 1e-9 && free < bestFree)) {
        best = sc;
        bestGpu = g;
        bestFree = free;
      }
    }
    return bestGpu < 0 ? { score: 0, gpus: undefined } : { score: best, gpus: [bestGpu] };
  }
  const gpus = r.gpuCount === 0 ? [] : pickTopologyGpus(pod, node);
  if (gpus === undefined) return { score: 0, gpus: undefined };
  return { score: sigmoid((before - cache.after(node, r.cpuMilli, gpus, r.gpuMilli)) / 1000) * 100, gpus };
}

export const sitsFragPlugin = (shapes: readonly TypicalShape[]): Plugin => {
  const cache = new FragCache(shapes);
  return {
    name: 'sits-frag',
    score: (pod, node) => sitsFragChoice(cache, pod, node).score,
    pickGpus: (pod, node) => sitsFragChoice(cache, pod, node).gpus,
  };
};
