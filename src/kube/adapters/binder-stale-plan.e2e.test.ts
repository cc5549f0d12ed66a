// Regression (bench chaos seed 1, ADR 0193): a replica paused with a gang's plan writes on their way sent them after
// the standby had taken the Lease and bound the gang its own way: the late writes, unconditional merge patches,
// rewrote the bound pods' `gpu-indices`, so two pods of a node named the same GPUs. Each plan write is now conditional
// on the pod as the writing replica last saw it. Here the stale replica is a KubeBinder whose cache saw the pods
// before another binder bound one of them: its plan is refused, the bound pod keeps its GPUs, and nothing of the
// refused plan stays on the other member.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION } from '../../api/wire.ts';
import { devNodes } from '../../app/dev-cluster.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, testPod } from '../../harness/e2e-kit.ts';
import { ClusterCache } from '../cache/cluster-cache.ts';
import { KubeClient } from '../client/client.ts';
import { KubeBinder } from './binder.ts';

const NS = 'stale-plan';
let plane: ControlPlane;
let client: KubeClient;

beforeAll(async () => {
  plane = await startControlPlane();
  client = new KubeClient(plane.kubeConfig());
  await createNs(client, NS);
  await createFakeGpuNodes(plane.kubeConfig(), devNodes(1, 'dgx-h100'));
});
afterAll(async () => {
  client?.close();
  await plane?.stop();
});

describe('KubeBinder on the real apiserver: a plan written from a stale view', () => {
  it('is refused where the pod changed since, leaves the bound pod its GPUs, and undoes itself on the rest', async () => {
    const node = devNodes(1, 'dgx-h100')[0]?.name ?? '';
    const made = await Promise.all(['a', 'b'].map((n) => client.post<V1Pod>(`/api/v1/namespaces/${NS}/pods`, testPod(NS, n, { gpus: 2 }))));
    // The stale replica's view: both pods pending, as created.
    const logs: string[] = [];
    const cache = new ClusterCache(undefined, (m) => logs.push(m));
    cache.upsertNode((await client.get<{ items: V1Node[] }>('/api/v1/nodes')).items[0] as V1Node);
    for (const p of made) cache.upsertPod(p);
    // Meanwhile the leader binds `a` to GPUs 0,1.
    await client.post(`/api/v1/namespaces/${NS}/pods/a/binding`, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'a', namespace: NS, annotations: { [ANNOTATION.gpuIndices]: '0,1' } },
      target: { apiVersion: 'v1', kind: 'Node', name: node },
    });
    const binder = new KubeBinder(client, cache, {
      schedulerName: 'sits-scheduler',
      events: { emit: () => undefined },
      log: (m) => logs.push(m),
      nowMs: () => Date.now(),
    });
    binder.bind({
      gang: `${NS}/g`,
      after: [],
      requests: [
        { podId: `${NS}/a`, node, gpus: [4, 5] },
        { podId: `${NS}/b`, node, gpus: [6, 7] },
      ],
    });
    await binder.drain();
    const a = await client.get<V1Pod>(`/api/v1/namespaces/${NS}/pods/a`);
    const b = await client.get<V1Pod>(`/api/v1/namespaces/${NS}/pods/b`);
    expect(a.spec?.nodeName).toBe(node);
    expect(a.metadata?.annotations?.[ANNOTATION.gpuIndices]).toBe('0,1');
    expect(a.metadata?.annotations?.[ANNOTATION.planId]).toBeUndefined();
    expect(b.spec?.nodeName ?? '').toBe('');
    expect(b.metadata?.annotations?.[ANNOTATION.planId]).toBeUndefined();
    expect(b.metadata?.annotations?.[ANNOTATION.assignedNode]).toBeUndefined();
    expect(logs.some((l) => l.includes('could not write the plan (1 failed)'))).toBe(true);
  });
});
