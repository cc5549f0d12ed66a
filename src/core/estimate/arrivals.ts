/**
 * Expected future arrivals per queue, learned only from arrivals already seen: later work of a queue that is
 * under its fair share goes ahead of jobs already waiting in other queues, so a start-time estimate that
 * ignores it is early (ADR 0021). The forecast repeats each queue's recent past: its arrival rate over the
 * last `lookbackMs` (or over what has been observed, if less), evenly spaced, cycling through the shapes of
 * those recent arrivals in their order. It reaches no further ahead than the evidence reaches back
 * (min(horizon, observed span)): a burst is not assumed to last longer than it has been seen to last.
 */

export interface ForecastOptions {
  /** Arrivals older than this are forgotten (the rate follows the recent load). */
  readonly lookbackMs: number;
  /** Forecast at most this far ahead. */
  readonly horizonMs: number;
  /** Rates are never computed over less than this span (a single early arrival is not a rate). */
  readonly minSpanMs: number;
}

export const DEFAULT_FORECAST: ForecastOptions = { lookbackMs: 2 * 3_600_000, horizonMs: 2 * 3_600_000, minSpanMs: 15 * 60_000 };

export interface ForecastArrival<T> {
  readonly queue: string;
  readonly atMs: number;
  /** The shape of the recent arrival this one repeats. */
  readonly template: T;
  /** Unique and stable for one forecast: `forecast/<queue>/<k>`. */
  readonly id: string;
}

export class ArrivalHistory<T> {
  private readonly byQueue = new Map<string, { atMs: number; template: T }[]>();
  private firstMs = Infinity;

  constructor(private readonly opts: ForecastOptions = DEFAULT_FORECAST) {}

  /** An arrival, in time order (arrivals out of order are accepted but the oldest are pruned first). */
  record(queue: string, atMs: number, template: T): void {
    const l = this.byQueue.get(queue) ?? [];
    l.push({ atMs, template });
    this.byQueue.set(queue, l);
    this.firstMs = Math.min(this.firstMs, atMs);
  }

  /** Arrivals kept (all queues). */
  get size(): number {
    let n = 0;
    for (const l of this.byQueue.values()) n += l.length;
    return n;
  }

  /** Arrivals per ms of each queue as of `nowMs` (over the lookback, or the observed span if shorter). */
  rates(nowMs: number): Map<string, number> {
    const span = this.span(nowMs);
    const out = new Map<string, number>();
    for (const [q, l] of this.recent(nowMs)) out.set(q, l.length / span);
    return out;
  }

  forecast(nowMs: number): ForecastArrival<T>[] {
    const span = this.span(nowMs);
    const ahead = Math.min(this.opts.horizonMs, span);
    const out: ForecastArrival<T>[] = [];
    for (const [queue, l] of this.recent(nowMs)) {
      if (l.length === 0) continue;
      const gap = span / l.length;
      for (let k = 1; k * gap <= ahead; k++)
        out.push({ queue, atMs: nowMs + k * gap, template: (l[(k - 1) % l.length] as { template: T }).template, id: `forecast/${queue}/${k}` });
    }
    return out.sort((a, b) => a.atMs - b.atMs || (a.id < b.id ? -1 : 1));
  }

  private span(nowMs: number): number {
    return Math.max(this.opts.minSpanMs, Math.min(this.opts.lookbackMs, nowMs - this.firstMs));
  }

  /** Forgets arrivals older than the lookback (memory stays bounded by the arrivals of one lookback). */
  prune(nowMs: number): void {
    const from = nowMs - this.opts.lookbackMs;
    for (const l of this.byQueue.values()) {
      let cut = 0;
      while (cut < l.length && (l[cut] as { atMs: number }).atMs <= from) cut++;
      if (cut > 0) l.splice(0, cut);
    }
  }

  private recent(nowMs: number): Map<string, { atMs: number; template: T }[]> {
    this.prune(nowMs);
    const out = new Map<string, { atMs: number; template: T }[]>();
    for (const [q, l] of this.byQueue) {
      out.set(
        q,
        l.filter((a) => a.atMs <= nowMs),
      );
    }
    return out;
  }
}
