/**
 * Counting a request's prompt tokens with the engine's own tokenizer, before the request is sent (the batch worker's
 * tokenise stage, ADR 0167): vLLM's `POST /tokenize` ({model, prompt} or {model, messages}; it answers count and
 * max_model_len) and llama-server's `POST /apply-template` + `POST /tokenize` ({content, add_special}; the context
 * of a slot from `GET /props`). TGI's and Triton's tokenizers are not reachable this way here: their counts are
 * estimated (4 characters a token, what the batch-size strategy assumed before), and say so.
 */
import type { InferenceRuntime } from '../../api/schema/inference-service.ts';
import { estimatePromptTokens } from '../../controllers/batch-inference/live-batch.ts';

export interface PromptCount {
  readonly tokens: number;
  /** Prompt plus output tokens the engine accepts for one request, when it says. */
  readonly contextLimit?: number;
  /** Not the engine's tokenizer: a character estimate (a runtime without a reachable tokenizer, or it failed). */
  readonly estimated: boolean;
}

export type PromptCounter = (body: Readonly<Record<string, unknown>>, chat: boolean, signal: AbortSignal) => Promise<PromptCount>;

export { estimatePromptTokens };

export const TOKENIZER_RUNTIMES: readonly InferenceRuntime[] = ['vllm', 'llamacpp'];

async function postJson(url: string, body: unknown, signal: AbortSignal): Promise<unknown> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]),
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${text.slice(0, 200)}`);
  return JSON.parse(text) as unknown;
}

/** The counter for `runtime`'s engine at `engine` (base URL) serving `model`. */
export function promptCounter(runtime: InferenceRuntime, engine: string, model: string): PromptCounter {
  const base = engine.replace(/\/+$/, '');
  const estimate = (body: Readonly<Record<string, unknown>>): PromptCount => ({ tokens: estimatePromptTokens(body), estimated: true });
  if (runtime === 'vllm') {
    return async (body, chat, signal) => {
      const req = chat ? { model, messages: body.messages } : { model, prompt: body.prompt };
      const a = (await postJson(`${base}/tokenize`, req, signal)) as { count?: unknown; max_model_len?: unknown };
      if (typeof a.count !== 'number') throw new Error(`${base}/tokenize: no count in the answer`);
      return { tokens: a.count, ...(typeof a.max_model_len === 'number' ? { contextLimit: a.max_model_len } : {}), estimated: false };
    };
  }
  if (runtime === 'llamacpp') {
    let slotContext: Promise<number | undefined> | undefined;
    const context = (signal: AbortSignal): Promise<number | undefined> => {
      slotContext ??= fetch(`${base}/props`, { signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]) })
        .then(async (r) => ((await r.json()) as { default_generation_settings?: { n_ctx?: unknown } }).default_generation_settings?.n_ctx)
        .then((n) => (typeof n === 'number' ? n : undefined))
        .catch(() => {
          slotContext = undefined;
          return undefined;
        });
      return slotContext;
    };
    return async (body, chat, signal) => {
      let content = body.prompt;
      if (chat) content = ((await postJson(`${base}/apply-template`, { messages: body.messages }, signal)) as { prompt?: unknown }).prompt;
      if (typeof content !== 'string') throw new Error(`${chat ? `${base}/apply-template gave no prompt` : 'the record has no string prompt'}`);
      // add_special: the BOS the completion will put first is counted, as its usage.prompt_tokens counts it.
      const a = (await postJson(`${base}/tokenize`, { content, add_special: true }, signal)) as { tokens?: unknown };
      if (!Array.isArray(a.tokens)) throw new Error(`${base}/tokenize: no tokens in the answer`);
      const limit = await context(signal);
      return { tokens: a.tokens.length, ...(limit === undefined ? {} : { contextLimit: limit }), estimated: false };
    };
  }
  return async (body) => estimate(body);
}

/**
 * The engine's KV capacity and concurrency where its own API says them while it is idle: llama-server's `GET /props`
 * (`total_slots` slots of `default_generation_settings.n_ctx` tokens each: its whole KV cache). vLLM says its capacity
 * in /metrics (`cache_config_info`, engine-kv.ts); the others say neither. Undefined when unknown or unreachable.
 */
export async function engineCapacity(
  runtime: InferenceRuntime,
  engine: string,
  signal: AbortSignal,
): Promise<{ readonly capacityTokens: number; readonly slots: number } | undefined> {
  if (runtime !== 'llamacpp') return undefined;
  try {
    const r = await fetch(`${engine.replace(/\/+$/, '')}/props`, { signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]) });
    const p = (await r.json()) as { total_slots?: unknown; default_generation_settings?: { n_ctx?: unknown } };
    const slots = p.total_slots;
    const ctx = p.default_generation_settings?.n_ctx;
    return typeof slots === 'number' && typeof ctx === 'number' && slots >= 1 && ctx >= 1 ? { capacityTokens: slots * ctx, slots } : undefined;
  } catch {
    return undefined;
  }
}
