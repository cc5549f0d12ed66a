/**
 * Defragmentation by migration (issue 14 item 4, ADR 0095), pure: a pending gang that cannot be placed only
 * because the free GPUs are scattered (enough of them in the cluster, none of its domains has room) gets a
 * plan that moves running jobs out of one domain — each checkpoints, is evicted and restores elsewhere — so
 * that the whole gang fits there. A plan is taken only when what it gains, the gang's start brought forward
 * × its GPUs, is more than what it costs: checkpoint + restore time × each moved job's GPUs plus the work the
 * moved jobs redo (none when they checkpoint first). Everything is tried in statements and rolled back; the
 * host carries a plan out with `commitMigration` (one statement: the moves and the gang, bound together).
 */
import type { Placement, Scheduler } from '../framework/scheduler.ts';
import type { GangSpec } from '../model/pod.ts';
import type { TopologyLevel } from '../model/topology.ts';
import type { Allocation } from '../snapshot/cluster-state.ts';
import type { Statement } from '../statement/statement.ts';
import { checkpointMs } from './checkpoint.ts';
import { lostWork, type QueuedJob, type RunningJob } from './jobs.ts';

export interface MigrationCost {
  /** Time to write a checkpoint of a job on `gpus` GPUs (its training pauses meanwhile). */
  readonly checkpointMs: (gpus: number) => number;
  /** Time to restore it elsewhere before it trains again. */
  readonly restoreMs: (gpus: number) => number;
}

/** Checkpoint and restore both take `checkpointMs(gpus)` (seed 000 §1: 89 s per node-sized checkpoint). */
export const DEFAULT_MIGRATION_COST: MigrationCost = { checkpointMs: (g) => checkpointMs(g), restoreMs: (g) => checkpointMs(g) };

export interface Movable {
  readonly job: RunningJob;
  /** Its gang, placed again elsewhere after the move (pod ids are the running ones). */
  readonly gang: GangSpec;
}

export interface MigrationInput {
  readonly nowMs: number;
  readonly scheduler: Scheduler;
  readonly job: QueuedJob;
  /** Running jobs the host allows to move (preemptible, not in a critical phase); checkpointable ones redo nothing. */
  readonly movable: readonly Movable[];
  /** When the job would start without any move (e.g. its reservation's start). */
  readonly expectedStartMs: number;
  readonly cost?: MigrationCost;
  /** Most jobs one plan moves (default 4). */
  readonly maxMoves?: number;
  /** Most domains looked at, those with the most free GPUs first (default 16). */
  readonly maxDomains?: number;
  /** Told why no plan came out (benches count these; the plan itself does not depend on it). */
  readonly onNoPlan?: (reason: NoPlanReason) => void;
}

/**
 * Why `planMigration` gave no plan: the gang asks no whole GPU; `short`: fewer whole GPUs free than it asks
 * (capacity, not fragmentation); `fits`: it fits already; `no-domain`: no domain big enough holds a movable job;
 * `too-many-moves`: no domain frees enough with `maxMoves` moves; `no-room`: the movers found no room elsewhere;
 * `no-gain`: a plan exists but its gain does not beat its cost.
 */
export type NoPlanReason = 'no-whole-gpus' | 'short' | 'fits' | 'no-domain' | 'too-many-moves' | 'no-room' | 'no-gain';

export interface MigrationMove {
  readonly job: RunningJob;
  /** Where its pods go. */
  readonly to: readonly Allocation[];
  readonly pauseMs: number;
  readonly redoneGpuMs: number;
}

export interface MigrationPlan {
  readonly jobId: string;
  readonly level: TopologyLevel;
  /** Key of the domain the moves free. */
  readonly domain: string;
  readonly moves: readonly MigrationMove[];
  /** The gang's allocations once the moves are done. */
  readonly allocations: readonly Allocation[];
  /** When the gang starts: once the slowest mover has checkpointed. */
  readonly startMs: number;
  /** GPU-ms the gang gains by starting then instead of at expectedStartMs. */
  readonly gainGpuMs: number;
  /** GPU-ms the moves cost: checkpoint + restore time × GPUs, plus redone work. */
  readonly costGpuMs: number;
}

const GAIN_HORIZON_MS = 7 * 86_400_000;
const gpusOf = (r: RunningJob): number => r.resources.gpuMilli / 1000;

/** Whole GPUs the gang asks for (what a freed domain must hold). */
function wholeGpus(gang: GangSpec): number {
  return gang.members.slice(0, Math.max(gang.minMember, gang.members.length)).reduce((s, m) => s + (m.request.gpuMilli >= 1000 ? m.request.gpuCount : 0), 0);
}

/** The best plan whose gain beats its cost, or undefined (it fits already, it is short of GPUs, or no move pays). */
export function planMigration(input: MigrationInput): MigrationPlan | undefined {
  const { scheduler, job } = input;
  const state = scheduler.state;
  const cost = input.cost ?? DEFAULT_MIGRATION_COST;
  const need = wholeGpus(job.gang);
  const none = (reason: NoPlanReason): undefined => {
    input.onNoPlan?.(reason);
    return undefined;
  };
  if (need === 0) return none('no-whole-gpus');
  // Fragmentation only: the cluster has enough whole free GPUs, just not where the gang could use them.
  let free = 0;
  for (const n of state.nodes) for (let g = 0; g < n.gpuFree.length; g++) if (n.gpuUsable[g] === 1 && n.gpuFree[g] === 1000) free++;
  if (free < need) return none('short');
  const probe = scheduler.statement();
  const fits = scheduler.placeGang(job.gang, probe, { explain: false }).ok;
  probe.discard();
  if (fits) return none('fits');

  const level: TopologyLevel = job.gang.topology.required ?? 'node';
  const domOf = state.domainOf[level];
  const movers = new Map<number, Movable[]>();
  for (const m of input.movable) {
    const doms = new Set<number>();
    for (const pod of m.job.podIds) {
      const n = state.nodeOfPod(pod);
      if (n !== undefined) doms.add(domOf[n.idx] as number);
    }
    for (const d of doms) movers.set(d, [...(movers.get(d) ?? []), m]);
  }
  // Domains that could hold the gang once emptied, closest to fitting first (most whole free GPUs), then topology order.
  const domains = state.domains[level]
    .map((d, i) => {
      let freeHere = 0;
      let usable = 0;
      for (let k = d.start; k < d.end; k++) {
        const n = state.nodes[k];
        if (n === undefined) continue;
        for (let g = 0; g < n.gpuFree.length; g++) {
          if (n.gpuUsable[g] !== 1) continue;
          usable++;
          if (n.gpuFree[g] === 1000) freeHere++;
        }
      }
      return { d, i, freeHere, usable };
    })
    .filter((x) => x.usable >= need && (movers.get(x.i)?.length ?? 0) > 0)
    .sort((a, b) => b.freeHere - a.freeHere || a.i - b.i)
    .slice(0, input.maxDomains ?? 16);

  if (domains.length === 0) return none('no-domain');
  let best: MigrationPlan | undefined;
  let noRoom = false;
  let unpaid = false;
  for (const { d, i } of domains) {
    const plan = tryDomain(input, cost, level, d.key, movers.get(i) ?? [], need);
    if (plan === 'no-room') noRoom = true;
    else if (plan !== undefined && plan.gainGpuMs <= plan.costGpuMs) unpaid = true;
    else if (plan !== undefined && (best === undefined || plan.gainGpuMs - plan.costGpuMs > best.gainGpuMs - best.costGpuMs)) best = plan;
  }
  return best ?? none(unpaid ? 'no-gain' : noRoom ? 'no-room' : 'too-many-moves');
}

/** The plan that frees this domain, 'no-room' when its movers cannot all be placed again, undefined when no ≤ maxMoves moves free it. */
function tryDomain(
  input: MigrationInput,
  cost: MigrationCost,
  level: TopologyLevel,
  key: string,
  cands: readonly Movable[],
  need: number,
): MigrationPlan | 'no-room' | undefined {
  const { scheduler, job, nowMs } = input;
  const state = scheduler.state;
  const moveCost = (m: Movable): number => gpusOf(m.job) * (cost.checkpointMs(gpusOf(m.job)) + cost.restoreMs(gpusOf(m.job))) + redone(m.job, nowMs);
  // Cheapest moves first; the id keeps it deterministic.
  const order = [...cands].sort((a, b) => moveCost(a) - moveCost(b) || (a.job.id < b.job.id ? -1 : a.job.id > b.job.id ? 1 : 0));
  const stmt = scheduler.statement();
  try {
    const chosen: Movable[] = [];
    for (const m of order.slice(0, input.maxMoves ?? 4)) {
      for (const pod of m.job.podIds) stmt.release(pod);
      chosen.push(m);
      const cp = stmt.checkpoint();
      const placed = scheduler.placeGang(job.gang, stmt, { explain: false });
      if (!placed.ok) {
        stmt.rollback(cp);
        continue;
      }
      // The gang is in; every moved job must find room elsewhere, or the plan is no plan.
      const allocations = pods(stmt, placed.placements);
      const moves: MigrationMove[] = [];
      for (const c of chosen) {
        const again = scheduler.placeGang(c.gang, stmt, { explain: false });
        if (!again.ok) break;
        const g = gpusOf(c.job);
        moves.push({ job: c.job, to: pods(stmt, again.placements), pauseMs: cost.checkpointMs(g) + cost.restoreMs(g), redoneGpuMs: redone(c.job, nowMs) });
      }
      if (moves.length < chosen.length) return 'no-room';
      const startMs = nowMs + Math.max(...chosen.map((c) => cost.checkpointMs(gpusOf(c.job))));
      // A gang that would never start otherwise gains at most a week (a finite gain keeps the comparison meaningful).
      const gainGpuMs = Math.max(0, Math.min(input.expectedStartMs, nowMs + GAIN_HORIZON_MS) - startMs) * need;
      const costGpuMs = chosen.reduce((s, c) => s + moveCost(c), 0);
      return { jobId: job.id, level, domain: key, moves, allocations, startMs, gainGpuMs, costGpuMs };
    }
    return undefined;
  } finally {
    stmt.discard();
  }
  function pods(s: Statement, placements: readonly Placement[]): Allocation[] {
    void s;
    return placements.map((p) => state.allocation(p.podId) as Allocation);
  }
}

/**
 * When `gang` would start without moves: the earliest time it fits as running jobs end in estimated order
 * (placement is monotone in the jobs released, so the shortest prefix is found by bisection); Infinity if never.
 */
export function expectedStartMs(scheduler: Scheduler, gang: GangSpec, running: readonly RunningJob[], nowMs: number): number {
  const order = [...running].filter((r) => Number.isFinite(r.estEndMs)).sort((a, b) => a.estEndMs - b.estEndMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const stmt = scheduler.statement();
  try {
    const fitsAfter = (k: number): boolean => {
      stmt.rollback(0);
      for (let i = 0; i < k; i++) for (const pod of (order[i] as RunningJob).podIds) stmt.release(pod);
      const cp = stmt.checkpoint();
      const ok = scheduler.placeGang(gang, stmt, { explain: false }).ok;
      stmt.rollback(cp);
      return ok;
    };
    if (!fitsAfter(order.length)) return Number.POSITIVE_INFINITY;
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (fitsAfter(mid)) hi = mid;
      else lo = mid + 1;
    }
    return lo === 0 ? nowMs : Math.max(nowMs, (order[lo - 1] as RunningJob).estEndMs);
  } finally {
    stmt.discard();
  }
}

/** Work a moved job redoes: none if it checkpoints first, else the work since its last checkpoint. */
function redone(r: RunningJob, nowMs: number): number {
  return r.checkpointable === true ? 0 : lostWork(r, nowMs);
}

/** Carries a plan out in one statement: the moved jobs' pods leave and land where planned, the gang's pods are placed. */
export function commitMigration(scheduler: Scheduler, plan: MigrationPlan): readonly Placement[] {
  const stmt = scheduler.statement();
  for (const m of plan.moves)
    for (const pod of m.job.podIds) stmt.release(pod, `moved to free ${plan.level} ${plan.domain} for ${plan.jobId} (defragmentation by migration)`);
  for (const a of plan.allocations) stmt.allocate(a);
  for (const m of plan.moves) for (const a of m.to) stmt.allocate(a);
  stmt.commit();
  return plan.allocations.map((a) => ({ podId: a.podId, node: a.node, gpus: a.gpus }));
}
