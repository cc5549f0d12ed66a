// Issue 6 on a real control plane: two queues of one cohort, two TrainingJobs competing for 8 GPUs. The
// borrowing, lower-priority job is preempted whole when the other queue claims its quota, and its controller
// requeues it; it waits saying which queue holds it and why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import type { KubeClient } from '../client/client.ts';
import { runSits } from '../../testing/sits-cli.ts';
import { createNs, createPods, listEvents, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';

let cluster: DevCluster;
let client: KubeClient;
const logs: string[] = [];

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 2, shape: 'a800x4', log: (m) => logs.push(m), controllers: { config: { backoffBaseMs: 500, backoffMaxMs: 2000 } } });
  client = cluster.client;
});
afterAll(async () => {
  await cluster?.stop();
});

const queue = (name: string, tier: string, priorityClasses?: string[]): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'Queue',
  metadata: { name },
  spec: {
    tenant: name,
    tier,
    cohort: 'research',
    resources: [{ name: 'nvidia.com/gpu', nominal: '4' }],
    preemption: { cooldownSeconds: 0 },
    ...(priorityClasses === undefined ? {} : { priorityClasses }),
  },
});

const trainingJob = (name: string, queueName: string, priorityClassName: string): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'TrainingJob',
  metadata: { name },
  spec: {
    replicas: 2,
    queue: queueName,
    priorityClassName,
    resources: { 'nvidia.com/gpu': 2 },
    container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
  },
});

const bound = (ps: V1Pod[]): V1Pod[] => ps.filter((p) => (p.spec?.nodeName ?? '') !== '' && p.metadata?.deletionTimestamp === undefined);

describe('queues on the live scheduler', () => {
  it('a head that does not fit reserves nodes only once it has waited the Queue’s reserveAfterSeconds (ADR 0199)', async () => {
    await client.post('/apis/ai.sits2026.dev/v1/queues', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'Queue',
      metadata: { name: 'patient' },
      spec: { tenant: 'patient' },
    });
    await createNs(client, 'res');
    const labels = { 'ai.sits2026.dev/queue': 'patient' };
    // 3 of the 4 GPUs of each node taken: a 4-GPU head fits nowhere until one of them ends.
    await createPods(client, [testPod('res', 'fill-a', { gpus: 3, labels })]);
    await waitFor('fill-a bound', async () => bound(await listPods(client, 'res')).length === 1, 30_000);
    await createPods(client, [testPod('res', 'fill-b', { gpus: 3, labels })]);
    await waitFor('fill-b bound', async () => bound(await listPods(client, 'res')).length === 2, 30_000);
    await createPods(client, [testPod('res', 'head', { gpus: 4, labels })]);
    const headWait = async (): Promise<string | undefined> =>
      (await client.get<V1Pod>('/api/v1/namespaces/res/pods/head')).status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False')?.message;
    // The default: no reservation before the head has waited 4 h.
    const waiting = await waitFor('the head waits', headWait, 30_000);
    expect(waiting).toMatch(/^queue patient holds res\/head \(capacity\): 0\/2 nodes fit/);
    expect(waiting).not.toContain('reserved');
    // The queue's own bound, 0: the next cycles reserve the node that frees first for it.
    await client.mergePatch('/apis/ai.sits2026.dev/v1/queues/patient', { spec: { reserveAfterSeconds: 0 } });
    const reserved = await waitFor('the head reserves', async () => ((await headWait())?.includes('reserved') === true ? headWait() : undefined), 30_000);
    expect(reserved).toMatch(/; reserved 1 nodes$/);
    // Leave the cluster empty for the tests below.
    for (const name of ['head', 'fill-a', 'fill-b']) await client.delete(`/api/v1/namespaces/res/pods/${name}`, { gracePeriodSeconds: 0 });
    await waitFor('the pods gone', async () => (await listPods(client, 'res')).length === 0, 30_000);
  });

  it('two queues, two TrainingJobs: the lower-priority borrower is preempted whole and requeued', async () => {
    for (const [name, value] of [
      ['research-low', 100],
      ['research-high', 1000],
    ] as const) {
      await client.post('/apis/scheduling.k8s.io/v1/priorityclasses', { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value });
    }
    await client.post('/apis/ai.sits2026.dev/v1/queues', queue('team-a', 'gold'));
    await client.post('/apis/ai.sits2026.dev/v1/queues', queue('team-b', 'bronze'));
    await createNs(client, 'ml');
    // team-b borrows team-a's idle quota: 2 × 4 GPUs = the whole cluster.
    await client.post('/apis/ai.sits2026.dev/v1/namespaces/ml/trainingjobs', {
      ...trainingJob('low', 'team-b', 'research-low'),
      spec: { ...(trainingJob('low', 'team-b', 'research-low').spec as object), resources: { 'nvidia.com/gpu': 4 } },
    });
    await waitFor('low runs on all 8 GPUs', async () => bound(await listPods(client, 'ml')).length === 2, 30_000);
    const lowPods = bound(await listPods(client, 'ml')).map((p) => p.metadata?.uid);

    await client.post('/apis/ai.sits2026.dev/v1/namespaces/ml/trainingjobs', trainingJob('high', 'team-a', 'research-high'));
    const highPods = await waitFor(
      'high bound after reclaiming its quota',
      async () => {
        const ps = bound(await listPods(client, 'ml')).filter((p) => p.metadata?.name?.startsWith('high'));
        return ps.length === 2 ? ps : undefined;
      },
      45_000,
    );
    expect(highPods).toHaveLength(2);
    // Both pods of the victim went — never half of the gang. The events are written without waiting for them.
    const preempted = await waitFor('a Preempted event for both pods of the victim', async () => {
      const ev = (await listEvents(client, 'ml')).filter((e) => e.reason === 'Preempted');
      return new Set(ev.map((e) => e.involvedObject?.name)).size >= 2 ? ev : undefined;
    });
    expect(new Set(preempted.map((e) => e.involvedObject?.name)).size).toBe(2);
    expect(preempted[0]?.message).toContain('reclaimed by queue team-a');
    const survivors = (await listPods(client, 'ml')).filter((p) => lowPods.includes(p.metadata?.uid));
    expect(survivors.filter((p) => p.metadata?.deletionTimestamp === undefined)).toEqual([]);
    // The victim is requeued by its controller and waits, its pods saying which queue holds it and why.
    const msg = await waitFor(
      'the requeued low job waits with a queue message',
      async () => {
        const ps = (await listPods(client, 'ml')).filter((p) => p.metadata?.name?.startsWith('low') && !lowPods.includes(p.metadata?.uid));
        const c = ps[0]?.status?.conditions?.find((x) => x.type === 'PodScheduled' && x.status === 'False');
        return c?.message;
      },
      30_000,
    );
    expect(msg).toMatch(/^queue team-b holds ml\/.+ \((quota|capacity|reservation)\): /);

    // `sits explain` on the waiting gang: the explanation, the queue's reason, and an expected start.
    const lowPod = (await listPods(client, 'ml')).find((p) => p.metadata?.name?.startsWith('low') && (p.spec?.nodeName ?? '') === '');
    const group = lowPod?.metadata?.labels?.['ai.sits2026.dev/pod-group'];
    expect(group).toBeDefined();
    const out = await runSits(['explain', `ml/${group ?? ''}`, '--kubeconfig', cluster.kubeconfigPath]);
    expect(out.code, out.err).toBe(0);
    const lines = out.out.trim().split('\n');
    expect(lines[0]).toMatch(/^0\/2 nodes fit gang ml\/low \(2×4 GPU\): .*nvidia.com\/gpu/);
    expect(lines[1]).toMatch(/^queue team-b holds it \((capacity|quota|reservation)\): /);
    expect(lines[2]).toMatch(/^expected start: \d{4}-\d\d-\d\dT.+ \(in \d+ s\)$/);

    // The same estimate reaches the job's status: the scheduler annotates the waiting pods, the controller copies it.
    const eta = await waitFor(
      'status.estimatedStartTime of the waiting job',
      async () =>
        (await client.get<{ status?: { estimatedStartTime?: string } }>('/apis/ai.sits2026.dev/v1/namespaces/ml/trainingjobs/low')).status?.estimatedStartTime,
      30_000,
    );
    expect(Date.parse(eta)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('a queue holds jobs from namespaces and of PriorityClasses it does not accept, and says so', async () => {
    for (const [name, value] of [
      ['vision-low', 10],
      ['vision-high', 20],
    ] as const) {
      await client.post('/apis/scheduling.k8s.io/v1/priorityclasses', { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value });
    }
    await client.post('/apis/ai.sits2026.dev/v1/queues', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'Queue',
      metadata: { name: 'vision' },
      spec: { tenant: 'vision', namespaces: ['vision'], priorityClasses: ['vision-high'] },
    });
    await createNs(client, 'vision');
    await createNs(client, 'stray');
    const labels = { 'ai.sits2026.dev/queue': 'vision' };
    // The scheduler must know the Queue before the pods come, or it admits them to an unknown (unlimited) queue and
    // binds them. A probe that fits nowhere is held as inadmissible only once the Queue is known: wait for that.
    await createPods(client, [testPod('stray', 'probe', { gpus: 1000, labels })]);
    await waitFor('the scheduler knows queue vision', async () =>
      (await client.get<V1Pod>('/api/v1/namespaces/stray/pods/probe')).status?.conditions?.some((c) => c.message?.includes('(inadmissible)') === true),
    );
    await client.delete('/api/v1/namespaces/stray/pods/probe', { gracePeriodSeconds: 0 });
    await waitFor('the probe gone', async () => (await listPods(client, 'stray')).length === 0);
    const pod = (ns: string, name: string, priorityClassName: string): V1Pod => {
      const p = testPod(ns, name, { labels });
      return { ...p, spec: { ...p.spec, containers: p.spec?.containers ?? [], priorityClassName } };
    };
    await createPods(client, [pod('stray', 'elsewhere', 'vision-high'), pod('vision', 'wrong-class', 'vision-low')]);
    const held = async (ns: string): Promise<string | undefined> => {
      const m = (await listPods(client, ns))[0]?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False')?.message;
      return m?.includes('(inadmissible)') === true ? m : undefined;
    };
    expect(await waitFor('the pod from another namespace is held', () => held('stray'), 30_000)).toBe(
      'queue vision holds stray/elsewhere (inadmissible): namespace stray may not submit to queue vision (allowed: vision)',
    );
    expect(await waitFor('the pod of another PriorityClass is held', () => held('vision'), 30_000)).toBe(
      'queue vision holds vision/wrong-class (inadmissible): queue vision does not accept priority class vision-low (accepts vision-high)',
    );
  });
});
