/**
 * The node scores of the policies the FGD paper (ATC '23) compares, exactly as its simulator computes them
 * (../shared/docs/fgd-reproduction.md §4). Constants: MaxCPU = 128000 milli, MaxGPU = 8000 milli.
 * F = free GPU milli of the node. All scores are integers; higher is better.
 */
import type { PodSpec } from '../../model/pod.ts';
import { gpuPodTag, type NodeState } from '../../snapshot/cluster-state.ts';
import type { Plugin } from '../../framework/types.ts';

const MAX_CPU = 128_000;
const MAX_GPU = 8_000;

/** DotProd: s = 1 − [(cpuLeft/128000)(cpu/128000) + (F/8000)(n·m/8000)] / 2; score = trunc(100 s). */
export function dotProdScore(pod: PodSpec, node: NodeState): number {
  const r = pod.request;
  const dot = (node.cpuFreeMilli / MAX_CPU) * (r.cpuMilli / MAX_CPU) + (node.gpuFreeMilli() / MAX_GPU) * ((r.gpuCount * r.gpuMilli) / MAX_GPU);
  return Math.trunc(100 * (1 - dot / 2));
}

/**
 * GpuClustering: CPU-only pods score 0. base = (25·(8000 − F)) div 8000; +75 if the node's GPU-pod tags
 * are exactly {pod tag}, +50 if they include it among others, +25 if the node has no GPU pod, +0 otherwise.
 */
export function gpuClusteringScore(pod: PodSpec, node: NodeState): number {
  const tag = gpuPodTag(pod.request.gpuCount, pod.request.gpuMilli);
  if (tag === undefined) return 0;
  const base = Math.trunc((25 * (MAX_GPU - node.gpuFreeMilli())) / MAX_GPU);
  const tags = node.gpuPodTags;
  if (tags.size === 0) return base + 25;
  if (tags.has(tag)) return tags.size === 1 ? base + 75 : base + 50;
  return base;
}

/**
 * GpuPacking: CPU-only pods score 0. k = fully free GPUs; all free → max(33 − k, k). Otherwise take GPUs
 * by free share ascending (stable by index) with free ≥ m until n are taken; u = how many were fully free:
 * u > 0 → max(50 − u, 33); u = 0 → max(100 − (Σ taken (free·100 div 1000)) div 10, 50).
 */
export function gpuPackingScore(pod: PodSpec, node: NodeState): number {
  const r = pod.request;
  if (r.gpuCount === 0) return 0;
  const free = node.gpuFree;
  let k = 0;
  for (let i = 0; i < free.length; i++) if (free[i] === 1000) k++;
  if (k === node.spec.gpus.length) return Math.max(33 - k, k);
  const order = Array.from(free.keys()).sort((a, b) => (free[a] as number) - (free[b] as number) || a - b);
  let taken = 0;
  let u = 0;
  let sum = 0;
  for (const i of order) {
    if (taken === r.gpuCount) break;
    const f = free[i] as number;
    if (node.gpuUsable[i] !== 1 || f < r.gpuMilli) continue;
    taken++;
    if (f === 1000) u++;
    sum += Math.trunc((f * 100) / 1000);
  }
  if (u > 0) return Math.max(50 - u, 33);
  return Math.max(100 - Math.trunc(sum / 10), 50);
}

/**
 * BestFit: s = 0.5 (cpuLeft − cpu)/128000 + 0.5 (F − n·m)/8000; score = trunc(100 (1 − s)). The paper's
 * min-max rescale afterwards preserves order and so never changes the choice; it is omitted.
 */
export function bestFitScore(pod: PodSpec, node: NodeState): number {
  const r = pod.request;
  const s = (0.5 * (node.cpuFreeMilli - r.cpuMilli)) / MAX_CPU + (0.5 * (node.gpuFreeMilli() - r.gpuCount * r.gpuMilli)) / MAX_GPU;
  return Math.trunc(100 * (1 - s));
}

export const dotProdPlugin = (): Plugin => ({ name: 'dotprod', score: dotProdScore });
export const gpuClusteringPlugin = (): Plugin => ({ name: 'gpu-clustering', score: gpuClusteringScore });
export const gpuPackingPlugin = (): Plugin => ({ name: 'gpu-packing', score: gpuPackingScore });
export const bestFitPlugin = (): Plugin => ({ name: 'best-fit', score: bestFitScore });
