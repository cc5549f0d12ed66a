/**
 * The engine model of the serving simulator: how long one continuous-batching step of a vLLM replica takes, how
 * fast it prefills and how many tokens of KV cache it holds. Calibrated for Llama 3.1 8B on one H100 SXM 80GB
 * from published figures; every constant and its source is in docs/adr/0080-serving-engine-model.md.
 */

export interface EngineModel {
  readonly name: string;
  readonly gpusPerReplica: number;
  /** Fixed cost of one engine step (scheduling, sampling, the weights read once per step), seconds. */
  readonly stepBaseSec: number;
  /** Added per sequence in the step (decode tokens are memory-bound on the batch), seconds. */
  readonly stepPerSeqSec: number;
  /** Added per token of context attended by the decoding sequences (KV read from HBM), seconds. */
  readonly stepPerContextTokenSec: number;
  /** Prefill throughput of one replica, prompt tokens per second (compute-bound). */
  readonly prefillTokensPerSec: number;
  /** KV-cache capacity of one replica in tokens. */
  readonly kvCapacityTokens: number;
  /** Sequences in one batch at most (vLLM --max-num-seqs). */
  readonly maxNumSeqs: number;
  /** Tokens scheduled in one step at most (vLLM --max-num-batched-tokens, chunked prefill). */
  readonly maxBatchedTokens: number;
  /** From GPU granted to the replica serving (image pulled, weights loaded, CUDA graphs captured), seconds. */
  readonly startupSec: number;
}

/**
 * Llama 3.1 8B Instruct, bf16, vLLM ≥ 0.6 with chunked prefill, one H100 SXM 80GB (ADR 0080):
 * - decode step: 7.5 ms at ~10 sequences and 25.6 ms at 256 (LambdaLabsML/vllm-benchmark: median TPOT 7.56 ms for
 *   10 concurrent requests; v0.6.0 with 256 sequences, 25.57 ms), with the KV-read term from the H100's 3.35 TB/s
 *   and 128 KiB of KV per token: fitted as 6.8 ms + 0.054 ms per sequence + 39 ns per context token;
 * - prefill: 25,000 tokens/s (62 ms TTFT for 1,369 prompt tokens arriving together, minus one step);
 * - KV capacity: 435,000 tokens (0.9 × 80 GB − 16 GB of weights − activations, at 128 KiB per token);
 * - start-up: 60 s (an assumption, counted the same for every policy).
 */
export const LLAMA31_8B_H100: EngineModel = {
  name: 'Llama-3.1-8B-Instruct, vLLM, 1x H100 SXM 80GB',
  gpusPerReplica: 1,
  stepBaseSec: 0.0068,
  stepPerSeqSec: 0.000054,
  stepPerContextTokenSec: 131072 / 3.35e12,
  prefillTokensPerSec: 25_000,
  kvCapacityTokens: 435_000,
  maxNumSeqs: 256,
  maxBatchedTokens: 8192,
  startupSec: 60,
};

/** One step's duration: `seqs` sequences in the batch attending `contextTokens` in all, plus `prefillTokens` prefilled. */
export function stepSeconds(m: EngineModel, seqs: number, contextTokens: number, prefillTokens: number): number {
  return m.stepBaseSec + m.stepPerSeqSec * seqs + m.stepPerContextTokenSec * contextTokens + prefillTokens / m.prefillTokensPerSec;
}

/**
 * Total duration of `steps` decode-only steps of a batch of `seqs` sequences starting at `contextTokens`: the
 * context grows by `seqs` each step, so the durations form an arithmetic series.
 */
export function decodeRunSeconds(m: EngineModel, seqs: number, contextTokens: number, steps: number): number {
  const first = stepSeconds(m, seqs, contextTokens, 0);
  return steps * first + (m.stepPerContextTokenSec * seqs * steps * (steps - 1)) / 2;
}
