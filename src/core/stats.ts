/**
 * The summary statistics every report, benchmark and estimate uses, each defined once. They differ on purpose:
 * a percentile here is nearest-rank (an observed value, as scheduler_perf and our published tables report),
 * while the median is the textbook one (mean of the two middle values for an even count). Empty samples give
 * `undefined` (percentiles) or NaN (median, mean); each caller says what an empty sample reports.
 */

/**
 * Nearest-rank percentile of an ascending list: `sorted[ceil(n·p/100) − 1]`, clamped to the list, so p = 0 is
 * the minimum and p = 100 the maximum (scheduler_perf's definition). Undefined for an empty list.
 */
export function nearestRank(sorted: readonly number[], p: number): number | undefined {
  const n = sorted.length;
  if (n === 0) return undefined;
  return sorted[Math.min(n, Math.max(1, Math.ceil((n * p) / 100))) - 1];
}

/** `nearestRank` of values in any order (sorts a copy). */
export function percentile(values: readonly number[], p: number): number | undefined {
  return nearestRank(sortedCopy(values), p);
}

/** Nearest-rank percentiles of values in any order, one per p (sorts once). */
export function percentiles(values: readonly number[], ps: readonly number[]): (number | undefined)[] {
  const s = sortedCopy(values);
  return ps.map((p) => nearestRank(s, p));
}

/**
 * Median of values in any order: the middle value, or the mean of the two middle values for an even count
 * (unlike `percentile(values, 50)`, which takes the lower one). NaN for an empty list.
 */
export function median(values: readonly number[]): number {
  const s = sortedCopy(values);
  const n = s.length;
  if (n === 0) return Number.NaN;
  return n % 2 === 1 ? (s[(n - 1) / 2] as number) : ((s[n / 2 - 1] as number) + (s[n / 2] as number)) / 2;
}

/** Arithmetic mean, summed left to right; NaN for an empty list. */
export function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

const sortedCopy = (values: readonly number[]): number[] => [...values].sort((a, b) => a - b);
