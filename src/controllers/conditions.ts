/** metav1.Condition lists, kept the way Kubernetes does: one per type, lastTransitionTime moves only on a status change. */
import type { Condition } from '../api/schema/common.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface ConditionUpdate {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
}

const MAX_MESSAGE = 32768;

/** A reason that matches the metav1.Condition pattern (CamelCase, letters first). */
export function safeReason(reason: string): string {
  const r = reason.replace(/[^A-Za-z0-9_,:]/g, '');
  return /^[A-Za-z]/.test(r) ? r.replace(/[,:]+$/, '') : `R${r}`;
}

/** Sets (or replaces) one condition; the others keep their order. */
export function setCondition(list: readonly Condition[] | undefined, u: ConditionUpdate, nowIso: string, observedGeneration?: number): Condition[] {
  const out = [...(list ?? [])];
  const i = out.findIndex((c) => c.type === u.type);
  const prev = i >= 0 ? out[i] : undefined;
  const next: Condition = {
    type: u.type,
    status: u.status,
    reason: safeReason(u.reason),
    message: u.message.length > MAX_MESSAGE ? `${u.message.slice(0, MAX_MESSAGE - 1)}…` : u.message,
    lastTransitionTime: prev !== undefined && prev.status === u.status ? prev.lastTransitionTime : nowIso,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  };
  if (i >= 0) out[i] = next;
  else out.push(next);
  return out;
}

/** Sets a condition only if it exists already (so that conditions which never applied are not listed as False). */
export function setIfPresent(list: readonly Condition[] | undefined, u: ConditionUpdate, nowIso: string, observedGeneration?: number): Condition[] {
  return (list ?? []).some((c) => c.type === u.type) ? setCondition(list, u, nowIso, observedGeneration) : [...(list ?? [])];
}

export function findCondition(list: readonly Condition[] | undefined, type: string): Condition | undefined {
  return (list ?? []).find((c) => c.type === type);
}
