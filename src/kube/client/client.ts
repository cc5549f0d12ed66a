/**
 * A small Kubernetes REST client for the hot paths (list, watch, bind, patch): one keep-alive HTTPS agent
 * for every request (client-node 1.4 builds a new agent, and so a new TLS handshake, per request), a cap on
 * requests in flight, and typed errors carrying the HTTP status and the API's reason.
 * Credentials come from a client-node KubeConfig (file or in-cluster) and are re-read every minute so
 * that rotated service-account tokens keep working.
 */
import http from 'node:http';
import https from 'node:https';
import { createInterface } from 'node:readline';
import type { KubeConfig } from '@kubernetes/client-node';

export class KubeApiError extends Error {
  readonly code = 'KubeApiError';
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly method: string,
    readonly path: string,
  ) {
    super(`${method} ${path}: ${status} ${reason}: ${message}`);
    this.name = 'KubeApiError';
  }
}

export interface RequestOptions {
  readonly body?: unknown;
  readonly contentType?: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly timeoutMs?: number;
  /** Receives each `Warning: 299 - "text"` header of the response (admission warnings, deprecations), as kubectl prints them. */
  readonly onWarning?: (text: string) => void;
  /** Waits behind every other waiting request (events: the bindings go first). */
  readonly background?: boolean;
}

export interface WatchEvent<T> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: T;
}

export interface WatchHandle {
  stop(): void;
}

interface Auth {
  readonly headers: Record<string, string>;
  readonly tls: https.AgentOptions;
}

export interface ClientOptions {
  /** Requests in flight at most (the rest wait in order). */
  readonly maxInFlight?: number;
  readonly userAgent?: string;
}

export class KubeClient {
  readonly server: URL;
  private auth: Auth | undefined;
  private authAt = 0;
  private agent: http.Agent | undefined;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly waitingBackground: (() => void)[] = [];
  readonly maxInFlight: number;
  private readonly userAgent: string;
  /** Counters for benchmarks and metrics. */
  readonly stats = { requests: 0, errors: 0 };

  constructor(
    private readonly kc: KubeConfig,
    opts: ClientOptions = {},
  ) {
    const cluster = kc.getCurrentCluster();
    if (cluster === null) throw new Error('kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
    this.maxInFlight = opts.maxInFlight ?? 64;
    this.userAgent = opts.userAgent ?? 'sits-scheduler/0.1';
  }

  private async credentials(): Promise<Auth> {
    const now = performance.now();
    if (this.auth !== undefined && now - this.authAt < 60_000) return this.auth;
    const opts: https.RequestOptions & { headers: Record<string, string> } = { headers: {} };
    await this.kc.applyToHTTPSOptions(opts);
    const tls: https.AgentOptions = {};
    for (const k of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const) {
      const v = (opts as unknown as Record<string, unknown>)[k];
      if (v !== undefined) (tls as Record<string, unknown>)[k] = v;
    }
    const cluster = this.kc.getCurrentCluster();
    if (cluster?.skipTLSVerify === true) tls.rejectUnauthorized = false;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers)) headers[k] = String(v);
    if (typeof (opts as { auth?: unknown }).auth === 'string')
      headers.Authorization = `Basic ${Buffer.from((opts as { auth: string }).auth).toString('base64')}`;
    const changedTls = this.auth === undefined || JSON.stringify(this.auth.tls) !== JSON.stringify(tls);
    this.auth = { headers, tls };
    this.authAt = now;
    if (changedTls || this.agent === undefined) {
      this.agent?.destroy();
      this.agent =
        this.server.protocol === 'https:'
          ? new https.Agent({ ...tls, keepAlive: true, maxSockets: this.maxInFlight + 8 })
          : new http.Agent({ keepAlive: true, maxSockets: this.maxInFlight + 8 });
    }
    return this.auth;
  }

  private async acquire(background = false): Promise<void> {
    if (this.inFlight < this.maxInFlight) {
      this.inFlight++;
      return;
    }
    // Woken by release() with its slot: the count already includes this request.
    await new Promise<void>((resolve) => (background ? this.waitingBackground : this.waiting).push(resolve));
  }

  /** Hands the slot to the oldest waiter, background ones last, if any (a new request cannot slip in between and exceed the cap). */
  private release(): void {
    const next = this.waiting.shift() ?? this.waitingBackground.shift();
    if (next !== undefined) next();
    else this.inFlight--;
  }

  private url(path: string, query?: RequestOptions['query']): URL {
    const u = new URL(path, this.server);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    return u;
  }

  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    await this.acquire(opts.background === true);
    try {
      return await this.send<T>(method, path, opts);
    } finally {
      this.release();
    }
  }

  private async send<T>(method: string, path: string, opts: RequestOptions): Promise<T> {
    const auth = await this.credentials();
    const u = this.url(path, opts.query);
    const body = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    const mod = u.protocol === 'https:' ? https : http;
    this.stats.requests++;
    return new Promise<T>((resolve, reject) => {
      const req = mod.request(
        u,
        {
          method,
          agent: this.agent,
          headers: {
            ...auth.headers,
            Accept: 'application/json',
            'User-Agent': this.userAgent,
            ...(body === undefined ? {} : { 'Content-Type': opts.contentType ?? 'application/json', 'Content-Length': String(body.length) }),
          },
          timeout: opts.timeoutMs ?? 30_000,
        },
        (res) => {
          res.on('error', reject);
          if (opts.onWarning !== undefined) for (const w of warningTexts(res.headers.warning)) opts.onWarning(w);
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            let parsed: unknown;
            try {
              parsed = text === '' ? undefined : JSON.parse(text);
            } catch {
              parsed = text;
            }
            if (status >= 200 && status < 300) resolve(parsed as T);
            else {
              this.stats.errors++;
              const st = (parsed ?? {}) as { reason?: string; message?: string };
              reject(new KubeApiError(status, st.reason ?? res.statusMessage ?? '', st.message ?? text.slice(0, 500), method, u.pathname));
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${u.pathname}: timed out`)));
      req.on('error', (e) => {
        this.stats.errors++;
        reject(e);
      });
      if (body !== undefined) req.write(body);
      req.end();
    });
  }

  get<T>(path: string, query?: RequestOptions['query']): Promise<T> {
    return this.request<T>('GET', path, query === undefined ? {} : { query });
  }
  post<T>(path: string, body: unknown, query?: RequestOptions['query']): Promise<T> {
    return this.request<T>('POST', path, { body, ...(query === undefined ? {} : { query }) });
  }
  put<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PUT', path, { body });
  }
  /** JSON merge patch (RFC 7386). */
  mergePatch<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PATCH', path, { body, contentType: 'application/merge-patch+json' });
  }
  delete<T>(path: string, query?: RequestOptions['query']): Promise<T> {
    return this.request<T>('DELETE', path, query === undefined ? {} : { query });
  }

  /**
   * Streams a watch. `onDone(err)` is called once when the stream ends: err undefined for a clean close
   * (the server's timeout), a KubeApiError for an HTTP error (410 = resourceVersion too old).
   */
  async watch<T>(path: string, query: RequestOptions['query'], onEvent: (e: WatchEvent<T>) => void, onDone: (err?: Error) => void): Promise<WatchHandle> {
    const auth = await this.credentials();
    const u = this.url(path, { ...query, watch: true, allowWatchBookmarks: true });
    const mod = u.protocol === 'https:' ? https : http;
    let done = false;
    const finish = (err?: Error): void => {
      if (done) return;
      done = true;
      onDone(err);
    };
    const req = mod.request(
      u,
      { method: 'GET', agent: this.agent, headers: { ...auth.headers, Accept: 'application/json', 'User-Agent': this.userAgent } },
      (res) => {
        res.on('error', (e) => finish(e));
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let st: { reason?: string; message?: string } = {};
            try {
              st = (JSON.parse(text) ?? {}) as typeof st;
            } catch {
              // not JSON (a proxy's page): the reason phrase and the text, as request() reports them
            }
            finish(new KubeApiError(status, st.reason ?? res.statusMessage ?? '', st.message ?? text.slice(0, 500), 'WATCH', u.pathname));
          });
          return;
        }
        const lines = createInterface({ input: res, crlfDelay: Number.POSITIVE_INFINITY });
        lines.on('line', (line) => {
          if (done || line.trim() === '') return;
          let ev: WatchEvent<T>;
          try {
            ev = JSON.parse(line) as WatchEvent<T>;
          } catch {
            return;
          }
          onEvent(ev);
        });
        lines.on('close', () => finish());
        // readline re-emits input errors (e.g. a reset connection) on the interface itself.
        lines.on('error', (e) => finish(e));
      },
    );
    req.on('error', (e) => finish(e));
    req.end();
    return {
      stop: () => {
        done = true;
        req.destroy();
      },
    };
  }

  /** Another client for the same cluster and credentials with its own connections and queue (e.g. the auth path's). */
  fork(opts: ClientOptions = {}): KubeClient {
    return new KubeClient(this.kc, opts);
  }

  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }
}

export const isStatus = (e: unknown, status: number): boolean => e instanceof KubeApiError && e.status === status;

/**
 * The texts of RFC 7234 `Warning` headers as the apiserver writes them (`299 - "text"`, several per header
 * separated by commas, quotes and backslashes escaped), in order.
 */
export function warningTexts(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  const out: string[] = [];
  for (const h of Array.isArray(header) ? header : [header]) {
    const re = /\s*\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"(?:\s+"[^"]*")?\s*(?:,|$)/gy;
    let m: RegExpExecArray | null;
    while ((m = re.exec(h)) !== null) out.push((m[1] ?? '').replace(/\\(.)/g, '$1'));
  }
  return out;
}
