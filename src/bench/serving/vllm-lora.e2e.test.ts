// Issue 12 item 4 (and issue 17 item 3) live on the vLLM runtime: kube-apiserver + etcd, kube-controller-manager's
// endpointslice controller, the SITS scheduler, the workload controllers with the serving loop, and the fake
// kubelet running the vLLM stand-in (vLLM's protocol over real llama.cpp inference, ADR 0135) for the replicas of
// an InferenceService of the vllm runtime that reserved adapter slots (ADR 0136). An adapter added to the spec is
// loaded into every ready replica through /v1/load_lora_adapter and served by name on each, with no pod restarted
// or replaced; a new replica gets it before it is Ready; an adapter missing on one replica is a condition naming
// both while the others keep serving; removing adapters unloads them, still on the same pods.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../api/wire.ts';
import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { ADAPTERS_LOADED_CONDITION } from '../../controllers/inference-service/engine-state.ts';
import type { InferenceServiceObject } from '../../controllers/inference-service/model.ts';
import { freePorts } from '../../harness/control-plane.ts';
import { createNs, listPods, waitFor } from '../../harness/e2e-kit.ts';
import { devPodAddress } from '../../harness/llm/engine-pods.ts';
import { ensureTinyModel } from '../../harness/llm/tiny-model.ts';
import { adapterDir, MODEL_DIR } from '../../serving/pod-template.ts';
import { endpointsFromSlices, type Endpoint } from './load-generator.ts';

const NS = 'vllm';
const APP = 'tiny';
const PATH = `/apis/ai.sits2026.dev/v1/namespaces/${NS}/inferenceservices/${APP}`;
const MODEL = { uri: 'pvc://models/tiny.gguf', name: APP };

describe('LoRA hot swap on vLLM replicas, live', () => {
  let cluster: DevCluster;
  const logs: string[] = [];
  // Pods started from now on have no /mnt/adapters/ghost (their node lacks that adapter's volume).
  let ghostMapped = true;
  const ghostless = new Set<string>();

  beforeAll(async () => {
    const { model, lora } = ensureTinyModel();
    cluster = await startDevCluster({
      nodes: 1,
      shape: 'dgx-h100',
      log: (m) => logs.push(m),
      engines: {
        paths: { [MODEL_DIR]: model, [adapterDir('sql')]: lora, [adapterDir('ghost')]: lora },
        podPaths: (pod) => {
          if (ghostMapped) return {};
          ghostless.add(pod.metadata?.name ?? '');
          return { [adapterDir('ghost')]: undefined };
        },
        probeEveryMs: 200,
        log: (l) => logs.push(l),
      },
      controllers: {
        log: (m) => logs.push(`controller: ${m}`),
        serving: { intervalMs: 1000, resolveAddress: devPodAddress, retry: { attempts: 2, baseDelayMs: 100, timeoutMs: 10_000 }, adapterBackoffMs: { base: 500, max: 4000 } },
      },
    });
    await cluster.plane.startControllerManager({ controllers: ['endpointslice-controller'] });
    await createNs(cluster.client, NS);
    const [port] = (await freePorts(1)) as [number];
    await cluster.client.post(`/apis/ai.sits2026.dev/v1/namespaces/${NS}/inferenceservices`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'InferenceService',
      metadata: { name: APP },
      spec: {
        runtime: 'vllm',
        model: MODEL,
        gpusPerReplica: 0,
        port,
        // Two adapter slots reserved: the engines launch LoRA-ready, so adapters come and go on the same pods.
        engine: { maxLoras: 2, maxLoraRank: 8 },
        replicas: 2,
        minReplicas: 2,
        maxReplicas: 3,
        progressDeadlineSeconds: 600,
        // The replica count is the test's (through /scale), not the SITS autoscaler's.
        autoscaling: { mode: 'external' },
      },
    });
  }, 180_000);

  afterAll(async () => {
    if (process.env.SITS_VLLM_E2E_LOG !== undefined) (await import('node:fs')).writeFileSync(process.env.SITS_VLLM_E2E_LOG, logs.join('\n'));
    await cluster?.stop();
  });

  const svc = (): Promise<InferenceServiceObject> => cluster.client.get<InferenceServiceObject>(PATH);
  const endpoints = (): Promise<Endpoint[]> => endpointsFromSlices(cluster.client, NS, APP, 'http', devPodAddress);
  const endpointsNamed = (what: string, ok: (e: Endpoint[]) => boolean): Promise<Endpoint[]> =>
    waitFor(what, async () => {
      const e = await endpoints();
      return ok(e) ? e : undefined;
    }, 180_000, 250);
  const live = async (): Promise<V1Pod[]> => (await listPods(cluster.client, NS)).filter((p) => p.metadata?.deletionTimestamp === undefined);
  /** What a client of the Service gets from one replica for `model` (same prompt, same seed). */
  const ask = async (ep: Endpoint, model: string): Promise<{ status: number; text: string; error?: string }> => {
    const r = await fetch(`http://${ep.host}:${ep.port}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model, prompt: 'the adapter changes the model', max_tokens: 12, temperature: 1, seed: 7 }),
      signal: AbortSignal.timeout(60_000),
    });
    const j = (await r.json()) as { choices?: { text: string }[]; error?: { message: string } };
    return { status: r.status, text: j.choices?.[0]?.text ?? '', ...(j.error === undefined ? {} : { error: j.error.message }) };
  };
  const served = async (ep: Endpoint, model: string): Promise<string> => {
    const r = await ask(ep, model);
    expect(r.status, `${ep.name} ${model}: ${r.error ?? ''}`).toBe(200);
    return r.text;
  };
  /** Every replica's status lists exactly `names`, Loaded, and `n` replicas are ready. */
  const allLoaded = (n: number, names: readonly string[]) => async (): Promise<InferenceServiceObject | undefined> => {
    const x = await svc();
    const rs = x.status?.replicaStatuses ?? [];
    const want = names.map((name) => ({ name, state: 'Loaded' }));
    const ok = rs.length === n && x.status?.readyReplicas === n && rs.every((r) => r.ready && JSON.stringify(r.adapters ?? []) === JSON.stringify(want));
    return ok ? x : undefined;
  };
  const snapshot = async (): Promise<Map<string, { uid: string; restarts: number; hash: string }>> =>
    new Map(
      (await live()).map((p) => [
        p.metadata?.name ?? '',
        { uid: p.metadata?.uid ?? '', restarts: (p.status?.containerStatuses ?? []).reduce((a, c) => a + c.restartCount, 0), hash: p.metadata?.labels?.[LABEL.templateHash] ?? '' },
      ]),
    );

  let first = new Map<string, { uid: string; restarts: number; hash: string }>();
  let base = '';
  let adapted = '';

  it('loads an adapter added to the spec into every ready replica through vLLM\'s API, on the same pods', async () => {
    await waitFor('two replicas ready', allLoaded(2, []), 240_000, 250);
    const eps = await endpointsNamed('two endpoints', (e) => e.length === 2);
    first = await snapshot();
    expect(first.size).toBe(2);
    const bases = await Promise.all(eps.map((ep) => served(ep, APP)));
    expect(bases[1]).toBe(bases[0]);
    base = bases[0] ?? '';
    expect((await ask(eps[0] as Endpoint, 'sql')).error).toBe('The model `sql` does not exist.');

    const lines = logs.length;
    await cluster.client.mergePatch(PATH, { spec: { model: { ...MODEL, adapters: [{ name: 'sql', uri: 'pvc://adapters/sql' }] } } });
    const s = await waitFor('the adapter loaded on both replicas', allLoaded(2, ['sql']), 120_000, 250);
    // Through the runtime API, once per replica.
    for (const name of first.keys()) expect(logs.slice(lines).filter((l) => l.includes(`replica ${name}: adapter sql loaded`)), name).toHaveLength(1);
    expect(logs.slice(lines).filter((l) => l.includes("Loaded new LoRA adapter: name 'sql', path '/mnt/adapters/sql'"))).toHaveLength(2);
    expect(s.status?.conditions?.find((c) => c.type === 'AdapterFailure')?.status ?? 'False').toBe('False');
    // No restart, no roll: the same pods (uids), no container restarted, the same template.
    expect(await snapshot()).toEqual(first);

    const now = await endpointsNamed('both replicas as endpoints', (e) => e.length === 2);
    const named = await Promise.all(now.map((ep) => served(ep, 'sql')));
    expect(named[1]).toBe(named[0]);
    expect(named[0]).not.toBe(base);
    expect(await Promise.all(now.map((ep) => served(ep, APP)))).toEqual([base, base]);
    adapted = named[0] ?? '';
    for (const ep of now) {
      const models = ((await (await fetch(`http://${ep.host}:${ep.port}/v1/models`)).json()) as { data: { id: string; parent: string | null; root: string }[] }).data;
      expect(models.map((m) => [m.id, m.parent, m.root])).toEqual([
        [APP, null, MODEL_DIR],
        ['sql', APP, adapterDir('sql')],
      ]);
    }
  });

  it('gives a new replica the adapter before it counts as Ready (the readiness gate)', async () => {
    const versions: V1Pod[] = [];
    const rv = (await cluster.client.get<{ metadata: { resourceVersion: string } }>(`/api/v1/namespaces/${NS}/pods`)).metadata.resourceVersion;
    const watch = await cluster.client.watch<V1Pod>(`/api/v1/namespaces/${NS}/pods`, { resourceVersion: rv }, (e) => {
      if (e.type === 'ADDED' || e.type === 'MODIFIED') versions.push(e.object);
    }, () => undefined);
    ghostMapped = false;
    await cluster.client.mergePatch(`${PATH}/scale`, { spec: { replicas: 3 } });
    await waitFor('three replicas with the adapter', allLoaded(3, ['sql']), 240_000, 250);
    watch.stop();
    const now = await snapshot();
    const added = [...now.keys()].filter((n) => !first.has(n));
    expect(added).toHaveLength(1);
    const name = added[0] as string;
    for (const [n, p] of first) expect(now.get(n), n).toEqual(p);
    expect(now.get(name)?.hash).toBe([...first.values()][0]?.hash);
    const cond = (p: V1Pod, type: string): string | undefined => p.status?.conditions?.find((c) => c.type === type)?.status;
    const seen = versions.filter((p) => p.metadata?.name === name);
    // Its engine answered (containers ready) while the gate still held it out; Ready only with the adapter on.
    const held = seen.filter((p) => cond(p, 'ContainersReady') === 'True' && cond(p, ADAPTERS_LOADED_CONDITION) !== 'True');
    expect(held.length).toBeGreaterThan(0);
    expect(held.every((p) => cond(p, 'Ready') !== 'True')).toBe(true);
    const ready = seen.filter((p) => cond(p, 'Ready') === 'True');
    expect(ready.length).toBeGreaterThan(0);
    expect(ready.every((p) => cond(p, ADAPTERS_LOADED_CONDITION) === 'True')).toBe(true);
    const eps = await endpointsNamed('three endpoints', (e) => e.length === 3);
    const ep = eps.find((e) => e.name === name) as Endpoint;
    expect(await served(ep, 'sql')).toBe(adapted);
    expect(ghostless.has(name)).toBe(true);
  });

  it('reports an adapter whose path does not exist on one replica as a condition naming both; the other replicas keep serving it', async () => {
    const bad = [...ghostless][0] as string;
    await cluster.client.mergePatch(PATH, { spec: { model: { ...MODEL, adapters: [{ name: 'sql', uri: 'pvc://adapters/sql' }, { name: 'ghost', uri: 'pvc://adapters/ghost' }] } } });
    const s = await waitFor('the AdapterFailure condition', async () => {
      const x = await svc();
      const c = x.status?.conditions?.find((k) => k.type === 'AdapterFailure');
      return c?.status === 'True' && x.status?.readyReplicas === 2 ? { x, c } : undefined;
    }, 120_000, 250);
    expect(s.c.message).toContain(`replica ${bad}: adapter ghost:`);
    expect(s.c.message).toContain('No adapter found for /mnt/adapters/ghost');
    expect(s.c.message).toContain('the other replicas keep serving');
    expect(s.c.message?.match(/adapter ghost/g)).toHaveLength(1);
    const rs = s.x.status?.replicaStatuses ?? [];
    expect(rs.find((r) => r.name === bad)?.adapters?.find((a) => a.name === 'ghost')?.state).toBe('Failed');
    for (const n of first.keys()) expect(rs.find((r) => r.name === n)?.adapters).toEqual([{ name: 'sql', state: 'Loaded' }, { name: 'ghost', state: 'Loaded' }]);
    // The failing replica leaves the endpoints (its gate is False); the other two serve both adapters.
    const eps = await endpointsNamed('the two good replicas as the only endpoints', (e) => e.length === 2 && e.every((x) => first.has(x.name)));
    for (const ep of eps) {
      expect(await served(ep, 'ghost')).toBe(adapted); // the same adapter file under a second name
      expect(await served(ep, 'sql')).toBe(adapted);
    }
    for (const [n, p] of first) expect((await snapshot()).get(n), n).toEqual(p);
  });

  it('an adapter no replica can load holds nobody out: the replicas keep serving the base model and the other adapters', async () => {
    // typo's path exists on no replica: without ADR 0125's amendment every gate would go False and no endpoint stay.
    await cluster.client.mergePatch(PATH, { spec: { model: { ...MODEL, adapters: [{ name: 'sql', uri: 'pvc://adapters/sql' }, { name: 'ghost', uri: 'pvc://adapters/ghost' }, { name: 'typo', uri: 'pvc://adapters/typo' }] } } });
    const s = await waitFor('typo failed on every replica', async () => {
      const x = await svc();
      const c = x.status?.conditions?.find((k) => k.type === 'AdapterFailure');
      return c?.status === 'True' && (c.message?.match(/adapter typo/g) ?? []).length === 3 ? { x, c } : undefined;
    }, 120_000, 250);
    expect(s.x.status?.readyReplicas).toBe(2);
    const eps = await endpointsNamed('the two good replicas still endpoints', (e) => e.length === 2 && e.every((x) => first.has(x.name)));
    for (const ep of eps) {
      expect(await served(ep, 'sql')).toBe(adapted);
      expect(await served(ep, APP)).toBe(base);
      expect((await ask(ep, 'typo')).status).toBe(404);
    }
    for (const [n, p] of first) expect((await snapshot()).get(n), n).toEqual(p);
  });

  it('unloads removed adapters on every replica, still on the same pods: a request naming one then fails', async () => {
    const before = await snapshot();
    const lines = logs.length;
    await cluster.client.mergePatch(PATH, { spec: { model: { ...MODEL, adapters: null } } });
    const s = await waitFor('no adapters, three ready replicas', allLoaded(3, []), 120_000, 250);
    expect(s.status?.conditions?.find((c) => c.type === 'AdapterFailure')?.status ?? 'False').toBe('False');
    for (const n of first.keys()) {
      expect(logs.slice(lines).some((l) => l.includes(`replica ${n}: adapter sql unloaded`)), n).toBe(true);
      expect(logs.slice(lines).some((l) => l.includes(`replica ${n}: adapter ghost unloaded`)), n).toBe(true);
    }
    const eps = await endpointsNamed('three endpoints again', (e) => e.length === 3);
    for (const ep of eps) {
      const r = await ask(ep, 'sql');
      expect(r.status, ep.name).toBe(404);
      expect(r.error).toBe('The model `sql` does not exist.');
      expect(await served(ep, APP)).toBe(base);
    }
    expect(await snapshot()).toEqual(before);
    for (const [n, p] of first) expect(before.get(n), n).toEqual(p);
    for (const p of before.values()) expect(p.restarts).toBe(0);
  });
});
