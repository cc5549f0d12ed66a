/**
 * What the DataPipeline reconcile sees and the child kinds it creates: pods for container stages, SITS workloads
 * (TrainingJob, BatchInferenceJob, InferenceService), VolumeSnapshots for output artifacts and claims restored from
 * them for input artifacts. Everything a pipeline creates carries LABEL.dataPipeline with its name.
 */
import type { ApplyFailure } from '../../api/controller.ts';
import type { DataPipelineSpec, DataPipelineStatus } from '../../api/schema/data-pipeline.ts';
import type { ObjectMeta, PodObject } from '../kube-objects.ts';

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

export type ProfileRule = 'training' | 'low-latency' | 'batch-throughput' | 'cpu';

/** The GPUs of one model in the cluster, as the controller sees them from the nodes (summarizeCluster). */
export interface GpuPool {
  readonly model: string;
  /** Memory of one GPU (the smallest seen for the model). */
  readonly memoryMiB: number;
  readonly computeCapability: number;
  /** Healthy GPUs on schedulable nodes. */
  readonly gpus: number;
  /** Healthy GPUs per node, largest first. */
  readonly nodeGpus: readonly number[];
  /** Sizes of the NVLink islands (GPUs of one node joined by NVLink/NVSwitch; 1 for a GPU without), largest first. */
  readonly islands: readonly number[];
  /** The most GPUs of this model in one rack. */
  readonly rackGpus: number;
}

export interface ClusterSummary {
  /** One per GPU model. */
  readonly pools: readonly GpuPool[];
  /** Price of one GPU-hour by model; batch-throughput ranks by tokens per price when given. */
  readonly pricePerGpuHour?: Readonly<Record<string, number>>;
  /** The queue each rule's steps go to, when the cluster has one for it. */
  readonly queues?: Readonly<Partial<Record<ProfileRule, string>>>;
}

/** One finished step of an earlier run, as the controller recorded it. */
export interface CacheEntry {
  readonly key: string;
  readonly run: string;
  readonly step: string;
  readonly phase: 'Succeeded' | 'Failed';
  readonly finishedAt: Date;
  /** The step's outputs (artifact references, parameters), handed to the new run as they are. */
  readonly outputs: Readonly<Record<string, unknown>>;
  /** False when an output artifact is gone (garbage-collected): such an entry cannot be reused. Default: true. */
  readonly outputsAvailable?: boolean;
}

/** What an adapter stage reads of the user's InferenceService. */
export interface TargetService {
  readonly metadata: ObjectMeta & { readonly managedFields?: readonly { readonly manager?: string; readonly operation?: string }[] };
  readonly spec?: { readonly model?: { readonly adapters?: readonly { readonly name: string; readonly uri: string }[] } };
  readonly status?: {
    readonly replicaStatuses?: readonly {
      readonly name: string;
      readonly ready: boolean;
      readonly adapters?: readonly { readonly name: string; readonly state: string; readonly message?: string }[];
    }[];
  };
}
