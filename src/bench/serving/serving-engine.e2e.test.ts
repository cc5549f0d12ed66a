// A real engine behind a real Service (issue 12, item 6): kube-apiserver + etcd, kube-controller-manager's
// endpointslice controller, and the fake kubelet running the llama-server stand-in (llama.cpp through
// node-llama-cpp, a tiny generated model and LoRA adapter) for two pods of the llamacpp runtime, rendered by the
// serving layer's pod template. The pods are Ready only once the engine has loaded; the EndpointSlices list both;
// the load generator replays the Azure trace against them; a burst queues; a LoRA adapter switched on through the
// EngineClient changes the output on both; deleting a pod stops its engine.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateResource } from '../../api/validate.ts';
import { API_GROUP_VERSION } from '../../api/wire.ts';
import { DEFAULT_SERVING_TRACE } from './run.ts';
import { endpointsFromSlices, planLoad, runLoad, sendCompletion, type Endpoint } from './load-generator.ts';
import { freePorts, startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createNs, waitFor } from '../../harness/e2e-kit.ts';
import { FakeKubelet } from '../../harness/fake-kubelet.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { devPodAddress } from '../../harness/llm/engine-pods.ts';
import { ensureTinyModel } from '../../harness/llm/tiny-model.ts';
import { KubeClient } from '../../kube/client/client.ts';
import { adapterDir, MODEL_DIR, renderReplica } from '../../serving/pod-template.ts';
import { LLAMACPP } from '../../serving/runtimes/llamacpp.ts';
import { parseAzureTrace } from '../../serving/sim/trace.ts';
import { devNodes } from '../../app/dev-cluster.ts';
import { EngineClient } from '../../live/serving/engine-client.ts';

const NS = 'serving';
const APP = 'tiny';

describe('the llamacpp runtime on the dev kubelet, with a real engine', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  const dir = mkdtempSync(join(tmpdir(), 'sits-engine-e2e-'));
  const hold = join(dir, 'hold-loading');
  let port = 0;
  const logs: string[] = [];

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await plane.startControllerManager({ controllers: ['endpointslice-controller'] });
    const nodes = devNodes(1, 'dgx-h100');
    await createFakeGpuNodes(plane.kubeConfig(), nodes);
    const { model, lora } = ensureTinyModel();
    writeFileSync(hold, '');
    kubelet = new FakeKubelet(client, () => true, (l) => logs.push(l), { engines: { paths: { [MODEL_DIR]: model, [adapterDir('sql')]: lora }, probeEveryMs: 100, holdWhileExists: hold } });
    await kubelet.start();
    await createNs(client, NS);
    [port] = (await freePorts(1)) as [number];

    const v = validateResource('InferenceService', {
      apiVersion: API_GROUP_VERSION,
      kind: 'InferenceService',
      metadata: { name: APP, namespace: NS },
      // One slot per replica, so that a burst queues; the spec's args come after the runtime's.
      spec: { runtime: 'llamacpp', model: { uri: 'pvc://models/tiny.gguf', name: APP, adapters: [{ name: 'sql', uri: 'pvc://adapters/sql.gguf' }] }, gpusPerReplica: 0, port, container: { args: ['--parallel', '1'] } },
    });
    if (!v.ok) throw new Error(JSON.stringify(v.errors));
    const r = renderReplica(v.value.spec);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    await client.post(`/api/v1/namespaces/${NS}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: APP },
      spec: { selector: { app: APP }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    });
    for (const name of [`${APP}-0`, `${APP}-1`]) {
      await client.post(`/api/v1/namespaces/${NS}/pods`, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, labels: { app: APP } },
        spec: { nodeName: nodes[0]?.name, containers: [r.template.container], terminationGracePeriodSeconds: 5 },
      });
    }
  });

  afterAll(async () => {
    // The engines' and the kubelet's lines, for a failure's post-mortem.
    if (process.env.SITS_ENGINE_E2E_LOG !== undefined) writeFileSync(process.env.SITS_ENGINE_E2E_LOG, logs.join('\n'));
    await kubelet?.stopAndWait();
    await plane?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const pod = (name: string): Promise<V1Pod> => client.get<V1Pod>(`/api/v1/namespaces/${NS}/pods/${name}`);
  const ready = (p: V1Pod): boolean => p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const endpoints = (): Promise<Endpoint[]> => endpointsFromSlices(client, NS, APP, 'http', devPodAddress);
  const bothEndpoints = async (): Promise<Endpoint[]> => {
    const eps = await endpoints();
    expect(eps.map((e) => e.name)).toEqual([`${APP}-0`, `${APP}-1`]);
    return eps;
  };
  const engineOf = (ep: Endpoint): EngineClient => new EngineClient(LLAMACPP, { name: ep.name, host: ep.host, port: ep.port }, { retry: { attempts: 10, baseDelayMs: 100 } });

  it('starts each engine on its own pod IP and keeps the pod unready until the model has loaded', async () => {
    const running = await waitFor('both pods running with a pod IP', async () => {
      const ps = await Promise.all([pod(`${APP}-0`), pod(`${APP}-1`)]);
      return ps.every((p) => p.status?.phase === 'Running' && (p.status.podIP ?? '') !== '') ? ps : undefined;
    }, 60_000);
    const podIps = running.map((p) => p.status?.podIP as string);
    expect(new Set(podIps).size).toBe(2);
    // Pod IPs the apiserver accepts in EndpointSlices, each served on its own loopback alias.
    for (const ip of podIps) expect(ip).toMatch(/^100\./);
    const ips = podIps.map(devPodAddress);
    for (const ip of ips) expect(ip).toMatch(/^127\./);
    // The engines listen but are still "loading" (held): /health 503 and the pods not Ready.
    for (const ip of ips) {
      const h = await waitFor(`the engine on ${ip} to listen`, async () => engineOf({ name: ip, host: ip, port }).health().then((x) => (x.status === undefined ? undefined : x)), 60_000);
      expect(h).toEqual({ ready: false, status: 503, error: 'Loading model' });
    }
    await new Promise((r) => setTimeout(r, 500)); // several probe periods
    for (const p of await Promise.all([pod(`${APP}-0`), pod(`${APP}-1`)])) expect(ready(p)).toBe(false);
    rmSync(hold);
    await waitFor('both pods Ready', async () => (await Promise.all([pod(`${APP}-0`), pod(`${APP}-1`)])).every(ready), 60_000);
    for (const ip of ips) expect(await engineOf({ name: ip, host: ip, port }).health()).toEqual({ ready: true, status: 200 });
    expect(existsSync(hold)).toBe(false);
  });

  it("lists both replicas in the Service's EndpointSlices (kube-controller-manager)", async () => {
    const eps = await waitFor('two ready endpoints', async () => {
      const e = await endpoints();
      return e.length === 2 ? e : undefined;
    }, 60_000);
    expect(eps.map((e) => e.name)).toEqual([`${APP}-0`, `${APP}-1`]);
    expect(eps.every((e) => e.port === port)).toBe(true);
  });

  it('serves the replayed Azure trace from both replicas, round-robin', async () => {
    await bothEndpoints();
    const trace = parseAzureTrace(readFileSync(DEFAULT_SERVING_TRACE, 'utf8'), DEFAULT_SERVING_TRACE);
    const plan = planLoad(trace, { seed: 12, count: 10, spanMs: 1000, maxPromptTokens: 48, maxOutputTokens: 24 });
    expect(planLoad(trace, { seed: 12, count: 10, spanMs: 1000, maxPromptTokens: 48, maxOutputTokens: 24 })).toEqual(plan);
    const { results, summary } = await runLoad(plan, endpoints, { model: APP, timeoutMs: 120_000 });
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(summary.byEndpoint).toEqual({ [`${APP}-0`]: 5, [`${APP}-1`]: 5 });
    for (const r of results) {
      const p = plan[r.index] as (typeof plan)[number];
      expect(r.completionTokens).toBe(p.maxTokens);
      expect(r.promptTokens).toBeGreaterThanOrEqual(p.promptTokens);
      expect(r.text.length).toBeGreaterThan(0);
      expect(r.ttftMs).toBeGreaterThan(0);
      expect(r.latencyMs).toBeGreaterThanOrEqual(r.ttftMs as number);
    }
  });

  it('queues a burst: requests_deferred in /metrics on every replica', async () => {
    const eps = await bothEndpoints();
    const burst = eps.flatMap((ep) => [0, 1, 2, 3].map((i) => sendCompletion(ep, { index: i, prompt: 'the model server queue', maxTokens: 300 }, { timeoutMs: 120_000 })));
    for (const ep of eps) {
      const s = await waitFor(`queueing on ${ep.name}`, async () => {
        const x = await engineOf(ep).scrape();
        return (x.waiting ?? 0) >= 1 ? x : undefined;
      }, 60_000, 5);
      expect(s.running).toBe(1);
    }
    const done = await Promise.all(burst);
    expect(done.every((r) => r.ok && r.completionTokens === 300)).toBe(true);
    for (const ep of eps) expect(await engineOf(ep).scrape()).toMatchObject({ running: 0, waiting: 0 });
  });

  it('switches a LoRA adapter on through the EngineClient on both replicas, and it changes the output', async () => {
    const eps = await bothEndpoints();
    const ask = async (ep: Endpoint): Promise<string> => {
      const r = await sendCompletion(ep, { index: 0, prompt: 'the adapter changes the model', maxTokens: 12 }, { timeoutMs: 60_000 });
      expect(r.ok).toBe(true);
      return r.text;
    };
    const before = await Promise.all(eps.map(ask));
    expect(before[1]).toBe(before[0]); // the same weights on both replicas
    for (const ep of eps) {
      expect((await engineOf(ep).listAdapters()).map((a) => [a.name, a.active])).toEqual([['sql', false]]);
      await engineOf(ep).loadAdapter('sql', adapterDir('sql'));
      expect((await engineOf(ep).listAdapters()).map((a) => [a.name, a.active])).toEqual([['sql', true]]);
    }
    const after = await Promise.all(eps.map(ask));
    expect(after[0]).not.toBe(before[0]);
    expect(after[1]).toBe(after[0]);
  });

  it("stops a deleted pod's engine and drops it from the EndpointSlices", async () => {
    await bothEndpoints();
    const p = await pod(`${APP}-1`);
    const ip = devPodAddress(p.status?.podIP as string);
    const uid = p.metadata?.uid as string;
    expect(kubelet.engines?.running(uid)).toBe(true);
    await client.request('DELETE', `/api/v1/namespaces/${NS}/pods/${APP}-1`);
    await waitFor('the pod gone', async () => pod(`${APP}-1`).then(() => false, () => true), 60_000);
    expect(kubelet.engines?.running(uid)).toBe(false);
    expect(await engineOf({ name: `${APP}-1`, host: ip, port }).health()).toEqual({ ready: false, error: 'ECONNREFUSED' });
    await waitFor('one endpoint left', async () => {
      const e = await endpoints();
      return e.length === 1 && e[0]?.name === `${APP}-0`;
    }, 60_000);
  });
});
