// Issue 12, scale from zero on the first request (ADR 0149): kube-apiserver + etcd, kube-controller-manager's
// endpointslice controller, the SITS scheduler, the workload controllers with the serving loop, and the fake
// kubelet running the llama-server stand-in (llama.cpp on CPU) for the replicas. `sits activator` runs on its
// secure port (TLS, callers checked by TokenReview and SubjectAccessReview) as a ServiceAccount bound to exactly
// the rules it ships with. A request for a service at zero replicas is held, the activation stamped, the service
// scaled 0 → 1 by the SITS autoscaler, and the request answered by the new replica; streaming passes through.
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { activatorResource, startActivator, type Activator } from './activator.ts';
import { serviceAccountClient, type Account } from '../../kits/service-account-testing.ts';
import { freePorts } from '../../harness/control-plane.ts';
import { createNs, waitFor } from '../../harness/e2e-kit.ts';
import { devPodAddress } from '../../harness/llm/engine-pods.ts';
import { parsePromText, sampleValue } from '../../harness/prom-text.ts';
import { ensureTinyModel } from '../../harness/llm/tiny-model.ts';
import { selfSignedServing } from '../../kube/secure/certs.ts';
import { subjectAccessReviewAuthorizer, tokenReviewAuthenticator } from '../../kube/secure/delegated-auth.ts';
import { ACTIVATOR_RULES, INFERENCE_CALLER_RULES } from '../../deploy/rbac.ts';
import { MODEL_DIR } from '../../serving/pod-template.ts';
import type { InferenceServiceObject } from '../../controllers/inference-service/model.ts';

const NS = 'act';
const ZERO = 'zero';
const PARKED = 'parked';
const isvcs = `/apis/ai.sits2026.dev/v1/namespaces/${NS}/inferenceservices`;

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

describe('sits activator', () => {
  let cluster: DevCluster;
  let activator: Activator;
  let ca = '';
  let caller: Account;
  let stranger: Account;
  const logs: string[] = [];

  const call = (path: string, o: { token?: string; body?: unknown; method?: string } = {}): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const data = o.body === undefined ? undefined : JSON.stringify(o.body);
      const req = request(
        `${activator.url}${path}`,
        {
          method: o.method ?? (data === undefined ? 'GET' : 'POST'),
          ca,
          headers: {
            ...(o.token === undefined ? {} : { Authorization: `Bearer ${o.token}` }),
            ...(data === undefined ? {} : { 'Content-Type': 'application/json' }),
          },
          timeout: 300_000,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(data);
    });

  const createService = async (name: string, autoscaling: Record<string, unknown>): Promise<void> => {
    const [port] = (await freePorts(1)) as [number];
    await cluster.client.post(isvcs, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'InferenceService',
      metadata: { name },
      spec: {
        runtime: 'llamacpp',
        model: { uri: 'pvc://models/tiny.gguf', name },
        gpusPerReplica: 0,
        port,
        replicas: 0,
        minReplicas: 0,
        maxReplicas: 1,
        progressDeadlineSeconds: 600,
        autoscaling,
      },
    });
  };
  const svc = (name: string): Promise<InferenceServiceObject> => cluster.client.get<InferenceServiceObject>(`${isvcs}/${name}`);

  beforeAll(async () => {
    const { model } = ensureTinyModel();
    cluster = await startDevCluster({
      nodes: 1,
      shape: 'dgx-h100',
      log: (m) => logs.push(m),
      engines: { paths: { [MODEL_DIR]: model }, probeEveryMs: 200, log: (l) => logs.push(l) },
      controllers: {
        log: (m) => logs.push(`controller: ${m}`),
        serving: {
          intervalMs: 1000,
          resolveAddress: devPodAddress,
          retry: { attempts: 3, baseDelayMs: 100, timeoutMs: 10_000 },
          policy: { historyWindowSec: 15, smoothingSec: 1, panicWindowSec: 3, calibrationSec: 5, minThreshold: 2000, idleToZeroSec: 15 },
        },
      },
    });
    await cluster.plane.startControllerManager({ controllers: ['endpointslice-controller'] });
    await createNs(cluster.client, NS);
    await createNs(cluster.client, 'sits-system');
    // The activator's own identity: exactly the rules the chart gives it.
    const own = await serviceAccountClient(cluster.client, cluster.plane, { namespace: 'sits-system', name: 'sits-activator', rules: ACTIVATOR_RULES });
    caller = await serviceAccountClient(cluster.client, cluster.plane, { namespace: NS, name: 'app', rules: INFERENCE_CALLER_RULES, namespaced: true });
    stranger = await serviceAccountClient(cluster.client, cluster.plane, { namespace: NS, name: 'stranger', rules: [], namespaced: true });
    // The apiserver's RBAC authorizer sees new bindings through its informers.
    await waitFor('the activator identity may list endpointslices', () => own.client.get('/apis/discovery.k8s.io/v1/endpointslices').then(() => true), 30_000);
    const tls = await selfSignedServing(['localhost'], ['127.0.0.1']);
    ca = tls.ca;
    activator = await startActivator(own.client, {
      port: 0,
      host: '127.0.0.1',
      tls,
      authn: tokenReviewAuthenticator(own.client),
      authz: subjectAccessReviewAuthorizer(own.client, { resourceFor: activatorResource }),
      holdTimeoutMs: 240_000,
      restampMs: 2000,
      resolveAddress: devPodAddress,
      log: (m) => logs.push(m),
    });
    // A service the SITS autoscaler leaves alone (external): activation is stamped, nothing scales it.
    await createService(PARKED, { mode: 'external' });
  }, 240_000);

  afterAll(async () => {
    if (process.env.SITS_ACTIVATOR_E2E_LOG !== undefined) (await import('node:fs')).writeFileSync(process.env.SITS_ACTIVATOR_E2E_LOG, logs.join('\n'));
    await activator?.close();
    await cluster?.stop();
  });

  it('refuses callers without the right before anything else, and unknown services', async () => {
    await createService(ZERO, { tokensPerSecondPerReplica: 3000, scaleDownStabilizationSeconds: 2 });
    const path = `/namespaces/${NS}/inferenceservices/${ZERO}/proxy/v1/completions`;
    const body = { model: ZERO, prompt: 'hello', max_tokens: 4 };
    expect((await call(path, { body })).status).toBe(403); // anonymous
    const denied = await call(path, { body, token: stranger.token });
    expect(denied.status).toBe(403);
    expect(denied.body).toContain(stranger.user);
    expect((await call(path, { body, token: 'not-a-token' })).status).toBe(401);
    // Nobody allowed asked: no activation stamped.
    expect((await svc(ZERO)).metadata.annotations?.['ai.sits2026.dev/activate']).toBeUndefined();
    const unknown = await call(`/namespaces/${NS}/inferenceservices/nope/proxy/v1/models`, { token: caller.token });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatch(/InferenceService act\/nope not found/);
    expect((await call('/v1/models', { token: caller.token })).status).toBe(403); // a non-resource path nobody granted
  });

  it('holds the first request for a service at zero, activates it, and answers from the new replica', async () => {
    // A new service starts with one replica, as a new Knative revision does (initial scale 1), and goes to zero
    // after a whole idle period the loop observed (ADR 0126); then no endpoint is left.
    await waitFor(
      'scaled to zero',
      async () => {
        const s = await svc(ZERO);
        return s.spec.replicas === 0 && s.status?.replicas === 0 ? true : undefined;
      },
      240_000,
      250,
    );
    await waitFor('no endpoint left in the activator', async () => ((await svc(ZERO)).status?.readyReplicas ?? 0) === 0 || undefined, 60_000, 250);
    const t0 = Date.now();
    const first = call(`/namespaces/${NS}/inferenceservices/${ZERO}/proxy/v1/completions`, {
      token: caller.token,
      body: { model: ZERO, prompt: 'hello from zero', max_tokens: 8 },
    });
    await waitFor('the request held', async () => (activator.held(NS, ZERO) === 1 ? true : undefined), 30_000, 50);
    const stamped = await waitFor('the activation stamped', async () => (await svc(ZERO)).metadata.annotations?.['ai.sits2026.dev/activate'], 30_000, 100);
    expect(Date.parse(stamped)).toBeGreaterThanOrEqual(t0 - 1000);
    const a = await first;
    expect(a.status, a.body).toBe(200);
    const out = JSON.parse(a.body) as { choices: { text: string }[]; usage: { completion_tokens: number } };
    expect(out.usage.completion_tokens).toBeGreaterThan(0);
    expect(activator.held(NS, ZERO)).toBe(0);
    expect((await svc(ZERO)).spec.replicas).toBe(1);
    expect(cluster.controllers?.serving?.decisions.filter((d) => d.service === `${NS}/${ZERO}`).at(-1)).toMatchObject({ from: 0, to: 1 });
  });

  it('routes to the ready replica at once and streams server-sent events through', async () => {
    const r = await call(`/namespaces/${NS}/inferenceservices/${ZERO}/proxy/v1/completions`, {
      token: caller.token,
      body: { model: ZERO, prompt: 'stream me', max_tokens: 6, stream: true },
    });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/text\/event-stream/);
    const events = r.body.split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.at(-1)).toBe('data: [DONE]');
    expect(events.length).toBeGreaterThan(2);
    const models = await call(`/namespaces/${NS}/inferenceservices/${ZERO}/proxy/v1/models`, { token: caller.token });
    expect(models.status).toBe(200);
    expect(JSON.parse(models.body)).toMatchObject({ object: 'list' });
  });

  it('answers 503 after the hold timeout when no replica comes, and counts it in its metrics', async () => {
    // A second activator with a short hold: the parked service's autoscaler is external, so nothing scales it.
    const own = await serviceAccountClient(cluster.client, cluster.plane, { namespace: 'sits-system', name: 'sits-activator', rules: ACTIVATOR_RULES });
    const short = await startActivator(own.client, {
      port: 0,
      host: '127.0.0.1',
      tls: await selfSignedServing(['localhost'], ['127.0.0.1']).then((p) => {
        ca = p.ca;
        return p;
      }),
      authn: tokenReviewAuthenticator(own.client),
      authz: subjectAccessReviewAuthorizer(own.client, { resourceFor: activatorResource }),
      holdTimeoutMs: 3000,
      restampMs: 1000,
      resolveAddress: devPodAddress,
    });
    const keep = activator;
    activator = short;
    try {
      const t0 = Date.now();
      const r = await call(`/namespaces/${NS}/inferenceservices/${PARKED}/proxy/v1/completions`, { token: caller.token, body: { prompt: 'x' } });
      expect(r.status).toBe(503);
      expect(r.headers['retry-after']).toBe('5');
      expect(r.body).toMatch(/no replica of InferenceService act\/parked became ready within 3s/);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(2900);
      expect((await svc(PARKED)).metadata.annotations?.['ai.sits2026.dev/activate']).toBeDefined();
      expect((await svc(PARKED)).spec.replicas).toBe(0);
      const text = await short.registry.metrics();
      const fams = parsePromText(text);
      const code = (n: string, labels: Record<string, string>): number | undefined => sampleValue(fams, n, labels);
      expect(code('sits_activator_requests_total', { namespace: NS, inferenceservice: PARKED, code: '503' })).toBe(1);
      expect(code('sits_activator_held_requests', { namespace: NS, inferenceservice: PARKED })).toBe(0);
      expect(code('sits_activator_activations_total', { namespace: NS, inferenceservice: PARKED })).toBeGreaterThanOrEqual(2);
      // Shutting down with a drain: not ready, new requests refused at once, a held request still ends by its hold.
      const held = call(`/namespaces/${NS}/inferenceservices/${PARKED}/proxy/v1/completions`, { token: caller.token, body: { prompt: 'x' } });
      await waitFor('a second request held', async () => (short.held(NS, PARKED) === 1 ? true : undefined), 30_000, 50);
      const closing = short.close({ drainMs: 60_000 });
      await waitFor('not ready while draining', async () => ((await call('/readyz')).status === 503 ? true : undefined), 30_000, 50);
      const refused = await call(`/namespaces/${NS}/inferenceservices/${ZERO}/proxy/v1/models`, { token: caller.token });
      expect(refused.status).toBe(503);
      expect(refused.body).toMatch(/shutting down/);
      expect((await held).body).toMatch(/became ready within 3s/);
      await closing;
    } finally {
      activator = keep;
      await short.close();
    }
  });
});
