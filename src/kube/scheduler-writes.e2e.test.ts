// The apiserver facts behind the scheduler's RBAC (ADR 0175): it writes onto pods only through pods/binding and
// pods/status, as kube-scheduler does, never by patching the pod. Checked on the real kube-apiserver.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from './client.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { createNs, createPods, testPod } from '../harness/e2e-kit.ts';
import { devNodes } from '../app/dev-cluster.ts';

describe('pods/binding and pods/status carry what the scheduler records (real apiserver)', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  const pod = (name: string): Promise<V1Pod> => client.get<V1Pod>(`/api/v1/namespaces/sw/pods/${name}`);

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

  it('a Binding\'s annotations are copied onto the pod', async () => {
    await createPods(client, [testPod('sw', 'b', { gpus: 0 })]);
    await client.post('/api/v1/namespaces/sw/pods/b/binding', { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'b', annotations: { 'ai.sits2026.dev/gpu-indices': '0,1' } }, target: { apiVersion: 'v1', kind: 'Node', name: 'dgx-h100-000' } });
    const p = await pod('b');
    expect(p.spec?.nodeName).toBe('dgx-h100-000');
    expect(p.metadata?.annotations?.['ai.sits2026.dev/gpu-indices']).toBe('0,1');
  });

  it('a pods/status merge patch writes and removes annotations, and cannot touch the spec', async () => {
    await createPods(client, [testPod('sw', 's', { gpus: 0 })]);
    const before = await pod('s');
    await client.request('PATCH', '/api/v1/namespaces/sw/pods/s/status', { contentType: 'application/merge-patch+json', body: { metadata: { annotations: { 'ai.sits2026.dev/expected-start': '2026-01-01T00:00:00.000Z' } }, spec: { activeDeadlineSeconds: 5 } } });
    const after = await pod('s');
    expect(after.metadata?.annotations?.['ai.sits2026.dev/expected-start']).toBe('2026-01-01T00:00:00.000Z');
    expect(after.spec?.activeDeadlineSeconds).toBe(before.spec?.activeDeadlineSeconds);
    await client.request('PATCH', '/api/v1/namespaces/sw/pods/s/status', { contentType: 'application/merge-patch+json', body: { metadata: { annotations: { 'ai.sits2026.dev/expected-start': null } } } });
    expect((await pod('s')).metadata?.annotations?.['ai.sits2026.dev/expected-start']).toBeUndefined();
  });
});
