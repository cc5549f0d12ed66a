/**
 * Who may write an InferenceService's spec.replicas (production-stack PR #903: an external autoscaler and SITS
 * must never fight). Everyone writes through the /scale subresource; this decides whether SITS's own token
 * autoscaler (serving/autoscale) is one of the writers. The controller itself never writes replicas: it follows them.
 */
import type { InferenceServiceSpec } from '../../api/schema/inference-service.ts';

export type ReplicaWriter =
  /** spec.autoscaling with mode sits: the SITS autoscaler writes replicas between minReplicas and maxReplicas. */
  | 'sits'
  /** mode external: KEDA, an HPA or a person writes replicas; SITS only reads them. */
  | 'external'
  /** mode keda: the controller keeps a ScaledObject with the SITS policy; KEDA's HPA writes replicas. */
  | 'keda'
  /** No autoscaling: replicas are what the user (or anything using /scale) sets. */
  | 'manual';

export function replicaWriter(spec: Pick<InferenceServiceSpec, 'autoscaling'>): ReplicaWriter {
  const a = spec.autoscaling;
  if (a === undefined) return 'manual';
  return a.mode === 'external' || a.mode === 'keda' ? a.mode : 'sits';
}

/** The SITS autoscaler's guard: a recommendation is written only where SITS owns the replica count. */
export function sitsMayScale(spec: Pick<InferenceServiceSpec, 'autoscaling'>): boolean {
  return replicaWriter(spec) === 'sits';
}

/**
 * Scale from zero in mode sits (ADR 0126): with no replica there is no engine to scrape, so the signal comes from
 * whatever holds the first request — a gateway or request router in front of the Service that finds no endpoint
 * sets this annotation on the InferenceService to the time (RFC 3339) of the request it holds. The SITS autoscaler
 * takes it as demand at that time: a service at zero goes to one replica, and the idle period restarts from it.
 */
export const ACTIVATE_ANNOTATION = 'ai.sits2026.dev/activate';

/** The activation time on a service, in ms; undefined when absent, and an error naming the annotation when unreadable. */
export function activationTime(annotations: Readonly<Record<string, string>> | undefined): { readonly atMs?: number; readonly error?: string } {
  const v = annotations?.[ACTIVATE_ANNOTATION];
  if (v === undefined) return {};
  const t = Date.parse(v);
  // RFC 3339 date-time only (Date.parse alone would take "5" or "May 1").
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(v) || !Number.isFinite(t)) {
    return { error: `metadata.annotations["${ACTIVATE_ANNOTATION}"]: ${JSON.stringify(v.slice(0, 64))} is not an RFC 3339 time (e.g. 2026-12-01T20:30:00Z)` };
  }
  return { atMs: t };
}

/** The merge patch a router sends to activate a service: the annotation set to the time of the request it holds. */
export const activationPatch = (at: Date): { metadata: { annotations: Record<string, string> } } => ({
  metadata: { annotations: { [ACTIVATE_ANNOTATION]: at.toISOString() } },
});
