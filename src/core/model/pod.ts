/** Pods, gangs (PodGroups) and their placement constraints. Integer units: cpuMilli, memoryMiB, gpuMilli. */
import type { Taint } from './node.ts';
import type { TopologyLevel } from './topology.ts';

export interface Toleration {
  readonly key?: string;
  readonly operator?: 'Exists' | 'Equal';
  readonly value?: string;
  readonly effect?: Taint['effect'];
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
  return {
    id,
    request: request.gpuMemoryMiB === undefined ? base : { ...base, gpuMemoryMiB: request.gpuMemoryMiB },
    gpuModels: extra.gpuModels ?? [],
    minComputeCapability: extra.minComputeCapability ?? 0,
    priority: extra.priority ?? 0,
    queue: extra.queue ?? 'default',
    tolerations: extra.tolerations ?? [],
    nodeSelector: extra.nodeSelector ?? {},
    ...(extra.gang === undefined ? {} : { gang: extra.gang }),
  };
}
