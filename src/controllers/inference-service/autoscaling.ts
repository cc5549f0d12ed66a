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
