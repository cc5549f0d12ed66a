/**
 * The FGD experiment's cluster and per-seed workload (../shared/docs/fgd-reproduction.md §1–2):
 * originals sorted by name → seeded shuffle → tune to `tune` × GPU capacity (clones of uniformly drawn
 * originals appended; stop when the next clone's per-GPU milli would cross the target; or trim random pods
 * when the trace starts above it) → a random permutation of the nodes (sorted by name) as tie-break ranks.
 * One seeded RNG drives all three steps in that order.
 */
import { makeGpus } from '../../core/model/gpu.ts';
import type { NodeSpec } from '../../core/model/node.ts';
import { makePod, type PodSpec } from '../../core/model/pod.ts';
import { flatTopology } from '../../core/model/topology.ts';
import { seededRng, shuffle, type Rng } from '../../core/ports.ts';
import { typicalShapes, type TypicalShape } from '../../core/estimate/typical-shapes.ts';
import type { TraceNode, TracePod } from '../../sim/trace/types.ts';

/** The paper's simulator allows 1001 pods per node (never binding in practice). */
export const FGD_MAX_PODS = 1001;

export function toNodeSpec(n: TraceNode, maxPods = FGD_MAX_PODS): NodeSpec {
  return {
    name: n.name,
    cpuMilli: n.cpuMilli,
    memoryMiB: n.memoryMiB,
    maxPods,
    gpus: makeGpus(n.gpuCount, n.model),
    topology: flatTopology(n.gpuCount),
    location: { zone: 'z', block: 'b', rack: 'r' },
    labels: {},
    taints: [],
    unschedulable: false,
  };
}

export function toPodSpec(p: TracePod, id = p.name): PodSpec {
  return makePod(
    id,
    { cpuMilli: p.cpuMilli, memoryMiB: p.memoryMiB, gpuCount: p.gpuCount, gpuMilli: p.gpuCount === 0 ? 0 : p.gpuMilli },
    { gpuModels: p.gpuCount === 0 ? [] : p.gpuModels, ...(p.gang === undefined ? {} : { gang: p.gang }) },
  );
}

export const byName = <T extends { name: string }>(a: T, b: T): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The typical workload of a trace: from the name-sorted originals, CPU-only pods included (§5), with mean memory per shape. */
export function traceTypicalShapes(pods: readonly TracePod[]): TypicalShape[] {
  return typicalShapes(pods.map((p) => ({ cpuMilli: p.cpuMilli, gpuMilli: p.gpuCount === 0 ? 0 : p.gpuMilli, gpuCount: p.gpuCount, gpuModels: p.gpuCount === 0 ? [] : p.gpuModels, memoryMiB: p.memoryMiB })));
}

export function capacityGpuMilli(nodes: readonly TraceNode[]): number {
  let s = 0;
  for (const n of nodes) s += n.gpuCount * 1000;
  return s;
}

export interface FgdWorkload {
  /** Pods in submission order. */
  readonly pods: readonly PodSpec[];
  /** Tie-break rank per node name (lower wins): a fixed random order for the run. */
  readonly rankOf: (name: string) => number;
  readonly clones: number;
  readonly removed: number;
  /** The RNG after workload generation; policies that draw (Random) continue from it. */
  readonly rng: Rng;
}

export function fgdWorkload(nodes: readonly TraceNode[], originals: readonly TracePod[], seed: number, tune = 1.3): FgdWorkload {
  const rng = seededRng(seed);
  const sorted = [...originals].sort(byName);
  const specs = sorted.map((p) => toPodSpec(p));
  const list = shuffle([...specs], rng);
  const target = tune * capacityGpuMilli(nodes);
  let total = 0;
  for (const p of list) total += p.request.gpuCount * p.request.gpuMilli;
  let clones = 0;
  let removed = 0;
  if (total < target) {
    for (;;) {
      const o = specs[rng.int(specs.length)] as PodSpec;
      // The paper's stop test uses the per-GPU share, not n × share (fgd-reproduction.md §2 step 3).
      if (total + o.request.gpuMilli > target) break;
      total += o.request.gpuCount * o.request.gpuMilli;
      list.push({ ...o, id: `${o.id}-tuned-${clones}` });
      clones++;
    }
  } else {
    while (total > target && list.length > 0) {
      const i = rng.int(list.length);
      const [p] = list.splice(i, 1) as [PodSpec];
      total -= p.request.gpuCount * p.request.gpuMilli;
      removed++;
    }
  }
  const nodeOrder = [...nodes].sort(byName);
  const perm = shuffle(
    Array.from({ length: nodeOrder.length }, (_, i) => i),
    rng,
  );
  const rank = new Map(nodeOrder.map((n, i) => [n.name, perm[i] as number]));
  return { pods: list, rankOf: (name) => rank.get(name) ?? Number.MAX_SAFE_INTEGER, clones, removed, rng };
}
