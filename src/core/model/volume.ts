/**
 * Storage objects the volume plugins read (kube's PersistentVolume, PersistentVolumeClaim, StorageClass), with
 * only the fields kube-scheduler's VolumeBinding, VolumeZone and VolumeRestrictions look at. Sizes in bytes.
 */
import type { LabelSelector, NodeSelectorTerm } from './selectors.ts';

export type AccessMode = 'ReadWriteOnce' | 'ReadOnlyMany' | 'ReadWriteMany' | 'ReadWriteOncePod';
export type VolumeMode = 'Filesystem' | 'Block';

/** A StorageClass allowedTopologies term: every expression's key must carry one of its values (kube's TopologySelectorTerm). */
export interface TopologySelectorTerm {
  readonly matchLabelExpressions: readonly { readonly key: string; readonly values: readonly string[] }[];
}

export interface StorageClass {
  readonly name: string;
  readonly provisioner: string;
  readonly volumeBindingMode: 'Immediate' | 'WaitForFirstConsumer';
  /** Absent or empty = provisionable anywhere. */
  readonly allowedTopologies?: readonly TopologySelectorTerm[];
}

export interface PersistentVolume {
  readonly name: string;
  readonly capacityBytes: number;
  readonly accessModes: readonly AccessMode[];
  /** '' = no class. */
  readonly storageClassName: string;
  readonly volumeMode: VolumeMode;
  /** spec.nodeAffinity.required terms (any one must match the node's labels). */
  readonly nodeAffinity?: readonly NodeSelectorTerm[];
  readonly labels: Readonly<Record<string, string>>;
  /** spec.claimRef, when the volume is bound or pre-bound (namespace/name; uid when set). */
  readonly claimRef?: { readonly namespace: string; readonly name: string; readonly uid?: string };
  readonly phase: 'Pending' | 'Available' | 'Bound' | 'Released' | 'Failed';
  readonly deleting: boolean;
}

export interface PersistentVolumeClaim {
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
  /** '' = no class (kube's GetPersistentVolumeClaimClass: spec.storageClassName or the beta annotation). */
  readonly storageClassName: string;
  readonly accessModes: readonly AccessMode[];
  readonly requestBytes: number;
  readonly volumeMode: VolumeMode;
  /** spec.volumeName: bound (or pre-bound) to this PV. */
  readonly volumeName?: string;
  /** `pv.kubernetes.io/bind-completed`: the PV controller finished binding (kube's "fully bound" needs it). */
  readonly bindCompleted: boolean;
  readonly phase: 'Pending' | 'Bound' | 'Lost';
  /** `volume.kubernetes.io/selected-node`, written by the scheduler for delayed provisioning. */
  readonly selectedNode?: string;
  readonly selector?: LabelSelector;
  readonly deleting: boolean;
}

/** A claim a pod uses: `persistentVolumeClaim.claimName`, or a generic ephemeral volume's claim (`<pod>-<volume>`). */
export interface PodClaim {
  readonly name: string;
  readonly ephemeral?: true;
  /** The volume is mounted read-only (persistentVolumeClaim.readOnly). */
  readonly readOnly?: true;
}

/**
 * An inline disk kube's VolumeRestrictions keeps apart on a node (GCE PD, AWS EBS, iSCSI, Ceph RBD): two pods on one
 * node conflict on the same disk unless both mount it read-only (EBS: always).
 */
export interface InlineDisk {
  readonly kind: 'gce' | 'aws' | 'iscsi' | 'rbd';
  /** pdName, volumeID, iqn, or `pool/image` for RBD. */
  readonly id: string;
  readonly readOnly: boolean;
  /** RBD: the Ceph monitors (one in common makes it the same image). */
  readonly monitors?: readonly string[];
}

/** kube's isVolumeConflict for two inline disks. */
export function disksConflict(a: InlineDisk, b: InlineDisk): boolean {
  if (a.kind !== b.kind || a.id !== b.id) return false;
  if (a.kind === 'aws') return true;
  if (a.kind === 'rbd' && !(a.monitors ?? []).some((m) => (b.monitors ?? []).includes(m))) return false;
  return !(a.readOnly && b.readOnly);
}

export const claimKey = (namespace: string, name: string): string => `${namespace}/${name}`;

/** The claims of a pod as keys (`namespace/name`). */
export function podClaimKeys(pod: { readonly namespace?: string; readonly claims?: readonly PodClaim[] }): string[] {
  const ns = pod.namespace ?? 'default';
  return (pod.claims ?? []).map((c) => claimKey(ns, c.name));
}

// A pod's volumes resolved against the snapshot's storage (framework/volume-binding.ts resolvePodVolumes):
// data the pod carries (PodSpec.volumes), so it lives with the pod model.

/** A bound claim's PV: its node affinity and zone labels. */
export interface BoundVolume {
  readonly pv: string;
  readonly nodeAffinity?: readonly NodeSelectorTerm[];
  readonly zones: readonly { readonly key: string; readonly values: readonly string[] }[];
}

export interface UnboundClaim {
  readonly claim: string;
  readonly requestBytes: number;
  /** Set when the claim already names a node (selected-node, or a provisioning assumption). */
  readonly selectedNode?: string;
  /** PVs that could take it on some node, smallest first. */
  readonly candidates: readonly { readonly name: string; readonly nodeAffinity?: readonly NodeSelectorTerm[] }[];
  /** The class's provisioning topology when it can provision (null = anywhere), undefined when it cannot. */
  readonly provision: StorageClass['allowedTopologies'] | null | undefined;
}

/** A pod's volumes resolved against the catalog: what the per-node filter reads. */
export interface ResolvedVolumes {
  readonly key: string;
  readonly claims: readonly string[];
  readonly rwopConflict: boolean;
  readonly bound: readonly BoundVolume[];
  readonly unbound: readonly UnboundClaim[];
}

export type VolumeResolution = { readonly ok: true; readonly volumes: ResolvedVolumes } | { readonly ok: false; readonly reason: string };
