// What the live scheduler holds and does per pod, on a real kube-apiserver (issue 34): the caches keep pods without
// their managedFields; the runtime-learning flush's work follows the pods that stopped, not the runs open (e9ea8da:
// walking every open run on every view made binding 100,000 pods quadratic); Scheduled events wait as small records,
// not as requests queued in the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeClient } from './client/client.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { createNs, createPods, listEvents, listPods, testPod, waitFor } from '../harness/e2e-kit.ts';
import { devNodes, applyCrds } from '../app/dev-cluster.ts';
import { createLiveApp, type LiveApp } from '../app/live.ts';
import { ClusterCache } from './cache/cluster-cache.ts';
import { KubeEventSink, SENDING } from './adapters/event-sink.ts';

const NS = 'informers';
const WAVES = 4;
const PER_WAVE = 15;

describe('the live scheduler at scale, on a real kube-apiserver', () => {
  let plane: ControlPlane, client: KubeClient, app: LiveApp;

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    // 8 nodes of 8 GPUs in racks of 4: room for every test's pods.
    await createFakeGpuNodes(plane.kubeConfig(), devNodes(8, 'dgx-h100', 4));
    await applyCrds(client);
    await createNs(client, NS);
    // Listed at start (not watched): another scheduler's pod, kept in the cache all the same.
    await createPods(client, [testPod(NS, 'listed', { schedulerName: 'default-scheduler' })]);
    app = await createLiveApp({ kubeconfig: plane.kubeconfigPath, identity: 'e2e-informers' });
  });
  afterAll(async () => {
    await app?.stop();
    client?.close();
    await plane?.stop();
  });

  it('keeps pods without their managedFields, listed or watched, every other field as the API has it', async () => {
    await createPods(client, [testPod(NS, 'watched', { gpus: 1 })]);
    const api = await waitFor('watched bound', async () => {
      const ps = await listPods(client, NS);
      return ps.find((p) => p.metadata?.name === 'watched' && (p.spec?.nodeName ?? '') !== '') === undefined ? undefined : ps;
    });
    for (const name of ['listed', 'watched']) {
      const fromApi = api.find((p) => p.metadata?.name === name) as V1Pod;
      expect(fromApi.metadata?.managedFields?.length).toBeGreaterThan(0);
      const cached = await waitFor(`${name} in the cache at the API's version`, async () => {
        const c = app.scheduler.cache.pod(`${NS}/${name}`);
        return c?.metadata?.resourceVersion === fromApi.metadata?.resourceVersion ? c : undefined;
      });
      expect(cached.metadata?.managedFields).toBeUndefined();
      const { managedFields: _dropped, ...meta } = fromApi.metadata ?? {};
      expect(cached).toEqual({ ...fromApi, apiVersion: cached.apiVersion, kind: cached.kind, metadata: meta });
    }
  });

  it(`binding ${WAVES}×${PER_WAVE} pods costs the runtime-learning flush nothing until they stop, then one visit per run`, async () => {
    const rt = app.scheduler.runtimes;
    const before = { ...rt.flushWork };
    const stoppedBefore = rt.recorded.stopped;
    const names: string[] = [];
    for (let w = 0; w < WAVES; w++) {
      const wave = Array.from({ length: PER_WAVE }, (_, i) => testPod(NS, `w${w}-${i}`, { gpus: 1 }));
      names.push(...wave.map((p) => p.metadata?.name as string));
      await createPods(client, wave);
      await waitFor(`wave ${w} bound`, async () => {
        const ps = await listPods(client, NS);
        return wave.every((p) => (ps.find((x) => x.metadata?.name === p.metadata?.name)?.spec?.nodeName ?? '') !== '');
      });
    }
    await waitFor('every run followed', async () => rt.following >= WAVES * PER_WAVE);
    // Every wave was seen by views with the earlier waves' runs open: a flush walking the open runs visits them all.
    expect(rt.flushWork.flushes - before.flushes).toBeGreaterThanOrEqual(WAVES);
    expect(rt.flushWork.visited - before.visited).toBe(0);

    await Promise.all(names.map((n) => client.delete(`/api/v1/namespaces/${NS}/pods/${n}`, { gracePeriodSeconds: 0 })));
    await waitFor('every run recorded as stopped', async () => rt.recorded.stopped - stoppedBefore === names.length);
    // One visit per run that stopped (single-pod jobs): linear in the pods that stopped.
    expect(rt.flushWork.visited - before.visited).toBe(names.length);
  });

  it(`Scheduled events wait in the sink beyond ${SENDING} on their way, and all are written`, async () => {
    const ns = 'events';
    await createNs(client, ns);
    const sinkClient = new KubeClient(plane.kubeConfig(), { maxInFlight: 4 });
    try {
      const sink = new KubeEventSink(sinkClient, new ClusterCache(), {
        component: 'sits-scheduler',
        instance: 'e2e',
        enabled: true,
        log: () => undefined,
        nowMs: () => Date.now(),
      });
      const n = 200;
      for (let i = 0; i < n; i++) sink.emit({ kind: 'Scheduled', subject: `${ns}/p-${i}`, message: `Successfully assigned ${ns}/p-${i} to node-${i % 7}` });
      // Before, each event became a request at once: 196 would wait in the client, each holding its body and calls.
      expect(sink.queued).toBe(n - SENDING);
      await sink.drain();
      expect(sink.queued).toBe(0);
      const evs = await listEvents(client, ns);
      expect(
        evs
          .filter((e) => e.reason === 'Scheduled')
          .map((e) => e.message)
          .sort(),
      ).toEqual(Array.from({ length: n }, (_, i) => `Successfully assigned ${ns}/p-${i} to node-${i % 7}`).sort());
    } finally {
      sinkClient.close();
    }
  });

  it('binds 50 pods placed in one cycle at most 2 × its requests in flight at a time, the rest waiting as batches', async () => {
    const ns = 'binder';
    await createNs(client, ns);
    // Created before the scheduler starts: its first cycle places all 50, and before, all 50 began binding at once.
    // (8 in flight: its watches share the client's 8 + 8 sockets, and 2 would leave requests none.)
    await createPods(
      client,
      Array.from({ length: 50 }, (_, i) => testPod(ns, `b-${i}`, { gpus: 1, schedulerName: 'sits-small' })),
    );
    const small = await createLiveApp({ kubeconfig: plane.kubeconfigPath, identity: 'e2e-small', schedulerName: 'sits-small', maxInFlight: 8, events: false });
    try {
      await waitFor('all 50 bound', async () => (await listPods(client, ns)).every((p) => (p.spec?.nodeName ?? '') !== ''), 60_000);
      expect(small.scheduler.binder.stats.bound).toBe(50);
      expect(small.scheduler.binder.peakBinding).toBe(16);
      expect(small.scheduler.binder.queued).toBe(0);
    } finally {
      await small.stop();
    }
  });
});
