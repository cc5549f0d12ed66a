/**
 * Fit: can this node hold this pod right now? Static checks come first so that an explanation names the
 * reason a person can act on (a model mismatch, not "insufficient GPU" on a node that could never fit).
 *
 * Rule, in order: cordoned (unless the pod tolerates node.kubernetes.io/unschedulable:NoSchedule) → taints
 * with NoSchedule/NoExecute not tolerated → node selector → required node affinity → when GPUs are
 * requested: no GPUs on the node → GPU model not in the allowed list → compute capability below the minimum →
 * GPU memory per device too small → fewer usable GPUs than requested (unhealthy when the node has enough
 * devices, else insufficient GPUs) → host ports → pod count → CPU → memory → other resources
 * (ephemeral-storage, hugepages, extended) → GPUs: one fractional or whole device needs a usable GPU with
 * free ≥ gpuMilli; n devices need n usable GPUs with free ≥ gpuMilli. These are kube-scheduler's
 * NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts and NodeResourcesFit in one pass (ADR 0049); then,
 * for a pod whose claims the scheduler resolved, VolumeRestrictions, VolumeBinding and VolumeZone (ADR 0070).
 */
import type { NodeState } from '../../snapshot/cluster-state.ts';
import type { PodSpec } from '../../model/pod.ts';
import { insufficientScalar, Reason, type ReasonCode } from '../../framework/reasons.ts';
import { SUCCESS, type Plugin } from '../../framework/types.ts';
import { tolerates, UNSCHEDULABLE_TAINT } from '../../model/taints.ts';
import { affinityReadsNodeName, requiredAffinityMatches } from '../../model/node-affinity.ts';
import { nodePortsFit } from '../../model/host-ports.ts';
import { diskConflict, volumeFilter } from '../../framework/volume-binding.ts';

export { tolerates };

/** Number of usable GPUs on the node with at least `milli` free. */
export function gpusWithFree(node: NodeState, milli: number): number {
  const free = node.gpuFree;
  const usable = node.gpuUsable;
  let c = 0;
  for (let i = 0; i < free.length; i++) if (usable[i] === 1 && (free[i] as number) >= milli) c++;
  return c;
}

export function fitFilter(pod: PodSpec, node: NodeState): ReasonCode {
  const spec = node.spec;
  const r = pod.request;
  if (spec.unschedulable && !tolerates(pod.tolerations, UNSCHEDULABLE_TAINT)) return Reason.Unschedulable;
  for (const t of spec.taints) {
    if (t.effect !== 'PreferNoSchedule' && !tolerates(pod.tolerations, t)) return Reason.Taint;
  }
  for (const k in pod.nodeSelector) {
    if (spec.labels[k] !== pod.nodeSelector[k]) return Reason.NodeSelector;
  }
  if (pod.nodeAffinity !== undefined && !requiredAffinityMatches(pod.nodeAffinity, node)) return Reason.NodeAffinity;
  if (r.gpuCount > 0) {
    const gpus = spec.gpus;
    if (gpus.length === 0) return Reason.NoGpus;
    const model = gpus[0]?.model ?? '';
    if (pod.gpuModels.length > 0 && !pod.gpuModels.includes(model)) return Reason.GpuModel;
    if (pod.minComputeCapability > 0 && (gpus[0]?.computeCapability ?? 0) < pod.minComputeCapability) return Reason.ComputeCapability;
    if (r.gpuMemoryMiB !== undefined && r.gpuMemoryMiB > 0 && (gpus[0]?.memoryMiB ?? 0) > 0 && (gpus[0]?.memoryMiB ?? 0) < r.gpuMemoryMiB)
      return Reason.GpuMemory;
    // Fewer devices than requested can never fit (unresolvable); fewer healthy ones wait for repair.
    if (node.usableGpuCount() < r.gpuCount) return gpus.length >= r.gpuCount ? Reason.GpuUnhealthy : Reason.TooFewGpus;
  }
  if (pod.hostPorts !== undefined && !nodePortsFit(pod.hostPorts, node)) return Reason.NodePorts;
  if (node.podCount + 1 > spec.maxPods) return Reason.TooManyPods;
  if (node.cpuUsedMilli + r.cpuMilli > spec.cpuMilli) return Reason.Cpu;
  if (node.memUsedMiB + r.memoryMiB > spec.memoryMiB) return Reason.Memory;
  if (r.scalar !== undefined && insufficientScalar(pod, node) !== undefined) return Reason.InsufficientResource;
  if (r.gpuCount > 0 && gpusWithFree(node, r.gpuMilli) < r.gpuCount) return Reason.Gpu;
  // VolumeRestrictions, VolumeBinding, VolumeZone: after NodeResourcesFit, as in kube's filter order (ADR 0070).
  if (pod.inlineDisks !== undefined && diskConflict(pod.inlineDisks, node)) return Reason.DiskConflict;
  if (pod.volumes !== undefined) return volumeFilter(pod.volumes, node);
  return Reason.Fits;
}

export const fitPlugin = (): Plugin => ({
  name: 'fit',
  filter: fitFilter,
  readsNodeName: affinityReadsNodeName,
  preFilter(pod) {
    const r = pod.request;
    // The common case allocates nothing: it runs for every pod and every gang member of every attempt.
    if (r.gpuMilli <= 1000 && (r.gpuCount <= 1 || r.gpuMilli >= 1000) && r.cpuMilli >= 0 && r.memoryMiB >= 0 && r.gpuCount >= 0) return SUCCESS;
    const bad: string[] = [];
    if (r.gpuCount > 1 && r.gpuMilli < 1000) bad.push(`a fractional GPU request (${r.gpuMilli} milli) is only allowed for one device, not ${r.gpuCount}`);
    if (r.gpuMilli > 1000) bad.push(`gpuMilli ${r.gpuMilli} exceeds one device (1000)`);
    if (r.cpuMilli < 0 || r.memoryMiB < 0 || r.gpuCount < 0) bad.push('negative request');
    return bad.length === 0 ? { code: 'Success' } : { code: 'UnschedulableAndUnresolvable', reasons: bad, plugin: 'fit' };
  },
});
