// Seed 001 §4.4's validation framework: every anti-pattern the guard rules know (each rule's `bad` fixture) is
// injected into a running dev cluster — real kube-apiserver calling the webhook with its own identity, the SITS,
// KEDA and Kubeflow CRDs installed, GPU nodes of two models with RDMA — and the suite shows the verdict the user
// gets at apply time and what the webhook makes observable: enforce denies errors (nothing stored) and warns
// about warnings (stored); audit stores everything and leaves a PolicyViolation Event per finding; the
// findings metric counts each rule; the `good` fixtures pass clean.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { startDevWebhook } from '../app/dev-webhook.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { waitFor } from '../harness/e2e-kit.ts';
import { parsePromText, sampleValue } from '../harness/prom-text.ts';
import { KubeApiError, type KubeClient } from '../kube/client/client.ts';
import { nodeObjectFor } from '../kube/cache/labels.ts';
import { FIXTURE_CLUSTER, RULES } from '../guard/rules/index.ts';
import { lintObjects } from '../guard/engine.ts';
import type { KubeObject, Rule } from '../guard/rule.ts';
import type { RunningWebhook } from './start.ts';
import { RELATED_KINDS } from './context-cache.ts';
import { scaled } from '../testing/timeouts.ts';

/** Where each kind of the fixtures is served (the SITS, KEDA and Kubeflow CRDs are installed). */
const REST: Record<string, { readonly path: string; readonly namespaced: boolean }> = {
  Pod: { path: '/api/v1', namespaced: true },
  Service: { path: '/api/v1', namespaced: true },
  PersistentVolumeClaim: { path: '/api/v1', namespaced: true },
  Deployment: { path: '/apis/apps/v1', namespaced: true },
  StatefulSet: { path: '/apis/apps/v1', namespaced: true },
  ReplicaSet: { path: '/apis/apps/v1', namespaced: true },
  DaemonSet: { path: '/apis/apps/v1', namespaced: true },
  Job: { path: '/apis/batch/v1', namespaced: true },
  CronJob: { path: '/apis/batch/v1', namespaced: true },
  HorizontalPodAutoscaler: { path: '/apis/autoscaling/v2', namespaced: true },
  PriorityClass: { path: '/apis/scheduling.k8s.io/v1', namespaced: false },
  ScaledObject: { path: '/apis/keda.sh/v1alpha1', namespaced: true },
  PyTorchJob: { path: '/apis/kubeflow.org/v1', namespaced: true },
  TrainingJob: { path: '/apis/ai.sits2026.dev/v1', namespaced: true },
  InferenceService: { path: '/apis/ai.sits2026.dev/v1', namespaced: true },
  BatchInferenceJob: { path: '/apis/ai.sits2026.dev/v1', namespaced: true },
  PodGroup: { path: '/apis/ai.sits2026.dev/v1', namespaced: true },
};
const plural = (kind: string): string =>
  kind.endsWith('s') ? `${kind.toLowerCase()}es` : kind.endsWith('y') ? `${kind.toLowerCase().slice(0, -1)}ies` : `${kind.toLowerCase()}s`;

interface Outcome {
  readonly label: string;
  readonly status: 'created' | 'denied' | 'not-served' | 'invalid';
  readonly message: string;
  readonly warnings: readonly string[];
}

let cluster: DevCluster;
let client: KubeClient;
let hook: RunningWebhook;

/** Creates through the apiserver and keeps what the user would see: the verdict and the Warning headers. */
async function createDoc(o: KubeObject): Promise<Outcome & { path?: string }> {
  const kind = String(o.kind);
  const md = (o.metadata ?? {}) as { name?: string; namespace?: string };
  const label = `${kind} ${md.namespace ?? ''}/${md.name ?? ''}`;
  const r = REST[kind];
  if (r === undefined) return { label, status: 'not-served', message: `${kind} is not served by this cluster`, warnings: [] };
  const ns = md.namespace ?? 'default';
  const collection = `${r.path}${r.namespaced ? `/namespaces/${ns}` : ''}/${plural(kind)}`;
  const warnings: string[] = [];
  try {
    await client.request('POST', collection, { body: o, onWarning: (w: string) => warnings.push(w) });
    return { label, status: 'created', message: '', warnings, path: `${collection}/${md.name ?? ''}` };
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 403 && e.message.includes('denied the request'))
      return { label, status: 'denied', message: e.message, warnings };
    if (e instanceof KubeApiError && (e.status === 422 || e.status === 400)) return { label, status: 'invalid', message: e.message, warnings };
    throw e;
  }
}

const docsOf = (yaml: string): KubeObject[] => parseAllDocuments(yaml).map((d) => d.toJS() as KubeObject);

/** Applies a fixture's documents in order, each after the webhook's caches hold the ones before; then removes them. */
async function inject(yaml: string): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const created: string[] = [];
  for (const o of docsOf(yaml)) {
    const out = await createDoc(o);
    outcomes.push(out);
    if (out.path !== undefined) created.push(out.path);
    const md = (o.metadata ?? {}) as { name?: string; namespace?: string };
    // Every kind the cache holds, PodGroup included: a StatefulSet checked before its PodGroup reached the cache
    // drew gang-without-min-member in a loaded CI run.
    if (out.status === 'created' && RELATED_KINDS.includes(String(o.kind)) && !hook.cache.skipped.includes(String(o.kind)))
      await waitFor(`the webhook cache to hold ${out.label}`, () =>
        Promise.resolve(
          hook.cache.related(md.namespace ?? 'default', { kind: '' }).some((x) => x.kind === o.kind && (x.metadata as { name?: string }).name === md.name),
        ),
      );
  }
  for (const p of created.reverse()) {
    await client.delete(p).catch(() => undefined);
    // No controller-manager here to finish the protection finalizer of a PVC: do its part.
    if (p.includes('/persistentvolumeclaims/')) await client.mergePatch(p, { metadata: { finalizers: null } }).catch(() => undefined);
  }
  for (const o of docsOf(yaml)) {
    const md = (o.metadata ?? {}) as { name?: string; namespace?: string };
    await waitFor('the webhook cache to forget the fixture', () =>
      Promise.resolve(
        !hook.cache.related(md.namespace ?? 'default', { kind: '' }).some((x) => x.kind === o.kind && (x.metadata as { name?: string }).name === md.name),
      ),
    );
  }
  return outcomes;
}

/** The documents of a fixture on which the rule itself fires (lint over the whole fixture, as the set). */
function hitDocs(rule: Rule, yaml: string): Set<number> {
  return new Set(lintObjects(docsOf(yaml), [rule], { cluster: FIXTURE_CLUSTER }).map((f) => f.object));
}

const mentions = (o: Outcome, id: string): boolean => o.message.includes(`[${id}]`) || o.warnings.some((w) => w.includes(`[${id}]`));

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 2, shape: 'dgx-h100', withScheduler: false, controllers: false, upstreamCrds: true, webhook: { mode: 'enforce' } });
  client = cluster.client;
  // A second GPU model and RDMA devices: the cluster facts the webhook reads from the nodes.
  const l4 = nodeObjectFor('l4x8-000', 'l4x8', { zone: 'zone-0', block: 'block-0', rack: 'rack-9' });
  await createFakeGpuNodes(cluster.plane.kubeConfig(), [{ ...l4, capacity: { ...l4.capacity, 'rdma/hca': '1' } }]);
  for (const ns of ['ml', 'other-ns']) await client.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  if (cluster.webhook === undefined) throw new Error('no webhook');
  hook = cluster.webhook;
  await waitFor('cluster facts from the nodes', () =>
    Promise.resolve((hook.cache.cluster().gpuModels ?? []).length >= 2 && hook.cache.cluster().rdma === true),
  );
  // The apiserver picks the webhook configuration up asynchronously: wait for a first denial.
  const probe = RULES.find((r) => r.id === 'hand-set-visible-devices');
  await waitFor(
    'the apiserver to call the webhook',
    async () => {
      const o = docsOf(probe?.fixtures.bad ?? '')[0];
      if (o === undefined) return false;
      const md = (o.metadata ?? {}) as Record<string, unknown>;
      const r = await createDoc({ ...o, metadata: { ...md, name: 'probe-visible-devices' } });
      if (r.status === 'created' && r.path !== undefined) await client.delete(r.path);
      return r.status === 'denied';
    },
    60_000,
    250,
  );
}, scaled(240_000));

afterAll(async () => {
  await cluster?.stop();
});

describe('seed 001 §4.4: each anti-pattern injected into a running dev cluster', () => {
  const table: string[] = [];
  // Rules whose every flagged document the apiserver's own validation refuses (e.g. GPU requests ≠ limits):
  // the webhook never sees them, so they have no webhook findings to count.
  const schemaOnly = new Set<string>();
  const seenByWebhook = (): Rule[] => RULES.filter((r) => !schemaOnly.has(r.id));
  afterAll(() => {
    if (table.length > 0) process.stdout.write(`\nanti-pattern verdicts (enforce, then audit):\n${table.join('\n')}\n`);
  });

  it('covers every rule', () => {
    expect(RULES.length).toBeGreaterThanOrEqual(12);
  });

  it.each(RULES.map((r) => [r.id, r] as const))('enforce: %s gets its verdict at apply time, its good fixture passes clean', async (id, rule) => {
    const bad = await inject(rule.fixtures.bad);
    const flagged = hitDocs(rule, rule.fixtures.bad);
    // A document the apiserver's own validation refuses never reaches a webhook: allowed only where the rule
    // fires on it (the schema already stops that mistake), never as a broken fixture.
    bad.forEach((o, i) => {
      if (o.status === 'invalid') expect(flagged.has(i), `${id}: ${o.label} is not a valid object: ${o.message}`).toBe(true);
      expect(o.status, `${id}: ${o.label}`).not.toBe('not-served');
    });
    const hit = bad.filter((o) => mentions(o, id));
    const refusedBySchema = bad.filter((o, i) => o.status === 'invalid' && flagged.has(i));
    expect(hit.length + refusedBySchema.length, `${id}: no document of the bad fixture drew the rule: ${JSON.stringify(bad)}`).toBeGreaterThan(0);
    if (hit.length === 0) schemaOnly.add(id);
    else if (rule.severity === 'error') expect(hit.some((o) => o.status === 'denied' && o.message.includes(`[${id}]`))).toBe(true);
    else expect(hit.some((o) => o.status === 'created' && o.warnings.some((w) => w.includes(`[${id}]`)))).toBe(true);
    const good = await inject(rule.fixtures.good);
    for (const o of good) {
      expect(o.status === 'created' || o.status === 'not-served', `${id} good: ${o.label} ${o.status}: ${o.message}`).toBe(true);
      expect(mentions(o, id), `${id} good: ${o.label} drew the rule: ${o.warnings.join(' | ')}`).toBe(false);
    }
    const refused = bad.filter((o) => o.status === 'invalid').map((o) => `${o.label}: refused by the apiserver's schema`);
    table.push(`  ${id.padEnd(40)} ${rule.severity.padEnd(8)} ${[...hit.map((o) => `${o.label}: ${o.status}`), ...refused].join(', ')}`);
  });

  it('the findings metric counts every rule with its severity', async () => {
    const families = parsePromText(await hook.metrics.registry.metrics());
    expect(schemaOnly.size).toBeLessThanOrEqual(2);
    for (const r of seenByWebhook())
      expect(sampleValue(families, 'sits_webhook_findings_total', { rule: r.id, severity: r.severity, mode: 'enforce' }), r.id).toBeGreaterThanOrEqual(1);
  });

  it(
    'audit: every anti-pattern is stored, with a PolicyViolation Event per rule and an entry in the report',
    async () => {
      await hook.close();
      hook = await startDevWebhook(client, { mode: 'audit', rules: RULES });
      await waitFor(
        'the audit webhook to answer',
        async () => {
          const r = await createDoc({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'audit-probe', namespace: 'ml' },
            spec: {
              containers: [{ name: 'c', image: 'x:1', env: [{ name: 'CUDA_VISIBLE_DEVICES', value: '5' }], resources: { limits: { 'nvidia.com/gpu': '1' } } }],
            },
          });
          if (r.path !== undefined) await client.delete(r.path);
          return r.status === 'created' && r.warnings.some((w) => w.includes('audit: would deny'));
        },
        60_000,
        250,
      );
      for (const r of seenByWebhook()) {
        const outcomes = await inject(r.fixtures.bad);
        expect(
          outcomes.some((o) => o.status === 'denied'),
          `${r.id}: audit denied ${JSON.stringify(outcomes)}`,
        ).toBe(false);
        expect(
          outcomes.some((o) => mentions(o, r.id)),
          r.id,
        ).toBe(true);
      }
      await hook.drain();
      const events = await waitFor('a PolicyViolation event for every rule', async () => {
        const all: { reason?: string; metadata?: { labels?: Record<string, string> } }[] = [];
        for (const ns of ['default', 'ml', 'other-ns']) all.push(...(await client.get<{ items: typeof all }>(`/api/v1/namespaces/${ns}/events`)).items);
        const rules = new Set(all.filter((e) => e.reason === 'PolicyViolation').map((e) => e.metadata?.labels?.['lint.sits2026.dev/rule']));
        return seenByWebhook().every((r) => rules.has(r.id)) ? rules : undefined;
      });
      expect(events.size).toBeGreaterThanOrEqual(seenByWebhook().length);
      const byRule = hook.report.view().byRule;
      for (const r of seenByWebhook()) expect((byRule[r.id]?.[r.severity] ?? 0) > 0, r.id).toBe(true);
      const families = parsePromText(await hook.metrics.registry.metrics());
      for (const r of seenByWebhook())
        expect(sampleValue(families, 'sits_webhook_findings_total', { rule: r.id, severity: r.severity, mode: 'audit' }), r.id).toBeGreaterThanOrEqual(1);
    },
    scaled(240_000),
  );
});
