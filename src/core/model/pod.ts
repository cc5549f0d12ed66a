/** Pods, gangs (PodGroups) and their placement constraints. Integer units: cpuMilli, memoryMiB, gpuMilli. */
import type { TrainingModel } from '../estimate/step-time.ts';
import type { Taint } from './node.ts';
import type { TopologyLevel } from './topology.ts';
import type { InlineDisk, PodClaim, ResolvedVolumes } from './volume.ts';
import type { LabelSelector, NodeSelectorTerm } from './selectors.ts';

// The selector vocabulary is the pod's (and a PV's, a claim's): it lives apart so that volume.ts need not import pods.
export type { LabelSelector, LabelSelectorRequirement, NodeSelectorRequirement, NodeSelectorTerm } from './selectors.ts';

export interface Toleration {
  readonly key?: string;
  readonly operator?: 'Exists' | 'Equal';
  readonly value?: string;
  readonly effect?: Taint['effect'];
}

/** spec.affinity.nodeAffinity: `required` = requiredDuringScheduling… terms (any one), `preferred` = weighted terms. */
export interface NodeAffinity {
  readonly required?: readonly NodeSelectorTerm[];
  readonly preferred?: readonly { readonly weight: number; readonly preference: NodeSelectorTerm }[];
}

/** A container port bound on the node (hostPort > 0); ip '0.0.0.0' = every address. */
export interface HostPort {
  readonly port: number;
  readonly protocol: 'TCP' | 'UDP' | 'SCTP';
  readonly ip: string;
}

/**
 * A PodAffinityTerm. `labelSelector` absent matches no pod (kube: a nil selector selects nothing);
 * `namespaces` and `namespaceSelector` both absent = the pod's own namespace; an empty `namespaceSelector` = every namespace.
 */
export interface PodAffinityTerm {
  readonly labelSelector?: LabelSelector;
  readonly namespaces?: readonly string[];
  readonly namespaceSelector?: LabelSelector;
  readonly topologyKey: string;
  readonly matchLabelKeys?: readonly string[];
  readonly mismatchLabelKeys?: readonly string[];
}

/** spec.affinity.podAffinity or podAntiAffinity: required terms (all must hold) and weighted preferred terms. */
export interface PodAffinityRules {
  readonly required?: readonly PodAffinityTerm[];
  readonly preferred?: readonly { readonly weight: number; readonly term: PodAffinityTerm }[];
}

/** A TopologySpreadConstraint, with kube's defaults: nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore, minDomains 1. */
export interface TopologySpreadConstraint {
  readonly maxSkew: number;
  readonly topologyKey: string;
  readonly whenUnsatisfiable: 'DoNotSchedule' | 'ScheduleAnyway';
  readonly labelSelector?: LabelSelector;
  readonly minDomains?: number;
  readonly nodeAffinityPolicy?: 'Honor' | 'Ignore';
  readonly nodeTaintsPolicy?: 'Honor' | 'Ignore';
  readonly matchLabelKeys?: readonly string[];
  /**
   * Set on the cluster's System default constraints only (ADR 0077): as kube's `systemDefaulted`, a node that
   * lacks a key is still scored by the constraints whose keys it has, instead of being ignored.
   */
  readonly systemDefault?: true;
}

export interface PodRequest {
  readonly cpuMilli: number;
  readonly memoryMiB: number;
  /** Number of GPU devices. */
  readonly gpuCount: number;
  /**
   * Share of each device in milli-GPU (1000 = whole). Below 1000 only with gpuCount = 1 (a fractional GPU).
   * 0 when gpuCount is 0.
   */
  readonly gpuMilli: number;
  /** GPU memory per device in MiB, 0 = not constrained (fractional pods on memory-sliced GPUs). */
  readonly gpuMemoryMiB?: number;
  /**
   * Every other resource requested, by its Kubernetes name, in its base unit (bytes for `ephemeral-storage`
   * and `hugepages-*`, a count for extended resources such as `rdma/hca`); absent when there are none.
   */
  readonly scalar?: Readonly<Record<string, number>>;
}

export interface PodSpec {
  /** Unique key, `namespace/name` in Kubernetes. */
  readonly id: string;
  readonly request: PodRequest;
  /** Allowed GPU models (exact names); empty = any. */
  readonly gpuModels: readonly string[];
  /** Minimum compute capability (sm_80 → 80); 0 = any. */
  readonly minComputeCapability: number;
  readonly priority: number;
  readonly queue: string;
  /** Gang (PodGroup) name, when the pod is part of one. */
  readonly gang?: string;
  readonly tolerations: readonly Toleration[];
  /** Only nodes whose labels include all of these. */
  readonly nodeSelector: Readonly<Record<string, string>>;
  /** Node affinity, when the pod has any (absent for most pods: their filters cost nothing more). */
  readonly nodeAffinity?: NodeAffinity;
  /** Host ports the pod binds (containers and sidecars), when any. */
  readonly hostPorts?: readonly HostPort[];
  /** spec.schedulingGates names: while any remain, the pod waits and is not tried (hosts keep it out of the queue). */
  readonly schedulingGates?: readonly string[];
  /** spec.preemptionPolicy, only when `Never` (kube's default PreemptLowerPriority is the absence): the pod waits, never preempts. */
  readonly preemptionPolicy?: 'Never';
  /** metadata.namespace; absent = `default`. Read by inter-pod terms only. */
  readonly namespace?: string;
  /** metadata.labels, when any: what other pods' affinity terms and spread constraints select. */
  readonly labels?: Readonly<Record<string, string>>;
  /** spec.affinity.podAffinity, when present (ADR 0054). */
  readonly podAffinity?: PodAffinityRules;
  /** spec.affinity.podAntiAffinity, when present. */
  readonly podAntiAffinity?: PodAffinityRules;
  /** spec.topologySpreadConstraints, when any. */
  readonly topologySpread?: readonly TopologySpreadConstraint[];
  /** The PersistentVolumeClaims its volumes use (persistentVolumeClaim and generic ephemeral volumes), when any. */
  readonly claims?: readonly PodClaim[];
  /** Inline GCE PD, AWS EBS, iSCSI and RBD volumes, when any (VolumeRestrictions' disk conflicts). */
  readonly inlineDisks?: readonly InlineDisk[];
  /**
   * Set by the scheduler only, on the copy it places: the claims resolved against the snapshot's storage (ADR 0070).
   * The fit filter reads it; its key is part of the shape key.
   */
  readonly volumes?: ResolvedVolumes;
  /** The training job's model, when it states one (TrainingJob spec.model, ADR 0188): the gang choice's step times. */
  readonly trainingModel?: TrainingModel;
}

export interface TopologyConstraint {
  /** All members must share a domain of this level; the gang waits rather than span more. */
  readonly required?: TopologyLevel;
  /** Try hard to share a domain of this level, but span wider rather than wait. */
  readonly preferred?: TopologyLevel;
}

export interface GangSpec {
  readonly name: string;
  /** Fewer than minMember placed = nothing placed. */
  readonly minMember: number;
  readonly members: readonly PodSpec[];
  readonly topology: TopologyConstraint;
  readonly priority: number;
  readonly queue: string;
}

export const wholeGpus = (r: PodRequest): number => (r.gpuMilli >= 1000 ? r.gpuCount : 0);
export const totalGpuMilli = (r: PodRequest): number => r.gpuCount * r.gpuMilli;

export function makePod(id: string, request: Partial<PodRequest> & { gpuCount?: number }, extra: Partial<Omit<PodSpec, 'id' | 'request'>> = {}): PodSpec {
  const gpuCount = request.gpuCount ?? 0;
  const base: PodRequest = {
    cpuMilli: request.cpuMilli ?? 1000,
    memoryMiB: request.memoryMiB ?? 1024,
    gpuCount,
    gpuMilli: gpuCount === 0 ? 0 : (request.gpuMilli ?? 1000),
  };
  const withMem = request.gpuMemoryMiB === undefined ? base : { ...base, gpuMemoryMiB: request.gpuMemoryMiB };
  const scalar = request.scalar === undefined ? undefined : nonZero(request.scalar);
  return {
    id,
    request: scalar === undefined ? withMem : { ...withMem, scalar },
    gpuModels: extra.gpuModels ?? [],
    minComputeCapability: extra.minComputeCapability ?? 0,
    priority: extra.priority ?? 0,
    queue: extra.queue ?? 'default',
    tolerations: extra.tolerations ?? [],
    nodeSelector: extra.nodeSelector ?? {},
    ...(extra.gang === undefined ? {} : { gang: extra.gang }),
    ...(extra.nodeAffinity === undefined ? {} : { nodeAffinity: extra.nodeAffinity }),
    ...(extra.hostPorts === undefined || extra.hostPorts.length === 0 ? {} : { hostPorts: extra.hostPorts }),
    ...(extra.schedulingGates === undefined || extra.schedulingGates.length === 0 ? {} : { schedulingGates: extra.schedulingGates }),
    ...(extra.preemptionPolicy === 'Never' ? { preemptionPolicy: 'Never' as const } : {}),
    ...(extra.namespace === undefined ? {} : { namespace: extra.namespace }),
    ...(extra.labels === undefined || Object.keys(extra.labels).length === 0 ? {} : { labels: extra.labels }),
    ...(extra.podAffinity === undefined ? {} : { podAffinity: extra.podAffinity }),
    ...(extra.podAntiAffinity === undefined ? {} : { podAntiAffinity: extra.podAntiAffinity }),
    ...(extra.topologySpread === undefined || extra.topologySpread.length === 0 ? {} : { topologySpread: extra.topologySpread }),
    ...(extra.claims === undefined || extra.claims.length === 0 ? {} : { claims: extra.claims }),
    ...(extra.inlineDisks === undefined || extra.inlineDisks.length === 0 ? {} : { inlineDisks: extra.inlineDisks }),
    ...(extra.trainingModel === undefined ? {} : { trainingModel: extra.trainingModel }),
  };
}

/** The entries above 0, or undefined when none are (kube-scheduler skips zero requests). */
function nonZero(r: Readonly<Record<string, number>>): Readonly<Record<string, number>> | undefined {
  let out: Record<string, number> | undefined;
  for (const k of Object.keys(r).sort()) {
    const v = r[k] as number;
    if (v > 0) (out ??= {})[k] = v;
  }
  return out;
}
