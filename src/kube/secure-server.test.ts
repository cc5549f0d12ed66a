// The secure port without an apiserver: real TLS with certificates from our CA, client certificates mapped to
// user/groups, an authorizer that decides by caller, always-allowed paths, and a certificate swapped while serving.
import { request } from 'node:https';
import { afterEach, describe, expect, it } from 'vitest';
import { X509Certificate } from 'node:crypto';
import { createCa, issue, issuedBy, certNames, type CertPair } from './certs.ts';
import { clientCertAuthenticator, type Authorizer, type Caller } from './delegated-auth.ts';
import { startSecureServer, type SecureServer } from './secure-server.ts';

let server: SecureServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const onlyAlice: Authorizer = {
  authorize: (c, a) => Promise.resolve(c.user === 'alice' && a.verb === 'post' ? { allowed: true, reason: '' } : { allowed: false, reason: 'not alice' }),
};

function call(url: string, o: { ca: string; client?: CertPair; method?: string; path?: string }): Promise<{ status: number; body: string; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(o.path ?? '/x', url), { method: o.method ?? 'POST', ca: o.ca, servername: 'localhost', agent: false, ...(o.client !== undefined ? { cert: o.client.cert, key: o.client.key } : {}) }, (res) => {
      const fp = (res.socket as unknown as { getPeerCertificate(): { fingerprint256: string } }).getPeerCertificate().fingerprint256;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), fingerprint: fp }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('secure server', () => {
  it('refuses plain HTTP on a non-loopback address', async () => {
    await expect(startSecureServer({ port: 0, host: '0.0.0.0', authn: clientCertAuthenticator(), authz: onlyAlice, handler: () => undefined })).rejects.toThrow(/refusing to serve plain HTTP on 0.0.0.0/);
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
    server = await startSecureServer({ port: 0, host: '127.0.0.1', tls: first, authn: clientCertAuthenticator(), authz: onlyAlice, handler: (_q, res) => res.end('ok') });
    const a = await call(server.url, { ca: ca.cert, method: 'GET', path: '/healthz' });
    expect(a.fingerprint).toBe(new X509Certificate(first.cert).fingerprint256);
    server.setTls(second);
    const b = await call(server.url, { ca: ca.cert, method: 'GET', path: '/healthz' });
    expect(b.fingerprint).toBe(new X509Certificate(second.cert).fingerprint256);
  });
});
