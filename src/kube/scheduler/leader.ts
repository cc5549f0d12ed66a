/**
 * Leader election on a coordination.k8s.io/v1 Lease, ported from client-go's leaderelection: acquire when
 * the lease is free or expired, renew every `retryPeriod`, and consider leadership lost as soon as a renew
 * has not succeeded within `renewDeadline` — before another replica may take over at `leaseDuration`.
 * Optimistic concurrency (resourceVersion on update, 409 on create) makes at most one holder win.
 */
import { isStatus, type KubeClient } from '../client/client.ts';

export interface LeaderOptions {
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationSec?: number;
  readonly renewDeadlineSec?: number;
  readonly retryPeriodSec?: number;
  readonly onStartedLeading?: () => void;
  readonly onStoppedLeading?: () => void;
  readonly log?: (msg: string) => void;
}

interface Lease {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

/** RFC 3339 with microseconds, as MicroTime requires. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private leading = false;
  private lastRenewMs = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  /** The acquire-or-renew in progress, if any (stop() waits for it: it may be taking the lease). */
  private ticking: Promise<void> | undefined;
  private observed: { record: string; atMs: number } | undefined;
  private readonly leaseSec: number;
  private readonly renewDeadlineMs: number;
  private readonly retryMs: number;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: LeaderOptions,
  ) {
    this.leaseSec = opts.leaseDurationSec ?? 15;
    this.renewDeadlineMs = (opts.renewDeadlineSec ?? 10) * 1000;
    this.retryMs = (opts.retryPeriodSec ?? 2) * 1000;
  }

  /** True only while a renew has succeeded within the renew deadline. */
  isLeader(): boolean {
    return this.leading && performance.now() - this.lastRenewMs < this.renewDeadlineMs;
  }

  start(): void {
    this.runTick();
  }

  /** Stops renewing; with `release`, hands the lease back so a standby takes over at once. */
  async stop(release = true): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    // A request in flight may still create or renew the lease: wait for it, then release what it took.
    const inFlight = this.ticking;
    await inFlight;
    if (release && (this.leading || inFlight !== undefined)) {
      try {
        const lease = await this.client.get<Lease>(this.path());
        if (lease.spec.holderIdentity === this.opts.identity) {
          lease.spec = { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(new Date()) };
          await this.client.put(this.path(), lease);
        }
      } catch {
        // best effort: the lease expires anyway
      }
    }
    this.setLeading(false);
  }

  private path(name = this.opts.name): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.opts.namespace}/leases/${name}`;
  }

  private setLeading(v: boolean): void {
    if (v === this.leading) return;
    this.leading = v;
    this.opts.log?.(v ? `became leader (${this.opts.identity})` : `lost leadership (${this.opts.identity})`);
    if (v) this.opts.onStartedLeading?.();
    else this.opts.onStoppedLeading?.();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    // The renewal counts from before its request was sent (ADR 0187): the apiserver stored it no earlier, so a
    // standby's lease-duration wait starts no earlier either. Counting from the answer instead let a replica
    // paused (or slowed) with a renewal in flight wake up as leader for another renew deadline, though the
    // standby had taken over meanwhile: it bound a pod without holding the Lease (sits bench chaos).
    const sentMs = performance.now();
    try {
      const ok = await this.tryAcquireOrRenew();
      // Stopped meanwhile: never start leading after stop(); stop() releases what this took.
      if (this.stopped) return;
      if (ok) {
        this.lastRenewMs = sentMs;
        // A renewal that took longer than the renew deadline does not make a leader: the lease may have been
        // another's meanwhile (the next tick renews again).
        if (performance.now() - sentMs < this.renewDeadlineMs) this.setLeading(true);
        else this.setLeading(false);
      } else this.setLeading(false);
    } catch (e) {
      this.opts.log?.(`lease: ${(e as Error).message}`);
      if (this.leading && performance.now() - this.lastRenewMs >= this.renewDeadlineMs) this.setLeading(false);
    }
    if (!this.stopped) this.timer = setTimeout(() => this.runTick(), this.retryMs);
  }

  private runTick(): void {
    const p: Promise<void> = this.tick().finally(() => {
      if (this.ticking === p) this.ticking = undefined;
    });
    this.ticking = p;
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    let lease: Lease;
    try {
      lease = await this.client.get<Lease>(this.path());
    } catch (e) {
      if (!isStatus(e, 404)) throw e;
      const fresh: Lease = {
        metadata: { name: this.opts.name, namespace: this.opts.namespace },
        spec: {
          holderIdentity: this.opts.identity,
          leaseDurationSeconds: this.leaseSec,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      };
      try {
        await this.client.post(`/apis/coordination.k8s.io/v1/namespaces/${this.opts.namespace}/leases`, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          ...fresh,
        });
        return true;
      } catch (ce) {
        if (isStatus(ce, 409)) return false;
        throw ce;
      }
    }
    const holder = lease.spec.holderIdentity ?? '';
    const duration = (lease.spec.leaseDurationSeconds ?? this.leaseSec) * 1000;
    const mine = holder === this.opts.identity;
    // Expiry is judged by how long the record has stayed unchanged on our clock (as client-go does),
    // never by comparing another replica's timestamps with ours.
    const record = `${holder}|${lease.spec.renewTime ?? ''}`;
    const t = performance.now();
    if (this.observed?.record !== record) this.observed = { record, atMs: t };
    if (!mine && holder !== '' && t - this.observed.atMs < duration) return false;
    lease.spec = {
      ...lease.spec,
      holderIdentity: this.opts.identity,
      leaseDurationSeconds: this.leaseSec,
      renewTime: microTime(now),
      ...(mine ? {} : { acquireTime: microTime(now), leaseTransitions: (lease.spec.leaseTransitions ?? 0) + 1 }),
    };
    try {
      await this.client.put(this.path(), { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...lease });
      return true;
    } catch (e) {
      if (isStatus(e, 409)) return false;
      throw e;
    }
  }
}
