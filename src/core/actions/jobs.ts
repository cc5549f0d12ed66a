/** Jobs as the queueing layer sees them: a gang waiting in a queue, or a gang running on the cluster. */
import type { GangSpec } from '../model/pod.ts';
import type { Resources } from '../queue/model.ts';

export interface QueuedJob {
  readonly id: string;
  readonly queue: string;
  readonly priority: number;
  readonly arrivalMs: number;
  /** Submission order among jobs of equal arrival (the queue sort's last key before the id); default 0. */
  readonly seq?: number;
  /** Every job is a gang; a single pod is a gang of one. */
  readonly gang: GangSpec;
  /** Runtime estimate (user-given or learned); used by backfill and ETAs. */
  readonly estRuntimeMs: number;
  /** PriorityClass name, checked against the queue's priorityClasses. */
  readonly priorityClass?: string;
  /** Namespace the job was submitted from, checked against the queue's namespaces (unset: `default`). */
  readonly namespace?: string;
}

export interface RunningJob {
  readonly id: string;
  readonly queue: string;
  readonly priority: number;
  readonly startMs: number;
  readonly estEndMs: number;
  readonly podIds: readonly string[];
  readonly resources: Resources;
  readonly gpuModel?: string;
  /** In a checkpoint or all-reduce window until then: never interrupted before it (seed 001 §4.2). */
  readonly criticalUntilMs?: number;
  /** Last completed checkpoint: work since then is what preemption destroys. */
  readonly lastCheckpointMs?: number;
  readonly preemptible: boolean;
  /** Can take a checkpoint when asked (a TrainingJob with a checkpoint policy): preemption asks first (ADR 0093). */
  readonly checkpointable?: boolean;
  /** When SITS asked it for a checkpoint before a preemption or a move (annotation `checkpoint-requested`). */
  readonly checkpointRequestedMs?: number;
  /** The time of the preemption request whose checkpoint failed (annotation `checkpoint-failed`): it will not come. */
  readonly checkpointFailedMs?: number;
  /** A checkpoint it started on its own is being written: never cut in the middle of it. */
  readonly checkpointInFlight?: boolean;
}

export function jobResources(job: QueuedJob): Resources {
  let gpuMilli = 0;
  let cpuMilli = 0;
  let memoryMiB = 0;
  const members = job.gang.members.slice(0, Math.max(job.gang.minMember, job.gang.members.length));
  for (const m of members) {
    gpuMilli += m.request.gpuCount * m.request.gpuMilli;
    cpuMilli += m.request.cpuMilli;
    memoryMiB += m.request.memoryMiB;
  }
  return { gpuMilli, cpuMilli, memoryMiB };
}

/** What a host knows of a job it saw start, beyond the cycle's result. */
export interface StartedJobFacts {
  /** When it is expected to end (default: its start plus its runtime estimate). */
  readonly estEndMs?: number | undefined;
  /** The GPU model of the nodes it runs on. */
  readonly gpuModel?: string | undefined;
  readonly lastCheckpointMs?: number | undefined;
  readonly checkpointable?: boolean | undefined;
}

/**
 * The running-job record of a job a cycle started at `startMs` on `placements`: what every host (the live ETA
 * publisher, the simulators, the benches) keeps of it for the next cycles. Preemptible, as SITS binds every job.
 */
export function startedJob(job: QueuedJob, placements: readonly { readonly podId: string }[], startMs: number, facts: StartedJobFacts = {}): RunningJob {
  return {
    id: job.id,
    queue: job.queue,
    priority: job.priority,
    startMs,
    estEndMs: facts.estEndMs ?? startMs + job.estRuntimeMs,
    podIds: placements.map((p) => p.podId),
    resources: jobResources(job),
    ...(facts.gpuModel === undefined ? {} : { gpuModel: facts.gpuModel }),
    preemptible: true,
    ...(facts.lastCheckpointMs === undefined ? {} : { lastCheckpointMs: facts.lastCheckpointMs }),
    ...(facts.checkpointable === true ? { checkpointable: true } : {}),
  };
}

/** GPU-milliseconds of work a preemption would destroy: since the last checkpoint, or since start. */
export function lostWork(job: RunningJob, nowMs: number): number {
  return Math.max(0, nowMs - Math.max(job.startMs, job.lastCheckpointMs ?? job.startMs)) * (job.resources.gpuMilli / 1000);
}

/** A gang with a `preemptionPolicy: Never` member (kube's PodEligibleToPreemptOthers says no to it). */
export function hasNeverMember(job: QueuedJob): boolean {
  return job.gang.members.some((m) => m.preemptionPolicy === 'Never');
}

/** The queue of a job that names none: undeclared, it has no quota. */
export const DEFAULT_QUEUE = 'default';
