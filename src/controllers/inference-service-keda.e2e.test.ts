// Issue 12 Deliver 3 (KEDA) on a real control plane: etcd + kube-apiserver, the SITS scheduler, the fake kubelet and
// the workload controllers. The cluster starts WITHOUT KEDA: a service in mode keda reports KedaNotInstalled; then
// KEDA's real CRDs (keda/v2@v2.20.2, from its Go module) are installed and the apiserver validates every
// ScaledObject the controller writes against KEDA's own schema. The tests run in order (one cluster, one story).
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { createNs, listPods, waitFor } from '../harness/e2e-kit.ts';
import { applyCrdObjects, upstreamCrds } from '../harness/upstream-crds.ts';
import { renderScaledObject } from '../serving/keda.ts';
import { RUNTIMES } from '../serving/runtimes/index.ts';
import type { InferenceServiceObject } from './inference-service/model.ts';

const NS = 'keda';
const svcPath = `/apis/ai.sits2026.dev/v1/namespaces/${NS}/inferenceservices`;
const soPath = `/apis/keda.sh/v1alpha1/namespaces/${NS}/scaledobjects`;
const PROM = 'http://prometheus.monitoring:9090';

interface ScaledObjectWire {
  metadata: {
    name: string;
    uid: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
  };
  spec: {
    scaleTargetRef: Record<string, string>;
    minReplicaCount: number;
    maxReplicaCount: number;
    pollingInterval: number;
    cooldownPeriod: number;
    triggers: { type: string; name?: string; metricType: string; metadata: Record<string, string>; authenticationRef?: { name: string; kind: string } }[];
  };
}

let cluster: DevCluster;
let client: DevCluster['client'];
const logs: string[] = [];

beforeAll(async () => {
  cluster = await startDevCluster({
    nodes: 1,
    shape: 'nvlink-2x4',
    log: (m) => logs.push(m),
    controllers: { log: (m) => logs.push(`controller: ${m}`), kedaAllow: { servers: [PROM], clusterAuth: ['prom-auth'] } },
  });
  client = cluster.client;
  await createNs(client, NS);
});

afterEach((ctx) => {
  if (ctx.task.result?.state === 'fail') console.error(logs.filter((l) => l.startsWith('controller')).join('\n'));
});

afterAll(async () => {
  await cluster?.stop();
});

const getSvc = (): Promise<InferenceServiceObject> => client.get<InferenceServiceObject>(`${svcPath}/chat`);
const condition = (s: InferenceServiceObject, type: string) => s.status?.conditions?.find((c) => c.type === type);
const scaledObjects = async (): Promise<ScaledObjectWire[]> => (await client.get<{ items: ScaledObjectWire[] }>(soPath)).items;

/** The apiserver's refusal, as the client throws it (status and the Status message). */
async function refusal(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x as { status?: unknown; message?: unknown },
  );
  if (e === undefined) throw new Error('the apiserver accepted it');
  return { status: Number(e.status), message: String(e.message) };
}

/** The rules of the controllers' ClusterRole as shipped (deploy/rbac.yaml, generated from src/deploy/rbac.ts). */
function shippedControllerRules(): unknown[] {
  const docs = parseAllDocuments(readFileSync(new URL('../../deploy/rbac.yaml', import.meta.url), 'utf8')).map(
    (d) => d.toJSON() as { kind?: string; metadata?: { name?: string }; rules?: unknown[] },
  );
  const role = docs.find((d) => d.kind === 'ClusterRole' && d.metadata?.name === 'sits-controllers');
  if (role?.rules === undefined) throw new Error('deploy/rbac.yaml has no sits-controllers ClusterRole');
  return role.rules;
}

const chat = {
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'InferenceService',
  metadata: { name: 'chat' },
  spec: {
    runtime: 'vllm',
    model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen' },
    replicas: 1,
    minReplicas: 1,
    maxReplicas: 4,
    gpusPerReplica: 1,
    resources: { cpu: '1', memory: '1Gi' },
    autoscaling: { mode: 'keda', tokensPerSecondPerReplica: 2500, keda: { serverAddress: PROM } },
  },
};

describe("InferenceService autoscaling.mode keda against KEDA's real CRDs", () => {
  it('without KEDA installed: the condition names the missing ScaledObject API and the replicas still serve', async () => {
    await client.post(svcPath, chat);
    const s = await waitFor(
      'KedaNotInstalled',
      async () => {
        const x = await getSvc();
        return condition(x, 'KedaScaledObject')?.reason === 'KedaNotInstalled' ? x : undefined;
      },
      60_000,
    );
    expect(condition(s, 'KedaScaledObject')).toMatchObject({ status: 'False' });
    expect(condition(s, 'KedaScaledObject')?.message).toContain('spec.autoscaling.mode keda: the apiserver does not serve keda.sh/v1alpha1 ScaledObjects');
    await waitFor('the replica is ready', async () => (await getSvc()).status?.readyReplicas === 1, 60_000);
    expect(condition(await getSvc(), 'ReplicaFailure')?.status).not.toBe('True');
  });

  it("once KEDA's CRDs are installed the controller creates the ScaledObject by itself, accepted by KEDA's schema, with the SITS policy", async () => {
    await applyCrdObjects(client, upstreamCrds('keda'));
    // No poke: the failed create is retried with the runner's backoff (at most 60 s apart).
    const [so] = await waitFor(
      'ScaledObject created',
      async () => {
        try {
          const items = await scaledObjects();
          return items.length === 1 ? items : undefined;
        } catch {
          return undefined; // the new API is still being published
        }
      },
      150_000,
      500,
    );
    const s = await getSvc();
    expect(so?.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'InferenceService', name: 'chat', uid: s.metadata.uid, controller: true })]);
    expect(so?.metadata.labels).toMatchObject({ 'ai.sits2026.dev/inference-service': 'chat' });
    expect(so?.spec).toMatchObject({
      scaleTargetRef: { apiVersion: 'ai.sits2026.dev/v1', kind: 'InferenceService', name: 'chat' },
      minReplicaCount: 1,
      maxReplicaCount: 4,
      pollingInterval: 30,
      cooldownPeriod: 300,
    });
    expect(so?.spec.triggers).toEqual([
      {
        type: 'prometheus',
        metricType: 'AverageValue',
        metadata: {
          serverAddress: PROM,
          query: `sum(rate(vllm:prompt_tokens_total{namespace="${NS}",pod=~"chat-.*"}[1m])) + sum(rate(vllm:generation_tokens_total{namespace="${NS}",pod=~"chat-.*"}[1m]))`,
          threshold: '2500',
          activationThreshold: '0',
        },
      },
    ]);
    const applied = await waitFor(
      'condition Applied',
      async () => {
        const x = await getSvc();
        return condition(x, 'KedaScaledObject')?.status === 'True' ? x : undefined;
      },
      60_000,
    );
    expect(condition(applied, 'KedaScaledObject')).toMatchObject({ reason: 'Applied' });
    // The ScaledObject watch retried all along, logging the missing API once, and now watches.
    await waitFor('the ScaledObject watch started', async () => logs.some((l) => l === 'controller: scaledobjects: listed after all, watching'), 30_000);
    expect(
      logs.filter((l) =>
        l.startsWith(
          'controller: warning: ScaledObject API not installed (keda.sh/v1alpha1 scaledobjects: 404): no ScaledObject can be made for autoscaling.mode keda; install KEDA to enable',
        ),
      ),
    ).toHaveLength(1);
    // KEDA's HPA would scale through this: the /scale subresource with the pods' selector.
    const scale = await client.get<{ status: { selector: string } }>(`${svcPath}/chat/scale`);
    expect(scale.status.selector).toBe('ai.sits2026.dev/inference-service=chat,ai.sits2026.dev/role=replica');
  });

  it('changing the spec bounds (and the target) updates the ScaledObject in place', async () => {
    const before = (await scaledObjects())[0];
    await client.mergePatch(`${svcPath}/chat`, {
      spec: {
        minReplicas: 1,
        maxReplicas: 6,
        autoscaling: { tokensPerSecondPerReplica: 4000, keda: { authenticationRef: { name: 'prom-auth', kind: 'ClusterTriggerAuthentication' } } },
      },
    });
    const so = await waitFor(
      'ScaledObject updated',
      async () => {
        const x = (await scaledObjects())[0];
        return x?.spec.maxReplicaCount === 6 && x.spec.triggers[0]?.metadata.threshold === '4000' ? x : undefined;
      },
      60_000,
    );
    expect(so.metadata.uid).toBe(before?.metadata.uid);
    expect(so.spec.minReplicaCount).toBe(1);
    expect(so.spec.triggers[0]?.authenticationRef).toEqual({ name: 'prom-auth', kind: 'ClusterTriggerAuthentication' });
  });

  it('switching the mode back to sits deletes the ScaledObject and turns the condition off', async () => {
    await client.mergePatch(`${svcPath}/chat`, { spec: { autoscaling: { mode: 'sits', keda: null } } });
    await waitFor('ScaledObject deleted', async () => (await scaledObjects()).length === 0, 60_000);
    const s = await waitFor(
      'condition off',
      async () => {
        const x = await getSvc();
        return condition(x, 'KedaScaledObject')?.reason === 'NotKedaMode' ? x : undefined;
      },
      60_000,
    );
    expect(condition(s, 'KedaScaledObject')?.status).toBe('False');
    // The replicas were never touched by any of it.
    expect((await listPods(client, NS)).filter((p) => p.metadata?.deletionTimestamp === undefined)).toHaveLength(1);
  });

  it("minReplicas 0: KEDA's CRD takes the ScaledObject with minReplicaCount 0, the activation threshold and the activation-only trigger", async () => {
    const ACT = `sum(gateway_pending_requests{namespace="${NS}",service="idle"})`;
    await client.post(svcPath, {
      ...chat,
      metadata: { name: 'idle' },
      spec: {
        ...chat.spec,
        replicas: 0,
        minReplicas: 0,
        autoscaling: { mode: 'keda', tokensPerSecondPerReplica: 2500, keda: { serverAddress: PROM, activationQuery: ACT, cooldownPeriod: 120 } },
      },
    });
    // Created by the controller, so accepted by the apiserver against KEDA's own schema.
    const so = await waitFor(
      'the ScaledObject of the minReplicas-0 service',
      async () => (await scaledObjects()).find((x) => x.metadata.name === 'idle'),
      60_000,
      250,
    );
    expect(so.spec).toMatchObject({ minReplicaCount: 0, maxReplicaCount: 4, cooldownPeriod: 120 });
    expect(so.spec.triggers.map((t) => [t.name, t.metadata.query, t.metadata.threshold, t.metadata.activationThreshold])).toEqual([
      [
        undefined,
        `sum(rate(vllm:prompt_tokens_total{namespace="${NS}",pod=~"idle-.*"}[1m])) + sum(rate(vllm:generation_tokens_total{namespace="${NS}",pod=~"idle-.*"}[1m]))`,
        '2500',
        '0',
      ],
      ['activation', ACT, '1000000000', '0'],
    ]);
    const s = await waitFor(
      'Applied, naming the activation',
      async () => {
        const x = await client.get<InferenceServiceObject>(`${svcPath}/idle`);
        return condition(x, 'KedaScaledObject')?.status === 'True' ? x : undefined;
      },
      60_000,
    );
    expect(condition(s, 'KedaScaledObject')?.message).toContain(`replicas 0..4; activation from zero on ${ACT} > 0`);
    expect(condition(s, 'Ready')).toMatchObject({ status: 'True', reason: 'ScaledToZero' });
    // The renderer's object for a minReplicas-0 service, server-side (dry run) against the same CRD.
    const rendered = renderScaledObject({
      name: 'probe0',
      namespace: NS,
      runtime: RUNTIMES.llamacpp,
      minReplicas: 0,
      maxReplicas: 2,
      tokensPerReplica: 3000,
      queueDepthPerReplica: 4,
      prometheusAddress: PROM,
      scaleDownStabilizationSec: 60,
      activationQuery: ACT,
    });
    await client.post(`${soPath}?dryRun=All`, rendered);
    await client.delete(`${svcPath}/idle`);
    await waitFor(
      'its ScaledObject gone with it (or orphaned without a GC: deleted here)',
      async () => {
        const left = (await scaledObjects()).filter((x) => x.metadata.name === 'idle');
        await Promise.allSettled(left.map((x) => client.delete(`${soPath}/${x.metadata.name}`)));
        return left.length === 0;
      },
      60_000,
    );
  });

  it('issue 36: a service naming a foreign server or an unlisted ClusterTriggerAuthentication gets no ScaledObject, a condition and a Warning Event', async () => {
    const cases = [
      { name: 'exfil', keda: { serverAddress: 'https://attacker.example:8443' }, reason: 'KedaServerNotAllowed' },
      {
        name: 'borrow',
        keda: { serverAddress: PROM, authenticationRef: { name: 'platform-admin', kind: 'ClusterTriggerAuthentication' } },
        reason: 'KedaClusterAuthNotAllowed',
      },
    ];
    for (const c of cases)
      await client.post(svcPath, { ...chat, metadata: { name: c.name }, spec: { ...chat.spec, autoscaling: { mode: 'keda', keda: c.keda } } });
    for (const c of cases) {
      const s = await waitFor(
        `${c.name}: refused`,
        async () => {
          const x = await client.get<InferenceServiceObject>(`${svcPath}/${c.name}`);
          return condition(x, 'KedaScaledObject')?.reason === c.reason ? x : undefined;
        },
        60_000,
      );
      expect(condition(s, 'KedaScaledObject')?.status).toBe('False');
      const events = await waitFor(
        `${c.name}: the Warning Event`,
        async () => {
          const l = (await client.get<{ items: { reason?: string; type?: string; involvedObject?: { name?: string } }[] }>(`/api/v1/namespaces/${NS}/events`))
            .items;
          const mine = l.filter((e) => e.involvedObject?.name === c.name && e.reason === c.reason);
          return mine.length > 0 ? mine : undefined;
        },
        30_000,
      );
      expect(events[0]?.type).toBe('Warning');
    }
    // Several reconciles later, still nothing with the foreign server or the shared secret.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await scaledObjects()).filter((x) => x.metadata.name === 'exfil' || x.metadata.name === 'borrow')).toEqual([]);
    for (const c of cases) await client.delete(`${svcPath}/${c.name}`);
  });

  it("the validation is real: KEDA's CRD refuses a rendered ScaledObject with a bad field, naming the field, and takes the good one", async () => {
    const good = renderScaledObject({
      name: 'probe',
      namespace: NS,
      runtime: RUNTIMES.vllm,
      minReplicas: 1,
      maxReplicas: 4,
      tokensPerReplica: 2500,
      queueDepthPerReplica: 4,
      prometheusAddress: PROM,
      scaleDownStabilizationSec: 300,
    });
    await client.post(`${soPath}?dryRun=All`, good);
    const trigger = good.spec.triggers[0];
    // KEDA's trigger metadata is a map of strings: a number threshold (what the renderer's String() prevents) is refused.
    const bad = { ...good, spec: { ...good.spec, pollingInterval: 'often', triggers: [{ ...trigger, metadata: { ...trigger?.metadata, threshold: 2500 } }] } };
    const err = await refusal(client.post(`${soPath}?dryRun=All`, bad));
    expect(err.status).toBe(422);
    expect(err.message).toContain('spec.triggers[0].metadata.threshold');
    expect(err.message).toContain('spec.pollingInterval');
    const noTarget = { ...good, spec: { ...good.spec, scaleTargetRef: { apiVersion: 'ai.sits2026.dev/v1', kind: 'InferenceService' } } };
    const err2 = await refusal(client.post(`${soPath}?dryRun=All`, noTarget));
    expect(err2).toMatchObject({ status: 422 });
    expect(err2.message).toContain('spec.scaleTargetRef.name');
  });

  it("the controllers' ClusterRole as shipped (deploy/rbac.yaml) may manage ScaledObjects and nothing more of KEDA", async () => {
    await client.post('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'keda-e2e-controller' },
      rules: shippedControllerRules(),
    });
    await client.post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'keda-e2e-controller' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'keda-e2e-controller' },
      subjects: [{ kind: 'ServiceAccount', name: 'sits-controller', namespace: NS }],
    });
    const may = async (verb: string, resource: string): Promise<boolean> => {
      const r = await client.post<{ status: { allowed: boolean } }>('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: `system:serviceaccount:${NS}:sits-controller`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${NS}`, 'system:authenticated'],
          resourceAttributes: { group: 'keda.sh', resource, verb, namespace: NS },
        },
      });
      return r.status.allowed;
    };
    // The apiserver's RBAC authorizer sees new roles through its informers: wait until the binding is in effect.
    await waitFor('the new ClusterRoleBinding to take effect', async () => ((await may('get', 'scaledobjects')) ? true : undefined), 30_000);
    for (const verb of ['get', 'list', 'watch', 'create', 'patch', 'delete']) expect(await may(verb, 'scaledobjects'), verb).toBe(true);
    expect(await may('update', 'scaledobjects')).toBe(false);
    expect(await may('deletecollection', 'scaledobjects')).toBe(false);
    expect(await may('create', 'scaledjobs')).toBe(false);
    expect(await may('create', 'triggerauthentications')).toBe(false);
  });
});
