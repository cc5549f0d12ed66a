/**
 * Names and labels of what the InferenceService controller creates. Replica pods are named by template hash and
 * slot (`<service>-<hash>-<slot>`), so a rolling update creates new names beside the old ones and never reuses a
 * name still held by a terminating pod of another template.
 */
import { LABEL } from '../../api/wire.ts';

export const serviceName = (isvc: string): string => isvc;
export const replicaPodName = (isvc: string, hash: string, slot: number): string => `${isvc}-${hash}-${slot}`;
/** A worker of a multi-pod replica: its leader's name and its index (LWS's `<leader>-<index>`). */
export const workerPodName = (leader: string, index: number): string => `${leader}-${index}`;
/** The headless Service of a multi-pod service's pods: their DNS subdomain. */
export const groupServiceName = (isvc: string): string => `${isvc}-pods`;
/** The role label of a worker pod; leaders keep `replica`, so the Service and `/scale` select leaders only. */
export const WORKER_ROLE = 'worker';

/** The pods of a service (every template): what the Service and the scale subresource's selector select. */
export const replicaSelector = (isvc: string): Record<string, string> => ({ [LABEL.inferenceService]: isvc, [LABEL.role]: 'replica' });
export const selectorString = (isvc: string): string => `${LABEL.inferenceService}=${isvc},${LABEL.role}=replica`;

/**
 * FNV-1a (32 bit) of a string as 8 hex digits: a stable short name for a pod template. Not a security hash; a
 * collision would only make two templates look alike (the rollout would then not replace a pod).
 */
export function templateHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}
