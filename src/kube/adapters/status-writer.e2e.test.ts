// The Unschedulable condition is written only onto the pod version the cycle saw unbound: a write that lands after
// the binding must not leave a bound pod saying PodScheduled=False (found by the upstream e2e suite, whose
// WaitForStableCluster fails on such a pod: docs/conformance.md).
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../client/client.ts';
import type { ClusterCache } from '../cache/cluster-cache.ts';
import { KubeStatusWriter } from './status-writer.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, createPods, testPod } from '../../harness/e2e-kit.ts';
import { devNodes } from '../../app/dev-cluster.ts';

const scheduledCondition = (p: V1Pod): { status?: string; reason?: string } | undefined => p.status?.conditions?.find((c) => c.type === 'PodScheduled');

let plane: ControlPlane;
let client: KubeClient;

beforeAll(async () => {
  plane = await startControlPlane();
  client = new KubeClient(plane.kubeConfig());
  await createFakeGpuNodes(plane.kubeConfig(), devNodes(1, 'dgx-h100'));
  await createNs(client, 'sw');
});
afterAll(async () => {
  client?.close();
  await plane?.stop();
});

describe('KubeStatusWriter on the real apiserver', () => {
  const pod = (name: string): Promise<V1Pod> => client.get<V1Pod>(`/api/v1/namespaces/sw/pods/${name}`);
  /** The writer over a cache that still holds the given (stale) pod objects, as a cycle's snapshot does. */
  const writerSeeing = (pods: readonly V1Pod[]): KubeStatusWriter => {
    const byKey = new Map(pods.map((p) => [`sw/${p.metadata?.name ?? ''}`, p]));
    const cache = { pod: (id: string) => byKey.get(id) } as unknown as ClusterCache;
    return new KubeStatusWriter(client, cache, { log: () => undefined, nowMs: () => Date.now() });
  };

  it('does not mark a pod bound after the cycle saw it Unschedulable', async () => {
    await createPods(client, [testPod('sw', 'bound-meanwhile', { gpus: 0 })]);
    const seen = await pod('bound-meanwhile');
    await client.post('/api/v1/namespaces/sw/pods/bound-meanwhile/binding', {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'bound-meanwhile' },
      target: { apiVersion: 'v1', kind: 'Node', name: 'dgx-h100-000' },
    });
    const w = writerSeeing([seen]);
    w.unschedulable(['sw/bound-meanwhile'], '0/1 nodes fit: too late');
    await w.drain();
    const now = await pod('bound-meanwhile');
    expect(now.spec?.nodeName).toBe('dgx-h100-000');
    expect(scheduledCondition(now)?.status).toBe('True');
  });

  it('still writes the condition onto a pod that changed but is still unbound', async () => {
    await createPods(client, [testPod('sw', 'changed-meanwhile', { gpus: 0 })]);
    const seen = await pod('changed-meanwhile');
    await client.mergePatch('/api/v1/namespaces/sw/pods/changed-meanwhile', { metadata: { labels: { touched: 'yes' } } });
    const w = writerSeeing([seen]);
    w.unschedulable(['sw/changed-meanwhile'], '0/1 nodes fit: waiting');
    await w.drain();
    expect(scheduledCondition(await pod('changed-meanwhile'))).toMatchObject({ status: 'False', reason: 'Unschedulable' });
  });
});

// The apiserver facts behind the scheduler's RBAC (ADR 0175): it writes onto pods only through pods/binding and
// pods/status, as kube-scheduler does, never by patching the pod. Same control plane as above (one start).
describe('pods/binding and pods/status carry what the scheduler records (real apiserver)', () => {
  const pod = (name: string): Promise<V1Pod> => client.get<V1Pod>(`/api/v1/namespaces/sw/pods/${name}`);

  it("a Binding's annotations are copied onto the pod", async () => {
    await createPods(client, [testPod('sw', 'b', { gpus: 0 })]);
    await client.post('/api/v1/namespaces/sw/pods/b/binding', {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'b', annotations: { 'ai.sits2026.dev/gpu-indices': '0,1' } },
      target: { apiVersion: 'v1', kind: 'Node', name: 'dgx-h100-000' },
    });
    const p = await pod('b');
    expect(p.spec?.nodeName).toBe('dgx-h100-000');
    expect(p.metadata?.annotations?.['ai.sits2026.dev/gpu-indices']).toBe('0,1');
  });

  it('a pods/status merge patch writes and removes annotations, and cannot touch the spec', async () => {
    await createPods(client, [testPod('sw', 's', { gpus: 0 })]);
    const before = await pod('s');
    await client.request('PATCH', '/api/v1/namespaces/sw/pods/s/status', {
      contentType: 'application/merge-patch+json',
      body: { metadata: { annotations: { 'ai.sits2026.dev/expected-start': '2026-01-01T00:00:00.000Z' } }, spec: { activeDeadlineSeconds: 5 } },
    });
    const after = await pod('s');
    expect(after.metadata?.annotations?.['ai.sits2026.dev/expected-start']).toBe('2026-01-01T00:00:00.000Z');
    expect(after.spec?.activeDeadlineSeconds).toBe(before.spec?.activeDeadlineSeconds);
    await client.request('PATCH', '/api/v1/namespaces/sw/pods/s/status', {
      contentType: 'application/merge-patch+json',
      body: { metadata: { annotations: { 'ai.sits2026.dev/expected-start': null } } },
    });
    expect((await pod('s')).metadata?.annotations?.['ai.sits2026.dev/expected-start']).toBeUndefined();
  });
});
