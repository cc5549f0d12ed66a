// `sits run`'s secure port as a real process against a real kube-apiserver (issue 36, findings 6 and 7): the
// --tls-cert-file pair is re-read when it changes (new connections see the new certificate; a broken pair is
// logged and the old one kept), made-up paths are 404 without a review, and the callers are still checked.
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts, startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { waitFor } from '../harness/e2e-kit.ts';
import { createCa, issue, type CertificateAuthority, type CertPair } from '../kube/secure/certs.ts';
import { scaled } from '../testing/timeouts.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
// Off loopback in the server's sense (TLS, delegated auth), still local.
const HOST = '127.0.0.2';

let plane: ControlPlane;
let sits: ChildProcess | undefined;
const sitsLog: string[] = [];
let tmp = '';
let ca: CertificateAuthority;
let port = 0;

interface Answer {
  readonly status: number;
  readonly fingerprint: string;
}

function get(path: string, token?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: HOST, port, path, ca: ca.cert, servername: 'localhost', agent: false, headers: token === undefined ? {} : { Authorization: `Bearer ${token}` } },
      (res) => {
        const fingerprint = (res.socket as unknown as { getPeerCertificate(): { fingerprint256: string } }).getPeerCertificate().fingerprint256;
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, fingerprint }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const fp = (p: CertPair): string => new X509Certificate(p.cert).fingerprint256;

beforeAll(async () => {
  plane = await startControlPlane();
  tmp = mkdtempSync(join(tmpdir(), 'sits-run-secure-'));
  ca = await createCa('run-e2e-ca', 3_600_000);
  [port] = (await freePorts(1)) as [number];
}, scaled(180_000));

afterAll(async () => {
  if (sits !== undefined && sits.exitCode === null) {
    const closed = new Promise((r) => sits?.on('close', r));
    sits.kill('SIGTERM');
    await closed;
  }
  await plane?.stop();
  if (tmp !== '') rmSync(tmp, { recursive: true, force: true });
});

describe('sits run --tls-cert-file', () => {
  it(
    'serves a rotated pair to new connections, keeps the old one when the new pair is broken, and reviews only served paths',
    async () => {
      const leaf = (): Promise<CertPair> => issue(ca, { commonName: 'localhost', dnsNames: ['localhost'], ips: [HOST], lifetimeMs: 3_600_000 });
      const [first, second, third] = [await leaf(), await leaf(), await leaf()];
      const certFile = join(tmp, 'tls.crt');
      const keyFile = join(tmp, 'tls.key');
      writeFileSync(certFile, first.cert);
      writeFileSync(keyFile, first.key, { mode: 0o600 });
      sits = spawn(
        process.execPath,
        [
          join(ROOT, 'bin/sits.mjs'),
          'run',
          `--kubeconfig=${plane.kubeconfigPath}`,
          '--no-leader-elect',
          '--identity=run-secure-e2e',
          `--metrics-port=${port}`,
          `--metrics-host=${HOST}`,
          `--tls-cert-file=${certFile}`,
          `--tls-private-key-file=${keyFile}`,
        ],
        { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      sits.stderr?.setEncoding('utf8').on('data', (d: string) => sitsLog.push(d));
      await waitFor('sits run serving its metrics', () => Promise.resolve(sitsLog.join('').includes('running (profile sits')), scaled(120_000));

      const a = await get('/metrics', plane.token);
      expect(a).toEqual({ status: 200, fingerprint: fp(first) });
      expect((await get('/metrics')).status).toBe(403); // anonymous: RBAC says no
      expect((await get(`/made-up-${Date.now()}`, plane.token)).status).toBe(404);

      writeFileSync(certFile, second.cert);
      writeFileSync(keyFile, second.key, { mode: 0o600 });
      await waitFor('the rotated certificate', async () => (await get('/healthz')).fingerprint === fp(second), scaled(30_000), 250);
      expect(sitsLog.join('')).toContain(`serving certificate reloaded from ${certFile}`);

      // A certificate without its key (the third cert, the second's key): logged, the second still served.
      writeFileSync(certFile, third.cert);
      await waitFor('the broken pair logged', () => Promise.resolve(sitsLog.join('').includes('still serving the previous certificate')), scaled(30_000), 250);
      expect((await get('/metrics', plane.token)).fingerprint).toBe(fp(second));
      expect(sits.exitCode).toBeNull();

      // Its key arrives: the third pair is served.
      writeFileSync(keyFile, third.key, { mode: 0o600 });
      await waitFor('the third certificate', async () => (await get('/healthz')).fingerprint === fp(third), scaled(30_000), 250);
    },
    scaled(300_000),
  );
});
