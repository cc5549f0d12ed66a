// Issue 12, items 3, 4 and 6 live: kube-apiserver + etcd, kube-controller-manager's endpointslice controller, the
// SITS scheduler, the workload controllers with the serving loop, and the fake kubelet running the llama-server
// stand-in (llama.cpp through node-llama-cpp, a tiny generated model and LoRA adapter) for the replicas of an
// InferenceService of the llamacpp runtime. A compressed Azure trace burst queues on one replica: the SITS
// autoscaler scales out through /scale on the engines' requests_deferred, then back in once the load is gone.
// With the service handed to an external autoscaler SITS writes nothing; an adapter added to the spec is switched
// on in every new replica before it counts as ready, and requests naming it get the adapter's output on each.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { freePorts } from '../../harness/control-plane.ts';
import { createNs, listEvents, listPods, waitFor } from '../../harness/e2e-kit.ts';
import { devPodAddress } from '../../harness/llm/engine-pods.ts';
import { ensureTinyModel } from '../../harness/llm/tiny-model.ts';
import { DEFAULT_SERVING_TRACE } from './run.ts';
import { endpointsFromSlices, planLoad, runLoad, sendCompletion, type Endpoint } from './load-generator.ts';
import { adapterDir, MODEL_DIR } from '../../serving/pod-template.ts';
import { parseAzureTrace } from '../../serving/sim/trace.ts';
import type { InferenceServiceObject } from '../../controllers/inference-service/model.ts';
import { ADAPTERS_LOADED_CONDITION, ENGINE_STATE_ANNOTATION } from '../../controllers/inference-service/engine-state.ts';
import { requestActivation, type ServingLoop } from '../../live/serving/serving-loop.ts';
import type { V1Pod } from '@kubernetes/client-node';

const NS = 'serve';
const APP = 'tiny';
const IDLE_TO_ZERO_SEC = 4;
const PATH = `/apis/ai.sits2026.dev/v1/namespaces/${NS}/inferenceservices/${APP}`;

const loopOf = (c: DevCluster): ServingLoop => {
  const loop = c.controllers?.serving;
  if (loop === undefined) throw new Error('the dev cluster runs no serving loop');
  return loop;
};

describe('the serving loop on real engines', () => {
  let cluster: DevCluster;
  let port = 0;
  const logs: string[] = [];
  let adapterPods = new Set<string>();
  let base0 = '';

  beforeAll(async () => {
    const { model, lora } = ensureTinyModel();
    cluster = await startDevCluster({
      nodes: 1,
      shape: 'dgx-h100',
      log: (m) => logs.push(m),
      engines: { paths: { [MODEL_DIR]: model, [adapterDir('sql')]: lora }, probeEveryMs: 200, log: (l) => logs.push(l) },
      controllers: {
        log: (m) => logs.push(`controller: ${m}`),
        // Short windows for the test only: a burst of seconds, scale-in seconds after it (history 4 s, then the
        // spec's 6 s stabilisation; a panic holds 10 × panicWindowSec = 5 s), to zero after 4 idle seconds.
        serving: {
          intervalMs: 500,
          resolveAddress: devPodAddress,
          retry: { attempts: 3, baseDelayMs: 100, timeoutMs: 10_000 },
          adapterBackoffMs: { base: 500, max: 4000 },
          // The calibrated threshold stays above what one slot of the tiny model serves (a few hundred tokens/s), so
          // only a queue (requests_deferred, drained within 0.5 s) can ask for a second replica.
          // idleToZeroSec: only the minReplicas-0 service of the last test scales to zero.
          policy: { historyWindowSec: 4, smoothingSec: 1, panicWindowSec: 0.5, calibrationSec: 5, minThreshold: 2000, drainSec: 0.5, scaleDownStepSec: 1, idleToZeroSec: IDLE_TO_ZERO_SEC },
        },
      },
    });
    // The endpointslice controller starts while the service's first replica does (nothing needs its slices before).
    const kcm = cluster.plane.startControllerManager({ controllers: ['endpointslice-controller'] });
    kcm.catch(() => undefined); // awaited below; not an unhandled rejection if the service cannot be created
    await createNs(cluster.client, NS);
    [port] = (await freePorts(1)) as [number];
    await cluster.client.post(`/apis/ai.sits2026.dev/v1/namespaces/${NS}/inferenceservices`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'InferenceService',
      metadata: { name: APP },
      spec: {
        runtime: 'llamacpp',
        model: { uri: 'pvc://models/tiny.gguf', name: APP },
        gpusPerReplica: 0,
        port,
        // One slot per replica, so that a burst queues (llamacpp:requests_deferred).
        container: { args: ['--parallel', '1'] },
        replicas: 1,
        minReplicas: 1,
        maxReplicas: 3,
        progressDeadlineSeconds: 600,
        autoscaling: { tokensPerSecondPerReplica: 3000, scaleDownStabilizationSeconds: 6 },
      },
    });
    await kcm;
  }, 180_000);

  afterAll(async () => {
    if (process.env.SITS_SERVING_E2E_LOG !== undefined) (await import('node:fs')).writeFileSync(process.env.SITS_SERVING_E2E_LOG, logs.join('\n'));
    await cluster?.stop();
  });

  // Whole passes of the serving loop, run now (the loop's own tick) rather than waited for on its timer.
  const passes = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) await loopOf(cluster).tick();
  };
  const svc = (): Promise<InferenceServiceObject> => cluster.client.get<InferenceServiceObject>(PATH);
  const endpoints = (): Promise<Endpoint[]> => endpointsFromSlices(cluster.client, NS, APP, 'http', devPodAddress);
  const readyEndpoints = (n: number): Promise<Endpoint[]> =>
    waitFor(`${n} ready endpoints`, async () => {
      const e = await endpoints();
      return e.length === n ? e : undefined;
    }, 180_000, 250);

  it('scales out on real queueing and back in after the load', async () => {
    await waitFor('one replica ready', async () => ((await svc()).status?.readyReplicas === 1 ? true : undefined), 180_000, 250);
    await readyEndpoints(1);
    expect((await svc()).spec.replicas).toBe(1);

    const trace = parseAzureTrace(readFileSync(DEFAULT_SERVING_TRACE, 'utf8'), DEFAULT_SERVING_TRACE);
    // A burst that queues for seconds on any machine: the tiny model generates ~1,700 tokens/s on an idle core, so
    // 20 requests in 0.5 s with ~4,600 output tokens in all (the trace's shape, scaled) keep one slot busy ~2.5 s
    // idle and far longer under load; four or more wait (a risk to the SLO) for ~2 s of it, four passes of the loop.
    // ignore_eos: each request generates exactly its planned tokens, whatever the model samples, so the work does
    // not depend on the prompts.
    const plan = planLoad(trace, { seed: 7, count: 20, spanMs: 500, maxPromptTokens: 32, maxOutputTokens: 1500 });
    const load = runLoad(plan, endpoints, { model: APP, timeoutMs: 240_000, body: { ignore_eos: true } });
    // Every pass of the loop while waiting (observations() keeps a minute), and how the load went: printed if the
    // scale-out never comes, so a failure on a loaded machine says what the loop saw.
    const passes = new Map<number, string>();
    let loadDone = '';
    void load.then(({ summary }) => (loadDone = JSON.stringify(summary)));
    const out = await waitFor('the SITS autoscaler to scale out', async () => {
      for (const t of cluster.controllers?.serving?.observations(NS, APP) ?? []) passes.set(t.atSec, `${t.answered}/${t.asked} w${t.waiting} d${t.demandTokensPerSec} → ${t.want ?? '-'}`);
      const s = await svc();
      return s.spec.replicas >= 2 ? s.spec.replicas : undefined;
    }, 120_000, 200).catch((e: unknown) => {
      const t0 = Math.min(...passes.keys());
      const series = [...passes].map(([at, v]) => `+${(at - t0).toFixed(1)}s ${v}`).join(', ');
      throw new Error(`${(e as Error).message}\nload: ${loadDone || 'not finished'}\npasses: ${series}\n${logs.filter((l) => !/^\[(kube-|etcd)/.test(l)).slice(-40).join('\n')}`);
    });
    expect(out).toBeGreaterThanOrEqual(2);
    // Watched from the scale-out on, while the load runs: with this test's short windows the service may scale
    // back in a few seconds after the queue drains, so the new replica's readiness is not left to a later poll.
    const secondReady = waitFor('a second replica ready', async () => ((await svc()).status?.readyReplicas ?? 0) >= 2, 180_000, 250);
    secondReady.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
    const { results } = await load;
    expect(results.filter((r) => !r.ok)).toEqual([]);
    const decision = cluster.controllers?.serving?.decisions[0];
    expect(decision).toMatchObject({ service: `${NS}/${APP}`, from: 1, to: 2 });
    // On real queueing: the engines' deferred requests, seen in the observations that led to the decision (the
    // deciding tick itself may fall between two requests on a slow machine).
    expect(decision?.peakWaiting).toBeGreaterThan(0);
    const seen = cluster.controllers?.serving?.observations(NS, APP) ?? [];
    expect(seen.some((t) => t.waiting > 0 && t.answered > 0 && (t.want ?? 0) >= 2)).toBe(true);
    expect(decision?.thresholdTokensPerSec).toBeGreaterThanOrEqual(2000);
    // The calibrated threshold the controller renders into a KEDA ScaledObject in mode keda (ADR 0112).
    expect(cluster.controllers?.serving?.thresholds(NS, APP)?.tokensPerReplica).toBeGreaterThanOrEqual(2000);
    expect(cluster.controllers?.serving?.thresholds(NS, 'no-such-service')).toBeUndefined();
    const events = await listEvents(cluster.client, NS);
    expect(events.some((e) => e.reason === 'ScaledOut' && e.involvedObject?.name === APP && /threshold \d+ tokens\/s per replica/.test(e.message ?? ''))).toBe(true);
    await secondReady;

    await waitFor('the SITS autoscaler to scale back in', async () => ((await svc()).spec.replicas === 1 ? true : undefined), 180_000, 500);
    await waitFor('one replica left', async () => (await svc()).status?.replicas === 1, 120_000, 250);
    expect((await listEvents(cluster.client, NS)).some((e) => e.reason === 'ScaledIn')).toBe(true);
  });

  it('writes nothing once an external autoscaler owns the replica count', async () => {
    await cluster.client.mergePatch(PATH, { spec: { autoscaling: { mode: 'external' } } });
    await cluster.client.mergePatch(`${PATH}/scale`, { spec: { replicas: 2 } });
    await waitFor('two replicas ready', async () => (await svc()).status?.readyReplicas === 2, 180_000, 250);
    const before = cluster.controllers?.serving?.decisions.length;
    // Several whole passes of the loop with no load: in mode sits each would scale in at once (its policy already
    // wants one replica), so these are enough to catch a write.
    await passes(3);
    expect((await svc()).spec.replicas).toBe(2);
    expect(cluster.controllers?.serving?.decisions.length).toBe(before);
  });

  it('loads an adapter added to the spec on every replica before it counts as ready; requests naming it get its output', async () => {
    const eps = await readyEndpoints(2);
    const ask = async (ep: Endpoint, lora: unknown[] | undefined): Promise<string> => {
      const r = await sendCompletion(ep, { index: 0, prompt: 'the adapter changes the model', maxTokens: 12 }, { timeoutMs: 60_000, ...(lora === undefined ? {} : { body: { lora } }) });
      expect(r.ok, r.error).toBe(true);
      return r.text;
    };
    const base = await Promise.all(eps.map((ep) => ask(ep, undefined)));
    expect(base[1]).toBe(base[0]);
    const oldPods = new Set(eps.map((e) => e.name));

    // Every version of the pods from here on (a watch misses none): what the readiness gate did to each new replica.
    const versions: V1Pod[] = [];
    const rv = (await cluster.client.get<{ metadata: { resourceVersion: string } }>(`/api/v1/namespaces/${NS}/pods`)).metadata.resourceVersion;
    let watchEnded: string | undefined;
    const watch = await cluster.client.watch<V1Pod>(`/api/v1/namespaces/${NS}/pods`, { resourceVersion: rv }, (e) => {
      if (e.type === 'ADDED' || e.type === 'MODIFIED') versions.push(e.object);
    }, (err) => (watchEnded = err?.message ?? 'closed'));
    await cluster.client.mergePatch(PATH, { spec: { model: { uri: 'pvc://models/tiny.gguf', name: APP, adapters: [{ name: 'sql', uri: 'pvc://adapters/sql.gguf' }] } } });
    // llama.cpp takes adapters at launch: the template rolls (surge 1, never below two ready) and each new replica
    // serves only once the loop has switched the adapter on.
    const early: string[] = []; // a new replica reported ready, or an endpoint, before its adapter was on (sampled)
    const s = await waitFor('every replica new, with the adapter loaded', async () => {
      // The EndpointSlices first, then the pods: a pod's adapter state only moves forward during the roll, so an
      // endpoint whose pod is read as not serving was not serving when it was an endpoint either.
      const eps = await endpoints();
      const pods = new Map((await listPods(cluster.client, NS)).map((p) => [p.metadata?.name ?? '', p]));
      for (const ep of eps.filter((e) => !oldPods.has(e.name))) {
        const p = pods.get(ep.name);
        const st = JSON.parse(p?.metadata?.annotations?.[ENGINE_STATE_ANNOTATION] ?? '{}') as { serving?: boolean };
        if (p !== undefined && st.serving !== true) early.push(`endpoint ${ep.name}: ${p.metadata?.annotations?.[ENGINE_STATE_ANNOTATION] ?? 'no engine state'}`);
      }
      const x = await svc();
      const rs = x.status?.replicaStatuses ?? [];
      for (const r of rs) if (!oldPods.has(r.name) && r.ready && r.adapters?.[0]?.state !== 'Loaded') early.push(`${r.name}: ${JSON.stringify(r.adapters)}`);
      return rs.length === 2 && rs.every((r) => !oldPods.has(r.name) && r.ready && r.adapters?.[0]?.state === 'Loaded') && x.status?.readyReplicas === 2 ? x : undefined;
    }, 300_000, 250);
    watch.stop();
    expect(watchEnded).toBeUndefined();
    const cond = (p: V1Pod, type: string): string | undefined => p.status?.conditions?.find((c) => c.type === type)?.status;
    for (const r of s.status?.replicaStatuses ?? []) {
      const seen = versions.filter((p) => p.metadata?.name === r.name);
      // The pod declares the gate; its engine answered (containers ready) while the gate still held it unready;
      // it was Ready only with the adapter on (the loop's annotation and condition).
      expect(seen.at(-1)?.spec?.readinessGates).toEqual([{ conditionType: ADAPTERS_LOADED_CONDITION }]);
      const held = seen.filter((p) => cond(p, 'ContainersReady') === 'True' && cond(p, ADAPTERS_LOADED_CONDITION) !== 'True');
      expect(held.length, r.name).toBeGreaterThan(0);
      expect(held.filter((p) => p.status?.conditions?.find((c) => c.type === 'Ready')?.reason !== 'ReadinessGatesNotReady').map((p) => JSON.stringify(p.status?.conditions)), r.name).toEqual([]);
      const ready = seen.filter((p) => cond(p, 'Ready') === 'True');
      expect(ready.length, r.name).toBeGreaterThan(0);
      expect(ready.filter((p) => cond(p, ADAPTERS_LOADED_CONDITION) !== 'True' || !(p.metadata?.annotations?.[ENGINE_STATE_ANNOTATION] ?? '').includes('"serving":true')).map((p) => p.metadata?.resourceVersion)).toEqual([]);
    }
    expect(early).toEqual([]);
    expect(s.status?.conditions?.find((c) => c.type === 'AdapterFailure')?.status ?? 'False').toBe('False');
    expect(s.status?.replicaStatuses?.map((r) => r.adapters)).toEqual([[{ name: 'sql', state: 'Loaded' }], [{ name: 'sql', state: 'Loaded' }]]);
    for (const p of (await listPods(cluster.client, NS)).filter((x) => x.metadata?.deletionTimestamp === undefined)) {
      expect(JSON.parse(p.metadata?.annotations?.[ENGINE_STATE_ANNOTATION] ?? '{}')).toEqual({ serving: true, adapters: [{ name: 'sql', state: 'Loaded' }] });
    }
    const now = await waitFor('the new replicas as endpoints', async () => {
      const e = await endpoints();
      return e.length === 2 && e.every((x) => !oldPods.has(x.name)) ? e : undefined;
    }, 120_000, 250);
    const named = await Promise.all(now.map((ep) => ask(ep, [{ id: 0, scale: 1 }])));
    const without = await Promise.all(now.map((ep) => ask(ep, [])));
    expect(named[1]).toBe(named[0]);
    expect(named[0]).not.toBe(base[0]);
    expect(without).toEqual(base); // the same weights underneath: the difference is the adapter
    // The adapter is on by default too (switched on by the loop, not per request).
    expect(await Promise.all(now.map((ep) => ask(ep, undefined)))).toEqual(named);
    adapterPods = new Set(now.map((e) => e.name));
    base0 = base[0] ?? '';
  });

  it('switches an adapter removed from the spec off on the running replicas at once, then rolls them', async () => {
    const eps = await readyEndpoints(2);
    const lines = logs.length;
    await cluster.client.mergePatch(PATH, { spec: { model: { uri: 'pvc://models/tiny.gguf', name: APP, adapters: null } } });
    // The running replicas (launched with --lora) have it switched off through the engine's API, no restart:
    // every replica answers with the base weights while the new template rolls.
    await waitFor('the adapter unloaded on both replicas', async () => eps.every((ep) => logs.slice(lines).some((l) => l.includes(`replica ${ep.name}: adapter sql unloaded`))), 60_000, 250);
    const s = await waitFor('every replica new, without adapters', async () => {
      const x = await svc();
      const rs = x.status?.replicaStatuses ?? [];
      return rs.length === 2 && rs.every((r) => !adapterPods.has(r.name) && r.ready && r.adapters === undefined) && x.status?.readyReplicas === 2 ? x : undefined;
    }, 300_000, 250);
    expect(s.spec.model.adapters).toBeUndefined();
    const now = await waitFor('the new replicas as endpoints', async () => {
      const e = await endpoints();
      return e.length === 2 && e.every((x) => !adapterPods.has(x.name)) ? e : undefined;
    }, 120_000, 250);
    for (const ep of now) {
      const r = await sendCompletion(ep, { index: 0, prompt: 'the adapter changes the model', maxTokens: 12 }, { timeoutMs: 60_000 });
      expect(r.text).toBe(base0);
    }
  });

  it('scales a minReplicas-0 service to zero after a whole idle period, and back to one ready replica on activation', async () => {
    // Fewer engines on the machine: the first service goes to one replica (its autoscaler is external now).
    await cluster.client.mergePatch(`${PATH}/scale`, { spec: { replicas: 1 } });
    const ZERO = 'zero';
    const zpath = `/apis/ai.sits2026.dev/v1/namespaces/${NS}/inferenceservices/${ZERO}`;
    const [zport] = (await freePorts(1)) as [number];
    await cluster.client.post(`/apis/ai.sits2026.dev/v1/namespaces/${NS}/inferenceservices`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'InferenceService',
      metadata: { name: ZERO },
      spec: {
        runtime: 'llamacpp',
        model: { uri: 'pvc://models/tiny.gguf', name: ZERO },
        gpusPerReplica: 0,
        port: zport,
        replicas: 1,
        minReplicas: 0,
        maxReplicas: 1,
        progressDeadlineSeconds: 600,
        autoscaling: { tokensPerSecondPerReplica: 3000, scaleDownStabilizationSeconds: 1 },
      },
    });
    const zsvc = (): Promise<InferenceServiceObject> => cluster.client.get<InferenceServiceObject>(zpath);
    const zeps = (): Promise<Endpoint[]> => endpointsFromSlices(cluster.client, NS, ZERO, 'http', devPodAddress);
    await waitFor('the minReplicas-0 service ready', async () => ((await zsvc()).status?.readyReplicas === 1 ? true : undefined), 180_000, 250);
    // Idle (no request at all): to zero, but only after the whole idle period the loop observed, counted from its
    // first pass over the serving replica (when its policy starts the clock) to the pass that wanted zero.
    await waitFor('scaled to zero', async () => ((await zsvc()).spec.replicas === 0 ? true : undefined), 180_000, 250);
    const zticks = loopOf(cluster).observations(NS, ZERO);
    const firstServed = zticks.find((t) => t.answered > 0);
    const firstZero = zticks.find((t) => t.want === 0);
    expect(firstServed).toBeDefined();
    expect(firstZero).toBeDefined();
    expect((firstZero?.atSec ?? 0) - (firstServed?.atSec ?? 0)).toBeGreaterThanOrEqual(IDLE_TO_ZERO_SEC);
    expect(zticks.filter((t) => t.want !== undefined && t.atSec < (firstZero?.atSec ?? 0)).map((t) => t.want)).not.toContain(0);
    const zero = await waitFor('no replica left', async () => {
      const x = await zsvc();
      return x.status?.replicas === 0 && (await zeps()).length === 0 ? x : undefined;
    }, 120_000, 250);
    expect(zero.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'ScaledToZero' });
    const decisions = cluster.controllers?.serving?.decisions.filter((d) => d.service === `${NS}/${ZERO}`) ?? [];
    expect(decisions.at(-1)).toMatchObject({ from: 1, to: 0 });
    // It stays at zero while nothing asks for it (several whole passes of the loop).
    const atZeroSince = Date.now() / 1000;
    await passes(3);
    expect((await zsvc()).spec.replicas).toBe(0);
    const atZero = loopOf(cluster).observations(NS, ZERO).filter((t) => t.atSec >= atZeroSince);
    expect(atZero.length).toBeGreaterThanOrEqual(3);
    expect(atZero.map((t) => t.want)).toEqual(atZero.map(() => 0));

    // A request arrives and no endpoint exists: the router holds it and stamps the activation (again while it
    // waits, as it would for every request it holds), then sends it once an endpoint is there.
    const ep = await waitFor('an endpoint after activation', async () => {
      const e = await zeps();
      if (e.length > 0) return e[0];
      await requestActivation(cluster.client, NS, ZERO);
      return undefined;
    }, 240_000, 500);
    const r = await sendCompletion(ep, { index: 0, prompt: 'hello from zero', maxTokens: 8 }, { timeoutMs: 60_000 });
    expect(r.ok, r.error).toBe(true);
    expect(r.text.length).toBeGreaterThan(0);
    // The endpoint can appear before the controller writes the service's status: wait for that write too.
    const up = await waitFor('status to count the ready replica', async () => {
      const x = await zsvc();
      return x.status?.readyReplicas === 1 ? x : undefined;
    }, 60_000, 250);
    expect(up.spec.replicas).toBe(1);
    expect(up.status?.readyReplicas).toBe(1);
    expect(cluster.controllers?.serving?.decisions.filter((d) => d.service === `${NS}/${ZERO}`).at(-1)).toMatchObject({ from: 0, to: 1 });
    const events = await listEvents(cluster.client, NS);
    expect(events.some((e) => e.involvedObject?.name === ZERO && e.reason === 'ScaledOut' && /replicas 0 → 1 \(activated by a request held at /.test(e.message ?? ''))).toBe(true);
    // An unreadable activation is reported, not a crash.
    await cluster.client.mergePatch(zpath, { metadata: { annotations: { 'ai.sits2026.dev/activate': 'soon' } } });
    await waitFor('the bad activation reported', async () => (await listEvents(cluster.client, NS)).some((e) => e.involvedObject?.name === ZERO && e.reason === 'InvalidActivation' && /ai\.sits2026\.dev\/activate.*not an RFC 3339 time/.test(e.message ?? '')), 60_000, 250);
  });
});
