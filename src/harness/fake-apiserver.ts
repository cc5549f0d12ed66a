/**
 * An in-process fake of the kube-apiserver for unit tests of our own client, reflector and leader election
 * (ADR 0042): HTTPS with a throw-away self-signed certificate (made by the `openssl` CLI, so the client's real
 * TLS path with a CA from the kubeconfig is exercised), bearer-token auth, and enough of the REST protocol for
 * them: create / get / put (resourceVersion precondition) / merge patch / delete, list with limit + continue,
 * watch from a resourceVersion (replayed from an event history; older than the last `compact()` → 410 Expired,
 * as an ERROR event in a 200 stream like the real server, or as an HTTP 410), and Status objects for errors.
 *
 * Not a Kubernetes: no selectors, no validation, no admission, no subresource semantics (`/status` updates
 * the whole object), pagination reads the live state rather than a snapshot. Anything that needs those runs
 * against the real control plane (harness/control-plane.ts).
 *
 * It also counts what the client did to it: TLS connections accepted, requests in flight (now and the
 * maximum), and a log of every request. `intercept()` lets a test hold, fail or answer a request itself.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

export interface FakeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string; creationTimestamp?: string; [k: string]: unknown };
  [k: string]: unknown;
}

export interface FakeRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
  readonly watch: boolean;
  /** performance.now() when the request arrived. */
  readonly atMs: number;
}

/** Returns true when it has answered the request itself; false (or undefined) lets the fake answer. */
export type Interceptor = (req: FakeRequest, res: ServerResponse) => boolean | undefined | Promise<boolean | undefined>;

export interface FakeApiServerOptions {
  /** The bearer token required of every request (default: a random one, put in kubeConfig()). */
  readonly token?: string;
  /** Caps every list page at this many items, whatever `limit` asks (to exercise `continue`). */
  readonly maxPageSize?: number;
  /** How a watch from a compacted resourceVersion fails: an ERROR event in a 200 stream (the real server's way) or an HTTP 410. */
  readonly goneAs?: 'event' | 'status';
}

interface Ref {
  /** `/api/v1/pods`, `/apis/coordination.k8s.io/v1/leases`: the resource, whatever the namespace. */
  readonly resource: string;
  readonly plural: string;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
}

interface StoredEvent {
  readonly rv: number;
  readonly resource: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: FakeObject;
}

interface OpenWatch {
  readonly resource: string;
  readonly namespace: string | undefined;
  readonly res: ServerResponse;
}

let certPromise: Promise<{ key: string; cert: string }> | undefined;

/** One self-signed certificate for 127.0.0.1 per test process (an EC key: milliseconds to make). */
function selfSignedCert(): Promise<{ key: string; cert: string }> {
  certPromise ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sits-fake-apiserver-'));
    try {
      const args = [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=fake-apiserver',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ];
      await new Promise<void>((resolve, reject) =>
        execFile('openssl', args, (err, _out, stderr) =>
          err === null ? resolve() : reject(new Error(`openssl (needed for the fake apiserver's certificate): ${err.message} ${stderr}`)),
        ),
      );
      return { key: await readFile(join(dir, 'key.pem'), 'utf8'), cert: await readFile(join(dir, 'cert.pem'), 'utf8') };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  })();
  return certPromise;
}

function parsePath(path: string): Ref | undefined {
  const segs = path.split('/').filter((s) => s !== '');
  let prefixLen: number;
  if (segs[0] === 'api' && segs.length >= 3) prefixLen = 2;
  else if (segs[0] === 'apis' && segs.length >= 4) prefixLen = 3;
  else return undefined;
  const prefix = `/${segs.slice(0, prefixLen).join('/')}`;
  const rest = segs.slice(prefixLen);
  // namespaces/<ns>/<plural>[/<name>[/<subresource>]] is namespaced; anything shorter is cluster-scoped.
  if (rest[0] === 'namespaces' && rest.length >= 3) return { resource: `${prefix}/${rest[2]}`, plural: rest[2] ?? '', namespace: rest[1], name: rest[3] };
  return { resource: `${prefix}/${rest[0]}`, plural: rest[0] ?? '', namespace: undefined, name: rest[1] };
}

const keyOf = (namespace: string | undefined, name: string): string => (namespace === undefined || namespace === '' ? name : `${namespace}/${name}`);

/** RFC 7386 JSON merge patch. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

const clone = <T>(x: T): T => structuredClone(x);

export class FakeApiServer {
  readonly token: string;
  /** TLS connections accepted so far. */
  connections = 0;
  /** Requests (watches excluded) being handled right now, and the most at any one time. */
  inFlight = 0;
  maxInFlight = 0;
  /** Every request, in arrival order. */
  readonly requests: FakeRequest[] = [];

  private readonly store = new Map<string, Map<string, FakeObject>>();
  private readonly history: StoredEvent[] = [];
  private rv = 100;
  private compactedRv = 0;
  private readonly watches = new Set<OpenWatch>();
  private readonly sockets = new Set<Socket>();
  private interceptors: Interceptor[] = [];

  private constructor(
    private readonly server: Server,
    private readonly ca: string,
    private readonly opts: FakeApiServerOptions,
  ) {
    this.token = opts.token ?? randomUUID();
  }

  static async start(opts: FakeApiServerOptions = {}): Promise<FakeApiServer> {
    const { key, cert } = await selfSignedCert();
    const server = createServer({ key, cert });
    const fake = new FakeApiServer(server, cert, opts);
    server.on('secureConnection', (s: Socket) => {
      fake.connections++;
      fake.sockets.add(s);
      s.on('close', () => fake.sockets.delete(s));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void fake.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return fake;
  }

  get url(): string {
    const addr = this.server.address();
    if (addr === null || typeof addr === 'string') throw new Error('fake apiserver is not listening');
    return `https://127.0.0.1:${addr.port}`;
  }

  /** A kubeconfig for this server: its CA and the bearer token (or another token, to test auth failures). */
  kubeConfig(token = this.token): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, caData: Buffer.from(this.ca).toString('base64') }],
      users: [{ name: 'fake', token }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'fake' }],
      currentContext: 'fake',
    });
    return kc;
  }

  /** Adds an interceptor (run in order before the fake's own handling); returns a function that removes it. */
  intercept(fn: Interceptor): () => void {
    this.interceptors.push(fn);
    return () => {
      this.interceptors = this.interceptors.filter((f) => f !== fn);
    };
  }

  /** The current resourceVersion (the last write's). */
  get resourceVersion(): string {
    return String(this.rv);
  }

  /** Watch streams open right now. */
  get openWatches(): number {
    return this.watches.size;
  }

  /** Requests matching a filter (by method, watch or not, path prefix). */
  requestsWhere(f: { method?: string; watch?: boolean; path?: string }): FakeRequest[] {
    return this.requests.filter(
      (r) =>
        (f.method === undefined || r.method === f.method) &&
        (f.watch === undefined || r.watch === f.watch) &&
        (f.path === undefined || r.path.startsWith(f.path)),
    );
  }

  // --- the state, as a test sets it up (each write is an event watches see) ---

  /** Creates an object under a collection path such as `/api/v1/namespaces/ns/pods`. */
  create(collectionPath: string, obj: FakeObject): FakeObject {
    const ref = parsePath(collectionPath);
    if (ref === undefined) throw new Error(`not a resource path: ${collectionPath}`);
    const r = this.doCreate(ref, obj);
    if (r.err !== undefined) throw new Error(r.err.message);
    return r.ok;
  }

  /** The object at an object path, or undefined. */
  get(objectPath: string): FakeObject | undefined {
    const ref = parsePath(objectPath);
    if (ref?.name === undefined) return undefined;
    const o = this.store.get(ref.resource)?.get(keyOf(ref.namespace, ref.name));
    return o === undefined ? undefined : clone(o);
  }

  /** Replaces (no precondition) or merge-patches the object at a path. */
  update(objectPath: string, change: (o: FakeObject) => FakeObject): FakeObject {
    const cur = this.get(objectPath);
    if (cur === undefined) throw new Error(`not found: ${objectPath}`);
    const ref = parsePath(objectPath) as Ref;
    return this.write(ref, 'MODIFIED', change(cur));
  }

  delete(objectPath: string): void {
    const ref = parsePath(objectPath);
    const cur = ref?.name === undefined ? undefined : this.store.get(ref.resource)?.get(keyOf(ref.namespace, ref.name));
    if (ref === undefined || cur === undefined) throw new Error(`not found: ${objectPath}`);
    this.write(ref, 'DELETED', cur);
  }

  /** Forgets the event history: a watch from any resourceVersion before now gets 410 Expired. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history.length = 0;
  }

  /** Ends every open watch stream cleanly (as the server's timeoutSeconds does). */
  closeWatches(): void {
    for (const w of this.watches) w.res.end();
    this.watches.clear();
  }

  /** Breaks every open watch stream (the connection is reset mid-response). */
  breakWatches(): void {
    for (const w of this.watches) w.res.destroy();
    this.watches.clear();
  }

  /** Sends a BOOKMARK carrying the current resourceVersion to every open watch. */
  bookmark(): void {
    for (const w of this.watches) this.send(w.res, { type: 'BOOKMARK', object: { metadata: { resourceVersion: this.resourceVersion } } });
  }

  async close(): Promise<void> {
    this.breakWatches();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // --- the protocol ---

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'https://fake');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    const watch = u.searchParams.get('watch') === 'true' || u.searchParams.get('watch') === '1';
    const fr: FakeRequest = {
      method: req.method ?? 'GET',
      path: u.pathname,
      query: u.searchParams,
      headers: req.headers,
      body,
      watch,
      atMs: performance.now(),
    };
    this.requests.push(fr);
    if (!watch) {
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      // 'finish' (handed to the OS, before the client can read it) or 'close' (destroyed), whichever is first.
      let counted = true;
      const done = (): void => {
        if (counted) this.inFlight--;
        counted = false;
      };
      res.once('finish', done);
      res.once('close', done);
    }
    try {
      for (const f of [...this.interceptors]) if ((await f(fr, res)) === true) return;
      if (req.headers.authorization !== `Bearer ${this.token}`) return this.status(res, 401, 'Unauthorized', 'Unauthorized');
      this.route(fr, res);
    } catch (e) {
      if (!res.headersSent) this.status(res, 500, 'InternalError', (e as Error).message);
      else res.destroy();
    }
  }

  private route(r: FakeRequest, res: ServerResponse): void {
    const ref = parsePath(r.path);
    if (ref === undefined) return this.status(res, 404, 'NotFound', `the server could not find the requested resource`);
    const items = this.store.get(ref.resource) ?? new Map<string, FakeObject>();
    const what = `${ref.plural} "${ref.name ?? ''}"`;
    if (ref.name === undefined) {
      if (r.method === 'GET' && r.watch) return this.watch(ref, r, res);
      if (r.method === 'GET') return this.list(ref, items, r, res);
      if (r.method === 'POST') {
        const created = this.doCreate(ref, r.body as FakeObject);
        return created.err !== undefined ? this.status(res, created.err.code, created.err.reason, created.err.message) : this.json(res, 201, created.ok);
      }
      return this.status(res, 405, 'MethodNotAllowed', `${r.method} is not supported on a collection`);
    }
    const key = keyOf(ref.namespace, ref.name);
    const cur = items.get(key);
    if (cur === undefined) return this.status(res, 404, 'NotFound', `${what} not found`);
    if (r.method === 'GET') return this.json(res, 200, cur);
    if (r.method === 'DELETE') return this.json(res, 200, this.write(ref, 'DELETED', cur));
    if (r.method === 'PUT' || r.method === 'PATCH') {
      const next = (r.method === 'PUT' ? clone(r.body) : mergePatch(clone(cur), r.body)) as FakeObject;
      const want = next.metadata?.resourceVersion;
      if (want !== undefined && want !== '' && want !== cur.metadata.resourceVersion)
        return this.status(
          res,
          409,
          'Conflict',
          `Operation cannot be fulfilled on ${what}: the object has been modified; please apply your changes to the latest version and try again`,
        );
      const { uid, creationTimestamp } = cur.metadata;
      next.metadata = {
        ...next.metadata,
        name: ref.name,
        ...(ref.namespace === undefined ? {} : { namespace: ref.namespace }),
        ...(uid === undefined ? {} : { uid }),
        ...(creationTimestamp === undefined ? {} : { creationTimestamp }),
      };
      return this.json(res, 200, this.write(ref, 'MODIFIED', next));
    }
    return this.status(res, 405, 'MethodNotAllowed', `${r.method} is not supported`);
  }

  private doCreate(ref: Ref, obj: FakeObject): { ok: FakeObject; err?: undefined } | { err: { code: number; reason: string; message: string } } {
    const name = obj?.metadata?.name;
    if (typeof name !== 'string' || name === '') return { err: { code: 422, reason: 'Invalid', message: `${ref.plural}: metadata.name: Required value` } };
    if (this.store.get(ref.resource)?.has(keyOf(ref.namespace, name)) === true)
      return { err: { code: 409, reason: 'AlreadyExists', message: `${ref.plural} "${name}" already exists` } };
    const o = clone(obj);
    o.metadata = {
      ...o.metadata,
      ...(ref.namespace === undefined ? {} : { namespace: ref.namespace }),
      uid: randomUUID(),
      creationTimestamp: new Date().toISOString(),
    };
    return { ok: this.write(ref, 'ADDED', o) };
  }

  /** Applies a write with the next resourceVersion, records it and sends it to the matching watches. */
  private write(ref: Ref, type: StoredEvent['type'], obj: FakeObject): FakeObject {
    const o = clone(obj);
    o.metadata = { ...o.metadata, resourceVersion: String(++this.rv) };
    let items = this.store.get(ref.resource);
    if (items === undefined) this.store.set(ref.resource, (items = new Map()));
    const key = keyOf(o.metadata.namespace, o.metadata.name);
    if (type === 'DELETED') items.delete(key);
    else items.set(key, o);
    const ev: StoredEvent = { rv: this.rv, resource: ref.resource, type, object: o };
    this.history.push(ev);
    for (const w of this.watches) if (this.matches(w, ev)) this.send(w.res, { type: ev.type, object: ev.object });
    return clone(o);
  }

  private matches(w: { resource: string; namespace: string | undefined }, ev: StoredEvent): boolean {
    return ev.resource === w.resource && (w.namespace === undefined || ev.object.metadata.namespace === w.namespace);
  }

  private inScope(ref: Ref, items: Map<string, FakeObject>): FakeObject[] {
    return [...items.entries()]
      .filter(([, o]) => ref.namespace === undefined || o.metadata.namespace === ref.namespace)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, o]) => o);
  }

  private list(ref: Ref, items: Map<string, FakeObject>, r: FakeRequest, res: ServerResponse): void {
    const all = this.inScope(ref, items);
    let after = '';
    let listRv = this.resourceVersion;
    const cont = r.query.get('continue');
    if (cont !== null && cont !== '') {
      const tok = JSON.parse(Buffer.from(cont, 'base64').toString('utf8')) as { after: string; rv: string };
      after = tok.after;
      listRv = tok.rv;
    }
    const limitQ = Number(r.query.get('limit') ?? '0');
    let limit = limitQ > 0 ? limitQ : Number.POSITIVE_INFINITY;
    if (this.opts.maxPageSize !== undefined) limit = Math.min(limit, this.opts.maxPageSize);
    const rest = all.filter((o) => keyOf(o.metadata.namespace, o.metadata.name) > after);
    const page = rest.slice(0, limit);
    const last = page.at(-1);
    const more = rest.length > page.length && last !== undefined;
    const metadata: Record<string, unknown> = { resourceVersion: listRv };
    if (more) {
      metadata.continue = Buffer.from(JSON.stringify({ after: keyOf(last.metadata.namespace, last.metadata.name), rv: listRv })).toString('base64');
      metadata.remainingItemCount = rest.length - page.length;
    }
    this.json(res, 200, { kind: 'List', apiVersion: 'v1', metadata, items: page });
  }

  private watch(ref: Ref, r: FakeRequest, res: ServerResponse): void {
    const rvQ = r.query.get('resourceVersion') ?? '';
    const from = rvQ === '' || rvQ === '0' ? undefined : Number(rvQ);
    const gone = from !== undefined && from < this.compactedRv;
    const expired = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `too old resource version: ${rvQ} (${this.compactedRv})`,
      reason: 'Expired',
      code: 410,
    };
    if (gone && this.opts.goneAs === 'status') return this.json(res, 410, expired);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    if (gone) {
      this.send(res, { type: 'ERROR', object: expired });
      res.end();
      return;
    }
    const w: OpenWatch = { resource: ref.resource, namespace: ref.namespace, res };
    // No resourceVersion: the current state as ADDED events first (the real server's "most recent" start).
    if (from === undefined) for (const o of this.inScope(ref, this.store.get(ref.resource) ?? new Map())) this.send(res, { type: 'ADDED', object: o });
    else for (const ev of this.history) if (ev.rv > from && this.matches(w, ev)) this.send(res, { type: ev.type, object: ev.object });
    this.watches.add(w);
    const timeoutSec = Number(r.query.get('timeoutSeconds') ?? '0');
    const timer = timeoutSec > 0 ? setTimeout(() => res.end(), timeoutSec * 1000) : undefined;
    res.once('close', () => {
      if (timer !== undefined) clearTimeout(timer);
      this.watches.delete(w);
    });
  }

  private send(res: ServerResponse, ev: unknown): void {
    if (!res.writableEnded) res.write(`${JSON.stringify(ev)}\n`);
  }

  private json(res: ServerResponse, code: number, body: unknown): void {
    const b = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(b) });
    res.end(b);
  }

  private status(res: ServerResponse, code: number, reason: string, message: string): void {
    this.json(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
  }
}
