/**
 * Kubernetes authn/authz delegation for SITS's own HTTPS endpoints (webhook, metrics, extender), as
 * kube-scheduler's secure port does it (k8s.io/apiserver `DelegatingAuthenticatorConfig` /
 * `DelegatingAuthorizerConfig`):
 * - authentication: a client certificate verified against the client CA, or a bearer token checked with a
 *   TokenReview; successful reviews are cached for 10 s, failed ones for 10 s too (the apiserver defaults);
 * - authorization: a SubjectAccessReview for the non-resource path and the lower-cased HTTP verb
 *   (`post /validate`), or for a resource where a path stands for one (the activator's
 *   `inferenceservices/proxy`), cached 10 s allowed / 10 s denied;
 * - always-allowed paths (`/healthz`, `/readyz`, `/livez`), as `--authorization-always-allow-paths`.
 * A request without credentials is `system:anonymous` in `system:unauthenticated`, so RBAC decides, exactly as
 * kube-scheduler does.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { KubeClient } from './client.ts';

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
}

export interface Authorizer {
  authorize(caller: Caller, attrs: { readonly path: string; readonly verb: string }): Promise<Decision>;
}

/** A small TTL cache with a size bound (oldest entry evicted first: Map keeps insertion order). */
class TtlCache<V> {
  private readonly m = new Map<string, { v: V; until: number }>();
  constructor(
    private readonly max: number,
    private readonly now: () => number,
  ) {}
  get(k: string): V | undefined {
    const e = this.m.get(k);
    if (e === undefined) return undefined;
    if (e.until <= this.now()) {
      this.m.delete(k);
      return undefined;
    }
    return e.v;
  }
  set(k: string, v: V, ttlMs: number): void {
    this.m.delete(k);
    if (this.m.size >= this.max) {
      const first = this.m.keys().next();
      if (first.done !== true) this.m.delete(first.value);
    }
    this.m.set(k, { v, until: this.now() + ttlMs });
  }
}

export interface CacheOptions {
  readonly allowTtlMs?: number;
  readonly denyTtlMs?: number;
  readonly maxEntries?: number;
  readonly now?: () => number;
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
    readonly user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  };
}

/** Bearer tokens checked by the apiserver (TokenReview); needs `create tokenreviews`. */
export function tokenReviewAuthenticator(client: KubeClient, opts: CacheOptions & { readonly audiences?: readonly string[] } = {}): Authenticator {
  const now = opts.now ?? (() => performance.now());
  const cache = new TtlCache<AuthnResult>(opts.maxEntries ?? 4096, now);
  const inFlight = new Map<string, Promise<AuthnResult>>();
  return {
    async authenticate(req) {
      const token = bearer(req);
      if (token === undefined) return undefined;
      const key = createHash('sha256').update(token).digest('hex');
      const hit = cache.get(key);
      if (hit !== undefined) return hit;
      let p = inFlight.get(key);
      if (p === undefined) {
        p = (async (): Promise<AuthnResult> => {
          const spec = { token, ...(opts.audiences !== undefined ? { audiences: [...opts.audiences] } : {}) };
          const r = await client.post<TokenReviewStatus>('/apis/authentication.k8s.io/v1/tokenreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec });
          const u = r.status?.user;
          const res: AuthnResult =
            r.status?.authenticated === true && typeof u?.username === 'string'
              ? { ok: true, caller: { user: u.username, ...(u.uid !== undefined ? { uid: u.uid } : {}), groups: u.groups ?? [], ...(u.extra !== undefined ? { extra: u.extra } : {}) } }
              : { ok: false, reason: r.status?.error ?? 'token not authenticated' };
          cache.set(key, res, res.ok ? (opts.allowTtlMs ?? 10_000) : (opts.denyTtlMs ?? 10_000));
          return res;
        })().finally(() => inFlight.delete(key));
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
}

/** SubjectAccessReview for non-resource requests (or resources, `resourceFor`); needs `create subjectaccessreviews`. */
export function subjectAccessReviewAuthorizer(client: KubeClient, opts: SarOptions = {}): Authorizer {
  const now = opts.now ?? (() => performance.now());
  const cache = new TtlCache<Decision>(opts.maxEntries ?? 4096, now);
  return {
    async authorize(c, attrs) {
      const resource = opts.resourceFor?.(attrs.path, attrs.verb);
      // One review per resource, not per path: every path under one service's proxy has the same answer.
      const key = JSON.stringify([c.user, c.uid ?? '', c.groups, c.extra ?? {}, resource ?? attrs.path, attrs.verb]);
      const hit = cache.get(key);
      if (hit !== undefined) return hit;
      const spec = {
        user: c.user,
        ...(c.uid !== undefined ? { uid: c.uid } : {}),
        groups: [...c.groups],
        ...(c.extra !== undefined ? { extra: c.extra } : {}),
        ...(resource !== undefined ? { resourceAttributes: { ...resource } } : { nonResourceAttributes: { path: attrs.path, verb: attrs.verb } }),
      };
      const r = await client.post<SarStatus>('/apis/authorization.k8s.io/v1/subjectaccessreviews', { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec });
      const allowed = r.status?.allowed === true && r.status.denied !== true;
      const d: Decision = { allowed, reason: r.status?.reason ?? r.status?.evaluationError ?? '' };
      cache.set(key, d, allowed ? (opts.allowTtlMs ?? 10_000) : (opts.denyTtlMs ?? 10_000));
      return d;
    },
  };
}

/** Takes every request as anonymous (named: only for plain HTTP on loopback, `--insecure-localhost`, tests). */
export const ANONYMOUS_AUTHN: Authenticator = { authenticate: () => Promise.resolve({ ok: true, caller: ANONYMOUS }) };

/** Allows every caller (named: only for benchmarks and `--insecure-localhost` plain HTTP). */
export const ALLOW_ALL: Authorizer = { authorize: () => Promise.resolve({ allowed: true, reason: 'always allow' }) };
