/**
 * Runtime estimates learned from history when users give none. Finished jobs are complete observations;
 * jobs still running are censored at their elapsed time (they will run at least that long). Ignoring the
 * censored ones biases estimates short — early in a busy period only the short jobs have finished — so
 * the survival curve is estimated with Kaplan–Meier and the expected duration of a job that has already
 * run `e` is e + ∫_e^∞ S(t) dt / S(e), integrated up to the longest observation.
 */

export interface Observation {
  readonly durationMs: number;
  /** True when the job finished; false when it is still running (a lower bound). */
  readonly finished: boolean;
}

/** Kaplan–Meier survival steps: S just after each distinct finished duration. */
export interface SurvivalCurve {
  readonly t: readonly number[];
  readonly s: readonly number[];
  readonly maxMs: number;
}

export function survival(obs: readonly Observation[]): SurvivalCurve {
  const sorted = [...obs].sort((a, b) => a.durationMs - b.durationMs || Number(b.finished) - Number(a.finished));
  const t: number[] = [];
  const s: number[] = [];
  let atRisk = sorted.length;
  let surv = 1;
  let i = 0;
  while (i < sorted.length) {
    const d = (sorted[i] as Observation).durationMs;
    let deaths = 0;
    let leaving = 0;
    while (i < sorted.length && (sorted[i] as Observation).durationMs === d) {
      if ((sorted[i] as Observation).finished) deaths++;
      leaving++;
      i++;
    }
    if (deaths > 0 && atRisk > 0) {
      surv *= 1 - deaths / atRisk;
      t.push(d);
      s.push(surv);
    }
    atRisk -= leaving;
  }
  return { t, s, maxMs: sorted.length === 0 ? 0 : (sorted[sorted.length - 1] as Observation).durationMs };
}

/** S(x) from the step function. */
function survivalAt(curve: { t: readonly number[]; s: readonly number[] }, x: number): number {
  let v = 1;
  for (let i = 0; i < curve.t.length && (curve.t[i] as number) <= x; i++) v = curve.s[i] as number;
  return v;
}

/**
 * Expected total duration of a job that has run `elapsedMs`, or undefined without any finished observation.
 * The tail beyond the longest observation is cut there (restricted mean).
 */
export function expectedDuration(obs: readonly Observation[], elapsedMs = 0): number | undefined {
  return expectedFromCurve(survival(obs), elapsedMs);
}

/** The same from a survival curve computed once (cheap to evaluate for many elapsed times). */
export function expectedFromCurve(curve: SurvivalCurve, elapsedMs = 0): number | undefined {
  if (curve.t.length === 0) return undefined;
  const se = survivalAt(curve, elapsedMs);
  if (se <= 0) return undefined;
  const { area, lastT, lastS } = areaAfter(curve, elapsedMs, se);
  return elapsedMs + (area + lastS * Math.max(0, curve.maxMs - lastT)) / se;
}

/** ∫ S(t) dt from `elapsedMs` to the last step of the curve, with S(elapsedMs) = `se`; and where it stopped. */
function areaAfter(curve: SurvivalCurve, elapsedMs: number, se: number): { area: number; lastT: number; lastS: number } {
  let area = 0;
  let lastT = elapsedMs;
  let lastS = se;
  for (let i = 0; i < curve.t.length; i++) {
    const ti = curve.t[i] as number;
    if (ti <= elapsedMs) continue;
    area += lastS * (ti - lastT);
    lastT = ti;
    lastS = curve.s[i] as number;
  }
  return { area, lastT, lastS };
}

/**
 * E[T | T > e] with a heavy tail beyond the longest observation M instead of a cut: a Pareto tail of index
 * α, S(t) = S(M)·(M/t)^α for t > M, whose mean residual life at age a is a/(α − 1). With the default α = 2 a
 * job still running at M is expected to run as long again ("doubling"):
 * E[T | T > e] = e + (∫_e^M S(t) dt + S(M)·M/(α − 1)) / S(e) for e < M, and e + e/(α − 1) for e ≥ M.
 * Jobs that outlived every observation, and classes where nothing has finished yet, get a finite estimate
 * that grows as they run (the restricted mean would cut them at M and call them done). Undefined only
 * without observations.
 */
export function expectedWithTail(curve: SurvivalCurve, elapsedMs = 0, alpha = 2): number | undefined {
  if (curve.maxMs <= 0 && curve.t.length === 0) return undefined;
  const M = curve.maxMs;
  const residual = (age: number): number => age / Math.max(alpha - 1, 1e-9);
  if (elapsedMs >= M) return elapsedMs + residual(elapsedMs);
  const se = survivalAt(curve, elapsedMs);
  if (se <= 0) return elapsedMs + residual(elapsedMs);
  const { area, lastT, lastS } = areaAfter(curve, elapsedMs, se);
  return elapsedMs + (area + lastS * (M - lastT) + lastS * residual(M)) / se;
}

export interface RuntimeModelOptions {
  /** A job class needs this many finished jobs before its own curve is used; else the next coarser key. */
  readonly minFinished: number;
  /** With no observation at all (nothing finished, nothing running): this, or twice the time already run when longer. */
  readonly fallbackMs: number;
  /** Only the most recent finished (and, apart, stopped) jobs of a key count (the job mix drifts; memory stays bounded); 0 = all. */
  readonly recent: number;
  /** Tail index beyond the longest observation (`expectedWithTail`); 2 = a survivor runs as long again. */
  readonly tailAlpha: number;
}

export const DEFAULT_RUNTIME_MODEL: RuntimeModelOptions = { minFinished: 5, fallbackMs: 3_600_000, recent: 0, tailAlpha: 2 };

/**
 * Runtime estimates per job class. Keys go from the most specific (e.g. queue and size) to the coarsest
 * (e.g. queue); the first key with enough finished jobs is used, else the coarsest key with any observation
 * (running jobs alone still bound the runtime from below). Running jobs are the censored observations, set
 * as of one moment with `setRunning`; curves are cached until the next change. Estimates are Kaplan–Meier
 * conditional means with the doubling tail (`expectedWithTail`).
 */
export class RuntimeModel {
  private readonly finished = new Map<string, number[]>();
  /** Jobs that stopped before finishing (preempted, deleted): censored at the time they ran, kept like finished ones. */
  private readonly stopped = new Map<string, number[]>();
  private censored = new Map<string, number[]>();
  private curves = new Map<string, SurvivalCurve>();
  private readonly opts: RuntimeModelOptions;

  constructor(opts: Partial<RuntimeModelOptions> = {}) {
    this.opts = { ...DEFAULT_RUNTIME_MODEL, ...opts };
  }

  observeFinished(keys: readonly string[], durationMs: number): void {
    this.keep(this.finished, keys, durationMs);
  }

  /** A job that stopped without finishing (preempted, deleted) after running `durationMs`: it would have run at least that long. */
  observeStopped(keys: readonly string[], durationMs: number): void {
    this.keep(this.stopped, keys, durationMs);
  }

  private keep(into: Map<string, number[]>, keys: readonly string[], durationMs: number): void {
    for (const k of keys) {
      const l = into.get(k) ?? [];
      l.push(durationMs);
      if (this.opts.recent > 0 && l.length > this.opts.recent) l.splice(0, l.length - this.opts.recent);
      into.set(k, l);
      this.curves.delete(k);
    }
  }

  /** The jobs running now, each with the time it has run so far. */
  setRunning(jobs: readonly { readonly keys: readonly string[]; readonly elapsedMs: number }[]): void {
    this.censored = new Map();
    this.curves = new Map();
    for (const j of jobs) {
      for (const k of j.keys) {
        const l = this.censored.get(k);
        if (l === undefined) this.censored.set(k, [j.elapsedMs]);
        else l.push(j.elapsedMs);
      }
    }
  }

  finishedCount(key: string): number {
    return this.finished.get(key)?.length ?? 0;
  }

  /**
   * Expected total runtime of a job of this class that has run `elapsedMs` (0 for a waiting job): the
   * Kaplan–Meier conditional mean E[T | T > e] with the doubling tail; never less than a second beyond e.
   */
  expectedTotal(keys: readonly string[], elapsedMs = 0): number {
    const key =
      keys.find((k) => this.finishedCount(k) >= this.opts.minFinished) ??
      [...keys].reverse().find((k) => this.finishedCount(k) > 0 || (this.censored.get(k)?.length ?? 0) > 0 || (this.stopped.get(k)?.length ?? 0) > 0);
    if (key === undefined) return Math.max(this.opts.fallbackMs, 2 * elapsedMs);
    let curve = this.curves.get(key);
    if (curve === undefined) {
      curve = survival([
        ...(this.finished.get(key) ?? []).map((d) => ({ durationMs: d, finished: true })),
        ...[...(this.stopped.get(key) ?? []), ...(this.censored.get(key) ?? [])].map((d) => ({ durationMs: d, finished: false })),
      ]);
      this.curves.set(key, curve);
    }
    return Math.max(elapsedMs + 1000, expectedWithTail(curve, elapsedMs, this.opts.tailAlpha) ?? Math.max(this.opts.fallbackMs, 2 * elapsedMs));
  }
}
