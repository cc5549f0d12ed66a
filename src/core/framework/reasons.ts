/**
 * Why a node cannot take a pod, as small integer codes so that per-node results fit in a byte array and
 * aggregate cheaply into an explanation. Texts are written for the person reading `sits explain`.
 */
import type { PodSpec } from '../model/pod.ts';
import type { NodeState } from '../snapshot/cluster-state.ts';
import { formatComputeCapability } from '../model/gpu.ts';
import { untoleratedTaint } from '../model/taints.ts';

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
  // kube-scheduler's per-node plugins (ADR 0049), worded as kube-scheduler words them.
  NodeAffinity: 17,
  NodePorts: 18,
  InsufficientResource: 19,
  // InterPodAffinity and PodTopologySpread (ADR 0054); 25–29 kept for them, 30–39 for the volume plugins.
  PodAffinity: 20,
  PodAntiAffinity: 21,
  ExistingAntiAffinity: 22,
  TopologySpread: 23,
  TopologySpreadLabel: 24,
  // VolumeRestrictions, VolumeBinding and VolumeZone (ADR 0070), worded as kube-scheduler words them.
  VolumeNodeConflict: 30,
  VolumeBindConflict: 31,
  VolumeZoneConflict: 32,
  ReadWriteOncePodConflict: 33,
  DiskConflict: 34,
} as const;
export type ReasonCode = (typeof Reason)[keyof typeof Reason];
/** One past the highest code (codes 25–29 are kept for inter-pod constraints: no reason has them yet). */
export const REASON_COUNT = 35;
/** Size of per-reason count arrays: room for every code a filter may return, including the kept range. */
export const REASON_SLOTS = 64;

/** `resolvable`: preemption could help (resources held by pods); otherwise only a cluster change could. */
export interface ReasonInfo {
  readonly code: ReasonCode;
  readonly resolvable: boolean;
  readonly text: (pod: PodSpec) => string;
  /**
   * For reasons whose words depend on the node (which taint, which resource): the text for one node, computed
   * only when an explanation is written; nodes are then counted per distinct text, as kube-scheduler does.
   */
  readonly detail?: (pod: PodSpec, node: NodeState) => string;
}

const models = (p: PodSpec): string => p.gpuModels.join('|');

const REASON_LIST: readonly ReasonInfo[] = [
  { code: Reason.Fits, resolvable: false, text: () => 'fits' },
  { code: Reason.Unschedulable, resolvable: false, text: () => 'node cordoned (unschedulable)' },
  {
    code: Reason.Taint,
    resolvable: false,
    text: () => 'untolerated taint',
    detail: (p, n) => {
      const t = untoleratedTaint(p.tolerations, n.spec.taints);
      return t === undefined ? 'untolerated taint' : `node(s) had untolerated taint {${t.key}: ${t.value ?? ''}}`;
    },
  },
  // kube-scheduler's NodeAffinity covers nodeSelector too: one text, so both count as one reason.
  { code: Reason.NodeSelector, resolvable: false, text: () => "node(s) didn't match Pod's node affinity/selector" },
  { code: Reason.TooManyPods, resolvable: true, text: () => 'too many pods' },
  { code: Reason.Cpu, resolvable: true, text: () => 'insufficient cpu' },
  { code: Reason.Memory, resolvable: true, text: () => 'insufficient memory' },
  { code: Reason.NoGpus, resolvable: false, text: () => 'no GPUs on node' },
  { code: Reason.GpuModel, resolvable: false, text: (p) => `GPU model not allowed (needs ${models(p)})` },
  { code: Reason.ComputeCapability, resolvable: false, text: (p) => `GPU model not allowed (needs ${formatComputeCapability(p.minComputeCapability)})` },
  { code: Reason.Gpu, resolvable: true, text: () => 'insufficient nvidia.com/gpu' },
  { code: Reason.GpuMemory, resolvable: false, text: () => 'insufficient GPU memory per device' },
  { code: Reason.GpuUnhealthy, resolvable: false, text: () => 'GPUs unhealthy', detail: (_p, n) => unhealthyText(n) },
  { code: Reason.OutsideDomain, resolvable: false, text: () => 'outside the topology domain being tried' },
  { code: Reason.SplitsDomain, resolvable: true, text: () => 'would split the NVLink domain (required)' },
  { code: Reason.Reserved, resolvable: true, text: () => 'held by a reservation for a waiting gang' },
  { code: Reason.TooFewGpus, resolvable: false, text: (p) => `with fewer GPUs than the ${p.request.gpuCount} requested` },
  { code: Reason.NodeAffinity, resolvable: false, text: () => "node(s) didn't match Pod's node affinity/selector" },
  { code: Reason.NodePorts, resolvable: true, text: () => "node(s) didn't have free ports for the requested pod ports" },
  {
    code: Reason.InsufficientResource,
    resolvable: true,
    text: () => 'Insufficient resources',
    detail: (p, n) => `Insufficient ${insufficientScalar(p, n) ?? 'resources'}`,
  },
  // kube: UnschedulableAndUnresolvable (no eviction makes a matching pod appear), then Unschedulable twice.
  { code: Reason.PodAffinity, resolvable: false, text: () => "node(s) didn't match pod affinity rules" },
  { code: Reason.PodAntiAffinity, resolvable: true, text: () => "node(s) didn't match pod anti-affinity rules" },
  { code: Reason.ExistingAntiAffinity, resolvable: true, text: () => "node(s) didn't satisfy existing pods anti-affinity rules" },
  { code: Reason.TopologySpread, resolvable: true, text: () => "node(s) didn't match pod topology spread constraints" },
  { code: Reason.TopologySpreadLabel, resolvable: false, text: () => "node(s) didn't match pod topology spread constraints (missing required label)" },
  // kube: VolumeBinding and VolumeZone filters fail UnschedulableAndUnresolvable; a ReadWriteOncePod conflict is
  // Unschedulable (preempting the claim's user frees it).
  { code: Reason.VolumeNodeConflict, resolvable: false, text: () => 'node(s) had volume node affinity conflict' },
  { code: Reason.VolumeBindConflict, resolvable: false, text: () => "node(s) didn't find available persistent volumes to bind" },
  { code: Reason.VolumeZoneConflict, resolvable: false, text: () => 'node(s) had no available volume zone' },
  { code: Reason.DiskConflict, resolvable: true, text: () => 'node(s) had no available disk' },
  {
    code: Reason.ReadWriteOncePodConflict,
    resolvable: true,
    text: () => 'node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode',
  },
];

/** Reason information by code (`REASONS[code]`); codes of the kept ranges have none. */
export const REASONS: readonly (ReasonInfo | undefined)[] = (() => {
  const out = new Array<ReasonInfo | undefined>(REASON_COUNT).fill(undefined);
  for (const r of REASON_LIST) out[r.code] = r;
  return out;
})();

/** 'GPUs unhealthy', with the reasons the reporters gave (a quarantine's) when there are any. */
export function unhealthyText(node: NodeState): string {
  const why = node.healthReasons;
  if (why === undefined || why.size === 0) return 'GPUs unhealthy';
  const parts: string[] = [];
  for (let g = 0; g < node.gpuUsable.length; g++) {
    const r = node.gpuUsable[g] === 0 ? why.get(g) : undefined;
    if (r !== undefined) parts.push(`GPU ${g} ${r}`);
  }
  return parts.length === 0 ? 'GPUs unhealthy' : `GPUs unhealthy (${parts.join('; ')})`;
}

/** The first requested resource beyond cpu/memory/GPUs the node lacks: ephemeral-storage first, as kube checks it, then by name. */
export function insufficientScalar(pod: PodSpec, node: NodeState): string | undefined {
  const want = pod.request.scalar;
  if (want === undefined) return undefined;
  const alloc = node.spec.scalar;
  const used = node.scalarUsed;
  const short = (k: string): boolean => (used?.get(k) ?? 0) + (want[k] as number) > (alloc?.[k] ?? 0);
  if (want[EPHEMERAL] !== undefined && short(EPHEMERAL)) return EPHEMERAL;
  for (const k in want) if (k !== EPHEMERAL && short(k)) return k;
  return undefined;
}
const EPHEMERAL = 'ephemeral-storage';
