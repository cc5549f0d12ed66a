/**
 * `sits activator` (ADR 0149): the request path for InferenceServices that scale to zero, for clusters without a
 * gateway that does it (Knative's activator, KEDA's HTTP interceptor). A request for
 * `/namespaces/{ns}/inferenceservices/{name}/proxy/{path}` goes to one of the service's ready endpoints (from
 * its EndpointSlices, the fewest requests in flight first); when it has none, the activator holds the request,
 * stamps the service's `ai.sits2026.dev/activate` annotation (ADR 0126; again every few seconds while it holds),
 * and sends it on once a replica is ready, or answers 503 after the hold timeout. Callers are authenticated and
 * authorized by delegation on the secure port (TokenReview, SubjectAccessReview for `inferenceservices/proxy`
 * with the method's verb, as the apiserver's `services/proxy`); their credentials are not passed to the engine.
 * `/metrics` has the held requests per service: what a KEDA `activationQuery` reads in mode keda.
 * Memory (ADR 0176): every hold and every buffered body byte is admitted by a budget (activator-budget.ts) before
 * the body is read; a refusal is a 503 (activator full) or 429 (the namespace's share) with Retry-After, and a
 * service at zero still gets its activation stamped, so a flood cannot stop anyone's scale-from-zero.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { API_GROUP, LABEL } from '../../api/wire.ts';
import { serviceName } from '../../controllers/inference-service/names.ts';
import type { CertPair } from '../../kube/secure/certs.ts';
import { isStatus, type KubeClient } from '../../kube/client/client.ts';
import type { Authenticator, Authorizer, ResourceAttributes } from '../../kube/secure/delegated-auth.ts';
import { Reflector, objectKey } from '../../kube/client/reflector.ts';
import { startSecureServer } from '../../kube/secure/secure-server.ts';
import {
  DROPPED_REQUEST_HEADERS,
  DROPPED_RESPONSE_HEADERS,
  parseProxyPath,
  pickEndpoint,
  proxyVerb,
  readyEndpoints,
  SERVICE_NAME_LABEL,
  type Endpoint,
  type EndpointSliceLike,
  type ProxyTarget,
} from '../../serving/activator-routing.ts';
import { requestActivation } from '../serving/serving-loop.ts';
import { budgetFromMemory, HoldBudget, type Refusal, type Ticket } from './activator-budget.ts';

export interface ActivatorOptions {
  readonly port: number;
  /** Default 0.0.0.0; plain HTTP (no `tls`) only on loopback. */
  readonly host?: string;
  readonly tls?: CertPair;
  readonly clientCa?: string;
  readonly authn: Authenticator;
  /** Built with `activatorAuthorizer` (or any authorizer that understands the proxy paths). */
  readonly authz: Authorizer;
  /** Watch and serve only this namespace (a namespaced Role then suffices); default every namespace. */
  readonly namespace?: string;
  /** How long a request waits for a ready replica. Default 300 s (a model load). */
  readonly holdTimeoutMs?: number;
  /** Requests held per service at most; beyond, 429 with Retry-After. Default 1000 (less on a small memory limit). */
  readonly maxHeldPerService?: number;
  /** Requests held across every service; beyond, 503 with Retry-After. Default: the memory limit / 64 KiB. */
  readonly maxHeldRequests?: number;
  /** Body bytes buffered across every service; beyond, 503 with Retry-After. Default: half the memory limit. */
  readonly maxHeldBytes?: number;
  /** The container's memory limit the defaults come from (detectMemoryLimit). Default 512 MiB (the chart's). */
  readonly memoryLimitBytes?: number;
  /** Re-stamp the activation this often while holding. Default 5 s. */
  readonly restampMs?: number;
  /** Largest request body. Default 16 MiB (at most a quarter of maxHeldBytes). */
  readonly maxBodyBytes?: number;
  /** The Service port to send to, by name. Default `http` (every runtime's API port). */
  readonly portName?: string;
  /** Pod IP → address to dial (identity in a cluster; the dev pod network in tests). */
  readonly resolveAddress?: (ip: string) => string;
  readonly log?: (m: string) => void;
}

export interface Activator {
  readonly url: string;
  readonly port: number;
  readonly registry: Registry;
  /** Requests held now for one service. */
  held(namespace: string, name: string): number;
  /** Serves a renewed certificate from the next handshake on. */
  setTls(pair: CertPair): void;
  /**
   * Stops: /readyz turns 503 and new requests get 503 at once, while held and forwarded requests may finish for up
   * to `drainMs` (default 0: dropped at once); then the port closes.
   */
  close(o?: { readonly drainMs?: number }): Promise<void>;
}

/** The chart's memory limit for the activator (activator.resources.limits.memory), the defaults' base without another. */
export const DEFAULT_MEMORY_LIMIT = 512 << 20;
/** How long the rest of a refused body is read and dropped before the connection is cut. */
const LINGER_MS = 2000;

const PROXY_RESOURCE = { group: API_GROUP, resource: 'inferenceservices', subresource: 'proxy' } as const;

/** The SAR attributes of a proxy path (undefined: a non-resource path such as /metrics). */
export function activatorResource(path: string, verb: string): ResourceAttributes | undefined {
  const p = parseProxyPath(path);
  if (!p.ok) return undefined;
  // The secure server passes the lower-cased HTTP method; RBAC speaks the proxy subresource's verbs.
  return { ...PROXY_RESOURCE, namespace: p.target.namespace, name: p.target.name, verb: proxyVerb(verb) };
}

interface Waiter {
  readonly resolve: (e: readonly Endpoint[]) => void;
}

interface ServiceState {
  held: number;
  waiters: Set<Waiter>;
  lastStampMs: number;
  timer?: ReturnType<typeof setInterval> | undefined;
}

function sendError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // The OpenAI error shape: what the engines answer, so a client's SDK shows the message.
  const body = JSON.stringify({
    error: { message, type: status === 404 ? 'not_found_error' : status === 503 ? 'unavailable_error' : 'invalid_request_error', code: status },
  });
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store', ...headers });
  res.end(body);
}

type ActivatorMetrics = ReturnType<typeof activatorMetrics>;

/** The activator's metrics, registered on `registry`; the budget's limits are set once here. */
function activatorMetrics(registry: Registry, budget: HoldBudget) {
  const m = {
    requests: new Counter({
      name: 'sits_activator_requests_total',
      help: 'Requests answered, by namespace, InferenceService and HTTP status code.',
      labelNames: ['namespace', 'inferenceservice', 'code'],
      registers: [registry],
    }),
    held: new Gauge({
      name: 'sits_activator_held_requests',
      help: 'Requests held now because the InferenceService has no ready replica (a KEDA activationQuery reads this).',
      labelNames: ['namespace', 'inferenceservice'],
      registers: [registry],
    }),
    activations: new Counter({
      name: 'sits_activator_activations_total',
      help: 'Activation stamps written on InferenceServices (ai.sits2026.dev/activate).',
      labelNames: ['namespace', 'inferenceservice'],
      registers: [registry],
    }),
    heldBytes: new Gauge({
      name: 'sits_activator_held_bytes',
      help: 'Request body bytes buffered now (held, or on their way to a replica), by InferenceService.',
      labelNames: ['namespace', 'inferenceservice'],
      registers: [registry],
    }),
    refused: new Counter({
      name: 'sits_activator_refused_total',
      help: 'Requests refused by the memory budget before their body was read (or cut off while it arrived), by reason.',
      labelNames: ['namespace', 'inferenceservice', 'reason'],
      registers: [registry],
    }),
    budgetUsed: new Gauge({
      name: 'sits_activator_budget_used',
      help: 'What the activator holds now across every service: body bytes, held requests.',
      labelNames: ['resource'],
      registers: [registry],
      collect() {
        this.set({ resource: 'bytes' }, budget.bytesUsed());
        this.set({ resource: 'requests' }, budget.heldNow());
      },
    }),
    budgetLimit: new Gauge({
      name: 'sits_activator_budget_limit',
      help: "The activator's limits: body bytes and held requests across every service (scope global), per namespace, per service, per request.",
      labelNames: ['resource', 'scope'],
      registers: [registry],
    }),
    holdSeconds: new Histogram({
      name: 'sits_activator_hold_seconds',
      help: 'How long held requests waited for a ready replica.',
      labelNames: ['namespace', 'inferenceservice'],
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
      registers: [registry],
    }),
  };

  const L = budget.limits;
  m.budgetLimit.set({ resource: 'bytes', scope: 'global' }, L.maxHeldBytes);
  m.budgetLimit.set({ resource: 'bytes', scope: 'namespace' }, Math.floor(L.maxHeldBytes * L.namespaceShare));
  m.budgetLimit.set({ resource: 'bytes', scope: 'request' }, L.maxBodyBytes);
  m.budgetLimit.set({ resource: 'requests', scope: 'global' }, L.maxHeldRequests);
  m.budgetLimit.set({ resource: 'requests', scope: 'namespace' }, Math.max(1, Math.floor(L.maxHeldRequests * L.namespaceShare)));
  m.budgetLimit.set({ resource: 'requests', scope: 'service' }, L.maxHeldPerService);
  return m;
}

const svcKey = (ns: string, svc: string): string => `${ns}/${svc}`;

/**
 * The EndpointSlices of InferenceServices' Services only (their label), by ns/service → slice key, and the
 * requests held per service; a slice that brings a ready endpoint wakes that service's waiters.
 */
class EndpointBook {
  private readonly slices = new Map<string, Map<string, EndpointSliceLike>>();
  readonly states = new Map<string, ServiceState>();

  constructor(
    private readonly portName: string,
    private readonly resolve: (ip: string) => string,
  ) {}

  endpointsOf(key: string): Endpoint[] {
    return readyEndpoints(this.slices.get(key)?.values() ?? [], this.portName, this.resolve);
  }

  state(key: string): ServiceState {
    let s = this.states.get(key);
    if (s === undefined) {
      s = { held: 0, waiters: new Set(), lastStampMs: -Infinity };
      this.states.set(key, s);
    }
    return s;
  }

  put(obj: EndpointSliceLike & { metadata?: { name?: string } }): void {
    const key = sliceOwner(obj);
    if (key === undefined) return;
    let m2 = this.slices.get(key);
    if (m2 === undefined) this.slices.set(key, (m2 = new Map()));
    m2.set(objectKey(obj), obj);
    this.changed(key);
  }

  delete(obj: EndpointSliceLike & { metadata?: { name?: string } }): void {
    const key = sliceOwner(obj);
    if (key !== undefined) this.slices.get(key)?.delete(objectKey(obj));
  }

  private changed(key: string): void {
    const s = this.states.get(key);
    if (s === undefined || s.waiters.size === 0) return;
    const eps = this.endpointsOf(key);
    if (eps.length === 0) return;
    for (const w of [...s.waiters]) w.resolve(eps);
  }
}

function sliceOwner(s: EndpointSliceLike): string | undefined {
  const svc = s.metadata?.labels?.[SERVICE_NAME_LABEL];
  return svc === undefined ? undefined : svcKey(s.metadata?.namespace ?? '', svc);
}

/** What the request path shares: the resolved options, metrics, budget, endpoints and the drain flag. */
interface ProxyContext {
  readonly client: KubeClient;
  readonly namespace: string | undefined;
  readonly log: (m: string) => void;
  readonly m: ActivatorMetrics;
  readonly budget: HoldBudget;
  readonly book: EndpointBook;
  readonly inFlight: Map<string, number>;
  readonly holdTimeoutMs: number;
  readonly restampMs: number;
  /** Whether the InferenceService exists (a request for an unknown one is a 404, not a hold). */
  readonly exists: (t: ProxyTarget) => Promise<boolean>;
  turn: number;
  draining: boolean;
}

/** `exists` cached briefly per InferenceService. */
function existenceCache(client: KubeClient): (t: ProxyTarget) => Promise<boolean> {
  const known = new Map<string, { exists: boolean; untilMs: number }>();
  return async (t) => {
    const key = svcKey(t.namespace, t.name);
    const hit = known.get(key);
    if (hit !== undefined && hit.untilMs > Date.now()) return hit.exists;
    let ok = true;
    try {
      await client.get(`/apis/${API_GROUP}/v1/namespaces/${t.namespace}/inferenceservices/${t.name}`);
    } catch (e) {
      if (!isStatus(e, 404)) throw e;
      ok = false;
    }
    known.set(key, { exists: ok, untilMs: Date.now() + 5000 });
    return ok;
  };
}

async function stamp(c: ProxyContext, t: ProxyTarget, s: ServiceState): Promise<void> {
  s.lastStampMs = Date.now();
  try {
    await requestActivation(c.client, t.namespace, t.name);
    c.m.activations.inc({ namespace: t.namespace, inferenceservice: t.name });
  } catch (e) {
    c.log(`activator: cannot stamp the activation of ${t.namespace}/${t.name}: ${(e as Error).message}`);
  }
}

/** Resolves with the ready endpoints, or undefined after the timeout or when the client went away. */
function hold(c: ProxyContext, t: ProxyTarget, key: string, res: ServerResponse): Promise<readonly Endpoint[] | undefined> {
  const s = c.book.state(key);
  const labels = { namespace: t.namespace, inferenceservice: t.name };
  s.held++;
  c.m.held.set(labels, s.held);
  const t0 = performance.now();
  if (Date.now() - s.lastStampMs >= c.restampMs) void stamp(c, t, s);
  s.timer ??= setInterval(() => void stamp(c, t, s), c.restampMs);
  return new Promise((done) => {
    let finished = false;
    const finish = (eps: readonly Endpoint[] | undefined): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timeout);
      res.off('close', onClose);
      s.waiters.delete(waiter);
      s.held--;
      c.m.held.set(labels, s.held);
      c.m.holdSeconds.observe(labels, (performance.now() - t0) / 1000);
      if (s.held === 0 && s.timer !== undefined) {
        clearInterval(s.timer);
        s.timer = undefined;
      }
      done(eps);
    };
    const waiter: Waiter = { resolve: (eps) => finish(eps) };
    const timeout = setTimeout(() => finish(undefined), c.holdTimeoutMs);
    // The client went away while held: stop holding for it.
    const onClose = (): void => {
      if (!res.writableEnded) finish(undefined);
    };
    res.on('close', onClose);
    s.waiters.add(waiter);
    // A slice may have come between the check and now.
    const eps = c.book.endpointsOf(key);
    if (eps.length > 0) finish(eps);
  });
}

/** The request's headers for the engine: hop-by-hop and credentials dropped, the length fixed, the peer appended. */
function forwardedHeaders(req: IncomingMessage, size: number): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !DROPPED_REQUEST_HEADERS.has(k)) headers[k] = v;
  headers['content-length'] = String(size);
  const prior = req.headers['x-forwarded-for'];
  const peer = req.socket.remoteAddress ?? '';
  headers['x-forwarded-for'] = typeof prior === 'string' && prior !== '' ? `${prior}, ${peer}` : peer;
  return headers;
}

/** Sends the request to `e`; resolves false when the connection failed before any answer (try another). */
function forward(
  c: ProxyContext,
  t: ProxyTarget,
  e: Endpoint,
  req: IncomingMessage,
  res: ServerResponse,
  body: readonly Buffer[],
  size: number,
  query: string,
): Promise<boolean> {
  return new Promise((done) => {
    const id = `${e.host}:${e.port}`;
    c.inFlight.set(id, (c.inFlight.get(id) ?? 0) + 1);
    let settled = false;
    const settle = (ok: boolean): void => {
      if (settled) return;
      settled = true;
      c.inFlight.set(id, (c.inFlight.get(id) ?? 1) - 1);
      done(ok);
    };
    const headers = forwardedHeaders(req, size);
    const up = httpRequest({ host: e.host, port: e.port, method: req.method ?? 'GET', path: `${t.rest}${query}`, headers }, (ur) => {
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(ur.headers)) if (v !== undefined && !DROPPED_RESPONSE_HEADERS.has(k)) out[k] = v;
      res.writeHead(ur.statusCode ?? 502, out);
      // Server-sent events stream through as they come (no buffering).
      ur.pipe(res);
      ur.on('end', () => settle(true));
      ur.on('error', () => {
        res.destroy();
        settle(true);
      });
      c.m.requests.inc({ namespace: t.namespace, inferenceservice: t.name, code: String(ur.statusCode ?? 502) });
    });
    up.on('error', (err) => {
      c.log(`activator: ${t.namespace}/${t.name} → ${e.name} (${id}): ${err.message}`);
      if (!res.headersSent) settle(false);
      else {
        // The answer had begun: the client must see it cut, not a truncated body that looks complete.
        res.destroy();
        settle(true);
      }
    });
    // The client went away: stop the engine's work for it too.
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    // The chunks as they came (no concatenated copy: a second buffer of the same size).
    for (const chunk of body) up.write(chunk);
    up.end();
  });
}

/**
 * The body as it arrives, each chunk counted by the ticket first; a refusal stops reading at once (the rest is
 * never buffered). Undefined when the client went away.
 */
function readCounted(req: IncomingMessage, ticket: Ticket, counted: boolean): Promise<{ chunks: Buffer[]; size: number } | Refusal | undefined> {
  return new Promise((done) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (r: { chunks: Buffer[]; size: number } | Refusal | undefined): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('aborted', onGone);
      req.socket?.off('close', onGone);
      done(r);
    };
    const onData = (c: Buffer): void => {
      // A declared length was counted whole at admission (the parser never reads past it).
      const r = counted ? undefined : ticket.grow(c.length);
      if (r !== undefined) {
        req.pause();
        chunks.length = 0;
        return stop(r);
      }
      chunks.push(c);
      size += c.length;
    };
    const onEnd = (): void => stop({ chunks, size });
    const onGone = (): void => stop(undefined);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('aborted', onGone);
    req.socket?.on('close', onGone);
  });
}

/**
 * Once the refusal is answered, what the client still sends is discarded, never buffered, for a moment (closing at
 * once would reset the connection before the client reads the answer: a lingering close), then the connection is cut.
 */
function discardThenCut(req: IncomingMessage, res: ServerResponse): void {
  res.once('finish', () => {
    if (req.complete) return;
    req.removeAllListeners('data');
    req.resume();
    const cut = setTimeout(() => req.socket.destroy(), LINGER_MS);
    cut.unref();
    req.once('end', () => clearTimeout(cut));
    req.once('close', () => clearTimeout(cut));
  });
}

async function proxy(c: ProxyContext, req: IncomingMessage, res: ServerResponse, t: ProxyTarget, query: string): Promise<void> {
  const { m, budget } = c;
  const labels = { namespace: t.namespace, inferenceservice: t.name };
  const fail = (status: number, message: string, headers?: Record<string, string>): void => {
    m.requests.inc({ ...labels, code: String(status) });
    sendError(res, status, message, headers);
  };
  if (c.draining) return fail(503, 'the activator is shutting down', { 'Retry-After': '1' });
  if (c.namespace !== undefined && t.namespace !== c.namespace) return fail(404, `this activator serves namespace ${c.namespace} only, not ${t.namespace}`);
  const key = svcKey(t.namespace, serviceName(t.name));
  const tenant = `${t.namespace}/${t.name}`;
  let eps: readonly Endpoint[] = c.book.endpointsOf(key);
  if (eps.length === 0 && !(await c.exists(t))) return fail(404, `InferenceService ${tenant} not found`);
  const cl = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  const declared = cl === undefined || chunked ? 0 : Number(cl);
  if (!Number.isSafeInteger(declared) || declared < 0) return fail(400, `Content-Length: ${JSON.stringify(cl)} is not a number of bytes`);
  const showBytes = (): void => void m.heldBytes.set(labels, budget.bytesUsed(tenant));
  // Refused before the body is read (or while it arrives).
  const refuse = (r: Refusal): void => {
    discardThenCut(req, res);
    m.refused.inc({ ...labels, reason: r.reason });
    // A service at zero still activates (unless the request itself is wrong): its callers retry after
    // Retry-After and find a replica.
    if (r.status !== 413 && c.book.endpointsOf(key).length === 0) {
      const s = c.book.state(key);
      if (Date.now() - s.lastStampMs >= c.restampMs) void stamp(c, t, s);
    }
    fail(r.status, r.message, r.status === 413 ? {} : { 'Retry-After': r.status === 429 ? '5' : '1' });
  };
  const admitted = budget.admit(tenant, declared);
  if (!('release' in admitted)) return refuse(admitted);
  const ticket = admitted;
  try {
    if (eps.length === 0) {
      const r = ticket.hold();
      if (r !== undefined) return refuse(r);
    }
    showBytes();
    const body = await readCounted(req, ticket, !chunked);
    showBytes();
    if (body === undefined) return;
    if ('reason' in body) return refuse(body);
    if (eps.length === 0) {
      const got = await hold(c, t, key, res);
      ticket.unhold();
      if (got === undefined) {
        if (res.destroyed) return;
        return fail(503, `no replica of InferenceService ${tenant} became ready within ${Math.round(c.holdTimeoutMs / 1000)}s (activation requested)`, {
          'Retry-After': '5',
        });
      }
      eps = got;
      if (eps.length === 0) return fail(503, 'the activator is shutting down', { 'Retry-After': '1' });
    }
    const tried = new Set<string>();
    for (let attempt = 0; attempt < 2; attempt++) {
      const left = eps.filter((e) => !tried.has(`${e.host}:${e.port}`));
      const e = pickEndpoint(left, (x) => c.inFlight.get(`${x.host}:${x.port}`) ?? 0, c.turn++);
      if (e === undefined) break;
      tried.add(`${e.host}:${e.port}`);
      if (await forward(c, t, e, req, res, body.chunks, body.size, query)) return;
      eps = c.book.endpointsOf(key);
    }
    fail(502, `no replica of InferenceService ${tenant} accepted the connection`);
  } finally {
    // Forwarded, failed, timed out or the client left: every byte goes back to the budget.
    ticket.release();
    showBytes();
  }
}

function send(res: ServerResponse, status: number, text: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
  res.end(text);
}

/** The budget from the options, the memory limit's defaults filling in what they leave out. */
function holdBudget(o: ActivatorOptions): HoldBudget {
  const derived = budgetFromMemory(o.memoryLimitBytes ?? DEFAULT_MEMORY_LIMIT, o.maxBodyBytes);
  const maxHeldBytes = o.maxHeldBytes ?? derived.maxHeldBytes;
  return new HoldBudget({
    ...derived,
    maxHeldBytes,
    maxHeldRequests: o.maxHeldRequests ?? derived.maxHeldRequests,
    maxHeldPerService: o.maxHeldPerService ?? derived.maxHeldPerService,
    maxBodyBytes: o.maxBodyBytes ?? Math.min(16 << 20, Math.floor(maxHeldBytes / 4)),
  });
}

export async function startActivator(client: KubeClient, o: ActivatorOptions): Promise<Activator> {
  const log = o.log ?? (() => undefined);
  const budget = holdBudget(o);
  const registry = new Registry();
  const c: ProxyContext = {
    client,
    namespace: o.namespace,
    log,
    m: activatorMetrics(registry, budget),
    budget,
    book: new EndpointBook(o.portName ?? 'http', o.resolveAddress ?? ((ip: string) => ip)),
    inFlight: new Map(),
    holdTimeoutMs: o.holdTimeoutMs ?? 300_000,
    restampMs: o.restampMs ?? 5000,
    exists: existenceCache(client),
    turn: 0,
    draining: false,
  };
  const { book, inFlight } = c;
  let synced = false;
  const base = o.namespace === undefined ? '/apis/discovery.k8s.io/v1/endpointslices' : `/apis/discovery.k8s.io/v1/namespaces/${o.namespace}/endpointslices`;
  const reflector = new Reflector<EndpointSliceLike & { metadata?: { name?: string; namespace?: string } }>(
    client,
    base,
    {
      add: (obj) => book.put(obj),
      update: (obj) => book.put(obj),
      delete: (obj) => book.delete(obj),
      synced: () => {
        synced = true;
      },
      error: (e) => log(`activator: endpointslice watch: ${e.message}`),
    },
    // Only the Services the InferenceService controller made carry this label (the slice controller copies it).
    { labelSelector: LABEL.inferenceService },
  );
  await reflector.start();

  const server = await startSecureServer({
    port: o.port,
    ...(o.host !== undefined ? { host: o.host } : {}),
    ...(o.tls !== undefined ? { tls: o.tls } : {}),
    ...(o.clientCa !== undefined ? { clientCa: o.clientCa } : {}),
    authn: o.authn,
    authz: o.authz,
    log,
    handler: (req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      switch (url.pathname) {
        case '/healthz':
        case '/livez':
          return send(res, 200, 'ok\n');
        case '/readyz':
          if (c.draining) return send(res, 503, 'not ready: shutting down\n');
          return synced ? send(res, 200, 'ok\n') : send(res, 503, 'not ready: endpointslices not listed yet\n');
        case '/metrics':
          registry.metrics().then(
            (text) => send(res, 200, text, registry.contentType),
            () => send(res, 500, 'metrics unavailable\n'),
          );
          return;
      }
      const p = parseProxyPath(url.pathname);
      if (!p.ok) return sendError(res, 404, p.message);
      proxy(c, req, res, p.target, url.search).catch((e: unknown) => {
        log(`activator: ${url.pathname}: ${(e as Error).message}`);
        sendError(res, 500, (e as Error).message);
      });
    },
  });
  log(`activator: serving ${server.url}${o.namespace === undefined ? '' : ` (namespace ${o.namespace})`}`);
  return {
    url: server.url,
    port: server.port,
    registry,
    held: (ns, name) => book.states.get(svcKey(ns, serviceName(name)))?.held ?? 0,
    setTls: (p) => server.setTls(p),
    close: async (d = {}) => {
      c.draining = true;
      // Held requests and those on their way to an engine may finish (the pod's grace period covers a hold).
      const deadline = performance.now() + (d.drainMs ?? 0);
      const busy = (): boolean => [...book.states.values()].some((x) => x.held > 0) || [...inFlight.values()].some((n) => n > 0);
      while (busy() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      reflector.stop();
      for (const x of book.states.values()) {
        if (x.timer !== undefined) clearInterval(x.timer);
        for (const w of [...x.waiters]) w.resolve([]);
      }
      await server.close();
    },
  };
}
