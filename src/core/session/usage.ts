/** What the queues use and what the cluster holds: the numbers a cycle's quota and fair share are computed from. */
import type { ClusterState } from '../snapshot/cluster-state.ts';
import { add, sub, ZERO, type Resources } from '../queue/model.ts';
import type { QueueUsage } from '../queue/quota.ts';
import type { RunningJob } from '../actions/jobs.ts';

export function usageOf(running: Iterable<RunningJob>): Map<string, QueueUsage> {
  const m = new Map<string, { total: Resources; byModel: Record<string, number> }>();
  for (const r of running) {
    const u = m.get(r.queue) ?? { total: ZERO, byModel: {} };
    u.total = add(u.total, r.resources);
    if (r.gpuModel !== undefined) u.byModel[r.gpuModel] = (u.byModel[r.gpuModel] ?? 0) + r.resources.gpuMilli;
    m.set(r.queue, u);
  }
  return m;
}

/** Adds (or with sign −1 removes) `r` to queue `q`'s usage in `usage`, and its GPUs to `model`'s when known. */
export function addUsageTo(usage: Map<string, QueueUsage>, q: string, r: Resources, sign: 1 | -1, model?: string): void {
  const u = usage.get(q) ?? { total: ZERO, byModel: {} };
  const byModel = { ...u.byModel };
  if (model !== undefined) byModel[model] = (byModel[model] ?? 0) + sign * r.gpuMilli;
  usage.set(q, { total: sign === 1 ? add(u.total, r) : sub(u.total, r), byModel });
}

/** Capacity and GPU models of a cluster state, per health version: static otherwise, and O(nodes) to count. */
const capacityCache = new WeakMap<ClusterState, { readonly version: number; readonly capacity: Resources; readonly models: readonly string[] }>();

export function capacityOf(s: { readonly state: ClusterState }): { readonly capacity: Resources; readonly models: readonly string[] } {
  const state = s.state;
  const hit = capacityCache.get(state);
  if (hit !== undefined && hit.version === state.healthVersion) return hit;
  const entry = {
    version: state.healthVersion,
    capacity: clusterCapacity(s),
    models: [...new Set(state.nodes.flatMap((n) => n.spec.gpus.map((g) => g.model)))].sort(),
  };
  capacityCache.set(state, entry);
  return entry;
}

/** What the cluster's healthy nodes hold (a scheduler, or any view with its state). */
export function clusterCapacity(s: { readonly state: ClusterState }): Resources {
  let gpuMilli = 0;
  let cpuMilli = 0;
  let memoryMiB = 0;
  for (const n of s.state.nodes) {
    gpuMilli += n.usableGpuCount() * 1000;
    cpuMilli += n.spec.cpuMilli;
    memoryMiB += n.spec.memoryMiB;
  }
  return { gpuMilli, cpuMilli, memoryMiB };
}
