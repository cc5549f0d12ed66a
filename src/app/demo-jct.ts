/**
 * The demo's training JCT by placement, post hoc (ADR 0192). The demo's simulation holds a training gang's GPUs for
 * the trace's duration whatever its placement; holding them for a placement-scaled time instead moves every line of
 * the table (allocation, fragmentation, waits, starts), so the JCT is computed after the run: a gang's wait in the
 * run + its trace duration × its step time on the GPUs it got / its step time on its ideal placement (the trace
 * duration being its run time there). `sits bench training` (ADR 0104) is the work-based simulation.
 */
import { nodeGpuModel, type NodeSpec } from '../core/model/node.ts';
import { DEFAULT_NETWORK, type NetworkModel, type TrainingModel } from '../core/estimate/step-time.ts';
import { BestStepCache } from '../core/framework/gang-choice.ts';
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
 * The ideal step of a job in `nodes`: the scheduler's own best possible step (BestStepCache, ADR 0188: whole empty
 * nodes of the fastest shape in one rack) over the nodes whose GPU model the job accepts (any, when none is named).
 * The same for every profile, so the choice of ideal scales a job's run identically under each.
 */
export function idealStepsIn(
  nodes: readonly NodeSpec[],
  model: TrainingModel,
  net: NetworkModel = DEFAULT_NETWORK,
): (gpus: number, accepts: readonly string[]) => number {
  // One cache (and one node list, its memo key) per set of accepted models.
  const byAccepts = new Map<string, { nodes: { spec: NodeSpec }[]; cache: BestStepCache }>();
  return (gpus, accepts) => {
    const key = accepts.join(',');
    let c = byAccepts.get(key);
    if (c === undefined) {
      const taken = nodes.filter((n) => n.gpus.length > 0 && (accepts.length === 0 || accepts.includes(nodeGpuModel(n))));
      byAccepts.set(key, (c = { nodes: taken.map((spec) => ({ spec })), cache: new BestStepCache() }));
    }
    const sec = c.cache.bestStepSec(c.nodes, model, gpus, net);
    if (!Number.isFinite(sec)) throw new Error(`demo: no node takes a ${gpus}-GPU job of ${key || 'any GPU model'}`);
    return sec;
  };
}
