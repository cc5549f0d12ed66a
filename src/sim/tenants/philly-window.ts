/**
 * A multi-tenant workload from the Philly-derived job list (../shared/traces/pollux-philly/philly.csv):
 * each virtual cluster (`cluster` column) becomes a tenant of one of three tiers, and the busiest window
 * of the trace (most GPU-hours submitted) is replayed on a cluster smaller than its demand.
 * Rules (documented in docs/tenants.md): virtual clusters sorted by job count, descending, are dealt to
 * gold, silver, bronze in turn; durations are clipped to `maxDurationSec`; jobs wider than the cluster are
 * dropped; a job of n ≤ 8 GPUs is one pod, wider jobs are n/8 pods of 8 GPUs (rounded up).
 */
import { parseCsv, requireColumns, intField, numField, textField } from '../trace/csv.ts';
import { TraceError } from '../trace/errors.ts';

export const TIERS = ['gold', 'silver', 'bronze'] as const;
export type Tier = (typeof TIERS)[number];

export interface PhillyJob {
  readonly id: string;
  readonly line: number;
  readonly submitSec: number;
  readonly durationSec: number;
  readonly gpus: number;
  readonly cluster: string;
}

export interface TenantJob {
  readonly id: string;
  readonly tier: Tier;
  readonly submitMs: number;
  readonly durationMs: number;
  readonly gpus: number;
}

/** Parses philly.csv; errors name the file, line and field. */
export function parsePhilly(text: string, file: string): PhillyJob[] {
  const t = parseCsv(text, file);
  const [cTs, cDur, cGpus, cCluster] = requireColumns(t, ['timestamp', 'duration', 'num_gpus', 'cluster']) as [number, number, number, number];
  return t.rows.map((row, i) => {
    const ts = textField(t, row, cTs);
    const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(ts);
    if (m === null) throw new TraceError('BadValue', file, row.line, 'timestamp', `expected "YYYY-MM-DD HH:MM:SS", got ${JSON.stringify(ts)}`);
    const submitSec = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) / 1000;
    return { id: `philly-${i}`, line: row.line, submitSec, durationSec: numField(t, row, cDur), gpus: intField(t, row, cGpus, { min: 1 }), cluster: textField(t, row, cCluster) };
  });
}

export interface WindowOptions {
  readonly windowSec: number;
  readonly maxDurationSec: number;
  readonly maxGpus: number;
}

export interface TenantWorkload {
  readonly windowStartSec: number;
  readonly jobs: readonly TenantJob[];
  readonly tierOfCluster: Readonly<Record<string, Tier>>;
  /** GPU-hours submitted in the window (clipped durations). */
  readonly demandGpuHours: number;
}

export function tierAssignment(jobs: readonly PhillyJob[]): Record<string, Tier> {
  const counts = new Map<string, number>();
  for (const j of jobs) counts.set(j.cluster, (counts.get(j.cluster) ?? 0) + 1);
  const order = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return Object.fromEntries(order.map(([c], i) => [c, TIERS[i % 3] as Tier]));
}

/** The window (aligned to its own length from the first submission) with the most GPU-hours submitted. */
export function busiestWindow(jobs: readonly PhillyJob[], opts: WindowOptions): TenantWorkload {
  const tiers = tierAssignment(jobs);
  const t0 = Math.min(...jobs.map((j) => j.submitSec));
  const demand = new Map<number, number>();
  for (const j of jobs) {
    if (j.gpus > opts.maxGpus) continue;
    const k = Math.floor((j.submitSec - t0) / opts.windowSec);
    demand.set(k, (demand.get(k) ?? 0) + j.gpus * Math.min(j.durationSec, opts.maxDurationSec));
  }
  let best = 0;
  let bestDemand = -1;
  for (const [k, d] of demand) if (d > bestDemand || (d === bestDemand && k < best)) [best, bestDemand] = [k, d];
  const start = t0 + best * opts.windowSec;
  const picked = jobs
    .filter((j) => j.gpus <= opts.maxGpus && j.submitSec >= start && j.submitSec < start + opts.windowSec)
    .sort((a, b) => a.submitSec - b.submitSec || a.line - b.line)
    .map((j) => ({ id: j.id, tier: tiers[j.cluster] as Tier, submitMs: Math.round((j.submitSec - start) * 1000), durationMs: Math.max(1000, Math.round(Math.min(j.durationSec, opts.maxDurationSec) * 1000)), gpus: j.gpus }));
  return { windowStartSec: start, jobs: picked, tierOfCluster: tiers, demandGpuHours: bestDemand / 3600 };
}
