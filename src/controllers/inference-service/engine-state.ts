/**
 * The engine side's view of one replica, kept on the replica's pod as an annotation (ADR 0110): the serving loop
 * (live/serving/serving-loop.ts) writes what it found and did on the engine (adapters Loading, Loaded, Failed), the pod
 * watch reconciles the service at once, and the controller reads it back through `annotatedEngine` — so the view
 * survives a restart of SITS and the controller never calls an engine. Pure: parsing, encoding and planning.
 */
import { API_GROUP, LABEL } from '../../api/wire.ts';
import type { PodObject } from '../kube-objects.ts';
import type { AdapterObservation, EnginePort, ReplicaEngineState } from './model.ts';

export const ENGINE_STATE_ANNOTATION = `${API_GROUP}/engine-state`;

/**
 * The pod readiness gate (KEP-580) of a replica whose template lists adapters: the serving loop sets this pod
 * condition True once every adapter the replica must serve is on, False while one is not; the kubelet makes the
 * pod Ready (an endpoint of the Service) only when its containers are ready and this condition is True.
 */
export const ADAPTERS_LOADED_CONDITION = `${API_GROUP}/adapters-loaded`;

/** Whether the pod declares the adapters-loaded readiness gate. */
export const hasAdapterGate = (pod: PodObject): boolean =>
  Array.isArray(pod.spec?.readinessGates) &&
  (pod.spec.readinessGates as readonly { conditionType?: unknown }[]).some((g) => g.conditionType === ADAPTERS_LOADED_CONDITION);

/**
 * The strategic-merge patch of pods/status that sets the gate to what the loop found (conditions merge by type, so
 * the kubelet's own conditions stay); undefined when the pod already says so.
 */
export function adapterGatePatch(pod: PodObject, rec: EngineStateRecord, nowIso: string): Record<string, unknown> | undefined {
  const status = rec.serving ? 'True' : 'False';
  const have = pod.status?.conditions?.find((c) => c.type === ADAPTERS_LOADED_CONDITION);
  if (have?.status === status) return undefined;
  const missing = rec.adapters.filter((a) => a.state !== 'Loaded').map((a) => `${a.name} ${a.state}${a.message === undefined ? '' : `: ${a.message}`}`);
  const message = rec.serving ? 'every adapter of the replica is loaded' : `not loaded: ${missing.join('; ') || 'adapters not checked yet'}`;
  return {
    ...(pod.metadata.uid === undefined ? {} : { metadata: { uid: pod.metadata.uid } }),
    status: {
      conditions: [
        {
          type: ADAPTERS_LOADED_CONDITION,
          status,
          reason: rec.serving ? 'AdaptersLoaded' : 'AdaptersNotLoaded',
          message: message.slice(0, 1000),
          lastTransitionTime: nowIso,
        },
      ],
    },
  };
}

export interface EngineStateRecord {
  readonly adapters: readonly AdapterObservation[];
  /** Every adapter of the spec the replica was started with is applied (none Loading or Failed). */
  readonly serving: boolean;
}

/** Stable text (fields in a fixed order): an unchanged view writes nothing. */
export function encodeEngineState(r: EngineStateRecord): string {
  return JSON.stringify({
    serving: r.serving,
    adapters: r.adapters.map((a) => ({ name: a.name, state: a.state, ...(a.message === undefined ? {} : { message: a.message }) })),
  });
}

const STATES = new Set(['Loading', 'Loaded', 'Failed']);

/** The record on a pod; undefined when absent or not ours (a hand-edited annotation is ignored, not a crash). */
export function readEngineState(pod: PodObject): EngineStateRecord | undefined {
  const text = pod.metadata.annotations?.[ENGINE_STATE_ANNOTATION];
  if (text === undefined) return undefined;
  try {
    const j = JSON.parse(text) as { serving?: unknown; adapters?: unknown };
    if (typeof j.serving !== 'boolean' || !Array.isArray(j.adapters)) return undefined;
    const adapters: AdapterObservation[] = [];
    for (const a of j.adapters as { name?: unknown; state?: unknown; message?: unknown }[]) {
      if (typeof a.name !== 'string' || typeof a.state !== 'string' || !STATES.has(a.state)) continue;
      adapters.push({ name: a.name, state: a.state as AdapterObservation['state'], ...(typeof a.message === 'string' ? { message: a.message } : {}) });
    }
    return { serving: j.serving, adapters };
  } catch {
    return undefined;
  }
}

/**
 * The EnginePort over the annotation. `desiredAdapters` says which adapters a service's spec lists (the serving
 * loop's latest read): a Ready pod of a service with adapters that the loop has not looked at yet is not serving
 * (a new replica counts as ready only once its adapters are on), one without adapters is judged by its pod alone.
 */
export function annotatedEngine(desiredAdapters: (namespace: string, service: string) => readonly string[]): EnginePort {
  return {
    replica(pod: PodObject): ReplicaEngineState | undefined {
      const rec = readEngineState(pod);
      if (rec !== undefined) return rec;
      const svc = pod.metadata.labels?.[LABEL.inferenceService];
      if (svc === undefined) return undefined;
      const want = desiredAdapters(pod.metadata.namespace ?? 'default', svc);
      return want.length === 0 ? undefined : { serving: false, adapters: want.map((name) => ({ name, state: 'Loading' as const })) };
    },
  };
}

/**
 * The replica's record as the gate and the controller read it, given the adapters some replica of the service has
 * loaded: an adapter that failed here and is loaded on no replica holds nobody out (ADR 0125, amended 2026-12-02).
 * The gate keeps replicas consistent — none serves without an adapter another one serves — but an adapter nobody
 * can load (a wrong URI, a rank over the engine's limit) would otherwise take every endpoint away from the base
 * model and the other adapters. It stays Failed in the record, so AdapterFailure still names it and each replica.
 */
export function excuseUnloadable(rec: EngineStateRecord, loadedSomewhere: ReadonlySet<string>): EngineStateRecord {
  if (rec.serving || rec.adapters.length === 0) return rec;
  const ok = rec.adapters.every((a) => a.state === 'Loaded' || (a.state === 'Failed' && !loadedSomewhere.has(a.name)));
  return ok ? { ...rec, serving: true } : rec;
}

/** What to do on one replica: load what the spec lists and the engine has not applied, unload what it no longer lists. */
export function planAdapters(
  desired: readonly string[],
  engine: readonly { readonly name: string; readonly active: boolean }[],
): { readonly load: readonly string[]; readonly unload: readonly string[] } {
  const want = new Set(desired);
  const active = new Set(engine.filter((a) => a.active).map((a) => a.name));
  return { load: desired.filter((n) => !active.has(n)), unload: [...active].filter((n) => !want.has(n)).sort() };
}
