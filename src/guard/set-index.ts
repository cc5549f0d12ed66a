/**
 * Lookups over the set of objects submitted together, built once per set and shared by every object and rule
 * (keyed by the `ctx.objects` array): cross-object rules stay linear in the size of the set.
 */
import { kindOf, nameOf, namespaceOf } from './pod-specs.ts';
import type { KubeObject, RuleContext } from './rule.ts';

const memo = new WeakMap<readonly KubeObject[], Map<string, unknown>>();

/** `build(objects)` once per set of objects and key. */
export function perSet<T>(ctx: RuleContext, key: string, build: (objects: readonly KubeObject[]) => T): T {
  let m = memo.get(ctx.objects);
  if (m === undefined) {
    m = new Map();
    memo.set(ctx.objects, m);
  }
  if (m.has(key)) return m.get(key) as T;
  const v = build(ctx.objects);
  m.set(key, v);
  return v;
}

/** Kinds without a namespace, looked up by name alone. */
const CLUSTER_SCOPED = new Set(['PriorityClass', 'Namespace', 'Node', 'PersistentVolume', 'StorageClass', 'ClusterRole', 'ClusterRoleBinding']);

const refKey = (kind: string, namespace: string, name: string): string => (CLUSTER_SCOPED.has(kind) ? `${kind}//${name}` : `${kind}/${namespace}/${name}`);

/** The object of that kind, namespace and name in the set (the last one when it is there twice), or undefined. */
export function findObject(ctx: RuleContext, kind: string, namespace: string, name: string): KubeObject | undefined {
  const idx = perSet(ctx, 'objects-by-ref', (objects) => {
    const m = new Map<string, KubeObject>();
    for (const o of objects) if (typeof o === 'object' && o !== null) m.set(refKey(kindOf(o), namespaceOf(o), nameOf(o)), o);
    return m;
  });
  return idx.get(refKey(kind, namespace, name));
}

/** Every object of one kind in the set. */
export function objectsOfKind(ctx: RuleContext, kind: string): readonly KubeObject[] {
  const idx = perSet(ctx, 'objects-by-kind', (objects) => {
    const m = new Map<string, KubeObject[]>();
    for (const o of objects) {
      if (typeof o !== 'object' || o === null) continue;
      const k = kindOf(o);
      const l = m.get(k);
      if (l === undefined) m.set(k, [o]);
      else l.push(o);
    }
    return m;
  });
  return idx.get(kind) ?? [];
}
