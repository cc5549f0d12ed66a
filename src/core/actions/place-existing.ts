/**
 * Putting a pod that already holds a node into the state — a running pod from a scenario or batch file, a pod
 * the watch reports bound, or a member of a gang plan SITS wrote before a crash — without scheduling it. The
 * three sources trust the pod differently, so each has its rule (`ExistingSource`); the GPU choice is shared:
 * the GPUs the pod is known to hold when they are free, else the lowest-index free ones.
 * Pure: returns the allocation (or why there is none); the caller applies it with `ClusterState.allocate`.
 */
import type { PodSpec } from '../model/pod.ts';
import { Reason, REASONS } from '../framework/reasons.ts';
import { lowestFreeGpus } from '../plugins/baselines/gpu-pick.ts';
import { fitFilter } from '../plugins/fit/fit.ts';
import { err, ok, type Result } from '../result.ts';
import { allocationFor, type Allocation, type ClusterState, type NodeState } from '../snapshot/cluster-state.ts';

/**
 * - `declared`: an input says the pod runs there (scenario, `sits schedule`): it must pass the fit filter, a GPU
 *   hint must name exactly its GPU count of free GPUs, and without a hint the lowest free GPUs must exist;
 *   anything else is an error in the input.
 * - `observed`: the cluster says it runs there (watch): it is counted whatever it takes. A hint that does not
 *   name its GPU count of free GPUs falls back to the lowest free ones; when none fit (another scheduler, a
 *   device plugin we do not know) it is counted with its CPU and memory but without devices (`withoutDevices`).
 * - `planned`: SITS placed it in a gang plan before a crash (ADR 0006): the planned GPUs (the hint; none
 *   without one) and its CPU must still be free, or the plan cannot be completed.
 */
export type ExistingSource = 'declared' | 'observed' | 'planned';

export interface ExistingPlacement {
  readonly allocation: Allocation;
  /** Observed pods only: its GPUs were taken, so it is counted without devices (and without GPU share). */
  readonly withoutDevices: boolean;
}

/** Messages start with `pod <id>` so that callers can put their own word in front ("running pod …"). */
export function placeExisting(
  state: ClusterState,
  pod: PodSpec,
  nodeName: string,
  source: ExistingSource,
  gpuHint?: readonly number[],
): Result<ExistingPlacement, string> {
  const node = state.node(nodeName);
  if (node === undefined) return err(`pod ${pod.id}: unknown node ${nodeName}`);
  const req = pod.request;
  const free = (g: number): boolean => g >= 0 && g < node.gpuFree.length && node.gpuUsable[g] === 1 && (node.gpuFree[g] as number) >= req.gpuMilli;
  const placed = (gpus: readonly number[], withoutDevices = false): Result<ExistingPlacement, string> => {
    const a = allocationFor(pod, nodeName, gpus);
    return ok({ allocation: withoutDevices ? { ...a, gpuMilli: 0 } : a, withoutDevices });
  };
  switch (source) {
    case 'declared': {
      const reason = fitFilter(pod, node);
      if (reason !== Reason.Fits) {
        const info = REASONS[reason];
        return err(`pod ${pod.id} does not fit on ${nodeName}: ${info?.detail?.(pod, node) ?? info?.text(pod) ?? reason}`);
      }
      if (req.gpuCount === 0) return placed([]);
      if (gpuHint !== undefined) {
        if (gpuHint.length !== req.gpuCount) return err(`pod ${pod.id}: ${gpuHint.length} GPU indices given for ${req.gpuCount} GPUs`);
        for (const g of gpuHint) if (!free(g)) return err(`pod ${pod.id}: GPU ${g} of ${nodeName} does not have ${req.gpuMilli} milli free`);
        return placed(gpuHint);
      }
      const lowest = lowestFreeGpus(node, req.gpuCount, req.gpuMilli);
      return lowest === undefined ? err(`pod ${pod.id}: no fitting GPUs on ${nodeName}`) : placed(lowest);
    }
    case 'observed': {
      if (req.gpuCount === 0) return placed([]);
      if (gpuHint !== undefined && gpuHint.length === req.gpuCount && gpuHint.every(free)) return placed(gpuHint);
      const lowest = lowestFreeGpus(node, req.gpuCount, req.gpuMilli);
      return lowest === undefined ? placed([], true) : placed(lowest);
    }
    case 'planned': {
      const gpus = gpuHint ?? [];
      if (!gpus.every(free) || !cpuFree(node, req.cpuMilli))
        return err(`pod ${pod.id}: its planned GPUs ${gpus.join(',') || '(none)'} or ${req.cpuMilli}m CPU on ${nodeName} are no longer free`);
      return placed(gpus);
    }
  }
}

const cpuFree = (node: NodeState, milli: number): boolean => node.cpuFreeMilli >= milli;
