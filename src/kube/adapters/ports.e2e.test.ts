// The port contracts against the live adapters (binder, evictor, event sink, status writer) on a real
// kube-apiserver: the same suite the simulated cluster passes (src/testing/port-contracts.ts).
import type { V1Pod } from '@kubernetes/client-node';
import { KubeClient } from '../client/client.ts';
import { buildLiveScheduler } from '../../app/live.ts';
import { ANNOTATION } from '../../api/wire.ts';
import { startControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, createPods, listEvents, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { applyCrds, devNodes } from '../../app/dev-cluster.ts';
import { FakeKubelet } from '../../harness/fake-kubelet.ts';
import { describePortContracts } from '../../testing/port-contracts.ts';

describePortContracts('live adapters on a real kube-apiserver', async () => {
  const plane = await startControlPlane();
  const client = new KubeClient(plane.kubeConfig());
  await applyCrds(client);
  const nodes = devNodes(2, 'dgx-h100');
  await createFakeGpuNodes(plane.kubeConfig(), nodes);
  await createNs(client, 'contract');
  // The stand-in kubelet (no container runtime here): removes a deleted pod of a fake node at once.
  const kubelet = new FakeKubelet(client, () => true);
  await kubelet.start();
  // Passive: informers fill the cache the adapters read; no loop, no leader, nothing scheduled by itself.
  const live = buildLiveScheduler(client, { identity: 'contract', passive: true });
  await live.start();
  const pod = async (id: string): Promise<V1Pod | undefined> => {
    const [ns, name] = id.split('/') as [string, string];
    try {
      return await client.get<V1Pod>(`/api/v1/namespaces/${ns}/pods/${name}`);
    } catch {
      return undefined;
    }
  };
  return {
    ports: { binder: live.binder, evictor: live.evictor, events: live.events, status: live.status },
    nodes: [nodes[0]?.name as string, nodes[1]?.name as string],
    createPods: async (ids, gpus) => {
      await createPods(
        client,
        ids.map((id) => testPod('contract', id.split('/')[1] as string, { gpus })),
      );
      await waitFor('pods in the cache', async () => ids.every((id) => live.cache.pod(id) !== undefined));
    },
    tick: () => live.binder.tick(),
    boundTo: async (id) => {
      const p = await pod(id);
      const node = p?.spec?.nodeName ?? '';
      if (node === '') return undefined;
      const gpus = p?.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '';
      return { node, gpus: gpus === '' ? [] : gpus.split(',').map(Number) };
    },
    exists: async (id) => (await pod(id)) !== undefined && (await pod(id))?.metadata?.deletionTimestamp === undefined,
    events: async (id) =>
      (await listEvents(client, 'contract'))
        .filter((e) => e.involvedObject?.name === id.split('/')[1])
        .map((e) => ({ kind: e.reason ?? '', message: e.message ?? '' })),
    unschedulableMessage: async (id) => (await pod(id))?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False')?.message,
    expectedStartMs: async (id) => {
      const t = Date.parse((await pod(id))?.metadata?.annotations?.[ANNOTATION.expectedStart] ?? '');
      return Number.isFinite(t) ? t : undefined;
    },
    eventually: (what, read, ok) =>
      waitFor(what, async () => {
        const v = await read();
        return ok(v) ? { v } : undefined;
      }).then((x) => x.v),
    close: async () => {
      await live.stop();
      kubelet.stop();
      client.close();
      await plane.stop();
    },
  };
});
