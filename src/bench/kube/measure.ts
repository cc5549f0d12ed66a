/**
 * Pure parts of `sits bench kube`: throughput as kube-scheduler's scheduler_perf computes it, rates over a
 * window, percentiles, /proc/<pid>/stat parsing, sums and histograms over scraped Prometheus samples (parsed
 * by harness/prom-text.ts), and the kube-scheduler config the benchmark writes. No I/O here (see
 * docs/adr/0020-kube-scheduler-benchmark-method.md).
 */
import type { Sample } from '../../harness/prom-text.ts';

/**
 * scheduler_perf's "SchedulingThroughput" (test/integration/scheduler_perf/util.go, throughputCollector):
 * from `startMs` the collector samples the number of scheduled pods every `intervalMs`; ticks before the
 * first scheduled pod are ignored, the first tick that sees one is skipped (it only marks the start), a tick
 * with no new pod is skipped and its interval folded into the next sample (which is then recorded once per
 * folded interval), and sampling ends when the last pod is scheduled (the partial last interval is dropped).
 * Average is the mean of the samples; percentiles are nearest-rank over the sorted samples.
 */
export interface ThroughputSummary {
  readonly average: number;
  readonly perc50: number;
  readonly perc90: number;
  readonly perc95: number;
  readonly perc99: number;
  readonly samples: number;
}

export function schedulerPerfThroughput(boundAtMs: readonly number[], startMs: number, intervalMs = 1000): ThroughputSummary | undefined {
  const times = [...boundAtMs].sort((a, b) => a - b);
  const last = times.at(-1);
  if (last === undefined) return undefined;
  const samples: number[] = [];
  let i = 0; // binds counted so far (times[0..i) <= tick)
  let started = false;
  let lastCount = 0;
  let lastSample = startMs;
  let skipped = 0;
  for (let k = 1; startMs + k * intervalMs <= last; k++) {
    const tick = startMs + k * intervalMs;
    while (i < times.length && (times[i] as number) <= tick) i++;
    if (i === 0) continue;
    if (!started) {
      started = true;
      lastCount = i;
      lastSample = tick;
      continue;
    }
    const fresh = i - lastCount;
    if (fresh === 0) {
      skipped++;
      continue;
    }
    const rate = fresh / ((tick - lastSample) / 1000);
    for (let s = 0; s <= skipped; s++) samples.push(rate);
    lastCount = i;
    lastSample = tick;
    skipped = 0;
  }
  if (samples.length === 0) return undefined;
  samples.sort((a, b) => a - b);
  return {
    average: samples.reduce((a, b) => a + b, 0) / samples.length,
    perc50: nearestRank(samples, 50),
    perc90: nearestRank(samples, 90),
    perc95: nearestRank(samples, 95),
    perc99: nearestRank(samples, 99),
    samples: samples.length,
  };
}

/** Nearest-rank percentile of ascending `sorted` (scheduler_perf's `sorted[ceil(n·p/100) − 1]`). */
export function nearestRank(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length, Math.max(1, Math.ceil((sorted.length * p) / 100))) - 1;
  return sorted[idx] as number;
}

/** Percentiles of unsorted values (nearest rank); NaN for an empty list. */
export function percentiles(values: readonly number[], ps: readonly number[]): number[] {
  const s = [...values].sort((a, b) => a - b);
  return ps.map((p) => nearestRank(s, p));
}

/** Pods per second over [fromMs, toMs]: count / seconds; NaN when the window is empty. */
export function rate(count: number, fromMs: number, toMs: number): number {
  const sec = (toMs - fromMs) / 1000;
  return sec > 0 ? count / sec : Number.NaN;
}

/** Binds per whole second since `startMs` (for the timeline), index = second. */
export function perSecond(timesMs: readonly number[], startMs: number): number[] {
  const out: number[] = [];
  for (const t of timesMs) {
    const s = Math.max(0, Math.floor((t - startMs) / 1000));
    while (out.length <= s) out.push(0);
    out[s] = (out[s] as number) + 1;
  }
  return out;
}

/** CPU time of a process from the text of /proc/<pid>/stat: utime + stime (fields 14 and 15), in ticks. */
export function parseProcStat(text: string): { utime: number; stime: number } {
  // Field 2 (comm) is in parentheses and may hold spaces or ')': split after the last ')'.
  const close = text.lastIndexOf(')');
  if (close < 0) throw new Error('not a /proc/<pid>/stat line');
  const rest = text.slice(close + 2).trim().split(/\s+/); // rest[0] is field 3 (state)
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('unreadable utime/stime in /proc/<pid>/stat');
  return { utime, stime };
}

const matches = (labels: Readonly<Record<string, string>>, want: Readonly<Record<string, string>>): boolean => Object.entries(want).every(([k, v]) => labels[k] === v);

/** Sum of every sample of `name` whose labels include `want`. */
export function promSum(samples: readonly Sample[], name: string, want: Readonly<Record<string, string>> = {}): number {
  let s = 0;
  for (const x of samples) if (x.name === name && matches(x.labels, want)) s += x.value;
  return s;
}

export interface HistogramDelta {
  readonly count: number;
  readonly sumSeconds: number;
  /** Mean in milliseconds; NaN without observations. */
  readonly meanMs: number;
}

/** Count, sum and mean of a histogram between two scrapes (`before` may be empty for a fresh process). */
export function histogramDelta(before: readonly Sample[], after: readonly Sample[], name: string, want: Readonly<Record<string, string>> = {}): HistogramDelta {
  const count = promSum(after, `${name}_count`, want) - promSum(before, `${name}_count`, want);
  const sumSeconds = promSum(after, `${name}_sum`, want) - promSum(before, `${name}_sum`, want);
  return { count, sumSeconds, meanMs: count > 0 ? (sumSeconds / count) * 1000 : Number.NaN };
}

/**
 * Quantile estimate from cumulative histogram buckets (`<name>_bucket{le=…}`) between two scrapes, linear
 * inside the bucket as Prometheus' histogram_quantile does. NaN without observations.
 */
export function histogramQuantile(before: readonly Sample[], after: readonly Sample[], name: string, q: number, want: Readonly<Record<string, string>> = {}): number {
  const acc = new Map<number, number>();
  const add = (list: readonly Sample[], sign: number): void => {
    for (const x of list) {
      if (x.name !== `${name}_bucket` || !matches(x.labels, want)) continue;
      const le = x.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(x.labels.le);
      acc.set(le, (acc.get(le) ?? 0) + sign * x.value);
    }
  };
  add(after, 1);
  add(before, -1);
  const buckets = [...acc.entries()].sort((a, b) => a[0] - b[0]);
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return Number.NaN;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, c] of buckets) {
    if (c >= rank) {
      if (!Number.isFinite(le)) return prevLe;
      return c === prevCount ? le : prevLe + ((le - prevLe) * (rank - prevCount)) / (c - prevCount);
    }
    prevLe = le;
    prevCount = c;
  }
  return prevLe;
}

/**
 * The KubeSchedulerConfiguration for the benchmark: default profile, leader election off, and the client's
 * QPS and burst set (kube-scheduler's defaults are 50/100, which would cap it far below what it can do).
 */
export function kubeSchedulerConfigYaml(qps: number, burst: number): string {
  return ['apiVersion: kubescheduler.config.k8s.io/v1', 'kind: KubeSchedulerConfiguration', 'leaderElection:', '  leaderElect: false', 'clientConnection:', `  qps: ${qps}`, `  burst: ${burst}`, ''].join('\n');
}

export interface CpuShare {
  readonly name: string;
  /** CPU seconds used in the window. */
  readonly cpuSeconds: number;
}

/**
 * A one-line verdict of what bounded a run, from CPU use in the window (cores = cpu seconds / wall seconds):
 * the scheduler's own CPU (a Node event loop is one core; `eventLoopUtilization` says how busy it was), the
 * whole machine, or neither (then it waited: API latency, watch delivery, its own pacing).
 */
export function boundVerdict(o: { windowSeconds: number; cores: number; scheduler: string; shares: readonly CpuShare[]; eventLoopUtilization?: number; schedulerSingleThreaded: boolean }): string {
  const use = o.shares.map((s) => ({ name: s.name, cores: s.cpuSeconds / o.windowSeconds }));
  const total = use.reduce((a, b) => a + b.cores, 0);
  const sched = use.find((u) => u.name === o.scheduler)?.cores ?? 0;
  const list = use
    .filter((u) => u.cores >= 0.005)
    .sort((a, b) => b.cores - a.cores)
    .map((u) => `${u.name} ${u.cores.toFixed(2)}`)
    .join(', ');
  const elu = o.eventLoopUtilization === undefined ? '' : `, event loop ${(o.eventLoopUtilization * 100).toFixed(0)}% busy`;
  const head = `CPU cores used: ${list} (total ${total.toFixed(2)} of ${o.cores}${elu})`;
  if (o.schedulerSingleThreaded && (o.eventLoopUtilization ?? 0) >= 0.9) return `${head}: bounded by the scheduler's single event loop`;
  const ours = use.filter((u) => u.name !== 'other').sort((a, b) => b.cores - a.cores)[0];
  const other = use.find((u) => u.name === 'other')?.cores ?? 0;
  if (total >= 0.85 * o.cores) return `${head}: bounded by machine CPU (all ${o.cores} cores busy, ${other.toFixed(2)} of them taken by processes outside the benchmark; the benchmark's largest user: ${ours?.name ?? '?'})`;
  if (o.schedulerSingleThreaded && sched >= 0.9) return `${head}: bounded by the scheduler's CPU (one core)`;
  return `${head}: not CPU-bound — waiting on the API server (request latency, watch delivery)`;
}
