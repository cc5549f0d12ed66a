// Issue 12 Deliver 5 live: etcd + kube-apiserver, one fake 4×A800 node, the SITS scheduler, the fake kubelet, the
// workload controllers and the GPU lender (live/serving/gpu-lending.ts), which runs as a ServiceAccount holding exactly the
// controllers' ClusterRole as shipped (deploy/rbac.yaml). An elastic TrainingJob fills the node next to one
// InferenceService replica; scaling the service up through /scale makes the (preemptible) job shrink by a whole
// worker and the new replica bind on the freed GPU; scaling it down gives the worker back after the cooldown. A job
// of higher priority than the service, or in a queue the service's queue may not reclaim from, never lends: the
// replica stays pending with a NoGpuLender event.
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/client/client.ts';
import type { PolicyRule } from '../../deploy/rbac.ts';
import { serviceAccountClient } from '../../kits/service-account-testing.ts';
import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { createNs, listEvents, listPods, waitFor } from '../../harness/e2e-kit.ts';
import type { TrainingJobObject } from '../../controllers/training-job/model.ts';
import { LENDING_ANNOTATION, NO_LENDER_REASON, startGpuLending, type GpuLending } from './gpu-lending.ts';
import { bound, elasticJob, lendingService, live, servicePods, workerPods } from '../../harness/gpu-lending-testing.ts';

const API = '/apis/ai.sits2026.dev/v1';
const COOLDOWN_MS = 6000;

let cluster: DevCluster;
let client: DevCluster['client'];
let lenderClient: KubeClient;
let lending: GpuLending;
const logs: string[] = [];

/** The rules of the controllers' ClusterRole as shipped (deploy/rbac.yaml, generated from src/deploy/rbac.ts). */
function shippedControllerRules(): PolicyRule[] {
  const docs = parseAllDocuments(readFileSync(new URL('../../../deploy/rbac.yaml', import.meta.url), 'utf8')).map(
    (d) => d.toJSON() as { kind?: string; metadata?: { name?: string }; rules?: PolicyRule[] },
  );
  const role = docs.find((d) => d.kind === 'ClusterRole' && d.metadata?.name === 'sits-controllers');
  if (role?.rules === undefined) throw new Error('deploy/rbac.yaml has no sits-controllers ClusterRole');
  return role.rules;
}

/** A client of ServiceAccount sits-system/sits-controller bound to exactly the shipped rules. */
async function controllerIdentity(): Promise<KubeClient> {
  await createNs(client, 'sits-system');
  const sa = (await serviceAccountClient(client, cluster.plane, { namespace: 'sits-system', name: 'sits-controller', rules: shippedControllerRules() })).client;
  // The apiserver's RBAC authorizer sees the new binding through its informers.
  await waitFor('the lender identity may list queues', async () => sa.get('/apis/ai.sits2026.dev/v1/queues').then(() => true), 30_000);
  return sa;
}

beforeAll(async () => {
  cluster = await startDevCluster({
    nodes: 1,
    shape: 'a800x4',
    log: (m) => logs.push(m),
    controllers: {
      config: { backoffBaseMs: 1000, backoffMaxMs: 8000, resizeCooldownMs: 1500 },
      log: (m) => logs.push(`controller: ${m}`),
    },
  });
  client = cluster.client;
  await client.post('/apis/scheduling.k8s.io/v1/priorityclasses', {
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: 'train-high' },
    value: 1000,
  });
  lenderClient = await controllerIdentity();
  lending = startGpuLending(lenderClient, { intervalMs: 500, cooldownMs: COOLDOWN_MS, log: (m) => logs.push(m) });
}, 180_000);

afterAll(async () => {
  await lending?.stop();
  lenderClient?.close();
  await cluster?.stop();
});

const namespaces: string[] = [];
afterEach(async (ctx) => {
  for (const ns of namespaces.splice(0)) {
    if (ctx.task.result?.state === 'fail') {
      for (const j of (await client.get<{ items: TrainingJobObject[] }>(`${API}/namespaces/${ns}/trainingjobs`)).items)
        console.error(`job ${JSON.stringify(j.metadata.annotations)} ${JSON.stringify(j.spec)} ${JSON.stringify(j.status)}`);
      for (const p of await listPods(client, ns))
        console.error(
          `pod ${p.metadata?.name} ${p.spec?.nodeName ?? '-'} ${p.status?.phase} ${JSON.stringify(p.status?.conditions?.find((c) => c.type === 'PodScheduled'))}`,
        );
      console.error(
        logs
          .filter((l) => l.includes('lending') || l.startsWith('controller'))
          .slice(-60)
          .join('\n'),
      );
    }
    // No garbage collector here: delete the owners, then what is left.
    await Promise.allSettled([client.delete(`${API}/namespaces/${ns}/trainingjobs/train`), client.delete(`${API}/namespaces/${ns}/inferenceservices/svc`)]);
    await waitFor(
      `namespace ${ns} emptied`,
      async () => {
        const left = await listPods(client, ns);
        await Promise.allSettled(left.map((p) => client.delete(`/api/v1/namespaces/${ns}/pods/${p.metadata?.name ?? ''}`)));
        return left.length === 0 && (await client.get<{ items: unknown[] }>(`${API}/namespaces/${ns}/trainingjobs`)).items.length === 0;
      },
      60_000,
    );
  }
});

async function newNs(name: string): Promise<string> {
  await createNs(client, name);
  namespaces.push(name);
  return name;
}

const getJob = (ns: string): Promise<TrainingJobObject> => client.get<TrainingJobObject>(`${API}/namespaces/${ns}/trainingjobs/train`);
const workers = (ns: string): Promise<V1Pod[]> => workerPods(client, ns);
const replicas = (ns: string): Promise<V1Pod[]> => servicePods(client, ns);
const scaleService = (ns: string, n: number): Promise<unknown> =>
  client.mergePatch(`${API}/namespaces/${ns}/inferenceservices/svc/scale`, { spec: { replicas: n } });

/** The node full: an elastic job of 3 one-GPU workers (min 1) and a service replica on the fourth GPU. */
async function fill(ns: string, job: { priorityClassName?: string; preemptible: boolean; serviceQueue?: string; jobQueue?: string }): Promise<void> {
  await client.post(`${API}/namespaces/${ns}/inferenceservices`, lendingService(job.serviceQueue));
  await waitFor('the first service replica bound', async () => bound(await replicas(ns)).length === 1, 60_000);
  const spec = {
    ...(job.priorityClassName === undefined ? {} : { priorityClassName: job.priorityClassName }),
    ...(job.jobQueue === undefined ? {} : { queue: job.jobQueue }),
  };
  await client.post(
    `${API}/namespaces/${ns}/trainingjobs`,
    elasticJob({ ...(job.preemptible ? { annotations: { 'ai.sits2026.dev/preemptible': 'true' } } : {}), spec }),
  );
  await waitFor(
    'the job running with 3 workers',
    async () => {
      const j = await getJob(ns);
      return j.status?.phase === 'Running' && j.status.currentReplicas === 3 && bound(await workers(ns)).length === 3;
    },
    20_000,
  );
}

describe('GPU lending between serving and elastic training', () => {
  it('scale up: the job shrinks by a whole worker and the replica binds on the freed GPU; scale down: the job regrows after the cooldown', async () => {
    const ns = await newNs('lend');
    await fill(ns, { preemptible: true });
    await scaleService(ns, 2);
    const shrunk = await waitFor(
      'the job shrunk to 2 workers with the loan recorded',
      async () => {
        const j = await getJob(ns);
        return j.spec.replicas === 2 && j.metadata.annotations?.[LENDING_ANNOTATION.lentReplicas] === '1' ? j : undefined;
      },
      60_000,
    );
    expect(shrunk.metadata.annotations?.[LENDING_ANNOTATION.lentTo]).toBe(`${ns}/svc`);
    const lentAt = Date.parse(shrunk.metadata.annotations?.[LENDING_ANNOTATION.lentAt] ?? '');
    await waitFor(
      'both service replicas bound and the job running with 2 workers',
      async () => {
        const j = await getJob(ns);
        return (
          bound(await replicas(ns)).length === 2 && j.status?.phase === 'Running' && j.status.currentReplicas === 2 && bound(await workers(ns)).length === 2
        );
      },
      90_000,
    );
    const events = await listEvents(client, ns);
    expect(events.some((e) => e.reason === 'GpusLent' && e.message?.includes(`lends 1 worker(s) (1 GPU(s)) to ${ns}/svc: replicas 3 → 2`) === true)).toBe(true);

    await scaleService(ns, 1);
    const regrown = await waitFor(
      'the job back at 3 workers, running',
      async () => {
        const j = await getJob(ns);
        return j.spec.replicas === 3 && j.status?.phase === 'Running' && j.status.currentReplicas === 3 && bound(await workers(ns)).length === 3
          ? j
          : undefined;
      },
      120_000,
    );
    expect(regrown.metadata.annotations?.[LENDING_ANNOTATION.lentReplicas]).toBeUndefined();
    const returned = lending.records.find((r) => r.kind === 'giveBack');
    expect(returned?.message).toBe('gets 1 worker(s) back: replicas 2 → 3');
    // Not before the cooldown against resize storms.
    expect((returned?.atMs ?? 0) - lentAt).toBeGreaterThanOrEqual(COOLDOWN_MS);
    expect(bound(await replicas(ns))).toHaveLength(1);
  }, 300_000);

  it('a job of higher priority than the service never lends: the replica stays pending with a reason', async () => {
    const ns = await newNs('nolend');
    await fill(ns, { preemptible: true, priorityClassName: 'train-high' });
    await scaleService(ns, 2);
    const ev = await waitFor(
      'a NoGpuLender event on the waiting replica',
      async () => (await listEvents(client, ns)).find((e) => e.reason === NO_LENDER_REASON),
      60_000,
    );
    expect(ev.message).toMatch(new RegExp(`no training job lends 1 GPU\\(s\\) to ${ns}/svc: ${ns}/train has priority 1000, above ${ns}/svc's 0`));
    // Several lending passes later: the job untouched, the replica still pending.
    await new Promise((r) => setTimeout(r, 3000));
    const j = await getJob(ns);
    expect(j.spec.replicas).toBe(3);
    expect(j.metadata.annotations?.[LENDING_ANNOTATION.lentReplicas]).toBeUndefined();
    expect(j.status?.currentReplicas).toBe(3);
    const rs = live(await replicas(ns));
    expect(rs).toHaveLength(2);
    expect(bound(rs)).toHaveLength(1);
    expect(lending.records.some((r) => r.kind === 'shrink' && r.subject === `${ns}/train`)).toBe(false);
  }, 300_000);

  it('a job in a queue the service may not reclaim from never lends', async () => {
    const ns = await newNs('noreclaim');
    const queue = (name: string, preemption: Record<string, unknown>) => ({
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'Queue',
      metadata: { name },
      spec: { tenant: name, preemption },
    });
    await client.post(`${API}/queues`, queue('serving', { reclaimWithinCohort: 'Never' }));
    await client.post(`${API}/queues`, queue('research', {}));
    try {
      await fill(ns, { preemptible: true, serviceQueue: 'serving', jobQueue: 'research' });
      await scaleService(ns, 2);
      const ev = await waitFor(
        'a NoGpuLender event on the waiting replica',
        async () => (await listEvents(client, ns)).find((e) => e.reason === NO_LENDER_REASON),
        60_000,
      );
      expect(ev.message).toContain(`queue serving never reclaims from other queues (reclaimWithinCohort Never), ${ns}/train is in queue research`);
      await new Promise((r) => setTimeout(r, 3000));
      const j = await getJob(ns);
      expect([j.spec.replicas, j.status?.currentReplicas, j.metadata.annotations?.[LENDING_ANNOTATION.lentReplicas]]).toEqual([3, 3, undefined]);
      expect(bound(await replicas(ns))).toHaveLength(1);
    } finally {
      await Promise.allSettled([client.delete(`${API}/queues/serving`), client.delete(`${API}/queues/research`)]);
    }
  }, 300_000);
});
