/**
 * A scheduler that died says so (issue 34): pods waiting for `sits-scheduler` while no replica has held its Lease
 * for longer than the lease duration get a Warning Event `NoSchedulerLeader` naming the Lease, its last holder and
 * since when nobody holds it. kube-scheduler leaves such pods Pending without a word; a user then reads only
 * "Pending" and no FailedScheduling, and cannot tell a full cluster from a dead scheduler. The controllers run this
 * (they are another Deployment with their own Lease, so they are there when every scheduler replica is gone).
 * One Event per pod per outage; a new outage (the Lease renewed in between) tells the pod again.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { isStatus, type KubeClient } from '../kube/client/client.ts';
import { Reflector } from '../kube/client/reflector.ts';
import { runPeriodically } from './periodic.ts';

export interface LeaseObject {
  readonly spec?: {
    readonly holderIdentity?: string | null;
    readonly leaseDurationSeconds?: number;
    readonly renewTime?: string | null;
    readonly acquireTime?: string | null;
  };
}

export type LeaderVerdict =
  { readonly down: false } | { readonly down: true; readonly sinceMs: number; readonly lastHolder: string | undefined; readonly message: string };

/**
 * Whether the schedulers have had no leader for longer than one lease duration at `nowMs`. The lease expires at
 * renewTime + duration; a missing Lease (no replica ever led) counts from `firstSeenMs`, when this watch began.
 * A released Lease (holder cleared on a clean stop) counts from its renewTime.
 */
export function leaderVerdict(lease: LeaseObject | undefined, leasePath: string, nowMs: number, firstSeenMs: number, defaultDurationSec = 15): LeaderVerdict {
  if (lease === undefined) {
    const since = firstSeenMs;
    return nowMs - since > defaultDurationSec * 1000
      ? {
          down: true,
          sinceMs: since,
          lastHolder: undefined,
          message: `no scheduler replica leads: the Lease ${leasePath} does not exist (no replica has taken it since ${new Date(since).toISOString()})`,
        }
      : { down: false };
  }
  const durationMs = (lease.spec?.leaseDurationSeconds ?? defaultDurationSec) * 1000;
  const renewed = Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? '');
  const holder = lease.spec?.holderIdentity ?? '';
  const expiresMs = Number.isNaN(renewed) ? firstSeenMs : holder === '' ? renewed : renewed + durationMs;
  if (nowMs - expiresMs <= durationMs) return { down: false };
  const last = holder === '' ? undefined : holder;
  return {
    down: true,
    sinceMs: expiresMs,
    lastHolder: last,
    message: `no scheduler replica has held the Lease ${leasePath} since ${new Date(expiresMs).toISOString()}${last === undefined ? ' (released)' : ` (last holder ${last})`}: this pod waits for a scheduler that is not running`,
  };
}

export interface SchedulerWatchOptions {
  /** Pods with these spec.schedulerName are watched. */
  readonly schedulerNames: readonly string[];
  /** The schedulers' Lease, `namespace/name`. */
  readonly lease: string;
  readonly intervalMs?: number;
  /** Events written per pass at most (the rest next pass). */
  readonly maxEventsPerPass?: number;
  /** Only the controllers' leader writes (they run several replicas). */
  readonly isLeader?: () => boolean;
  readonly nowMs?: () => number;
  readonly log?: (m: string) => void;
}

export interface SchedulerWatch {
  readonly stats: { passes: number; events: number; outages: number };
  /** One pass now (tests). */
  pass(): Promise<void>;
  stop(): Promise<void>;
}

export async function startSchedulerWatch(client: KubeClient, o: SchedulerWatchOptions): Promise<SchedulerWatch> {
  const log = o.log ?? (() => undefined);
  const now = o.nowMs ?? Date.now;
  const [ns, name] = o.lease.split('/') as [string, string];
  const names = new Set(o.schedulerNames);
  // Only pods without a node: a cluster's running pods stay out of this cache.
  const pending = new Reflector<V1Pod>(
    client,
    '/api/v1/pods',
    { add: () => undefined, update: () => undefined, delete: () => undefined, error: (e) => log(`scheduler watch: pods: ${e.message}`) },
    { fieldSelector: 'spec.nodeName=' },
  );
  await pending.start();
  const firstSeenMs = now();
  const told = new Map<string, number>();
  let outage: number | undefined;
  const stats = { passes: 0, events: 0, outages: 0 };
  const pass = async (): Promise<void> => {
    stats.passes++;
    if (o.isLeader !== undefined && !o.isLeader()) return;
    let lease: LeaseObject | undefined;
    try {
      lease = await client.get<LeaseObject>(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${name}`);
    } catch (e) {
      if (!isStatus(e, 404)) return log(`scheduler watch: lease ${o.lease}: ${(e as Error).message}`);
    }
    const t = now();
    const v = leaderVerdict(lease, o.lease, t, firstSeenMs);
    if (!v.down) {
      outage = undefined;
      told.clear();
      return;
    }
    if (outage !== v.sinceMs) {
      outage = v.sinceMs;
      stats.outages++;
      told.clear();
      log(`scheduler watch: ${v.message.split(':')[0] ?? ''}`);
    }
    let budget = o.maxEventsPerPass ?? 200;
    for (const p of pending.items.values()) {
      if (budget <= 0) break;
      const uid = p.metadata?.uid ?? '';
      if (!names.has(p.spec?.schedulerName ?? 'default-scheduler') || told.has(uid) || p.metadata?.deletionTimestamp !== undefined) continue;
      budget--;
      told.set(uid, t);
      const pns = p.metadata?.namespace ?? 'default';
      const at = new Date(t).toISOString();
      await client
        .post(`/api/v1/namespaces/${pns}/events`, {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { generateName: `${p.metadata?.name ?? 'pod'}.`, namespace: pns },
          involvedObject: { apiVersion: 'v1', kind: 'Pod', name: p.metadata?.name, namespace: pns, uid },
          reason: 'NoSchedulerLeader',
          message: v.message,
          type: 'Warning',
          source: { component: 'sits-controllers' },
          reportingComponent: 'sits-controllers',
          reportingInstance: 'scheduler-watch',
          firstTimestamp: at,
          lastTimestamp: at,
          count: 1,
        })
        .then(() => stats.events++)
        .catch((e: unknown) => log(`scheduler watch: event on ${pns}/${p.metadata?.name ?? ''}: ${(e as Error).message}`));
    }
    // Pods that went away are forgotten.
    const present = new Set([...pending.items.values()].map((p) => p.metadata?.uid ?? ''));
    for (const uid of told.keys()) if (!present.has(uid)) told.delete(uid);
  };
  const loop = runPeriodically(pass, o.intervalMs ?? 5000);
  return {
    stats,
    pass,
    stop: async () => {
      await loop.stop();
      pending.stop();
    },
  };
}
