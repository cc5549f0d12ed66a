/**
 * The `gpu-topology` device picker's choice: n fully free usable GPUs of the node, the best set by the NUMA/PCIe
 * rules of model/gpu-sets.ts (ring bandwidth, then packing islands, sockets and switches, then first fit).
 */
import type { PodSpec } from '../../model/pod.ts';
import { bestGpuSetAmong } from '../../model/gpu-sets.ts';
import type { NodeState } from '../../snapshot/cluster-state.ts';
import type { GpuMask } from '../../framework/types.ts';

/** Free GPU indices of the node being picked for; only the first `nFree` entries count (never shrunk, so never re-grown). */
const FREE: number[] = [];
/** The allowed ones among them, when the pick has a mask (same reuse). */
const ALLOWED: number[] = [];

export function pickTopologyGpus(pod: PodSpec, node: NodeState, allowed?: GpuMask): number[] | undefined {
  let nFree = 0;
  for (let i = 0; i < node.gpuFree.length; i++) if (node.gpuUsable[i] === 1 && node.gpuFree[i] === 1000) FREE[nFree++] = i;
  if (allowed === undefined) return bestGpuSetAmong(node.spec.topology, FREE, nFree, pod.request.gpuCount);
  let nAllowed = 0;
  for (let k = 0; k < nFree; k++) if (allowed[FREE[k] as number] === 1) ALLOWED[nAllowed++] = FREE[k] as number;
  return bestGpuSetAmong(node.spec.topology, FREE, nFree, pod.request.gpuCount, ALLOWED, nAllowed);
}
