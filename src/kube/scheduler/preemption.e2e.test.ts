// kube-scheduler's PostFilter on the live scheduler (issue 11), for pods outside any Queue, against a real
// kube-apiserver with two fake 8-GPU nodes and the fake kubelet: a high-priority pod preempts the
// lower-priority pod that no PodDisruptionBudget protects (not the lowest one, which a budget does), gets
// status.nominatedNodeName and waits for its victim to go, with the freed node held for it; a pod whose
// class says preemptionPolicy: Never stays Pending and says why.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { createNs, createPods, listEvents, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import type { KubeClient } from '../client/client.ts';
import type { LiveScheduler } from './live-scheduler.ts';
import { buildLiveScheduler } from '../../app/live.ts';

let cluster: DevCluster;
let client: KubeClient;
let sits: LiveScheduler;
const NS = 'preempt';

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 2, shape: 'l4x8', withScheduler: false, controllers: false });
  client = cluster.client;
  // Ten minutes ahead: pods that started just now are past the victim cooldown of pods outside any Queue
  // (60 s, SITS's own protection against preemption loops, not kube's semantics under test here).
  sits = buildLiveScheduler(client, { identity: 'e2e-preemption', clock: { nowMs: () => Date.now() + 600_000 } });
  await sits.start();
});
afterAll(async () => {
  await sits?.stop();
  await cluster?.stop();
});

const pod = (name: string, priorityClassName: string, o: { labels?: Record<string, string>; finalizer?: boolean } = {}): V1Pod => {
  const p = testPod(NS, name, { gpus: 8, ...(o.labels === undefined ? {} : { labels: o.labels }) });
  return {
    ...p,
    metadata: { ...p.metadata, ...(o.finalizer === true ? { finalizers: ['e2e.sits2026.dev/hold'] } : {}) },
    spec: { ...p.spec, containers: p.spec?.containers ?? [], priorityClassName },
  };
};
const get = async (name: string): Promise<V1Pod | undefined> => (await listPods(client, NS)).find((p) => p.metadata?.name === name);
const nodeOf = async (name: string): Promise<string | undefined> => {
  const n = (await get(name))?.spec?.nodeName;
  return n === undefined || n === '' ? undefined : n;
};

describe('live SITS scheduler: PriorityClass preemption outside any Queue', () => {
  it('preempts the pod no PDB protects, nominates the node, holds it until the victim is gone; Never waits', async () => {
    for (const [name, value, never] of [
      ['low', 100, false],
      ['mid', 200, false],
      ['high', 1000, false],
      ['high-never', 1000, true],
    ] as const) {
      await client.post('/apis/scheduling.k8s.io/v1/priorityclasses', {
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name },
        value,
        ...(never ? { preemptionPolicy: 'Never' } : {}),
      });
    }
    await createNs(client, NS);
    await client.post(`/apis/policy/v1/namespaces/${NS}/poddisruptionbudgets`, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'db', namespace: NS },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } },
    });
    // db has the lowest priority but its budget allows no disruption; batch holds a finalizer so that its
    // deletion leaves it terminating until the test lets it go.
    await createPods(client, [pod('db', 'low', { labels: { app: 'db' } }), pod('batch', 'mid', { finalizer: true })]);
    await waitFor('db and batch running and Ready', async () => {
      const ps = await listPods(client, NS);
      return ps.length === 2 && ps.every((p) => (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'));
    });
    const dbNode = await nodeOf('db');
    const batchNode = await nodeOf('batch');
    expect(dbNode).toBeDefined();
    expect(batchNode).toBeDefined();
    expect(batchNode).not.toBe(dbNode);

    await createPods(client, [pod('urgent', 'high')]);
    const nominated = await waitFor('urgent nominated on batch’s node', async () => {
      const p = await get('urgent');
      return p?.status?.nominatedNodeName === undefined ? undefined : p;
    });
    expect(nominated.status?.nominatedNodeName).toBe(batchNode);
    // The victim is terminating (its finalizer holds it): urgent waits for it, unbound.
    // The eviction is written beside the nomination, not before it: wait for it too.
    const victim = await waitFor('batch terminating', async () => {
      const v = await get('batch');
      return v?.metadata?.deletionTimestamp === undefined ? undefined : v;
    });
    expect(victim?.status?.conditions?.find((c) => c.type === 'DisruptionTarget')).toMatchObject({ status: 'True', reason: 'PreemptionByScheduler' });
    expect(nominated.spec?.nodeName ?? '').toBe('');
    expect((await get('db'))?.metadata?.deletionTimestamp).toBeUndefined();

    // The freed room is held for urgent: a pod arriving now (which can preempt nothing: nothing runs below
    // its priority) does not take it when the victim goes.
    await createPods(client, [pod('latecomer', 'low')]);
    await client.mergePatch(`/api/v1/namespaces/${NS}/pods/batch`, { metadata: { finalizers: null } });
    expect(await waitFor('urgent bound on its nominated node', () => nodeOf('urgent'))).toBe(batchNode);
    // (The apiserver's binding clears status.nominatedNodeName, since Kubernetes 1.34.)
    expect(await get('batch')).toBeUndefined();
    expect(await nodeOf('latecomer')).toBeUndefined();

    // Without Never this pod would preempt db (the budget is respected where possible, and nothing else runs
    // below it); with Never it waits, whatever its priority.
    await createPods(client, [pod('polite', 'high-never')]);
    const cond = await waitFor('polite PodScheduled=False with the reason', async () => {
      const c = (await get('polite'))?.status?.conditions?.find((x) => x.type === 'PodScheduled' && x.status === 'False');
      return c?.message?.includes('preemptionPolicy Never') === true ? c : undefined;
    });
    expect(cond.reason).toBe('Unschedulable');
    expect(cond.message).toContain('preemptionPolicy Never: waits for room, preempts nothing');
    expect(await nodeOf('polite')).toBeUndefined();
    expect((await get('db'))?.metadata?.deletionTimestamp).toBeUndefined();
    const preempted = (await listEvents(client, NS)).filter((e) => e.reason === 'Preempted').map((e) => e.involvedObject?.name);
    expect(preempted).toContain('batch');
  });
});
