/** What the TrainingJob reconcile reads and returns. Plain values: no clients, no clocks. */
import type { TrainingJob, TrainingJobStatus } from '../../api/schema/training-job.ts';
import type { PodGroupObject, PodObject, ServiceObject } from '../kube-objects.ts';

/** A TrainingJob as read from the apiserver, defaults applied, with the metadata the controller needs. */
export type TrainingJobObject = TrainingJob & {
  readonly metadata: TrainingJob['metadata'] & { readonly deletionTimestamp?: string; readonly finalizers?: readonly string[] };
};

export interface ControllerConfig extends BuildConfig {
  /** First gang-restart delay after a failure; doubles per restart. */
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  /** An elastic gang runs at least this long at one size before it grows (each resize restarts training). */
  readonly resizeCooldownMs: number;
  /** A pod still unbound this long after creation, with no binding in progress, counts as unplaceable (elastic sizing). */
  readonly settleMs: number;
}

export const DEFAULT_CONTROLLER_CONFIG: ControllerConfig = {
  backoffBaseMs: 10_000,
  backoffMaxMs: 360_000,
  resizeCooldownMs: 60_000,
  settleMs: 10_000,
  placeholderImage: 'registry.k8s.io/pause:3.10',
};

/** An error the runner met applying the previous actions of this job (fed back so that status can show it). */
export interface ApplyError {
  readonly action: Action['kind'] | 'writeStatus';
  readonly name?: string;
  /** HTTP status, 0 for a network error. */
  readonly status: number;
  readonly reason: string;
  readonly message: string;
}

export interface Observed {
  readonly job: TrainingJobObject;
  /** Pods labelled with the job's name (the reconcile keeps those the job owns). */
  readonly pods: readonly PodObject[];
  readonly services: readonly ServiceObject[];
  readonly podGroups: readonly PodGroupObject[];
  /** VolumeSnapshots labelled with the job's name (its checkpoints; spec.checkpoint). */
  readonly volumeSnapshots?: readonly VolumeSnapshotObject[];
  /** PersistentVolumeClaims labelled with the job's name (the claim of spec.checkpoint.volume.claimTemplate). */
  readonly claims?: readonly ClaimObject[];
  readonly nowMs: number;
  readonly lastErrors?: readonly ApplyError[];
}

export type Action =
  | { readonly kind: 'addFinalizer' }
  | { readonly kind: 'removeFinalizer' }
  | { readonly kind: 'createService'; readonly service: ServiceObject }
  | { readonly kind: 'deleteService'; readonly name: string; readonly uid: string }
  /** Create the PodGroup, or (exists) merge-patch its spec. */
  | { readonly kind: 'applyPodGroup'; readonly podGroup: PodGroupObject; readonly exists: boolean }
  | { readonly kind: 'deletePodGroup'; readonly name: string; readonly uid: string }
  | { readonly kind: 'createPod'; readonly pod: PodObject }
  | { readonly kind: 'deletePod'; readonly name: string; readonly uid: string }
  /** Checkpoints (checkpoints.ts): the VolumeSnapshot of a commit, its committed label, retention. */
  | { readonly kind: 'createVolumeSnapshot'; readonly snapshot: VolumeSnapshotObject }
  | { readonly kind: 'patchVolumeSnapshot'; readonly name: string; readonly patch: Readonly<Record<string, unknown>> }
  | { readonly kind: 'deleteVolumeSnapshot'; readonly name: string; readonly uid: string }
  /** The shared claim of spec.checkpoint.volume.claimTemplate (restored from a snapshot when one is Ready). */
  | { readonly kind: 'createClaim'; readonly claim: ClaimObject }
  | { readonly kind: 'deleteClaim'; readonly name: string; readonly uid: string }
  /** Merge-patch a pod's annotations (the checkpoint request on rank 0). */
  | { readonly kind: 'annotatePod'; readonly name: string; readonly annotations: Readonly<Record<string, string | null>> }
  /** ttlSecondsAfterFinished elapsed. */
  | { readonly kind: 'deleteJob' }
  | { readonly kind: 'event'; readonly type: 'Normal' | 'Warning'; readonly reason: string; readonly message: string };

export interface ReconcileResult {
  /** The whole desired status; undefined leaves it alone. The runner writes it before any action. */
  readonly status?: TrainingJobStatus;
  /** In order; consecutive actions of one kind may run concurrently. */
  readonly actions: readonly Action[];
  /** Reconcile again after this long even if nothing changes (backoff, deadlines, timeouts, TTL). */
  readonly requeueAfterMs?: number;
}

export interface BuildConfig {
  /** Image of the placeholder pods (does nothing, holds the requested resources while bound). */
  readonly placeholderImage: string;
  /** Extra names a GPU model may go by on nodes (e.g. GFD product → the scheduler's model name). */
  readonly gpuModelAliases?: (model: string) => readonly string[];
}

/** The metadata the checkpoint code reads of a VolumeSnapshot or a claim. */
export interface StorageMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly deletionTimestamp?: string;
  readonly creationTimestamp?: string;
  readonly ownerReferences?: readonly unknown[];
}

/** A VolumeSnapshot (snapshot.storage.k8s.io/v1), the part the controller reads and writes. */
export interface VolumeSnapshotObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: StorageMeta;
  readonly spec?: { readonly volumeSnapshotClassName?: string; readonly source?: { readonly persistentVolumeClaimName?: string } };
  readonly status?: {
    readonly readyToUse?: boolean;
    readonly creationTime?: string;
    readonly restoreSize?: string;
    readonly error?: { readonly message?: string };
  };
}

/** A PersistentVolumeClaim, the part the controller reads and writes. */
export interface ClaimObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: StorageMeta;
  readonly spec?: Readonly<Record<string, unknown>>;
  readonly status?: { readonly phase?: string };
}
