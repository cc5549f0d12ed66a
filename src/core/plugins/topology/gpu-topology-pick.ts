/**
 * NUMA/PCIe-aware GPU choice inside a node (seed 000 §3.2, "NUMA-aware first fit", made exact).
 * For n whole GPUs: among the sets of n fully free usable GPUs, take the one with
 *   1. the highest ring all-reduce bottleneck bandwidth (NVSwitch/NVLink before PCIe before cross-socket),
 *   2. the fewest free GPUs left in the NVLink islands it touches (pack islands, keep whole islands free
 *      for the next multi-GPU pod — fragmentation inside the node),
 *   3. the fewest NUMA nodes, then the fewest PCIe switches,
 *   4. the fewest free GPUs left on the NUMA nodes, then under the PCIe switches it touches (pack them too),
 *   5. the lowest indices (first fit).
 * For one whole GPU the same rules read "the most used island, socket and switch first". Fractional pods
 * are left to the fragmentation plugin's choice (they share one device).
 */
import type { PodSpec } from '../../model/pod.ts';
import { ringBottleneckGBps, type NodeGpuTopology } from '../../model/topology.ts';
import type { NodeState } from '../../snapshot/cluster-state.ts';

const MAX_SUBSETS = 4096;

interface Candidate {
  gpus: number[];
  ring: number;
  numa: number;
  pcie: number;
  islandFreeLeft: number;
  numaFreeLeft: number;
  pcieFreeLeft: number;
}

function distinct(values: readonly number[], gpus: readonly number[]): number {
  const s = new Set<number>();
  for (const g of gpus) s.add(values[g] as number);
  return s.size;
}

function better(a: Candidate, b: Candidate): boolean {
  if (a.ring !== b.ring) return a.ring > b.ring;
  if (a.islandFreeLeft !== b.islandFreeLeft) return a.islandFreeLeft < b.islandFreeLeft;
  if (a.numa !== b.numa) return a.numa < b.numa;
  if (a.pcie !== b.pcie) return a.pcie < b.pcie;
  if (a.numaFreeLeft !== b.numaFreeLeft) return a.numaFreeLeft < b.numaFreeLeft;
  if (a.pcieFreeLeft !== b.pcieFreeLeft) return a.pcieFreeLeft < b.pcieFreeLeft;
  for (let i = 0; i < a.gpus.length; i++) if (a.gpus[i] !== b.gpus[i]) return (a.gpus[i] as number) < (b.gpus[i] as number);
  return false;
}

/** Free GPUs outside `gpus` that share a group (island, NUMA node, switch) with one of them. */
function freeLeftIn(groupOf: readonly number[], freeSet: readonly number[], gpus: readonly number[]): number {
  const touched = new Set<number>();
  for (const g of gpus) touched.add(groupOf[g] as number);
  let left = 0;
  for (const f of freeSet) if (touched.has(groupOf[f] as number) && !gpus.includes(f)) left++;
  return left;
}

function evaluate(topo: NodeGpuTopology, freeSet: readonly number[], gpus: number[]): Candidate {
  return {
    gpus,
    ring: ringBottleneckGBps(topo, gpus),
    numa: distinct(topo.numaOf, gpus),
    pcie: distinct(topo.pcieSwitchOf, gpus),
    islandFreeLeft: freeLeftIn(topo.islandOf, freeSet, gpus),
    numaFreeLeft: freeLeftIn(topo.numaOf, freeSet, gpus),
    pcieFreeLeft: freeLeftIn(topo.pcieSwitchOf, freeSet, gpus),
  };
}

/** Best set of `count` GPUs among `freeSet` (ascending indices) by the rules above. */
export function bestGpuSet(topo: NodeGpuTopology, freeSet: readonly number[], count: number): number[] | undefined {
  if (count > freeSet.length || count <= 0) return undefined;
  if (count === freeSet.length) return [...freeSet];
  let best: Candidate | undefined;
  let visited = 0;
  const pick: number[] = [];
  const rec = (from: number): void => {
    if (visited >= MAX_SUBSETS) return;
    if (pick.length === count) {
      visited++;
      const c = evaluate(topo, freeSet, [...pick]);
      if (best === undefined || better(c, best)) best = c;
      return;
    }
    for (let i = from; i <= freeSet.length - (count - pick.length); i++) {
      pick.push(freeSet[i] as number);
      rec(i + 1);
      pick.pop();
    }
  };
  rec(0);
  return best?.gpus;
}

export function pickTopologyGpus(pod: PodSpec, node: NodeState): number[] | undefined {
  const r = pod.request;
  const freeSet: number[] = [];
  for (let i = 0; i < node.gpuFree.length; i++) if (node.gpuUsable[i] === 1 && node.gpuFree[i] === 1000) freeSet.push(i);
  return bestGpuSet(node.spec.topology, freeSet, r.gpuCount);
}
