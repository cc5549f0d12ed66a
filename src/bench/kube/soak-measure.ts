/**
 * Pure parts of `sits bench soak`: the seeded churn plan (arrivals, gang sizes, lifetimes), the least-squares
 * slope, and the summary of the samples (memory slopes over the steady window, event-loop lag, which of the
 * scheduler's structures grew). No I/O here.
 */
import { median } from '../../core/stats.ts';
import { seededRng } from '../../core/ports.ts';

export interface ChurnOptions {
  /** Pods submitted per second on average (gang members count one each). */
  readonly rate: number;
  /** Churn duration, seconds. */
  readonly durationS: number;
  /** Mean pod lifetime, seconds (each is uniform in [0.5, 1.5] × this). */
  readonly lifetimeS: number;
  /** Share of arrivals that are gangs (of 2–4 pods, one lifetime for all). */
  readonly gangFraction: number;
  readonly seed: number;
}

/** One arrival: a pod (`members` 1) or a gang, submitted `atS` after the start, running `lifetimeS` once started. */
export interface Arrival {
  readonly name: string;
  readonly atS: number;
  readonly members: number;
  readonly lifetimeS: number;
}

/**
 * The arrivals of a run: Poisson in time (exponential gaps) at `rate / mean members` arrivals per second, so that
 * pods arrive at `rate`; a gang with probability `gangFraction`. The same options give the same plan.
 */
export function churnPlan(o: ChurnOptions): Arrival[] {
  const rng = seededRng(o.seed);
  const meanMembers = 1 + o.gangFraction * 2; // gangs have 2, 3 or 4 members: mean 3
  const perSecond = o.rate / meanMembers;
  const out: Arrival[] = [];
  let t = 0;
  for (let i = 0; ; i++) {
    t += -Math.log(1 - rng.next()) / perSecond;
    if (t >= o.durationS) break;
    const gang = rng.next() < o.gangFraction;
    const members = gang ? 2 + rng.int(3) : 1;
    const lifetimeS = Math.round(o.lifetimeS * (0.5 + rng.next()) * 10) / 10;
    out.push({ name: `${gang ? 'gang' : 'pod'}-${String(i).padStart(6, '0')}`, atS: Math.round(t * 1000) / 1000, members, lifetimeS });
  }
  return out;
}

/** Pods running at once in steady state (Little's law: arrival rate × mean lifetime). */
export const steadyPods = (o: Pick<ChurnOptions, 'rate' | 'lifetimeS'>): number => o.rate * o.lifetimeS;

/** Least-squares slope of y over x (NaN with fewer than two distinct x). */
export function leastSquaresSlope(points: readonly { readonly x: number; readonly y: number }[]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  let sx = 0;
  let sy = 0;
  for (const p of points) {
    sx += p.x;
    sy += p.y;
  }
  const mx = sx / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
}

export interface SoakSample {
  /** Seconds since the churn started. */
  readonly t: number;
  /** churn: submissions running; drain: after the last submission, waiting for the last pods to complete. */
  readonly phase: 'churn' | 'drain';
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
  readonly heapTotalMiB: number;
  readonly externalMiB: number;
  /** V8's heap limit in the SITS process (the chart's cap: ADR 0190). */
  readonly heapLimitMiB: number;
  /** The SITS process's event-loop delay since the previous sample. */
  readonly lag: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number; readonly meanMs: number };
  readonly cpuSeconds: number;
  /** Entries of the scheduler's long-lived structures (LiveScheduler.footprint). */
  readonly footprint: Readonly<Record<string, number>>;
  /** The benchmark's own counts (pods, gang members counted one each). */
  readonly pods: { readonly submitted: number; readonly bound: number; readonly completed: number; readonly deleted: number; readonly live: number };
  /** The machine's 1-minute load average. */
  readonly load1: number;
}

export interface Growth {
  readonly max: number;
  /** Value at the first and last sample of the steady window. */
  readonly windowStart: number;
  readonly windowEnd: number;
  /** Least-squares slope over the steady window, entries per hour. */
  readonly slopePerHour: number;
}

export interface SoakSummary {
  /** The steady window: churn samples from half the churn duration on (the first half is warm-up). */
  readonly window: { readonly fromS: number; readonly toS: number; readonly samples: number };
  readonly rss: { readonly slopeMiBPerHour: number; readonly windowStartMiB: number; readonly windowEndMiB: number; readonly maxMiB: number };
  readonly heapUsed: { readonly slopeMiBPerHour: number; readonly windowStartMiB: number; readonly windowEndMiB: number; readonly maxMiB: number };
  /** Event-loop delay: the worst and the median of the per-sample p99s, and the largest single delay (all churn samples). */
  readonly lag: { readonly p99MaxMs: number; readonly p99MedianMs: number; readonly maxMs: number };
  readonly footprint: Readonly<Record<string, Growth>>;
  /** Footprint keys whose fitted rise over the steady window is more than 10 % of their maximum and more than 10 entries. */
  readonly growing: readonly string[];
  /** The pod caches against Little's law (rate × mean lifetime): the largest seen over the expected steady count. */
  readonly expected: { readonly steadyPods: number; readonly maxLivePods: number; readonly maxPodCache: number; readonly podCacheOverExpected: number };
}

const r2 = (x: number): number => (Number.isFinite(x) ? Math.round(x * 100) / 100 : x);

/** The summary of a run's samples; `churnS` is the churn duration, `podCacheKey` the footprint key of the pod informer. */
export function summarizeSoak(samples: readonly SoakSample[], churnS: number, expectedPods: number, podCacheKey: string): SoakSummary {
  const churn = samples.filter((s) => s.phase === 'churn');
  const window = churn.filter((s) => s.t >= churnS / 2);
  const perHour = (pick: (s: SoakSample) => number): number => r2(leastSquaresSlope(window.map((s) => ({ x: s.t / 3600, y: pick(s) }))));
  const first = window[0];
  const last = window.at(-1);
  const mem = (pick: (s: SoakSample) => number): { slopeMiBPerHour: number; windowStartMiB: number; windowEndMiB: number; maxMiB: number } => ({
    slopeMiBPerHour: perHour(pick),
    windowStartMiB: r2(first === undefined ? Number.NaN : pick(first)),
    windowEndMiB: r2(last === undefined ? Number.NaN : pick(last)),
    maxMiB: r2(Math.max(...samples.map(pick))),
  });
  const keys = [...new Set(samples.flatMap((s) => Object.keys(s.footprint)))].sort();
  const footprint: Record<string, Growth> = {};
  const growing: string[] = [];
  const windowHours = first === undefined || last === undefined ? 0 : (last.t - first.t) / 3600;
  for (const k of keys) {
    const at = (s: SoakSample | undefined): number => s?.footprint[k] ?? Number.NaN;
    const g: Growth = { max: Math.max(...samples.map((s) => s.footprint[k] ?? 0)), windowStart: at(first), windowEnd: at(last), slopePerHour: perHour((s) => s.footprint[k] ?? 0) };
    footprint[k] = g;
    const rise = g.slopePerHour * windowHours;
    if (rise > 10 && rise > 0.1 * g.max) growing.push(k);
  }
  const p99s = churn.map((s) => s.lag.p99Ms);
  const maxLivePods = Math.max(0, ...churn.map((s) => s.pods.live));
  const maxPodCache = Math.max(0, ...churn.map((s) => s.footprint[podCacheKey] ?? 0));
  return {
    window: { fromS: r2(first?.t ?? Number.NaN), toS: r2(last?.t ?? Number.NaN), samples: window.length },
    rss: mem((s) => s.rssMiB),
    heapUsed: mem((s) => s.heapUsedMiB),
    lag: { p99MaxMs: r2(Math.max(...p99s)), p99MedianMs: r2(median(p99s)), maxMs: r2(Math.max(...churn.map((s) => s.lag.maxMs))) },
    footprint,
    growing,
    expected: { steadyPods: r2(expectedPods), maxLivePods, maxPodCache, podCacheOverExpected: r2(maxPodCache / expectedPods) },
  };
}
