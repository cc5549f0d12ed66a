/**
 * What the live replay and the simulated one share: the Queue objects both schedule under, what a replay records
 * (running GPUs per queue every second, first starts, preemptions) and the metrics computed from it, the same way
 * for both sides.
 */
import type { QueueObject } from '../../kube/cache/queues.ts';
import { nearestRank } from '../../core/stats.ts';
import type { ReplayWorkload, Workload } from './workload.ts';

export const GPU = 'nvidia.com/gpu';

/**
 * The Queue objects of a replay: one per workload queue, all in one cohort, the cluster's GPUs split into nominal
 * quotas by weight (milli-GPUs; the rounding remainder to the first queue so the quotas add up to the cluster, as
 * in the tenants bench), borrowing unlimited, victims protected `cooldownSeconds` after they start.
 */
export function replayQueueObjects(w: Workload, clusterGpus: number, cooldownSeconds: number): (QueueObject & { spec: NonNullable<QueueObject['spec']> })[] {
  const total = w.queues.reduce((s, q) => s + q.weight, 0);
  const milli = w.queues.map((q) => Math.floor((clusterGpus * 1000 * q.weight) / total));
  milli[0] = (milli[0] ?? 0) + clusterGpus * 1000 - milli.reduce((a, b) => a + b, 0);
  return w.queues.map((q, i) => ({
    metadata: { name: q.name },
    spec: { tenant: q.name, weight: q.weight, cohort: 'replay', resources: [{ name: GPU, nominal: `${milli[i] as number}m` }], preemption: { cooldownSeconds } },
  }));
}

/** One second of a replay: GPUs held by running jobs (all their pods Running) per queue. */
export interface ReplaySample {
  readonly t: number;
  readonly gpus: Readonly<Record<string, number>>;
}

export interface ReplayTrace {
  /** At t = 0, 1, 2, … up to the horizon. */
  readonly samples: readonly ReplaySample[];
  /** Seconds after the start of the replay that each job first had all its pods running. */
  readonly firstStartSec: ReadonlyMap<string, number>;
  /** Gangs preempted (each counted once per eviction, however many pods). */
  readonly preemptions: number;
  /** When each preemption happened (seconds into the replay), in order. */
  readonly preemptionsAtSec: readonly number[];
  /**
   * Every change of the running GPUs per queue, at the second (fractional) it happened, in order from t = 0: the
   * step function the 1 s `samples` are taken from, for measures that must not depend on where a sample falls.
   */
  readonly changes: readonly ReplaySample[];
}

export interface QueueMetrics {
  /** Share of the GPUs in use over the steady part, in %. */
  readonly sharePct: number;
  readonly meanGpus: number;
  readonly oscillation: Oscillation;
  readonly waitSec: { readonly p50: number | null; readonly p99: number | null };
  readonly jobs: number;
  readonly neverStarted: number;
}

/**
 * How much a queue's share swings in the steady part: `stddevPp`, the standard deviation of its share (5 s moving
 * average) in percentage points, and `swings`, how often that smoothed share reverses after moving at least
 * SWING_PP since its last turning point (a zig-zag count). The workload itself makes shares move (arrivals, ends);
 * what the scheduler adds (preempt, re-admit, preempt again) shows as swings beyond the simulator's.
 */
export interface Oscillation {
  readonly stddevPp: number;
  readonly swings: number;
}

export const SWING_PP = 10;
const SMOOTH_SEC = 5;

export interface ReplayMetrics {
  readonly queues: Record<string, QueueMetrics>;
  /** Mean GPUs in use / cluster GPUs over the whole window, and over the steady part, in %. */
  readonly utilizationPct: number;
  readonly steadyUtilizationPct: number;
  readonly preemptions: number;
  readonly preemptionsAtSec: readonly number[];
  /** Submit → every pod of the job Running, over the jobs that started within the window (replay seconds). */
  readonly waitSec: { readonly p50: number | null; readonly p99: number | null };
  readonly started: number;
  readonly neverStarted: number;
}

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const pct = (sorted: readonly number[], p: number): number | null => {
  const v = nearestRank(sorted, p);
  return v === undefined ? null : round(v);
};

/** Each queue's share of the GPUs in use at every sample (0 when none are in use). */
export function sharesOverTime(trace: ReplayTrace, queues: readonly string[]): Record<string, number[]> {
  const out: Record<string, number[]> = Object.fromEntries(queues.map((q) => [q, []]));
  for (const s of trace.samples) {
    const total = queues.reduce((a, q) => a + (s.gpus[q] ?? 0), 0);
    for (const q of queues) (out[q] as number[]).push(total === 0 ? 0 : round((100 * (s.gpus[q] ?? 0)) / total));
  }
  return out;
}

/** Zig-zag turning points of at least `minMove` (the first move from the start counts as no swing). */
export function swings(series: readonly number[], minMove: number): number {
  let count = 0;
  let dir = 0;
  let hi = series[0] ?? 0;
  let lo = hi;
  let ext = hi;
  for (const x of series) {
    if (dir === 0) {
      hi = Math.max(hi, x);
      lo = Math.min(lo, x);
      if (hi - x >= minMove) [dir, ext] = [-1, x];
      else if (x - lo >= minMove) [dir, ext] = [1, x];
    } else if (dir > 0) {
      if (x > ext) ext = x;
      else if (ext - x >= minMove) [count, dir, ext] = [count + 1, -1, x];
    } else if (x < ext) ext = x;
    else if (x - ext >= minMove) [count, dir, ext] = [count + 1, 1, x];
  }
  return count;
}

function movingAverage(xs: readonly number[], n: number): number[] {
  return xs.map((_, i) => {
    const from = Math.max(0, i - n + 1);
    const w = xs.slice(from, i + 1);
    return w.reduce((a, b) => a + b, 0) / w.length;
  });
}

/**
 * The steady part: from the first second the (simulated) cluster is at least 90 % busy, not before 10 % of the
 * window, to its end. Both sides are measured over the same seconds.
 */
export function steadyFrom(trace: ReplayTrace, clusterGpus: number, horizonSec: number): number {
  const floor = Math.ceil(horizonSec * 0.1);
  const busy = trace.samples.find((s) => s.t >= floor && Object.values(s.gpus).reduce((a, b) => a + b, 0) >= 0.9 * clusterGpus);
  return busy?.t ?? floor;
}

export function replayMetrics(w: ReplayWorkload, trace: ReplayTrace, clusterGpus: number, steadyFromSec: number): ReplayMetrics {
  const names = w.queues.map((q) => q.name);
  const inWindow = trace.samples.filter((s) => s.t <= w.horizonSec);
  const steady = inWindow.filter((s) => s.t >= steadyFromSec);
  const used = (s: ReplaySample): number => names.reduce((a, q) => a + (s.gpus[q] ?? 0), 0);
  const usedSum = steady.reduce((a, s) => a + used(s), 0);
  const shares = sharesOverTime({ ...trace, samples: steady }, names);
  const waits = (items: typeof w.jobs): number[] =>
    items
      .flatMap((j) => {
        const at = trace.firstStartSec.get(j.id);
        return at === undefined || at > w.horizonSec ? [] : [Math.max(0, at - j.submitAtSec)];
      })
      .sort((a, b) => a - b);
  const submitted = w.jobs.filter((j) => j.submitAtSec <= w.horizonSec);
  const queues: Record<string, QueueMetrics> = {};
  for (const q of names) {
    const series = movingAverage(shares[q] ?? [], SMOOTH_SEC);
    const mean = series.reduce((a, b) => a + b, 0) / Math.max(1, series.length);
    const sd = Math.sqrt(series.reduce((a, x) => a + (x - mean) ** 2, 0) / Math.max(1, series.length));
    const mine = submitted.filter((j) => j.queue === q);
    const ws = waits(mine);
    queues[q] = {
      sharePct: usedSum === 0 ? 0 : round((100 * steady.reduce((a, s) => a + (s.gpus[q] ?? 0), 0)) / usedSum),
      meanGpus: round(steady.reduce((a, s) => a + (s.gpus[q] ?? 0), 0) / Math.max(1, steady.length)),
      oscillation: { stddevPp: round(sd), swings: swings(series, SWING_PP) },
      waitSec: { p50: pct(ws, 50), p99: pct(ws, 99) },
      jobs: mine.length,
      neverStarted: mine.length - ws.length,
    };
  }
  const all = waits(submitted);
  const util = (ss: readonly ReplaySample[]): number => (ss.length === 0 ? 0 : round((100 * ss.reduce((a, s) => a + used(s), 0)) / (ss.length * clusterGpus)));
  return { queues, utilizationPct: util(inWindow), steadyUtilizationPct: util(steady), preemptions: trace.preemptions, preemptionsAtSec: trace.preemptionsAtSec, waitSec: { p50: pct(all, 50), p99: pct(all, 99) }, started: all.length, neverStarted: submitted.length - all.length };
}

/** The running GPUs per queue at `t` (the last change at or before it; none before the first). */
export function gpusAt(changes: readonly ReplaySample[], t: number): Readonly<Record<string, number>> {
  let lo = 0;
  let hi = changes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((changes[mid] as ReplaySample).t <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? {} : (changes[lo - 1] as ReplaySample).gpus;
}

/** GPU-seconds per queue over [from, to] of a step function of changes (exact: integrated between change points). */
export function gpuSeconds(changes: readonly ReplaySample[], queues: readonly string[], from: number, to: number): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(queues.map((q) => [q, 0]));
  if (!(to > from)) return out;
  const cuts = [from, ...changes.map((c) => c.t).filter((t) => t > from && t < to), to];
  for (let i = 0; i + 1 < cuts.length; i++) {
    const g = gpusAt(changes, cuts[i] as number);
    for (const q of queues) out[q] = (out[q] as number) + (g[q] ?? 0) * ((cuts[i + 1] as number) - (cuts[i] as number));
  }
  return out;
}

/** Each queue's share of the GPU-seconds in use over [from, to], in % (0 when none are in use). */
export function sharesBetween(changes: readonly ReplaySample[], queues: readonly string[], from: number, to: number): Record<string, number> {
  const g = gpuSeconds(changes, queues, from, to);
  const total = queues.reduce((a, q) => a + (g[q] ?? 0), 0);
  return Object.fromEntries(queues.map((q) => [q, total === 0 ? 0 : round((100 * (g[q] ?? 0)) / total)]));
}
