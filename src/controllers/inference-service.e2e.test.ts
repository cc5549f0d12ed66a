// Issue 12 Deliver 1–2 on a real control plane: etcd + kube-apiserver, 3 fake 8×A100 nodes with two 4-GPU NVLink
// islands each (nvlink-2x4), the SITS scheduler, the fake kubelet (Ready unless annotated otherwise) and the
// workload controllers. One namespace per test; objects are created as raw JSON, as `kubectl apply` sends them.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { READY_ANNOTATION } from '../harness/fake-kubelet.ts';
import { createNs, createPods, listPods, testPod, waitFor, getTable as getTableAt, type KubeTable } from '../harness/e2e-kit.ts';
import { ANNOTATION } from '../api/wire.ts';
import type { InferenceServiceObject } from './inference-service/model.ts';

const API = '/apis/ai.sits2026.dev/v1';
const svcsPath = (ns: string): string => `${API}/namespaces/${ns}/inferenceservices`;
const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/inferenceservices.ai.sits2026.dev';

let cluster: DevCluster;
let client: DevCluster['client'];
const logs: string[] = [];

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 3, shape: 'nvlink-2x4', log: (m) => logs.push(m), controllers: { log: (m) => logs.push(`controller: ${m}`) } });
  client = cluster.client;
});

afterAll(async () => {
  await cluster?.stop();
});

const namespaces: string[] = [];
async function newNs(name: string): Promise<string> {
  await createNs(client, name);
  namespaces.push(name);
  return name;
}

// No kube-controller-manager here, so no garbage collector: the test deletes what the services owned.
afterEach(async (ctx) => {
  for (const ns of namespaces.splice(0)) {
    // Listed with retries: a test that changed the CRD leaves its storage re-initialising for a moment (429).
    const items = await waitFor(`inference services of ${ns} listed`, async () => (await client.get<{ items: InferenceServiceObject[] }>(svcsPath(ns))).items);
    if (ctx.task.result?.state === 'fail') {
      for (const s of items) console.error(`${ns}/${s.metadata.name}: ${JSON.stringify(s.status)}`);
      for (const p of await listPods(client, ns))
        console.error(`pod ${p.metadata?.name} ${p.spec?.nodeName ?? '-'} ${p.status?.phase} ${JSON.stringify(p.status?.conditions)}`);
      console.error(logs.filter((l) => l.startsWith('controller')).join('\n'));
    }
    await waitFor(
      `inference services of ${ns} gone`,
      async () => {
        const left = (await client.get<{ items: InferenceServiceObject[] }>(svcsPath(ns))).items;
        await Promise.allSettled(left.map((s) => client.delete(`${svcsPath(ns)}/${s.metadata.name ?? ''}`)));
        return left.length === 0;
      },
      30_000,
    );
    await Promise.allSettled((await listPods(client, ns)).map((p) => client.delete(`/api/v1/namespaces/${ns}/pods/${p.metadata?.name ?? ''}`)));
    const services = (await client.get<{ items: { metadata: { name: string } }[] }>(`/api/v1/namespaces/${ns}/services`)).items;
    await Promise.allSettled(services.map((s) => client.delete(`/api/v1/namespaces/${ns}/services/${s.metadata.name}`)));
    await waitFor(`namespace ${ns} emptied`, async () => (await listPods(client, ns)).length === 0, 30_000);
  }
});

function inferenceService(name: string, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'InferenceService',
    metadata: { name },
    spec: {
      runtime: 'vllm',
      model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen' },
      replicas: 2,
      gpusPerReplica: 1,
      resources: { cpu: '4', memory: '16Gi' },
      ...spec,
    },
  };
}

const getSvc = (ns: string, name: string): Promise<InferenceServiceObject> => client.get<InferenceServiceObject>(`${svcsPath(ns)}/${name}`);
const isReady = (p: V1Pod): boolean =>
  p.metadata?.deletionTimestamp === undefined && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
const replicas = async (ns: string): Promise<V1Pod[]> =>
  (await listPods(client, ns)).filter((p) => p.metadata?.labels?.['ai.sits2026.dev/inference-service'] !== undefined);
const condition = (s: InferenceServiceObject, type: string) => s.status?.conditions?.find((c) => c.type === type);

const getTable = (path: string): Promise<KubeTable> => getTableAt(cluster.plane, path);

async function readyService(ns: string, name: string, n: number): Promise<InferenceServiceObject> {
  return waitFor(
    `${ns}/${name} ready ${n}/${n}`,
    async () => {
      const s = await getSvc(ns, name);
      return s.status?.phase === 'Ready' &&
        s.status.readyReplicas === n &&
        s.status.updatedReplicas === n &&
        s.status.observedGeneration === s.metadata.generation
        ? s
        : undefined;
    },
    30_000,
  );
}

describe('InferenceService controller on a real kube-apiserver (3 × nvlink-2x4)', () => {
  it('serves 2 replicas: pods bound by SITS with their GPUs, a Service on the engine port, status 2/2 and the printer columns', async () => {
    const ns = await newNs('serve');
    await client.post(svcsPath(ns), inferenceService('chat'));
    const s = await readyService(ns, 'chat', 2);
    const pods = await replicas(ns);
    expect(pods).toHaveLength(2);
    for (const p of pods) {
      expect(p.spec?.schedulerName).toBe('sits-scheduler');
      expect(p.spec?.nodeName).toMatch(/^nvlink-2x4-/);
      expect(p.metadata?.annotations?.[ANNOTATION.gpuIndices]?.split(',')).toHaveLength(1);
      expect(p.spec?.containers[0]?.readinessProbe?.httpGet?.path).toBe('/health');
      expect(p.spec?.containers[0]?.args).toEqual(expect.arrayContaining(['--model', 'Qwen/Qwen2.5-7B-Instruct', '--served-model-name', 'qwen']));
    }
    const svc = await client.get<{ spec: { selector: Record<string, string>; ports: { name: string; port: number }[] } }>(
      `/api/v1/namespaces/${ns}/services/chat`,
    );
    expect(svc.spec.selector).toEqual({ 'ai.sits2026.dev/inference-service': 'chat', 'ai.sits2026.dev/role': 'replica' });
    expect(svc.spec.ports.map((p) => [p.name, p.port])).toEqual([['http', 8000]]);
    expect(s.status).toMatchObject({ replicas: 2, readyReplicas: 2, model: 'qwen', url: `http://chat.${ns}.svc:8000` });
    expect(condition(s, 'Ready')).toMatchObject({ status: 'True', reason: 'MinimumReplicasReady' });
    const table = await getTable(svcsPath(ns));
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(['Name', 'Ready', 'Desired', 'Model', 'Runtime', 'Phase', 'Updated', 'URL', 'Age']);
    expect(table.rows[0]?.cells.slice(0, 6)).toEqual(['chat', 2, 2, 'qwen', 'vllm', 'Ready']);
  });

  it('rolls a new image out without ever dropping below 2 ready replicas', async () => {
    const ns = await newNs('roll');
    await client.post(svcsPath(ns), inferenceService('chat'));
    await readyService(ns, 'chat', 2);
    const before = new Set((await replicas(ns)).map((p) => p.metadata?.name));
    let minReady = Infinity;
    let maxPods = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const ps = (await replicas(ns)).filter((p) => p.metadata?.deletionTimestamp === undefined);
        minReady = Math.min(minReady, ps.filter(isReady).length);
        maxPods = Math.max(maxPods, ps.length);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await client.mergePatch(`${svcsPath(ns)}/chat`, { spec: { container: { image: 'vllm/vllm-openai:v0.11.0' } } });
    await waitFor(
      '2 replicas on the new image, all ready',
      async () => {
        const ps = (await replicas(ns)).filter((p) => p.metadata?.deletionTimestamp === undefined);
        return ps.length === 2 && ps.every((p) => isReady(p) && p.spec?.containers[0]?.image === 'vllm/vllm-openai:v0.11.0' && !before.has(p.metadata?.name));
      },
      30_000,
    );
    const s = await readyService(ns, 'chat', 2);
    watching = false;
    await watcher;
    expect(minReady).toBeGreaterThanOrEqual(2);
    // maxSurge 1 (the default): at most one replica above spec.replicas at any time.
    expect(maxPods).toBeLessThanOrEqual(3);
    expect(condition(s, 'Progressing')).toMatchObject({ status: 'False', reason: 'Complete' });
  });

  it('follows a PATCH of the /scale subresource (what KEDA and an HPA write) with an external autoscaler declared', async () => {
    const ns = await newNs('scale');
    await client.post(svcsPath(ns), inferenceService('chat', { maxReplicas: 4, autoscaling: { mode: 'external' } }));
    await readyService(ns, 'chat', 2);
    const scale = await client.get<{ spec: { replicas: number }; status: { replicas: number; selector: string } }>(`${svcsPath(ns)}/chat/scale`);
    expect(scale).toMatchObject({
      spec: { replicas: 2 },
      status: { replicas: 2, selector: 'ai.sits2026.dev/inference-service=chat,ai.sits2026.dev/role=replica' },
    });
    await client.mergePatch(`${svcsPath(ns)}/chat/scale`, { spec: { replicas: 3 } });
    await readyService(ns, 'chat', 3);
    expect((await replicas(ns)).filter(isReady)).toHaveLength(3);
    const after = await client.get<{ status: { replicas: number } }>(`${svcsPath(ns)}/chat/scale`);
    expect(after.status.replicas).toBe(3);
  });

  it('keeps a TP=2 replica inside one NVLink island; TP=8 fits no island and is refused naming spec.tensorParallelSize', async () => {
    const ns = await newNs('tp');
    await client.post(svcsPath(ns), inferenceService('tp2', { replicas: 3, gpusPerReplica: 2, tensorParallelSize: 2 }));
    await readyService(ns, 'tp2', 3);
    for (const p of await replicas(ns)) {
      const gpus = (p.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '').split(',').map(Number);
      expect(gpus).toHaveLength(2);
      // nvlink-2x4: GPUs 0-3 and 4-7 are the two islands.
      expect(new Set(gpus.map((g) => Math.floor(g / 4))).size).toBe(1);
      expect(p.metadata?.annotations?.[ANNOTATION.topologyRequired]).toBe('nvlink-domain');
    }
    await client.post(svcsPath(ns), inferenceService('tp8', { replicas: 1, gpusPerReplica: 8, tensorParallelSize: 8 }));
    const s = await waitFor('tp8 refused', async () => {
      const x = await getSvc(ns, 'tp8');
      return condition(x, 'InvalidSpec')?.status === 'True' ? x : undefined;
    });
    expect(condition(s, 'InvalidSpec')).toMatchObject({ reason: 'TensorParallelTooLarge' });
    expect(condition(s, 'InvalidSpec')?.message).toContain(
      'spec.tensorParallelSize: tensor-parallel size 8 fits no NVLink domain of the cluster: the largest NVLink island has 4 GPUs',
    );
    expect(s.status?.phase).toBe('Failed');
    expect((await replicas(ns)).filter((p) => p.metadata?.labels?.['ai.sits2026.dev/inference-service'] === 'tp8')).toEqual([]);
  });

  it('a TP=2 replica waits rather than straddle two NVLink islands, and is named past its deadline; a 2-GPU pipeline replica takes those GPUs', async () => {
    const ns = await newNs('islands');
    // Three GPUs of each island taken on every node: the only free pairs are one GPU per island.
    await createPods(
      client,
      cluster.nodeNames.flatMap((_, i) => [testPod(ns, `fill-${i}-a`, { gpus: 3 }), testPod(ns, `fill-${i}-b`, { gpus: 3 })]),
    );
    const fillers = await waitFor('fillers bound', async () => {
      const ps = (await listPods(client, ns)).filter((p) => p.metadata?.name?.startsWith('fill-') === true);
      return ps.length === 6 && ps.every((p) => p.metadata?.annotations?.[ANNOTATION.gpuIndices] !== undefined) ? ps : undefined;
    });
    for (const p of fillers)
      expect(new Set((p.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '').split(',').map((g) => Math.floor(Number(g) / 4))).size).toBe(1);
    await client.post(svcsPath(ns), inferenceService('tp2', { replicas: 1, gpusPerReplica: 2, tensorParallelSize: 2, progressDeadlineSeconds: 2 }));
    const s = await waitFor(
      'tp2 named as not scheduled',
      async () => {
        const x = await getSvc(ns, 'tp2');
        return condition(x, 'ReplicaFailure')?.status === 'True' ? x : undefined;
      },
      30_000,
    );
    expect(condition(s, 'ReplicaFailure')?.message).toMatch(
      /tp2-[0-9a-f]{8}-0 not ready \d+s after it started \(spec.progressDeadlineSeconds 2\): not scheduled: .*NVLink/,
    );
    expect((await replicas(ns)).every((p) => (p.spec?.nodeName ?? '') === '')).toBe(true);
    // The waiting gang goes first (no garbage collector here: its pod too), so that the queue does not hold GPUs for it.
    await client.delete(`${svcsPath(ns)}/tp2`);
    for (const p of await replicas(ns)) await client.delete(`/api/v1/namespaces/${ns}/pods/${p.metadata?.name ?? ''}`);
    await waitFor('tp2 gone', async () => (await replicas(ns)).length === 0);
    // Without tensor parallelism across them (TP=1, two pipeline stages) the same two GPUs are fine.
    await client.post(svcsPath(ns), inferenceService('pp2', { replicas: 1, gpusPerReplica: 2, tensorParallelSize: 1 }));
    await readyService(ns, 'pp2', 1);
    const pp = (await replicas(ns)).find((p) => p.metadata?.labels?.['ai.sits2026.dev/inference-service'] === 'pp2');
    const ppGpus = (pp?.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '').split(',').map(Number);
    expect(ppGpus).toHaveLength(2);
    expect(new Set(ppGpus.map((g) => Math.floor(g / 4))).size).toBe(2);
  });

  it("the engine's GPU support reaches the scheduler: Triton pinned to A100-80G runs there; compute capability 9.0 waits on A100s, named with the scheduler's reason", async () => {
    const ns = await newNs('gpus');
    await client.post(
      svcsPath(ns),
      inferenceService('trt', { runtime: 'triton', model: { uri: 's3://models/llama-trtllm' }, replicas: 1, gpu: { allowedModels: ['A100-80G'] } }),
    );
    await readyService(ns, 'trt', 1);
    const trt = (await replicas(ns))[0];
    expect(trt?.metadata?.annotations).toMatchObject({ [ANNOTATION.gpuModels]: expect.stringContaining('A100-80G'), [ANNOTATION.minComputeCapability]: '8.0' });
    const svc = await client.get<{ spec: { ports: { name: string; port: number }[] } }>(`/api/v1/namespaces/${ns}/services/trt`);
    expect(svc.spec.ports.map((p) => p.name).sort()).toEqual(['grpc', 'http', 'metrics']);
    await client.post(svcsPath(ns), inferenceService('hopper', { replicas: 1, gpu: { minComputeCapability: '9.0' }, progressDeadlineSeconds: 2 }));
    const s = await waitFor(
      'hopper named as not scheduled',
      async () => {
        const x = await getSvc(ns, 'hopper');
        return condition(x, 'ReplicaFailure')?.status === 'True' ? x : undefined;
      },
      30_000,
    );
    expect(condition(s, 'ReplicaFailure')?.message).toMatch(/hopper-[0-9a-f]{8}-0 not ready .*not scheduled: 0\/3 nodes fit .*needs sm_90/);
  });

  it('an unknown runtime: the apiserver refuses it naming spec.runtime; from a newer CRD the controller says so and creates nothing', async () => {
    const ns = await newNs('runtime');
    const refused = await client.post(svcsPath(ns), inferenceService('bad', { runtime: 'sglang' })).then(
      () => undefined,
      (e: unknown) => e,
    );
    // A KubeApiError (kube/ is out of this layer's reach: its shape is enough).
    expect(refused).toMatchObject({ status: 422 });
    expect((refused as Error).message).toContain('spec.runtime');
    // Version skew: the CRDs of a newer SITS (one more runtime) are applied before the controller is upgraded.
    type Crd = { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: { runtime: { enum: string[] } } } } } } }[] } };
    const original = await client.get<Crd>(CRD_PATH);
    const newer = structuredClone(original);
    newer.spec.versions[0]?.schema.openAPIV3Schema.properties.spec.properties.runtime.enum.push('sglang');
    await client.put(CRD_PATH, newer);
    try {
      await waitFor('the newer CRD to accept sglang', async () => {
        await client.post(svcsPath(ns), inferenceService('skew', { runtime: 'sglang' }));
        return true;
      });
      const s = await waitFor('the unknown runtime reported', async () => {
        const x = await getSvc(ns, 'skew');
        return condition(x, 'InvalidSpec')?.status === 'True' ? x : undefined;
      });
      expect(condition(s, 'InvalidSpec')).toMatchObject({ reason: 'UnknownRuntime' });
      expect(condition(s, 'InvalidSpec')?.message).toContain('spec.runtime: unknown runtime "sglang"');
      expect(s.status?.phase).toBe('Failed');
      // Nothing half-applied: no pod, no Service.
      expect(await replicas(ns)).toEqual([]);
      expect((await client.get<{ items: unknown[] }>(`/api/v1/namespaces/${ns}/services`)).items).toEqual([]);
    } finally {
      await client.delete(`${svcsPath(ns)}/skew`).catch(() => undefined);
      const current = await client.get<Crd & { metadata: { resourceVersion: string } }>(CRD_PATH);
      await client.put(CRD_PATH, {
        ...original,
        metadata: { ...(original as unknown as { metadata: object }).metadata, resourceVersion: current.metadata.resourceVersion },
      });
      // A changed CRD re-initialises its storage (429 meanwhile): wait until the old schema serves and refuses sglang again.
      await waitFor('the original CRD served again', async () => {
        await client.get(svcsPath(ns));
        return client.post(svcsPath(ns), inferenceService('again', { runtime: 'sglang' }), { dryRun: 'All' }).then(
          () => false,
          (e: unknown) => (e as { status?: number }).status === 422,
        );
      });
    }
  });

  it('an engine that never becomes ready: the replica is named past its deadline, the other keeps serving', async () => {
    const ns = await newNs('unready');
    await client.post(svcsPath(ns), inferenceService('chat', { progressDeadlineSeconds: 2 }));
    await readyService(ns, 'chat', 2);
    const [sick, healthy] = await replicas(ns);
    const sickName = sick?.metadata?.name ?? '';
    await client.mergePatch(`/api/v1/namespaces/${ns}/pods/${sickName}`, { metadata: { annotations: { [READY_ANNOTATION]: 'false' } } });
    const s = await waitFor(
      'the unready replica named',
      async () => {
        const x = await getSvc(ns, 'chat');
        return condition(x, 'ReplicaFailure')?.status === 'True' ? x : undefined;
      },
      30_000,
    );
    expect(condition(s, 'ReplicaFailure')).toMatchObject({ reason: 'ReplicaNotReady' });
    expect(condition(s, 'ReplicaFailure')?.message).toContain(`${sickName} not ready`);
    expect(condition(s, 'ReplicaFailure')?.message).toContain('spec.progressDeadlineSeconds 2');
    expect(s.status).toMatchObject({ readyReplicas: 1, replicas: 2, phase: 'Degraded' });
    // The other replica serves on; nothing was deleted or replaced.
    const now = await replicas(ns);
    expect(now.map((p) => p.metadata?.name).sort()).toEqual([sickName, healthy?.metadata?.name].sort());
    expect(now.find((p) => p.metadata?.name === healthy?.metadata?.name && isReady(p))).toBeDefined();
    // Recovery clears it.
    await client.mergePatch(`/api/v1/namespaces/${ns}/pods/${sickName}`, { metadata: { annotations: { [READY_ANNOTATION]: 'true' } } });
    const healed = await readyService(ns, 'chat', 2);
    expect(condition(healed, 'ReplicaFailure')).toMatchObject({ status: 'False', reason: 'ReplicasHealthy' });
  });
});
