/**
 * What the scheduler's informers keep of each watched object (client-go's informer `TransformFunc`, as
 * kube-scheduler uses it): the object without `metadata.managedFields`, its repeated strings shared. JSON.parse
 * makes a fresh copy of every string value, so 50,000 pods hold 50,000 copies of their image, tolerations,
 * scheduler name, namespace, node names…; the pool hands back one copy of each. Values are unchanged: only
 * where they live in memory.
 */
import { stripManagedFields, type KubeObject } from '../client/reflector.ts';

/** Strings longer than this are rarely repeated (and a pool entry would cost more than it saves). */
const MAX_POOLED_LENGTH = 96;
/** Metadata fields unique to one object: pooling them would only fill the pool. */
const UNIQUE_METADATA = new Set(['name', 'uid', 'resourceVersion', 'generateName', 'creationTimestamp', 'deletionTimestamp']);

/**
 * A bounded pool of strings in two generations: lookups hit either, new strings go to the young one, and when
 * it is full the old one is dropped (strings still in use were promoted on their last hit). Memory stays at
 * most 2 × `capacity` entries whatever the values (pod IPs, container ids) a long run sees.
 */
export class StringPool {
  private young = new Map<string, string>();
  private old = new Map<string, string>();
  /** Lookups that returned a pooled copy (for tests and stats). */
  hits = 0;

  constructor(readonly capacity = 20_000) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`StringPool capacity must be a positive integer, got ${capacity}`);
  }

  get size(): number {
    return this.young.size + this.old.size;
  }

  intern(s: string): string {
    const y = this.young.get(s);
    if (y !== undefined) {
      this.hits++;
      return y;
    }
    const o = this.old.get(s);
    if (o !== undefined) this.hits++;
    const kept = o ?? s;
    if (this.young.size >= this.capacity) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(kept, kept);
    return kept;
  }

  /** Replaces, in place, every short string value inside `v` (object keys are already shared by V8) by its pooled copy. */
  internAll(v: unknown, skip?: ReadonlySet<string>): void {
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (typeof x === 'string') {
          if (x.length <= MAX_POOLED_LENGTH) v[i] = this.intern(x);
        } else if (typeof x === 'object' && x !== null) this.internAll(x);
      }
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      if (skip?.has(k) === true) continue;
      const x = o[k];
      if (typeof x === 'string') {
        if (x.length <= MAX_POOLED_LENGTH) o[k] = this.intern(x);
      } else if (typeof x === 'object' && x !== null) this.internAll(x, k === 'metadata' ? UNIQUE_METADATA : undefined);
    }
  }
}

/** The informers' transform: managedFields dropped, strings pooled in `pool` (one pool for all the watches). */
export function watchTransform(pool: StringPool): <T extends KubeObject>(obj: T) => T {
  return (obj) => {
    stripManagedFields(obj);
    pool.internAll(obj);
    return obj;
  };
}
