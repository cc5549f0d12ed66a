/**
 * A stand-in for vLLM's OpenAI-compatible server (the vllm/vllm-openai image, `vllm serve`), for the dev kubelet
 * and the engine tests: the real llama.cpp inference of the shared core (engine-core.ts: node-llama-cpp, CPU, one
 * thread, a GGUF model) behind vLLM's own protocol — its engine arguments (vllm/engine/arg_utils.py and
 * entrypoints/openai/cli_args.py; GPU-only ones accepted and ignored, unknown ones refused as argparse does),
 * GET /health (an empty 200; nothing listens before the model is loaded, as vLLM answers only once its engine is
 * up), GET /v1/models (the served model names, then every loaded adapter with `root` its path and `parent` the base
 * model), POST /v1/completions and /v1/chat/completions where `model` picks the base model or a loaded adapter
 * (404 "The model `x` does not exist." otherwise), the runtime LoRA API of entrypoints/openai/serving_models.py
 * (POST /v1/load_lora_adapter, /v1/unload_lora_adapter, only with VLLM_ALLOW_RUNTIME_LORA_UPDATING true; its
 * statuses and messages), and GET /metrics with vLLM V1's metric names, HELP texts and `model_name` label.
 * Adapters are GGUF (llama.cpp's LoRA format), given as a .gguf file or a directory holding one. Why a stand-in
 * and exactly what differs from real vLLM: docs/adr/0135.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { readGgufFileInfo } from 'node-llama-cpp';
import { chatMlPrompt, ContextSizeError, EngineCore, type GenerateResult } from './engine-core.ts';
import { HttpError, readJson, sendJson } from './engine-http.ts';

/** The vLLM release whose protocol the stand-in speaks (the runtime's default image, serving/runtimes/vllm.ts). */
export const VLLM_VERSION = '0.10.2';

export interface PathArg {
  /** The path as given (what /v1/models reports as `root`). */
  readonly path: string;
  /** The file actually opened (the dev kubelet maps container paths to files on this machine). */
  readonly file: string;
}

export interface VllmServerOptions {
  readonly host: string;
  readonly port: number;
  readonly model: PathArg;
  /** --served-model-name (several allowed); the first is the one responses and metrics name. */
  readonly servedModelNames: readonly string[];
  /** --max-model-len: the context of one sequence (default: the model's training context). */
  readonly maxModelLen?: number;
  /** --max-num-seqs: sequences run at once; the rest wait (vllm:num_requests_waiting). */
  readonly maxNumSeqs: number;
  readonly enableLora: boolean;
  readonly maxLoras: number;
  readonly maxLoraRank: number;
  /** --lora-modules name=path: loaded at start-up (as vLLM's init_static_loras). */
  readonly loraModules: readonly { readonly name: string; readonly path: string }[];
  /** VLLM_ALLOW_RUNTIME_LORA_UPDATING: the load/unload routes exist only when true. */
  readonly runtimeLoraUpdating: boolean;
  readonly threads: number;
  /** A container path → the file on this machine (identity outside the dev kubelet). */
  readonly resolvePath: (p: string) => string;
  readonly log?: (line: string) => void;
}

export class VllmArgsError extends Error {}

const PROG = 'vllm serve';
/** Engine and server arguments the stand-in takes but that mean nothing on one CPU thread (GPUs, parallelism, caches). */
const IGNORED_WITH_VALUE = new Set([
  '--tensor-parallel-size',
  '-tp',
  '--pipeline-parallel-size',
  '-pp',
  '--data-parallel-size',
  '-dp',
  '--gpu-memory-utilization',
  '--dtype',
  '--quantization',
  '-q',
  '--revision',
  '--tokenizer',
  '--tokenizer-revision',
  '--download-dir',
  '--load-format',
  '--kv-cache-dtype',
  '--block-size',
  '--swap-space',
  '--cpu-offload-gb',
  '--max-num-batched-tokens',
  '--distributed-executor-backend',
  '--seed',
  '--max-cpu-loras',
  '--lora-dtype',
  '--uvicorn-log-level',
  '--generation-config',
  '--max-seq-len-to-capture',
  '--num-gpu-blocks-override',
  '--hf-overrides',
  '--chat-template',
  '--response-role',
  '--override-generation-config',
  '--limit-mm-per-prompt',
]);
const IGNORED_FLAGS = new Set([
  '--enforce-eager',
  '--trust-remote-code',
  '--enable-prefix-caching',
  '--no-enable-prefix-caching',
  '--enable-chunked-prefill',
  '--no-enable-chunked-prefill',
  '--disable-log-requests',
  '--disable-log-stats',
  '--enable-log-requests',
  '--disable-custom-all-reduce',
  '--disable-frontend-multiprocessing',
  '--enable-auto-tool-choice',
  '--disable-fastapi-docs',
  '--enable-sleep-mode',
  '--fully-sharded-loras',
]);
/** Flags whose effect the stand-in cannot give and must not pretend to (a client would rely on them). */
const REFUSED = new Map([
  ['--api-key', 'the stand-in serves without authentication'],
  ['--ssl-keyfile', 'the stand-in serves plain HTTP'],
  ['--ssl-certfile', 'the stand-in serves plain HTTP'],
  ['--root-path', 'the stand-in serves at /'],
]);

/**
 * vLLM's command line: `[serve] [MODEL] --flag value | --flag=value ...` (the image's entrypoint gets the args
 * alone, `vllm serve` a positional model). Underscores in flag names are taken as dashes, as vLLM's
 * FlexibleArgumentParser does. Errors are argparse's wording (`vllm serve: error: ...`).
 */
export function parseVllmArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
  resolvePath: (p: string) => string = (p) => p,
): VllmServerOptions {
  const args = [...argv];
  if (args[0] === 'serve') args.shift();
  let model: string | undefined;
  let host = '0.0.0.0';
  let port = 8000;
  const served: string[] = [];
  let maxModelLen: number | undefined;
  let maxNumSeqs = 4;
  let enableLora = false;
  let maxLoras = 1;
  let maxLoraRank = 16;
  const loraModules: { name: string; path: string }[] = [];
  const unknown: string[] = [];
  for (let i = 0; i < args.length; i++) {
    let a = args[i] as string;
    let inline: string | undefined;
    if (a.startsWith('--') && a.includes('=')) {
      inline = a.slice(a.indexOf('=') + 1);
      a = a.slice(0, a.indexOf('='));
    }
    if (a.startsWith('--')) a = `--${a.slice(2).replace(/_/g, '-')}`;
    const err = (m: string): never => {
      throw new VllmArgsError(`${PROG}: error: argument ${a}: ${m}`);
    };
    const value = (): string => {
      if (inline !== undefined) return inline;
      const v = args[i + 1];
      if (v === undefined || (v.startsWith('-') && v.length > 1 && !/^-\d/.test(v))) return err('expected one argument');
      i++;
      return v;
    };
    /** nargs='+': every following word up to the next flag. */
    const values = (): string[] => {
      if (inline !== undefined) return [inline];
      const out: string[] = [];
      while (i + 1 < args.length && !(args[i + 1] as string).startsWith('--')) out.push(args[++i] as string);
      if (out.length === 0) err('expected at least one argument');
      return out;
    };
    const int = (min: number): number => {
      const v = value();
      const n = Number(v);
      if (!/^-?\d+$/.test(v)) return err(`invalid int value: '${v}'`);
      if (n < min) return err(`must be ≥ ${min}, got ${n}`);
      return n;
    };
    if (!a.startsWith('-')) {
      if (model === undefined && i === 0) model = a;
      else unknown.push(a);
    } else if (a === '--model') model = value();
    else if (a === '--host') host = value();
    else if (a === '--port') port = int(0);
    else if (a === '--served-model-name') served.push(...values());
    else if (a === '--max-model-len') maxModelLen = int(1);
    else if (a === '--max-num-seqs') maxNumSeqs = int(1);
    else if (a === '--enable-lora') enableLora = true;
    else if (a === '--max-loras') maxLoras = int(1);
    else if (a === '--max-lora-rank') maxLoraRank = int(1);
    else if (a === '--lora-modules') {
      for (const m of values()) {
        // name=path, or the JSON form {"name": ..., "path": ..., "base_model_name": ...}.
        if (m.trim().startsWith('{')) {
          let j: { name?: unknown; path?: unknown };
          try {
            j = JSON.parse(m) as { name?: unknown; path?: unknown };
          } catch (e) {
            return err(`invalid JSON ${JSON.stringify(m)}: ${(e as Error).message}`);
          }
          if (typeof j.name !== 'string' || typeof j.path !== 'string') return err(`${m}: expected "name" and "path" strings`);
          loraModules.push({ name: j.name, path: j.path });
        } else {
          const eq = m.indexOf('=');
          if (eq <= 0 || eq === m.length - 1) return err(`invalid value ${JSON.stringify(m)}: expected name=path`);
          loraModules.push({ name: m.slice(0, eq), path: m.slice(eq + 1) });
        }
      }
    } else if (REFUSED.has(a)) throw new VllmArgsError(`${PROG}: error: argument ${a}: not supported by the stand-in (${REFUSED.get(a) ?? ''})`);
    else if (IGNORED_WITH_VALUE.has(a)) value();
    else if (!IGNORED_FLAGS.has(a)) unknown.push(inline === undefined ? a : `${a}=${inline}`);
  }
  if (unknown.length > 0) throw new VllmArgsError(`${PROG}: error: unrecognized arguments: ${unknown.join(' ')}`);
  if (model === undefined)
    throw new VllmArgsError(`${PROG}: error: the stand-in needs a model (--model or a positional MODEL): this machine has no network to fetch vLLM's default`);
  if (loraModules.length > 0 && !enableLora) throw new VllmArgsError(`${PROG}: error: argument --lora-modules: needs --enable-lora`);
  const hub = env.SITS_DEV_HUB_MODEL ?? '';
  const isHubId = !existsSync(resolvePath(model)) && /^[\w.-]+\/[\w.-]+$/.test(model);
  // `sits dev up`: every Hugging Face id is served by the tiny local GGUF (no network here; named in its docs).
  const file = isHubId && hub !== '' ? hub : resolvePath(model);
  // A Hugging Face id (org/name) that is no file here would be downloaded by vLLM.
  if (!existsSync(file) && isHubId)
    throw new VllmArgsError(`${PROG}: error: model ${model}: this machine has no network; give the weights as a local GGUF path`);
  const flag = (env.VLLM_ALLOW_RUNTIME_LORA_UPDATING ?? '0').trim().toLowerCase();
  return {
    host,
    port,
    model: { path: model, file },
    servedModelNames: served.length > 0 ? served : [model],
    ...(maxModelLen === undefined ? {} : { maxModelLen }),
    maxNumSeqs,
    enableLora,
    maxLoras,
    maxLoraRank,
    loraModules,
    // vllm/envs.py: "1" or "true", any case.
    runtimeLoraUpdating: flag === '1' || flag === 'true',
    threads: 1,
    resolvePath,
  };
}

/** An adapter vLLM holds: the name clients use, the path it was loaded from, the GGUF file applied. */
interface LoadedLora {
  readonly name: string;
  readonly id: number;
  readonly path: string;
  readonly file: string;
  readonly created: number;
}

/** vLLM V1's histogram buckets (vllm/v1/metrics/loggers.py), as the recorded /metrics text shows them. */
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
const TPOT_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];

class Histogram {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly buckets: readonly number[]) {
    this.counts = buckets.map(() => 0);
  }
  observe(v: number): void {
    this.sum += v;
    this.count++;
    this.buckets.forEach((b, i) => {
      if (v <= b) this.counts[i] = (this.counts[i] ?? 0) + 1;
    });
  }
}

/** Python's float repr for the values Prometheus' client prints ("0.0", "1196.0", "0.25"). */
const pyFloat = (v: number): string => (Number.isInteger(v) ? v.toFixed(1) : String(v));

/**
 * The adapter file of a lora_path: the path itself when it is a .gguf file, else the one .gguf in the directory
 * (`adapter.gguf` when there are several). vLLM's errors: a missing path is NotFound ("No adapter found"), the rest
 * BadRequest.
 */
export function adapterFile(name: string, path: string, file: string): string {
  const fail = (status: number, why: string): never => {
    throw new HttpError(status, status === 404 ? 'NotFoundError' : 'BadRequestError', `Loading lora ${name} failed: ${why}`);
  };
  if (!existsSync(file)) return fail(404, `No adapter found for ${path}`);
  if (!statSync(file).isDirectory())
    return file.toLowerCase().endsWith('.gguf') ? file : fail(400, `${path} is not a GGUF adapter (the stand-in reads llama.cpp's GGUF LoRA format)`);
  const ggufs = readdirSync(file).filter((f) => f.toLowerCase().endsWith('.gguf'));
  if (ggufs.length === 1) return join(file, ggufs[0] as string);
  if (ggufs.includes('adapter.gguf')) return join(file, 'adapter.gguf');
  if (ggufs.length > 1) return fail(400, `${path} holds several GGUF files (${ggufs.join(', ')}); name the adapter adapter.gguf`);
  if (existsSync(join(file, 'adapter_config.json')))
    return fail(400, `${path} is a PEFT (safetensors) adapter: the stand-in reads GGUF adapters only (convert it with llama.cpp's convert_lora_to_gguf.py)`);
  return fail(404, `No adapter found for ${path}`);
}

export class VllmServerStandIn {
  private server: Server | undefined;
  private core: EngineCore;
  private readonly loras: LoadedLora[] = [];
  private loraIds = 0;
  private readonly ttft = new Histogram(TTFT_BUCKETS);
  private readonly tpot = new Histogram(TPOT_BUCKETS);
  private readonly itl = new Histogram(TPOT_BUCKETS);
  private readonly finished = new Map<string, number>();
  /** Adapter name of every running and waiting request, for vllm:lora_requests_info. */
  private readonly inFlight = new Map<number, { lora: string | undefined; running: boolean }>();
  private nextRequest = 0;
  private maxModelLen = 0;
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(private readonly o: VllmServerOptions) {
    // The context of one sequence is fixed once the model is read (its training context unless --max-model-len).
    this.core = new EngineCore({ modelFile: o.model.file, slotContextSize: o.maxModelLen ?? 2048, parallel: o.maxNumSeqs, threads: o.threads });
  }

  get baseName(): string {
    return this.o.servedModelNames[0] as string;
  }

  /** Loads the model and the --lora-modules, then listens (vLLM answers nothing before its engine is up). */
  async start(): Promise<{ host: string; port: number }> {
    if (this.o.maxModelLen === undefined) {
      // The model's own context length decides the sequence length, as vLLM derives max_model_len from the config.
      const info = await readGgufFileInfo(this.o.model.file, { readTensorInfo: false });
      const len = Number((info.architectureMetadata as { context_length?: number }).context_length ?? 2048);
      this.core = new EngineCore({ modelFile: this.o.model.file, slotContextSize: len, parallel: this.o.maxNumSeqs, threads: this.o.threads });
    }
    const core = this.core;
    this.maxModelLen = core.slotContextSize;
    await core.load();
    await core.contextFor([]);
    for (const m of this.o.loraModules) await this.loadLora(m.name, m.path);
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.o.port, this.o.host, () => resolve());
    });
    this.o.log?.(
      `vllm stand-in: model ${this.o.model.path} served as ${this.o.servedModelNames.join(', ')}, ${this.o.maxNumSeqs} sequence(s) of ${this.maxModelLen} tokens${this.o.enableLora ? `, LoRA on (max ${this.o.maxLoras}, rank ≤ ${this.o.maxLoraRank}, runtime updating ${this.o.runtimeLoraUpdating ? 'on' : 'off'})` : ''}`,
    );
    const a = server.address() as AddressInfo;
    return { host: a.address, port: a.port };
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s !== undefined) {
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
    await this.core.close();
  }

  /** The names clients may send as `model`: the served names and the loaded adapters. */
  get models(): string[] {
    return [...this.o.servedModelNames, ...this.loras.map((l) => l.name)];
  }

  /** vLLM's add_lora: the adapter is read and applied once now (a bad file fails here, not at the first request). */
  private async loadLora(name: string, path: string): Promise<void> {
    if (!this.o.enableLora) throw new HttpError(400, 'BadRequestError', 'LoRA is not enabled. Use --enable-lora to enable LoRA.');
    if (this.loras.some((l) => l.name === name)) throw new HttpError(400, 'InvalidUserInput', `The lora adapter '${name}' has already been loaded.`);
    const file = adapterFile(name, path, this.o.resolvePath(path));
    let rank: number | undefined;
    try {
      const info = await readGgufFileInfo(file, { readTensorInfo: true });
      const general = (info.metadata as { general?: { type?: string } }).general;
      if (general?.type !== 'adapter') throw new Error(`${path} is a GGUF ${general?.type ?? 'model'}, not a LoRA adapter`);
      const a = info.tensorInfo?.find((t) => t.name.endsWith('.lora_a'));
      if (a !== undefined) rank = Number(a.dimensions.at(-1));
    } catch (e) {
      throw new HttpError(400, 'BadRequestError', `Loading lora ${name} failed: ${(e as Error).message}`);
    }
    // PEFTHelper.validate_legal's check.
    if (rank !== undefined && rank > this.o.maxLoraRank)
      throw new HttpError(400, 'BadRequestError', `LoRA rank ${rank} is greater than max_lora_rank ${this.o.maxLoraRank}.`);
    try {
      await this.core.contextFor([{ file, scale: 1 }]);
    } catch (e) {
      throw new HttpError(400, 'BadRequestError', `Loading lora ${name} failed: ${(e as Error).message}`);
    }
    // Check again: a second load of the same name may have finished while this one read the file.
    if (this.loras.some((l) => l.name === name)) throw new HttpError(400, 'InvalidUserInput', `The lora adapter '${name}' has already been loaded.`);
    this.loras.push({ name, id: ++this.loraIds, path, file, created: Math.floor(Date.now() / 1000) });
    this.o.log?.(`vllm stand-in: Loaded new LoRA adapter: name '${name}', path '${path}'`);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const route = `${req.method ?? 'GET'} ${url.pathname}`;
    try {
      switch (route) {
        case 'GET /health':
          res.writeHead(200, { 'Content-Length': 0 });
          res.end();
          return;
        case 'GET /version':
          return sendJsonV(res, 200, { version: VLLM_VERSION });
        case 'GET /metrics':
          res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
          res.end(this.metricsText());
          return;
        case 'GET /v1/models':
          return sendJsonV(res, 200, { object: 'list', data: this.modelCards() });
        case 'POST /tokenize':
          return sendJsonV(res, 200, this.tokenizeRoute(await readJson(req, 'BadRequestError')));
        case 'POST /v1/completions':
          return await this.completion(await readJson(req, 'BadRequestError'), res, false);
        case 'POST /v1/chat/completions':
          return await this.completion(await readJson(req, 'BadRequestError'), res, true);
        case 'POST /v1/load_lora_adapter':
        case 'POST /v1/unload_lora_adapter':
          // vLLM registers these routes only when VLLM_ALLOW_RUNTIME_LORA_UPDATING is set: otherwise FastAPI's 404.
          if (!this.o.runtimeLoraUpdating) return sendJsonV(res, 404, { detail: 'Not Found' });
          return route === 'POST /v1/load_lora_adapter'
            ? await this.loadRoute(await readJson(req, 'BadRequestError'), res)
            : this.unloadRoute(await readJson(req, 'BadRequestError'), res);
        default:
          return sendJsonV(res, 404, { detail: 'Not Found' });
      }
    } catch (e) {
      if (res.headersSent) {
        res.end();
        return;
      }
      const h = e instanceof HttpError ? e : new HttpError(500, 'InternalServerError', (e as Error).message);
      sendJsonV(res, h.status, { error: { message: h.message, type: h.type, param: h.param, code: h.status } });
    }
  }

  private modelCards(): unknown[] {
    const permission = [
      {
        id: `modelperm-${uuid()}`,
        object: 'model_permission',
        created: this.created,
        allow_create_engine: false,
        allow_sampling: true,
        allow_logprobs: true,
        allow_search_indices: false,
        allow_view: true,
        allow_fine_tuning: false,
        organization: '*',
        group: null,
        is_blocking: false,
      },
    ];
    return [
      ...this.o.servedModelNames.map((id) => ({
        id,
        object: 'model',
        created: this.created,
        owned_by: 'vllm',
        root: this.o.model.path,
        parent: null,
        max_model_len: this.maxModelLen,
        permission,
      })),
      ...this.loras.map((l) => ({
        id: l.name,
        object: 'model',
        created: l.created,
        owned_by: 'vllm',
        root: l.path,
        parent: this.baseName,
        max_model_len: null,
        permission,
      })),
    ];
  }

  private async loadRoute(body: unknown, res: ServerResponse): Promise<void> {
    const b = (body ?? {}) as { lora_name?: unknown; lora_path?: unknown };
    const name = typeof b.lora_name === 'string' ? b.lora_name : '';
    const path = typeof b.lora_path === 'string' ? b.lora_path : '';
    if (name === '' || path === '') throw new HttpError(400, 'InvalidUserInput', "Both 'lora_name' and 'lora_path' must be provided.");
    await this.loadLora(name, path);
    text(res, 200, `Success: LoRA adapter '${name}' added successfully.`);
  }

  private unloadRoute(body: unknown, res: ServerResponse): void {
    const b = (body ?? {}) as { lora_name?: unknown; lora_int_id?: unknown };
    const name = typeof b.lora_name === 'string' ? b.lora_name : '';
    if (name === '' && b.lora_int_id === undefined) throw new HttpError(400, 'InvalidUserInput', "either 'lora_name' and 'lora_int_id' needs to be provided.");
    const i = this.loras.findIndex((l) => l.name === name);
    if (i < 0) throw new HttpError(404, 'NotFoundError', `The lora adapter '${name}' cannot be found.`);
    this.loras.splice(i, 1);
    this.o.log?.(`vllm stand-in: Removed LoRA adapter: name '${name}'`);
    text(res, 200, `Success: LoRA adapter '${name}' removed successfully.`);
  }

  /**
   * vLLM's /tokenize: TokenizeCompletionRequest {prompt, add_special_tokens = true} or TokenizeChatRequest
   * {messages, add_generation_prompt = true, add_special_tokens = false} → {count, max_model_len, tokens, token_strs}.
   */
  private tokenizeRoute(body: unknown): { count: number; max_model_len: number; tokens: number[]; token_strs: string[] | null } {
    const b = (body ?? {}) as Record<string, unknown>;
    const bad = (m: string, param: string | null = null): never => {
      throw new HttpError(400, 'BadRequestError', m, param);
    };
    const model = typeof b.model === 'string' ? b.model : this.baseName;
    if (!this.o.servedModelNames.includes(model) && !this.loras.some((l) => l.name === model))
      throw new HttpError(404, 'NotFoundError', `The model \`${model}\` does not exist.`, 'model');
    const flag = (k: string, dflt: boolean): boolean =>
      b[k] === undefined || b[k] === null ? dflt : typeof b[k] === 'boolean' ? (b[k] as boolean) : bad(`'${k}' must be a boolean`, k);
    const chat = b.messages !== undefined;
    if (!chat && typeof b.prompt !== 'string') bad("'prompt' must be a string", 'prompt');
    const text = chat ? chatMlPrompt(b.messages, (m) => bad(m, 'messages')) : (b.prompt as string);
    // A real chat template renders the BOS as text (hence add_special_tokens false for chats); the stand-in's ChatML
    // has none and generation adds it, so a chat is counted with it: the count is what the completion will report.
    const addSpecial = flag('add_special_tokens', !chat);
    const tokens = this.core.tokenize(text, addSpecial || chat) as unknown as number[];
    return {
      count: tokens.length,
      max_model_len: this.maxModelLen,
      tokens,
      token_strs: flag('return_token_strs', false) ? tokens.map((t) => this.core.detokenize([t])) : null,
    };
  }

  private async completion(body: unknown, res: ServerResponse, chat: boolean): Promise<void> {
    const b = (body ?? {}) as Record<string, unknown>;
    const bad = (m: string, param: string | null = null): never => {
      throw new HttpError(400, 'BadRequestError', m, param);
    };
    if (b.model !== undefined && b.model !== null && typeof b.model !== 'string') bad("'model' must be a string", 'model');
    const model = typeof b.model === 'string' ? b.model : this.baseName;
    let lora: LoadedLora | undefined;
    if (!this.o.servedModelNames.includes(model)) {
      lora = this.loras.find((l) => l.name === model);
      if (lora === undefined) throw new HttpError(404, 'NotFoundError', `The model \`${model}\` does not exist.`, 'model');
    }
    let prompt: string;
    if (chat) {
      prompt = chatMlPrompt(b.messages, (m) => bad(m, 'messages'));
    } else {
      const p = Array.isArray(b.prompt) && b.prompt.length === 1 ? b.prompt[0] : b.prompt;
      if (Array.isArray(b.prompt) && b.prompt.length !== 1) bad('the stand-in takes one prompt per request', 'prompt');
      if (typeof p !== 'string') bad("'prompt' must be a string", 'prompt');
      prompt = p as string;
    }
    const num = (k: string): number | undefined => {
      const v = b[k];
      if (v === undefined || v === null) return undefined;
      if (typeof v !== 'number' || !Number.isFinite(v)) return bad(`'${k}' must be a number`, k);
      return v;
    };
    const n = num('n');
    if (n !== undefined && n !== 1) bad('the stand-in generates one choice per request (n=1)', 'n');
    // CompletionRequest's max_tokens defaults to 16; a chat request without it may fill the context.
    const asked = chat ? (num('max_completion_tokens') ?? num('max_tokens')) : (num('max_tokens') ?? 16);
    if (asked !== undefined && asked < 0) bad("'max_tokens' must be at least 0", 'max_tokens');
    const ignoreEos =
      b.ignore_eos === undefined || b.ignore_eos === null
        ? false
        : typeof b.ignore_eos === 'boolean'
          ? b.ignore_eos
          : bad("'ignore_eos' must be a boolean", 'ignore_eos');
    const promptTokens = this.core.promptTokens(prompt).length;
    if (promptTokens >= this.maxModelLen)
      bad(
        `This model's maximum context length is ${this.maxModelLen} tokens. However, your request has ${promptTokens} input tokens. Please reduce the length of the input messages.`,
      );
    const maxTokens = asked === undefined ? undefined : Math.floor(asked);
    if (maxTokens !== undefined && promptTokens + maxTokens > this.maxModelLen) {
      bad(
        `This model's maximum context length is ${this.maxModelLen} tokens. However, you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`,
      );
    }
    const stream = b.stream === true;
    const includeUsage = stream && (b.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-${uuid()}`;
    const created = Math.floor(Date.now() / 1000);
    const object = chat ? 'chat.completion' : 'text_completion';
    const chunkObject = chat ? 'chat.completion.chunk' : 'text_completion';
    let first = true;
    const onText = (t: string): void => {
      if (!stream) return;
      if (first) {
        res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
        if (chat)
          res.write(
            `data: ${JSON.stringify({ id, object: chunkObject, created, model, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] })}\n\n`,
          );
      }
      first = false;
      const choice = chat
        ? { index: 0, delta: { content: t }, logprobs: null, finish_reason: null }
        : { index: 0, text: t, logprobs: null, finish_reason: null, stop_reason: null };
      res.write(`data: ${JSON.stringify({ id, object: chunkObject, created, model, choices: [choice] })}\n\n`);
    };
    const g = await this.generate({ prompt, maxTokens, temperature: num('temperature') ?? 1.0, seed: num('seed'), lora, ignoreEos }, onText);
    const usage = {
      prompt_tokens: g.promptTokens,
      total_tokens: g.promptTokens + g.completionTokens,
      completion_tokens: g.completionTokens,
      prompt_tokens_details: null,
    };
    if (stream) {
      if (first) res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
      const last = chat
        ? { index: 0, delta: {}, logprobs: null, finish_reason: g.finishReason, stop_reason: null }
        : { index: 0, text: '', logprobs: null, finish_reason: g.finishReason, stop_reason: null };
      res.write(`data: ${JSON.stringify({ id, object: chunkObject, created, model, choices: [last] })}\n\n`);
      if (includeUsage) res.write(`data: ${JSON.stringify({ id, object: chunkObject, created, model, choices: [], usage })}\n\n`);
      res.end('data: [DONE]\n\n');
      return;
    }
    const choice = chat
      ? {
          index: 0,
          message: { role: 'assistant', reasoning_content: null, content: g.text, tool_calls: [] },
          logprobs: null,
          finish_reason: g.finishReason,
          stop_reason: null,
        }
      : { index: 0, text: g.text, logprobs: null, finish_reason: g.finishReason, stop_reason: null, prompt_logprobs: null };
    sendJsonV(res, 200, { id, object, created, model, choices: [choice], usage });
  }

  /** Generates on the shared core with the request's adapter, observing vLLM's latency histograms. */
  private async generate(
    r: { prompt: string; maxTokens: number | undefined; temperature: number; seed: number | undefined; lora: LoadedLora | undefined; ignoreEos: boolean },
    onText: (t: string) => void,
  ): Promise<GenerateResult> {
    const arrived = performance.now();
    const rid = ++this.nextRequest;
    const flight = { lora: r.lora?.name, running: false };
    this.inFlight.set(rid, flight);
    let last: number | undefined;
    try {
      const g = await this.core.generate(
        {
          prompt: r.prompt,
          maxTokens: r.maxTokens,
          temperature: r.temperature,
          seed: r.seed,
          adapters: r.lora === undefined ? [] : [{ file: r.lora.file, scale: 1 }],
          ignoreEos: r.ignoreEos,
        },
        onText,
        (at) => {
          flight.running = true;
          if (last === undefined) this.ttft.observe((at - arrived) / 1000);
          else this.itl.observe((at - last) / 1000);
          last = at;
        },
      );
      if (g.completionTokens > 1) this.tpot.observe((g.tEnd - g.tFirst) / 1000 / (g.completionTokens - 1));
      this.finished.set(g.finishReason, (this.finished.get(g.finishReason) ?? 0) + 1);
      return g;
    } catch (e) {
      if (e instanceof ContextSizeError)
        throw new HttpError(
          400,
          'BadRequestError',
          `This model's maximum context length is ${this.maxModelLen} tokens. However, you requested ${e.promptTokens + (e.maxTokens ?? 0)} tokens.`,
        );
      throw e;
    } finally {
      this.inFlight.delete(rid);
    }
  }

  /** The /metrics text: vLLM V1's families (names, HELP, types, labels in its order) for what the stand-in measures. */
  metricsText(): string {
    const label = `model_name="${this.baseName.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
    const out: string[] = [];
    const family = (name: string, type: string, help: string, lines: string[]): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...lines);
    };
    const one = (name: string, type: string, help: string, v: number): void => family(name, type, help, [`${name}{${label}} ${pyFloat(v)}`]);
    const hist = (name: string, help: string, h: Histogram): void => {
      family(name, 'histogram', help, [
        `${name}_sum{${label}} ${pyFloat(h.sum)}`,
        ...h.buckets.map((b, i) => `${name}_bucket{le="${pyFloat(b)}",${label}} ${pyFloat(h.counts[i] ?? 0)}`),
        `${name}_bucket{le="+Inf",${label}} ${pyFloat(h.count)}`,
        `${name}_count{${label}} ${pyFloat(h.count)}`,
      ]);
    };
    const c = this.core.counters;
    const blocks = Math.floor((this.maxModelLen * this.o.maxNumSeqs) / 16);
    family('vllm:cache_config_info', 'gauge', 'Information of the LLMEngine CacheConfig', [
      `vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="False",num_cpu_blocks="${blocks}",num_gpu_blocks="0"} 1.0`,
    ]);
    const flights = [...this.inFlight.values()];
    const names = (running: boolean): string =>
      [...new Set(flights.filter((f) => f.running === running && f.lora !== undefined).map((f) => f.lora as string))].sort().join(',');
    if (this.o.enableLora) {
      family('vllm:lora_requests_info', 'gauge', 'Running stats on lora requests.', [
        `vllm:lora_requests_info{max_lora="${this.o.maxLoras}",running_lora_adapters="${names(true)}",waiting_lora_adapters="${names(false)}"} ${Date.now() / 1000}`,
      ]);
    }
    hist('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', this.ttft);
    hist('vllm:time_per_output_token_seconds', 'Histogram of time per output token in seconds.', this.tpot);
    hist('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', this.itl);
    one('vllm:num_requests_running', 'gauge', 'Number of requests currently running on GPU.', this.core.slots.busy);
    one('vllm:num_requests_waiting', 'gauge', 'Number of requests waiting to be processed.', this.core.slots.deferred);
    const kv = this.core.kvCacheTokens / (this.maxModelLen * this.o.maxNumSeqs);
    one('vllm:gpu_cache_usage_perc', 'gauge', 'GPU KV-cache usage. 1 means 100 percent usage.', kv);
    one('vllm:kv_cache_usage_perc', 'gauge', 'KV-cache usage. 1 means 100 percent usage.', kv);
    one('vllm:num_preemptions_total', 'counter', 'Cumulative number of preemption from the engine.', 0);
    one('vllm:prompt_tokens_total', 'counter', 'Number of prefill tokens processed.', c.promptTokens);
    one('vllm:generation_tokens_total', 'counter', 'Number of generation tokens processed.', c.predictedTokens);
    family(
      'vllm:request_success_total',
      'counter',
      'Count of successfully processed requests.',
      ['stop', 'length'].map((r) => `vllm:request_success_total{finished_reason="${r}",${label}} ${pyFloat(this.finished.get(r) ?? 0)}`),
    );
    return `${out.join('\n')}\n`;
  }
}

const uuid = (): string => randomUUID().replace(/-/g, '');

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

const sendJsonV = (res: ServerResponse, status: number, body: unknown): void => sendJson(res, status, body, 'application/json');
