/**
 * What the InferenceService reconcile reads and returns, and the ports through which it learns what the runner's
 * caches do not hold (the cluster's NVLink islands; what the engines report). Plain values: no clients, no clocks.
 */
import type { ApplyFailure, WireObject } from '../../api/controller.ts';
import type { InferenceService, InferenceServiceStatus } from '../../api/schema/inference-service.ts';
import type { OwnerReference, PodObject, ServiceObject } from '../kube-objects.ts';
import type { ScaledObject } from '../../serving/keda.ts';

/** An InferenceService as read from the apiserver, defaults applied, with the metadata the controller needs. */
export type InferenceServiceObject = InferenceService & {
  readonly metadata: InferenceService['metadata'] & { readonly deletionTimestamp?: string };
};

/** What the cluster offers, as far as the reconcile must judge a spec against it (ADR 0084). */
export interface ClusterFacts {
  /**
   * The most GPUs one pod can get inside one NVLink island (GPUs joined by NVLink/NVSwitch on one node), over
   * every node; undefined while no node is known (then nothing is judged).
   */
  readonly largestNvlinkIslandGpus: number | undefined;
}

/** One adapter on one replica, as the engine side (the LoRA helper) observed it. */
export interface AdapterObservation {
  readonly name: string;
  readonly state: 'Loading' | 'Loaded' | 'Failed';
  readonly message?: string;
}

/** What the engine side knows about one replica beyond its pod (LoRA loading, issue 12 Deliver 4). */
export interface ReplicaEngineState {
  readonly adapters?: readonly AdapterObservation[];
  /**
   * False holds a Ready pod out of readyReplicas (e.g. its adapters are still loading); undefined means the pod's
   * readiness (the engine's health endpoint, through the readiness probe) is the whole answer.
   */
  readonly serving?: boolean;
}

/**
 * The seam for the engine helpers: adapter loading and per-replica engine facts. The controller never calls an
 * engine itself. It hands over the whole pod, so an implementation may read what the engine side wrote on it (an
 * annotation: pods are watched, so a change reconciles the service at once) or look the pod up in its own cache
 * (then it must get the service reconciled when the view changes).
 */
export interface EnginePort {
  replica(pod: PodObject): ReplicaEngineState | undefined;
}

export const NO_ENGINE: EnginePort = { replica: () => undefined };

/** The thresholds SITS's autoscaler calibrated for one service (mode keda renders them into the ScaledObject). */
export interface AutoscalerThresholds {
  /** Tokens/s one replica carries within the SLO (TokenAutoscaler.tokensPerReplica). */
  readonly tokensPerReplica?: number;
  readonly queueDepthPerReplica?: number;
}

/** A KEDA ScaledObject as the watch shows it. */
export type ScaledObjectResource = WireObject & {
  readonly metadata: WireObject['metadata'] & { readonly ownerReferences?: readonly OwnerReference[] };
  readonly spec?: Readonly<Record<string, unknown>>;
};

export interface InferenceControllerConfig {
  /** Extra names a GPU model may go by on nodes (GFD product → the scheduler's model name). */
  readonly gpuModelAliases?: (model: string) => readonly string[];
  /** Read at every reconcile; a service refused for the cluster's shape is looked at again every minute. */
  readonly clusterFacts: () => ClusterFacts;
  readonly engine: EnginePort;
  /** The serving loop sets the adapters-loaded pod condition: replicas with adapters declare it as a readiness gate. */
  readonly adapterReadinessGate?: boolean;
  /**
   * The calibrated thresholds per service (namespace, name), read at every reconcile of a service in mode keda;
   * unset means the spec's targets (or SITS's starting threshold). When set, such services are re-read every
   * calibration period so that their ScaledObject follows the calibration.
   */
  readonly thresholds?: (namespace: string, name: string) => AutoscalerThresholds | undefined;
  /** The KEDA servers and ClusterTriggerAuthentications services may name (issue 36); unset: none. */
  readonly kedaAllow?: { readonly servers: readonly string[]; readonly clusterAuth: readonly string[] };
}

export interface Observed {
  readonly isvc: InferenceServiceObject;
  /** Pods labelled with the service's name (the reconcile keeps those it owns). */
  readonly pods: readonly PodObject[];
  readonly services: readonly ServiceObject[];
  /** KEDA ScaledObjects labelled with the service's name; empty where KEDA is not installed. */
  readonly scaledObjects?: readonly ScaledObjectResource[];
  readonly thresholds?: AutoscalerThresholds;
  readonly hasThresholdPort?: boolean;
  readonly nowMs: number;
  readonly facts: ClusterFacts;
  readonly engine: EnginePort;
  readonly lastErrors?: readonly ApplyFailure[];
}

export type Action =
  | { readonly kind: 'createPod'; readonly pod: PodObject }
  | { readonly kind: 'deletePod'; readonly name: string; readonly uid: string }
  | { readonly kind: 'createService'; readonly service: ServiceObject }
  /** Merge patch of the Service's spec (selector, ports) when the runtime's ports changed. */
  | { readonly kind: 'patchService'; readonly name: string; readonly patch: Readonly<Record<string, unknown>> }
  | { readonly kind: 'createScaledObject'; readonly scaledObject: OwnedScaledObject }
  /** Merge patch of the ScaledObject's spec (its triggers array is replaced whole). */
  | { readonly kind: 'patchScaledObject'; readonly name: string; readonly patch: Readonly<Record<string, unknown>> }
  | { readonly kind: 'deleteScaledObject'; readonly name: string; readonly uid: string }
  | { readonly kind: 'event'; readonly type: 'Normal' | 'Warning'; readonly reason: string; readonly message: string };

export interface ReconcileResult {
  readonly status?: InferenceServiceStatus;
  readonly actions: readonly Action[];
  readonly requeueAfterMs?: number;
}

/** A ScaledObject the controller owns (keda.ts): its owner reference is always set. */
export type OwnedScaledObject = ScaledObject & { readonly metadata: ScaledObject['metadata'] & { readonly ownerReferences: readonly OwnerReference[] } };
