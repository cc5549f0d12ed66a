/**
 * The batch worker's live batch size (issue 13 Deliver 3 and 9, ADR 0102 amendment): the number of requests the
 * worker keeps in flight at its engine, moved window by window on the observed p99 latency against the job's SLA
 * (spec.batching.dynamic.targetLatencyMs) by the built-in AIMD, or by the job's batch-size plugin through the same
 * decide function (an answer it cannot use falls back to the built-in's, with the reason).
 * The worker does not know the engine model. Its first size is the job's spec.batching.batchSize (the plugin's start
 * decision when one is loaded, asked before the engine is up: KV unknown, 0); once the engine is up, with dynamic
 * batching, the built-in starts from the engine's free KV tokens and the prompts counted by its tokenizer
 * (memoryStart; batchSize stays when the engine does not say its cache's size), a plugin is asked again. Each window's adjustment gets the
 * engine's KV-cache use as read from its /metrics (engine-kv.ts, ADR 0164): the window's peak use as the
 * observation's memoryFraction (the built-in AIMD shrinks past 0.9) and the free tokens, when the engine reports its
 * cache's size, as kvCapacityTokens; an engine without the gauge (TGI) leaves both at 0 (unknown).
 * Pure: the worker feeds it latencies and reads the size.
 */
import { percentiles } from '../../core/stats.ts';
import type { BatchBounds, TokenMix } from './batch-size.ts';
import { aimdConfig, aimdStep, batchByMemory } from './batch-size.ts';
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
  /**
   * spec.batching.dynamic.maxGpuMemoryPercent / 100, set with dynamic batching only: the share of the engine's free
   * KV cache the start may fill, and the KV use AIMD treats as a miss. With it the built-in starts from the engine's
   * memory (memoryStart); unset (a plugin without dynamic batching), `start` stands.
   */
  readonly maxMemoryFraction?: number;
  readonly plugin?: { readonly file?: string; readonly configMap?: { readonly name: string; readonly key: string }; readonly sha256: string };
}

interface PolicySpec {
  readonly batching: {
    readonly batchSize: number;
    readonly dynamic?: {
      readonly minBatchSize: number;
      readonly maxBatchSize: number;
      readonly targetLatencyMs?: number;
      readonly maxGpuMemoryPercent?: number;
    };
  };
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
    ...(d === undefined ? {} : { maxMemoryFraction: (d.maxGpuMemoryPercent ?? 90) / 100 }),
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
  for (const k of ['start', 'min', 'max'] as const)
    if (!posInt(v[k])) return { error: `--batching: ${k} must be a positive integer, got ${JSON.stringify(v[k])}` };
  const [start, min, max] = [v.start, v.min, v.max] as number[];
  if ((min as number) > (max as number)) return { error: `--batching: min ${min} is over max ${max}` };
  if (v.targetP99Ms !== undefined && !posInt(v.targetP99Ms))
    return { error: `--batching: targetP99Ms must be a positive integer, got ${JSON.stringify(v.targetP99Ms)}` };
  const f = v.maxMemoryFraction;
  if (f !== undefined && !(typeof f === 'number' && f > 0 && f <= 1))
    return { error: `--batching: maxMemoryFraction must be a number in (0, 1], got ${JSON.stringify(f)}` };
  const p = v.plugin as BatchPolicy['plugin'] | undefined;
  if (p !== undefined && (typeof p !== 'object' || p === null || typeof p.sha256 !== 'string'))
    return { error: '--batching: plugin must be {file | configMap, sha256}' };
  return {
    start: start as number,
    min: min as number,
    max: max as number,
    ...(v.targetP99Ms === undefined ? {} : { targetP99Ms: v.targetP99Ms as number }),
    ...(f === undefined ? {} : { maxMemoryFraction: f }),
    ...(p === undefined ? {} : { plugin: p }),
  };
}

/** A prompt's tokens estimated from its JSON, 4 characters a token (what the worker assumes without a tokenizer). */
export const estimatePromptTokens = (body: Readonly<Record<string, unknown>>): number =>
  Math.max(1, Math.ceil(JSON.stringify(body.messages ?? body.prompt ?? body.input ?? '').length / 4));

/** A rough token mix from the requests themselves (4 characters a token; max_tokens or 16 out): the plugin's inputs. */
export function tokenMixOf(bodies: readonly Record<string, unknown>[]): TokenMix {
  const promptTokens = bodies.map(estimatePromptTokens);
  const outputTokens = bodies.map((b) => (posInt(b.max_tokens) ? b.max_tokens : posInt(b.max_completion_tokens) ? b.max_completion_tokens : 16));
  return { promptTokens, outputTokens };
}

/**
 * The share of each prompt that is a prefix common to the sampled prompts (a system prompt, a few-shot preamble):
 * what an engine with automatic prefix caching holds once. From the prompts' text, 0..1; 0 for fewer than 2.
 */
export function sharedPrefixFraction(bodies: readonly Readonly<Record<string, unknown>>[]): number {
  const texts = bodies.map((b) => JSON.stringify(b.messages ?? b.prompt ?? b.input ?? ''));
  if (texts.length < 2) return 0;
  let lcp = (texts[0] as string).length;
  for (const t of texts.slice(1)) {
    let i = 0;
    const a = texts[0] as string;
    while (i < lcp && i < t.length && a.charCodeAt(i) === t.charCodeAt(i)) i++;
    lcp = i;
  }
  const meanLen = texts.reduce((x, t) => x + t.length, 0) / texts.length;
  return meanLen === 0 ? 0 : Math.min(1, lcp / meanLen);
}

/**
 * The built-in's start from the engine itself (seed 004 §2.3): the sequences whose KV fits the engine's free KV
 * tokens × maxMemoryFraction, each holding the p90 counted prompt and p90 output, the shared prefix once
 * (batchByMemory, the bench's rule). Undefined when the engine does not say its cache's size.
 */
export function memoryStart(
  kv: KvReading,
  mix: TokenMix,
  sharedFraction: number,
  maxMemoryFraction: number,
  bounds: BatchBounds,
  engineSlots?: number,
): { readonly size: number; readonly why: string } | undefined {
  if (kv.freeTokens === undefined) return undefined;
  const cap = Math.floor(kv.freeTokens * maxMemoryFraction);
  const fit = batchByMemory(cap, mix, sharedFraction);
  // More in flight than the engine runs at once only queues there (llama-server's slots).
  const bySlots = engineSlots === undefined ? fit.size : Math.min(fit.size, engineSlots);
  const size = Math.max(bounds.min, Math.min(bounds.max, bySlots));
  const clamp =
    size === fit.size
      ? ''
      : bySlots < fit.size && size === bySlots
        ? ` (${fit.size} fit, the engine runs ${engineSlots} at once)`
        : ` (${fit.size} fit, bounded to [${bounds.min}, ${bounds.max}])`;
  return {
    size,
    why: `start from the engine's memory: ${cap} of its ${kv.freeTokens} free KV tokens (${Math.round(maxMemoryFraction * 100)} %) at ${Math.round(fit.perSeq)} tokens a sequence (p90 prompt and output of ${mix.promptTokens.length} counted records${fit.shared > 0 ? `, a ${Math.round(fit.shared)}-token shared prefix held once` : ''})${clamp}`,
  };
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
    private mix: TokenMix,
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

  /**
   * The start once the engine is up, from what it says (before the first window only): the mix becomes the counted
   * one; with dynamic batching the built-in's size becomes memoryStart's (a plugin is asked again instead, with the
   * free KV tokens and the counted mix). Returns the line to log, or undefined when nothing changed.
   */
  startFromEngine(kv: KvReading | undefined, counted: TokenMix | undefined, sharedFraction: number, engineSlots?: number): string | undefined {
    if (this.windows > 0) return undefined;
    if (counted !== undefined && counted.promptTokens.length > 0) this.mix = counted;
    if (this.plugin !== undefined) {
      if (kv === undefined || !this.startWithKv(kv)) return undefined;
      return `batch size ${this.size} (${this.source}): start decision with the engine's ${kv.freeTokens ?? 'unknown'} free KV tokens (${(kv.freeFraction * 100).toFixed(1)} % free)`;
    }
    const f = this.policy.maxMemoryFraction;
    if (f === undefined || kv === undefined) return undefined;
    const m = memoryStart(kv, this.mix, sharedFraction, f, this.bounds, engineSlots);
    if (m === undefined) return undefined;
    this.size = m.size;
    return `batch size ${m.size} (builtin): ${m.why}`;
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
    const built = aimdStep(this.size, o, aimdConfig(this.policy.start, this.bounds, target, this.policy.maxMemoryFraction));
    const d = decideBatchSize(this.plugin, batchSizeInputs(kv?.freeTokens ?? 0, this.mix, 0, this.bounds, target, this.size, o), built.size);
    this.size = d.value;
    this.source = d.source;
    if (d.reason !== undefined) this.lastFallback = d.reason;
    return {
      size: d.value,
      p99Ms,
      source: d.source,
      why: d.source === 'plugin' ? `plugin: p99 ${p99Ms.toFixed(0)} ms against ${target} ms` : (d.reason ?? built.why),
    };
  }
}
