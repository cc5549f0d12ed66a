/**
 * The workload of `sits bench live` (issue 32), shared by every side that replays it: SITS live, the simulator,
 * and the Kueue peer (kueue-peer.ts). A busy window of the Philly trace (the tenants bench's busiestWindow: tiers
 * gold/silver/bronze become queues of weight 4/2/1), time-compressed so that a live replay fits in minutes: submit
 * times and durations are divided by `compress`. One trace job is one gang (all its GPUs or none), as the
 * simulator's tenant workload means it; jobs wider than a node are left out (the Kueue peer runs a job as one pod).
 */
import { seededRng, shuffle } from '../../core/ports.ts';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import type { TraceJob } from '../../sim/trace/philly.ts';
import { busiestWindows, TIERS, type TenantWorkload, type WindowOptions } from '../tenants/philly-window.ts';
import { TIER_WEIGHT } from '../tenants/tenant-sim.ts';

export interface WorkloadQueue {
  readonly name: string;
  readonly weight: number;
}

export interface WorkloadItem {
  /** A DNS label (the TrainingJob's name live). */
  readonly id: string;
  readonly queue: string;
  /** Seconds after the replay starts (compressed). */
  readonly submitAtSec: number;
  /** Seconds the job runs once all its GPUs run (compressed; whole seconds, at least 1). */
  readonly runSeconds: number;
  /** GPUs of the job, at most a node's (the Kueue peer runs it as one pod). */
  readonly gpus: number;
}

/** Field for field what the Kueue peer takes (kueue-peer.ts PeerWorkload): `runKueuePeer(workload)` replays the same jobs. */
export interface Workload {
  readonly queues: readonly WorkloadQueue[];
  readonly jobs: readonly WorkloadItem[];
  readonly nodes: number;
  /** Node preset (core/model/presets.ts) of every node. */
  readonly shape: string;
}

export interface ReplayWorkloadOptions {
  readonly nodes: number;
  readonly shape: string;
  readonly windowHours: number;
  /** Trace seconds per replay second. */
  readonly compress: number;
  readonly maxDurationHours: number;
  /** Keep at most this many jobs of the window (a seeded sample, in submit order); undefined: all. */
  readonly maxJobs?: number;
  readonly seed: number;
  /** How many of the busiest windows compete (contestedWindow); default DEFAULT_CANDIDATES. */
  readonly candidates?: number;
}

export const DEFAULT_CANDIDATES = 100;

/**
 * Among the `candidates` busiest windows (busiestWindows), the one whose least-demanding tier asks the most GPU-hours
 * (ties: the busier). The single busiest window is not used: a few virtual clusters submit most of it (the busiest
 * 4 h window, jobs up to a node, durations clipped at 6 h, is 2 % silver), so a queue would hardly contend there.
 */
export function contestedWindow(trace: readonly TraceJob[], opts: WindowOptions, candidates: number): { readonly window: TenantWorkload; readonly rank: number } {
  const ws = busiestWindows(trace, opts, candidates);
  const least = (w: TenantWorkload): number => Math.min(...TIERS.map((t) => w.jobs.filter((j) => j.tier === t).reduce((s, j) => s + j.gpus * j.durationMs, 0)));
  let best = 0;
  for (let i = 1; i < ws.length; i++) if (least(ws[i] as TenantWorkload) > least(ws[best] as TenantWorkload)) best = i;
  return { window: ws[best] as TenantWorkload, rank: best + 1 };
}

export interface ReplayWorkload extends Workload {
  /** Seconds of replay the window lasts (its trace length / compress): how long a replay samples. */
  readonly horizonSec: number;
  readonly source: { readonly windowStartHoursIntoTrace: number; readonly busiestRank: number; readonly windowHours: number; readonly compress: number; readonly jobsInWindow: number; readonly demandGpuHours: number };
}

/** Replicas × GPUs per replica of a gang of `gpus` GPUs on nodes of `perNode`: one pod up to a node, else the fewest equal pods that fit a node. */
export function gangShape(gpus: number, perNode: number): { readonly replicas: number; readonly gpusPerReplica: number } {
  if (!Number.isInteger(gpus) || gpus < 1) throw new Error(`gpus: ${gpus} is not a positive integer`);
  if (gpus <= perNode) return { replicas: 1, gpusPerReplica: gpus };
  for (let r = Math.ceil(gpus / perNode); r <= gpus; r++) if (gpus % r === 0 && gpus / r <= perNode) return { replicas: r, gpusPerReplica: gpus / r };
  return { replicas: gpus, gpusPerReplica: 1 };
}

export function replayWorkload(trace: readonly TraceJob[], o: ReplayWorkloadOptions): ReplayWorkload {
  const gpusPerNode = NODE_SHAPES[o.shape]?.gpus.length ?? 0;
  if (gpusPerNode === 0) throw new Error(`shape: "${o.shape}" is not a GPU node preset (${Object.keys(NODE_SHAPES).join(', ')})`);
  for (const [k, v] of [['nodes', o.nodes], ['windowHours', o.windowHours], ['compress', o.compress], ['maxDurationHours', o.maxDurationHours]] as const) {
    if (!(Number.isFinite(v) && v > 0)) throw new Error(`${k}: ${v} must be a positive number`);
  }
  if (o.maxJobs !== undefined && !(Number.isInteger(o.maxJobs) && o.maxJobs > 0)) throw new Error(`maxJobs: ${o.maxJobs} must be a positive integer`);
  const { window: w, rank } = contestedWindow(trace, { windowSec: o.windowHours * 3600, maxDurationSec: o.maxDurationHours * 3600, maxGpus: gpusPerNode }, o.candidates ?? DEFAULT_CANDIDATES);
  let jobs = w.jobs;
  if (o.maxJobs !== undefined && jobs.length > o.maxJobs) {
    // A seeded sample dealt round-robin over the queues (so a small sample keeps every queue), then in submit order.
    const order = shuffle(jobs.map((_, i) => i), seededRng(o.seed));
    const byTier = TIERS.map((t) => order.filter((i) => jobs[i]?.tier === t));
    const keep = new Set<number>();
    for (let k = 0; keep.size < o.maxJobs; k++) for (const list of byTier) if (keep.size < o.maxJobs && list[k] !== undefined) keep.add(list[k] as number);
    jobs = jobs.filter((_, i) => keep.has(i));
  }
  const width = String(jobs.length).length;
  const items: WorkloadItem[] = jobs.map((j, i) => ({
    id: `j-${String(i).padStart(width, '0')}`,
    queue: j.tier,
    submitAtSec: Math.round(j.submitMs / o.compress / 10) / 100,
    runSeconds: Math.max(1, Math.round(j.durationMs / 1000 / o.compress)),
    gpus: j.gpus,
  }));
  return {
    queues: TIERS.map((t) => ({ name: t, weight: TIER_WEIGHT[t] })),
    jobs: items,
    nodes: o.nodes,
    shape: o.shape,
    horizonSec: Math.round((o.windowHours * 3600) / o.compress),
    source: { windowStartHoursIntoTrace: Math.round((w.windowStartSec / 3600) * 100) / 100, busiestRank: rank, windowHours: o.windowHours, compress: o.compress, jobsInWindow: w.jobs.length, demandGpuHours: Math.round(w.demandGpuHours * 10) / 10 },
  };
}
