import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1Node } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../client/client.ts';
import { GpuHealthWatcher } from './gpu-health.ts';
import { ANNOTATION } from '../../api/wire.ts';
import type { MigrateIntent } from '../../core/health/monitor.ts';
import { T4_LABELS, withValue } from '../../core/health/testing.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes, deletePodNow } from '../../harness/fake-nodes.ts';
import { createNs, createPods, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { applyCrds, devNodes } from '../../app/dev-cluster.ts';
import { createLiveApp, type LiveApp } from '../../app/live.ts';

// Issue 14 §5 on the real kube-apiserver: a real HTTP server serves recorded dcgm-exporter text (the T4
// capture, with GPU 3's XID gauge set to 79 in the recorded label set); the health watcher scrapes it and
// quarantines the GPU on the Node; the live SITS scheduler then gives it no pods and explains why; after the
// period and a passing health check the GPU is released and takes work again.
const T4 = readFileSync(new URL('../../core/health/fixtures/dcgm-t4-datadog.txt', import.meta.url), 'utf8');
const GPU3 = T4_LABELS.replace('gpu="0"', 'gpu="3"').replace('device="nvidia0"', 'device="nvidia3"');
const MIN = 60_000;

describe('GPU health watcher on the real control plane', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let app: LiveApp;
  let server: Server;
  let served = '';
  let url = '';
  let now = Date.UTC(2026, 11, 1, 17, 0, 0);
  const intents: MigrateIntent[] = [];
  const logs: string[] = [];
  const [node] = devNodes(1, 'l4x8').map((n) => n.name) as [string];
  let watcher: GpuHealthWatcher;

  beforeAll(async () => {
    server = createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
      res.end(served);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(plane.kubeConfig(), devNodes(1, 'l4x8'));
    watcher = new GpuHealthWatcher({
      client,
      targets: [{ node, url }],
      intervalMs: 1000,
      clock: { nowMs: () => now },
      log: (l) => logs.push(l),
      onIntent: (i) => intents.push(i),
    });
    app = await createLiveApp({ kubeconfig: plane.kubeconfigPath, identity: 'e2e-gpu-health' });
  });
  afterAll(async () => {
    await app?.stop();
    client?.close();
    await plane?.stop();
    await new Promise((r) => server?.close(r));
  });

  const annotation = async (): Promise<string | undefined> =>
    (await client.get<V1Node>(`/api/v1/nodes/${node}`)).metadata?.annotations?.[ANNOTATION.gpuQuarantine];
  const pod = async (ns: string, name: string) => (await listPods(client, ns)).find((p) => p.metadata?.name === name);

  it('a healthy recorded scrape writes nothing', async () => {
    served = withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', 3, 0, GPU3);
    const r = await watcher.once();
    expect(r).toEqual({ actions: [], errors: [], written: [] });
    expect(await annotation()).toBeUndefined();
  });

  it('XID 79 on GPU 3: quarantined on the Node, an intent to move its work; no pod gets GPU 3 and explain says why; released after the period and a passing check', async () => {
    now += MIN;
    served = withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', 3, 79, GPU3);
    const r = await watcher.once();
    expect(r.written).toEqual([node]);
    expect(intents).toEqual([
      {
        kind: 'checkpoint-and-migrate',
        node,
        gpu: 3,
        uuid: 'GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e',
        mode: 'restore-last',
        reason: 'XID 79 (GPU has fallen off the bus)',
        pods: [],
        atMs: now,
      },
    ]);
    const until = new Date(now + 15 * MIN).toISOString();
    expect(JSON.parse((await annotation()) ?? '{}')).toEqual({
      '3': { reason: 'XID 79 (GPU has fallen off the bus)', state: 'failed', since: new Date(now).toISOString(), until, source: 'gpu-health' },
    });

    await createNs(client, 'health');
    await createPods(client, [testPod('health', 'whole', { gpus: 8 })]);
    const cond = await waitFor('PodScheduled=False on the 8-GPU pod', async () =>
      (await pod('health', 'whole'))?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False'),
    );
    expect(cond.message).toBe(
      `0/1 nodes fit gang health/whole (1×8 GPU): 1 GPUs unhealthy (GPU 3 quarantined until ${until}: XID 79 (GPU has fallen off the bus))`,
    );

    await createPods(
      client,
      Array.from({ length: 7 }, (_, i) => testPod('health', `one-${i}`, { gpus: 1 })),
    );
    const bound = await waitFor('seven 1-GPU pods bound', async () => {
      const ps = (await listPods(client, 'health')).filter(
        (p) =>
          p.metadata?.name?.startsWith('one-') === true && (p.spec?.nodeName ?? '') !== '' && p.metadata?.annotations?.[ANNOTATION.gpuIndices] !== undefined,
      );
      return ps.length === 7 ? ps : undefined;
    });
    expect(bound.map((p) => p.metadata?.annotations?.[ANNOTATION.gpuIndices]).sort()).toEqual(['0', '1', '2', '4', '5', '6', '7']);
    for (let i = 0; i < 7; i++) await deletePodNow(plane.kubeConfig(), 'health', `one-${i}`);

    // Still inside the period: the healthy-again scrape keeps it (the sticky XID gauge is not news).
    now += 5 * MIN;
    expect((await watcher.once()).written).toEqual([]);
    expect(await annotation()).toBeDefined();
    now += 11 * MIN;
    const rel = await watcher.once();
    expect(rel.actions.map((a) => a.kind)).toEqual(['health-check-due', 'release']);
    expect(await annotation()).toBeUndefined();
    expect(await waitFor('the 8-GPU pod bound once GPU 3 is back', async () => (await pod('health', 'whole'))?.spec?.nodeName || undefined, 60_000)).toBe(node);
  });

  it("another writer's quarantine (the fault ladder's) is kept until its period is over, then released by the same health check", async () => {
    const since = new Date(now).toISOString();
    const until = new Date(now + 2 * MIN).toISOString();
    await client.mergePatch(`/api/v1/nodes/${node}`, {
      metadata: {
        annotations: { [ANNOTATION.gpuQuarantine]: JSON.stringify({ '5': { reason: 'shard failed 3 times', since, until, source: 'batch-fault-ladder' } }) },
      },
    });
    served = withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', 3, 79, GPU3);
    now += MIN;
    expect((await watcher.once()).written).toEqual([]);
    expect(await annotation()).toContain('batch-fault-ladder');
    now += 2 * MIN;
    const r = await watcher.once();
    expect(r.actions).toMatchObject([{ kind: 'health-check-due' }, { kind: 'release', entry: { gpu: 5, source: 'batch-fault-ladder' } }]);
    expect(await annotation()).toBeUndefined();
  });

  it('an exporter that cannot be reached is logged, never a quarantine', async () => {
    const down = new GpuHealthWatcher({
      client,
      targets: [{ node, url: 'http://127.0.0.1:1/metrics' }],
      intervalMs: 1000,
      clock: { nowMs: () => now },
      log: (l) => logs.push(l),
    });
    const r = await down.once();
    expect(r.written).toEqual([]);
    expect(r.errors[0]).toMatch(/^scraping dcgm-exporter: http:\/\/127\.0\.0\.1:1\/metrics: .*ECONNREFUSED/);
    expect(await annotation()).toBeUndefined();
  });
});
