// Regression (found by `sits bench chaos`, ADR 0187): a leader whose renewal is in flight while it is paused or slowed
// must not count that renewal from when its answer arrives. It used to: the paused leader woke up with the answer,
// held itself leader for another renew deadline though the standby had taken the Lease meanwhile, and bound a pod.
// Here the leader's connection goes through a proxy on loopback that holds every answer 3 s, on a real
// kube-apiserver: its renewal is stored at once but answered 3 s later (as for a process paused right after sending
// it), the standby takes over a lease duration after the stored renewal, and at no sampled moment may both think
// they lead.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigYaml, startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { startSlowProxy, type SlowProxy } from '../../harness/slow-proxy.ts';
import { waitFor } from '../../harness/e2e-kit.ts';
import { KubeClient } from '../client/client.ts';
import { LeaderElector } from './leader.ts';

const LEASE = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/sits';

describe('leader election with a slow renewal (real kube-apiserver)', () => {
  let plane: ControlPlane;
  let proxy: SlowProxy;
  const clients: KubeClient[] = [];
  const electors: LeaderElector[] = [];

  beforeAll(async () => {
    plane = await startControlPlane();
    proxy = await startSlowProxy(Number(new URL(plane.server).port));
  });
  afterAll(async () => {
    proxy.responseDelayMs = 0;
    await Promise.all(electors.map((e) => e.stop(false)));
    for (const c of clients) c.close();
    await proxy?.close();
    await plane?.stop();
  });

  const elector = (identity: string, kc: KubeConfig): LeaderElector => {
    const client = new KubeClient(kc, { userAgent: identity });
    clients.push(client);
    // `sits run --lease-duration 4`'s timing: renew deadline 2.64 s, retry 0.57 s.
    const e = new LeaderElector(client, {
      namespace: 'kube-system',
      name: 'sits',
      identity,
      leaseDurationSec: 4,
      renewDeadlineSec: 2.64,
      retryPeriodSec: 4 / 7,
    });
    electors.push(e);
    e.start();
    return e;
  };

  it('the slowed leader never thinks it leads while the standby does; the standby takes over', async () => {
    const slowKc = join(plane.dir, 'slow.kubeconfig');
    writeFileSync(slowKc, kubeconfigYaml(proxy.url, plane.token));
    const kc = new KubeConfig();
    kc.loadFromFile(slowKc);
    const a = elector('slowed', kc);
    await waitFor('the first replica leads', async () => a.isLeader(), 30_000);
    const b = elector('standby', plane.kubeConfig());
    await new Promise((r) => setTimeout(r, 1500));
    expect(b.isLeader()).toBe(false);

    proxy.responseDelayMs = 3000;
    let both = 0;
    let bLed = false;
    const t0 = performance.now();
    // Sample until the standby has led for a while and the slowed renewal has long been answered.
    while (performance.now() - t0 < 12_000) {
      const al = a.isLeader();
      const bl = b.isLeader();
      if (al && bl) both++;
      bLed ||= bl;
      await new Promise((r) => setTimeout(r, 20));
    }
    const admin = new KubeClient(plane.kubeConfig());
    clients.push(admin);
    const lease = await admin.get<{ spec?: { holderIdentity?: string } }>(LEASE);
    expect(lease.spec?.holderIdentity).toBe('standby');
    expect(bLed).toBe(true);
    expect(both).toBe(0);
    expect(a.isLeader()).toBe(false);
  });
});
