// Issue 32 on a real control plane: two Queues of one cohort, weights 2 and 1, no quotas, 8 one-GPU jobs each
// on 8 GPUs. The split must settle at the weights (heavy 6, light 2: light's third job would put it over its
// 8/3 share) and stay there: a bounded number of preemptions, never a swing of the whole cluster.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import type { KubeClient } from '../client/client.ts';
import { createNs, getTable, listEvents, listPods, tableRows, waitFor } from '../../harness/e2e-kit.ts';

let cluster: DevCluster;
let client: KubeClient;

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 2, shape: 'a800x4', log: () => {}, controllers: { config: { backoffBaseMs: 200, backoffMaxMs: 1000 } } });
  client = cluster.client;
});
afterAll(async () => {
  await cluster?.stop();
});

const queue = (name: string, weight: number, cohort: string | undefined): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'Queue',
  metadata: { name },
  spec: { tenant: name, weight, ...(cohort === undefined ? {} : { cohort }), preemption: { cooldownSeconds: 3 } },
});

const trainingJob = (name: string, queueName: string): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'TrainingJob',
  metadata: { name },
  spec: {
    replicas: 1,
    queue: queueName,
    resources: { 'nvidia.com/gpu': 1 },
    container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
  },
});

const running = (ps: V1Pod[], prefix: string): number =>
  ps.filter((p) => p.metadata?.name?.startsWith(prefix) && (p.spec?.nodeName ?? '') !== '' && p.metadata?.deletionTimestamp === undefined).length;

describe('fair share on the live scheduler', () => {
  // Live in a cohort; the same case without one is scenarios/queues/fair-share-2-1-no-cohort.yaml (the live fix is
  // the same code either way: ADR 0179).
  it.each([['in a cohort', 'lab']] as const)(
    'weights 2:1 %s, no quotas: settles at 6/2 and stays, without swinging the cluster',
    async (_, cohort: string | undefined) => {
      const ns = cohort === undefined ? 'fs-alone' : 'fs-cohort';
      await client.post('/apis/ai.sits2026.dev/v1/queues', queue('heavy', 2, cohort));
      await client.post('/apis/ai.sits2026.dev/v1/queues', queue('light', 1, cohort));
      await createNs(client, ns);
      for (let i = 0; i < 8; i++) await client.post(`/apis/ai.sits2026.dev/v1/namespaces/${ns}/trainingjobs`, trainingJob(`heavy-${i}`, 'heavy'));
      await waitFor('heavy holds all 8 GPUs', async () => running(await listPods(client, ns), 'heavy-') === 8, 60_000);
      for (let i = 0; i < 8; i++) await client.post(`/apis/ai.sits2026.dev/v1/namespaces/${ns}/trainingjobs`, trainingJob(`light-${i}`, 'light'));
      await waitFor('light reaches 2', async () => running(await listPods(client, ns), 'light-') === 2, 60_000);
      // Watch for over two cooldowns (the old swing came back within one): the split stays 6/2.
      const samples: string[] = [];
      const until = Date.now() + 8_000;
      while (Date.now() < until) {
        const ps = await listPods(client, ns);
        samples.push(`${running(ps, 'heavy-')}/${running(ps, 'light-')}`);
        await new Promise((r) => setTimeout(r, 500));
      }
      const preempted = (await listEvents(client, ns)).filter((e) => e.reason === 'Preempted');
      const victims = new Set(preempted.map((e) => e.involvedObject?.name));
      expect({ light: [...new Set(samples.map((s) => s.split('/')[1]))], victims: victims.size }).toEqual({ light: ['2'], victims: 2 });
      expect(samples.filter((s) => s !== '6/2').length, samples.join(' ')).toBeLessThanOrEqual(2);
      // What `kubectl get sq` and `kubectl get pg` show: every column filled by the scheduler's status writes.
      const queues = await waitFor(
        'the Queue status columns',
        async () => {
          const rows = tableRows(await getTable(cluster.plane, '/apis/ai.sits2026.dev/v1/queues'));
          expect(rows.map((r) => [r.Name, r.Weight, r.Admitted, r.Pending])).toEqual([
            ['heavy', 2, 6, 2],
            ['light', 1, 2, 6],
          ]);
          return rows;
        },
        30_000,
      );
      expect(queues.map((r) => r.Cohort ?? null)).toEqual([cohort ?? null, cohort ?? null]);
      const groups = await waitFor(
        'the PodGroup phase column',
        async () => {
          const rows = tableRows(await getTable(cluster.plane, `/apis/ai.sits2026.dev/v1/namespaces/${ns}/podgroups`));
          const phases = rows.map((r) => r.Phase);
          expect(phases.filter((p) => p === 'Running')).toHaveLength(8);
          expect(phases.filter((p) => p === 'Pending')).toHaveLength(8);
          return rows;
        },
        30_000,
      );
      expect(groups).toHaveLength(16);
      const status = await client.get<{ status?: Record<string, unknown> }>('/apis/ai.sits2026.dev/v1/queues/light');
      expect(status.status).toMatchObject({
        effectiveWeight: 1,
        admittedWorkloads: 2,
        pendingWorkloads: 6,
        usage: expect.arrayContaining([{ name: 'nvidia.com/gpu', total: '2' }]),
        fairShare: 0.25,
        headWorkload: expect.stringMatching(new RegExp(`^${ns}/light-`)),
      });
    },
  );
});
