import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../client/client.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, createPods, gpuUsage, listEvents, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { devNodes, applyCrds } from '../../app/dev-cluster.ts';
import { createLiveApp, type LiveApp } from '../../app/live.ts';

// 12 dgx-h100 nodes in 3 racks of 4 (96 GPUs); the SITS scheduler runs in-process.
describe('live SITS scheduler on a real kube-apiserver', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let app: LiveApp;
  const nodes = devNodes(12, 'dgx-h100', 4);
  const rackOf = new Map(nodes.map((n) => [n.name, n.labels['ai.sits2026.dev/rack']]));

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(plane.kubeConfig(), nodes);
    app = await createLiveApp({ kubeconfig: plane.kubeconfigPath, identity: 'e2e' });
  });
  afterAll(async () => {
    await app?.stop();
    client?.close();
    await plane?.stop();
  });

  it('binds 32 single-GPU pods and a 4×8-GPU gang: gang in one rack, GPU indices recorded, no over-commit', async () => {
    await createNs(client, 'mixed');
    await client.post('/apis/ai.sits2026.dev/v1/namespaces/mixed/podgroups', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'PodGroup',
      metadata: { name: 'train', namespace: 'mixed' },
      spec: { minMember: 4 },
    });
    const singles = Array.from({ length: 32 }, (_, i) => testPod('mixed', `single-${i}`, { gpus: 1 }));
    const gang = Array.from({ length: 4 }, (_, i) => testPod('mixed', `train-${i}`, { gpus: 8, cpu: '16', memory: '64Gi', group: 'train' }));
    await createPods(client, [...gang, ...singles]);
    const pods = await waitFor('all 36 pods bound', async () => {
      const ps = await listPods(client, 'mixed');
      return ps.length === 36 && ps.every((p) => (p.spec?.nodeName ?? '') !== '') ? ps : undefined;
    });
    const usage = gpuUsage(pods, 8); // throws on over-commit or missing indices
    expect([...usage.values()].reduce((s, a) => s + a.reduce((x, y) => x + y, 0), 0)).toBe(64);
    const gangNodes = new Set(pods.filter((p) => p.metadata?.name?.startsWith('train-')).map((p) => p.spec?.nodeName as string));
    expect(gangNodes.size).toBe(4);
    expect(new Set([...gangNodes].map((n) => rackOf.get(n))).size).toBe(1);
  });

  it('a gang that cannot fit binds nothing and says why in a FailedScheduling event', async () => {
    await createNs(client, 'toobig');
    await client.post('/apis/ai.sits2026.dev/v1/namespaces/toobig/podgroups', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'PodGroup',
      metadata: { name: 'huge', namespace: 'toobig' },
      spec: { minMember: 6, topology: { required: 'rack' } },
    });
    await createPods(
      client,
      Array.from({ length: 6 }, (_, i) => testPod('toobig', `huge-${i}`, { gpus: 8, group: 'huge' })),
    );
    const ev = await waitFor('FailedScheduling event', async () =>
      (await listEvents(client, 'toobig')).find((e) => e.reason === 'FailedScheduling' && e.message?.startsWith('0/') === true),
    );
    expect(ev.message).toMatch(/^0\/12 nodes fit gang toobig\/huge \(6×8 GPU\): /);
    expect(ev.message).toContain('would split the rack (required)');
    // The event and the pod's condition are two writes that may land in either order: wait for the condition.
    const cond = await waitFor('PodScheduled=False on the pod', async () =>
      (await listPods(client, 'toobig'))[0]?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False'),
    );
    expect(cond.reason).toBe('Unschedulable');
    const pods = await listPods(client, 'toobig');
    expect(pods.filter((p) => (p.spec?.nodeName ?? '') !== '')).toEqual([]);
  });

  it('survives a kube-apiserver restart and goes on binding', async () => {
    await createNs(client, 'restart');
    await plane.restartApiServer();
    await createPods(
      client,
      Array.from({ length: 4 }, (_, i) => testPod('restart', `after-${i}`, { gpus: 1 })),
    );
    const pods = await waitFor(
      'pods created after the restart are bound',
      async () => {
        const ps = await listPods(client, 'restart');
        return ps.length === 4 && ps.every((p) => (p.spec?.nodeName ?? '') !== '') ? ps : undefined;
      },
      60_000,
    );
    expect(pods).toHaveLength(4);
    gpuUsage(await listPods(client, 'mixed').then((m) => [...m, ...pods]), 8);
  });
});
