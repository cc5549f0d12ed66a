// Multi-pod InferenceService replicas (ADR 0134) on a real control plane: etcd + kube-apiserver, 4 fake dgx-h100
// nodes (8 GPUs each) in 2 racks of 2, the SITS scheduler, the fake kubelet (runs every bound pod: no engine
// needed), the workload controllers and kube-controller-manager's EndpointSlice controller (the Service's endpoints).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { createNs, listPods, waitFor } from '../harness/e2e-kit.ts';
import { ANNOTATION, LABEL } from '../api/wire.ts';
import type { InferenceServiceObject } from './inference-service/model.ts';

const API = '/apis/ai.sits2026.dev/v1';
const svcsPath = (ns: string): string => `${API}/namespaces/${ns}/inferenceservices`;

let cluster: DevCluster;
const logs: string[] = [];

beforeAll(async () => {
  cluster = await startDevCluster({
    nodes: 4,
    shape: 'dgx-h100',
    nodesPerRack: 2,
    log: (m) => logs.push(m),
    controllers: { log: (m) => logs.push(`controller: ${m}`) },
  });
  await cluster.plane.startControllerManager({ controllers: ['endpointslice-controller'] });
});

afterAll(async () => {
  await cluster?.stop();
});

const live = async (ns: string): Promise<V1Pod[]> =>
  (await listPods(cluster.client, ns)).filter((p) => p.metadata?.deletionTimestamp === undefined && p.metadata?.labels?.[LABEL.inferenceService] !== undefined);
const isReady = (p: V1Pod): boolean => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

describe('InferenceService with podsPerReplica 2 (TP 8 × PP 2 on 8-GPU nodes)', () => {
  it('binds each replica as one gang inside one rack, serves through leaders only, and recreates a group when a worker is deleted', async () => {
    const ns = 'multinode';
    const client = cluster.client;
    await createNs(client, ns);
    await client.post(svcsPath(ns), {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'InferenceService',
      metadata: { name: 'big' },
      spec: {
        runtime: 'vllm',
        model: { uri: 'hf://meta-llama/Llama-3.1-405B-Instruct', name: 'llama' },
        replicas: 2,
        gpusPerReplica: 16,
        podsPerReplica: 2,
        replicaTopology: { requiredLevel: 'rack' },
        resources: { cpu: '8', memory: '64Gi' },
      },
    });
    const ready = (): Promise<InferenceServiceObject> =>
      waitFor(
        'big ready 2/2',
        async () => {
          const s = await client.get<InferenceServiceObject>(`${svcsPath(ns)}/big`);
          return s.status?.phase === 'Ready' && s.status.readyReplicas === 2 && s.status.replicas === 2 ? s : undefined;
        },
        60_000,
      );
    const s = await ready();
    const pods = await live(ns);
    expect(pods).toHaveLength(4);
    const nodes = new Map(
      (await client.get<{ items: { metadata: { name: string; labels: Record<string, string> } }[] }>('/api/v1/nodes')).items.map((n) => [
        n.metadata.name,
        n.metadata.labels,
      ]),
    );
    const groups = new Map<string, V1Pod[]>();
    for (const p of pods) groups.set(p.metadata?.labels?.[LABEL.podGroup] ?? '', [...(groups.get(p.metadata?.labels?.[LABEL.podGroup] ?? '') ?? []), p]);
    expect(groups.size).toBe(2);
    for (const [group, members] of groups) {
      expect(members.map((p) => p.metadata?.name).sort()).toEqual([group, `${group}-1`]);
      // Bound by SITS, each pod on a node of its own with all 8 GPUs, both nodes in one rack.
      expect(members.every((p) => p.spec?.nodeName !== undefined && p.metadata?.annotations?.[ANNOTATION.gpuIndices]?.split(',').length === 8)).toBe(true);
      expect(new Set(members.map((p) => p.spec?.nodeName)).size).toBe(2);
      expect(new Set(members.map((p) => nodes.get(p.spec?.nodeName ?? '')?.[LABEL.rack])).size).toBe(1);
      const worker = members.find((p) => p.metadata?.name === `${group}-1`);
      expect(worker?.spec?.containers[0]?.env?.find((e) => e.name === 'LWS_LEADER_ADDRESS')?.value).toBe(`${group}.big-pods.${ns}`);
    }
    expect(s.status?.replicaStatuses?.map((r) => r.name).sort()).toEqual([...groups.keys()].sort());
    // The Service's endpoints (EndpointSlice controller) are the two leaders; the headless one has all four pods.
    const leaderIps = pods
      .filter((p) => p.metadata?.labels?.[LABEL.role] === 'replica')
      .map((p) => p.status?.podIP)
      .sort();
    const endpoints = async (svc: string): Promise<string[]> =>
      (
        await client.get<{ items: { endpoints?: { addresses: string[] }[] }[] }>(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
          labelSelector: `kubernetes.io/service-name=${svc}`,
        })
      ).items
        .flatMap((e) => e.endpoints ?? [])
        .flatMap((e) => e.addresses)
        .sort();
    await waitFor('the Service has the leaders as endpoints', async () => JSON.stringify(await endpoints('big')) === JSON.stringify(leaderIps), 60_000);
    expect(await endpoints('big')).toEqual(leaderIps);
    await waitFor('the headless Service has every pod', async () => (await endpoints('big-pods')).length === 4, 60_000);

    // Deleting one worker recreates its whole group; the other group keeps serving throughout.
    const [victimGroup, victims] = [...groups.entries()][0] as [string, V1Pod[]];
    const other = [...groups.keys()].find((g) => g !== victimGroup) ?? '';
    await client.delete(`/api/v1/namespaces/${ns}/pods/${victimGroup}-1`);
    await waitFor(
      'the old group gone, a new whole group bound and ready',
      async () => {
        const now = await live(ns);
        const names = new Set(now.map((p) => p.metadata?.name));
        const fresh = now.filter((p) => p.metadata?.labels?.[LABEL.podGroup] !== other);
        return (
          !victims.some((v) => names.has(v.metadata?.name)) &&
          fresh.length === 2 &&
          fresh.every((p) => (p.spec?.nodeName ?? '') !== '' && isReady(p)) &&
          new Set(fresh.map((p) => p.metadata?.labels?.[LABEL.podGroup])).size === 1
        );
      },
      60_000,
    );
    expect(
      (await live(ns))
        .filter((p) => p.metadata?.labels?.[LABEL.podGroup] === other)
        .map((p) => p.metadata?.uid)
        .sort(),
    ).toEqual((groups.get(other) ?? []).map((p) => p.metadata?.uid).sort());
    await ready();
    const events = (await client.get<{ items: { reason: string; message: string }[] }>(`/api/v1/namespaces/${ns}/events`)).items;
    expect(events.some((e) => e.reason === 'RecreatingReplica' && e.message.includes(`replica ${victimGroup}: 1 of its 2 pods is gone`))).toBe(true);
  });
});
