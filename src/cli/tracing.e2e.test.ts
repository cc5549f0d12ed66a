// Issue 15 §5 on real parts: `sits run --controllers` in a child process against the dev cluster (etcd +
// kube-apiserver, 4 fake 4×A800 nodes, the fake kubelet) with the standard OTEL_EXPORTER_OTLP_ENDPOINT pointing
// at a real OpenTelemetry Collector (tools/otelcol: the collector's OTLP receiver and file exporter, built from
// Go modules). It schedules a pod, a PodGroup gang and a TrainingJob's gang; on SIGTERM it flushes its spans.
// The collector must have got the cycle, attempt and reconcile spans with their names, attributes and
// parent/child links, and the scheduler's log lines must carry the same trace ids.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { createNs, createPods, listPods, testPod, waitFor } from '../harness/e2e-kit.ts';
import { startOtelCollector, type CollectedSpan, type OtelCollector } from '../harness/otel-collector.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let cluster: DevCluster;
let collector: OtelCollector;
let sits: ChildProcess;
let stderr = '';

beforeAll(async () => {
  collector = await startOtelCollector();
  cluster = await startDevCluster({ nodes: 4, shape: 'a800x4', withScheduler: false, controllers: false });
  sits = spawn(
    process.execPath,
    [
      join(ROOT, 'bin/sits.mjs'),
      'run',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--no-leader-elect',
      '--metrics-port',
      '0',
      '--controllers',
      '--identity',
      'sits-traced',
    ],
    {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_SERVICE_NAME: 'sits-e2e' },
    },
  );
  sits.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  await waitFor('sits run started', async () => stderr.includes('running (profile'), 60_000);
});

afterAll(async () => {
  if (sits !== undefined && sits.exitCode === null) sits.kill('SIGKILL');
  await cluster?.stop();
  await collector?.stop();
});

/** `… trace_id=<32 hex> span_id=<16 hex>` of the log lines that match. */
function traceIdsOf(pattern: RegExp): string[] {
  return stderr
    .split('\n')
    .filter((l) => pattern.test(l))
    .map((l) => /trace_id=([0-9a-f]{32}) span_id=[0-9a-f]{16}$/.exec(l)?.[1])
    .filter((t): t is string => t !== undefined);
}

describe('sits run with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('sends cycle, attempt and reconcile spans to a real collector; log lines carry their trace ids', async () => {
    const client = cluster.client;
    await createNs(client, 'traced');
    await client.post('/apis/ai.sits2026.dev/v1/namespaces/traced/podgroups', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'PodGroup',
      metadata: { name: 'train', namespace: 'traced' },
      spec: { minMember: 2 },
    });
    await createPods(client, [testPod('traced', 'solo', { gpus: 1 }), ...[0, 1].map((i) => testPod('traced', `train-${i}`, { gpus: 4, group: 'train' }))]);
    await client.post('/apis/ai.sits2026.dev/v1/namespaces/traced/trainingjobs', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'TrainingJob',
      metadata: { name: 'tj' },
      spec: {
        container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
        replicas: 2,
        resources: { 'nvidia.com/gpu': 1 },
      },
    });
    await waitFor(
      'all pods bound',
      async () => {
        const pods = await listPods(client, 'traced');
        return pods.length >= 5 && pods.every((p) => p.spec?.nodeName !== undefined);
      },
      90_000,
    );
    // A cycle the scheduler logs, then the stop: SIGTERM flushes the batch of spans.
    await waitFor('cycle log lines', async () => /cycle: started .*gang:traced\/train/.test(stderr), 30_000);
    sits.kill('SIGTERM');
    await new Promise<void>((r) => (sits.exitCode !== null ? r() : sits.once('exit', () => r())));
    expect(stderr).toContain('traces over OTLP');
    expect(stderr).not.toMatch(/tracing: /); // no export failure reported by the SDK

    const spans = await waitFor(
      'spans at the collector',
      async () => {
        const s = collector.spans();
        return s.some((x) => x.name === 'sits.reconcile') && s.some((x) => x.attributes['sits.gang'] === 'traced/train') ? s : undefined;
      },
      30_000,
    );
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: CollectedSpan): CollectedSpan | undefined => byId.get(s.parentSpanId);
    expect(new Set(spans.map((s) => s.resource['service.name']))).toEqual(new Set(['sits-e2e']));
    expect(spans.every((s) => s.resource['service.instance.id'] === 'sits-traced')).toBe(true);

    // The pod's attempt: a child of a cycle, scheduled, with its pod and queue.
    const solo = spans.find((s) => s.name === 'sits.attempt' && s.attributes['sits.pod'] === 'traced/solo' && s.attributes['sits.result'] === 'scheduled');
    expect(solo, JSON.stringify(spans.filter((s) => s.name === 'sits.attempt').map((s) => s.attributes))).toBeDefined();
    expect(solo?.attributes).toMatchObject({ 'sits.job.kind': 'pod', 'sits.job.id': 'traced/solo', 'sits.queue': 'default' });
    expect(solo?.attributes['sits.nodes']).toHaveLength(1);
    const soloCycle = parentOf(solo as CollectedSpan);
    expect(soloCycle?.name).toBe('sits.cycle');
    expect(soloCycle?.parentSpanId).toBe('');
    expect(soloCycle?.traceId).toBe(solo?.traceId);
    expect(soloCycle?.attributes).toMatchObject({ 'sits.scheduler': 'sits-scheduler', 'sits.nodes': 4 });
    expect(Number(soloCycle?.attributes['sits.cycle.started'])).toBeGreaterThanOrEqual(1);

    // The PodGroup gang: placed whole, one attempt span naming its members.
    const gang = spans.find((s) => s.name === 'sits.attempt' && s.attributes['sits.gang'] === 'traced/train' && s.attributes['sits.result'] === 'scheduled');
    expect(gang?.attributes).toMatchObject({
      'sits.job.kind': 'gang',
      'sits.job.id': 'gang:traced/train',
      'sits.gang.members': 2,
      'sits.gang.min_member': 2,
      'sits.placed': 2,
    });
    expect(gang?.attributes['sits.pods']).toEqual(['traced/train-0', 'traced/train-1']);
    expect(typeof gang?.attributes['sits.topology.level']).toBe('string');
    expect(parentOf(gang as CollectedSpan)?.name).toBe('sits.cycle');

    // The TrainingJob: reconcile spans (roots) with their actions as children; its pods scheduled as a gang.
    const reconciles = spans.filter((s) => s.name === 'sits.reconcile' && s.attributes['sits.object'] === 'tj');
    expect(reconciles.length).toBeGreaterThanOrEqual(1);
    for (const r of reconciles) {
      expect(r.parentSpanId).toBe('');
      expect(r.attributes).toMatchObject({ 'sits.controller': 'TrainingJob', 'k8s.namespace.name': 'traced' });
      expect(['ok', 'error', 'conflict', 'gone']).toContain(r.attributes['sits.result']);
    }
    const creates = spans.filter(
      (s) => s.name === 'sits.action' && s.attributes['sits.op'] === 'create' && reconciles.some((r) => r.spanId === s.parentSpanId),
    );
    expect(new Set(creates.map((s) => s.attributes['sits.kind']))).toContain('Pod');
    for (const c of creates) expect(c.traceId).toBe(parentOf(c)?.traceId);
    const tjAttempt = spans.find(
      (s) => s.name === 'sits.attempt' && s.attributes['sits.result'] === 'scheduled' && String(s.attributes['sits.gang'] ?? '').startsWith('traced/tj'),
    );
    expect(tjAttempt, JSON.stringify(spans.filter((s) => s.name === 'sits.attempt').map((s) => s.attributes))).toBeDefined();

    // Log lines carry the ids of the span they were written in: the cycle that started the gang, the reconcile
    // that moved the TrainingJob's phase.
    const cycleTraces = traceIdsOf(/cycle: started .*gang:traced\/train/);
    expect(cycleTraces).toContain(gang?.traceId);
    const phaseTraces = traceIdsOf(/trainingjob traced\/tj: .* → /);
    expect(phaseTraces.length).toBeGreaterThanOrEqual(1);
    for (const t of phaseTraces) expect(reconciles.map((r) => r.traceId)).toContain(t);
  });
});
