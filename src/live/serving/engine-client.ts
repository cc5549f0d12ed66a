/**
 * The engine side of one serving replica, over HTTP (issue 12, items 4 and 6): its health, its /metrics read into
 * the serving layer's engine-neutral signals (serving/metrics.ts, one parser: core/prom-text.ts), and its LoRA
 * adapters listed, loaded and unloaded through whatever API the runtime's data names (serving/runtimes/*: vLLM
 * POST /v1/load_lora_adapter and /v1/unload_lora_adapter, llama.cpp GET/POST /lora-adapters). IO lives here, not
 * in the pure serving layer; the InferenceService controller's runner calls it. Transient failures (refused
 * connection, timeout, 5xx, 429 — an engine still loading answers 503) are retried with exponential backoff;
 * every error names the replica, its address and the adapter (docs/adr/0088).
 */
import { readEngineSignals, type EngineSignals } from '../../serving/metrics.ts';
import type { RuntimeDefinition } from '../../serving/runtime.ts';

export interface Replica {
  /** Pod name: what errors and status name. */
  readonly name: string;
  /** Pod IP (or host name). */
  readonly host: string;
  /** The serving port (the runtime's /metrics may be on its own metricsPort). */
  readonly port: number;
}

export interface RetryPolicy {
  readonly attempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Per attempt. */
  readonly timeoutMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 200, maxDelayMs: 5000, timeoutMs: 10_000 };

/** One adapter as the engine reports it. */
export interface EngineAdapter {
  readonly name: string;
  readonly path?: string;
  /** llama.cpp's adapter id and scale; an adapter at scale 0 is loaded but not applied. */
  readonly id?: number;
  readonly scale?: number;
  readonly active: boolean;
}

export class EngineError extends Error {
  constructor(
    message: string,
    readonly replica: string,
    readonly adapter: string | undefined,
    /** False when retrying cannot help (a 4xx, a runtime without that API). */
    readonly retryable: boolean,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

export interface EngineClientOptions {
  readonly retry?: Partial<RetryPolicy>;
  /** Injected for tests of the backoff; real timers otherwise. */
  readonly sleep?: (ms: number) => Promise<void>;
}

interface Response {
  readonly status: number;
  readonly text: string;
}

const sleepReal = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The name llama.cpp's adapter goes by: the last segment of its --lora path, without .gguf. */
export function adapterNameFromPath(path: string): string {
  const last = path.replace(/\/+$/, '').split('/').pop() ?? path;
  return last.replace(/\.gguf$/i, '');
}

export class EngineClient {
  private readonly retry: RetryPolicy;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    readonly runtime: RuntimeDefinition,
    readonly replica: Replica,
    o: EngineClientOptions = {},
  ) {
    this.retry = { ...DEFAULT_RETRY, ...o.retry };
    this.sleep = o.sleep ?? sleepReal;
  }

  private url(path: string, port = this.replica.port): string {
    const host = this.replica.host.includes(':') ? `[${this.replica.host}]` : this.replica.host;
    return `http://${host}:${port}${path}`;
  }

  private where(): string {
    return `replica ${this.replica.name} (${this.url('')})`;
  }

  /** One HTTP exchange; a network error or timeout is a thrown Error. */
  private async once(method: string, path: string, body: unknown, port: number | undefined): Promise<Response> {
    const r = await fetch(this.url(path, port), {
      method,
      signal: AbortSignal.timeout(this.retry.timeoutMs),
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } }),
    });
    return { status: r.status, text: await r.text() };
  }

  /**
   * The exchange with retries: a 2xx is returned, `accept` may take some other statuses as done (an adapter that
   * is already loaded), other 4xx fail at once, the rest are retried with backoff until the attempts run out.
   */
  private async call(
    what: string,
    adapter: string | undefined,
    method: string,
    path: string,
    body?: unknown,
    o: { port?: number; accept?: (r: Response) => boolean } = {},
  ): Promise<Response> {
    let last = '';
    let lastStatus: number | undefined;
    for (let attempt = 1; attempt <= this.retry.attempts; attempt++) {
      try {
        const r = await this.once(method, path, body, o.port);
        if ((r.status >= 200 && r.status < 300) || o.accept?.(r) === true) return r;
        last = `${method} ${path} answered ${r.status}: ${errorMessage(r.text)}`;
        lastStatus = r.status;
        if (r.status >= 400 && r.status < 500 && r.status !== 429 && r.status !== 408) {
          throw new EngineError(`${this.where()}: ${what} failed: ${last}`, this.replica.name, adapter, false, r.status);
        }
      } catch (e) {
        if (e instanceof EngineError) throw e;
        last = `${method} ${path}: ${describe(e)}`;
        lastStatus = undefined;
      }
      if (attempt < this.retry.attempts) await this.sleep(Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1)));
    }
    throw new EngineError(`${this.where()}: ${what} failed after ${this.retry.attempts} attempt(s): ${last}`, this.replica.name, adapter, true, lastStatus);
  }

  /** One readiness probe (no retries: the caller probes periodically), as the kubelet's prober judges it. */
  async health(): Promise<{ readonly ready: boolean; readonly status?: number; readonly error?: string }> {
    try {
      const r = await this.once('GET', this.runtime.readiness.path, undefined, undefined);
      return { ready: r.status >= 200 && r.status < 400, status: r.status, ...(r.status >= 400 ? { error: errorMessage(r.text) } : {}) };
    } catch (e) {
      return { ready: false, error: describe(e) };
    }
  }

  /** One scrape of the replica's /metrics, read into the engine-neutral signals. */
  async scrape(): Promise<EngineSignals> {
    const r = await this.call('scrape metrics', undefined, 'GET', this.runtime.metricsPath, undefined, { port: this.runtime.metricsPort ?? this.replica.port });
    const s = readEngineSignals(this.runtime, r.text);
    if (!s.ok) throw new EngineError(`${this.where()}: ${s.error}`, this.replica.name, undefined, false);
    return s.signals;
  }

  /** The adapters the engine has now. */
  async listAdapters(): Promise<EngineAdapter[]> {
    const lora = this.runtime.lora;
    if (lora.kind === 'launch-scale') return this.llamaAdapters();
    if (lora.kind === 'runtime') {
      // vLLM lists adapters among its models: an adapter's entry names its base model as `parent`.
      const r = await this.call('list adapters', undefined, 'GET', '/v1/models');
      const data = (parseJson(r.text, this.where(), this.replica.name) as { data?: { id?: unknown; root?: unknown; parent?: unknown }[] }).data ?? [];
      return data
        .filter((m) => typeof m.parent === 'string' && typeof m.id === 'string')
        .map((m) => ({ name: m.id as string, ...(typeof m.root === 'string' ? { path: m.root } : {}), active: true }));
    }
    return [];
  }

  private async llamaAdapters(): Promise<EngineAdapter[]> {
    const r = await this.call('list adapters', undefined, 'GET', '/lora-adapters');
    const list = parseJson(r.text, this.where(), this.replica.name);
    if (!Array.isArray(list)) throw new EngineError(`${this.where()}: GET /lora-adapters: expected a JSON array`, this.replica.name, undefined, false);
    return list.map((e: { id?: unknown; path?: unknown; scale?: unknown }, i) => {
      const path = typeof e.path === 'string' ? e.path : '';
      const scale = typeof e.scale === 'number' ? e.scale : 0;
      return { name: adapterNameFromPath(path), path, id: typeof e.id === 'number' ? e.id : i, scale, active: scale !== 0 };
    });
  }

  /** llama.cpp: POST sets every adapter's scale (ids not named go to 0), so the whole vector is sent. */
  private async setLlamaScale(name: string, path: string | undefined, scale: number, what: string): Promise<void> {
    const lora = this.runtime.lora;
    if (lora.kind !== 'launch-scale') throw new Error('unreachable');
    const list = await this.llamaAdapters();
    const mine = list.find((a) => (path !== undefined && a.path === path) || a.name === name);
    if (mine === undefined) {
      if (scale === 0) return; // not there: nothing to unload
      throw new EngineError(
        `${this.where()}: ${what} failed: ${this.runtime.displayName} was not launched with adapter "${name}"${path === undefined ? '' : ` (${path})`} (it has ${list.map((a) => a.path).join(', ') || 'none'}); a new adapter needs the replica restarted with --lora`,
        this.replica.name,
        name,
        false,
      );
    }
    if (mine.scale === scale) return;
    const scales = list.map((a) => ({ id: a.id as number, scale: a.id === mine.id ? scale : (a.scale ?? 0) }));
    await this.call(what, name, lora.scale.method, lora.scale.path, lora.scale.body(scales));
  }

  /** Loads (vLLM) or switches on (llama.cpp) adapter `name` from `path`; loading an adapter already there succeeds. */
  async loadAdapter(name: string, path: string): Promise<void> {
    const lora = this.runtime.lora;
    const what = `load adapter "${name}"`;
    if (lora.kind === 'launch-scale') return this.setLlamaScale(name, path, 1, what);
    if (lora.kind === 'runtime') {
      // vLLM answers 400 "...has already been loaded" to a second load: the adapter is there, which is what was asked.
      await this.call(what, name, lora.load.method, lora.load.path, lora.load.body(name, path), {
        accept: (r) => r.status === 400 && /already been loaded/i.test(r.text),
      });
      return;
    }
    throw new EngineError(
      `${this.where()}: ${what}: ${this.runtime.displayName} cannot load adapters into a running engine (${lora.kind === 'none' ? 'no LoRA support' : 'adapters are given at launch'})`,
      this.replica.name,
      name,
      false,
    );
  }

  /** Unloads (vLLM) or switches off (llama.cpp: scale 0) adapter `name`; an adapter that is not there succeeds. */
  async unloadAdapter(name: string, path?: string): Promise<void> {
    const lora = this.runtime.lora;
    const what = `unload adapter "${name}"`;
    if (lora.kind === 'launch-scale') return this.setLlamaScale(name, path, 0, what);
    if (lora.kind === 'runtime') {
      await this.call(what, name, lora.unload.method, lora.unload.path, lora.unload.body(name), {
        accept: (r) => r.status === 404 || (r.status === 400 && /cannot be found|not found/i.test(r.text)),
      });
      return;
    }
    throw new EngineError(`${this.where()}: ${what}: ${this.runtime.displayName} cannot unload adapters from a running engine`, this.replica.name, name, false);
  }
}

function describe(e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError') return 'timed out';
  return err.cause?.code ?? err.cause?.message ?? err.message;
}

/** The engines' error bodies: OpenAI's {error: {message}}, vLLM's {message}, or plain text. */
function errorMessage(text: string): string {
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    if (typeof j.error === 'object' && typeof j.error.message === 'string') return j.error.message;
    if (typeof j.error === 'string') return j.error;
    if (typeof j.message === 'string') return j.message;
    if (typeof j.detail === 'string') return j.detail;
  } catch {
    // not JSON
  }
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function parseJson(text: string, where: string, replica: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new EngineError(`${where}: answer is not JSON: ${(e as Error).message}`, replica, undefined, false);
  }
}
