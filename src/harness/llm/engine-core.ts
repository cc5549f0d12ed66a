/**
 * The inference core shared by the engine stand-ins (llama-server.ts, vllm-server.ts): the real llama.cpp
 * inference through node-llama-cpp (CPU, `threads` threads) — the model, one llama context per distinct set of
 * applied LoRA adapters (node-llama-cpp applies adapters per context), `parallel` FIFO slots shared by all
 * contexts (a request that finds every slot busy waits), generation, and the token counters both servers' metrics
 * are made of. Each front-end speaks its engine's protocol on top; this module knows no HTTP.
 */
import { getLlama, LlamaLogLevel, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token } from 'node-llama-cpp';

/**
 * The dev kubelet's container-path map (a JSON object: container path → file on this machine, given to the engine
 * process in SITS_LLAMA_PATHS) as a function: an exact entry, else the longest mapped directory that contains the
 * path; anything else unchanged.
 */
export function containerPathResolver(json: string | undefined): (p: string) => string {
  if (json === undefined || json === '') return (p) => p;
  const map = JSON.parse(json) as Record<string, string>;
  return (p) => {
    if (map[p] !== undefined) return map[p];
    const dir = Object.keys(map)
      .filter((k) => p.startsWith(`${k.replace(/\/+$/, '')}/`))
      .sort((a, b) => b.length - a.length)[0];
    return dir === undefined ? p : `${map[dir]}${p.slice(dir.replace(/\/+$/, '').length)}`;
  };
}

/** FIFO slots: at most `n` requests run; the rest wait (llama-server's deferred queue, vLLM's waiting queue). */
export class Slots {
  busy = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly n: number) {}
  get deferred(): number {
    return this.waiting.length;
  }
  async acquire(): Promise<void> {
    if (this.busy < this.n) {
      this.busy++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next();
    else this.busy--;
  }
}

/** One adapter applied to a context: the GGUF file and its scale. */
export interface AppliedAdapter {
  readonly file: string;
  readonly scale: number;
}

interface AdapterContext {
  readonly context: LlamaContext;
  readonly free: LlamaContextSequence[];
}

export interface Counters {
  promptTokens: number;
  promptSeconds: number;
  predictedTokens: number;
  predictedSeconds: number;
  decodes: number;
  busySlotsAtDecodes: number;
  maxTokens: number;
}

export interface EngineCoreOptions {
  readonly modelFile: string;
  /** Context of one sequence (one slot). */
  readonly slotContextSize: number;
  readonly parallel: number;
  readonly threads: number;
}

export interface GenerateRequest {
  readonly prompt: string;
  /** Undefined: up to the room left in the slot. */
  readonly maxTokens: number | undefined;
  readonly temperature: number;
  readonly seed: number | undefined;
  /** The adapters applied for this request (none: the base model). */
  readonly adapters: readonly AppliedAdapter[];
  /** Generate max_tokens whatever the model samples (fixed work per request). */
  readonly ignoreEos: boolean;
}

export interface GenerateResult {
  readonly text: string;
  readonly finishReason: 'length' | 'stop';
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** performance.now() when the request got its slot's turn, at its first token and at its end. */
  readonly t0: number;
  readonly tFirst: number;
  readonly tEnd: number;
}

/**
 * A chat's prompt: the tiny model has no chat template, so both front-ends fall back to ChatML (llama-server's
 * fallback; vLLM would refuse such a model). `fail` words a malformed message in the front-end's error.
 */
export function chatMlPrompt(messages: unknown, fail: (message: string) => never): string {
  if (!Array.isArray(messages)) return fail("'messages' is required");
  return (
    messages
      .map((m: unknown, i) => {
        const { role, content } = (m ?? {}) as { role?: unknown; content?: unknown };
        if (typeof role !== 'string' || typeof content !== 'string') return fail(`messages[${i}]: role and content must be strings`);
        return `<|im_start|>${role}\n${content}<|im_end|>\n`;
      })
      .join('') + '<|im_start|>assistant\n'
  );
}

/** The prompt plus max_tokens does not fit a slot: each front-end words it as its engine does. */
export class ContextSizeError extends Error {
  constructor(
    readonly promptTokens: number,
    readonly maxTokens: number | undefined,
    readonly slotContextSize: number,
  ) {
    super(`${promptTokens} prompt + ${maxTokens ?? 0} tokens > ${slotContextSize}`);
  }
}

export class EngineCore {
  private model: LlamaModel | undefined;
  private readonly contexts = new Map<string, Promise<AdapterContext>>();
  readonly slots: Slots;
  private readonly kvTokens = new Map<number, number>();
  private kvSeq = 0;
  readonly counters: Counters = { promptTokens: 0, promptSeconds: 0, predictedTokens: 0, predictedSeconds: 0, decodes: 0, busySlotsAtDecodes: 0, maxTokens: 0 };
  private disposeLlama: (() => Promise<void>) | undefined;

  constructor(private readonly o: EngineCoreOptions) {
    this.slots = new Slots(o.parallel);
  }

  get slotContextSize(): number {
    return this.o.slotContextSize;
  }

  get trainContextSize(): number | undefined {
    return this.model?.trainContextSize;
  }

  /** Tokens in the KV cache over all slots now. */
  get kvCacheTokens(): number {
    return [...this.kvTokens.values()].reduce((a, n) => a + n, 0);
  }

  async load(): Promise<void> {
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, maxThreads: this.o.threads });
    this.disposeLlama = () => llama.dispose();
    this.model = await llama.loadModel({ modelPath: this.o.modelFile });
  }

  async close(): Promise<void> {
    for (const c of this.contexts.values()) await (await c.catch(() => undefined))?.context.dispose();
    this.contexts.clear();
    await this.model?.dispose();
    await this.disposeLlama?.();
  }

  /** The context that applies `adapters` (created on first use; a file that is no adapter rejects). */
  contextFor(adapters: readonly AppliedAdapter[]): Promise<AdapterContext> {
    const key = adapters.map((a) => `${a.scale}@${a.file}`).join('\n');
    let c = this.contexts.get(key);
    if (c === undefined) {
      const model = this.model as LlamaModel;
      const lora = adapters.map((a) => ({ filePath: a.file, scale: a.scale }));
      c = model
        .createContext({
          contextSize: this.o.slotContextSize,
          sequences: this.o.parallel,
          threads: this.o.threads,
          ...(lora.length > 0 ? { lora: { adapters: lora } } : {}),
        })
        .then((context) => ({ context, free: [] }));
      this.contexts.set(key, c);
      c.catch(() => this.contexts.delete(key));
    }
    return c;
  }

  /** The prompt's tokens as the model sees them (BOS first when the model has one). */
  promptTokens(prompt: string): Token[] {
    return this.tokenize(prompt, true);
  }

  detokenize(tokens: readonly number[]): string {
    return (this.model as LlamaModel).detokenize(tokens as unknown as Token[]);
  }

  /** The text's token ids, with the model's BOS first when `addSpecial` (the engines' /tokenize). */
  tokenize(text: string, addSpecial: boolean): Token[] {
    const model = this.model as LlamaModel;
    const bos = model.tokens.bos;
    return [...(bos === null || !addSpecial ? [] : [bos]), ...model.tokenize(text)];
  }

  /**
   * Tokenizes, waits for a slot, evaluates the prompt and samples up to maxTokens, counting prompt and generated
   * tokens, decodes and the KV cache. `onText` gets the text as it grows; `onToken` the time of every token.
   */
  async generate(r: GenerateRequest, onText: (text: string) => void, onToken?: (atMs: number) => void): Promise<GenerateResult> {
    const model = this.model as LlamaModel;
    const promptTokens = this.promptTokens(r.prompt);
    const room = this.o.slotContextSize - promptTokens.length;
    if (room < 1 || (r.maxTokens !== undefined && r.maxTokens > room)) throw new ContextSizeError(promptTokens.length, r.maxTokens, this.o.slotContextSize);
    const maxTokens = r.maxTokens ?? room;
    const ctx = await this.contextFor(r.adapters);
    await this.slots.acquire();
    const slot = ++this.kvSeq;
    const seq = ctx.free.pop() ?? ctx.context.getSequence();
    const out: Token[] = [];
    let text = '';
    let finishReason: 'length' | 'stop' = 'length';
    const t0 = performance.now();
    let tFirst = t0;
    try {
      this.decoded(promptTokens.length, slot, promptTokens.length);
      if (maxTokens > 0) {
        for await (const token of seq.evaluate(promptTokens, { temperature: r.temperature, ...(r.seed !== undefined ? { seed: r.seed } : {}) })) {
          if (out.length === 0) {
            tFirst = performance.now();
            this.counters.promptTokens += promptTokens.length;
            this.counters.promptSeconds += (tFirst - t0) / 1000;
          }
          if (model.isEogToken(token) && !r.ignoreEos) {
            finishReason = 'stop';
            break;
          }
          out.push(token);
          onToken?.(performance.now());
          this.decoded(1, slot, promptTokens.length + out.length);
          const full = model.detokenize(out);
          if (full.length > text.length) onText(full.slice(text.length));
          text = full;
          if (out.length >= maxTokens) break;
        }
      }
    } finally {
      this.kvTokens.delete(slot);
      await seq.clearHistory();
      ctx.free.push(seq);
      this.slots.release();
    }
    const tEnd = performance.now();
    this.counters.predictedTokens += out.length;
    this.counters.predictedSeconds += (tEnd - tFirst) / 1000;
    return { text, finishReason, promptTokens: promptTokens.length, completionTokens: out.length, t0, tFirst, tEnd };
  }

  /** One llama_decode: its size and how many slots were busy (llamacpp:n_busy_slots_per_decode). */
  private decoded(tokens: number, slot: number, inCache: number): void {
    this.counters.decodes++;
    this.counters.busySlotsAtDecodes += this.slots.busy;
    this.counters.maxTokens = Math.max(this.counters.maxTokens, tokens);
    this.kvTokens.set(slot, inCache);
  }
}
