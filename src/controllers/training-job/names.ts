/**
 * Names of what the TrainingJob controller creates. Labels, annotations and the finalizer it writes are part of
 * the shared wire format in api/wire.ts.
 */
import { LABEL } from '../../api/wire.ts';

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

export const replicaSelector = (job: string): Record<string, string> => ({ [LABEL.trainingJob]: job, [LABEL.role]: 'replica' });
export const selectorString = (job: string): string => `${LABEL.trainingJob}=${job},${LABEL.role}=replica`;

/** The claim the controller creates for spec.checkpoint.volume.claimTemplate. */
export const checkpointClaimName = (job: string): string => `${job}-checkpoint`;
