// Issue 17 item 3 live: fine-tune → export → serve into an InferenceService the user already runs, without a
// restart. kube-apiserver + etcd, kube-controller-manager's endpointslice controller, the SITS scheduler, the
// workload controllers with the serving loop, and the fake kubelet running the vLLM stand-in (vLLM's OpenAI server
// and runtime LoRA API on real llama.cpp inference of a tiny generated model) for the user's 2 replicas. The
// pipeline's TrainingJob and export stages are dev pods the fake kubelet ends with exit code 0 (the export one
// reporting the adapter's URI); its adapter stage server-side-applies the adapter into the user's service; the
// serving loop loads it on both replicas through /v1/load_lora_adapter; requests naming it are served by each
// replica through the Service's endpoints with another text than the base model's for the same seed; the pods are
// the same pods (UIDs, restartCount 0). Dev-cluster mapping: the engine reads the adapter the serving loop names,
// /mnt/adapters/<name>, from the file `paths` maps it to (the tiny LoRA) — the URI is recorded, not downloaded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';

import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { freePorts } from '../../harness/control-plane.ts';
import { createNs, listPods, waitFor } from '../../harness/e2e-kit.ts';
import { EXIT_CODE_ANNOTATION, TERMINATION_MESSAGE_ANNOTATION } from '../../harness/fake-kubelet.ts';
import { devPodAddress } from '../../harness/llm/engine-pods.ts';
import { ensureTinyModel } from '../../harness/llm/tiny-model.ts';
import { adapterDir, MODEL_DIR } from '../../serving/pod-template.ts';
import type { InferenceServiceObject } from '../../controllers/inference-service/model.ts';
import type { DataPipelineObject } from '../../controllers/data-pipeline/model.ts';
import { endpointsFromSlices, type Endpoint } from './load-generator.ts';

const NS = 'ft-serve';
const APP = 'tiny';
const API = `/apis/ai.sits2026.dev/v1/namespaces/${NS}`;
const PIPELINE = 'lora';
const ADAPTER = `support-${PIPELINE}`;
const PROMPT = 'the cat sat on the';

describe('fine-tune → export → serve into a running vLLM InferenceService', () => {
  let cluster: DevCluster;
  const logs: string[] = [];

  beforeAll(async () => {
    const { model, lora } = ensureTinyModel();
    cluster = await startDevCluster({
      nodes: 2,
      shape: 'dgx-h100',
      log: (m) => logs.push(m),
      engines: { paths: { [MODEL_DIR]: model, [adapterDir(ADAPTER)]: lora }, probeEveryMs: 200, log: (l) => logs.push(l) },
      controllers: {
        log: (m) => logs.push(`controller: ${m}`),
        serving: { intervalMs: 1000, resolveAddress: devPodAddress, retry: { attempts: 3, baseDelayMs: 100, timeoutMs: 10_000 }, adapterBackoffMs: { base: 500, max: 4000 } },
      },
    });
    await cluster.plane.startControllerManager({ controllers: ['endpointslice-controller'] });
    await createNs(cluster.client, NS);
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  const tail = (): string => logs.filter((l) => !/^\[(kube-|etcd)/.test(l)).slice(-40).join('\n');
  const svc = (): Promise<InferenceServiceObject> => cluster.client.get<InferenceServiceObject>(`${API}/inferenceservices/${APP}`);
  const replicaPods = async (): Promise<V1Pod[]> => (await listPods(cluster.client, NS)).filter((p) => p.metadata?.labels?.['ai.sits2026.dev/inference-service'] === APP);
  const endpoints = (): Promise<Endpoint[]> => endpointsFromSlices(cluster.client, NS, APP, 'http', devPodAddress);

  /** One completion, not streamed, on one replica. */
  async function complete(ep: Endpoint, model: string): Promise<string> {
    const res = await fetch(`http://${ep.host}:${ep.port}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model, prompt: PROMPT, max_tokens: 24, temperature: 0.8, seed: 42 }),
      signal: AbortSignal.timeout(120_000),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${ep.name} ${model}: ${res.status} ${text}`);
    const body = JSON.parse(text) as { model: string; choices: { text: string }[] };
    expect(body.model).toBe(model);
    return body.choices[0]?.text ?? '';
  }

  it('loads the pipeline\'s adapter on both replicas and serves requests naming it, with no restart', async () => {
    const [port] = (await freePorts(1)) as [number];
    // The user's service: vLLM, 2 replicas, adapter slots reserved (engine.maxLoras) so it launches LoRA-ready.
    await cluster.client.post(`${API}/inferenceservices`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'InferenceService',
      metadata: { name: APP },
      spec: { runtime: 'vllm', model: { uri: 'pvc://models/tiny.gguf', name: APP }, gpusPerReplica: 0, port, replicas: 2, minReplicas: 2, maxReplicas: 2, engine: { maxLoras: 2 }, progressDeadlineSeconds: 600 },
    });
    const eps = await waitFor('2 ready endpoints', async () => {
      const e = await endpoints();
      return e.length === 2 ? e : undefined;
    }, 240_000, 250).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}\n${tail()}`);
    });
    const before = await replicaPods();
    expect(before).toHaveLength(2);
    const uids = before.map((p) => p.metadata?.uid).sort();
    const base = await Promise.all(eps.map((ep) => complete(ep, APP)));

    await cluster.client.post(`${API}/datapipelines`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'DataPipeline',
      metadata: { name: PIPELINE },
      spec: {
        stages: [
          {
            name: 'finetune',
            workload: {
              kind: 'TrainingJob',
              spec: {
                replicas: 1,
                gpusPerReplica: 1,
                podTemplate: { metadata: { annotations: { [EXIT_CODE_ANNOTATION]: '0' } }, spec: { containers: [{ name: 'trainer', image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'lora.py', '--out=/work/{{pipeline.name}}'] }] } },
              },
            },
          },
          {
            name: 'export',
            dependsOn: ['finetune'],
            podTemplate: {
              metadata: { annotations: { [EXIT_CODE_ANNOTATION]: '0', [TERMINATION_MESSAGE_ANNOTATION]: '{"adapter":"pvc://lora-work/{{pipeline.name}}/adapter.gguf"}' } },
              spec: { containers: [{ name: 'main', image: 'ghcr.io/ggml-org/llama.cpp:full', args: ['--convert-lora', '/work/{{pipeline.name}}'], resources: { requests: { cpu: '100m', memory: '64Mi' } } }] },
            },
            outputs: { parameters: [{ name: 'adapter' }] },
          },
          { name: 'serve', dependsOn: ['export'], adapter: { inferenceService: APP, name: 'support-{{pipeline.name}}', uri: '{{steps.export.outputs.parameters.adapter}}' } },
        ],
      },
    });
    const done = await waitFor('pipeline Succeeded', async () => {
      const p = await cluster.client.get<DataPipelineObject>(`${API}/datapipelines/${PIPELINE}`);
      return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined;
    }, 300_000, 250).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}\n${tail()}`);
    });
    const serve = done.status?.stages?.find((s) => s.name === 'serve');
    expect(done.status?.phase, JSON.stringify(done.status)).toBe('Succeeded');
    expect(serve?.message).toMatch(new RegExp(`^adapter ${ADAPTER} loaded on all 2 ready replicas of InferenceService ${APP} \\(.+, .+\\) without a restart$`));
    const s = await svc();
    expect(s.spec.model.adapters).toEqual([{ name: ADAPTER, uri: `pvc://lora-work/${PIPELINE}/adapter.gguf` }]);
    expect(s.status?.replicaStatuses?.map((r) => r.adapters)).toEqual([[{ name: ADAPTER, state: 'Loaded' }], [{ name: ADAPTER, state: 'Loaded' }]]);
    // The pipeline never owns the user's service.
    expect((s.metadata as { ownerReferences?: unknown[] }).ownerReferences ?? []).toEqual([]);

    // Served through the Service's endpoints, on each replica, naming the adapter; another text than the base's.
    const now = await endpoints();
    expect(now.map((e) => e.name).sort()).toEqual(eps.map((e) => e.name).sort());
    const tuned = await Promise.all(now.map((ep) => complete(ep, ADAPTER)));
    for (const [i, t] of tuned.entries()) {
      expect(t.length).toBeGreaterThan(0);
      expect(t).not.toBe(base[i]);
    }
    // Same pods, never restarted.
    const after = await replicaPods();
    expect(after.map((p) => p.metadata?.uid).sort()).toEqual(uids);
    for (const p of after) for (const c of p.status?.containerStatuses ?? []) expect(c.restartCount).toBe(0);
  });
});
