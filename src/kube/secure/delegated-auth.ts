/**
 * Kubernetes authn/authz delegation for SITS's own HTTPS endpoints (webhook, metrics, extender), as
 * kube-scheduler's secure port does it (k8s.io/apiserver `DelegatingAuthenticatorConfig` /
 * `DelegatingAuthorizerConfig`):
 * - authentication: a client certificate verified against the client CA, or a bearer token checked with a
 *   TokenReview (for the server's audiences, if it has its own); successful reviews are cached 2 min, failed
 *   ones 10 s (kube's defaults), in a bounded LRU;
 * - authorization: a SubjectAccessReview for the non-resource route the path falls under and the lower-cased
 *   HTTP verb (`post /validate`), or for a resource where a path stands for one (the activator's
 *   `inferenceservices/proxy`), cached 10 s allowed / 10 s denied; a path the server does not serve is 404
 *   without a review;
 * - every review through a ReviewGate (ADR 0177): few in flight, a bounded queue, a rate for unknown callers;
 *   beyond, the request is answered 429 at once;
 * - always-allowed paths (`/healthz`, `/readyz`, `/livez`), as `--authorization-always-allow-paths`.
 * A request without credentials is `system:anonymous` in `system:unauthenticated`, so RBAC decides, exactly as
 * kube-scheduler does.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { KubeClient } from '../client/client.ts';

export interface Caller {
  readonly user: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

export const ANONYMOUS: Caller = { user: 'system:anonymous', groups: ['system:unauthenticated'] };

export type AuthnResult = { readonly ok: true; readonly caller: Caller } | { readonly ok: false; readonly reason: string };

export interface Authenticator {
  /** undefined: the request carries no credentials this authenticator knows. */
  authenticate(req: IncomingMessage): Promise<AuthnResult | undefined>;
}

export interface Decision {
  readonly allowed: boolean;
  readonly reason: string;
  /** The path is none the server serves (answered 404, without a review). */
  readonly notFound?: boolean;
}

export interface Authorizer {
  authorize(caller: Caller, attrs: { readonly path: string; readonly verb: string }): Promise<Decision>;
}

/** A TTL cache with a size bound, least recently used evicted first (Map keeps insertion order; a hit re-inserts). */
class TtlCache<V> {
  private readonly m = new Map<string, { v: V; until: number }>();
  constructor(
    private readonly max: number,
    private readonly now: () => number,
  ) {}
  get size(): number {
    return this.m.size;
  }
  get(k: string): V | undefined {
    const e = this.m.get(k);
    if (e === undefined) return undefined;
    this.m.delete(k);
    if (e.until <= this.now()) return undefined;
    this.m.set(k, e);
    return e.v;
  }
  set(k: string, v: V, ttlMs: number): void {
    this.m.delete(k);
    while (this.m.size >= this.max) {
      const first = this.m.keys().next();
      if (first.done === true) break;
      this.m.delete(first.value);
    }
    this.m.set(k, { v, until: this.now() + ttlMs });
  }
}

/** A review refused at once because the auth path is saturated: the server answers 429 with Retry-After. */
export class AuthOverloaded extends Error {
  readonly code = 'AuthOverloaded';
}

/**
 * How many reviews reach the apiserver. Two lanes share `maxInFlight` slots:
 * - `unknown` (a token never seen to authenticate, an anonymous caller's SubjectAccessReview): at most `perSecond`
 *   reviews a second (token bucket of `burst`), `maxQueued` waiting; beyond either, AuthOverloaded at once;
 * - `known` (a token that authenticated before, an authenticated caller's SubjectAccessReview): not rate-limited
 *   and served first, `maxQueued` waiting. A flood of made-up tokens or anonymous calls cannot take a real
 *   caller's turn; making new known keys takes new valid credentials, each paid for in the `unknown` lane.
 */
export interface ReviewLimits {
  /** Reviews in flight at once (default 4). */
  readonly maxInFlight?: number;
  /** Reviews waiting per lane (default 64). */
  readonly maxQueued?: number;
  /** `unknown`-lane reviews a second (default 20). */
  readonly perSecond?: number;
  /** `unknown`-lane burst (default 40). */
  readonly burst?: number;
}

export type ReviewLane = 'known' | 'unknown';

export class ReviewGate {
  private readonly maxInFlight: number;
  private readonly maxQueued: number;
  private readonly perSecond: number;
  private readonly burst: number;
  private tokens: number;
  private last: number;
  private inFlight = 0;
  private readonly waiting: Record<ReviewLane, (() => void)[]> = { known: [], unknown: [] };
  /** Reviews sent and refused, per lane (tests, metrics). */
  readonly stats = { sent: 0, refused: 0, sentKnown: 0 };

  constructor(
    l: ReviewLimits = {},
    private readonly now: () => number = () => performance.now(),
  ) {
    this.maxInFlight = l.maxInFlight ?? 4;
    this.maxQueued = l.maxQueued ?? 64;
    this.perSecond = l.perSecond ?? 20;
    this.burst = l.burst ?? 40;
    for (const [k, v] of Object.entries({ maxInFlight: this.maxInFlight, maxQueued: this.maxQueued, perSecond: this.perSecond, burst: this.burst })) {
      if (!Number.isFinite(v) || v < 1) throw new Error(`review limits: ${k} must be at least 1, got ${v}`);
    }
    this.tokens = this.burst;
    this.last = now();
  }

  async run<T>(lane: ReviewLane, fn: () => Promise<T>): Promise<T> {
    if (this.waiting[lane].length >= this.maxQueued) return this.refuse(`${this.maxQueued} reviews already waiting`);
    if (lane === 'unknown') {
      const t = this.now();
      this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.perSecond);
      this.last = t;
      if (this.tokens < 1) return this.refuse(`over ${this.perSecond} reviews/s for unknown callers`);
      this.tokens -= 1;
    }
    if (this.inFlight < this.maxInFlight) this.inFlight++;
    else await new Promise<void>((resolve) => this.waiting[lane].push(resolve));
    this.stats.sent++;
    if (lane === 'known') this.stats.sentKnown++;
    try {
      return await fn();
    } finally {
      // The slot goes to the next waiter, known callers first; only with none is it freed.
      const next = this.waiting.known.shift() ?? this.waiting.unknown.shift();
      if (next !== undefined) next();
      else this.inFlight--;
    }
  }

  private refuse(why: string): never {
    this.stats.refused++;
    throw new AuthOverloaded(`authentication/authorization busy: ${why}`);
  }
}

export interface CacheOptions {
  readonly allowTtlMs?: number;
  readonly denyTtlMs?: number;
  readonly maxEntries?: number;
  readonly now?: () => number;
  /** Shared limit of the reviews sent (default: one of its own with the default limits). */
  readonly gate?: ReviewGate;
}

const bearer = (req: IncomingMessage): string | undefined => {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
};

interface TokenReviewStatus {
  readonly status?: {
    readonly authenticated?: boolean;
    readonly error?: string;
    readonly audiences?: string[];
    readonly user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  };
}

/** kube-apiserver's webhook token authenticator keeps answers 2 min (`--authentication-token-webhook-cache-ttl`). */
export const TOKEN_ALLOW_TTL_MS = 120_000;
/** kube's delegating authenticator keeps failures 10 s (`DelegatingAuthenticationOptions.CacheTTL`). */
export const TOKEN_DENY_TTL_MS = 10_000;

export interface TokenReviewOptions extends CacheOptions {
  /**
   * The audiences this server accepts (kube's `APIAudiences`, kube-apiserver's `--api-audiences`): sent as the
   * TokenReview's `spec.audiences`, and a token the apiserver does not find valid for one of them is refused.
   * Unset: the apiserver's own audiences, i.e. any token meant for the apiserver.
   */
  readonly audiences?: readonly string[];
}

export interface CountedAuthenticator extends Authenticator {
  /** Cached answers (bounded by maxEntries). */
  readonly size: () => number;
}

/** Bearer tokens checked by the apiserver (TokenReview); needs `create tokenreviews`. */
export function tokenReviewAuthenticator(client: KubeClient, opts: TokenReviewOptions = {}): CountedAuthenticator {
  const now = opts.now ?? (() => performance.now());
  const max = opts.maxEntries ?? 4096;
  const cache = new TtlCache<AuthnResult>(max, now);
  // Tokens that authenticated once: their next review is in the `known` lane (a flood does not delay them).
  const known = new TtlCache<true>(max, now);
  const gate = opts.gate ?? new ReviewGate({}, now);
  const audiences = opts.audiences === undefined || opts.audiences.length === 0 ? undefined : [...opts.audiences];
  const inFlight = new Map<string, Promise<AuthnResult>>();
  return {
    size: () => cache.size,
    async authenticate(req) {
      const token = bearer(req);
      if (token === undefined) return undefined;
      const key = createHash('sha256').update(token).digest('hex');
      const hit = cache.get(key);
      if (hit !== undefined) return hit;
      let p = inFlight.get(key);
      if (p === undefined) {
        p = gate
          .run(known.get(key) === true ? 'known' : 'unknown', async (): Promise<AuthnResult> => {
            const spec = { token, ...(audiences !== undefined ? { audiences } : {}) };
            const r = await client.post<TokenReviewStatus>('/apis/authentication.k8s.io/v1/tokenreviews', {
              apiVersion: 'authentication.k8s.io/v1',
              kind: 'TokenReview',
              spec,
            });
            const u = r.status?.user;
            // As kube's webhook authenticator: with audiences asked for, the answer must name one of them.
            const audOk = audiences === undefined || (r.status?.audiences ?? []).some((a) => audiences.includes(a));
            const res: AuthnResult =
              r.status?.authenticated === true && typeof u?.username === 'string' && audOk
                ? {
                    ok: true,
                    caller: {
                      user: u.username,
                      ...(u.uid !== undefined ? { uid: u.uid } : {}),
                      groups: u.groups ?? [],
                      ...(u.extra !== undefined ? { extra: u.extra } : {}),
                    },
                  }
                : {
                    ok: false,
                    reason:
                      r.status?.authenticated === true && !audOk
                        ? `token audiences ${JSON.stringify(r.status.audiences ?? [])} are not ${JSON.stringify(audiences)}`
                        : (r.status?.error ?? 'token not authenticated'),
                  };
            cache.set(key, res, res.ok ? (opts.allowTtlMs ?? TOKEN_ALLOW_TTL_MS) : (opts.denyTtlMs ?? TOKEN_DENY_TTL_MS));
            if (res.ok) known.set(key, true, 3_600_000);
            return res;
          })
          .finally(() => inFlight.delete(key));
        inFlight.set(key, p);
      }
      return p;
    },
  };
}

/**
 * Client certificates verified by the TLS layer against the client CA (the server asks for one and checks it
 * with `requestCert`; an unverified one is refused here). User = CN, groups = O, as the apiserver maps them.
 */
export function clientCertAuthenticator(): Authenticator {
  return {
    authenticate(req) {
      const sock = req.socket as TLSSocket;
      if (typeof sock.getPeerCertificate !== 'function') return Promise.resolve(undefined);
      const cert = sock.getPeerCertificate();
      if (cert === null || Object.keys(cert).length === 0) return Promise.resolve(undefined);
      if (!sock.authorized) return Promise.resolve({ ok: false, reason: `client certificate not verified: ${String(sock.authorizationError)}` });
      const cn = cert.subject.CN;
      const o = cert.subject.O;
      const user = Array.isArray(cn) ? cn[0] : cn;
      if (user === undefined || user === '') return Promise.resolve({ ok: false, reason: 'client certificate without a common name' });
      const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
      return Promise.resolve({ ok: true, caller: { user, groups: [...groups, 'system:authenticated'] } });
    },
  };
}

/** The first authenticator that recognises credentials decides; none → anonymous. */
export function unionAuthenticator(...as: readonly Authenticator[]): Authenticator {
  return {
    async authenticate(req) {
      for (const a of as) {
        const r = await a.authenticate(req);
        if (r !== undefined) return r;
      }
      return undefined;
    },
  };
}

interface SarStatus {
  readonly status?: { readonly allowed?: boolean; readonly denied?: boolean; readonly reason?: string; readonly evaluationError?: string };
}

/** A SubjectAccessReview's resourceAttributes (authorization.k8s.io/v1). */
export interface ResourceAttributes {
  readonly namespace: string;
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly name?: string;
}

export interface SarOptions extends CacheOptions {
  /**
   * Paths that stand for a resource (a proxy subresource, as the apiserver's `services/proxy`): their attributes;
   * undefined for a path, or without this option, the review is for the non-resource path and verb.
   */
  readonly resourceFor?: (path: string, verb: string) => ResourceAttributes | undefined;
  /**
   * The non-resource paths the server serves: exact (`/metrics`) or a prefix (`/dashboard/*`, reviewed as that
   * pattern, which RBAC's `nonResourceURLs: [/dashboard/*]` matches). Any other path (and no resource) is not
   * found, without a review: a caller cannot make a review, or a cache entry, per made-up path.
   * Unset: every path is reviewed as it is (tests, benchmarks).
   */
  readonly paths?: readonly string[];
}

/** The route a path falls under (itself, or the `prefix/*` pattern), or undefined. */
export function routeOf(paths: readonly string[], path: string): string | undefined {
  for (const p of paths) {
    if (p.endsWith('/*') ? path.startsWith(p.slice(0, -1)) : path === p) return p;
  }
  return undefined;
}

/** kube's delegating authorizer keeps allowed and denied answers 10 s each (`DelegatingAuthorizationOptions`). */
export const SAR_TTL_MS = 10_000;

export interface CountedAuthorizer extends Authorizer {
  readonly size: () => number;
}

/** SubjectAccessReview for non-resource requests (or resources, `resourceFor`); needs `create subjectaccessreviews`. */
export function subjectAccessReviewAuthorizer(client: KubeClient, opts: SarOptions = {}): CountedAuthorizer {
  const now = opts.now ?? (() => performance.now());
  const cache = new TtlCache<Decision>(opts.maxEntries ?? 4096, now);
  const gate = opts.gate ?? new ReviewGate({}, now);
  const inFlight = new Map<string, Promise<Decision>>();
  return {
    size: () => cache.size,
    async authorize(c, attrs) {
      const resource = opts.resourceFor?.(attrs.path, attrs.verb);
      const path = resource !== undefined || opts.paths === undefined ? attrs.path : routeOf(opts.paths, attrs.path);
      if (path === undefined) return { allowed: false, notFound: true, reason: 'no such path' };
      // One review per resource or route, not per path: every path under one of them has the same answer.
      const key = JSON.stringify([c.user, c.uid ?? '', c.groups, c.extra ?? {}, resource ?? path, attrs.verb]);
      const hit = cache.get(key);
      if (hit !== undefined) return hit;
      // Concurrent requests for one key share one review (a burst of anonymous /metrics calls is one SAR).
      const pending = inFlight.get(key);
      if (pending !== undefined) return pending;
      const spec = {
        user: c.user,
        ...(c.uid !== undefined ? { uid: c.uid } : {}),
        groups: [...c.groups],
        ...(c.extra !== undefined ? { extra: c.extra } : {}),
        ...(resource !== undefined ? { resourceAttributes: { ...resource } } : { nonResourceAttributes: { path, verb: attrs.verb } }),
      };
      const p = gate
        .run(c.user === ANONYMOUS.user ? 'unknown' : 'known', async () => {
          const r = await client.post<SarStatus>('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec,
          });
          const allowed = r.status?.allowed === true && r.status.denied !== true;
          const d: Decision = { allowed, reason: r.status?.reason ?? r.status?.evaluationError ?? '' };
          cache.set(key, d, allowed ? (opts.allowTtlMs ?? SAR_TTL_MS) : (opts.denyTtlMs ?? SAR_TTL_MS));
          return d;
        })
        .finally(() => inFlight.delete(key));
      inFlight.set(key, p);
      return p;
    },
  };
}

export interface DelegatedAuthOptions {
  /** PEM of the client CA: client certificates are accepted too (before bearer tokens). */
  readonly clientCa?: string;
  readonly audiences?: readonly string[];
  readonly paths?: readonly string[];
  readonly resourceFor?: SarOptions['resourceFor'];
  readonly limits?: ReviewLimits;
  /** Cache TTLs and sizes (tests). */
  readonly cache?: {
    readonly tokenAllowTtlMs?: number;
    readonly tokenDenyTtlMs?: number;
    readonly sarAllowTtlMs?: number;
    readonly sarDenyTtlMs?: number;
    readonly maxEntries?: number;
  };
  readonly userAgent?: string;
}

export interface DelegatedAuth {
  readonly authn: Authenticator;
  readonly authz: Authorizer;
  readonly gate: ReviewGate;
  /** Cached TokenReview and SubjectAccessReview answers. */
  cacheSizes(): { readonly tokens: number; readonly reviews: number };
  close(): void;
}

/**
 * The secure port's authn/authz as the components wire it: reviews through a client of their own (its own
 * connection pool and queue, so a flood of callers cannot take the binding/controller client's slots), one
 * ReviewGate for TokenReviews and SubjectAccessReviews, bounded caches.
 */
export function delegatedAuth(client: KubeClient, o: DelegatedAuthOptions = {}): DelegatedAuth {
  const gate = new ReviewGate(o.limits);
  const own = client.fork({ maxInFlight: o.limits?.maxInFlight ?? 4, userAgent: o.userAgent ?? 'sits-delegated-auth/0.1' });
  const c = o.cache ?? {};
  const max = c.maxEntries === undefined ? {} : { maxEntries: c.maxEntries };
  const tokens = tokenReviewAuthenticator(own, {
    gate,
    ...max,
    ...(o.audiences === undefined ? {} : { audiences: o.audiences }),
    ...(c.tokenAllowTtlMs === undefined ? {} : { allowTtlMs: c.tokenAllowTtlMs }),
    ...(c.tokenDenyTtlMs === undefined ? {} : { denyTtlMs: c.tokenDenyTtlMs }),
  });
  const authz = subjectAccessReviewAuthorizer(own, {
    gate,
    ...max,
    ...(o.paths === undefined ? {} : { paths: o.paths }),
    ...(o.resourceFor === undefined ? {} : { resourceFor: o.resourceFor }),
    ...(c.sarAllowTtlMs === undefined ? {} : { allowTtlMs: c.sarAllowTtlMs }),
    ...(c.sarDenyTtlMs === undefined ? {} : { denyTtlMs: c.sarDenyTtlMs }),
  });
  return {
    authn: o.clientCa !== undefined ? unionAuthenticator(clientCertAuthenticator(), tokens) : tokens,
    authz,
    gate,
    cacheSizes: () => ({ tokens: tokens.size(), reviews: authz.size() }),
    close: () => own.close(),
  };
}

/** Takes every request as anonymous (named: only for plain HTTP on loopback, `--insecure-localhost`, tests). */
export const ANONYMOUS_AUTHN: Authenticator = { authenticate: () => Promise.resolve({ ok: true, caller: ANONYMOUS }) };

/** Allows every caller (named: only for benchmarks and `--insecure-localhost` plain HTTP). */
export const ALLOW_ALL: Authorizer = { authorize: () => Promise.resolve({ allowed: true, reason: 'always allow' }) };
