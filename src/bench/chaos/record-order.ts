/**
 * The order the chaos bench records pod events in. A reflector's relist after a watch gap hands over every change of
 * the gap at once, in key order: a probe pod bound during the gap may come before the update that ended the pod
 * whose GPU it took. Recorded in the order etcd made them (resourceVersion), the checker sees what happened.
 */
import type { V1Pod } from '@kubernetes/client-node';

/** Pod events in the order etcd made them (a stable sort: events of one revision keep their order). */
export function inRevisionOrder<T extends { readonly rv: bigint }>(events: readonly T[]): T[] {
  return [...events].sort((a, b) => (a.rv < b.rv ? -1 : a.rv > b.rv ? 1 : 0));
}

/** The object's resourceVersion as a number (etcd's revision here; 0 when absent or not a number). */
export function revisionOf(p: V1Pod): bigint {
  const rv = p.metadata?.resourceVersion ?? '';
  return /^\d+$/.test(rv) ? BigInt(rv) : 0n;
}

