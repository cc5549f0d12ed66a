/**
 * kube-scheduler's default resource scores (NodeResourcesFit LeastAllocated + NodeResourcesBalancedAllocation),
 * over CPU and memory with equal weights, as its default configuration does (GPUs are not scored).
 */
import type { PodSpec } from '../../model/pod.ts';
import type { NodeState } from '../../snapshot/cluster-state.ts';
import type { Plugin } from '../../framework/types.ts';

/** LeastAllocated: mean over CPU and memory of (capacity − requested after placement) / capacity × 100. */
export function leastAllocatedScore(pod: PodSpec, node: NodeState): number {
  const s = node.spec;
  const cpu = s.cpuMilli === 0 ? 0 : ((s.cpuMilli - node.cpuUsedMilli - pod.request.cpuMilli) * 100) / s.cpuMilli;
  const mem = s.memoryMiB === 0 ? 0 : ((s.memoryMiB - node.memUsedMiB - pod.request.memoryMiB) * 100) / s.memoryMiB;
  return Math.trunc((Math.max(0, cpu) + Math.max(0, mem)) / 2);
}

/** BalancedAllocation: (1 − standard deviation of the CPU and memory utilisation fractions) × 100. */
export function balancedAllocationScore(pod: PodSpec, node: NodeState): number {
  const s = node.spec;
  const fc = s.cpuMilli === 0 ? 1 : Math.min(1, (node.cpuUsedMilli + pod.request.cpuMilli) / s.cpuMilli);
  const fm = s.memoryMiB === 0 ? 1 : Math.min(1, (node.memUsedMiB + pod.request.memoryMiB) / s.memoryMiB);
  const std = Math.abs(fc - fm) / 2;
  return Math.trunc((1 - std) * 100);
}

export const leastAllocatedPlugin = (): Plugin => ({ name: 'least-allocated', score: leastAllocatedScore });
export const balancedAllocationPlugin = (): Plugin => ({ name: 'balanced-allocation', score: balancedAllocationScore });
