/**
 * The live serving loop (issue 12, items 3 and 4; ADRs 0110, 0111): every `intervalMs`, for each InferenceService,
 *  - LoRA hot swap: on every ready replica, the adapters of the spec are loaded (switched on) and those no longer
 *    listed unloaded, through the EngineClient (retries with backoff inside one call; a failed adapter is tried
 *    again on later ticks with its own backoff). What was found is written on the pod as the engine-state
 *    annotation; the controller reads it back (annotatedEngine) into per-replica status, readiness and the
 *    AdapterFailure condition. No pod is restarted.
 *  - Token autoscaling: every serving replica's /metrics is scraped, the scrapes become one ServiceObservation
 *    (serving/observe.ts) for the pure SITS policy (serving/autoscale/token.ts), and where `sitsMayScale(spec)`
 *    allows it a new count is written through the /scale subresource, with an event naming the decision.
 * IO only: what to do comes from the pure layers.
 */
import type { InferenceService } from '../../api/schema/inference-service.ts';
import { withDefaults } from '../../api/validate.ts';
import { API_GROUP, API_GROUP_VERSION } from '../../api/wire.ts';
import type { Clock } from '../../core/ports.ts';
import { activationPatch, activationTime, sitsMayScale } from '../../controllers/inference-service/autoscaling.ts';
import {
  adapterGatePatch,
  annotatedEngine,
  encodeEngineState,
  excuseUnloadable,
  hasAdapterGate,
  ENGINE_STATE_ANNOTATION,
  planAdapters,
  readEngineState,
  type EngineStateRecord,
} from '../../controllers/inference-service/engine-state.ts';
import type { AdapterObservation, AutoscalerThresholds, EnginePort } from '../../controllers/inference-service/model.ts';
import { selectorString } from '../../controllers/inference-service/names.ts';
import type { PodObject } from '../../controllers/kube-objects.ts';
import type { KubeClient } from '../../kube/client/client.ts';
import { TokenAutoscaler, TOKEN_AUTOSCALER_DEFAULTS, type TokenAutoscalerConfig } from '../../serving/autoscale/token.ts';
import { observeService, type ReplicaScrape } from '../../serving/observe.ts';
import { adapterDir, renderReplica } from '../../serving/pod-template.ts';
import type { RuntimeDefinition } from '../../serving/runtime.ts';
import { EngineClient, EngineError, type RetryPolicy } from './engine-client.ts';
import { runPeriodically } from '../periodic.ts';

const API = `/apis/${API_GROUP_VERSION}`;

/** The TTFT SLO of a service, in seconds, when its runtime exports TTFT histograms (the spec has no field yet). */
export const TTFT_SLO_ANNOTATION = `${API_GROUP}/ttft-slo-seconds`;

export interface ServingLoopOptions {
  /** Between two passes over the services (default 5000). */
  readonly intervalMs?: number;
  /** The SITS policy's windows and rates (tests shorten them); the spec's bounds and stabilisation win. */
  readonly policy?: Partial<TokenAutoscalerConfig>;
  /** TTFT SLO when the service does not name one (default 2 s). */
  readonly sloTtftSec?: number;
  /** The EngineClient's retries per call. */
  readonly retry?: Partial<RetryPolicy>;
  /** A failed adapter is tried again after base × 2^n ms, at most max (defaults 2 s and 60 s). */
  readonly adapterBackoffMs?: { readonly base: number; readonly max: number };
  /** Pod IP → the address to dial (dev mode: devPodAddress). */
  readonly resolveAddress?: (ip: string) => string;
  readonly clock?: Clock;
  readonly log?: (m: string) => void;
  /** When given, only the leader acts. */
  readonly isLeader?: () => boolean;
}

export interface ScaleDecision {
  readonly service: string;
  readonly from: number;
  readonly to: number;
  /** Token demand the policy saw (tokens/s: served plus the queue drained over drainSec). */
  readonly demandTokensPerSec: number;
  readonly waiting: number;
  /** Most requests seen waiting in one observation over the last minute: the queue a scale-out answered. */
  readonly peakWaiting: number;
  /** The calibrated tokens/s one replica carries. */
  readonly thresholdTokensPerSec: number;
}

/** One autoscaler pass over a service: what the engines said and what the policy wanted. */
export interface ObservedTick {
  readonly atSec: number;
  /** Replicas serving (ready, adapters on) that the loop asked for metrics, and those that answered. */
  readonly asked: number;
  readonly answered: number;
  readonly starting: number;
  readonly waiting: number;
  readonly demandTokensPerSec: number;
  /** Undefined when no replica answered (no decision). */
  readonly want?: number;
}

export interface ServingLoop {
  /** The controller's view of the engines (per-replica adapters, serving). */
  readonly engine: EnginePort;
  /** One pass now (tests, and the loop's own timer). */
  tick(): Promise<void>;
  /** Decisions that changed the replica count, oldest first (the last 100). */
  readonly decisions: readonly ScaleDecision[];
  /**
   * The calibrated threshold of a service the loop observes (also in modes where it never writes replicas): what
   * the controller renders into the KEDA ScaledObject in mode keda (ADR 0112). Undefined before the first scrape.
   */
  thresholds(namespace: string, name: string): AutoscalerThresholds | undefined;
  /** The passes of the last minute over a service, oldest first: "why did it (not) scale". */
  observations(namespace: string, name: string): readonly ObservedTick[];
  stop(): Promise<void>;
}

interface ServiceMemory {
  readonly uid: string;
  /** The spec's bounds the policy was built with (minReplicas 0 enables scale to zero). */
  readonly bounds: string;
  readonly policy: TokenAutoscaler;
  scrapes: ReplicaScrape[];
  /** The passes of the last minute, for the decisions' peakWaiting and observations(). */
  recent: ObservedTick[];
  /** The unreadable activation annotation already reported. */
  badActivation?: string | undefined;
}

type IsvcObject = InferenceService & { metadata: InferenceService['metadata'] & { uid?: string; deletionTimestamp?: string } };

type LivePod = PodObject & { readonly status?: NonNullable<PodObject['status']> & { readonly podIP?: string } };

const condTrue = (p: PodObject, type: string): boolean => p.status?.conditions?.some((c) => c.type === type && c.status === 'True') === true;
/**
 * The engine answers its readiness probe. A pod gated on its adapters is Ready only once the loop has set the gate,
 * so for it the containers' readiness is what says the engine is up; any other pod is judged by Ready, as before.
 */
const engineUp = (p: PodObject): boolean => (hasAdapterGate(p) ? condTrue(p, 'ContainersReady') : condTrue(p, 'Ready'));
const key = (ns: string, name: string): string => `${ns}/${name}`;

/**
 * What a request router does when it holds a request for a service without endpoints (ADR 0126): stamps the
 * service's activate annotation with the request's time; the serving loop then scales it from zero (mode sits).
 * Needs `patch` on inferenceservices.
 */
export async function requestActivation(client: KubeClient, namespace: string, name: string, at: Date = new Date()): Promise<void> {
  await client.mergePatch(`${API}/namespaces/${namespace}/inferenceservices/${name}`, activationPatch(at));
}

/** What the loop's steps share: the client, the options, and the state kept from tick to tick. */
interface LoopState {
  readonly client: KubeClient;
  readonly o: ServingLoopOptions;
  readonly log: (m: string) => void;
  readonly now: Pick<Clock, 'nowMs'>;
  readonly resolve: (ip: string) => string;
  readonly backoff: { readonly base: number; readonly max: number };
  /** ns/service → the adapters its spec asks for. */
  readonly desired: Map<string, readonly string[]>;
  readonly memory: Map<string, ServiceMemory>;
  /** pod uid / adapter → failures so far and when to try again. */
  readonly failures: Map<string, { n: number; nextMs: number; message: string }>;
  readonly decisions: ScaleDecision[];
}

async function postEvent(loop: LoopState, s: IsvcObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
  const ns = s.metadata.namespace ?? 'default';
  const at = new Date(loop.now.nowMs()).toISOString();
  await loop.client
    .post(`/api/v1/namespaces/${ns}/events`, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: `${s.metadata.name ?? ''}.`, namespace: ns },
      involvedObject: {
        apiVersion: API_GROUP_VERSION,
        kind: 'InferenceService',
        name: s.metadata.name,
        namespace: ns,
        ...(s.metadata.uid === undefined ? {} : { uid: s.metadata.uid }),
      },
      reason,
      message: message.slice(0, 1000),
      type,
      source: { component: 'sits-serving' },
      reportingComponent: 'sits-serving',
      reportingInstance: 'sits',
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
    })
    .catch((e: unknown) => loop.log(`serving: event: ${(e as Error).message}`));
}

/** Brings one replica's adapters to the spec; returns what it observed. */
async function syncAdapters(loop: LoopState, pod: PodObject, runtime: RuntimeDefinition, c: EngineClient, want: readonly string[]): Promise<EngineStateRecord> {
  const uid = pod.metadata.uid ?? '';
  const adapters: AdapterObservation[] = [];
  // TGI takes its adapters at launch only (--lora-adapters, rendered from the spec): a Ready engine has them all;
  // a change rolls the replicas. Triton has none (the CRD refuses adapters for it).
  if (runtime.lora.kind === 'launch-only') return { serving: true, adapters: want.map((name) => ({ name, state: 'Loaded' as const })) };
  if (runtime.lora.kind === 'none') return { serving: true, adapters: [] };
  let list;
  try {
    list = await c.listAdapters();
  } catch (e) {
    // The engine does not answer: nothing is known; the replica keeps its last view until it does.
    const prev = readEngineState(pod);
    loop.log(`serving: ${(e as Error).message}`);
    return prev ?? { serving: want.length === 0, adapters: want.map((name) => ({ name, state: 'Loading' as const })) };
  }
  const plan = planAdapters(want, list);
  for (const name of want) {
    if (!plan.load.includes(name)) {
      adapters.push({ name, state: 'Loaded' });
      loop.failures.delete(`${uid}/${name}`);
      continue;
    }
    // llama.cpp applies only adapters given at launch: a replica started before the adapter was added is replaced
    // by the rolling update (the template changed) and keeps serving the base model meanwhile.
    if (runtime.lora.kind === 'launch-scale' && !list.some((a) => a.name === name)) continue;
    const f = loop.failures.get(`${uid}/${name}`);
    if (f !== undefined && loop.now.nowMs() < f.nextMs) {
      adapters.push({ name, state: 'Failed', message: f.message });
      continue;
    }
    try {
      await c.loadAdapter(name, adapterDir(name));
      adapters.push({ name, state: 'Loaded' });
      loop.failures.delete(`${uid}/${name}`);
      loop.log(`serving: replica ${pod.metadata.name ?? ''}: adapter ${name} loaded`);
    } catch (e) {
      const message = e instanceof EngineError ? e.message : String(e);
      const n = (f?.n ?? 0) + 1;
      loop.failures.set(`${uid}/${name}`, { n, nextMs: loop.now.nowMs() + Math.min(loop.backoff.max, loop.backoff.base * 2 ** (n - 1)), message });
      adapters.push({ name, state: 'Failed', message });
      loop.log(`serving: ${message}`);
    }
  }
  for (const name of plan.unload) {
    try {
      await c.unloadAdapter(name, list.find((a) => a.name === name)?.path);
      loop.log(`serving: replica ${pod.metadata.name ?? ''}: adapter ${name} unloaded`);
    } catch (e) {
      loop.log(`serving: ${(e as Error).message}`);
    }
  }
  return { adapters, serving: adapters.every((a) => a.state === 'Loaded') };
}

async function writeState(loop: LoopState, pod: PodObject, rec: EngineStateRecord): Promise<void> {
  const text = encodeEngineState(rec);
  if (pod.metadata.annotations?.[ENGINE_STATE_ANNOTATION] === text) return;
  await loop.client
    .mergePatch(`/api/v1/namespaces/${pod.metadata.namespace ?? 'default'}/pods/${pod.metadata.name ?? ''}`, {
      metadata: { annotations: { [ENGINE_STATE_ANNOTATION]: text } },
    })
    .catch((e: unknown) => loop.log(`serving: annotate ${pod.metadata.name ?? ''}: ${(e as Error).message}`));
}

/** The adapters-loaded readiness gate (ADR 0125), on pods that declare it. */
async function writeGate(loop: LoopState, pod: PodObject, rec: EngineStateRecord): Promise<void> {
  if (!hasAdapterGate(pod)) return;
  const patch = adapterGatePatch(pod, rec, new Date(loop.now.nowMs()).toISOString());
  if (patch === undefined) return;
  await loop.client
    .request('PATCH', `/api/v1/namespaces/${pod.metadata.namespace ?? 'default'}/pods/${pod.metadata.name ?? ''}/status`, {
      contentType: 'application/strategic-merge-patch+json',
      body: patch,
    })
    .catch((e: unknown) => loop.log(`serving: readiness gate ${pod.metadata.name ?? ''}: ${(e as Error).message}`));
}

function policyFor(loop: LoopState, s: IsvcObject): TokenAutoscaler {
  const k = key(s.metadata.namespace ?? 'default', s.metadata.name ?? '');
  const m = loop.memory.get(k);
  const bounds = JSON.stringify([s.spec.minReplicas, s.spec.maxReplicas ?? s.spec.replicas]);
  if (m !== undefined && m.uid === (s.metadata.uid ?? '') && m.bounds === bounds) return m.policy;
  // New bounds (e.g. minReplicas 1 → 0) take effect now, not at the next restart of SITS: a new policy.
  if (m !== undefined && m.uid === (s.metadata.uid ?? '')) loop.log(`serving: ${k}: replica bounds changed to ${bounds}: new autoscaler state`);
  const a = s.spec.autoscaling;
  const slo = Number(s.metadata.annotations?.[TTFT_SLO_ANNOTATION]);
  const cfg: TokenAutoscalerConfig = {
    ...TOKEN_AUTOSCALER_DEFAULTS,
    ...loop.o.policy,
    sloTtftSec: Number.isFinite(slo) && slo > 0 ? slo : (loop.o.sloTtftSec ?? 2),
    minReplicas: s.spec.minReplicas,
    maxReplicas: s.spec.maxReplicas ?? s.spec.replicas,
    ...(a?.scaleDownStabilizationSeconds === undefined ? {} : { scaleDownDelaySec: a.scaleDownStabilizationSeconds }),
    ...(a?.tokensPerSecondPerReplica === undefined ? {} : { initialThreshold: a.tokensPerSecondPerReplica }),
  };
  const policy = new TokenAutoscaler(cfg);
  loop.memory.set(k, { uid: s.metadata.uid ?? '', bounds, policy, scrapes: [], recent: [] });
  return policy;
}

async function autoscale(
  loop: LoopState,
  s: IsvcObject,
  runtime: RuntimeDefinition,
  serving: readonly { pod: PodObject; client: EngineClient }[],
  starting: number,
): Promise<void> {
  const policy = policyFor(loop, s);
  const mem = loop.memory.get(key(s.metadata.namespace ?? 'default', s.metadata.name ?? '')) as ServiceMemory;
  const atSec = loop.now.nowMs() / 1000;
  const scrapes: ReplicaScrape[] = [];
  await Promise.all(
    serving.map(async (r) => {
      try {
        scrapes.push({ replica: r.pod.metadata.name ?? '', atSec, signals: await r.client.scrape() });
      } catch (e) {
        loop.log(`serving: ${(e as Error).message}`);
      }
    }),
  );
  const remember = (t: ObservedTick): void => {
    mem.recent = [...mem.recent.filter((q) => q.atSec > atSec - 60), t];
  };
  // Scale from zero (ADR 0126): a router holding a request for a service without endpoints says so on the service.
  // Mode keda: KEDA activates (its activation trigger); the annotation is not SITS's to read there.
  const act = sitsMayScale(s.spec) ? activationTime(s.metadata.annotations) : {};
  if (act.error !== undefined && mem.badActivation !== act.error) await postEvent(loop, s, 'Warning', 'InvalidActivation', act.error);
  mem.badActivation = act.error;
  if (act.atMs !== undefined) policy.activate(Math.min(act.atMs, loop.now.nowMs()) / 1000);
  // At zero nothing runs, so nothing is served: a known zero the policy may act on (an activation).
  const atZero = s.spec.replicas === 0 && serving.length === 0 && starting === 0;
  // No replica answered: nothing is known, which is not "no load" — decide nothing this tick.
  if (scrapes.length === 0 && !atZero) {
    remember({ atSec, asked: serving.length, answered: 0, starting, waiting: 0, demandTokensPerSec: 0 });
    return;
  }
  const obs = observeService(
    { nowSec: atSec, readyReplicas: scrapes.length, startingReplicas: starting, desiredReplicas: s.spec.replicas },
    scrapes,
    mem.scrapes,
  );
  mem.scrapes = scrapes;
  const want = policy.decide(obs);
  remember({
    atSec,
    asked: serving.length,
    answered: scrapes.length,
    starting,
    waiting: obs.waiting,
    demandTokensPerSec: Math.round(policy.demandTokensPerSec),
    want,
  });
  // Modes external and keda: observed and calibrated (the threshold feeds KEDA's trigger), never written.
  if (!sitsMayScale(s.spec) || want === s.spec.replicas) return;
  const ns = s.metadata.namespace ?? 'default';
  const name = s.metadata.name ?? '';
  const demand = policy.demandTokensPerSec;
  const d: ScaleDecision = {
    service: key(ns, name),
    from: s.spec.replicas,
    to: want,
    demandTokensPerSec: Math.round(demand),
    waiting: obs.waiting,
    peakWaiting: Math.max(...mem.recent.map((q) => q.waiting)),
    thresholdTokensPerSec: Math.round(policy.tokensPerReplica),
  };
  // The scale subresource: the same door KEDA and an HPA use, so a service declared external is never written.
  try {
    await loop.client.mergePatch(`${API}/namespaces/${ns}/inferenceservices/${name}/scale`, { spec: { replicas: want } });
  } catch (e) {
    loop.log(`serving: scale ${d.service}: ${(e as Error).message}`);
    return;
  }
  loop.decisions.push(d);
  if (loop.decisions.length > 100) loop.decisions.shift();
  loop.log(
    `serving: ${d.service} ${d.from} → ${d.to} replicas (demand ${d.demandTokensPerSec} tokens/s, ${d.waiting} waiting, threshold ${d.thresholdTokensPerSec} tokens/s per replica)`,
  );
  const why = d.from === 0 && act.atMs !== undefined ? ` (activated by a request held at ${new Date(act.atMs).toISOString()})` : '';
  await postEvent(
    loop,
    s,
    'Normal',
    want > d.from ? 'ScaledOut' : 'ScaledIn',
    `SITS autoscaler: replicas ${d.from} → ${d.to}${why}: demand ${d.demandTokensPerSec} tokens/s (${obs.waiting} requests waiting, ${Math.round(obs.generatedTokensPerSec)} generated tokens/s), threshold ${d.thresholdTokensPerSec} tokens/s per replica`,
  );
}

async function serveService(loop: LoopState, s: IsvcObject): Promise<void> {
  const ns = s.metadata.namespace ?? 'default';
  const name = s.metadata.name ?? '';
  const want = (s.spec.model.adapters ?? []).map((a) => a.name);
  loop.desired.set(key(ns, name), want);
  if (s.metadata.deletionTimestamp !== undefined) return;
  const rendered = renderReplica(s.spec);
  if (!rendered.ok) return; // the controller reports the spec; nothing to serve
  const runtime = rendered.template.runtime;
  const pods = (await loop.client.get<{ items: LivePod[] }>(`/api/v1/namespaces/${ns}/pods`, { labelSelector: selectorString(name) })).items.filter(
    (p) =>
      p.metadata.ownerReferences?.some((r) => r.uid === s.metadata.uid) === true &&
      p.metadata.deletionTimestamp === undefined &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed',
  );
  const ready = pods.filter((p) => engineUp(p) && (p.status?.podIP ?? '') !== '');
  const replicas = ready.map((pod) => ({
    pod,
    client: new EngineClient(
      runtime,
      { name: pod.metadata.name ?? '', host: loop.resolve(pod.status?.podIP ?? ''), port: rendered.template.port },
      { ...(loop.o.retry === undefined ? {} : { retry: loop.o.retry }) },
    ),
  }));
  const synced = await Promise.all(replicas.map((r) => syncAdapters(loop, r.pod, runtime, r.client, want)));
  const loadedSomewhere = new Set(synced.flatMap((rec) => rec.adapters.filter((a) => a.state === 'Loaded').map((a) => a.name)));
  const states = synced.map((rec) => excuseUnloadable(rec, loadedSomewhere));
  await Promise.all(
    replicas.map(async (r, i) => {
      const rec = states[i] as EngineStateRecord;
      // The annotation first: once the gate makes the pod Ready, the controller already reads it as serving.
      await writeState(loop, r.pod, rec);
      await writeGate(loop, r.pod, rec);
    }),
  );
  const serving = replicas.filter((_, i) => states[i]?.serving === true);
  if (sitsMayScale(s.spec) || s.spec.autoscaling?.mode === 'keda') await autoscale(loop, s, runtime, serving, pods.length - serving.length);
}

export function startServingLoop(client: KubeClient, o: ServingLoopOptions = {}): ServingLoop {
  const log = o.log ?? (() => undefined);
  const loop: LoopState = {
    client,
    o,
    log,
    now: o.clock ?? { nowMs: () => Date.now() },
    resolve: o.resolveAddress ?? ((ip: string) => ip),
    backoff: o.adapterBackoffMs ?? { base: 2000, max: 60_000 },
    desired: new Map(),
    memory: new Map(),
    failures: new Map(),
    decisions: [],
  };
  const { desired, memory, decisions } = loop;

  const engine = annotatedEngine((ns, svc) => desired.get(key(ns, svc)) ?? []);

  async function tick(): Promise<void> {
    if (o.isLeader !== undefined && !o.isLeader()) return;
    let items: IsvcObject[];
    try {
      items = (await client.get<{ items: unknown[] }>(`${API}/inferenceservices`)).items.map((x) => withDefaults('InferenceService', x) as IsvcObject);
    } catch (e) {
      log(`serving: list inference services: ${(e as Error).message}`);
      return;
    }
    const seen = new Set(items.map((s) => key(s.metadata.namespace ?? 'default', s.metadata.name ?? '')));
    for (const k of [...memory.keys()]) if (!seen.has(k)) memory.delete(k);
    for (const k of [...desired.keys()]) if (!seen.has(k)) desired.delete(k);
    await Promise.all(
      items.map((s) =>
        serveService(loop, s).catch((e: unknown) => log(`serving: ${s.metadata.namespace ?? ''}/${s.metadata.name ?? ''}: ${(e as Error).message}`)),
      ),
    );
  }

  const periodic = runPeriodically(tick, o.intervalMs ?? 5000);

  return {
    engine,
    tick,
    decisions,
    thresholds: (ns, name) => {
      const m = memory.get(key(ns, name));
      return m === undefined || m.scrapes.length === 0 ? undefined : { tokensPerReplica: m.policy.tokensPerReplica };
    },
    observations: (ns, name) => memory.get(key(ns, name))?.recent ?? [],
    stop: () => periodic.stop(),
  };
}
