/**
 * The secure port of a SITS component: HTTPS with a certificate that can be swapped while serving
 * (rotation: `setTls`), and every request authenticated and authorized by delegation to the apiserver
 * (delegated-auth.ts) before the handler sees it. Plain HTTP is refused unless the server binds to a
 * loopback address (local development and tests only), and then only requests with a loopback Host are served.
 * A malformed %-escape is 400, an unknown path 404 without a review, a saturated auth path 429 (ADR 0177).
 */
import { createServer as createHttp, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { CertPair } from './certs.ts';
import { ANONYMOUS, AuthOverloaded, type Authenticator, type Authorizer, type Caller } from './delegated-auth.ts';

export const DEFAULT_ALWAYS_ALLOW = ['/healthz', '/readyz', '/livez'] as const;

/** A request body over the caller's limit; the rest of it is read and discarded, so the answer still reaches the client. */
export class BodyTooLarge extends Error {
  readonly code = 'BodyTooLarge';
}

/** The whole body of a request, at most `max` bytes (beyond: BodyTooLarge). */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > max) {
        req.off('data', onData);
        req.resume();
        chunks.length = 0;
        reject(new BodyTooLarge(`request body over ${max} bytes`));
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export interface SecureServerOptions {
  readonly port: number;
  /** Default 0.0.0.0. Plain HTTP (no `tls`) only on 127.0.0.1 / ::1 / localhost. */
  readonly host?: string;
  /** Serving certificate; undefined = plain HTTP (loopback only). */
  readonly tls?: CertPair;
  /** PEM of the CA that signs client certificates (asked for, not required: tokens work too). */
  readonly clientCa?: string;
  readonly authn: Authenticator;
  readonly authz: Authorizer;
  /** Paths served to anyone (kube-scheduler's `--authorization-always-allow-paths`). */
  readonly alwaysAllowPaths?: readonly string[];
  readonly handler: (req: IncomingMessage, res: ServerResponse, caller: Caller) => void;
  readonly log?: (m: string) => void;
}

export interface SecureServer {
  /** https://host:port (or http:// on loopback without TLS) */
  readonly url: string;
  readonly port: number;
  /** Serves a new certificate from the next TLS handshake on (open connections keep theirs). */
  setTls(pair: CertPair): void;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
/** A `%` not followed by two hex digits. */
const MALFORMED_ESCAPE = /%(?![0-9a-fA-F]{2})/;

function sendText(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(body);
}

export async function startSecureServer(o: SecureServerOptions): Promise<SecureServer> {
  const host = o.host ?? '0.0.0.0';
  if (o.tls === undefined && !LOOPBACK.has(host)) throw new Error(`refusing to serve plain HTTP on ${host}: give a certificate, or bind to 127.0.0.1`);
  const always = new Set(o.alwaysAllowPaths ?? DEFAULT_ALWAYS_ALLOW);

  // Plain HTTP on loopback answers only requests addressed to loopback: a page that rebinds its own DNS name to
  // 127.0.0.1 sends its own name as Host and is refused (421), so it cannot read what the local port serves.
  // Any port: the name is what rebinding cannot fake, and a forwarded port (kubectl port-forward, ssh -L) differs.
  const hostAllowed = (h: string | undefined): boolean => o.tls !== undefined || (h !== undefined && /^(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i.test(h));

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    if (!hostAllowed(req.headers.host)) {
      o.log?.(`bad request: Host ${JSON.stringify(req.headers.host ?? '')} is not a loopback name`);
      sendText(res, 421, 'Misdirected Request: this port answers only to localhost, 127.0.0.1 and [::1]\n');
      return;
    }
    const raw = req.url ?? '/';
    // A broken %-escape is the client's error (400), found before auth, so it is not logged as an auth failure.
    const q = raw.indexOf('?');
    if (MALFORMED_ESCAPE.test(q === -1 ? raw : raw.slice(0, q))) {
      o.log?.(`bad request: malformed %-escape in ${JSON.stringify(raw.slice(0, 200))}`);
      sendText(res, 400, 'Bad Request: malformed %-escape in the request path\n');
      return;
    }
    let path: string;
    try {
      path = new URL(raw, 'http://localhost').pathname;
    } catch {
      sendText(res, 400, 'Bad Request: request target is not a URL path\n');
      return;
    }
    if (always.has(path)) {
      o.handler(req, res, ANONYMOUS);
      return;
    }
    const verb = (req.method ?? 'GET').toLowerCase();
    void (async (): Promise<Caller | undefined> => {
      const authn = await o.authn.authenticate(req);
      if (authn !== undefined && !authn.ok) {
        sendText(res, 401, `Unauthorized: ${authn.reason}\n`);
        return undefined;
      }
      const caller = authn?.caller ?? ANONYMOUS;
      const d = await o.authz.authorize(caller, { path, verb });
      if (d.notFound === true) {
        sendText(res, 404, 'not found\n');
        return undefined;
      }
      if (!d.allowed) {
        sendText(res, 403, `Forbidden: user "${caller.user}" cannot ${verb} path "${path}"${d.reason === '' ? '' : `: ${d.reason}`}\n`);
        return undefined;
      }
      return caller;
    })().then(
      // The handler runs outside the auth promise: its own errors are not reported as auth failures.
      (caller) => {
        if (caller === undefined) return;
        try {
          o.handler(req, res, caller);
        } catch (e) {
          o.log?.(`handler ${path}: ${(e as Error).stack ?? String(e)}`);
          if (!res.headersSent) sendText(res, 500, 'internal error\n');
        }
      },
      (e: unknown) => {
        if (res.headersSent) return;
        if (e instanceof AuthOverloaded) {
          // Refused at once, not queued: the caller retries, the apiserver is not flooded (ADR 0177).
          res.setHeader('Retry-After', '1');
          sendText(res, 429, `Too Many Requests: ${e.message}\n`);
          return;
        }
        // The apiserver could not be asked (down, throttled): fail closed, as the delegating authorizer does.
        o.log?.(`auth ${path}: ${(e as Error).message}`);
        sendText(res, 503, 'authentication/authorization unavailable\n');
      },
    );
  };

  let server: Server;
  let setTls: (p: CertPair) => void;
  if (o.tls !== undefined) {
    const s = createHttps(
      {
        cert: o.tls.cert,
        key: o.tls.key,
        minVersion: 'TLSv1.2',
        ...(o.clientCa !== undefined ? { ca: o.clientCa, requestCert: true, rejectUnauthorized: false } : {}),
      },
      handle,
    );
    setTls = (p) => s.setSecureContext({ cert: p.cert, key: p.key, ...(o.clientCa !== undefined ? { ca: o.clientCa } : {}) });
    server = s;
  } else {
    server = createHttp(handle);
    setTls = () => {
      throw new Error('plain HTTP server: no certificate to rotate');
    };
  }
  server.keepAliveTimeout = 30_000;
  server.headersTimeout = 35_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (e) => o.log?.(`server: ${e.message}`));
  server.on('tlsClientError', (e) => o.log?.(`tls: ${e.message}`));
  const addr = server.address() as AddressInfo;
  const shown = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `${o.tls !== undefined ? 'https' : 'http'}://${shown}:${addr.port}`,
    port: addr.port,
    setTls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
