/**
 * The subset of Kubernetes wire objects (Pod, Service, PodGroup, Event) the controllers read and write, as plain
 * JSON. Controllers are pure and never import the client library; the runner hands them these shapes.
 */

export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly controller?: boolean;
  readonly blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly generation?: number;
  readonly creationTimestamp?: string;
  readonly deletionTimestamp?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly ownerReferences?: readonly OwnerReference[];
  readonly finalizers?: readonly string[];
}

export interface EnvVarObject {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: Readonly<Record<string, unknown>>;
}

export interface ResourceRequirementsObject {
  readonly requests?: Readonly<Record<string, string>>;
  readonly limits?: Readonly<Record<string, string>>;
}

export interface ContainerObject {
  readonly name: string;
  readonly image?: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly workingDir?: string;
  readonly env?: readonly EnvVarObject[];
  readonly resources?: ResourceRequirementsObject;
  readonly ports?: readonly { readonly name?: string; readonly containerPort: number; readonly protocol?: string }[];
  readonly imagePullPolicy?: string;
  readonly [extra: string]: unknown;
}

export interface PodCondition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
  readonly lastTransitionTime?: string;
}

export interface ContainerStatusObject {
  readonly name: string;
  readonly ready?: boolean;
  readonly restartCount?: number;
  readonly state?: {
    readonly running?: { readonly startedAt?: string };
    readonly terminated?: { readonly exitCode: number; readonly reason?: string; readonly message?: string; readonly finishedAt?: string };
    readonly waiting?: { readonly reason?: string; readonly message?: string };
  };
}

export interface PodSpecObject {
  readonly containers: readonly ContainerObject[];
  readonly nodeName?: string;
  readonly schedulerName?: string;
  readonly hostname?: string;
  readonly subdomain?: string;
  readonly restartPolicy?: string;
  readonly priorityClassName?: string;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly unknown[];
  readonly affinity?: unknown;
  readonly [extra: string]: unknown;
}

export interface PodObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: ObjectMeta;
  readonly spec?: PodSpecObject;
  readonly status?: {
    readonly phase?: string;
    readonly reason?: string;
    readonly message?: string;
    readonly startTime?: string;
    readonly conditions?: readonly PodCondition[];
    readonly containerStatuses?: readonly ContainerStatusObject[];
  };
}

export interface ServiceObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: ObjectMeta;
  readonly spec?: {
    readonly clusterIP?: string;
    readonly selector?: Readonly<Record<string, string>>;
    readonly publishNotReadyAddresses?: boolean;
    readonly ports?: readonly { readonly name?: string; readonly port: number; readonly targetPort?: number | string; readonly protocol?: string }[];
  };
}

export interface PodGroupObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: ObjectMeta;
  readonly spec?: {
    readonly minMember: number;
    readonly queue?: string;
    readonly priorityClassName?: string;
    readonly topology?: { readonly required?: string; readonly preferred?: string };
  };
}

/** True when `obj` names `ownerUid` as its controller (or any owner with that uid). */
export function isOwnedBy(obj: { readonly metadata: ObjectMeta }, ownerUid: string | undefined): boolean {
  return ownerUid !== undefined && (obj.metadata.ownerReferences ?? []).some((r) => r.uid === ownerUid);
}
