// Issue 15, metrics and the Grafana dashboard proved for real: a `sits run` process on the dev cluster (real
// kube-apiserver), scraped by a real Prometheus through the secure port (TLS, a ServiceAccount's bearer token
// checked by TokenReview and SubjectAccessReview), with work in flight: a gang bound then preempted by a queue
// reclaiming its quota, pods bound, a job that waited with a published expected start and then started, a gang
// still pending, one GPU unhealthy. The text format is parsed back and checked; then every PromQL query of the
// shipped dashboard must return data from Prometheus's /api/v1/query.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ANNOTATION, LABEL } from '../api/wire.ts';
import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { dashboardQueries } from '../deploy/grafana-dashboard.ts';
import { freePorts } from '../harness/control-plane.ts';
import { createNs, createPods, listPods, testPod, waitFor } from '../harness/e2e-kit.ts';
import { parsePromText, sampleValue, type MetricFamily } from '../harness/prom-text.ts';
import { selfSignedServing } from '../kube/secure/certs.ts';
import { METRIC, METRIC_DETAIL } from './metrics.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const NS = 'ml';
/** A loopback address that is not 127.0.0.1: `sits run` serves it as its secure port (only 127.0.0.1, ::1 and localhost are plain HTTP). */
const HOST = '127.0.0.2';

let cluster: DevCluster;
let tmp: string;
let sits: ChildProcess | undefined;
let prometheus: ChildProcess | undefined;
const sitsLog: string[] = [];
const promLog: string[] = [];
let metricsPort = 0;
let promPort = 0;
let token = '';
let ca = '';

/** The Prometheus binary: tools/prometheus/ensure.mjs (SITS_PROMETHEUS, /usr/bin/prometheus, or Debian's package unpacked into a cache). */
function ensurePrometheus(): Promise<string> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [join(ROOT, 'tools/prometheus/ensure.mjs')], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: string[] = [];
    const err: string[] = [];
    createInterface({ input: child.stdout }).on('line', (l) => out.push(l));
    createInterface({ input: child.stderr }).on('line', (l) => err.push(l));
    child.on('close', (code) => {
      const bin = out
        .filter((l) => l.trim() !== '')
        .at(-1)
        ?.trim();
      if (code === 0 && bin !== undefined) res(bin);
      else rej(new Error(`tools/prometheus/ensure.mjs failed (${code}):\n${err.join('\n')}`));
    });
  });
}

function scrape(path: string): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = request({ host: HOST, port: metricsPort, path, ca, headers: { Authorization: `Bearer ${token}` } }, (r) => {
      let body = '';
      r.setEncoding('utf8').on('data', (d: string) => (body += d));
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
    });
    req.on('error', rej);
    req.end();
  });
}

interface PromResult {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

async function promQuery(expr: string): Promise<PromResult[]> {
  const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?${new URLSearchParams({ query: expr })}`);
  const j = (await r.json()) as { status: string; error?: string; data?: { resultType: string; result: PromResult[] } };
  if (j.status !== 'success') throw new Error(`${expr}: ${j.error ?? r.status}`);
  return j.data?.result ?? [];
}

const bound = (ps: readonly V1Pod[], prefix: string): V1Pod[] =>
  ps.filter((p) => p.metadata?.name?.startsWith(prefix) === true && (p.spec?.nodeName ?? '') !== '' && p.metadata.deletionTimestamp === undefined);

const queue = (name: string, tier: string, preemption: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'Queue',
  metadata: { name },
  spec: { tenant: name, tier, cohort: 'research', resources: [{ name: 'nvidia.com/gpu', nominal: '6' }], preemption: { cooldownSeconds: 0, ...preemption } },
});

const pod = (name: string, queueName: string, gpus: number, priorityClassName: string, group?: string): V1Pod => {
  // A gang's pods describe it (min-member), or they would wait for a PodGroup object (the CRD is installed).
  const p = testPod(NS, name, {
    gpus,
    labels: { [LABEL.queue]: queueName },
    ...(group === undefined ? {} : { group, annotations: { [ANNOTATION.minMember]: '2' } }),
  });
  return { ...p, spec: { ...(p.spec as NonNullable<V1Pod['spec']>), priorityClassName } };
};

beforeAll(async () => {
  const bin = await ensurePrometheus();
  tmp = mkdtempSync(join(tmpdir(), 'sits-prom-e2e-'));
  // 3 nodes of 4 A800; GPU 3 of the last one unhealthy (the node agent's annotation): 11 healthy GPUs.
  cluster = await startDevCluster({ nodes: 3, shape: 'a800x4', withScheduler: false, controllers: false });
  const c = cluster.client;
  await c.mergePatch(`/api/v1/nodes/${cluster.nodeNames[2]}`, { metadata: { annotations: { [ANNOTATION.unhealthyGpus]: '3' } } });
  // Prometheus's identity: a ServiceAccount allowed `get /metrics` and nothing else, with a token from the TokenRequest API.
  await createNs(c, 'monitoring');
  await c.post('/api/v1/namespaces/monitoring/serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'prometheus' } });
  await c.post('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'metrics-reader' },
    rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
  });
  await c.post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'prometheus-metrics' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'metrics-reader' },
    subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: 'monitoring' }],
  });
  token = (
    await c.post<{ status: { token: string } }>('/api/v1/namespaces/monitoring/serviceaccounts/prometheus/token', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600 },
    })
  ).status.token;
  writeFileSync(join(tmp, 'token'), token, { mode: 0o600 });
  // The secure port's certificate for 127.0.0.2, its CA given to Prometheus.
  const serving = await selfSignedServing(['localhost'], [HOST]);
  ca = serving.ca;
  writeFileSync(join(tmp, 'ca.pem'), serving.ca);
  writeFileSync(join(tmp, 'tls.crt'), serving.cert);
  writeFileSync(join(tmp, 'tls.key'), serving.key, { mode: 0o600 });
  [metricsPort, promPort] = (await freePorts(2)) as [number, number];

  sits = spawn(
    process.execPath,
    [
      join(ROOT, 'bin/sits.mjs'),
      'run',
      `--kubeconfig=${cluster.kubeconfigPath}`,
      '--no-leader-elect',
      '--identity=prom-e2e',
      `--metrics-port=${metricsPort}`,
      `--metrics-host=${HOST}`,
      '--metrics-per-gpu',
      `--tls-cert-file=${join(tmp, 'tls.crt')}`,
      `--tls-private-key-file=${join(tmp, 'tls.key')}`,
    ],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  sits.stderr?.setEncoding('utf8').on('data', (d: string) => sitsLog.push(d));
  await waitFor('sits run serving its metrics', async () => sitsLog.join('').includes('running (profile sits'), 120_000);

  writeFileSync(
    join(tmp, 'prometheus.yml'),
    stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      scrape_configs: [
        {
          job_name: 'sits',
          scheme: 'https',
          metrics_path: '/metrics',
          authorization: { type: 'Bearer', credentials_file: join(tmp, 'token') },
          tls_config: { ca_file: join(tmp, 'ca.pem'), server_name: HOST },
          static_configs: [{ targets: [`${HOST}:${metricsPort}`] }],
        },
      ],
    }),
  );
  prometheus = spawn(
    bin,
    [`--config.file=${join(tmp, 'prometheus.yml')}`, `--storage.tsdb.path=${join(tmp, 'tsdb')}`, `--web.listen-address=127.0.0.1:${promPort}`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  prometheus.stderr?.setEncoding('utf8').on('data', (d: string) => promLog.push(d));
  // Scraping before any work: rates and quantiles need samples from before the events.
  await waitFor(
    'Prometheus scrapes sits run',
    async () => {
      const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/targets`).catch(() => undefined);
      if (r?.ok !== true) return undefined;
      const t = (await r.json()) as { data: { activeTargets: { health: string; lastError: string }[] } };
      return t.data.activeTargets[0]?.health === 'up';
    },
    60_000,
    250,
  );

  for (const [name, value] of [
    ['research-low', 100],
    ['research-high', 1000],
  ] as const)
    await c.post('/apis/scheduling.k8s.io/v1/priorityclasses', { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value });
  await c.post('/apis/ai.sits2026.dev/v1/queues', queue('team-a', 'gold', {}));
  // team-b never preempts: its second job waits for quota instead.
  await c.post('/apis/ai.sits2026.dev/v1/queues', queue('team-b', 'bronze', { withinQueue: 'Never', reclaimWithinCohort: 'Never' }));
  await createNs(c, NS);
  // Prometheus sees the queues before their first job (their admission-wait series start at 0).
  await waitFor('the queues in Prometheus', async () => (await promQuery('sits_queue_admission_wait_seconds_count')).length === 2, 60_000, 250);
}, 600_000);

afterAll(async () => {
  for (const p of [prometheus, sits]) {
    if (p === undefined || p.exitCode !== null) continue;
    const closed = new Promise((r) => p.on('close', r));
    p.kill('SIGTERM');
    await closed;
  }
  await cluster?.stop();
  if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true });
});

describe('metrics of a running `sits run`, scraped by a real Prometheus', () => {
  it('work in flight: a gang bound and preempted by a reclaiming queue, a job started after its expected start, a gang pending', async () => {
    const c = cluster.client;
    // team-b's gang takes 8 GPUs (2 borrowed from team-a's idle quota), team-a a 2-GPU pod on the last node.
    await createPods(c, [pod('b-train-0', 'team-b', 4, 'research-low', 'b-train'), pod('b-train-1', 'team-b', 4, 'research-low', 'b-train')]);
    await waitFor('the gang bound', async () => bound(await listPods(c, NS), 'b-train').length === 2, 60_000);
    await createPods(c, [pod('a-small', 'team-a', 2, 'research-high')]);
    await waitFor('a-small bound', async () => bound(await listPods(c, NS), 'a-small').length === 1, 60_000);
    // team-a claims its quota back: the whole gang is preempted.
    await createPods(c, [pod('a-big', 'team-a', 4, 'research-high')]);
    await waitFor(
      'a-big bound after preempting the gang',
      async () => {
        const ps = await listPods(c, NS);
        return bound(ps, 'a-big').length === 1 && ps.filter((p) => p.metadata?.name?.startsWith('b-train') === true).length === 0;
      },
      90_000,
    );
    // team-b: one job fits, the next waits for quota (team-a lends nothing while it uses its 6) with an expected start.
    await createPods(c, [pod('b-one', 'team-b', 4, 'research-low')]);
    await waitFor('b-one bound', async () => bound(await listPods(c, NS), 'b-one').length === 1, 60_000);
    await createPods(c, [pod('b-two', 'team-b', 4, 'research-low')]);
    await waitFor(
      'b-two waits with an expected start',
      async () => (await listPods(c, NS)).find((p) => p.metadata?.name === 'b-two')?.metadata?.annotations?.[ANNOTATION.expectedStart],
      60_000,
    );
    await c.delete(`/api/v1/namespaces/${NS}/pods/a-big`);
    await waitFor('b-two bound once a-big is gone', async () => bound(await listPods(c, NS), 'b-two').length === 1, 90_000);
    // A gang over team-b's quota: pending.
    await createPods(c, [pod('b-wait-0', 'team-b', 4, 'research-low', 'b-wait'), pod('b-wait-1', 'team-b', 4, 'research-low', 'b-wait')]);

    // The text format, parsed back: types, labels and values of what just happened.
    const families = await waitFor(
      'the metrics to show the pending gang and the start error',
      async () => {
        const r = await scrape('/metrics');
        if (r.status !== 200) return undefined;
        const f = parsePromText(r.body);
        const startErrors = ['early', 'late'].reduce((n, direction) => n + (sampleValue(f, `${METRIC_DETAIL.startError}_count`, { direction }) ?? 0), 0);
        return sampleValue(f, METRIC_DETAIL.queuePending, { queue: 'team-b' }) === 1 && startErrors === 1 ? f : undefined;
      },
      60_000,
      250,
    );
    const type = (name: string): string | undefined => families.get(name)?.type;
    expect([
      type(METRIC_DETAIL.queuePending),
      type(METRIC_DETAIL.queueAdmissionWait),
      type(METRIC_DETAIL.preemptionVictims),
      type(METRIC_DETAIL.extensionPoint),
      type(METRIC_DETAIL.gpuHealthy),
    ]).toEqual(['gauge', 'histogram', 'counter', 'histogram', 'gauge']);
    const q = (name: string, queueName: string): number | undefined => sampleValue(families, name, { queue: queueName });
    expect([q(METRIC_DETAIL.queuePending, 'team-a'), q(METRIC_DETAIL.queueAdmitted, 'team-a'), q(METRIC_DETAIL.queueAdmitted, 'team-b')]).toEqual([0, 1, 2]);
    expect([
      q(METRIC_DETAIL.queueUsed, 'team-a'),
      q(METRIC_DETAIL.queueUsed, 'team-b'),
      q(METRIC_DETAIL.queueNominal, 'team-a'),
      q(METRIC_DETAIL.queueNominal, 'team-b'),
    ]).toEqual([2, 8, 6, 6]);
    expect([q(METRIC_DETAIL.queueBorrowed, 'team-a'), q(METRIC_DETAIL.queueBorrowed, 'team-b')]).toEqual([0, 2]);
    expect((q(METRIC_DETAIL.queueFairShare, 'team-a') ?? 0) + (q(METRIC_DETAIL.queueFairShare, 'team-b') ?? 0)).toBeLessThanOrEqual(11);
    // Admissions: a-small and a-big; b-train, b-one, b-two.
    expect([q(`${METRIC_DETAIL.queueAdmissionWait}_count`, 'team-a'), q(`${METRIC_DETAIL.queueAdmissionWait}_count`, 'team-b')]).toEqual([2, 3]);
    expect([
      sampleValue(families, METRIC_DETAIL.preemptions, { reason: 'reclaim' }),
      sampleValue(families, METRIC_DETAIL.preemptionVictims, { reason: 'reclaim' }),
      sampleValue(families, METRIC_DETAIL.preemptionVictims, { reason: 'priority' }),
    ]).toEqual([1, 1, 0]);
    const last = cluster.nodeNames[2] as string;
    expect([
      sampleValue(families, METRIC_DETAIL.nodeUnhealthy, { node: last }),
      sampleValue(families, METRIC_DETAIL.clusterUnhealthy),
      sampleValue(families, METRIC_DETAIL.gpuHealthy, { node: last, gpu: '3' }),
      sampleValue(families, METRIC.gpus),
    ]).toEqual([1, 1, 0, 11]);
    const allocated = cluster.nodeNames.reduce((s, n) => s + (sampleValue(families, METRIC_DETAIL.nodeAllocated, { node: n }) ?? 0), 0);
    expect(allocated).toBe(10);
    const frag = sampleValue(families, METRIC_DETAIL.fragmentation) ?? -1;
    expect(frag).toBeGreaterThanOrEqual(0);
    expect(frag).toBeLessThanOrEqual(1);
    const count = (f: Map<string, MetricFamily>, point: string): number =>
      sampleValue(f, `${METRIC_DETAIL.extensionPoint}_count`, { extension_point: point }) ?? 0;
    for (const point of ['PreFilter', 'FilterScore', 'PickGpus', 'Reserve', 'Permit', 'Bind']) expect(count(families, point), point).toBeGreaterThan(0);
    expect(sampleValue(families, METRIC.pendingPods)).toBe(2);
  }, 600_000);

  it('every PromQL query of the shipped Grafana dashboard returns data from Prometheus', async () => {
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThan(30);
    const missing = new Map<string, string>();
    await waitFor(
      'every dashboard query to return a finite value',
      async () => {
        missing.clear();
        for (const { panel, expr } of queries) {
          const result = await promQuery(expr);
          if (!result.some((r) => Number.isFinite(Number(r.value[1])))) missing.set(expr, `${panel}: ${JSON.stringify(result)}`);
        }
        return missing.size === 0;
      },
      120_000,
      1000,
    ).catch((e: unknown) => {
      throw new Error(
        `${(e as Error).message}\n${[...missing.values()].join('\n')}\nsits run:\n${sitsLog.join('').slice(-3000)}\nprometheus:\n${promLog.join('').slice(-2000)}`,
      );
    });
    expect(missing).toEqual(new Map());
  }, 600_000);
});
