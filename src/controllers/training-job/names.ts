/**
 * Names, labels and annotations of what the TrainingJob controller creates. The pod/node format the scheduler
 * reads (pod-group and queue labels, GPU annotations, scheduler name) is the one documented in
 * docs/kubernetes.md; it is repeated here as values because controllers do not import the Kubernetes adapters.
 */
import { API_GROUP, API_GROUP_VERSION } from '../../api/schema/common.ts';

const P = API_GROUP;

/** What the scheduler reads (docs/kubernetes.md). */
export const SCHEDULER_FORMAT = {
  schedulerName: 'sits-scheduler',
  podGroupLabel: `${P}/pod-group`,
  queueLabel: `${P}/queue`,
  gpuModelsAnnotation: `${P}/gpu-models`,
  minComputeCapabilityAnnotation: `${P}/min-compute-capability`,
  gpuMemoryAnnotation: `${P}/gpu-memory`,
  /** Written by the scheduler while it binds a gang (plan phase). */
  assignedNodeAnnotation: `${P}/assigned-node`,
} as const;

export const TJ_LABEL = {
  /** Every object the controller creates for a job carries the job's name here. */
  job: `${P}/training-job`,
  /** `replica` (a torchrun node) or `probe` (a placeholder that asks the scheduler whether more would fit). */
  role: `${P}/role`,
  rank: `${P}/rank`,
  attempt: `${P}/attempt`,
} as const;

export const TJ_ANNOTATION = {
  worldSize: `${P}/world-size`,
} as const;

export const FINALIZER = `${P}/training-job-cleanup`;
export const TRAINING_JOB_API_VERSION = API_GROUP_VERSION;
export const TRAINING_JOB_KIND = 'TrainingJob';
export const GPU_RESOURCE = 'nvidia.com/gpu';

/** The container SITS injects its environment into when the user brings a pod template. */
export const TRAINER_CONTAINER = 'trainer';

export type PodRole = 'replica' | 'probe';

export const replicaPodName = (job: string, rank: number): string => `${job}-${rank}`;
/** A dot cannot appear in a TrainingJob that has a Service, so probe names never collide with another job's replicas. */
export const probePodName = (job: string, i: number): string => `${job}.grow-${i}`;
export const serviceName = (job: string): string => job;
export const podGroupName = (job: string): string => job;
export const probeGroupName = (job: string): string => `${job}.grow`;

/** `<pod>.<service>.<namespace>.svc`: resolvable in any cluster domain through the pod's DNS search path. */
export const podDnsName = (job: string, rank: number, namespace: string): string => `${replicaPodName(job, rank)}.${serviceName(job)}.${namespace}.svc`;

export const replicaSelector = (job: string): Record<string, string> => ({ [TJ_LABEL.job]: job, [TJ_LABEL.role]: 'replica' });
export const selectorString = (job: string): string => `${TJ_LABEL.job}=${job},${TJ_LABEL.role}=replica`;
