// A scheduler that died says so (issue 34): on a real kube-apiserver, with the scheduler's Lease expired for longer
// than its duration, every pod waiting for sits-scheduler gets one NoSchedulerLeader Event naming the Lease and its
// last holder; a pod of another scheduler gets none; once the Lease is renewed, new pods get none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createNs, createPods, listEvents, testPod, waitFor } from '../harness/e2e-kit.ts';
import { KubeClient } from '../kube/client/client.ts';
import { microTime } from '../kube/scheduler/leader.ts';
import { startSchedulerWatch, type SchedulerWatch } from './scheduler-watch.ts';

const LEASE = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/sits-scheduler';

describe('pods waiting for a scheduler with no leader', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let watch: SchedulerWatch | undefined;
  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await createNs(client, 'wait');
  });
  afterAll(async () => {
    await watch?.stop();
    client.close();
    await plane.stop();
  });

  it('get one NoSchedulerLeader Event each, naming the Lease and its last holder; none once a replica leads again', async () => {
    const stale = microTime(new Date(Date.now() - 60_000));
    await client.post('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'sits-scheduler' },
      spec: { holderIdentity: 'sits-scheduler-7d9f-abcde', leaseDurationSeconds: 15, acquireTime: stale, renewTime: stale },
    });
    await createPods(client, [testPod('wait', 'a'), testPod('wait', 'b'), testPod('wait', 'other', { schedulerName: 'default-scheduler' })]);
    watch = await startSchedulerWatch(client, { lease: 'kube-system/sits-scheduler', schedulerNames: ['sits-scheduler'], intervalMs: 200 });
    const told = async (): Promise<{ reason?: string; message?: string; involvedObject?: { name?: string } }[]> =>
      (await listEvents(client, 'wait')).filter((e) => e.reason === 'NoSchedulerLeader');
    const events = await waitFor('both sits pods told', async () => {
      const e = await told();
      return e.length >= 2 ? e : undefined;
    });
    expect(events.map((e) => e.involvedObject?.name).sort()).toEqual(['a', 'b']);
    for (const e of events)
      expect(e.message).toMatch(
        /^no scheduler replica has held the Lease kube-system\/sits-scheduler since \S+ \(last holder sits-scheduler-7d9f-abcde\): this pod waits/,
      );
    // Several more passes: still one Event per pod in this outage.
    const passes = watch.stats.passes;
    await waitFor('three more passes', async () => watch !== undefined && watch.stats.passes >= passes + 3);
    expect((await told()).length).toBe(2);

    // A replica leads again: a pod created now waits for it, not for nobody.
    const lease = await client.get<{ metadata: { resourceVersion: string } }>(LEASE);
    await client.request('PUT', LEASE, {
      body: { ...lease, spec: { holderIdentity: 'sits-scheduler-7d9f-fghij', leaseDurationSeconds: 15, renewTime: microTime(new Date()) } },
    });
    await createPods(client, [testPod('wait', 'c')]);
    const after = watch.stats.passes;
    await waitFor('three passes with a leader', async () => watch !== undefined && watch.stats.passes >= after + 3);
    expect((await told()).map((e) => e.involvedObject?.name).sort()).toEqual(['a', 'b']);
  });
});
