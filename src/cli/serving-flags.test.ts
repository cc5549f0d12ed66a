// --tls-cert-file / --tls-private-key-file are re-read when they change (issue 36, finding 7): a real HTTPS server,
// real files rotated on disk; new connections see the new certificate, a broken pair is logged and the old one kept.
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCa, issue } from '../kube/secure/certs.ts';
import { ALLOW_ALL, ANONYMOUS_AUTHN } from '../kube/secure/delegated-auth.ts';
import { startSecureServer, type SecureServer } from '../kube/secure/secure-server.ts';
import { parseAudiences, reloadServingCert } from './serving-flags.ts';

let server: SecureServer | undefined;
let stop: (() => void) | undefined;
let dir = '';
afterEach(async () => {
  stop?.();
  await server?.close();
  server = undefined;
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

/** The fingerprint of the certificate a new connection is served. */
function servedFingerprint(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(new URL('/healthz', url), { ca, servername: 'localhost', agent: false }, (res) => {
      const fp = (res.socket as unknown as { getPeerCertificate(): { fingerprint256: string } }).getPeerCertificate().fingerprint256;
      res.resume();
      res.on('end', () => resolve(fp));
    });
    req.on('error', reject);
    req.end();
  });
}

const fp = (pem: string): string => new X509Certificate(pem).fingerprint256;

async function until(what: string, ok: () => Promise<boolean>): Promise<void> {
  const end = performance.now() + 10_000;
  while (performance.now() < end) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('serving certificate files', () => {
  it('rotated files are served to new connections; a broken pair is logged and the old certificate kept', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sits-cert-reload-'));
    const certFile = join(dir, 'tls.crt');
    const keyFile = join(dir, 'tls.key');
    const ca = await createCa('test-ca', 3_600_000);
    const leaf = (): ReturnType<typeof issue> => issue(ca, { commonName: 'localhost', dnsNames: ['localhost'], ips: ['127.0.0.1'], lifetimeMs: 3_600_000 });
    const [first, second, third] = [await leaf(), await leaf(), await leaf()];
    writeFileSync(certFile, first.cert);
    writeFileSync(keyFile, first.key);
    const logs: string[] = [];
    server = await startSecureServer({ port: 0, host: '127.0.0.1', tls: first, authn: ANONYMOUS_AUTHN, authz: ALLOW_ALL, handler: (_q, res) => res.end('ok') });
    const s = server;
    stop = reloadServingCert(
      { tlsCertFile: certFile, tlsPrivateKeyFile: keyFile },
      true,
      (p) => s.setTls(p),
      (m) => logs.push(m),
      50,
    );
    expect(await servedFingerprint(s.url, ca.cert)).toBe(fp(first.cert));

    writeFileSync(certFile, second.cert);
    writeFileSync(keyFile, second.key);
    await until('the second certificate', async () => (await servedFingerprint(s.url, ca.cert)) === fp(second.cert));
    expect(logs.some((l) => l.includes('serving certificate reloaded'))).toBe(true);

    // The third certificate with the second's key: does not load; the second stays served.
    writeFileSync(certFile, third.cert);
    await until('the broken pair to be logged', () => Promise.resolve(logs.some((l) => l.includes('still serving the previous certificate'))));
    expect(await servedFingerprint(s.url, ca.cert)).toBe(fp(second.cert));
    // Garbage too.
    writeFileSync(keyFile, 'not a key');
    await new Promise((r) => setTimeout(r, 200));
    expect(await servedFingerprint(s.url, ca.cert)).toBe(fp(second.cert));
    const broken = logs.filter((l) => l.includes('still serving')).length;
    expect(broken).toBeGreaterThanOrEqual(1);
    expect(broken).toBeLessThanOrEqual(3); // once per change of the files, not every poll

    // The key catches up: the third pair is served.
    writeFileSync(keyFile, third.key);
    await until('the third certificate', async () => (await servedFingerprint(s.url, ca.cert)) === fp(third.cert));
  });
});

describe('--api-audiences', () => {
  it('is a comma-separated list; empty entries are an error naming the flag', () => {
    expect(parseAudiences(undefined)).toBeUndefined();
    expect(parseAudiences('sits-activator, other')).toEqual(['sits-activator', 'other']);
    expect(() => parseAudiences('a,,b')).toThrow(/--api-audiences/);
    expect(() => parseAudiences('')).toThrow(/--api-audiences/);
  });
});
