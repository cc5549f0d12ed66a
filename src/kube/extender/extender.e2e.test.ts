// `sits extender` behind the real kube-scheduler: kube-scheduler (KubeSchedulerConfiguration `extenders:`, TLS
// with a client certificate from our CA, nvidia.com/gpu managed and ignored by kube-scheduler) asks SITS to
// filter, prioritize and bind; the seed example's 8 replicas land on 2 NVLink nodes, the GPU indices are
// written with the Bindings, a gang is placed whole, and a pod that fits nowhere stays Pending with SITS's
// reason in kube-scheduler's FailedScheduling event.
import { request as httpsRequest } from 'node:https';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEED_TRAINING_JOB } from '../../api/examples.ts';
import { ANNOTATION, SCHEDULER_NAME } from '../../api/wire.ts';
import { applyCrds, devNodes, startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createNs, createPods, gpuUsage, listEvents, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { blendShapes, WHOLE_GPU_PRIOR } from '../../core/estimate/expected-workload.ts';
import { resolveProfile } from '../../core/plugins/registry.ts';
import { seededRng } from '../../core/ports.ts';
import { KubeBinder } from '../adapters/binder.ts';
import { KubeClient } from '../client/client.ts';
import { ClusterCache } from '../cache/cluster-cache.ts';
import { SitsExtender } from './extender.ts';
import { PodJobs } from '../cache/pod-jobs.ts';
import { KUBE_SCHEDULER_NAME, startExtender, type RunningExtender } from './extender-server.ts';
import { grantCaller, issueCerts, schedulerConfig, type Certs } from '../../harness/extender-kit.ts';

describe('sits extender behind the real kube-scheduler', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let ext: RunningExtender;
  let ca: string;
  let certs: Certs;
  // The seed's cluster: 4 A800 nodes of 4 NVLink-connected GPUs each.
  const nodes = devNodes(4, 'a800x4');

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(plane.kubeConfig(), nodes);
    certs = await issueCerts();
    ca = certs.ca;
    await grantCaller(client);
    ext = await startExtender({ client, port: 0, host: '127.0.0.1', tls: certs.serving, clientCa: ca, gangPlanTtlMs: 12_000 });
    await plane.startScheduler(schedulerConfig(ext.port, certs));
  }, 180_000);

  afterAll(async () => {
    await ext?.close();
    client?.close();
    await plane?.stop();
  });

  const boundPods = (ns: string, n: number): Promise<V1Pod[]> =>
    waitFor(
      `${n} pods bound in ${ns}`,
      async () => {
        const ps = await listPods(client, ns);
        return ps.length === n && ps.every((p) => (p.spec?.nodeName ?? '') !== '') ? ps : undefined;
      },
      60_000,
    );

  it('refuses callers without the right: no certificate is anonymous and gets 403', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest(`${ext.url}/filter`, { method: 'POST', ca, headers: { 'Content-Type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end('{}');
    });
    expect(status).toBe(403);
  });

  it("kube-scheduler's certificate is let in; a bad body is a 400 naming the field, an unknown verb a 404", async () => {
    const post = (path: string, body: string): Promise<{ status: number; text: string }> =>
      new Promise((resolve, reject) => {
        const req = httpsRequest(
          `${ext.url}${path}`,
          { method: 'POST', ca, cert: certs.scheduler.cert, key: certs.scheduler.key, headers: { 'Content-Type': 'application/json' } },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString('utf8')));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    expect(await post('/filter', '{"Pod": {"metadata": {"name": "x"}}, "NodeNames": "a800x4-000"}')).toEqual({
      status: 400,
      text: 'ExtenderArgs.NodeNames: want an array of node names, got string\n',
    });
    expect(await post('/filter', '{not json')).toMatchObject({ status: 400 });
    // Only the four verbs are served: another path is 404 before any review (ADR 0177), so made-up paths cost none.
    expect((await post('/other', '{}')).status).toBe(404);
  });

  it('a gang that cannot fit whole (5 × 4 GPUs on 16) binds no member', async () => {
    await createNs(client, 'whole');
    await client.post('/apis/ai.sits2026.dev/v1/namespaces/whole/podgroups', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'PodGroup',
      metadata: { name: 'wide', namespace: 'whole' },
      spec: { minMember: 5 },
    });
    await createPods(
      client,
      Array.from({ length: 5 }, (_, i) => testPod('whole', `wide-${i}`, { gpus: 4, group: 'wide', schedulerName: KUBE_SCHEDULER_NAME })),
    );
    const ev = await waitFor(
      'FailedScheduling event',
      async () => (await listEvents(client, 'whole')).find((e) => e.reason === 'FailedScheduling' && e.message?.includes('together') === true),
      30_000,
    );
    expect(ev.message).toMatch(/^0\/4 nodes are available: 4 could hold single members, but not 5 of them together/);
    // Give kube-scheduler time to retry (backoff 1–2 s): still nothing bound.
    await new Promise((r) => setTimeout(r, 3000));
    expect((await listPods(client, 'whole')).filter((p) => (p.spec?.nodeName ?? '') !== '')).toEqual([]);
    // Unbound pods go at once (no kubelet to wait for): the seed example below gets an empty cluster.
    await Promise.all(Array.from({ length: 5 }, (_, i) => client.delete(`/api/v1/namespaces/whole/pods/wide-${i}`)));
    await waitFor('gang pods gone', async () => (await listPods(client, 'whole')).length === 0);
  });

  it('a gang plan whose member kube-scheduler never sends expires: the waiting member is refused, nothing bound', async () => {
    await createNs(client, 'expire');
    await client.post('/apis/ai.sits2026.dev/v1/namespaces/expire/podgroups', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'PodGroup',
      metadata: { name: 'pair', namespace: 'expire' },
      spec: { minMember: 2 },
    });
    const ok = testPod('expire', 'pair-0', { gpus: 1, group: 'pair', schedulerName: KUBE_SCHEDULER_NAME });
    // kube-scheduler's own VolumeBinding rejects this member (no such PVC) before asking the extender.
    const stuck = testPod('expire', 'pair-1', { gpus: 1, group: 'pair', schedulerName: KUBE_SCHEDULER_NAME });
    const spec = stuck.spec as NonNullable<V1Pod['spec']>;
    spec.volumes = [{ name: 'data', persistentVolumeClaim: { claimName: 'missing' } }];
    await createPods(client, [ok, stuck]);
    const expired = ext.extender.stats.expired;
    const ev = await waitFor(
      'pair-0 binding refused after the plan expired',
      async () => (await listEvents(client, 'expire')).find((e) => e.involvedObject?.name === 'pair-0' && e.message?.includes('plan expired') === true),
      60_000,
    );
    expect(ev.message).toContain('gang expire/pair: plan expired with 1 of 2 members at bind; none bound');
    expect(ext.extender.stats.expired).toBeGreaterThan(expired);
    expect((await listPods(client, 'expire')).filter((p) => (p.spec?.nodeName ?? '') !== '')).toEqual([]);
    await Promise.all(['pair-0', 'pair-1'].map((n) => client.delete(`/api/v1/namespaces/expire/pods/${n}`)));
    await waitFor('pair pods gone', async () => (await listPods(client, 'expire')).length === 0);
  });

  it('8 single-GPU pods without a gang are packed on 2 of the 4 empty nodes (SITS packs, it does not spread)', async () => {
    await createNs(client, 'singles');
    await createPods(
      client,
      Array.from({ length: 8 }, (_, i) => testPod('singles', `one-${i}`, { gpus: 1, schedulerName: KUBE_SCHEDULER_NAME })),
    );
    const pods = await boundPods('singles', 8);
    const usage = gpuUsage(pods, 4);
    expect(usage.size).toBe(2);
    for (const used of usage.values()) expect(used).toEqual([1, 1, 1, 1]);
    // Force-deleted (no kubelet here): the seed example below gets an empty cluster.
    await Promise.all(pods.map((p) => client.delete(`/api/v1/namespaces/singles/pods/${p.metadata?.name ?? ''}`, { gracePeriodSeconds: 0 })));
    await waitFor('singles gone', async () => (await listPods(client, 'singles')).length === 0);
  });

  it('seed example: the 8 replicas of gang bert-large-finetune land whole on 2 NVLink nodes, GPU indices written', async () => {
    await createNs(client, 'seed');
    await client.post('/apis/ai.sits2026.dev/v1/namespaces/seed/podgroups', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'PodGroup',
      metadata: { name: 'bert-large-finetune', namespace: 'seed' },
      spec: { minMember: 8 },
    });
    await createPods(
      client,
      Array.from({ length: 8 }, (_, i) =>
        testPod('seed', `bert-large-finetune-${i}`, { gpus: 1, memory: '32Gi', group: 'bert-large-finetune', schedulerName: KUBE_SCHEDULER_NAME }),
      ),
    );
    const pods = await boundPods('seed', 8);
    const usage = gpuUsage(pods, 4); // throws on a missing gpu-indices annotation or an over-commit
    expect(usage.size).toBe(2);
    for (const used of usage.values()) expect(used).toEqual([1, 1, 1, 1]);
    for (const p of pods) expect(p.metadata?.annotations?.[ANNOTATION.gpuIndices]).toMatch(/^[0-3]$/);
    // Bound by kube-scheduler's extender binder (ours), as one gang plan.
    expect(new Set(pods.map((p) => p.metadata?.annotations?.[ANNOTATION.planId])).size).toBe(1);
    expect(ext.extender.stats.gangPlans).toBeGreaterThanOrEqual(1);
    // kube-scheduler reports each binding (its events arrive a little later).
    await waitFor('8 Scheduled events', async () => (await listEvents(client, 'seed')).filter((e) => e.reason === 'Scheduled').length >= 8);
  });

  it("a pod that fits nowhere stays Pending with SITS's reason in kube-scheduler's event", async () => {
    await createNs(client, 'toobig');
    await createPods(client, [testPod('toobig', 'eight', { gpus: 8, schedulerName: KUBE_SCHEDULER_NAME })]);
    const ev = await waitFor('FailedScheduling event', async () => (await listEvents(client, 'toobig')).find((e) => e.reason === 'FailedScheduling'), 30_000);
    expect(ev.message).toMatch(/^0\/4 nodes are available: 4 with fewer GPUs than the 8 requested/);
    const pod = (await listPods(client, 'toobig'))[0];
    expect(pod?.spec?.nodeName ?? '').toBe('');
    expect(pod?.status?.conditions?.find((c) => c.type === 'PodScheduled')?.reason).toBe('Unschedulable');
  });

  // kube-scheduler retries a preemptor as soon as its own informer sees the victim gone; SITS's informer may be
  // later (a busy machine). Failing then would send kube-scheduler to preempt a second victim elsewhere. The
  // extender's cache is fed by hand here, so it lags the apiserver exactly as long as the test says.
  it('a preemptor retried before SITS saw its victim go: the filter catches up with the apiserver instead of failing', async () => {
    const cache = new ClusterCache('lagging');
    for (const n of (await client.get<{ items: V1Node[] }>('/api/v1/nodes')).items) cache.upsertNode(n);
    const clock = { nowMs: () => Date.now() };
    const jobs = new PodJobs(cache, 'lagging', clock);
    const binder = new KubeBinder(client, cache, { schedulerName: 'lagging', events: { emit: () => undefined }, log: () => undefined, nowMs: clock.nowMs });
    const profile = resolveProfile('sits', { typicalShapes: blendShapes([], WHOLE_GPU_PRIOR, 0) });
    if (!profile.ok) throw new Error(JSON.stringify(profile.error));
    const lagging = new SitsExtender(
      { client, cache, jobs, binder },
      { profile: profile.value, rng: () => seededRng(1), nowMs: clock.nowMs, cacheWaitMs: 20_000 },
    );
    const target = nodes[3]?.name ?? '';
    // The victim as the cache last saw it: Running on the target with its 4 GPUs; the apiserver has no such pod.
    const victim = testPod('lag', 'victim', { gpus: 4, schedulerName: 'lagging' });
    cache.upsertPod({
      ...victim,
      metadata: { ...victim.metadata, uid: 'gone-1', annotations: { ...victim.metadata?.annotations, [ANNOTATION.gpuIndices]: '0,1,2,3' } },
      spec: { ...(victim.spec as NonNullable<V1Pod['spec']>), nodeName: target },
      status: { phase: 'Running' },
    });
    const base = testPod('lag', 'urgent', { gpus: 4, schedulerName: 'lagging' });
    const urgent: V1Pod = {
      ...base,
      metadata: { ...base.metadata, uid: 'urgent-1' },
      spec: { ...(base.spec as NonNullable<V1Pod['spec']>), priority: 1000 },
      status: { phase: 'Pending', nominatedNodeName: target },
    };
    cache.upsertPod(urgent);
    // The informer delivers the deletion 500 ms into the filter call.
    const delivered = new Promise<void>((r) => setTimeout(() => r(cache.deletePod(victim)), 500));
    const t0 = Date.now();
    const r = await lagging.filter({ Pod: urgent, NodeNames: [target] });
    await delivered;
    expect(r.NodeNames).toEqual([target]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
    // A pod that preempted nowhere is answered from the cache at once (full here), without asking the apiserver.
    cache.upsertPod({
      ...victim,
      metadata: { ...victim.metadata, uid: 'gone-2' },
      spec: { ...(victim.spec as NonNullable<V1Pod['spec']>), nodeName: target },
      status: { phase: 'Running' },
    });
    const plain: V1Pod = { ...urgent, metadata: { ...urgent.metadata, name: 'plain', uid: 'plain-1' }, status: { phase: 'Pending' } };
    cache.upsertPod(plain);
    const t1 = Date.now();
    const refused = await lagging.filter({ Pod: plain, NodeNames: [target] });
    expect(refused.NodeNames).toEqual([]);
    expect(Object.keys(refused.FailedNodes)).toEqual([target]);
    expect(Date.now() - t1).toBeLessThan(5_000);
    lagging.close();
  });
});

// The seed example itself: the TrainingJob of seed 000 (8 replicas × 1 GPU), its pods made by SITS's controller
// and run by the fake kubelet, scheduled by kube-scheduler (a profile named as the pods' scheduler) with SITS as
// its extender.
describe('the seed TrainingJob through kube-scheduler + sits extender', () => {
  let cluster: DevCluster;
  let ext: RunningExtender;

  beforeAll(async () => {
    cluster = await startDevCluster({ nodes: 4, shape: 'a800x4', withScheduler: false });
    const certs = await issueCerts();
    await grantCaller(cluster.client);
    ext = await startExtender({ client: cluster.client, port: 0, host: '127.0.0.1', tls: certs.serving, clientCa: certs.ca, schedulerName: SCHEDULER_NAME });
    await cluster.plane.startScheduler(schedulerConfig(ext.port, certs, SCHEDULER_NAME));
  }, 180_000);

  afterAll(async () => {
    await ext?.close();
    await cluster?.stop();
  });

  it('places the 8 replicas on 2 NVLink nodes, every GPU index recorded, all Running', async () => {
    const client = cluster.client;
    await createNs(client, 'seed');
    await client.post('/apis/ai.sits2026.dev/v1/namespaces/seed/trainingjobs', SEED_TRAINING_JOB);
    const pods = await waitFor(
      '8 replicas bound and Running',
      async () => {
        const ps = (await listPods(client, 'seed')).filter((p) => p.metadata?.name?.startsWith('bert-large-finetune-') === true);
        return ps.length === 8 && ps.every((p) => (p.spec?.nodeName ?? '') !== '' && p.status?.phase === 'Running') ? ps : undefined;
      },
      60_000,
    );
    const usage = gpuUsage(pods, 4);
    expect(usage.size).toBe(2);
    for (const used of usage.values()) expect(used).toEqual([1, 1, 1, 1]);
    expect(ext.extender.stats.gangPlans).toBeGreaterThanOrEqual(1);
    // The extender answers the bind calls after checking each Binding with the apiserver: its count may lag the pods.
    await waitFor('8 binds answered', async () => ext.extender.stats.binds === 8);
    // kube-scheduler bound them (its Scheduled events), through SITS's bind.
    await waitFor('kube-scheduler Scheduled events', async () => (await listEvents(client, 'seed')).filter((e) => e.reason === 'Scheduled').length >= 8);
  });
  it('preempt through kube-scheduler: SITS names the victim, kube-scheduler evicts it, the preemptor gets its GPUs', async () => {
    const client = cluster.client;
    for (const [name, value] of [
      ['sits-low', 10],
      ['sits-high', 1000],
    ] as const)
      await client.post('/apis/scheduling.k8s.io/v1/priorityclasses', { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value });
    await createNs(client, 'prio');
    // The 2 nodes the seed job left free, each filled by one low-priority pod holding its 4 GPUs and all its CPU:
    // kube-scheduler's own dry run then needs a victim (CPU) and asks SITS which.
    const cpu =
      (await client.get<{ status: { allocatable: Record<string, string> } }>(`/api/v1/nodes/${cluster.nodeNames[0] ?? ''}`)).status.allocatable.cpu ?? '1';
    const withClass = (p: V1Pod, cls: string): V1Pod => ({ ...p, spec: { ...(p.spec as NonNullable<V1Pod['spec']>), priorityClassName: cls } });
    await createPods(
      client,
      [0, 1].map((i) => withClass(testPod('prio', `low-${i}`, { gpus: 4, cpu, schedulerName: SCHEDULER_NAME }), 'sits-low')),
    );
    await waitFor(
      'low pods Running',
      async () => {
        const ps = await listPods(client, 'prio');
        return ps.length === 2 && ps.every((p) => p.status?.phase === 'Running');
      },
      60_000,
    );
    await createPods(client, [withClass(testPod('prio', 'urgent', { gpus: 1, cpu, schedulerName: SCHEDULER_NAME }), 'sits-high')]);
    const urgent = await waitFor(
      'urgent bound',
      async () => {
        const p = (await listPods(client, 'prio')).find((x) => x.metadata?.name === 'urgent');
        return (p?.spec?.nodeName ?? '') !== '' ? p : undefined;
      },
      90_000,
    );
    expect(urgent?.metadata?.annotations?.[ANNOTATION.gpuIndices]).toMatch(/^[0-3]$/);
    expect(ext.extender.stats.preemptions).toBeGreaterThanOrEqual(1);
    const left = (await listPods(client, 'prio')).filter((p) => p.metadata?.name?.startsWith('low-') === true && p.metadata.deletionTimestamp === undefined);
    expect(left).toHaveLength(1);
    // The seed gang (priority 0, no CPU asked) was never a victim.
    expect(
      (await listPods(client, 'seed')).filter(
        (p) => p.metadata?.name?.startsWith('bert-large-finetune-') === true && p.metadata.deletionTimestamp === undefined,
      ),
    ).toHaveLength(8);
  });
});
