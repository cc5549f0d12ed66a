/**
 * The batch worker's live batch size (issue 13 Deliver 3 and 9, ADR 0102 amendment): the number of requests the
 * worker keeps in flight at its engine, moved window by window on the observed p99 latency against the job's SLA
 * (spec.batching.dynamic.targetLatencyMs) by the built-in AIMD, or by the job's batch-size plugin through the same
 * decide function (an answer it cannot use falls back to the built-in's, with the reason).
 * The worker does not know the engine model, so its start is the job's spec.batching.batchSize (the plugin's start
 * decision when one is loaded, asked before the engine is up: KV unknown, 0). Each window's adjustment gets the
 * engine's KV-cache use as read from its /metrics (engine-kv.ts, ADR 0164): the window's peak use as the
 * observation's memoryFraction (the built-in AIMD shrinks past 0.9) and the free tokens, when the engine reports its
 * cache's size, as kvCapacityTokens; an engine without the gauge (TGI) leaves both at 0 (unknown).
 * Pure: the worker feeds it latencies and reads the size.
 */
import { percentiles } from '../../core/stats.ts';
import type { BatchBounds, TokenMix } from './batch-size.ts';
import { aimdConfig, aimdStep } from './batch-size.ts';
import type { KvReading } from './engine-kv.ts';
import type { PluginCaller } from './wasm-plugin.ts';
import { batchSizeInputs, decideBatchSize } from './wasm-plugin.ts';

/** What the controller passes the worker (its --batching flag): the job's dynamic batching and batch-size plugin. */
export interface BatchPolicy {
  readonly start: number;
  readonly min: number;
  readonly max: number;
  /** The SLA the p99 is held to; unset: the size stays at its start. */
  readonly targetP99Ms?: number;
  readonly plugin?: { readonly file?: string; readonly configMap?: { readonly name: string; readonly key: string }; readonly sha256: string };
}

interface PolicySpec {
  readonly batching: { readonly batchSize: number; readonly dynamic?: { readonly minBatchSize: number; readonly maxBatchSize: number; readonly targetLatencyMs?: number } };
  readonly strategy?: { readonly batchSize?: { readonly wasm: NonNullable<BatchPolicy['plugin']> } };
}

/** The job's policy; undefined when it asks for neither dynamic batching nor a plugin (the worker's fixed concurrency stays). */
export function batchPolicyOf(spec: PolicySpec): BatchPolicy | undefined {
  const d = spec.batching.dynamic;
  const plugin = spec.strategy?.batchSize?.wasm;
  if (d === undefined && plugin === undefined) return undefined;
  return {
    start: spec.batching.batchSize,
    min: d?.minBatchSize ?? 1,
    max: d?.maxBatchSize ?? 2048,
    ...(d?.targetLatencyMs === undefined ? {} : { targetP99Ms: d.targetLatencyMs }),
    ...(plugin === undefined ? {} : { plugin }),
  };
}

const posInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1;

/** Parses the --batching flag; an error names the field. */
export function parseBatchPolicy(text: string): BatchPolicy | { error: string } {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    return { error: `--batching: not JSON (${(e as Error).message})` };
  }
  for (const k of ['start', 'min', 'max'] as const) if (!posInt(v[k])) return { error: `--batching: ${k} must be a positive integer, got ${JSON.stringify(v[k])}` };
  const [start, min, max] = [v.start, v.min, v.max] as number[];
  if ((min as number) > (max as number)) return { error: `--batching: min ${min} is over max ${max}` };
  if (v.targetP99Ms !== undefined && !posInt(v.targetP99Ms)) return { error: `--batching: targetP99Ms must be a positive integer, got ${JSON.stringify(v.targetP99Ms)}` };
  const p = v.plugin as BatchPolicy['plugin'] | undefined;
  if (p !== undefined && (typeof p !== 'object' || p === null || typeof p.sha256 !== 'string')) return { error: '--batching: plugin must be {file | configMap, sha256}' };
  return { start: start as number, min: min as number, max: max as number, ...(v.targetP99Ms === undefined ? {} : { targetP99Ms: v.targetP99Ms as number }), ...(p === undefined ? {} : { plugin: p }) };
}

/** A prompt's tokens estimated from its JSON, 4 characters a token (what the worker assumes without a tokenizer). */
export const estimatePromptTokens = (body: Readonly<Record<string, unknown>>): number => Math.max(1, Math.ceil(JSON.stringify(body.messages ?? body.prompt ?? body.input ?? '').length / 4));

/** A rough token mix from the requests themselves (4 characters a token; max_tokens or 16 out): the plugin's inputs. */
export function tokenMixOf(bodies: readonly Record<string, unknown>[]): TokenMix {
  const promptTokens = bodies.map(estimatePromptTokens);
  const outputTokens = bodies.map((b) => (posInt(b.max_tokens) ? b.max_tokens : posInt(b.max_completion_tokens) ? b.max_completion_tokens : 16));
  return { promptTokens, outputTokens };
}

export interface SizeChange {
  readonly size: number;
  readonly p99Ms: number;
  readonly source: 'plugin' | 'builtin';
  readonly why: string;
}

/** The default window: enough completions for a p99 that is not one request, few enough to react within seconds. */
export const BATCH_WINDOW = 16;

export class LiveBatchSize {
  size: number;
  source: 'plugin' | 'builtin' = 'builtin';
  /** The last plugin answer the built-in replaced, and why. */
  lastFallback?: string;
  /** The KV reading the last window's decision was given. */
  lastKv?: KvReading | undefined;
  private readonly bounds: BatchBounds;
  private window: number[] = [];
  private windows = 0;

  constructor(
    private readonly policy: BatchPolicy,
    private readonly mix: TokenMix,
    private readonly plugin?: PluginCaller,
    private readonly windowSize = BATCH_WINDOW,
    /** The engine's KV use over the window now ending (its peak), when the engine exports it. */
    private readonly kv?: () => KvReading | undefined,
  ) {
    this.bounds = { min: policy.min, max: policy.max };
    const builtin = Math.max(policy.min, Math.min(policy.max, policy.start));
    const d = decideBatchSize(plugin, batchSizeInputs(0, mix, 0, this.bounds, policy.targetP99Ms ?? -1), builtin);
    this.size = d.value;
    this.source = d.source;
    if (d.reason !== undefined) this.lastFallback = d.reason;
  }

  /**
   * The plugin's start decision again, now with the engine's KV cache read (the first was asked before the engine
   * was up, KV unknown); only before the first window, and only a plugin's (the built-in start is the spec's size).
   * True when it was asked.
   */
  startWithKv(kv: KvReading): boolean {
    if (this.windows > 0 || this.plugin === undefined) return false;
    const builtin = Math.max(this.policy.min, Math.min(this.policy.max, this.policy.start));
    const d = decideBatchSize(this.plugin, batchSizeInputs(kv.freeTokens ?? 0, this.mix, 0, this.bounds, this.policy.targetP99Ms ?? -1), builtin);
    this.size = d.value;
    this.source = d.source;
    if (d.reason !== undefined) this.lastFallback = d.reason;
    return true;
  }

  /** One completed request's latency; at the end of a window, the new size (which may equal the old). */
  observe(latencyMs: number): SizeChange | undefined {
    const target = this.policy.targetP99Ms;
    if (target === undefined) return undefined;
    this.window.push(latencyMs);
    if (this.window.length < this.windowSize) return undefined;
    const p99Ms = percentiles(this.window, [99])[0] as number;
    this.window = [];
    this.windows++;
    const kv = this.kv?.();
    this.lastKv = kv;
    const o = { p99Ms, memoryFraction: kv?.usedFraction ?? 0 };
    const built = aimdStep(this.size, o, aimdConfig(this.policy.start, this.bounds, target));
    const d = decideBatchSize(this.plugin, batchSizeInputs(kv?.freeTokens ?? 0, this.mix, 0, this.bounds, target, this.size, o), built.size);
    this.size = d.value;
    this.source = d.source;
    if (d.reason !== undefined) this.lastFallback = d.reason;
    return { size: d.value, p99Ms, source: d.source, why: d.source === 'plugin' ? `plugin: p99 ${p99Ms.toFixed(0)} ms against ${target} ms` : (d.reason ?? built.why) };
  }
}
