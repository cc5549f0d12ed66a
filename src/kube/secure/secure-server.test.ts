// The secure port without an apiserver: real TLS with certificates from our CA, client certificates mapped to
// user/groups, an authorizer that decides by caller, always-allowed paths, and a certificate swapped while serving.
import { request } from 'node:https';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { X509Certificate } from 'node:crypto';
import { createCa, issue, issuedBy, certNames, type CertPair } from './certs.ts';
import {
  ALLOW_ALL,
  ANONYMOUS,
  ANONYMOUS_AUTHN,
  ReviewGate,
  clientCertAuthenticator,
  type Authenticator,
  type Authorizer,
  type Caller,
} from './delegated-auth.ts';
import { startSecureServer, type SecureServer } from './secure-server.ts';

let server: SecureServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const onlyAlice: Authorizer = {
  authorize: (c, a) => Promise.resolve(c.user === 'alice' && a.verb === 'post' ? { allowed: true, reason: '' } : { allowed: false, reason: 'not alice' }),
};

function call(
  url: string,
  o: { ca: string; client?: CertPair; method?: string; path?: string },
): Promise<{ status: number; body: string; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(o.path ?? '/x', url),
      {
        method: o.method ?? 'POST',
        ca: o.ca,
        servername: 'localhost',
        agent: false,
        ...(o.client !== undefined ? { cert: o.client.cert, key: o.client.key } : {}),
      },
      (res) => {
        const fp = (res.socket as unknown as { getPeerCertificate(): { fingerprint256: string } }).getPeerCertificate().fingerprint256;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), fingerprint: fp }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('secure server', () => {
  it('refuses plain HTTP on a non-loopback address', async () => {
    await expect(startSecureServer({ port: 0, host: '0.0.0.0', authn: clientCertAuthenticator(), authz: onlyAlice, handler: () => undefined })).rejects.toThrow(
      /refusing to serve plain HTTP on 0.0.0.0/,
    );
  });

  it('maps client certificates to users, refuses unverified ones, authorizes by caller, and always serves /healthz', async () => {
    const ca = await createCa('test-ca', 3_600_000);
    const other = await createCa('other-ca', 3_600_000);
    const serving = await issue(ca, { commonName: 'localhost', dnsNames: ['localhost'], ips: ['127.0.0.1'], lifetimeMs: 3_600_000 });
    expect(issuedBy(serving.cert, ca.cert)).toBe(true);
    expect(issuedBy(serving.cert, other.cert)).toBe(false);
    expect(certNames(serving.cert)).toEqual({ dns: ['localhost'], ips: ['127.0.0.1'] });
    const alice = await issue(ca, { commonName: 'alice', organizations: ['ml-team'], usage: 'client', lifetimeMs: 3_600_000 });
    const bob = await issue(ca, { commonName: 'bob', usage: 'client', lifetimeMs: 3_600_000 });
    const mallory = await issue(other, { commonName: 'alice', usage: 'client', lifetimeMs: 3_600_000 });
    const seen: Caller[] = [];
    server = await startSecureServer({
      port: 0,
      host: '127.0.0.1',
      tls: serving,
      clientCa: ca.cert,
      authn: clientCertAuthenticator(),
      authz: onlyAlice,
      handler: (_req, res, caller) => {
        seen.push(caller);
        res.end('ok');
      },
    });
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect((await call(server.url, { ca: ca.cert, client: alice })).status).toBe(200);
    expect(seen[0]).toEqual({ user: 'alice', groups: ['ml-team', 'system:authenticated'] });
    const b = await call(server.url, { ca: ca.cert, client: bob });
    expect(b.status).toBe(403);
    expect(b.body).toContain('user "bob" cannot post path "/x": not alice');
    const m = await call(server.url, { ca: ca.cert, client: mallory });
    expect(m.status).toBe(401);
    expect(m.body).toContain('client certificate not verified');
    expect((await call(server.url, { ca: ca.cert })).status).toBe(403);
    expect((await call(server.url, { ca: ca.cert, method: 'GET', path: '/healthz' })).status).toBe(200);
  });

  it('serves a swapped certificate from the next handshake on', async () => {
    const ca = await createCa('test-ca', 3_600_000);
    const first = await issue(ca, { commonName: 'localhost', dnsNames: ['localhost'], lifetimeMs: 3_600_000 });
    const second = await issue(ca, { commonName: 'localhost', dnsNames: ['localhost'], lifetimeMs: 7_200_000 });
    server = await startSecureServer({
      port: 0,
      host: '127.0.0.1',
      tls: first,
      authn: clientCertAuthenticator(),
      authz: onlyAlice,
      handler: (_q, res) => res.end('ok'),
    });
    const a = await call(server.url, { ca: ca.cert, method: 'GET', path: '/healthz' });
    expect(a.fingerprint).toBe(new X509Certificate(first.cert).fingerprint256);
    server.setTls(second);
    const b = await call(server.url, { ca: ca.cert, method: 'GET', path: '/healthz' });
    expect(b.fingerprint).toBe(new X509Certificate(second.cert).fingerprint256);
  });
});

/** One raw HTTP/1.1 request with exactly the given Host and target (what a DNS-rebinding page sends). */
function raw(port: number, target: string, host: string | undefined): Promise<{ status: number; head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () =>
      sock.end(`GET ${target} HTTP/1.1\r\n${host === undefined ? '' : `Host: ${host}\r\n`}Connection: close\r\n\r\n`),
    );
    let text = '';
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => (text += c));
    sock.on('end', () =>
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0),
        head: text.slice(0, text.indexOf('\r\n\r\n')),
        body: text.slice(text.indexOf('\r\n\r\n') + 4),
      }),
    );
    sock.on('error', reject);
  });
}

describe('secure server: requests refused before auth (issue 36, finding 7)', () => {
  it('loopback mode serves only loopback Host values: a DNS-rebinding request with Host: attacker.example gets 421, not the cluster JSON', async () => {
    const logs: string[] = [];
    server = await startSecureServer({
      port: 0,
      host: '127.0.0.1',
      authn: ANONYMOUS_AUTHN,
      authz: ALLOW_ALL,
      log: (m) => logs.push(m),
      handler: (_q, res) => res.end('{"cluster":"secret"}'),
    });
    const { port } = server;
    const attack = await raw(port, '/dashboard/api/v1/cluster', 'attacker.example');
    expect(attack.status).toBe(421);
    expect(attack.body).not.toContain('secret');
    expect((await raw(port, '/dashboard/api/v1/cluster', `attacker.example:${port}`)).status).toBe(421);
    expect((await raw(port, '/dashboard/api/v1/cluster', 'localhost.attacker.example')).status).toBe(421);
    expect((await raw(port, '/dashboard/api/v1/cluster', '127.0.0.1.attacker.example')).status).toBe(421);
    expect((await raw(port, '/healthz', 'attacker.example')).status).toBe(421);
    expect((await raw(port, '/x', undefined)).status).toBe(400); // HTTP/1.1 without Host: Node's own parser refuses it
    expect(logs.some((l) => l.includes('Host "attacker.example" is not a loopback name'))).toBe(true);
    // A forwarded port (kubectl port-forward 8080:<port>) keeps working: the name is what rebinding cannot fake.
    for (const h of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost', 'LOCALHOST', '127.0.0.1', 'localhost:8080']) {
      const ok = await raw(port, '/dashboard/api/v1/cluster', h);
      expect({ h, status: ok.status, body: ok.body }).toEqual({ h, status: 200, body: '{"cluster":"secret"}' });
    }
  });

  it('a TLS server does not check Host (the certificate names the server)', async () => {
    const ca = await createCa('test-ca', 3_600_000);
    const serving = await issue(ca, { commonName: 'localhost', dnsNames: ['localhost'], lifetimeMs: 3_600_000 });
    server = await startSecureServer({
      port: 0,
      host: '127.0.0.1',
      tls: serving,
      authn: clientCertAuthenticator(),
      authz: ALLOW_ALL,
      handler: (_q, res) => res.end('ok'),
    });
    expect((await call(server.url, { ca: ca.cert, method: 'GET', path: '/x' })).status).toBe(200);
  });

  it('a malformed %-escape is 400 Bad Request, logged as a bad request, and never reaches authn, authz or the handler', async () => {
    const logs: string[] = [];
    let authn = 0;
    let handled = 0;
    const countingAuthn: Authenticator = {
      authenticate: () => {
        authn++;
        return Promise.resolve({ ok: true, caller: ANONYMOUS });
      },
    };
    server = await startSecureServer({
      port: 0,
      host: '127.0.0.1',
      authn: countingAuthn,
      authz: ALLOW_ALL,
      log: (m) => logs.push(m),
      handler: (_q, res) => {
        handled++;
        // What the dashboard does with a file name: it would throw on the escapes above.
        res.end(decodeURIComponent('%41'));
      },
    });
    for (const target of ['/dashboard/%zz', '/dashboard/%', '/dashboard/%4', '/namespaces/a/inferenceservices/b/proxy/%E0%A4%A']) {
      const r = await raw(server.port, target, 'localhost');
      expect({ target, status: r.status }).toEqual({ target, status: 400 });
      expect(r.body).toContain('malformed %-escape');
    }
    expect(authn).toBe(0);
    expect(handled).toBe(0);
    expect(logs.filter((l) => l.startsWith('bad request: malformed %-escape'))).toHaveLength(4);
    expect(logs.some((l) => l.startsWith('auth '))).toBe(false);
    // Well-formed escapes, and a % in the query (the proxied service's business), pass.
    expect((await raw(server.port, '/dashboard/%41', 'localhost')).status).toBe(200);
    expect((await raw(server.port, '/x?q=100%', 'localhost')).status).toBe(200);
    expect(authn).toBe(2);
  });

  it('an unknown path is 404 without authorization; a saturated auth path is 429 with Retry-After, not 503', async () => {
    const gate = new ReviewGate({ perSecond: 1, burst: 1, maxInFlight: 1, maxQueued: 1 });
    let reviews = 0;
    const authz: Authorizer = {
      authorize: (_c, a) => {
        if (a.path !== '/metrics') return Promise.resolve({ allowed: false, notFound: true, reason: 'no such path' });
        return gate.run('unknown', () => {
          reviews++;
          return Promise.resolve({ allowed: true, reason: '' });
        });
      },
    };
    server = await startSecureServer({ port: 0, host: '127.0.0.1', authn: ANONYMOUS_AUTHN, authz, handler: (_q, res) => res.end('ok') });
    expect((await raw(server.port, '/random-1', 'localhost')).status).toBe(404);
    expect(reviews).toBe(0);
    expect((await raw(server.port, '/metrics', 'localhost')).status).toBe(200);
    const busy = await raw(server.port, '/metrics', 'localhost');
    expect(busy.status).toBe(429);
    expect(busy.body).toContain('Too Many Requests');
    expect(busy.head).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(reviews).toBe(1);
  });
});
