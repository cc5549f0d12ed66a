// Fuzzing the webhook (issue 16 "Bad input"): 10,000 generated AdmissionReviews through the pure decision
// functions with the product's rule set, and a share of them through the real HTTP handler. Nothing may throw
// out, no rule may fail on a strange object (a `rule-failed` finding is a bug in a rule), every answer is a
// well-formed AdmissionReview or a 400 naming what is wrong, and deep or huge input is bounded.
import { request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RULES } from '../guard/rules/index.ts';
import { ALLOW_ALL, ANONYMOUS_AUTHN } from '../kube/secure/delegated-auth.ts';
import { startSecureServer, type SecureServer } from '../kube/secure/secure-server.ts';
import { BadReview, mutate, parseReview, validate } from './admission.ts';
import { MAX_BODY_BYTES, webhookHandler, webhookMetrics } from './server.ts';
import { turnEventLoop } from '../testing/timeouts.ts';

const KINDS = [
  'Pod',
  'Deployment',
  'StatefulSet',
  'ReplicaSet',
  'DaemonSet',
  'Job',
  'CronJob',
  'Service',
  'PersistentVolumeClaim',
  'HorizontalPodAutoscaler',
  'ScaledObject',
  'PriorityClass',
  'TrainingJob',
  'InferenceService',
  'BatchInferenceJob',
  'PodGroup',
  'PyTorchJob',
  'Unknown',
];

// Objects shaped like Kubernetes objects, with anything at any field: the shapes rules walk get wrong types.
const anyValue = fc.jsonValue({ maxDepth: 4 });
const container = fc.record(
  {
    name: fc.oneof(fc.string(), anyValue),
    image: fc.oneof(fc.constantFrom('vllm/vllm-openai:v0.6', 'nvcr.io/nvidia/pytorch:24.01', 'x:latest'), anyValue),
    command: fc.oneof(fc.array(fc.constantFrom('torchrun', '--nproc_per_node=8', 'train.py', '--num-workers', '8', '--num_workers=3', 'python')), anyValue),
    args: fc.oneof(fc.array(fc.string()), anyValue),
    env: fc.oneof(
      fc.array(
        fc.record(
          {
            name: fc.constantFrom('CUDA_VISIBLE_DEVICES', 'NCCL_IB_DISABLE', 'MASTER_ADDR', 'NUM_WORKERS', 'WORLD_SIZE'),
            value: fc.oneof(fc.string(), anyValue),
          },
          { requiredKeys: [] },
        ),
      ),
      anyValue,
    ),
    resources: fc.oneof(
      fc.record(
        {
          limits: fc.dictionary(fc.constantFrom('cpu', 'memory', 'nvidia.com/gpu'), fc.oneof(fc.constantFrom('1', '500m', '2Gi', '-1', 'x'), anyValue)),
          requests: anyValue,
        },
        { requiredKeys: [] },
      ),
      anyValue,
    ),
    volumeMounts: fc.oneof(fc.array(fc.record({ name: fc.string(), mountPath: fc.constantFrom('/ckpt', '/checkpoints', '/models', '/data') })), anyValue),
  },
  { requiredKeys: [] },
);
const podSpec = fc.record(
  {
    containers: fc.oneof(fc.array(container, { maxLength: 3 }), anyValue),
    initContainers: fc.oneof(fc.array(container, { maxLength: 2 }), anyValue),
    volumes: anyValue,
    nodeSelector: anyValue,
    schedulerName: fc.oneof(fc.string(), anyValue),
  },
  { requiredKeys: [] },
);
const template = fc.record({ metadata: anyValue, spec: podSpec }, { requiredKeys: [] });
const object = fc.record(
  {
    apiVersion: fc.oneof(fc.constantFrom('v1', 'apps/v1', 'ai.sits2026.dev/v1', 'keda.sh/v1alpha1', 'kubeflow.org/v1'), anyValue),
    kind: fc.constantFrom(...KINDS),
    metadata: fc.oneof(
      fc.record(
        { name: fc.string(), namespace: fc.string(), labels: anyValue, annotations: fc.oneof(fc.dictionary(fc.string(), fc.string()), anyValue) },
        { requiredKeys: [] },
      ),
      anyValue,
    ),
    spec: fc.oneof(
      podSpec,
      fc.record(
        {
          replicas: fc.oneof(fc.integer({ min: -3, max: 64 }), anyValue),
          template,
          selector: anyValue,
          scaleTargetRef: anyValue,
          worker: anyValue,
          pytorchReplicaSpecs: fc.dictionary(fc.constantFrom('Master', 'Worker'), fc.record({ replicas: anyValue, template }, { requiredKeys: [] })),
          jobTemplate: anyValue,
          clusterIP: anyValue,
        },
        { requiredKeys: [] },
      ),
      anyValue,
    ),
    value: anyValue,
    preemptionPolicy: anyValue,
    globalDefault: anyValue,
  },
  { requiredKeys: ['kind'] },
);
const review = fc.record({
  uid: fc.string({ minLength: 1 }),
  operation: fc.constantFrom('CREATE', 'UPDATE', 'DELETE', 'CONNECT'),
  namespace: fc.oneof(fc.constant('team'), fc.string()),
  object,
  oldObject: fc.option(object, { nil: undefined }),
  dryRun: fc.boolean(),
});
const envelope = (r: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.tuple(r, fc.constantFrom(...KINDS)).map(([x, kind]) => ({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { ...(x as object), kind: { group: '', version: 'v1', kind } },
  }));
// Broken envelopes too: the parser must name what is wrong, never crash.
const anyBody = fc.oneof(
  { weight: 8, arbitrary: envelope(review) },
  { weight: 1, arbitrary: anyValue },
  { weight: 1, arbitrary: fc.record({ apiVersion: fc.constant('admission.k8s.io/v1'), kind: fc.constant('AdmissionReview'), request: anyValue }) },
);

const cluster = { schedulerNames: ['sits-scheduler'], gpuModels: ['A100-SXM4-80GB', 'L4'], rdma: true };

describe('fuzzing the webhook', () => {
  it('10,000 generated reviews: no throw, no failing rule, a well-formed answer every time', async () => {
    await fc.assert(
      fc.asyncProperty(anyBody, async (body) => {
        // A minute of runs under load, one synchronous stretch: the worker's RPC would time out (turnEventLoop).
        await turnEventLoop();
        let req;
        try {
          req = parseReview(body);
        } catch (e) {
          expect(e).toBeInstanceOf(BadReview);
          expect((e as Error).message).toMatch(/^(body|apiVersion|kind|request)/);
          return;
        }
        for (const mode of ['enforce', 'audit'] as const) {
          const v = validate(req, { rules: RULES, mode, cluster, related: () => [] });
          expect(v.review.response.uid).toBe(req.uid);
          expect(typeof v.review.response.allowed).toBe('boolean');
          expect(v.findings.filter((f) => f.rule === 'rule-failed')).toEqual([]);
          if (mode === 'audit') expect(v.review.response.allowed).toBe(true);
        }
        const m = mutate(req, {
          schedulerName: 'sits-scheduler',
          namespace: () => ({ labels: { 'ai.sits2026.dev/scheduling': 'enabled' }, annotations: { 'ai.sits2026.dev/default-queue': 'q' } }),
        });
        expect(m.response.allowed).toBe(true);
        if (m.response.patch !== undefined) expect(Array.isArray(JSON.parse(Buffer.from(m.response.patch, 'base64').toString('utf8')))).toBe(true);
      }),
      { numRuns: 10_000, seed: 20261201 },
    );
  }, 120_000);
});

describe('the HTTP handler under bad input', () => {
  let server: SecureServer;
  beforeAll(async () => {
    const handler = webhookHandler({ rules: RULES, mode: 'enforce', cluster: () => cluster, metrics: webhookMetrics() });
    server = await startSecureServer({ port: 0, host: '127.0.0.1', authn: ANONYMOUS_AUTHN, authz: ALLOW_ALL, handler: (q, s) => handler(q, s) });
  });
  afterAll(async () => {
    await server.close();
  });
  const post = (body: string | Buffer): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = request(`${server.url}/validate`, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
      req.end(body);
    });

  it('500 generated reviews over HTTP: 200 with a review, or 400 naming the problem; never 500', async () => {
    const samples = fc.sample(anyBody, { numRuns: 500, seed: 7 });
    for (const b of samples) {
      const r = await post(JSON.stringify(b));
      expect([200, 400]).toContain(r.status);
      if (r.status === 200) expect((JSON.parse(r.body) as { kind: string }).kind).toBe('AdmissionReview');
      else expect(r.body).toMatch(/^bad AdmissionReview: /);
    }
  }, 120_000);

  it('not JSON, nested 100,000 deep, or over the size limit: a 400, and the server keeps serving', async () => {
    expect((await post('{not json')).body).toMatch(/bad AdmissionReview: body is not JSON/);
    const deep = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"kind":"Pod","spec":${'['.repeat(100_000)}${']'.repeat(100_000)}}}}`;
    const d = await post(deep);
    expect([200, 400]).toContain(d.status);
    const huge = await post(Buffer.alloc(MAX_BODY_BYTES + 1024, 0x20));
    expect(huge.status).toBe(413);
    expect(huge.body).toContain(`request body over ${MAX_BODY_BYTES} bytes`);
    const ok = await post(
      JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: 'u', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', object: { kind: 'Pod' } },
      }),
    );
    expect(ok.status).toBe(200);
  }, 60_000);
});
