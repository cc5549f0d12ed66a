/**
 * A multi-tenant workload from the Philly-derived job list (../shared/traces/pollux-philly/philly.csv):
 * each virtual cluster (`cluster` column) becomes a tenant of one of three tiers, and the busiest window
 * of the trace (most GPU-hours submitted) is replayed on a cluster smaller than its demand.
 * Rules (documented in docs/tenants.md): virtual clusters sorted by job count, descending, are dealt to
 * gold, silver, bronze in turn; durations are clipped to `maxDurationSec`; jobs wider than the cluster are
 * dropped; a job of n ≤ 8 GPUs is one pod, wider jobs are n/8 pods of 8 GPUs (rounded up).
 */
import { parsePhillyJobs, type TraceJob } from '../../sim/trace/philly.ts';

export const TIERS = ['gold', 'silver', 'bronze'] as const;
export type Tier = (typeof TIERS)[number];

export interface TenantJob {
  readonly id: string;
  readonly tier: Tier;
  readonly submitMs: number;
  readonly durationMs: number;
  readonly gpus: number;
}

/** philly.csv through the shared trace loader (errors name the file, line and field). */
export function parsePhilly(text: string, file: string): TraceJob[] {
  return parsePhillyJobs(text, file);
}

export interface WindowOptions {
  readonly windowSec: number;
  readonly maxDurationSec: number;
  readonly maxGpus: number;
}

export interface TenantWorkload {
  /** Seconds from the trace's first submission. */
  readonly windowStartSec: number;
  readonly jobs: readonly TenantJob[];
  readonly tierOfCluster: Readonly<Record<string, Tier>>;
  /** GPU-hours submitted in the window (clipped durations). */
  readonly demandGpuHours: number;
}

export function tierAssignment(jobs: readonly TraceJob[]): Record<string, Tier> {
  const counts = new Map<string, number>();
  for (const j of jobs) counts.set(j.group, (counts.get(j.group) ?? 0) + 1);
  const order = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return Object.fromEntries(order.map(([c], i) => [c, TIERS[i % 3] as Tier]));
}

/** The window (aligned to its own length from the first submission) with the most GPU-hours submitted. */
export function busiestWindow(jobs: readonly TraceJob[], opts: WindowOptions): TenantWorkload {
  return busiestWindows(jobs, opts, 1)[0] as TenantWorkload;
}

/**
 * The `count` windows (aligned to their own length from the first submission, so they never overlap) with the
 * most GPU-hours submitted, busiest first (ties: the earlier window).
 */
export function busiestWindows(jobs: readonly TraceJob[], opts: WindowOptions, count: number): TenantWorkload[] {
  const tiers = tierAssignment(jobs);
  let t0 = Infinity;
  for (const j of jobs) t0 = Math.min(t0, j.submitS);
  const demand = new Map<number, number>();
  for (const j of jobs) {
    if (j.gpus > opts.maxGpus) continue;
    const k = Math.floor((j.submitS - t0) / opts.windowSec);
    demand.set(k, (demand.get(k) ?? 0) + j.gpus * Math.min(j.durationS, opts.maxDurationSec));
  }
  const ranked = [...demand].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, Math.max(1, count));
  if (ranked.length === 0) ranked.push([0, 0]);
  return ranked.map(([k, d]) => {
    const start = t0 + k * opts.windowSec;
    const picked = jobs
      .filter((j) => j.gpus <= opts.maxGpus && j.submitS >= start && j.submitS < start + opts.windowSec)
      .sort((a, b) => a.submitS - b.submitS || a.line - b.line)
      .map((j) => ({ id: j.name, tier: tiers[j.group] as Tier, submitMs: Math.round((j.submitS - start) * 1000), durationMs: Math.max(1000, Math.round(Math.min(j.durationS, opts.maxDurationSec) * 1000)), gpus: j.gpus }));
    return { windowStartSec: start, jobs: picked, tierOfCluster: tiers, demandGpuHours: d / 3600 };
  });
}
