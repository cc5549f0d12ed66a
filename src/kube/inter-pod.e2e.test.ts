import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from './client.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { createNs, createPods, listPods, testPod, waitFor } from '../harness/e2e-kit.ts';
import { devNodes, applyCrds } from '../app/dev-cluster.ts';
import { createLiveApp, type LiveApp } from '../app/live.ts';

// InterPodAffinity and PodTopologySpread in the live scheduler (issue 11, ADR 0054): 3 l4x8 nodes, two in
// zone-a and one in zone-b; the SITS scheduler runs in-process against a real kube-apiserver.
describe('live SITS scheduler: pod anti-affinity and topology spread', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let app: LiveApp;
  const nodes = devNodes(3, 'l4x8', 4).map((n, i) => ({ ...n, labels: { ...n.labels, 'topology.kubernetes.io/zone': i < 2 ? 'zone-a' : 'zone-b' } }));

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(plane.kubeConfig(), nodes);
    app = await createLiveApp({ kubeconfig: plane.kubeconfigPath, identity: 'e2e-inter-pod' });
  });
  afterAll(async () => {
    await app?.stop();
    client?.close();
    await plane?.stop();
  });

  const small = (ns: string, name: string, app: string, spec: Partial<NonNullable<V1Pod['spec']>>): V1Pod => {
    const p = testPod(ns, name, { gpus: 0, cpu: '100m', memory: '64Mi' });
    return { ...p, metadata: { ...p.metadata, labels: { ...p.metadata?.labels, app } }, spec: { ...p.spec, containers: p.spec?.containers ?? [], ...spec } };
  };
  const bound = async (ns: string): Promise<V1Pod[]> => (await listPods(client, ns)).filter((p) => (p.spec?.nodeName ?? '') !== '');

  it('three pods with required anti-affinity on kubernetes.io/hostname take three nodes; a fourth stays Pending with the reason', async () => {
    await createNs(client, 'anti');
    const anti = { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'kubernetes.io/hostname' }] } } };
    await createPods(client, [0, 1, 2, 3].map((i) => small('anti', `web-${i}`, 'web', anti)));
    const placed = await waitFor('three of four anti-affinity pods bound', async () => {
      const ps = await bound('anti');
      return ps.length === 3 ? ps : undefined;
    });
    expect(new Set(placed.map((p) => p.spec?.nodeName)).size).toBe(3);
    const waiting = (await listPods(client, 'anti')).find((p) => (p.spec?.nodeName ?? '') === '')?.metadata?.name as string;
    const cond = await waitFor('PodScheduled=False on the fourth pod', async () =>
      (await listPods(client, 'anti')).find((p) => p.metadata?.name === waiting)?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False'),
    );
    expect(cond.message).toBe(`0/3 nodes fit gang anti/${waiting} (1×no GPU): 3 node(s) didn't match pod anti-affinity rules`);
    expect((await bound('anti')).length).toBe(3);
  });
});
