/**
 * Names and labels of what the InferenceService controller creates. Replica pods are named by template hash and
 * slot (`<service>-<hash>-<slot>`), so a rolling update creates new names beside the old ones and never reuses a
 * name still held by a terminating pod of another template.
 */
import { LABEL } from '../../api/wire.ts';

export const serviceName = (isvc: string): string => isvc;
export const replicaPodName = (isvc: string, hash: string, slot: number): string => `${isvc}-${hash}-${slot}`;

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
