/**
 * SITS fragmentation score: FGD's objective (least growth of the expected-workload fragment) with two
 * lookahead terms that FGD lacks, both learned from the typical workload only (see docs/adr/0003):
 *
 *   D = ΔFrag + (β − 1) · W_na(model) · taken − λ · max(0, S(after) − S(before))
 *   score = trunc(100 · σ(D / 1000)),   σ(x) = 1 / (1 + e^−x)
 *
 * - ΔFrag = Frag(node) − Frag(after), the paper's node fragment (fragmentation.ts) for the typical shapes.
 * - Scarce-model protection: W_na(model) = Σ p_t over GPU shapes whose model list excludes the node's model.
 *   FGD already counts such capacity once as fragment (category NA); SITS counts it β = 3 times, so pods
 *   that may run anywhere use the GPUs that constrained pods cannot, and keep the scarce models free.
 * - CPU stranding: S(x) = max(0, F − cpuLeft / κ) is the free GPU milli the node's CPU cannot feed,
 *   with κ = Σ p_t·cpu_t / Σ p_t·n_t·m_t the workload's CPU per GPU milli. A placement that makes the
 *   node more CPU-starved than it was pays λ = 1 per milli (never a reward: a node that is CPU-poor by
 *   build does not attract pods for that reason).
 * Integer truncation is kept on purpose: equal scores go to the fixed node order (ranks), which
 * consolidates placements like first fit; removing it loses ~1.4 pp on the default trace.
 *
 * GPU choice: a fractional pod tries every fitting GPU (one per distinct free value) and takes the first
 * index with the highest score; whole GPUs go to the topology-aware pick (NVLink/NUMA/PCIe), which on a
 * flat node is the lowest-index free GPUs. All whole GPUs are equal for the fragment, so the score uses
 * "any n fully free GPUs" and never runs the topology search.
 */
import type { PodSpec } from '../../model/pod.ts';
import type { NodeState } from '../../snapshot/cluster-state.ts';
import type { Plugin } from '../../framework/types.ts';
import { pickTopologyGpus } from '../topology/gpu-topology-pick.ts';
import { FragCache, seenBefore } from './fgd.ts';
import type { TypicalShape } from './fragmentation.ts';

const sigmoid = (d: number): number => 1 / (1 + Math.exp(-d));

/** Weight of capacity that some constrained typical shape may not use (FGD's NA category counts 1). */
export const SCARCE_MODEL_WEIGHT = 3;
/** Penalty per milli of GPU capacity newly stranded by lack of CPU. */
export const CPU_STRAND_WEIGHT = 1;

export interface SitsChoice {
  readonly score: number;
  /** The GPU a fractional pod should take; -1 for other pods (their GPUs come from the topology pick). */
  readonly gpu: number;
}

/** κ: expected CPU milli per GPU milli of the typical GPU shapes; 0 when there are none. */
export function cpuPerGpuMilli(shapes: readonly TypicalShape[]): number {
  let cpu = 0;
  let gpu = 0;
  for (const s of shapes) {
    if (s.gpuMilli <= 0 || s.gpuCount <= 0) continue;
    cpu += s.weight * s.cpuMilli;
    gpu += s.weight * s.gpuMilli * s.gpuCount;
  }
  return gpu > 0 ? cpu / gpu : 0;
}

/** S: free GPU milli that the node's CPU cannot feed at κ CPU milli per GPU milli (0 when κ = 0). */
export function strandedGpuMilli(freeGpuMilli: number, cpuLeftMilli: number, kappa: number): number {
  return kappa > 0 ? Math.max(0, freeGpuMilli - cpuLeftMilli / kappa) : 0;
}

/** W_na: weight of the GPU shapes that may not use `model`. */
export function excludedWeight(shapes: readonly TypicalShape[], model: string): number {
  let w = 0;
  for (const s of shapes) if (s.gpuMilli > 0 && s.gpuModels.length > 0 && !s.gpuModels.includes(model)) w += s.weight;
  return w;
}

/** Everything the score needs besides pod and node: the fragment cache and the workload constants. */
export class SitsFragModel {
  readonly cache: FragCache;
  readonly kappa: number;
  /** GPU chosen by the last `sitsFragScore` for a fractional pod (-1 otherwise): no object per evaluation. */
  chosenGpu = -1;
  private readonly excluded = new Map<string, number>();

  constructor(readonly shapes: readonly TypicalShape[]) {
    this.cache = new FragCache(shapes);
    this.kappa = cpuPerGpuMilli(shapes);
  }

  excludedWeight(model: string): number {
    let w = this.excluded.get(model);
    if (w === undefined) {
      w = excludedWeight(this.shapes, model);
      this.excluded.set(model, w);
    }
    return w;
  }
}

const toScore = (d: number): number => Math.trunc(sigmoid(d / 1000) * 100);

/** Score and chosen GPU of `pod` on `node` (see the file comment for the rule). */
export function sitsFragChoice(model: SitsFragModel, pod: PodSpec, node: NodeState): SitsChoice {
  const score = sitsFragScore(model, pod, node);
  return { score, gpu: model.chosenGpu };
}

/** Score of `pod` on `node`; for a fractional pod the GPU it implies is left in `model.chosenGpu`. */
export function sitsFragScore(model: SitsFragModel, pod: PodSpec, node: NodeState): number {
  const r = pod.request;
  const cache = model.cache;
  model.chosenGpu = -1;
  const before = cache.current(node);
  const taken = r.gpuCount * r.gpuMilli;
  const freeBefore = node.gpuFreeMilli();
  const cpuLeft = node.cpuFreeMilli;
  const strandBefore = strandedGpuMilli(freeBefore, cpuLeft, model.kappa);
  const strandAfter = strandedGpuMilli(freeBefore - taken, cpuLeft - r.cpuMilli, model.kappa);
  const extra = (SCARCE_MODEL_WEIGHT - 1) * model.excludedWeight(node.spec.gpus[0]?.model ?? '') * taken - CPU_STRAND_WEIGHT * Math.max(0, strandAfter - strandBefore);
  if (r.gpuCount === 1 && r.gpuMilli < 1000) {
    let best = -1;
    let bestGpu = -1;
    const free = node.gpuFree;
    for (let g = 0; g < free.length; g++) {
      const f = free[g] as number;
      if (node.gpuUsable[g] !== 1 || f < r.gpuMilli || seenBefore(node, g, f)) continue;
      const sc = toScore(before - cache.afterOne(node, r.cpuMilli, f, r.gpuMilli) + extra);
      if (sc > best) {
        best = sc;
        bestGpu = g;
      }
    }
    model.chosenGpu = bestGpu;
    return bestGpu < 0 ? 0 : best;
  }
  if (r.gpuCount === 0 || r.gpuMilli === 0) return toScore(before - cache.afterCpu(node, r.cpuMilli) + extra);
  const after = r.gpuMilli >= 1000 ? cache.afterWhole(node, r.cpuMilli, r.gpuCount) : undefined;
  return after === undefined ? 0 : toScore(before - after + extra);
}

export const sitsFragPlugin = (shapes: readonly TypicalShape[]): Plugin => {
  const model = new SitsFragModel(shapes);
  return {
    name: 'sits-frag',
    score: (pod, node) => sitsFragScore(model, pod, node),
    pickGpus: (pod, node) => {
      const r = pod.request;
      if (r.gpuCount === 1 && r.gpuMilli < 1000) {
        sitsFragScore(model, pod, node);
        return model.chosenGpu < 0 ? undefined : [model.chosenGpu];
      }
      return pickTopologyGpus(pod, node);
    },
  };
};
