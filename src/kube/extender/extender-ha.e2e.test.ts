// Two `sits extender` replicas behind a Service-like front (ADR 0078): they elect a leader on a Lease; only the
// leader is Ready and answers the verbs, so kube-scheduler's calls (one urlPrefix, the Service) reach the replica
// that holds the plans, and a standby takes over when the leader goes. No GPU is given twice.
import { request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyCrds, devNodes } from '../../app/dev-cluster.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createNs, createPods, gpuUsage, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { grantCaller, issueCerts, schedulerConfig, type Certs } from '../../harness/extender-kit.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { startReadyFront, type ReadyFront } from '../../harness/ready-front.ts';
import { KubeClient } from '../client/client.ts';
import { KUBE_SCHEDULER_NAME, startExtender, type RunningExtender } from './extender-server.ts';

describe('two sits extender replicas behind one Service', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let certs: Certs;
  let front: ReadyFront;
  const exts: RunningExtender[] = [];
  // 2 nodes of 4 GPUs: 8 GPUs for 8 pods, so a GPU given twice would show.
  const nodes = devNodes(2, 'a800x4');

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(plane.kubeConfig(), nodes);
    certs = await issueCerts();
    await grantCaller(client);
    for (const identity of ['replica-a', 'replica-b']) {
      exts.push(
        await startExtender({
          client,
          port: 0,
          host: '127.0.0.1',
          tls: certs.serving,
          clientCa: certs.ca,
          leaderElection: { namespace: 'kube-system', name: 'sits-extender', identity, leaseDurationSec: 3 },
        }),
      );
    }
    await waitFor('one replica leads', async () => (exts.filter((e) => e.serving()).length === 1 ? true : undefined));
    front = await startReadyFront(
      exts.map((e) => e.port),
      certs.ca,
    );
    await plane.startScheduler(schedulerConfig(front.port, certs));
  }, 180_000);

  afterAll(async () => {
    await Promise.allSettled(exts.map((e) => e.close()));
    await front?.close();
    client?.close();
    await plane?.stop();
  });

  const post = (port: number, path: string, body: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port,
          path,
          method: 'POST',
          ca: certs.ca,
          cert: certs.scheduler.cert,
          key: certs.scheduler.key,
          headers: { 'Content-Type': 'application/json' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const bound = (n: number) =>
    waitFor(
      `${n} pods bound`,
      async () => {
        const ps = (await listPods(client, 'ha')).filter((p) => (p.spec?.nodeName ?? '') !== '');
        return ps.length >= n ? ps : undefined;
      },
      60_000,
    );

  /** Waits until `ext` has counted at least `n` binds (the count is checked exactly after). */
  const binds = (ext: RunningExtender, n: number) => waitFor(`${n} binds counted`, async () => (ext.extender.stats.binds >= n ? true : undefined), 10_000);

  it('only the leader is Ready and answers; kube-scheduler through the Service binds with it', async () => {
    const leader = exts.find((e) => e.serving()) as RunningExtender;
    const standby = exts.find((e) => !e.serving()) as RunningExtender;
    await waitFor('the front sees only the leader Ready', async () => (front.ready().length === 1 && front.ready()[0] === leader.port ? true : undefined));
    const args = JSON.stringify({ Pod: { metadata: { name: 'x', namespace: 'default' } }, NodeNames: nodes.map((n) => n.name) });
    expect(await post(standby.port, '/filter', args)).toBe(503);
    await createNs(client, 'ha');
    await createPods(
      client,
      Array.from({ length: 4 }, (_, i) => testPod('ha', `first-${i}`, { gpus: 1, schedulerName: KUBE_SCHEDULER_NAME })),
    );
    const ps = await bound(4);
    gpuUsage(ps, 4);
    // The extender counts a bind once it has read the pod back bound: a moment after the list above may see it.
    await binds(leader, 4);
    expect(leader.extender.stats.binds).toBe(4);
    expect(standby.extender.stats.binds).toBe(0);
  });

  it('when the leader goes, the standby takes the lease, becomes Ready and binds the rest; every GPU once', async () => {
    const leader = exts.find((e) => e.serving()) as RunningExtender;
    const standby = exts.find((e) => !e.serving()) as RunningExtender;
    await leader.close();
    await waitFor('the standby leads', async () => (standby.serving() ? true : undefined));
    await waitFor('the front sends to the new leader', async () => (front.ready().length === 1 && front.ready()[0] === standby.port ? true : undefined));
    await createPods(
      client,
      Array.from({ length: 4 }, (_, i) => testPod('ha', `second-${i}`, { gpus: 1, schedulerName: KUBE_SCHEDULER_NAME })),
    );
    const ps = await bound(8);
    const used = gpuUsage(ps, 4);
    for (const n of nodes) expect(used.get(n.name)).toEqual([1, 1, 1, 1]);
    await binds(standby, 4);
    expect(standby.extender.stats.binds).toBe(4);
    // The cluster is full: a ninth pod waits instead of sharing a GPU.
    await createPods(client, [testPod('ha', 'ninth', { gpus: 1, schedulerName: KUBE_SCHEDULER_NAME })]);
    await new Promise((r) => setTimeout(r, 3000));
    expect((await listPods(client, 'ha')).find((p) => p.metadata?.name === 'ninth')?.spec?.nodeName ?? '').toBe('');
  });
});
