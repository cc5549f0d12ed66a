/** Choosing preemption victims: greedy in cost order until the gang fits, then pruned to the ones it needs. */
import type { Placement, Scheduler } from '../framework/scheduler.ts';
import type { TopologyLevel } from '../model/topology.ts';
import type { Allocation, ClusterState } from '../snapshot/cluster-state.ts';
import { Statement } from '../statement/statement.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';

/** A running job the preemptor may take, with what orders it among the others. */
export interface Candidate {
  readonly r: RunningJob;
  readonly borrowing: boolean;
  /** Its eviction would break a PodDisruptionBudget. */
  violates: boolean;
  /** Work lost (GPU-ms). */
  readonly cost: number;
  readonly critical: boolean;
}

/**
 * Greedy: release victims in cost order until the gang fits (and `enough` holds for the victims so far),
 * then drop every victim not needed.
 */
export function victimsFor(
  scheduler: Scheduler,
  job: QueuedJob,
  cands: readonly RunningJob[],
  enough?: (victims: readonly RunningJob[]) => boolean,
): { victims: RunningJob[]; placements: Placement[] } | undefined {
  const stmt = new Statement(scheduler.state);
  const chosen: RunningJob[] = [];
  const saved = new Map<string, Allocation>();
  let fit: Placement[] | undefined;
  for (const c of cands) {
    for (const pod of c.podIds) {
      const a = stmt.release(pod);
      if (a !== undefined) saved.set(pod, a);
    }
    chosen.push(c);
    if (enough !== undefined && !enough(chosen)) continue;
    const cp = stmt.checkpoint();
    const r = scheduler.placeGang(job.gang, stmt, { explain: false });
    stmt.rollback(cp);
    if (r.ok) {
      fit = [...r.placements];
      break;
    }
  }
  if (fit === undefined) {
    stmt.discard();
    return undefined;
  }
  // Prune: put back each victim (most expensive first) if the gang still fits without it.
  for (let i = chosen.length - 1; i >= 0 && chosen.length > 1; i--) {
    const v = chosen[i] as RunningJob;
    if (enough !== undefined && !enough(chosen.filter((_, k) => k !== i))) continue;
    const cp = stmt.checkpoint();
    if (!reallocate(scheduler.state, stmt, v, saved)) {
      stmt.rollback(cp);
      continue;
    }
    const trial = stmt.checkpoint();
    const r = scheduler.placeGang(job.gang, stmt, { explain: false });
    stmt.rollback(trial);
    if (r.ok) {
      fit = [...r.placements];
      chosen.splice(i, 1);
    } else stmt.rollback(cp);
  }
  stmt.discard();
  return { victims: chosen, placements: fit };
}

function reallocate(state: ClusterState, stmt: Statement, v: RunningJob, saved: ReadonlyMap<string, Allocation>): boolean {
  for (const pod of v.podIds) {
    const a = saved.get(pod);
    if (a === undefined) return false;
    const n = state.node(a.node);
    if (n === undefined || !a.gpus.every((g) => (n.gpuFree[g] as number) >= a.gpuMilli)) return false;
    stmt.allocate(a);
  }
  return true;
}

/** The candidates grouped by the `level` domains their pods run in (a candidate in two domains is in both); at most 32 groups. */
export function byDomain<C extends { readonly r: RunningJob }>(state: ClusterState, cands: readonly C[], level: TopologyLevel): C[][] {
  const groups = new Map<number, C[]>();
  for (const c of cands) {
    const doms = new Set<number>();
    for (const pod of c.r.podIds) {
      const n = state.nodeOfPod(pod);
      if (n !== undefined) doms.add(state.domainOf[level][n.idx] as number);
    }
    for (const d of doms) groups.set(d, [...(groups.get(d) ?? []), c]);
  }
  return [...groups.values()].slice(0, 32);
}
