/** A node as the scheduler sees it: allocatable host resources, GPU devices, in-node and cluster topology. */
import type { GpuDevice } from './gpu.ts';
import type { NodeGpuTopology, NodeLocation, NodePci } from './topology.ts';

export interface Taint {
  readonly key: string;
  readonly value?: string;
  readonly effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

export interface NodeSpec {
  readonly name: string;
  readonly cpuMilli: number;
  readonly memoryMiB: number;
  readonly maxPods: number;
  readonly gpus: readonly GpuDevice[];
  readonly topology: NodeGpuTopology;
  readonly location: NodeLocation;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
  readonly unschedulable: boolean;
  /**
   * Allocatable resources other than cpu, memory, pods and nvidia.com/gpu (ephemeral-storage and hugepages in
   * bytes, extended resources as counts), when the node has any.
   */
  readonly scalar?: Readonly<Record<string, number>>;
  /** Preset id the node was made from, when any (informational). */
  readonly shape?: string;
  /** GPU bus ids and NICs, when the node publishes them (for the NCCL topology file of the pods placed there). */
  readonly pci?: NodePci;
}

/** The GPU model of a node: a node carries one model (mixed nodes report the first). */
export function nodeGpuModel(node: NodeSpec): string {
  return node.gpus[0]?.model ?? '';
}
