/**
 * What the time-based replay schedules: units (a pod, or a gang placed all-or-nothing) with an arrival,
 * a run time once placed and a deadline after which a still-waiting unit is abandoned. Adapters turn each
 * trace format into units; the rules of each are in its comment.
 */
import { makePod, type GangSpec, type PodSpec } from '../../core/model/pod.ts';
import type { WorkloadUnit } from '../../formats/workload-file.ts';
import { toPodSpec } from '../fgd/workload.ts';
import type { TraceJob } from '../../sim/trace/philly.ts';
import type { TracePod } from '../../sim/trace/types.ts';

export interface ReplayUnit {
  readonly id: string;
  readonly arrivalMs: number;
  /** Run time once placed; Infinity = until the end of the replay. */
  readonly durationMs: number;
  /** Still waiting at this time → abandoned ("never placed"); Infinity = waits to the end. */
  readonly deadlineMs: number;
  readonly pod?: PodSpec;
  readonly gang?: GangSpec;
}

export const unitPods = (u: ReplayUnit): readonly PodSpec[] => (u.gang !== undefined ? u.gang.members : u.pod !== undefined ? [u.pod] : []);

/**
 * Alibaba openb pods with timestamps: arrival = creation_time; run time = deletion_time − scheduled_time
 * (− creation_time for pods the trace never ran); a pod not placed by its deletion_time is abandoned.
 */
export function openbUnits(pods: readonly TracePod[]): ReplayUnit[] {
  return pods
    .filter((p) => p.creationS !== undefined && p.deletionS !== undefined)
    .map((p) => {
      const created = p.creationS as number;
      const deleted = p.deletionS as number;
      return { id: p.name, arrivalMs: created * 1000, durationMs: (deleted - (p.scheduledS ?? created)) * 1000, deadlineMs: deleted * 1000, pod: toPodSpec(p) };
    });
}

/** CPU and memory a Philly job asks per GPU (the trace has neither): 4 cores and 32 GiB. */
export const PHILLY_CPU_PER_GPU = 4000;
export const PHILLY_MEM_PER_GPU = 32_768;

/**
 * Philly-style jobs: a job of n ≤ `gpusPerPod` GPUs is one pod; a wider job is a gang of ⌈n / gpusPerPod⌉
 * pods (the last one takes the remainder), preferring one rack. Jobs wait as long as it takes.
 */
export function jobUnits(jobs: readonly TraceJob[], gpusPerPod = 8): ReplayUnit[] {
  return jobs.map((j) => {
    const base = { id: j.name, arrivalMs: j.submitS * 1000, durationMs: j.durationS * 1000, deadlineMs: Number.POSITIVE_INFINITY };
    const podOf = (id: string, gpus: number, gang?: string): PodSpec =>
      makePod(id, { cpuMilli: PHILLY_CPU_PER_GPU * gpus, memoryMiB: PHILLY_MEM_PER_GPU * gpus, gpuCount: gpus, gpuMilli: 1000 }, { queue: j.group, ...(gang === undefined ? {} : { gang }) });
    if (j.gpus <= gpusPerPod) return { ...base, pod: podOf(j.name, j.gpus) };
    const n = Math.ceil(j.gpus / gpusPerPod);
    const members = Array.from({ length: n }, (_, i) => podOf(`${j.name}-${i}`, i === n - 1 ? j.gpus - gpusPerPod * (n - 1) : gpusPerPod, j.name));
    return { ...base, gang: { name: j.name, minMember: n, members, topology: { preferred: 'rack' }, priority: 0, queue: j.group } };
  });
}

/** Units of our YAML workload file: arrivalSec / durationSec (absent: 0 / runs to the end), no deadline. */
export function yamlUnits(units: readonly WorkloadUnit[]): ReplayUnit[] {
  return units.map((u) => {
    const base = { arrivalMs: u.timing.arrivalSec * 1000, durationMs: u.timing.durationSec === undefined ? Number.POSITIVE_INFINITY : u.timing.durationSec * 1000, deadlineMs: Number.POSITIVE_INFINITY };
    return u.kind === 'pod' ? { ...base, id: u.pod.id, pod: u.pod } : { ...base, id: u.gang.name, gang: u.gang };
  });
}
