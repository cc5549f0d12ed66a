/**
 * One engine-neutral signal from an engine's /metrics text: the autoscaler and the controller read this, never a
 * metric name. The names come from the runtime's data (runtime.ts); the text is parsed by the one strict parser
 * (core/prom-text.ts). A signal the engine does not export stays undefined, so that "no queue metric" is never
 * read as "an empty queue".
 */
import { parsePromText, PromParseError, type MetricFamily, type Sample } from '../core/prom-text.ts';
import type { EngineMetricNames, RuntimeDefinition } from './runtime.ts';

/** A cumulative histogram summed over its series: ascending upper bounds, the last one +Inf. */
export interface Histogram {
  readonly buckets: readonly { readonly le: number; readonly count: number }[];
  readonly sum: number;
  readonly count: number;
}

export interface EngineSignals {
  readonly running?: number;
  readonly waiting?: number;
  readonly kvCacheUsage?: number;
  /** The KV cache's size in tokens, when the engine reports it (runtime.ts kvCacheCapacity). */
  readonly kvCapacityTokens?: number;
  readonly generatedTokensTotal?: number;
  readonly promptTokensTotal?: number;
  readonly ttftSeconds?: Histogram;
  readonly itlSeconds?: Histogram;
}

export type SignalsResult = { readonly ok: true; readonly signals: EngineSignals } | { readonly ok: false; readonly error: string };

const samplesNamed = (families: Map<string, MetricFamily>, name: string): Sample[] => {
  const out: Sample[] = [];
  for (const f of families.values()) for (const s of f.samples) if (s.name === name) out.push(s);
  return out;
};

/** The sum over the series of the first name that is present (engines with several engines or models per pod). */
function summed(families: Map<string, MetricFamily>, names: readonly string[]): number | undefined {
  for (const n of names) {
    const ss = samplesNamed(families, n);
    if (ss.length > 0) return ss.reduce((a, s) => a + s.value, 0);
  }
  return undefined;
}

/** The mean over the series of the first name present: a usage ratio of several engines is their mean. */
function averaged(families: Map<string, MetricFamily>, names: readonly string[]): number | undefined {
  for (const n of names) {
    const ss = samplesNamed(families, n);
    if (ss.length > 0) return ss.reduce((a, s) => a + s.value, 0) / ss.length;
  }
  return undefined;
}

/** The KV cache's size in tokens from the runtime's capacity names; undefined when absent, zero or not derivable. */
function kvCapacity(families: Map<string, MetricFamily>, c: EngineMetricNames['kvCacheCapacity'], usage: number | undefined): number | undefined {
  if (c === undefined) return undefined;
  if ('info' in c) {
    const s = samplesNamed(families, c.info)[0];
    const tokens = Number(s?.labels[c.blocksLabel]) * Number(s?.labels[c.blockSizeLabel]);
    return Number.isFinite(tokens) && tokens > 0 ? tokens : undefined;
  }
  // tokens in use ÷ the share in use: only defined while something is in the cache.
  const inUse = summed(families, [c.tokensInUse]);
  return inUse === undefined || usage === undefined || !(usage > 0) ? undefined : Math.round(inUse / usage);
}

function histogram(families: Map<string, MetricFamily>, names: readonly string[]): Histogram | undefined {
  for (const n of names) {
    const buckets = samplesNamed(families, `${n}_bucket`);
    if (buckets.length === 0) continue;
    const byLe = new Map<number, number>();
    for (const b of buckets) {
      const le = b.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(b.labels.le);
      byLe.set(le, (byLe.get(le) ?? 0) + b.value);
    }
    const sorted = [...byLe.entries()].sort((a, b) => a[0] - b[0]).map(([le, count]) => ({ le, count }));
    return { buckets: sorted, sum: summed(families, [`${n}_sum`]) ?? 0, count: summed(families, [`${n}_count`]) ?? 0 };
  }
  return undefined;
}

/** Reads the engine-neutral signal from one scrape of the runtime's /metrics, or says why the text is bad. */
export function readEngineSignals(runtime: RuntimeDefinition, text: string): SignalsResult {
  let families: Map<string, MetricFamily>;
  try {
    families = parsePromText(text);
  } catch (e) {
    if (e instanceof PromParseError) return { ok: false, error: `${runtime.name} /metrics: ${e.message}` };
    throw e;
  }
  const m = runtime.metrics;
  const signals: Record<string, unknown> = {
    running: summed(families, m.running),
    waiting: summed(families, m.waiting),
    kvCacheUsage: averaged(families, m.kvCacheUsage),
    kvCapacityTokens: kvCapacity(families, m.kvCacheCapacity, averaged(families, m.kvCacheUsage)),
    generatedTokensTotal: summed(families, m.generatedTokensTotal),
    promptTokensTotal: summed(families, m.promptTokensTotal),
    ttftSeconds: histogram(families, m.ttftSeconds),
    itlSeconds: histogram(families, m.itlSeconds),
  };
  for (const k of Object.keys(signals)) if (signals[k] === undefined) delete signals[k];
  return { ok: true, signals: signals as EngineSignals };
}

/**
 * Tokens per second between two scrapes of one replica (a restart resets counters: a drop gives undefined, not a
 * negative rate, and the next interval counts again).
 */
export function counterRate(before: number | undefined, after: number | undefined, seconds: number): number | undefined {
  if (before === undefined || after === undefined || !(seconds > 0) || after < before) return undefined;
  return (after - before) / seconds;
}

/**
 * A quantile of the observations between two scrapes of one histogram, by linear interpolation inside the bucket
 * (PromQL's histogram_quantile); undefined when nothing was observed. The +Inf bucket answers its lower bound.
 */
export function histogramQuantile(q: number, after: Histogram, before?: Histogram): number | undefined {
  const prev = new Map((before?.buckets ?? []).map((b) => [b.le, b.count]));
  const buckets = after.buckets.map((b) => ({ le: b.le, count: b.count - (prev.get(b.le) ?? 0) }));
  const total = buckets.at(-1)?.count ?? 0;
  if (!(total > 0)) return undefined;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const b of buckets) {
    if (b.count >= rank) {
      if (b.le === Number.POSITIVE_INFINITY) return lower;
      const inBucket = b.count - below;
      return inBucket > 0 ? lower + ((b.le - lower) * (rank - below)) / inBucket : b.le;
    }
    lower = b.le;
    below = b.count;
  }
  return lower;
}
