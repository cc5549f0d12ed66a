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
 * are left to the fragmentation plugin's choice (they share one device). With an `allowed` mask only the
 * allowed GPUs are candidates; the packing rules still count every free GPU of the node.
 * The search lives in the model because the step-time estimate ranks placements with it too; the device
 * picker that applies it to a node is plugins/topology/gpu-topology-pick.ts.
 */
import { ringBottleneckGBps, type NodeGpuTopology } from './topology.ts';

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

/** Distinct values of `values[g]` over `gpus` (a handful of GPUs: a quadratic scan allocates nothing). */
function distinct(values: readonly number[], gpus: readonly number[]): number {
  let c = 0;
  for (let i = 0; i < gpus.length; i++) {
    const v = values[gpus[i] as number] as number;
    let seen = false;
    for (let j = 0; j < i && !seen; j++) seen = values[gpus[j] as number] === v;
    if (!seen) c++;
  }
  return c;
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

/** Free GPUs (the first `nFree` of `free`) outside `gpus` that share a group (island, NUMA node, switch) with one of them. */
function freeLeftIn(groupOf: readonly number[], free: readonly number[], nFree: number, gpus: readonly number[]): number {
  let left = 0;
  for (let k = 0; k < nFree; k++) {
    const f = free[k] as number;
    const group = groupOf[f] as number;
    let touched = false;
    let inside = false;
    for (let i = 0; i < gpus.length; i++) {
      const g = gpus[i] as number;
      if (g === f) inside = true;
      else if (groupOf[g] === group) touched = true;
    }
    // f itself in `gpus` touches its own group, but is not left over.
    if (touched && !inside) left++;
  }
  return left;
}

/** Fills `c` for the set `gpus` (kept by reference). */
function evaluate(c: Candidate, topo: NodeGpuTopology, free: readonly number[], nFree: number, gpus: number[]): void {
  c.gpus = gpus;
  c.ring = ringBottleneckGBps(topo, gpus);
  c.numa = distinct(topo.numaOf, gpus);
  c.pcie = distinct(topo.pcieSwitchOf, gpus);
  c.islandFreeLeft = freeLeftIn(topo.islandOf, free, nFree, gpus);
  c.numaFreeLeft = freeLeftIn(topo.numaOf, free, nFree, gpus);
  c.pcieFreeLeft = freeLeftIn(topo.pcieSwitchOf, free, nFree, gpus);
}

const blank = (): Candidate => ({ gpus: [], ring: 0, numa: 0, pcie: 0, islandFreeLeft: 0, numaFreeLeft: 0, pcieFreeLeft: 0 });
/** Scratch: the search is synchronous and not re-entrant, so one set of records serves every call. */
const BEST = blank();
const CUR = blank();

/** Best set of `count` GPUs among `freeSet` (ascending indices) by the rules above. */
export function bestGpuSet(topo: NodeGpuTopology, freeSet: readonly number[], count: number): number[] | undefined {
  return bestGpuSetAmong(topo, freeSet, freeSet.length, count);
}

/**
 * Sets of `count` among the first `nCand` of `cand` (a subset of the free GPUs, by default all of them) are
 * visited in lexicographic order; the packing rules count the first `nFree` of `free`. The candidate records
 * are reused, the set being built is one array per call and the best one is copied into the result (one
 * more), so a call makes no garbage per set.
 */
export function bestGpuSetAmong(
  topo: NodeGpuTopology,
  free: readonly number[],
  nFree: number,
  count: number,
  cand: readonly number[] = free,
  nCand: number = nFree,
): number[] | undefined {
  if (count > nCand || count <= 0) return undefined;
  if (count === nCand) return cand.slice(0, nCand);
  const best = BEST;
  const cur = CUR;
  const result = new Array<number>(count).fill(0);
  best.gpus = result;
  const pick = new Array<number>(count).fill(0);
  let depth = 0;
  let found = false;
  let visited = 0;
  const rec = (from: number): void => {
    if (visited >= MAX_SUBSETS) return;
    if (depth === count) {
      visited++;
      evaluate(cur, topo, free, nFree, pick);
      if (!found || better(cur, best)) {
        best.ring = cur.ring;
        best.numa = cur.numa;
        best.pcie = cur.pcie;
        best.islandFreeLeft = cur.islandFreeLeft;
        best.numaFreeLeft = cur.numaFreeLeft;
        best.pcieFreeLeft = cur.pcieFreeLeft;
        for (let i = 0; i < count; i++) result[i] = pick[i] as number;
        found = true;
      }
      return;
    }
    for (let i = from; i <= nCand - (count - depth); i++) {
      pick[depth++] = cand[i] as number;
      rec(i + 1);
      depth--;
    }
  };
  rec(0);
  // Drop the references to this call's arrays so the scratch records hold nothing.
  best.gpus = cur.gpus = EMPTY;
  return found ? result : undefined;
}
const EMPTY: number[] = [];
