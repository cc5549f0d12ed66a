/**
 * GPU choice inside a node for the baseline policies (FGD paper's simulator):
 * - best fit: a fractional pod takes the usable GPU with the least free share that still fits (ties: lowest
 *   index); n whole GPUs are the n lowest-index fully free GPUs.
 * - random: a fractional pod takes a uniformly random fitting GPU; whole GPUs as in best fit.
 * With an `allowed` mask (see `Plugin.pickGpus`) the same rules apply to the allowed GPUs only.
 */
import type { PodSpec } from '../../model/pod.ts';
import type { NodeState } from '../../snapshot/cluster-state.ts';
import type { GpuMask, Plugin } from '../../framework/types.ts';
import type { Rng } from '../../ports.ts';

export function lowestFreeGpus(node: NodeState, n: number, milli = 1000, allowed?: GpuMask): number[] | undefined {
  const out: number[] = [];
  for (let i = 0; i < node.gpuFree.length && out.length < n; i++) {
    if (node.gpuUsable[i] === 1 && (node.gpuFree[i] as number) >= milli && (allowed === undefined || allowed[i] === 1)) out.push(i);
  }
  return out.length === n ? out : undefined;
}

export function bestFitGpu(node: NodeState, milli: number, allowed?: GpuMask): number | undefined {
  let best = -1;
  let bestFree = Number.POSITIVE_INFINITY;
  for (let i = 0; i < node.gpuFree.length; i++) {
    const f = node.gpuFree[i] as number;
    if (node.gpuUsable[i] === 1 && f >= milli && f < bestFree && (allowed === undefined || allowed[i] === 1)) {
      best = i;
      bestFree = f;
    }
  }
  return best < 0 ? undefined : best;
}

export function pickBestFit(pod: PodSpec, node: NodeState, allowed?: GpuMask): number[] | undefined {
  const r = pod.request;
  if (r.gpuCount === 1 && r.gpuMilli < 1000) {
    const g = bestFitGpu(node, r.gpuMilli, allowed);
    return g === undefined ? undefined : [g];
  }
  return lowestFreeGpus(node, r.gpuCount, 1000, allowed);
}

export function pickRandomFit(pod: PodSpec, node: NodeState, rng: Rng, allowed?: GpuMask): number[] | undefined {
  const r = pod.request;
  if (r.gpuCount === 1 && r.gpuMilli < 1000) {
    const fits: number[] = [];
    for (let i = 0; i < node.gpuFree.length; i++)
      if (node.gpuUsable[i] === 1 && (node.gpuFree[i] as number) >= r.gpuMilli && (allowed === undefined || allowed[i] === 1)) fits.push(i);
    return fits.length === 0 ? undefined : [fits[rng.int(fits.length)] as number];
  }
  return lowestFreeGpus(node, r.gpuCount, 1000, allowed);
}

export const bestFitGpuPlugin = (): Plugin => ({ name: 'gpu-best-fit', pickGpus: (pod, node, _ctx, allowed) => pickBestFit(pod, node, allowed) });
export const randomGpuPlugin = (): Plugin => ({ name: 'gpu-random', pickGpus: (pod, node, ctx, allowed) => pickRandomFit(pod, node, ctx.rng, allowed) });
