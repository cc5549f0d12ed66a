// SITS as a cluster's only scheduler (issue 11 §2): `sits run --scheduler-name default-scheduler` schedules the pods
// that name no scheduler (the apiserver defaults spec.schedulerName to default-scheduler) and leaves the rest alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../client/client.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, createPods, listEvents, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { applyCrds, devNodes } from '../../app/dev-cluster.ts';
import { createLiveApp, type LiveApp } from '../../app/live.ts';
import { ANNOTATION } from '../../api/wire.ts';

describe('sits run --scheduler-name default-scheduler', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let app: LiveApp;

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(plane.kubeConfig(), devNodes(2, 'dgx-h100'));
    app = await createLiveApp({
      kubeconfig: plane.kubeconfigPath,
      identity: 'e2e-default',
      schedulerName: 'default-scheduler',
      leaseNamespace: 'kube-system',
      leaseDurationSec: 5,
    });
  });
  afterAll(async () => {
    await app?.stop();
    client?.close();
    await plane?.stop();
  });

  it('binds pods that name no scheduler, with their GPU devices, and leaves pods of another scheduler pending', async () => {
    await createNs(client, 'plain');
    const plain = testPod('plain', 'no-scheduler-named', { gpus: 2 });
    delete (plain.spec as { schedulerName?: string }).schedulerName;
    await createPods(client, [plain, testPod('plain', 'for-sits-scheduler', { gpus: 1 })]);
    const bound = await waitFor('the plain pod bound', async () =>
      (await listPods(client, 'plain')).find((p) => p.metadata?.name === 'no-scheduler-named' && (p.spec?.nodeName ?? '') !== ''),
    );
    expect(bound.spec?.schedulerName).toBe('default-scheduler');
    expect(bound.metadata?.annotations?.[ANNOTATION.gpuIndices]).toMatch(/^\d+,\d+$/);
    const ev = await waitFor('its Scheduled event from default-scheduler', async () =>
      (await listEvents(client, 'plain')).find((e) => e.reason === 'Scheduled' && e.involvedObject?.name === 'no-scheduler-named'),
    );
    expect(ev.message).toContain(bound.spec?.nodeName ?? '?');
    const lease = await client.get<{ spec: { holderIdentity?: string } }>('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/default-scheduler');
    expect(lease.spec.holderIdentity).toBe('e2e-default');
    // Not ours: no binding, no condition written by us.
    const other = (await listPods(client, 'plain')).find((p) => p.metadata?.name === 'for-sits-scheduler');
    expect(other?.spec?.nodeName ?? '').toBe('');
    expect(other?.status?.conditions ?? []).toEqual([]);
  });
});
