// The CRDs against a real kube-apiserver: every CRD is accepted and becomes Established, the seed's
// TrainingJob and every example are created (and defaulted exactly as validateResource defaults them),
// and every invalid manifest is rejected with the field named, by the schema or a CEL rule.
import { request } from 'node:https';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';

import { ensureK8sBinaries, startControlPlane } from '../harness/control-plane.ts';
import type { ControlPlane } from '../harness/control-plane.ts';
import { buildCrds } from './crd.ts';
import { EXAMPLES, INVALID_CASES, ELASTIC_TRAINING_JOB } from './examples.ts';
import { KINDS, RESOURCE_KINDS, type ResourceKind } from './kinds.ts';
import { API_GROUP, API_VERSION } from './wire.ts';
import { validateResource } from './validate.ts';
import { scaled } from '../testing/timeouts.ts';

const NAMESPACE = 'crd-test';
const BUILD_TIMEOUT_MS = 60 * 60_000;

interface ApiError {
  code?: number;
  body?: unknown;
}

/** The apiserver's Status message of a failed request. */
function statusMessage(e: unknown): string {
  const body = (e as ApiError).body;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  try {
    const status = JSON.parse(text) as { message?: string };
    return status.message ?? text;
  } catch {
    return text;
  }
}

/**
 * Sends raw JSON. The CRDs are in wire form (`default`, `x-kubernetes-validations`...); client-node's
 * typed ApiextensionsV1Api would re-serialise them through its model (`_default`, `xKubernetes...`)
 * and silently drop those keys.
 */
function requestJson(
  cp: ControlPlane,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? '' : JSON.stringify(body);
    const req = request(
      `${cp.server}${path}`,
      {
        method,
        headers: { Authorization: `Bearer ${cp.token}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data), ...headers },
        rejectUnauthorized: false,
        timeout: 30_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(data);
  });
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + scaled(timeoutMs); // the budget on an idle machine, scaled for this one
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

describe('SITS CRDs on a real kube-apiserver', () => {
  let cp: ControlPlane | undefined;

  beforeAll(
    async () => {
      const binDir = await ensureK8sBinaries();
      cp = await startControlPlane({ binDir });
      const kc = cp.kubeConfig();
      const ext = kc.makeApiClient(ApiextensionsV1Api);
      for (const crd of buildCrds()) {
        const res = await requestJson(cp, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
        if (res.status !== 201) throw new Error(`creating ${crd.metadata.name}: HTTP ${res.status}: ${res.body}`);
      }
      for (const crd of buildCrds()) {
        await waitFor(`${crd.metadata.name} Established`, async () => {
          const got = await ext.readCustomResourceDefinition({ name: crd.metadata.name });
          return got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ? true : undefined;
        });
      }
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
    },
    BUILD_TIMEOUT_MS + scaled(240_000),
  );

  afterAll(async () => {
    await cp?.stop();
  }, scaled(60_000));

  function objects(): CustomObjectsApi {
    if (!cp) throw new Error('control plane not started');
    return cp.kubeConfig().makeApiClient(CustomObjectsApi);
  }

  async function create(kind: ResourceKind, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const def = KINDS[kind];
    const res: unknown =
      def.scope === 'Cluster'
        ? await objects().createClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural: def.plural, body })
        : await objects().createNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: NAMESPACE, plural: def.plural, body });
    return res as Record<string, unknown>;
  }

  it('accepts every CRD with its names, categories and subresources', async () => {
    if (!cp) throw new Error('control plane not started');
    const ext = cp.kubeConfig().makeApiClient(ApiextensionsV1Api);
    for (const kind of RESOURCE_KINDS) {
      const def = KINDS[kind];
      const got = await ext.readCustomResourceDefinition({ name: `${def.plural}.${API_GROUP}` });
      expect(got.status?.acceptedNames?.shortNames).toEqual([...def.shortNames]);
      expect(got.status?.acceptedNames?.categories).toEqual(['sits']);
      expect(got.spec.versions[0]?.subresources?.status).toEqual({});
    }
  });

  it('creates the seed TrainingJob exactly as written, defaulted as validateResource defaults it', async () => {
    const seed = EXAMPLES.TrainingJob;
    const stored = await create('TrainingJob', structuredClone(seed));
    const offline = validateResource('TrainingJob', seed);
    expect(offline.ok).toBe(true);
    if (!offline.ok) return;
    expect(stored.spec).toEqual(offline.value.spec);
  });

  it('creates every example (and the elastic TrainingJob) with the same defaults as offline', async () => {
    const cases: Array<[ResourceKind, Record<string, unknown>]> = [
      ...RESOURCE_KINDS.filter((k) => k !== 'TrainingJob').map((k): [ResourceKind, Record<string, unknown>] => [k, EXAMPLES[k]]),
      ['TrainingJob', ELASTIC_TRAINING_JOB],
    ];
    for (const [kind, manifest] of cases) {
      const stored = await create(kind, structuredClone(manifest));
      const offline = validateResource(kind, manifest);
      expect(offline.ok, kind).toBe(true);
      if (offline.ok) expect(stored.spec, kind).toEqual((offline.value as { spec: unknown }).spec);
    }
  });

  it('stores a zero-configuration BatchInferenceJob (model, input, output, tier) with every default visible', async () => {
    const manifest = {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'BatchInferenceJob',
      metadata: { name: 'zero-config' },
      spec: {
        model: { uri: 'hf://meta-llama/Llama-3.1-8B-Instruct' },
        input: { uri: 'pvc://data/requests.jsonl' },
        output: { uri: 'pvc://data/results/' },
        tier: 'silver',
      },
    };
    const stored = (await create('BatchInferenceJob', structuredClone(manifest))) as { spec: Record<string, unknown> };
    expect(stored.spec).toEqual({
      runtime: 'vllm',
      model: { uri: 'hf://meta-llama/Llama-3.1-8B-Instruct' },
      input: { uri: 'pvc://data/requests.jsonl', format: 'jsonl' },
      output: { uri: 'pvc://data/results/', format: 'jsonl' },
      tier: 'silver',
      batching: { batchSize: 32, seqLen: 2048, kvCachePolicy: 'recycle', throughputMode: 'steady' },
      workers: 1,
      gpusPerWorker: 1,
      sharding: { reshardStragglers: true, stragglerThresholdPercent: 130 },
      faultRecovery: { maxRetries: 3, retryAtReducedClock: true, splitOnRetry: true, cpuFallback: false, quarantineMinutes: 15 },
      checkpoint: { intervalSeconds: 300 },
      suspend: false,
    });
    const offline = validateResource('BatchInferenceJob', manifest);
    expect(offline.ok && (offline.value as { spec: unknown }).spec).toEqual(stored.spec);
  });

  // Issue 36: the apiserver itself refuses a data URI that would leave its claim (the controller refuses it too).
  it.each([
    'pvc://data/../../../var/run/secrets/kubernetes.io/serviceaccount/token',
    'pvc://data//etc/passwd',
    'pvc://data/%2e%2e/%2e%2e/etc/passwd',
    'pvc://data/..\\..\\etc',
    'pvc://data/in\u0000x',
    's3://bucket/../other',
  ])('refuses the BatchInferenceJob input %j at the apiserver, naming spec.input.uri', async (uri) => {
    const body = {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'BatchInferenceJob',
      metadata: { generateName: 'traversal-' },
      spec: { model: { uri: 'hf://m/m' }, input: { uri }, output: { uri: 'pvc://data/out/' } },
    };
    const err = await create('BatchInferenceJob', body).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err, `${uri} must be refused`).toBeDefined();
    expect(statusMessage(err)).toContain('spec.input.uri');
  });

  it('scales a TrainingJob through the scale subresource and refuses a size above maxReplicas', async () => {
    const body = structuredClone(ELASTIC_TRAINING_JOB);
    body.metadata = { name: 'elastic-scale' };
    await create('TrainingJob', body);
    const api = objects();
    const scaled = (await api.patchNamespacedCustomObjectScale({
      group: API_GROUP,
      version: API_VERSION,
      namespace: NAMESPACE,
      plural: 'trainingjobs',
      name: 'elastic-scale',
      body: [{ op: 'replace', path: '/spec/replicas', value: 3 }],
    })) as { spec?: { replicas?: number } };
    expect(scaled.spec?.replicas).toBe(3);
    const err = await api
      .patchNamespacedCustomObjectScale({
        group: API_GROUP,
        version: API_VERSION,
        namespace: NAMESPACE,
        plural: 'trainingjobs',
        name: 'elastic-scale',
        body: [{ op: 'replace', path: '/spec/replicas', value: 9 }],
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err, 'scaling above maxReplicas must fail').toBeDefined();
    expect(statusMessage(err)).toContain('spec.replicas');
  });

  // Uses the seed TrainingJob created above.
  it('takes status through the status subresource and shows it in the printer columns', async () => {
    if (!cp) throw new Error('control plane not started');
    const base = `/apis/${API_GROUP}/${API_VERSION}/namespaces/${NAMESPACE}/trainingjobs`;
    const status = {
      phase: 'Running',
      replicas: 8,
      readyReplicas: 8,
      gpus: 8,
      restartCount: 0,
      selector: 'ai.sits2026.dev/job=bert-large-finetune',
      conditions: [{ type: 'Running', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'AllReplicasReady', message: '8/8 replicas ready' }],
    };
    const patched = await requestJson(cp, 'PATCH', `${base}/bert-large-finetune/status`, { status }, { 'Content-Type': 'application/merge-patch+json' });
    expect(patched.status, patched.body).toBe(200);
    const offline = validateResource('TrainingJob', { ...EXAMPLES.TrainingJob, status });
    expect(offline.ok).toBe(true);

    const badStatus = { conditions: [{ type: 'Running', status: 'Maybe', lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'X', message: '' }] };
    const rejected = await requestJson(
      cp,
      'PATCH',
      `${base}/bert-large-finetune/status`,
      { status: badStatus },
      { 'Content-Type': 'application/merge-patch+json' },
    );
    expect(rejected.status).toBe(422);
    expect(rejected.body).toContain('status.conditions[0].status');

    const table = await requestJson(cp, 'GET', base, undefined, { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
    const parsed = JSON.parse(table.body) as {
      columnDefinitions: Array<{ name: string }>;
      rows: Array<{ cells: unknown[]; object: { metadata: { name: string } } }>;
    };
    const columns = parsed.columnDefinitions.map((c) => c.name);
    expect(columns).toEqual(expect.arrayContaining(['Name', 'Phase', 'Ready', 'Replicas', 'GPUs', 'Age']));
    const row = parsed.rows.find((r) => r.object.metadata.name === 'bert-large-finetune');
    const cell = (name: string) => row?.cells[columns.indexOf(name)];
    expect([cell('Phase'), cell('Ready'), cell('Replicas'), cell('GPUs')]).toEqual(['Running', 8, 8, 8]);
  });

  for (const c of INVALID_CASES) {
    it(`rejects ${c.kind}: ${c.name}, naming ${c.path}`, async () => {
      const offline = validateResource(c.kind, c.manifest);
      expect(offline.ok).toBe(false);
      const err = await create(c.kind, structuredClone(c.manifest)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, 'the apiserver accepted an invalid object').toBeDefined();
      expect((err as ApiError).code).toBe(422);
      expect(statusMessage(err)).toContain(c.path);
    });
  }
});
