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
  let area = 0;
  let prevT = elapsedMs;
  let prevS = se;
  for (let i = 0; i < curve.t.length; i++) {
    const ti = curve.t[i] as number;
    if (ti <= elapsedMs) continue;
    area += prevS * (ti - prevT);
    prevT = ti;
    prevS = curve.s[i] as number;
  }
  area += prevS * Math.max(0, curve.maxMs - prevT);
  return elapsedMs + area / se;
}
