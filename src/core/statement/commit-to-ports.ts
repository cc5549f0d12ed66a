/**
 * The bridge from committed statements to a cluster's ports: the releases of a committed statement are
 * evictions (grouped by reason, so a victim gang leaves in one call), its allocations one bind batch that
 * waits for those evictions. Hosts install it as their scheduler's commit target; a statement committed
 * anywhere in the core therefore reaches the cluster through Binder and Evictor only.
 */
import type { BindRequest, Binder, Evictor } from '../ports.ts';
import type { CommitTarget, StatementOp } from './statement.ts';

/** Released without a reason: a committed release that was not a preemption (none in the core today). */
const RELEASED = 'released by the scheduler';

export function commitToPorts(ports: { readonly binder: Binder; readonly evictor: Evictor }): CommitTarget {
  return {
    commit(ops: readonly StatementOp[]): void {
      let evicted: string[] | undefined;
      let byReason: Map<string, string[]> | undefined;
      const requests: BindRequest[] = [];
      let gang: string | undefined;
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i] as StatementOp;
        const a = op.allocation;
        if (op.kind === 'release') {
          const reason = op.reason ?? RELEASED;
          byReason ??= new Map();
          evicted ??= [];
          const list = byReason.get(reason);
          if (list === undefined) byReason.set(reason, [a.podId]);
          else list.push(a.podId);
          evicted.push(a.podId);
        } else {
          requests.push({ podId: a.podId, node: a.node, gpus: a.gpus });
          if (a.gang !== undefined) gang = a.gang;
        }
      }
      if (byReason !== undefined) for (const [reason, pods] of byReason) ports.evictor.evict(pods, reason);
      if (requests.length > 0) ports.binder.bind(gang === undefined ? { requests, after: evicted ?? NONE } : { requests, gang, after: evicted ?? NONE });
    },
  };
}

const NONE: readonly string[] = [];
