/**
 * A stand-in for llama.cpp's `llama-server` container (tools/server), for the dev kubelet and the engine tests:
 * the real llama.cpp inference (through node-llama-cpp, CPU, one thread) behind llama-server's own HTTP protocol
 * — its command-line flags, GET /health (503 "Loading model" until the weights are in, then 200), the
 * OpenAI-compatible POST /v1/completions and /v1/chat/completions (streaming as server-sent events), GET
 * /v1/models, GET /props, GET /metrics (only with --metrics) with llama-server's metric names, and its LoRA API:
 * adapters given with --lora at launch, GET /lora-adapters, POST /lora-adapters [{id, scale}] (ids not named get
 * scale 0) and the same list as a request's `lora` field. `--parallel N` slots: a request that finds every slot
 * busy waits in FIFO order and counts in llamacpp:requests_deferred, as in llama-server. Why a stand-in and
 * what differs from the real server: docs/adr/0087.
 */
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatMlPrompt, ContextSizeError, EngineCore, type AppliedAdapter } from './engine-core.ts';
import { HttpError, readJson, sendJson } from './engine-http.ts';

export interface LoraArg {
  /** The path as given on the command line (what GET /lora-adapters reports). */
  readonly path: string;
  /** The file actually opened (the dev kubelet maps container paths to files on this machine). */
  readonly file: string;
}

export interface LlamaServerOptions {
  readonly host: string;
  readonly port: number;
  readonly model: LoraArg;
  readonly alias?: string;
  /** Total context of all slots (-c); each slot gets ctxSize / parallel, as in llama-server. */
  readonly ctxSize: number;
  readonly parallel: number;
  readonly metrics: boolean;
  readonly loras: readonly LoraArg[];
  /** --lora-init-without-apply: adapters start at scale 0. */
  readonly loraInitWithoutApply: boolean;
  readonly threads: number;
  /** Test hook: the server stays "Loading model" while this file exists (a model that is slow to load, on demand). */
  readonly holdWhileExists?: string;
  /**
   * Test hook: while this file exists every completion fails with 500 (what a device with a fault looks like from
   * its engine: health and the model list still answer, compute does not), for fault-ladder tests.
   */
  readonly failWhileExists?: string;
  readonly log?: (line: string) => void;
}

export class ArgsError extends Error {}

/**
 * llama-server's flags the stand-in honours (names and defaults from tools/server/README.md and common/arg.cpp);
 * GPU flags are accepted and ignored (CPU only here); anything else is refused like llama-server refuses it.
 */
export function parseLlamaServerArgs(argv: readonly string[], resolvePath: (p: string) => string = (p) => p): LlamaServerOptions {
  let host = '127.0.0.1';
  let port = 8080;
  let model: string | undefined;
  let alias: string | undefined;
  let ctxSize = 4096;
  let parallel = 1;
  let metrics = false;
  let threads = 1;
  let loraInitWithoutApply = false;
  const loras: string[] = [];
  const ignoredWithValue = new Set([
    '-ngl',
    '--n-gpu-layers',
    '--gpu-layers',
    '-sm',
    '--split-mode',
    '-ts',
    '--tensor-split',
    '-mg',
    '--main-gpu',
    '-b',
    '--batch-size',
    '-ub',
    '--ubatch-size',
  ]);
  const ignoredFlags = new Set(['--no-webui', '--cont-batching', '-cb', '--no-mmap', '--mlock', '--jinja']);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new ArgsError(`error: ${a} expects a value`);
      return v;
    };
    const int = (min: number): number => {
      const v = value();
      const n = Number(v);
      if (!Number.isInteger(n) || n < min) throw new ArgsError(`error: ${a} expects an integer ≥ ${min}, got ${JSON.stringify(v)}`);
      return n;
    };
    if (a === '-m' || a === '--model') model = value();
    else if (a === '--host') host = value();
    else if (a === '--port') port = int(0);
    else if (a === '-a' || a === '--alias') alias = value();
    else if (a === '-c' || a === '--ctx-size') ctxSize = int(0);
    else if (a === '-np' || a === '--parallel') parallel = int(1);
    else if (a === '-t' || a === '--threads') threads = int(1);
    else if (a === '--metrics') metrics = true;
    else if (a === '--lora') loras.push(value());
    else if (a === '--lora-init-without-apply') loraInitWithoutApply = true;
    else if (a === '-hf' || a === '--hf-repo') throw new ArgsError(`error: ${a}: this machine has no network; give the weights with --model`);
    else if (ignoredWithValue.has(a)) value();
    else if (!ignoredFlags.has(a)) throw new ArgsError(`error: invalid argument: ${a}`);
  }
  if (model === undefined) throw new ArgsError('error: --model is required');
  if (ctxSize === 0) ctxSize = 4096;
  const arg = (p: string): LoraArg => ({ path: p, file: resolvePath(p) });
  return {
    host,
    port,
    model: arg(model),
    ...(alias !== undefined ? { alias } : {}),
    ctxSize,
    parallel,
    metrics,
    loras: loras.map(arg),
    loraInitWithoutApply,
    threads,
  };
}

interface CompletionRequest {
  readonly prompt: string;
  readonly maxTokens: number | undefined;
  readonly temperature: number;
  readonly seed: number | undefined;
  readonly scales: readonly number[];
  /** llama-server's `ignore_eos`: generate max_tokens whatever the model samples (fixed work per request). */
  readonly ignoreEos: boolean;
}

export class LlamaServerStandIn {
  private server: Server | undefined;
  private state: 'loading' | 'ready' | 'error' = 'loading';
  private loadError = '';
  private readonly core: EngineCore;
  private readonly scales: number[];
  private nextRequest = 0;
  /** Settles when loading ends (ready or failed). */
  loaded: Promise<void> = Promise.resolve();

  constructor(private readonly o: LlamaServerOptions) {
    this.core = new EngineCore({ modelFile: o.model.file, slotContextSize: this.slotContextSize, parallel: o.parallel, threads: o.threads });
    this.scales = o.loras.map(() => (o.loraInitWithoutApply ? 0 : 1));
  }

  get slotContextSize(): number {
    return Math.max(16, Math.floor(this.o.ctxSize / this.o.parallel));
  }

  /** Listens at once (answering 503 while loading, like llama-server), then loads the model. */
  async start(): Promise<{ host: string; port: number }> {
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.o.port, this.o.host, () => resolve());
    });
    this.loaded = this.load();
    const a = server.address() as AddressInfo;
    return { host: a.address, port: a.port };
  }

  private async load(): Promise<void> {
    try {
      await this.core.load();
      await this.core.contextFor(this.adapters(this.scales)); // the adapters are read at launch, as llama-server does
      while (this.o.holdWhileExists !== undefined && existsSync(this.o.holdWhileExists)) await new Promise((r) => setTimeout(r, 50));
      this.state = 'ready';
      this.o.log?.(`llama-server stand-in: model ${this.o.model.path} loaded, ${this.o.parallel} slot(s) of ${this.slotContextSize} tokens`);
    } catch (e) {
      this.state = 'error';
      this.loadError = `failed to load model ${this.o.model.path}: ${(e as Error).message}`;
      this.o.log?.(`llama-server stand-in: ${this.loadError}`);
    }
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s !== undefined) {
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
    await this.loaded;
    await this.core.close();
  }

  /** The adapters a scale vector applies: those of non-zero scale, in --lora order. */
  private adapters(scales: readonly number[]): AppliedAdapter[] {
    return this.o.loras.flatMap((l, i) => ((scales[i] ?? 0) !== 0 ? [{ file: l.file, scale: scales[i] as number }] : []));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const route = `${req.method ?? 'GET'} ${url.pathname}`;
    try {
      if (this.state === 'loading') throw new HttpError(503, 'unavailable_error', 'Loading model');
      if (this.state === 'error') throw new HttpError(500, 'server_error', this.loadError);
      if (/completions$/.test(url.pathname) && this.o.failWhileExists !== undefined && existsSync(this.o.failWhileExists)) {
        throw new HttpError(500, 'server_error', `injected device fault (${this.o.failWhileExists} exists)`);
      }
      switch (route) {
        case 'GET /health':
          return sendJson(res, 200, { status: 'ok' });
        case 'GET /metrics':
          if (!this.o.metrics) throw new HttpError(501, 'not_supported_error', 'This server does not support metrics endpoint. Start it with `--metrics`');
          res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
          res.end(this.metricsText());
          return;
        case 'GET /v1/models':
        case 'GET /models':
          return sendJson(res, 200, {
            object: 'list',
            data: [
              {
                id: this.alias,
                object: 'model',
                created: Math.floor(Date.now() / 1000),
                owned_by: 'llamacpp',
                meta: { n_ctx_train: this.core.trainContextSize },
              },
            ],
          });
        case 'GET /props':
          return sendJson(res, 200, {
            total_slots: this.o.parallel,
            model_path: this.o.model.path,
            model_alias: this.alias,
            default_generation_settings: { n_ctx: this.slotContextSize },
          });
        case 'GET /lora-adapters':
          return sendJson(
            res,
            200,
            this.o.loras.map((l, id) => ({ id, path: l.path, scale: this.scales[id] })),
          );
        case 'POST /lora-adapters': {
          const next = this.parseLora(await readJson(req, 'invalid_request_error'), 'body');
          next.forEach((s, i) => (this.scales[i] = s));
          return sendJson(res, 200, { success: true });
        }
        case 'POST /tokenize':
          return sendJson(res, 200, this.tokenizeRoute(await readJson(req, 'invalid_request_error')));
        case 'POST /apply-template':
          return sendJson(res, 200, {
            prompt: chatMlPrompt(((await readJson(req, 'invalid_request_error')) as { messages?: unknown } | null)?.messages, this.bad),
          });
        case 'POST /v1/completions':
        case 'POST /completions':
          return await this.completion(await readJson(req, 'invalid_request_error'), res, false);
        case 'POST /v1/chat/completions':
        case 'POST /chat/completions':
          return await this.completion(await readJson(req, 'invalid_request_error'), res, true);
        default:
          throw new HttpError(404, 'not_found_error', `File Not Found: ${url.pathname}`);
      }
    } catch (e) {
      if (res.headersSent) {
        res.end();
        return;
      }
      const h = e instanceof HttpError ? e : new HttpError(500, 'server_error', (e as Error).message);
      sendJson(res, h.status, { error: { code: h.status, message: h.message, type: h.type } });
    }
  }

  private readonly bad = (message: string): never => {
    throw new HttpError(400, 'invalid_request_error', message);
  };

  /** llama-server's /tokenize: {content, add_special (default false), with_pieces} → {tokens}. */
  private tokenizeRoute(body: unknown): { tokens: (number | { id: number; piece: string })[] } {
    const b = (body ?? {}) as Record<string, unknown>;
    if (typeof b.content !== 'string') this.bad("'content' must be a string");
    const tokens = this.core.tokenize(b.content as string, this.flag(b, 'add_special')) as unknown as number[];
    return { tokens: this.flag(b, 'with_pieces') ? tokens.map((id) => ({ id, piece: this.core.detokenize([id]) })) : tokens };
  }

  private get alias(): string {
    return this.o.alias ?? this.o.model.path;
  }

  /** llama-server's parse_lora_request: every adapter starts at 0, the listed ids get their scale. */
  private parseLora(body: unknown, field: string): number[] {
    if (!Array.isArray(body)) throw new HttpError(400, 'invalid_request_error', `${field}: expected an array of {id, scale}`);
    const out = this.o.loras.map(() => 0);
    body.forEach((e: unknown, i) => {
      const o = (e ?? {}) as { id?: unknown; scale?: unknown };
      const id = typeof o.id === 'number' ? o.id : -1;
      if (!Number.isInteger(id) || id < 0 || id >= out.length)
        throw new HttpError(400, 'invalid_request_error', `${field}[${i}].id: invalid adapter id ${JSON.stringify(o.id)}`);
      const scale = o.scale === undefined ? 0 : o.scale;
      if (typeof scale !== 'number' || !Number.isFinite(scale)) throw new HttpError(400, 'invalid_request_error', `${field}[${i}].scale: not a number`);
      out[id] = scale;
    });
    return out;
  }

  private async completion(body: unknown, res: ServerResponse, chat: boolean): Promise<void> {
    const b = (body ?? {}) as Record<string, unknown>;
    let prompt: string;
    if (chat) {
      prompt = chatMlPrompt(b.messages, this.bad);
    } else {
      if (typeof b.prompt !== 'string') throw new HttpError(400, 'invalid_request_error', "'prompt' must be a string");
      prompt = b.prompt;
    }
    const num = (k: string): number | undefined => {
      const v = b[k];
      if (v === undefined || v === null) return undefined;
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new HttpError(400, 'invalid_request_error', `'${k}' must be a number`);
      return v;
    };
    const maxTokens = num('max_tokens') ?? num('n_predict');
    const request: CompletionRequest = {
      prompt,
      maxTokens: maxTokens === undefined || maxTokens < 0 ? undefined : Math.floor(maxTokens),
      temperature: num('temperature') ?? 0.8,
      seed: num('seed'),
      scales: b.lora === undefined ? [...this.scales] : this.parseLora(b.lora, 'lora'),
      ignoreEos: this.flag(b, 'ignore_eos'),
    };
    const stream = b.stream === true;
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-${++this.nextRequest}`;
    const created = Math.floor(Date.now() / 1000);
    const base = { id, created, model: this.alias, system_fingerprint: 'sits-llama-server-stand-in' };
    const object = chat ? 'chat.completion' : 'text_completion';
    if (stream) {
      let first = true;
      const result = await this.generate(request, (text) => {
        if (first) res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
        const choice = chat
          ? { index: 0, delta: first ? { role: 'assistant', content: text } : { content: text }, finish_reason: null }
          : { index: 0, text, logprobs: null, finish_reason: null };
        first = false;
        res.write(`data: ${JSON.stringify({ ...base, object: chat ? 'chat.completion.chunk' : 'text_completion', choices: [choice] })}\n\n`);
      });
      if (first) res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      const last = chat
        ? { index: 0, delta: {}, finish_reason: result.finishReason }
        : { index: 0, text: '', logprobs: null, finish_reason: result.finishReason };
      res.write(
        `data: ${JSON.stringify({ ...base, object: chat ? 'chat.completion.chunk' : 'text_completion', choices: [last], usage: result.usage, timings: result.timings })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
      return;
    }
    const result = await this.generate(request, () => undefined);
    const choice = chat
      ? { index: 0, message: { role: 'assistant', content: result.text }, finish_reason: result.finishReason }
      : { index: 0, text: result.text, logprobs: null, finish_reason: result.finishReason };
    sendJson(res, 200, { ...base, object, choices: [choice], usage: result.usage, timings: result.timings });
  }

  private flag(b: Record<string, unknown>, k: string): boolean {
    const v = b[k];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') throw new HttpError(400, 'invalid_request_error', `'${k}' must be a boolean`);
    return v;
  }

  /** Generates on the shared core, in llama-server's answer shape and context-size error. */
  private async generate(r: CompletionRequest, onText: (text: string) => void) {
    let g;
    try {
      g = await this.core.generate(
        { prompt: r.prompt, maxTokens: r.maxTokens, temperature: r.temperature, seed: r.seed, adapters: this.adapters(r.scales), ignoreEos: r.ignoreEos },
        onText,
      );
    } catch (e) {
      if (e instanceof ContextSizeError)
        throw new HttpError(400, 'exceed_context_size_error', `the request exceeds the available context size (${e.message}), try increasing it`);
      throw e;
    }
    return {
      text: g.text,
      finishReason: g.finishReason,
      usage: { prompt_tokens: g.promptTokens, completion_tokens: g.completionTokens, total_tokens: g.promptTokens + g.completionTokens },
      timings: { prompt_n: g.promptTokens, prompt_ms: g.tFirst - g.t0, predicted_n: g.completionTokens, predicted_ms: g.tEnd - g.tFirst },
    };
  }

  /** The /metrics text, in llama-server's names, HELP texts, types and order (handle_metrics in server.cpp). */
  metricsText(): string {
    const c = this.core.counters;
    const kv = this.core.kvCacheTokens;
    const rows: [string, 'counter' | 'gauge', string, number][] = [
      ['prompt_tokens_total', 'counter', 'Number of prompt tokens processed.', c.promptTokens],
      ['prompt_seconds_total', 'counter', 'Prompt process time', c.promptSeconds],
      ['tokens_predicted_total', 'counter', 'Number of generation tokens processed.', c.predictedTokens],
      ['tokens_predicted_seconds_total', 'counter', 'Predict process time', c.predictedSeconds],
      ['n_decode_total', 'counter', 'Total number of llama_decode() calls', c.decodes],
      ['n_tokens_max', 'counter', 'Largest observed n_tokens.', c.maxTokens],
      ['n_busy_slots_per_decode', 'counter', 'Average number of busy slots per llama_decode() call', c.decodes > 0 ? c.busySlotsAtDecodes / c.decodes : 0],
      ['prompt_tokens_seconds', 'gauge', 'Average prompt throughput in tokens/s.', c.promptSeconds > 0 ? c.promptTokens / c.promptSeconds : 0],
      ['predicted_tokens_seconds', 'gauge', 'Average generation throughput in tokens/s.', c.predictedSeconds > 0 ? c.predictedTokens / c.predictedSeconds : 0],
      // Exported by llama-server builds before PR #13660 (2025); the runtime data reads it when present.
      ['kv_cache_usage_ratio', 'gauge', 'KV-cache usage. 1 means 100 percent usage.', kv / (this.slotContextSize * this.o.parallel)],
      ['kv_cache_tokens', 'gauge', 'KV-cache tokens.', kv],
      ['requests_processing', 'gauge', 'Number of requests processing.', this.core.slots.busy],
      ['requests_deferred', 'gauge', 'Number of requests deferred.', this.core.slots.deferred],
    ];
    return rows.map(([n, t, help, v]) => `# HELP llamacpp:${n} ${help}\n# TYPE llamacpp:${n} ${t}\nllamacpp:${n} ${v}\n`).join('');
  }
}
