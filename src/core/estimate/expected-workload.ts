/**
 * The expected workload that fragmentation-aware scoring plans for. A batch (or a short window of
 * arrivals) says little about what comes next, so its shapes are blended with a prior of whole-GPU
 * training and inference pods: without that prior, breaking an idle GPU for a fractional pod would look
 * free whenever the batch happens to hold only fractional pods.
 */
import type { PodSpec } from '../model/pod.ts';
import { typicalShapes, type TypicalShape } from './typical-shapes.ts';

/** Whole-GPU demand every GPU cluster sees: 1, 2, 4 and 8-GPU pods, fewer as they grow. */
export const WHOLE_GPU_PRIOR: readonly TypicalShape[] = [
  { cpuMilli: 8000, gpuMilli: 1000, gpuCount: 1, gpuModels: [], weight: 0.4 },
  { cpuMilli: 16000, gpuMilli: 1000, gpuCount: 2, gpuModels: [], weight: 0.25 },
  { cpuMilli: 32000, gpuMilli: 1000, gpuCount: 4, gpuModels: [], weight: 0.2 },
  { cpuMilli: 64000, gpuMilli: 1000, gpuCount: 8, gpuModels: [], weight: 0.15 },
];

/** Weights scaled so that `observed` gets `observedShare` of the mass and the prior the rest. */
export function blendShapes(observed: readonly TypicalShape[], prior: readonly TypicalShape[], observedShare: number): TypicalShape[] {
  if (observed.length === 0) return prior.map((s) => ({ ...s }));
  return [...observed.map((s) => ({ ...s, weight: s.weight * observedShare })), ...prior.map((s) => ({ ...s, weight: s.weight * (1 - observedShare) }))];
}

export function shapesOf(pods: readonly PodSpec[]): TypicalShape[] {
  return typicalShapes(
    pods.map((p) => ({
      cpuMilli: p.request.cpuMilli,
      gpuMilli: p.request.gpuMilli,
      gpuCount: p.request.gpuCount,
      gpuModels: p.gpuModels,
      memoryMiB: p.request.memoryMiB,
    })),
  );
}

/** Expected workload of a batch: its own shapes (70 %) and the whole-GPU prior (30 %). */
export function expectedFromBatch(pods: readonly PodSpec[]): TypicalShape[] {
  return blendShapes(shapesOf(pods), WHOLE_GPU_PRIOR, 0.7);
}
