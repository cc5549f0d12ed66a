// Issue 36, finding 6 (the auth half) and the activator-audience finding, against a real kube-apiserver + etcd:
// a secure server over real HTTPS with the delegated authn/authz every SITS listener uses (delegatedAuth).
// The attack: 10 000 requests with distinct made-up bearer tokens and 10 000 anonymous requests to distinct
// made-up paths, while a legitimate extender-style caller keeps calling /bind (whose handler uses the binding
// client) and the binding client keeps talking to the apiserver. The apiserver's own apiserver_request_total
// counts the TokenReviews and SubjectAccessReviews that reached it: they must stay within the ReviewGate's
// budget (ADR 0177), not one per request; caches and RSS stay bounded; the legitimate calls are not starved.
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createNs } from '../../harness/e2e-kit.ts';
import { promSamples } from '../../harness/prom-text.ts';
import { scaled } from '../../testing/timeouts.ts';
import { selfSignedServing } from './certs.ts';
import { KubeClient } from '../client/client.ts';
import { delegatedAuth, type DelegatedAuth } from './delegated-auth.ts';
import { startSecureServer, type SecureServer } from './secure-server.ts';

const BINDER_TOKEN = randomBytes(24).toString('hex');
const FLOOD = 10_000;
const RBAC = '/apis/rbac.authorization.k8s.io/v1';

let plane: ControlPlane;
let admin: KubeClient;
let binding: KubeClient;
let ca = '';
let tls: Awaited<ReturnType<typeof selfSignedServing>>;
const open: { server: SecureServer; auth: DelegatedAuth }[] = [];

interface Answer {
  readonly status: number;
  readonly ms: number;
}

function call(url: string, path: string, o: { token?: string; method?: string; agent?: Agent } = {}): Promise<Answer> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, url),
      {
        method: o.method ?? 'POST',
        ca,
        servername: 'localhost',
        ...(o.agent !== undefined ? { agent: o.agent } : { agent: false }),
        headers: o.token === undefined ? {} : { Authorization: `Bearer ${o.token}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** apiserver_request_total summed over every label set of one resource: the reviews that reached the apiserver. */
async function reviewsAtApiserver(): Promise<{ tokenreviews: number; subjectaccessreviews: number }> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(`${plane.server}/metrics`, { rejectUnauthorized: false, headers: { Authorization: `Bearer ${plane.token}` } }, (res) => {
      let b = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (b += c));
      res.on('end', () => resolve(b));
    });
    req.on('error', reject);
    req.end();
  });
  const sum = (resource: string): number =>
    promSamples(text)
      .filter((s) => s.name === 'apiserver_request_total' && s.labels.resource === resource)
      .reduce((a, s) => a + s.value, 0);
  return { tokenreviews: sum('tokenreviews'), subjectaccessreviews: sum('subjectaccessreviews') };
}

async function serve(auth: DelegatedAuth): Promise<SecureServer> {
  const server = await startSecureServer({
    port: 0,
    host: '127.0.0.1',
    tls,
    authn: auth.authn,
    authz: auth.authz,
    // What the extender's bind does: one write through the binding client.
    handler: (_req, res) => {
      binding.get('/api/v1/namespaces/default').then(
        () => res.end('bound\n'),
        (e: unknown) => {
          res.statusCode = 500;
          res.end(String(e));
        },
      );
    },
  });
  open.push({ server, auth });
  return server;
}

beforeAll(async () => {
  plane = await startControlPlane({ tokens: [{ token: BINDER_TOKEN, user: 'binder', groups: [] }] });
  admin = new KubeClient(plane.kubeConfig());
  binding = new KubeClient(plane.kubeConfig(), { userAgent: 'binding-client' });
  tls = await selfSignedServing(['localhost'], ['127.0.0.1']);
  ca = tls.ca;
  // kube-scheduler's extender rights (EXTENDER_CALLER_RULES' shape): POST /bind, for the binder and any ServiceAccount.
  await admin.post(`${RBAC}/clusterroles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'bind-caller' },
    rules: [{ nonResourceURLs: ['/bind'], verbs: ['post'] }],
  });
  await admin.post(`${RBAC}/clusterrolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'bind-caller' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'bind-caller' },
    subjects: [
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'binder' },
      { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:serviceaccounts' },
    ],
  });
}, scaled(180_000));

afterAll(async () => {
  for (const o of open) {
    await o.server.close();
    o.auth.close();
  }
  binding?.close();
  admin?.close();
  await plane?.stop();
});

describe('delegated auth under a flood of unauthenticated callers (issue 36, finding 6)', () => {
  it(
    '10k made-up tokens and 10k anonymous made-up paths: reviews stay within the gate, caches and RSS bounded, the binder is not starved',
    async () => {
      // Short positive TTLs: the binder's token and review expire many times during the flood and must be re-reviewed then.
      const auth = delegatedAuth(binding, { paths: ['/bind'], cache: { tokenAllowTtlMs: 300, sarAllowTtlMs: 300, maxEntries: 1000 } });
      const server = await serve(auth);
      expect((await call(server.url, '/bind', { token: BINDER_TOKEN })).status).toBe(200);
      const before = await reviewsAtApiserver();
      const rss0 = process.memoryUsage().rss;
      const agent = new Agent({ keepAlive: true, maxSockets: 64, ca });
      const statuses = { token: new Map<number, number>(), path: new Map<number, number>() };
      const flood = async (kind: 'token' | 'path', n: number, workers: number): Promise<void> => {
        let next = 0;
        await Promise.all(
          Array.from({ length: workers }, async () => {
            while (next < n) {
              next++;
              const r =
                kind === 'token'
                  ? await call(server.url, '/bind', { token: randomBytes(24).toString('base64url'), agent })
                  : await call(server.url, `/${randomBytes(12).toString('hex')}/${randomBytes(6).toString('hex')}`, { method: 'GET', agent });
              statuses[kind].set(r.status, (statuses[kind].get(r.status) ?? 0) + 1);
            }
          }),
        );
      };
      let flooding = true;
      const legit: Answer[] = [];
      const direct: number[] = [];
      const binder = (async () => {
        while (flooding) {
          legit.push(await call(server.url, '/bind', { token: BINDER_TOKEN }));
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const bindingCalls = (async () => {
        while (flooding) {
          const t0 = performance.now();
          await binding.get('/api/v1/namespaces/default');
          direct.push(performance.now() - t0);
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const t0 = performance.now();
      await Promise.all([flood('token', FLOOD, 24), flood('path', FLOOD, 24)]);
      const elapsedS = (performance.now() - t0) / 1000;
      flooding = false;
      await Promise.all([binder, bindingCalls]);
      agent.destroy();
      const after = await reviewsAtApiserver();
      const rssGrowthMb = (process.memoryUsage().rss - rss0) / 2 ** 20;
      const tr = after.tokenreviews - before.tokenreviews;
      const sar = after.subjectaccessreviews - before.subjectaccessreviews;
      const maxLegit = Math.max(...legit.map((a) => a.ms));
      const sorted = [...legit.map((a) => a.ms)].sort((a, b) => a - b);
      const report = {
        elapsedS: Math.round(elapsedS * 10) / 10,
        tokenReviews: tr,
        subjectAccessReviews: sar,
        gate: auth.gate.stats,
        caches: auth.cacheSizes(),
        rssGrowthMb: Math.round(rssGrowthMb),
        tokenStatuses: Object.fromEntries(statuses.token),
        pathStatuses: Object.fromEntries(statuses.path),
        binderCalls: legit.length,
        binderP50Ms: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0),
        binderMaxMs: Math.round(maxLegit),
        bindingClientMaxMs: Math.round(Math.max(...direct)),
      };
      console.log(`flood: ${JSON.stringify(report)}`);

      // Every made-up token was refused (401, or 429 when over the budget); none reached the handler.
      expect([...statuses.token.keys()].every((s) => s === 401 || s === 429)).toBe(true);
      expect([...statuses.token.values()].reduce((a, b) => a + b, 0)).toBe(FLOOD);
      // Every made-up path is 404, without a SubjectAccessReview.
      expect(Object.fromEntries(statuses.path)).toEqual({ 404: FLOOD });
      // The apiserver saw at most the unknown lane's burst + rate over the flood, plus the binder's own re-reviews:
      // not one TokenReview per made-up token.
      const binderReviews = legit.length;
      expect(tr).toBeLessThanOrEqual(40 + Math.ceil(20 * elapsedS) + binderReviews + 5);
      expect(tr).toBeLessThan(FLOOD / 5);
      // SubjectAccessReviews: the binder's re-reviews only, none for the 10k paths.
      expect(sar).toBeLessThanOrEqual(binderReviews + 2);
      // Bounded caches (LRU of 1000 here), bounded memory.
      expect(auth.cacheSizes().tokens).toBeLessThanOrEqual(1000);
      expect(auth.cacheSizes().reviews).toBeLessThanOrEqual(2);
      expect(rssGrowthMb).toBeLessThan(300);
      // The binder kept being served: every call 200, none waiting behind the flood's reviews.
      expect(legit.length).toBeGreaterThan(5);
      expect(legit.every((a) => a.status === 200)).toBe(true);
      expect(report.binderP50Ms).toBeLessThan(scaled(500));
      expect(maxLegit).toBeLessThan(scaled(1500));
      expect(Math.max(...direct)).toBeLessThan(scaled(1500));
    },
    scaled(300_000),
  );
});

describe('one made-up token, one served path (issue 36, finding 6)', () => {
  it(
    '2000 requests with the same bad token cost one TokenReview, 2000 anonymous calls of a served path one SubjectAccessReview',
    async () => {
      const auth = delegatedAuth(binding, { paths: ['/bind'] });
      const server = await serve(auth);
      const token = randomBytes(24).toString('base64url');
      const agent = new Agent({ keepAlive: true, maxSockets: 32, ca });
      const before = await reviewsAtApiserver();
      const answers = await Promise.all(Array.from({ length: 2000 }, () => call(server.url, '/bind', { token, agent })));
      agent.destroy();
      const after = await reviewsAtApiserver();
      expect(answers.every((a) => a.status === 401)).toBe(true);
      expect(after.tokenreviews - before.tokenreviews).toBe(1);
      expect(auth.gate.stats.sent).toBe(1);
      const anonymous = new Agent({ keepAlive: true, maxSockets: 32, ca });
      const denied = await Promise.all(Array.from({ length: 2000 }, () => call(server.url, '/bind', { agent: anonymous })));
      anonymous.destroy();
      const last = await reviewsAtApiserver();
      expect(denied.every((a) => a.status === 403)).toBe(true);
      expect(last.subjectaccessreviews - after.subjectaccessreviews).toBe(1);
    },
    scaled(120_000),
  );
});

describe('token audiences (issue 36, finding 7: the activator accepted tokens meant for the apiserver)', () => {
  it(
    'with audiences set, a token for the apiserver or another audience is refused and one for the server is accepted',
    async () => {
      await createNs(admin, 'aud');
      await admin.post('/api/v1/namespaces/aud/serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'caller' } });
      const tokenFor = async (audiences?: string[]): Promise<string> =>
        (
          await admin.post<{ status: { token: string } }>('/api/v1/namespaces/aud/serviceaccounts/caller/token', {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: { expirationSeconds: 3600, ...(audiences === undefined ? {} : { audiences }) },
          })
        ).status.token;
      const apiToken = await tokenFor();
      const activatorToken = await tokenFor(['sits-activator']);
      const vaultToken = await tokenFor(['vault']);

      // Without audiences (the default): a token meant for the apiserver opens the server, as before.
      const plain = await serve(delegatedAuth(binding, { paths: ['/bind'] }));
      expect((await call(plain.url, '/bind', { token: apiToken })).status).toBe(200);

      const scoped = await serve(delegatedAuth(binding, { paths: ['/bind'], audiences: ['sits-activator'] }));
      expect((await call(scoped.url, '/bind', { token: apiToken })).status).toBe(401);
      expect((await call(scoped.url, '/bind', { token: vaultToken })).status).toBe(401);
      expect((await call(scoped.url, '/bind', { token: activatorToken })).status).toBe(200);
      // The static (audience-less) token of the apiserver's token file is refused too: it is not for sits-activator.
      expect((await call(scoped.url, '/bind', { token: BINDER_TOKEN })).status).toBe(401);
    },
    scaled(60_000),
  );
});
