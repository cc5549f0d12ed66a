/**
 * The engine's KV-cache use as the batch worker feeds it to the batch-size strategy (issue 13, ADR 0164): read from
 * one scrape of the engine's Prometheus /metrics through the serving code's engine-neutral signals (metrics.ts, the
 * runtime's own names: vLLM V1 `vllm:kv_cache_usage_perc`, older `vllm:gpu_cache_usage_perc`, llama-server
 * `llamacpp:kv_cache_usage_ratio`), never a name of its own. TGI and Triton export no KV-cache gauge: the reading
 * says so and the strategy keeps its "unknown" inputs (0), as before. Pure.
 */
import { readEngineSignals } from '../../serving/metrics.ts';
import type { RuntimeDefinition } from '../../serving/runtime.ts';

export interface KvReading {
  /** KV-cache use, 0..1. */
  readonly usedFraction: number;
  readonly freeFraction: number;
  /** The cache's size in tokens, when the engine reports it. */
  readonly capacityTokens?: number;
  /** Tokens the free part holds (capacity × free), when the capacity is known. */
  readonly freeTokens?: number;
}

export type KvRead = { readonly ok: true; readonly value: KvReading } | { readonly ok: false; readonly reason: string };

/** Whether the runtime exports a KV-cache gauge at all (a worker of a TGI job does not scrape). */
export const exportsKvUsage = (runtime: RuntimeDefinition): boolean => runtime.metrics.kvCacheUsage.length > 0;

export function readKv(runtime: RuntimeDefinition, text: string): KvRead {
  if (!exportsKvUsage(runtime)) return { ok: false, reason: `${runtime.name} exports no KV-cache usage metric` };
  const r = readEngineSignals(runtime, text);
  if (!r.ok) return { ok: false, reason: r.error };
  const used = r.signals.kvCacheUsage;
  if (used === undefined)
    return { ok: false, reason: `${runtime.name} /metrics has none of ${runtime.metrics.kvCacheUsage.join(', ')} (a llama-server after 2025 dropped it)` };
  const u = Math.min(1, Math.max(0, used));
  const cap = r.signals.kvCapacityTokens;
  return {
    ok: true,
    value: { usedFraction: u, freeFraction: 1 - u, ...(cap === undefined ? {} : { capacityTokens: cap, freeTokens: Math.floor(cap * (1 - u)) }) },
  };
}

/** Peak use over a window of readings: the window's tightest moment is what the next batch must fit. */
export class KvWindow {
  private peak: KvReading | undefined;
  private lastCapacity: number | undefined;

  add(r: KvReading): void {
    if (r.capacityTokens !== undefined) this.lastCapacity = r.capacityTokens;
    if (this.peak === undefined || r.usedFraction > this.peak.usedFraction) this.peak = r;
  }

  /** The window's peak (with the last known capacity), and a new window begins; undefined when nothing was read. */
  take(): KvReading | undefined {
    const p = this.peak;
    this.peak = undefined;
    if (p === undefined) return undefined;
    const cap = p.capacityTokens ?? this.lastCapacity;
    return cap === undefined ? p : { ...p, capacityTokens: cap, freeTokens: Math.floor(cap * p.freeFraction) };
  }
}
