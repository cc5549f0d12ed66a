/**
 * The demo's training JCT by placement, post hoc (ADR 0192). The demo's simulation holds a training gang's GPUs for
 * the trace's duration whatever its placement; holding them for a placement-scaled time instead moves every line of
 * the table (allocation, fragmentation, waits, starts), so the JCT is computed after the run: a gang's wait in the
 * run + its trace duration × its step time on the GPUs it got / its step time on its ideal placement (the trace
 * duration being its run time there). `sits bench training` (ADR 0104) is the work-based simulation.
 */
import { nodeGpuModel, type NodeSpec } from '../core/model/node.ts';
import { DEFAULT_NETWORK, idealShares, stepTime, type NetworkModel, type TrainingModel } from '../core/estimate/step-time.ts';
import { mean, nearestRank } from '../core/stats.ts';

/** One started training gang as the JCT needs it. */
export interface TrainingRun {
  /** Arrival to start, in the simulation. */
  readonly waitMs: number;
  /** The trace's duration: the run time on the ideal placement. */
  readonly traceMs: number;
  /** Predicted step on the GPUs it got, and on its ideal placement (step-time model, ADR 0103). */
  readonly stepSec: number;
  readonly idealStepSec: number;
}

/** A gang's job completion time (ms): its wait + its trace duration scaled by its step time over the ideal one. */
export function jobJctMs(r: TrainingRun): number {
  return r.waitMs + (r.traceMs * r.stepSec) / r.idealStepSec;
}

/** Mean and nearest-rank p99 of the runs' JCTs in whole seconds; zeros when no gang started (as the wait lines). */
export function trainingJct(runs: readonly TrainingRun[]): { readonly mean: number; readonly p99: number } {
  if (runs.length === 0) return { mean: 0, p99: 0 };
  const sec = runs.map((r) => jobJctMs(r) / 1000).sort((a, b) => a - b);
  return { mean: Math.round(mean(sec)), p99: Math.round(nearestRank(sec, 99) ?? 0) };
}

/**
 * The step of `gpus` GPUs of `model` on their ideal placement in `nodes`: the fastest, over the node kinds whose
 * GPU model the job accepts (any, when `accepts` is empty), of whole nodes of that kind in one rack (idealShares).
 */
export function idealStepSec(
  model: TrainingModel,
  gpus: number,
  nodes: readonly NodeSpec[],
  accepts: readonly string[],
  net: NetworkModel = DEFAULT_NETWORK,
): number {
  let best = Number.POSITIVE_INFINITY;
  const seen = new Set<string>();
  for (const n of nodes) {
    const gpuModel = nodeGpuModel(n);
    if (n.gpus.length === 0 || (accepts.length > 0 && !accepts.includes(gpuModel))) continue;
    // Nodes of one shape give the same ideal step wherever they are: one evaluation per GPU model and topology.
    const key = `${gpuModel}|${JSON.stringify(n.topology)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    best = Math.min(best, stepTime(model, idealShares({ gpuModel, topology: n.topology, location: n.location }, gpus), net).stepSec);
  }
  if (!Number.isFinite(best)) throw new Error(`demo: no node takes a ${gpus}-GPU job of ${accepts.join('/') || 'any GPU model'}`);
  return best;
}
