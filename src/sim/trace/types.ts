/** What trace loaders produce: plain records with the line they came from, before any simulation choice. */

export interface TraceNode {
  readonly name: string;
  readonly cpuMilli: number;
  readonly memoryMiB: number;
  readonly gpuCount: number;
  /** GPU model string as the trace spells it; empty when the node has no GPU. */
  readonly model: string;
  readonly line: number;
}

export interface TracePod {
  readonly name: string;
  readonly cpuMilli: number;
  readonly memoryMiB: number;
  /** Number of GPU devices; 0 for a CPU-only pod. */
  readonly gpuCount: number;
  /** Per-device share, 1..1000 milli; 0 for a CPU-only pod. */
  readonly gpuMilli: number;
  /** Allowed GPU models; empty = any. */
  readonly gpuModels: readonly string[];
  /** Seconds, relative to the trace's origin; absent when the trace has no timestamps. */
  readonly creationS?: number;
  readonly deletionS?: number;
  /** Absent for pods the trace never ran (Pending). */
  readonly scheduledS?: number;
  /** Gang (all-or-nothing group) the pod belongs to, for workloads that have them. */
  readonly gang?: string;
  readonly line: number;
}

/** A pod list and the file it came from. */
export interface PodTrace {
  readonly file: string;
  readonly pods: readonly TracePod[];
}

export const podGpuMilli = (p: Pick<TracePod, 'gpuCount' | 'gpuMilli'>): number => p.gpuCount * p.gpuMilli;
