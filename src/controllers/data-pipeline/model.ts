/**
 * What the DataPipeline reconcile sees and the child kinds it creates: pods for container stages, SITS workloads
 * (TrainingJob, BatchInferenceJob, InferenceService), VolumeSnapshots for output artifacts and claims restored from
 * them for input artifacts. Everything a pipeline creates carries LABEL.dataPipeline with its name.
 */
import type { ApplyFailure } from '../../api/controller.ts';
import type { DataPipelineSpec, DataPipelineStatus } from '../../api/schema/data-pipeline.ts';
import type { ObjectMeta, PodObject } from '../kube-objects.ts';
import type { ClusterSummary } from './profiles.ts';
import type { CacheEntry } from './step-cache.ts';
import type { TargetService } from './adapter-stage.ts';

export interface DataPipelineObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: ObjectMeta;
  readonly spec: DataPipelineSpec;
  readonly status?: DataPipelineStatus;
}

/** A SITS workload as far as the pipeline reads it: its phase and why. */
export interface WorkloadObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: ObjectMeta;
  readonly spec?: Readonly<Record<string, unknown>>;
  readonly status?: {
    readonly phase?: string;
    readonly message?: string;
    readonly conditions?: readonly { readonly type: string; readonly status: string; readonly reason?: string; readonly message?: string }[];
  };
}

export interface VolumeSnapshotObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: ObjectMeta;
  readonly spec?: { readonly source?: { readonly persistentVolumeClaimName?: string }; readonly volumeSnapshotClassName?: string };
  readonly status?: { readonly readyToUse?: boolean; readonly restoreSize?: string; readonly error?: { readonly message?: string } };
}

export interface ClaimObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: ObjectMeta;
  readonly spec?: Readonly<Record<string, unknown>>;
  readonly status?: { readonly phase?: string };
}

export const WORKLOAD_PLURALS = { TrainingJob: 'trainingjobs', BatchInferenceJob: 'batchinferencejobs', InferenceService: 'inferenceservices' } as const;
export type WorkloadKind = keyof typeof WORKLOAD_PLURALS;

export interface Observed {
  /** With the schema's defaults applied. */
  readonly pipeline: DataPipelineObject;
  readonly pods: readonly PodObject[];
  readonly workloads: ReadonlyMap<WorkloadKind, readonly WorkloadObject[]>;
  readonly snapshots: readonly VolumeSnapshotObject[];
  readonly claims: readonly ClaimObject[];
  readonly nowMs: number;
  readonly lastErrors?: readonly ApplyFailure[];
  /** The cluster's GPUs, for resourceProfile; undefined: no node source (a profiled stage then fails). */
  readonly cluster?: ClusterSummary;
  /** The users' InferenceServices the adapter stages name (those that exist). */
  readonly services?: readonly TargetService[];
  /** For a run of a template: the template's step-cache history when the run was created (ADR 0122). */
  readonly stepCache?: readonly CacheEntry[];
}
