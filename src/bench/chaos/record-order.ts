/**
 * The order the chaos bench records pod events in. A reflector's relist after a watch gap hands over every change of
 * the gap at once, in key order: a probe pod bound during the gap may come before the update that ended the pod
 * whose GPU it took. Recorded in the order etcd made them (resourceVersion), the checker sees what happened.
 */
import type { PodObs } from './invariants.ts';

/** Pod events in the order etcd made them (a stable sort: events of one revision keep their order). */
export function inRevisionOrder<T extends { readonly rv: bigint }>(events: readonly T[]): T[] {
  return [...events].sort((a, b) => (a.rv < b.rv ? -1 : a.rv > b.rv ? 1 : 0));
}

/** A resourceVersion as a number (etcd's revision here; 0 when absent or not a number). */
export function revisionOf(rv: string | undefined): bigint {
  return rv !== undefined && /^\d+$/.test(rv) ? BigInt(rv) : 0n;
}

/** The record the invariants are checked on: pod observations in order, and when each slot was first bound. */
export class PodRecord {
  readonly pods: PodObs[] = [];
  readonly boundAt = new Map<string, number>();
  /** Pods found recreated under their name after a watch gap (their old object ended first, see `burst`). */
  replacedInGap = 0;
  private readonly lastByName = new Map<string, PodObs>();

  /**
   * Records the events of one synchronous burst (a watch chunk, or a whole relist), stamped `t`. A pod deleted and
   * created again under its name in a watch gap (a gang member recreated by its controller) comes as an update of a
   * new uid: the old object ended at a revision the relist does not tell, before the new one was created. It is
   * ended first, like the objects the relist no longer lists (their last revision is older than any of the gap's):
   * a GPU a pod of the gap took from it is not counted as held twice — the record cannot tell either way.
   */
  burst(events: readonly { readonly type: PodObs['type']; readonly ob: PodObs }[], t: number): void {
    const ordered = inRevisionOrder(events.map((e) => ({ ...e, rv: revisionOf(e.ob.rv) })));
    const size = ordered.length > 1 ? { burst: ordered.length } : {};
    for (const { type, ob } of ordered) {
      const name = `${ob.ns}/${ob.name}`;
      const last = this.lastByName.get(name);
      if (type === 'DELETED' || last === undefined || last.uid === ob.uid) continue;
      this.pods.push({ ...last, t, type: 'DELETED', ...size });
      this.lastByName.delete(name);
      this.replacedInGap++;
    }
    for (const { type, ob } of ordered) {
      const o: PodObs = { ...ob, t, type, ...size };
      const name = `${o.ns}/${o.name}`;
      if (type !== 'DELETED') this.lastByName.set(name, o);
      else if (this.lastByName.get(name)?.uid === o.uid) this.lastByName.delete(name);
      this.pods.push(o);
      if (o.node !== '' && o.slot !== undefined && !this.boundAt.has(o.slot)) this.boundAt.set(o.slot, t);
    }
  }
}
