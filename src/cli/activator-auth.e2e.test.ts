// `sits activator` as a real process against a real kube-apiserver (issue 36, finding 7): with --api-audiences a
// ServiceAccount token meant for the apiserver is refused and one requested for the activator's audience is
// accepted; on --insecure-localhost a request whose Host is not a loopback name (DNS rebinding) is 421; a malformed
// %-escape is 400 and logged as a bad request, not as an auth failure; a made-up path is 404 without a review.
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts, startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createNs, waitFor } from '../harness/e2e-kit.ts';
import { KubeClient } from '../kube/client/client.ts';
import { scaled } from '../testing/timeouts.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const RBAC = '/apis/rbac.authorization.k8s.io/v1';

let plane: ControlPlane;
let admin: KubeClient;
let act: ChildProcess | undefined;
const log: string[] = [];
let port = 0;

function get(path: string, o: { token?: string; host?: string } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        agent: false,
        headers: { ...(o.token === undefined ? {} : { Authorization: `Bearer ${o.token}` }), ...(o.host === undefined ? {} : { Host: o.host }) },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  plane = await startControlPlane();
  admin = new KubeClient(plane.kubeConfig());
  [port] = (await freePorts(1)) as [number];
}, scaled(180_000));

afterAll(async () => {
  if (act !== undefined && act.exitCode === null) {
    const closed = new Promise((r) => act?.on('close', r));
    act.kill('SIGTERM');
    await closed;
  }
  admin?.close();
  await plane?.stop();
});

describe('sits activator --api-audiences (a real process)', () => {
  it(
    'refuses tokens meant for the apiserver, accepts its own audience; refuses rebinding Hosts and malformed escapes before auth',
    async () => {
      await createNs(admin, 'aud');
      await admin.post('/api/v1/namespaces/aud/serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'caller' } });
      await admin.post(`${RBAC}/clusterroles`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'metrics-get' },
        rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
      });
      await admin.post(`${RBAC}/clusterrolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'metrics-get' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'metrics-get' },
        subjects: [{ kind: 'ServiceAccount', name: 'caller', namespace: 'aud' }],
      });
      const tokenFor = async (audiences?: string[]): Promise<string> =>
        (
          await admin.post<{ status: { token: string } }>('/api/v1/namespaces/aud/serviceaccounts/caller/token', {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: { expirationSeconds: 3600, ...(audiences === undefined ? {} : { audiences }) },
          })
        ).status.token;
      const apiToken = await tokenFor();
      const ownToken = await tokenFor(['sits-activator']);

      act = spawn(
        process.execPath,
        [
          join(ROOT, 'bin/sits.mjs'),
          'activator',
          `--kubeconfig=${plane.kubeconfigPath}`,
          '--insecure-localhost',
          `--port=${port}`,
          '--api-audiences=sits-activator',
        ],
        { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      act.stdout?.setEncoding('utf8').on('data', (d: string) => log.push(d));
      act.stderr?.setEncoding('utf8').on('data', (d: string) => log.push(d));
      await waitFor('the activator serving', () => Promise.resolve(log.join('').includes('activator: serving')), scaled(120_000), 250);

      const refused = await get('/metrics', { token: apiToken });
      expect(refused.status).toBe(401);
      expect(refused.body).toMatch(/Unauthorized/);
      expect((await get('/metrics', { token: ownToken })).status).toBe(200);

      const rebound = await get('/metrics', { token: ownToken, host: `attacker.example:${port}` });
      expect(rebound.status).toBe(421);
      expect(rebound.body).not.toMatch(/# HELP/);

      const bad = await get('/namespaces/aud/inferenceservices/x/proxy/%zz', { token: ownToken });
      expect(bad.status).toBe(400);
      expect((await get(`/made-up/${Date.now()}`, { token: ownToken })).status).toBe(404);
      await new Promise((r) => setTimeout(r, 200));
      const text = log.join('');
      expect(text).toMatch(/bad request: malformed %-escape/);
      expect(text).not.toMatch(/auth \/namespaces/);
      expect(act.exitCode).toBeNull();
    },
    scaled(240_000),
  );
});
