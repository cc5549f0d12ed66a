// The live seam of checkpoint-aware preemption on the real apiserver: the request lands on the victim's pods
// and on its TrainingJob, and the next cycle's view of the running job (runningJobs) carries it back with
// the `checkpointable` and `last-checkpoint` annotations the TrainingJob controller writes; until the cache
// shows the ask, the requester's memory of it does (so a cycle in between does not ask twice).
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION, API_PATH, LABEL, SCHEDULER_NAME } from '../../api/wire.ts';
import { SEED_TRAINING_JOB } from '../../api/examples.ts';
import { applyCrds, devNodes } from '../../app/dev-cluster.ts';
import { checkpointStep } from '../../core/actions/checkpoint.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, createPods, listPods, testPod } from '../../harness/e2e-kit.ts';
import { KubeCheckpointRequester } from './checkpoint-requester.ts';
import { KubeClient } from '../client/client.ts';
import { runningJobs } from '../cache/queues.ts';

describe('KubeCheckpointRequester on the real apiserver', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  const logs: string[] = [];

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(plane.kubeConfig(), devNodes(1, 'dgx-h100'));
    await createNs(client, 'ck');
  });
  afterAll(async () => {
    client?.close();
    await plane?.stop();
  });

  it('annotates the pods and the TrainingJob; the running job reads the request and the commit back', async () => {
    await client.post(`${API_PATH}/namespaces/ck/trainingjobs`, { ...SEED_TRAINING_JOB, metadata: { name: 'bert', namespace: 'ck' } });
    const labels = { [LABEL.trainingJob]: 'bert', [LABEL.podGroup]: 'bert' };
    await createPods(
      client,
      [0, 1].map((r) => testPod('ck', `bert-${r}`, { gpus: 4, labels, annotations: { [ANNOTATION.checkpointable]: 'true' } })),
    );
    for (const r of [0, 1])
      await client.post(`/api/v1/namespaces/ck/pods/bert-${r}/binding`, {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: `bert-${r}` },
        target: { apiVersion: 'v1', kind: 'Node', name: 'dgx-h100-000' },
      });
    const askedAt = Date.parse('2026-12-01T17:00:00.000Z');
    // The scheduler's cache, as a test-held copy: it lags the apiserver until `cached` is refreshed.
    const view = async (): Promise<ReturnType<typeof runningJobs>> => runningJobs(await listPods(client, 'ck'), SCHEDULER_NAME, () => undefined, 3_600_000);
    let cached = await listPods(client, 'ck');
    const req = new KubeCheckpointRequester(client, {
      log: (m) => logs.push(m),
      nowMs: () => askedAt,
      pod: (k) => cached.find((p) => `ck/${p.metadata?.name}` === k),
    });
    const stale = runningJobs(cached, SCHEDULER_NAME, () => undefined, 3_600_000);
    expect(checkpointStep(stale.get('gang:ck/bert') as NonNullable<ReturnType<typeof stale.get>>, askedAt, 300_000)).toBe('request');
    req.request(['ck/bert-0', 'ck/bert-1'], 'gang:ck/urgent', askedAt + 300_000);
    // Before the cache shows the ask, the next cycle still sees it and waits instead of asking again.
    const unseen = req.withUnseenAsks(runningJobs(cached, SCHEDULER_NAME, () => undefined, 3_600_000)).get('gang:ck/bert');
    expect(unseen?.checkpointRequestedMs).toBe(askedAt);
    expect(checkpointStep(unseen as NonNullable<typeof unseen>, askedAt + 1000, 300_000)).toBe('pending');
    await req.drain();
    expect(req.stats).toEqual({ requested: 1, errors: 0 });
    const tj = await client.get<{ metadata: { annotations?: Record<string, string> } }>(`${API_PATH}/namespaces/ck/trainingjobs/bert`);
    expect(tj.metadata.annotations?.[ANNOTATION.requestCheckpoint]).toBe('Preemption/2026-12-01T17:00:00.000Z');
    // Once the cache shows the annotations, the requester forgets its asks: the pods carry the state.
    expect(req.unseenAsks).toBe(2);
    cached = await listPods(client, 'ck');
    req.withUnseenAsks(runningJobs(cached, SCHEDULER_NAME, () => undefined, 3_600_000));
    expect(req.unseenAsks).toBe(0);

    const before = (await view()).get('gang:ck/bert');
    expect(before).toMatchObject({ checkpointable: true, checkpointRequestedMs: askedAt, podIds: ['ck/bert-0', 'ck/bert-1'] });
    expect(checkpointStep(before as NonNullable<typeof before>, askedAt + 30_000, 300_000)).toBe('pending');
    // The TrainingJob controller's part on commit: last-checkpoint on every pod.
    for (const r of [0, 1])
      await client.mergePatch(`/api/v1/namespaces/ck/pods/bert-${r}`, {
        metadata: { annotations: { [ANNOTATION.lastCheckpoint]: '2026-12-01T17:00:40.000Z' } },
      });
    const after = (await view()).get('gang:ck/bert');
    expect(checkpointStep(after as NonNullable<typeof after>, askedAt + 45_000, 300_000)).toBe('ready');
  });

  it('a job without a TrainingJob still gets the pods annotated; a missing object is logged, not thrown', async () => {
    await createPods(client, [testPod('ck', 'lone', { gpus: 1 })]);
    const req = new KubeCheckpointRequester(client, {
      log: (m) => logs.push(m),
      nowMs: () => Date.now(),
      pod: (p) => (p === 'ck/lone' ? { metadata: { name: 'lone', namespace: 'ck', labels: { [LABEL.trainingJob]: 'gone' } } } : undefined),
    });
    req.request(['ck/lone'], 'x', Date.now() + 1000);
    await req.drain();
    const pod = await client.get<V1Pod>('/api/v1/namespaces/ck/pods/lone');
    expect(pod.metadata?.annotations?.[ANNOTATION.checkpointRequested]).toBeDefined();
    expect(req.stats.errors).toBe(1);
    expect(logs.some((l) => l.includes('checkpoint request to TrainingJob ck/gone'))).toBe(true);
  });
});
