// Issue 32, "nothing left behind": on a dev cluster as `sits dev up` runs it (kube-controller-manager included),
// deleting a running TrainingJob, InferenceService or DataPipeline removes every pod, Service and PodGroup made
// for it within 30 s, and their GPUs can be used again; before that, Services have endpoints at the pods' IPs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevCluster, type DevCluster } from './dev-cluster.ts';
import type { KubeClient } from '../kube/client.ts';
import { createNs, listPods, waitFor } from '../harness/e2e-kit.ts';
import { RUN_SECONDS_ANNOTATION } from '../harness/fake-kubelet.ts';

let cluster: DevCluster;
let client: KubeClient;
const API = '/apis/ai.sits2026.dev/v1/namespaces/gc';

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 2, shape: 'a800x4', log: () => {}, controllerManager: true });
  client = cluster.client;
  await createNs(client, 'gc');
});
afterAll(async () => {
  await cluster?.stop();
});

const gpu = { requests: { 'nvidia.com/gpu': '1', cpu: '1', memory: '1Gi' }, limits: { 'nvidia.com/gpu': '1' } };
const KINDS = [
  { plural: 'trainingjobs', name: 'train', pods: 2, body: { apiVersion: 'ai.sits2026.dev/v1', kind: 'TrainingJob', metadata: { name: 'train' }, spec: { replicas: 2, resources: { 'nvidia.com/gpu': 1 }, container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] } } } },
  { plural: 'inferenceservices', name: 'chat', pods: 2, body: { apiVersion: 'ai.sits2026.dev/v1', kind: 'InferenceService', metadata: { name: 'chat' }, spec: { runtime: 'vllm', model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen' }, replicas: 2, gpusPerReplica: 1, resources: { cpu: '1', memory: '1Gi' } } } },
  { plural: 'datapipelines', name: 'prep', pods: 1, body: { apiVersion: 'ai.sits2026.dev/v1', kind: 'DataPipeline', metadata: { name: 'prep' }, spec: { stages: [{ name: 'tokenize', podTemplate: { spec: { containers: [{ name: 'main', image: 'registry.sits2026.dev/tools/busybox:1.36', resources: gpu }] } } }] } } },
] as const;

/** What in the namespace still belongs to `name` (its label or its name prefix): pods, Services, PodGroups. */
async function leftOf(name: string): Promise<string[]> {
  const [pods, svcs, pgs] = await Promise.all([
    listPods(client, 'gc'),
    client.get<{ items: { metadata: { name: string } }[] }>('/api/v1/namespaces/gc/services'),
    client.get<{ items: { metadata: { name: string } }[] }>(`${API}/podgroups`),
  ]);
  const mine = (n: string | undefined): boolean => n !== undefined && (n === name || n.startsWith(`${name}-`));
  return [...pods.filter((p) => mine(p.metadata?.name)).map((p) => `pod/${p.metadata?.name ?? ''}`), ...svcs.items.filter((s) => mine(s.metadata.name)).map((s) => `service/${s.metadata.name}`), ...pgs.items.filter((g) => mine(g.metadata.name)).map((g) => `podgroup/${g.metadata.name}`)];
}

describe('deleting a running workload on the dev cluster', () => {
  it('TrainingJob, InferenceService, DataPipeline: their pods, Services and PodGroups are gone within 30 s, their GPUs free again', async () => {
    for (const k of KINDS) await client.post(`${API}/${k.plural}`, k.body);
    const running = async (name: string): Promise<number> => (await listPods(client, 'gc')).filter((p) => p.metadata?.name?.startsWith(`${name}-`) && (p.spec?.nodeName ?? '') !== '' && p.status?.phase === 'Running').length;
    for (const k of KINDS) await waitFor(`${k.plural}/${k.name} running`, async () => (await running(k.name)) >= k.pods, 60_000);
    for (const k of KINDS) expect(await leftOf(k.name), k.plural).not.toEqual([]);
    // The InferenceService's Service has endpoints (kube-controller-manager's EndpointSlice controller), at the
    // pods' IPs, which lie outside the Service CIDR (10.0.0.0/24).
    const ips = await waitFor('the Service chat with both replicas as endpoints', async () => {
      const slices = await client.get<{ items: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] }[] }>('/apis/discovery.k8s.io/v1/namespaces/gc/endpointslices', { labelSelector: 'kubernetes.io/service-name=chat' });
      const ready = slices.items.flatMap((e) => e.endpoints ?? []).filter((e) => e.conditions?.ready === true).flatMap((e) => e.addresses);
      return ready.length === 2 ? ready : undefined;
    }, 60_000);
    const podIps = (await listPods(client, 'gc')).filter((p) => p.metadata?.name?.startsWith('chat-')).map((p) => p.status?.podIP);
    expect([...ips].sort()).toEqual([...podIps].sort());
    for (const ip of ips) expect(ip.startsWith('10.0.0.'), ip).toBe(false);

    for (const k of KINDS) {
      await client.delete(`${API}/${k.plural}/${k.name}`);
      const t0 = Date.now();
      await waitFor(`everything of ${k.plural}/${k.name} gone`, async () => {
        const left = await leftOf(k.name);
        if (left.length > 0) throw new Error(`left: ${left.join(', ')}`);
        return true;
      }, 30_000);
      expect(Date.now() - t0).toBeLessThan(60_000);
    }
    // A stage that says how long it runs (dev.sits2026.dev/run-seconds) finishes, and its pipeline Succeeds.
    await client.post(`${API}/datapipelines`, { ...KINDS[2].body, metadata: { name: 'quick' }, spec: { stages: [{ name: 'tokenize', podTemplate: { metadata: { annotations: { [RUN_SECONDS_ANNOTATION]: '1' } }, spec: KINDS[2].body.spec.stages[0].podTemplate.spec } }] } });
    await waitFor('the pipeline quick Succeeded', async () => (await client.get<{ status?: { phase?: string } }>(`${API}/datapipelines/quick`)).status?.phase === 'Succeeded', 60_000);
    // The 8 GPUs are free: a gang of all of them runs.
    await client.post(`${API}/trainingjobs`, { ...KINDS[0].body, metadata: { name: 'all' }, spec: { ...KINDS[0].body.spec, replicas: 2, resources: { 'nvidia.com/gpu': 4 } } });
    await waitFor('a gang of all 8 GPUs running', async () => (await running('all')) === 2, 60_000);
  });
});
