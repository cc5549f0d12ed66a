/**
 * Why a node cannot take a pod, as small integer codes so that per-node results fit in a byte array and
 * aggregate cheaply into an explanation. Texts are written for the person reading `sits explain`.
 */
import type { PodSpec } from '../model/pod.ts';
import { formatComputeCapability } from '../model/gpu.ts';

export const Reason = {
  Fits: 0,
  Unschedulable: 1,
  Taint: 2,
  NodeSelector: 3,
  TooManyPods: 4,
  Cpu: 5,
  Memory: 6,
  NoGpus: 7,
  GpuModel: 8,
  ComputeCapability: 9,
  Gpu: 10,
  GpuMemory: 11,
  GpuUnhealthy: 12,
  OutsideDomain: 13,
  SplitsDomain: 14,
  Reserved: 15,
  TooFewGpus: 16,
} as const;
export type ReasonCode = (typeof Reason)[keyof typeof Reason];
export const REASON_COUNT = 17;

/** `resolvable`: preemption could help (resources held by pods); otherwise only a cluster change could. */
export interface ReasonInfo {
  readonly code: ReasonCode;
  readonly resolvable: boolean;
  readonly text: (pod: PodSpec) => string;
}

const models = (p: PodSpec): string => p.gpuModels.join('|');

export const REASONS: readonly ReasonInfo[] = [
  { code: Reason.Fits, resolvable: false, text: () => 'fits' },
  { code: Reason.Unschedulable, resolvable: false, text: () => 'node cordoned (unschedulable)' },
  { code: Reason.Taint, resolvable: false, text: () => 'untolerated taint' },
  { code: Reason.NodeSelector, resolvable: false, text: () => "node selector doesn't match" },
  { code: Reason.TooManyPods, resolvable: true, text: () => 'too many pods' },
  { code: Reason.Cpu, resolvable: true, text: () => 'insufficient cpu' },
  { code: Reason.Memory, resolvable: true, text: () => 'insufficient memory' },
  { code: Reason.NoGpus, resolvable: false, text: () => 'no GPUs on node' },
  { code: Reason.GpuModel, resolvable: false, text: (p) => `GPU model not allowed (needs ${models(p)})` },
  { code: Reason.ComputeCapability, resolvable: false, text: (p) => `GPU model not allowed (needs ${formatComputeCapability(p.minComputeCapability)})` },
  { code: Reason.Gpu, resolvable: true, text: () => 'insufficient nvidia.com/gpu' },
  { code: Reason.GpuMemory, resolvable: false, text: () => 'insufficient GPU memory per device' },
  { code: Reason.GpuUnhealthy, resolvable: false, text: () => 'GPUs unhealthy' },
  { code: Reason.OutsideDomain, resolvable: false, text: () => 'outside the topology domain being tried' },
  { code: Reason.SplitsDomain, resolvable: true, text: () => 'would split the NVLink domain (required)' },
  { code: Reason.Reserved, resolvable: true, text: () => 'held by a reservation for a waiting gang' },
  { code: Reason.TooFewGpus, resolvable: false, text: (p) => `with fewer GPUs than the ${p.request.gpuCount} requested` },
];
