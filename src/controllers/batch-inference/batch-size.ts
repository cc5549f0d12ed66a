/**
 * Dynamic batch size (seed 004 §2.3, §4.2). The seed's starting point is "free memory / 128 MB a token, ×1.8 when
 * the KV-cache hit rate is above 0.7, compensated by the median sequence length"; here the same three inputs go
 * through the serving issue's engine model instead (one model for serving and batch, ADR 0080):
 *  - memory: KV tokens that fit = (free accelerator memory × the job's memory ceiling − weights) / KV bytes a token;
 *  - the prompt-length distribution: a sequence holds its p90 prompt and p90 output in KV; prefixes shared between
 *    requests (the KV-cache hit rate) are held once, not per sequence;
 *  - latency: the engine model predicts the steady-state step time at a batch size, hence each request's latency
 *    (its prefill chunks plus its decode steps); the start size is the largest whose predicted p99 meets the SLA.
 * Online, AIMD on the observed p99 (and memory) moves it: additive increase while under the SLA, multiplicative
 * decrease over it, the TCP rule that converges to a fair, stable operating point without a model of the load.
 */
import { percentile } from '../../core/stats.ts';
import type { EngineModel } from '../../serving/engine-model.ts';
import { stepSeconds } from '../../serving/engine-model.ts';

export interface MemoryBudget {
  /** Accelerator memory free for this engine, bytes. */
  readonly freeBytes: number;
  readonly weightsBytes: number;
  readonly kvBytesPerToken: number;
  /** The job's ceiling (spec.batching.dynamic.maxGpuMemoryPercent / 100). */
  readonly maxFraction: number;
}

export interface TokenMix {
  readonly promptTokens: readonly number[];
  readonly outputTokens: readonly number[];
}

export interface BatchBounds {
  readonly min: number;
  readonly max: number;
}

export interface InitialBatch {
  readonly size: number;
  readonly limitedBy: 'memory' | 'engine' | 'sla' | 'bounds';
  readonly kvCapacityTokens: number;
  readonly kvTokensPerSeq: number;
  /** The engine model's p99 request latency at `size`, ms. */
  readonly predictedP99Ms: number;
}

const q = (xs: readonly number[], p: number): number => percentile(xs, p) ?? 0;
const mean = (xs: readonly number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, x) => a + x, 0) / xs.length);

/** KV tokens the engine can hold: from the memory budget when known, else the engine model's calibrated capacity. */
export function kvCapacityTokens(m: EngineModel, mem: MemoryBudget | undefined): number {
  if (mem === undefined) return m.kvCapacityTokens;
  return Math.max(0, Math.floor((mem.freeBytes * mem.maxFraction - mem.weightsBytes) / mem.kvBytesPerToken));
}

/**
 * Steady-state step time with `b` sequences in flight: each step decodes b tokens over their contexts and
 * prefills the prompts of the sequences replacing those that finished (b / mean output a step), capped by the
 * engine's token budget a step (chunked prefill).
 */
export function steadyStepSec(m: EngineModel, b: number, mix: TokenMix): number {
  const p = mean(mix.promptTokens);
  const o = Math.max(1, mean(mix.outputTokens));
  const ctx = b * (p + o / 2);
  const prefill = Math.min(Math.max(0, m.maxBatchedTokens - b), (b * p) / o);
  return stepSeconds(m, b, ctx, prefill);
}

/** Predicted p99 request latency at batch size b: (prefill chunks + output tokens) steps of the steady step time. */
export function predictedP99Ms(m: EngineModel, b: number, mix: TokenMix): number {
  const step = steadyStepSec(m, b, mix);
  const chunk = Math.max(1, m.maxBatchedTokens - b);
  const steps = mix.promptTokens.map((p, i) => Math.ceil(p / chunk) + (mix.outputTokens[i] ?? 1));
  return q(steps, 99) * step * 1000;
}

/**
 * The memory rule alone: how many sequences fit `capTokens` of KV cache when each holds its p90 prompt and p90
 * output and the shared prefix (kvHitRate × the p90 prompt) is held once. The bench's start and the live worker's
 * (live-batch.ts, from the engine's own free KV tokens) both use it.
 */
export function batchByMemory(
  capTokens: number,
  mix: TokenMix,
  kvHitRate: number,
): { readonly size: number; readonly perSeq: number; readonly shared: number } {
  const hit = Math.min(1, Math.max(0, kvHitRate));
  const p90p = q(mix.promptTokens, 90);
  const p90o = q(mix.outputTokens, 90);
  const shared = hit * p90p;
  const perSeq = Math.max(1, p90p - shared + p90o);
  return { size: Math.floor(Math.max(0, capTokens - shared) / perSeq), perSeq, shared };
}

export function initialBatchSize(
  m: EngineModel,
  mem: MemoryBudget | undefined,
  mix: TokenMix,
  kvHitRate: number,
  bounds: BatchBounds,
  slaP99Ms?: number,
): InitialBatch {
  const cap = kvCapacityTokens(m, mem);
  const { size: byMemory, perSeq } = batchByMemory(cap, mix, kvHitRate);
  let size = Math.min(byMemory, m.maxNumSeqs);
  let limitedBy: InitialBatch['limitedBy'] = byMemory <= m.maxNumSeqs ? 'memory' : 'engine';
  if (slaP99Ms !== undefined) {
    while (size > bounds.min && predictedP99Ms(m, size, mix) > slaP99Ms) {
      size = Math.floor(size * 0.9);
      limitedBy = 'sla';
    }
  }
  if (size > bounds.max || size < bounds.min) limitedBy = 'bounds';
  size = Math.max(bounds.min, Math.min(bounds.max, size));
  return { size, limitedBy, kvCapacityTokens: cap, kvTokensPerSeq: perSeq, predictedP99Ms: predictedP99Ms(m, size, mix) };
}

export interface AimdConfig extends BatchBounds {
  readonly targetP99Ms: number;
  /** Added each window under the SLA (default: an eighth of the start size, at least 1). */
  readonly increase: number;
  /** Multiplied by on a miss (0.7). */
  readonly decrease: number;
  /** KV-cache use above this fraction is a miss too (the engine is about to preempt sequences). */
  readonly maxMemoryFraction: number;
}

export interface Observation {
  readonly p99Ms: number;
  readonly memoryFraction: number;
  /**
   * How much slower the device ran in the window than the engine model says for the same steps (observed step
   * time ÷ modelled; 1 or unset = healthy). A throttled GPU or a bad link makes every request slower whatever the
   * batch size: a p99 miss it explains is not the batch's fault, and shrinking the batch would only lose throughput.
   */
  readonly slowdown?: number;
}

export function aimdConfig(start: number, bounds: BatchBounds, targetP99Ms: number, maxMemoryFraction = 0.9): AimdConfig {
  return { ...bounds, targetP99Ms, increase: Math.max(1, Math.round(start / 8)), decrease: 0.7, maxMemoryFraction };
}

/** One AIMD step from a window's observation. */
export function aimdStep(size: number, o: Observation, c: AimdConfig): { size: number; why: string } {
  const slow = o.slowdown ?? 1;
  if (o.p99Ms > c.targetP99Ms && o.memoryFraction <= c.maxMemoryFraction && slow > 1 && o.p99Ms / slow <= c.targetP99Ms) {
    return { size, why: `p99 ${o.p99Ms.toFixed(0)} ms over ${c.targetP99Ms} ms, explained by the device running ×${slow.toFixed(2)} slower: size kept` };
  }
  if (o.p99Ms > c.targetP99Ms || o.memoryFraction > c.maxMemoryFraction) {
    const next = Math.max(c.min, Math.floor(size * c.decrease));
    return {
      size: next,
      why:
        o.p99Ms > c.targetP99Ms
          ? `p99 ${o.p99Ms.toFixed(0)} ms over ${c.targetP99Ms} ms`
          : `memory ${(o.memoryFraction * 100).toFixed(0)} % over ${(c.maxMemoryFraction * 100).toFixed(0)} %`,
    };
  }
  return { size: Math.min(c.max, size + c.increase), why: `p99 ${o.p99Ms.toFixed(0)} ms within ${c.targetP99Ms} ms` };
}
