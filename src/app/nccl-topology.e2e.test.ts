// Issue 19 §4 on a real control plane: `sits dev up --nodes 2 --shape a800x4` with the SITS scheduler, the fake
// kubelet and the TrainingJob controller. Each GPU replica asks for its NCCL topology file; the scheduler writes the
// XML through the Binding; parsed back, it must name exactly the node's bus ids of the GPUs the pod got and the
// links the node publishes between them.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION, LABEL } from '../api/wire.ts';
import { bandwidthBetween } from '../core/model/topology.ts';
import { createNs, listPods, waitFor } from '../harness/e2e-kit.ts';
import { nodeFromK8s } from '../kube/cache/labels.ts';
import { readNcclTopology, relationInFile } from '../formats/nccl-topology.ts';
import { devBusIds, startDevCluster, type DevCluster } from './dev-cluster.ts';

let cluster: DevCluster;

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 2, shape: 'a800x4' });
});
afterAll(async () => {
  await cluster?.stop();
});

const envOf = (p: V1Pod): Record<string, string> => Object.fromEntries((p.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']));

describe('the NCCL topology file of each TrainingJob replica', () => {
  it('is written with the Binding for the GPUs the pod got: their bus ids, NUMA nodes and NVLinks as the node publishes them', async () => {
    const { client } = cluster;
    const ns = 'nccl-topo';
    await createNs(client, ns);
    await client.post(`/apis/ai.sits2026.dev/v1/namespaces/${ns}/trainingjobs`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'TrainingJob',
      metadata: { name: 'topo' },
      spec: {
        replicas: 3,
        resources: { 'nvidia.com/gpu': 2 },
        container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
      },
    });
    const pods = await waitFor(
      '3 replicas bound with their topology file',
      async () => {
        const ps = (await listPods(client, ns)).filter((p) => p.metadata?.labels?.[LABEL.role] === 'replica');
        return ps.length === 3 && ps.every((p) => (p.spec?.nodeName ?? '') !== '' && p.metadata?.annotations?.[ANNOTATION.ncclTopology] !== undefined)
          ? ps
          : undefined;
      },
      60_000,
    );
    const nodes = new Map((await client.get<{ items: V1Node[] }>('/api/v1/nodes')).items.map((n) => [n.metadata?.name ?? '', n]));
    const seen = new Set<string>();
    for (const p of pods) {
      expect(envOf(p).NCCL_TOPO_FILE).toBe('/etc/sits/nccl/topo.xml');
      expect(p.spec?.volumes?.find((v) => v.name === 'sits-nccl-topology')?.downwardAPI?.items?.[0]?.fieldRef?.fieldPath).toBe(
        `metadata.annotations['${ANNOTATION.ncclTopology}']`,
      );
      expect(p.spec?.containers[0]?.volumeMounts).toContainEqual({ name: 'sits-nccl-topology', mountPath: '/etc/sits/nccl', readOnly: true });
      const gpus = (p.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '').split(',').map(Number);
      expect(gpus).toHaveLength(2);
      const node = nodeFromK8s(nodes.get(p.spec?.nodeName ?? '') as V1Node);
      if (!node.ok) throw new Error(node.error);
      expect(node.value.pci?.busIds).toEqual(devBusIds(4));
      const file = readNcclTopology(p.metadata?.annotations?.[ANNOTATION.ncclTopology] ?? '');
      if (!file.ok) throw new Error(file.error);
      expect(file.value.gpus.map((g) => g.busId)).toEqual(gpus.map((g) => node.value.pci?.busIds[g]));
      expect(file.value.gpus.map((g) => g.numa)).toEqual(gpus.map((g) => node.value.topology.numaOf[g]));
      expect(file.value.gpus.map((g) => g.sm)).toEqual([80, 80]);
      const [a, b] = file.value.gpus;
      expect(relationInFile(a as never, b as never)).toBe(`NV${Math.round(bandwidthBetween(node.value.topology, gpus[0] as number, gpus[1] as number) / 25)}`);
      for (const g of file.value.gpus) seen.add(`${p.spec?.nodeName ?? ''}/${g.busId}`);
    }
    // Three pods, six GPUs, none described twice.
    expect(seen.size).toBe(6);
  });
});
