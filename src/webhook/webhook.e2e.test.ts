// The admission webhook called by a real kube-apiserver: the apiserver authenticates to it with a token
// (WebhookAdmission kubeConfigFile), the webhook checks that token with a TokenReview and the caller's right
// to POST /validate with a SubjectAccessReview, serves a certificate from its own CA (published into the
// caBundle by itself), and answers: a denied object is not stored, a warned one is, a dry run has no side
// effects, audit mode records Events, failurePolicy decides when the webhook is down, and certificates rotate
// under load without a single failed call.
import { randomBytes } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApiError, KubeClient } from '../kube/client/client.ts';
import { freePorts, startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { admissionPlaneSetup, grantAdmissionCaller } from '../harness/admission-plane.ts';
import { WEBHOOK_CALLER_RULES } from '../app/dev-webhook.ts';
import { createNs, waitFor } from '../harness/e2e-kit.ts';
import { parsePromText, sampleValue } from '../harness/prom-text.ts';
import type { Rule } from '../guard/rule.ts';
import { OPT_IN_LABEL, DEFAULT_QUEUE_ANNOTATION } from './admission.ts';
import { startWebhook, type RunningWebhook } from './start.ts';
import { scaled } from '../testing/timeouts.ts';

let APISERVER_TOKEN = '';
const NOBODY_TOKEN = randomBytes(16).toString('hex');

// Real rules (the product's rule set is tested by the validation framework suite); these two keep this file
// about the webhook machinery.
const rules: Rule[] = [
  {
    id: 'e2e-visible-devices',
    severity: 'error',
    seed: '001 §2.2',
    title: 'hand-set CUDA_VISIBLE_DEVICES',
    rationale: 'r',
    kinds: ['Pod'],
    fixtures: { bad: '', good: '' },
    check: (obj) =>
      ((obj.spec as { containers?: { env?: { name: string }[] }[] } | undefined)?.containers ?? []).flatMap((c, i) =>
        (c.env ?? []).flatMap((e, j) =>
          e.name === 'CUDA_VISIBLE_DEVICES' ? [{ message: 'remove it: SITS sets the devices it allocated', path: ['spec', 'containers', i, 'env', j] }] : [],
        ),
      ),
  },
  {
    id: 'e2e-latest-tag',
    severity: 'warning',
    seed: '001 §1',
    title: 'latest tag',
    rationale: 'r',
    kinds: ['Pod'],
    fixtures: { bad: '', good: '' },
    check: (obj) =>
      ((obj.spec as { containers?: { image?: string }[] } | undefined)?.containers ?? []).flatMap((c, i) =>
        c.image?.endsWith(':latest') === true ? [{ message: 'pin the image', path: ['spec', 'containers', i, 'image'] }] : [],
      ),
  },
];

const pod = (name: string, o: { env?: { name: string; value: string }[]; image?: string; gpus?: number } = {}): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: {
    containers: [
      {
        name: 'c',
        image: o.image ?? 'registry.example/train:1.0',
        ...(o.env !== undefined ? { env: o.env } : {}),
        ...(o.gpus !== undefined ? { resources: { limits: { 'nvidia.com/gpu': String(o.gpus) } } } : {}),
      },
    ],
  },
});

/** POST with the admin token, returning the body and the `Warning` headers kubectl would print. */
function createRaw(plane: ControlPlane, path: string, body: unknown, token = plane.token): Promise<{ status: number; body: string; warnings: string[] }> {
  return new Promise((resolve, reject) => {
    const u = new URL(path, plane.server);
    const data = JSON.stringify(body);
    const req = httpsRequest(
      u,
      {
        method: 'POST',
        rejectUnauthorized: false,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const w = res.headers.warning;
          const warnings = (w === undefined ? [] : Array.isArray(w) ? w : [w]).flatMap((s) => s.split(/,(?=\s*299 )/)).map((s) => s.trim());
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), warnings });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** A direct call to the webhook (not through the apiserver), with an optional bearer token. */
function callWebhook(url: string, path: string, token: string | undefined, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { uid: 'direct', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace: 'x', object: pod('direct') },
    };
    const data = JSON.stringify(review);
    const req = httpsRequest(
      new URL(path, url),
      {
        method: path === '/validate' ? 'POST' : 'GET',
        ca,
        servername: 'localhost',
        headers: { ...(token !== undefined ? { Authorization: `Bearer ${token}` } : {}), 'Content-Type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(path === '/validate' ? data : undefined);
  });
}

let plane: ControlPlane;
let client: KubeClient;
let dir: string;
let hook: RunningWebhook | undefined;
const NS = 'sits-system';
const SECRET = { namespace: NS, name: 'sits-webhook-tls' };

function validatingConfig(port: number, failurePolicy: 'Fail' | 'Ignore'): Record<string, unknown> {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'sits-guard-rails' },
    webhooks: [
      {
        name: 'validate.guard.sits2026.dev',
        clientConfig: { url: `https://localhost:${port}/validate` },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods'], scope: 'Namespaced' }],
        namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', NS] }] },
        failurePolicy,
        sideEffects: 'NoneOnDryRun',
        timeoutSeconds: 5,
        admissionReviewVersions: ['v1'],
      },
    ],
  };
}

function mutatingConfig(port: number): Record<string, unknown> {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'sits-defaults' },
    webhooks: [
      {
        name: 'mutate.defaults.sits2026.dev',
        clientConfig: { url: `https://localhost:${port}/mutate` },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' }],
        namespaceSelector: { matchLabels: { [OPT_IN_LABEL]: 'enabled' } },
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        timeoutSeconds: 5,
        admissionReviewVersions: ['v1'],
        reinvocationPolicy: 'Never',
      },
    ],
  };
}

let port: number;

async function startHook(
  mode: 'enforce' | 'audit',
  rotation: { caLifetimeMs?: number; certLifetimeMs?: number; checkIntervalMs?: number } = {},
): Promise<RunningWebhook> {
  return startWebhook({
    client,
    rules,
    mode,
    schedulerName: 'sits-scheduler',
    port,
    host: '127.0.0.1',
    tls: {
      rotation: {
        secret: SECRET,
        dnsNames: ['localhost'],
        ips: ['127.0.0.1'],
        validatingConfigs: ['sits-guard-rails'],
        mutatingConfigs: ['sits-defaults'],
        ...rotation,
      },
    },
  });
}

/** Waits until the apiserver calls the webhook with the current caBundle (its config informer is asynchronous). */
async function untilDenied(ns: string): Promise<void> {
  await waitFor('the apiserver to call the webhook', async () => {
    const r = await createRaw(plane, `/api/v1/namespaces/${ns}/pods?dryRun=All`, pod('probe', { env: [{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }] }));
    return r.status === 403 && r.body.includes('e2e-visible-devices');
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sits-webhook-e2e-'));
  // The apiserver presents a token to every webhook (WebhookAdmission kubeConfigFile), as docs/guard-rails.md says.
  const admission = admissionPlaneSetup(dir);
  APISERVER_TOKEN = admission.callerToken;
  plane = await startControlPlane({
    apiServerArgs: admission.apiServerArgs,
    tokens: [...admission.tokens, { token: NOBODY_TOKEN, user: 'nobody', groups: [] }],
  });
  client = new KubeClient(plane.kubeConfig());
  for (const ns of [NS, 'team', 'audit', 'defaults']) await createNs(client, ns);
  // What the chart grants the apiserver's identity: POST on the webhook paths, nothing else.
  await grantAdmissionCaller(client, WEBHOOK_CALLER_RULES);
  port = (await freePorts(1))[0] ?? 0;
  await client.post('/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', validatingConfig(port, 'Fail'));
  await client.post('/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', mutatingConfig(port));
  hook = await startHook('enforce');
  await untilDenied('team');
}, scaled(180_000));

afterAll(async () => {
  await hook?.close();
  client?.close();
  await plane?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the webhook behind a real kube-apiserver', () => {
  it('publishes its CA into both configurations and keeps its material in a Secret', async () => {
    const v = await client.get<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(
      '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/sits-guard-rails',
    );
    const m = await client.get<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(
      '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/sits-defaults',
    );
    const bundle = Buffer.from(v.webhooks[0]?.clientConfig.caBundle ?? '', 'base64').toString('utf8');
    expect(bundle).toContain('BEGIN CERTIFICATE');
    expect(m.webhooks[0]?.clientConfig.caBundle).toBe(v.webhooks[0]?.clientConfig.caBundle);
    const s = await client.get<{ type: string; data: Record<string, string> }>(`/api/v1/namespaces/${NS}/secrets/${SECRET.name}`);
    expect(s.type).toBe('kubernetes.io/tls');
    expect(Object.keys(s.data).sort()).toEqual(['ca-bundle.crt', 'ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
  });

  it('denies an object with an error finding, naming the rule and field, and does not store it', async () => {
    const r = await createRaw(plane, '/api/v1/namespaces/team/pods', pod('bad', { env: [{ name: 'CUDA_VISIBLE_DEVICES', value: '0,1' }] }));
    expect(r.status).toBe(403);
    const status = JSON.parse(r.body) as { message: string };
    expect(status.message).toContain('admission webhook "validate.guard.sits2026.dev" denied the request');
    expect(status.message).toContain('[e2e-visible-devices] spec.containers[0].env[0]: remove it: SITS sets the devices it allocated');
    await expect(client.get('/api/v1/namespaces/team/pods/bad')).rejects.toSatisfy((e: unknown) => e instanceof KubeApiError && e.status === 404);
  });

  it('stores a warned object and returns the warnings kubectl prints', async () => {
    const r = await createRaw(plane, '/api/v1/namespaces/team/pods', pod('warned', { image: 'registry.example/train:latest' }));
    expect(r.status).toBe(201);
    expect(r.warnings.some((w) => w.includes('[e2e-latest-tag] spec.containers[0].image: pin the image'))).toBe(true);
    await client.get('/api/v1/namespaces/team/pods/warned');
  });

  it('softens a controller-owned pod only when a controller identity sends it: a forged ownerReference is still denied (issue 36)', async () => {
    const cuda = { env: [{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }] };
    const owned = (name: string, ref: Record<string, unknown> | undefined): Record<string, unknown> => {
      const p = pod(name, cuda);
      return { ...p, metadata: { name, ...(ref !== undefined ? { ownerReferences: [ref] } : {}) } };
    };
    const owner = await client.post<{ metadata: { uid: string } }>('/api/v1/namespaces/team/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'owner' },
    });
    const madeUp = {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'TrainingJob',
      name: 'no-such-job',
      uid: '00000000-0000-4000-8000-000000000000',
      controller: true,
    };
    const realOwner = { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid, controller: true };
    // The attack: a user (any who may create pods) writes `controller: true` naming a made-up owner, or a real one.
    for (const [name, ref] of [
      ['forged-made-up', madeUp],
      ['forged-real-owner', realOwner],
    ] as const) {
      const r = await createRaw(plane, '/api/v1/namespaces/team/pods', owned(name, ref));
      expect(r.status, name).toBe(403);
      expect(r.body).toContain('[e2e-visible-devices] spec.containers[0].env[0]');
      await expect(client.get(`/api/v1/namespaces/team/pods/${name}`)).rejects.toSatisfy((e: unknown) => e instanceof KubeApiError && e.status === 404);
    }
    // The controllers' own ServiceAccount (the chart's sits-controllers in the SITS namespace), with a real token.
    await client.post(`/api/v1/namespaces/${NS}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sits-controllers' } });
    // The right the controllers have on pods (a Role of its own: the aggregated `edit` is filled by kube-controller-manager).
    await client.post('/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'pod-writer' },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['create'] }],
    });
    await client.post('/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'controllers-pods' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-writer' },
      subjects: [{ kind: 'ServiceAccount', name: 'sits-controllers', namespace: NS }],
    });
    const tr = await client.post<{ status: { token: string } }>(`/api/v1/namespaces/${NS}/serviceaccounts/sits-controllers/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600 },
    });
    let byController = { status: 0, body: '', warnings: [] as string[] };
    await waitFor('the controller RoleBinding to take effect', async () => {
      byController = await createRaw(plane, '/api/v1/namespaces/team/pods', owned('by-controller', realOwner), tr.status.token);
      return byController.status !== 403 || byController.body.includes('e2e-visible-devices');
    });
    expect(byController.status, byController.body).toBe(201);
    expect(
      byController.warnings.some((w) =>
        w.includes("[e2e-visible-devices] spec.containers[0].env[0]: remove it: SITS sets the devices it allocated (a controller's pod: fix its owner)"),
      ),
    ).toBe(true);
    // The same identity without an ownerReference: a pod of its own, judged as any.
    const unowned = await createRaw(plane, '/api/v1/namespaces/team/pods', owned('by-controller-unowned', undefined), tr.status.token);
    expect(unowned.status).toBe(403);
  });

  it('counts findings by rule and reports them, but a dry run leaves no trace', async () => {
    const before = hook?.report.view().recent.length ?? 0;
    const dry = await createRaw(plane, '/api/v1/namespaces/team/pods?dryRun=All', pod('dry', { env: [{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }] }));
    expect(dry.status).toBe(403);
    expect(hook?.report.view().recent.length).toBe(before);
    const text = await hook?.metrics.registry.metrics();
    const families = parsePromText(text ?? '');
    expect(sampleValue(families, 'sits_webhook_findings_total', { rule: 'e2e-visible-devices', severity: 'error', mode: 'enforce' })).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(families, 'sits_webhook_reviews_total', { webhook: 'validate', kind: 'Pod', operation: 'CREATE', result: 'denied' }),
    ).toBeGreaterThanOrEqual(2);
    expect(hook?.report.view().byRule['e2e-visible-devices']?.error).toBeGreaterThanOrEqual(1);
  });

  it('answers only callers the apiserver authenticates and authorizes', async () => {
    const ca = hook?.rotation?.material?.caBundle ?? '';
    expect((await callWebhook(hook?.url ?? '', '/validate', undefined, ca)).status).toBe(403);
    expect((await callWebhook(hook?.url ?? '', '/validate', 'not-a-token', ca)).status).toBe(401);
    const nobody = await callWebhook(hook?.url ?? '', '/validate', NOBODY_TOKEN, ca);
    expect(nobody.status).toBe(403);
    expect(nobody.body).toContain('user "nobody" cannot post path "/validate"');
    expect((await callWebhook(hook?.url ?? '', '/validate', APISERVER_TOKEN, ca)).status).toBe(200);
    expect((await callWebhook(hook?.url ?? '', '/metrics', APISERVER_TOKEN, ca)).status).toBe(403);
    expect((await callWebhook(hook?.url ?? '', '/metrics', plane.token, ca)).status).toBe(200);
    expect((await callWebhook(hook?.url ?? '', '/healthz', undefined, ca)).status).toBe(200);
  });

  it('mutates GPU pods of an opted-in namespace to the SITS scheduler and its default queue', async () => {
    await client.mergePatch('/api/v1/namespaces/defaults', {
      metadata: { labels: { [OPT_IN_LABEL]: 'enabled' }, annotations: { [DEFAULT_QUEUE_ANNOTATION]: 'research' } },
    });
    await waitFor('the webhook to see the namespace label', () => Promise.resolve(hook?.cache.namespace('defaults')?.labels[OPT_IN_LABEL] === 'enabled'));
    const created = await client.post<{ spec: { schedulerName: string }; metadata: { labels?: Record<string, string> } }>(
      '/api/v1/namespaces/defaults/pods',
      pod('gpu', { gpus: 1 }),
    );
    expect(created.spec.schedulerName).toBe('sits-scheduler');
    expect(created.metadata.labels?.['ai.sits2026.dev/queue']).toBe('research');
    const cpu = await client.post<{ spec: { schedulerName: string } }>('/api/v1/namespaces/defaults/pods', pod('cpu'));
    expect(cpu.spec.schedulerName).toBe('default-scheduler');
  });

  it(
    'rotates its certificates under load without one failed call',
    async () => {
      await hook?.close();
      // Material in the Secret is renewed by its own lifetime: start from none, so the short lifetimes apply.
      await client.delete(`/api/v1/namespaces/${NS}/secrets/${SECRET.name}`);
      // CA every 12 s, serving certificate every 6 s, checked every second: within 20 s at least one CA change
      // (old and new CA side by side in the bundle) and several serving certificates.
      hook = await startHook('enforce', { caLifetimeMs: 12_000, certLifetimeMs: 6_000, checkIntervalMs: 1_000 });
      await untilDenied('team');
      const seen = new Set<string>();
      const cas = new Set<string>();
      const failures: string[] = [];
      const end = performance.now() + 20_000;
      let calls = 0;
      while (performance.now() < end) {
        const m = hook.rotation?.material;
        if (m !== undefined) {
          seen.add(m.cert);
          cas.add(m.caBundle.split('-----END CERTIFICATE-----')[0] ?? '');
        }
        const r = await createRaw(plane, '/api/v1/namespaces/team/pods?dryRun=All', pod('rot', { env: [{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }] }));
        calls++;
        if (!(r.status === 403 && r.body.includes('e2e-visible-devices'))) failures.push(`${r.status} ${r.body.slice(0, 300)}`);
        await new Promise((res) => setTimeout(res, 100));
      }
      expect(failures).toEqual([]);
      expect(calls).toBeGreaterThan(20);
      expect(seen.size).toBeGreaterThanOrEqual(3);
      expect(cas.size).toBeGreaterThanOrEqual(2);
    },
    scaled(90_000),
  );

  it('audit mode stores the object and records the finding as an Event and in the report', async () => {
    await hook?.close();
    hook = await startHook('audit');
    await waitFor('the audit webhook to answer', async () => {
      const r = await createRaw(plane, '/api/v1/namespaces/audit/pods?dryRun=All', pod('probe', { env: [{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }] }));
      return r.status === 201;
    });
    const r = await createRaw(plane, '/api/v1/namespaces/audit/pods', pod('audited', { env: [{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }] }));
    expect(r.status).toBe(201);
    expect(r.warnings.some((w) => w.includes('audit: would deny: [e2e-visible-devices]'))).toBe(true);
    const ev = await waitFor('the PolicyViolation event', async () => {
      const list = await client.get<{ items: { reason?: string; message?: string; involvedObject?: { name?: string; kind?: string } }[] }>(
        '/api/v1/namespaces/audit/events',
      );
      return list.items.find((e) => e.reason === 'PolicyViolation' && e.involvedObject?.name === 'audited');
    });
    expect(ev.involvedObject?.kind).toBe('Pod');
    expect(ev.message).toContain('error [e2e-visible-devices] spec.containers[0].env[0]');
    expect(hook.report.view().recent.some((f) => f.name === 'audited' && f.rule === 'e2e-visible-devices' && !f.denied)).toBe(true);
    // The dry-run probes above left no events.
    const list = await client.get<{ items: { involvedObject?: { name?: string } }[] }>('/api/v1/namespaces/audit/events');
    expect(list.items.filter((e) => e.involvedObject?.name === 'probe')).toEqual([]);
  });

  it('when the webhook is down, failurePolicy decides: Fail refuses, Ignore admits', async () => {
    await hook?.close();
    hook = undefined;
    const refused = await createRaw(plane, '/api/v1/namespaces/team/pods', pod('while-down'));
    expect(refused.status).toBe(500);
    expect((JSON.parse(refused.body) as { message: string }).message).toContain('failed calling webhook "validate.guard.sits2026.dev"');
    const cfg = await client.get<Record<string, unknown> & { webhooks: { failurePolicy: string }[] }>(
      '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/sits-guard-rails',
    );
    for (const w of cfg.webhooks) w.failurePolicy = 'Ignore';
    await client.put('/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/sits-guard-rails', cfg);
    await waitFor('Ignore to take effect', async () => (await createRaw(plane, '/api/v1/namespaces/team/pods?dryRun=All', pod('while-down'))).status === 201);
    expect((await createRaw(plane, '/api/v1/namespaces/team/pods', pod('while-down'))).status).toBe(201);
  });
});
