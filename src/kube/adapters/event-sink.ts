/**
 * The live EventSink: core.v1 Events on the pods concerned, as kube-scheduler writes them (Scheduled,
 * FailedScheduling, Preempted, and WaitingForGang for a gang still short of pods). The same words for the
 * same pod within a minute are written once (a correlator like client-go's, kept simple).
 */
import type { EventSink, SchedulingEvent } from '../../core/ports.ts';
import type { KubeClient } from '../client/client.ts';
import type { ClusterCache } from '../cache/cluster-cache.ts';
import { InFlight, splitKey } from '../client/in-flight.ts';

const REPEAT_MS = 60_000;
/** Subjects remembered for the repeat check at most (client-go's correlator keeps an LRU of 4,096). */
const RECENT_MAX = 50_000;
const WARNING: ReadonlySet<SchedulingEvent['kind']> = new Set(['FailedScheduling', 'Preempted']);
/** Events on their way to the API server at once (the rest wait here as small records, see `pump`). */
export const SENDING = 16;

interface QueuedEvent {
  readonly kind: SchedulingEvent['kind'];
  readonly subject: string;
  readonly message: string;
  readonly uid: string | undefined;
  readonly component: string;
  readonly atMs: number;
}

export class KubeEventSink implements EventSink {
  /** The last write per kind and subject, in write order (re-inserted on each write), so the oldest come first. */
  private readonly last = new Map<string, { message: string; atMs: number }>();
  private readonly inFlight = new InFlight();
  private readonly queue: QueuedEvent[] = [];
  private sending = 0;

  constructor(
    private readonly client: KubeClient,
    private readonly cache: ClusterCache,
    private readonly opts: {
      readonly component: string;
      readonly componentOf?: (schedulerName: string | undefined) => string | undefined;
      readonly instance: string;
      readonly enabled: boolean;
      readonly log: (m: string) => void;
      readonly nowMs: () => number;
      /** Subjects remembered for the repeat check at most (a test seam; RECENT_MAX). */
      readonly recentMax?: number;
    },
  ) {}

  emit(ev: SchedulingEvent): void {
    if (!this.opts.enabled) return;
    const now = this.opts.nowMs();
    const key = `${ev.kind}|${ev.subject}`;
    const prev = this.last.get(key);
    if (prev !== undefined && prev.message === ev.message && now - prev.atMs < REPEAT_MS) return;
    this.last.delete(key);
    this.last.set(key, { message: ev.message, atMs: now });
    this.forgetOld(now);
    const pod = this.cache.pod(ev.subject);
    // With several profiles, each pod hears from the profile that schedules it (kube: the profile's schedulerName).
    const component = this.opts.componentOf?.(pod?.spec?.schedulerName) ?? this.opts.component;
    this.queue.push({ kind: ev.kind, subject: ev.subject, message: ev.message.slice(0, 1000), uid: pod?.metadata?.uid, component, atMs: now });
    this.pump();
  }

  /** Events waiting for one of the SENDING slots (a test seam: bounded memory while the bindings go first). */
  get queued(): number {
    return this.queue.length;
  }

  /**
   * Starts queued events while fewer than SENDING are on their way. Each request waiting in the client's queue holds its
   * body and suspended calls (≈2 KB); a queued event is a small record. 50,000 bindings finishing ahead of their
   * Scheduled events kept ~50,000 such requests waiting.
   */
  private pump(): void {
    while (this.sending < SENDING && this.queue.length > 0) {
      const e = this.queue.shift() as QueuedEvent;
      this.sending++;
      const task = this.post(e)
        .catch((err: unknown) => this.opts.log(`event: ${(err as Error).message}`))
        .finally(() => {
          this.sending--;
          this.pump();
        });
      this.inFlight.track(task);
    }
  }

  private post(e: QueuedEvent): Promise<unknown> {
    const [ns, name] = splitKey(e.subject);
    const at = new Date(e.atMs).toISOString();
    // Behind the bindings (as when each was queued after the binding it reports), but held here, not in the client.
    return this.client.request('POST', `/api/v1/namespaces/${ns}/events`, {
      background: true,
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${name}.`, namespace: ns },
        involvedObject: { apiVersion: 'v1', kind: 'Pod', name, namespace: ns, ...(e.uid === undefined ? {} : { uid: e.uid }) },
        reason: e.kind,
        message: e.message,
        type: WARNING.has(e.kind) ? 'Warning' : 'Normal',
        source: { component: e.component },
        reportingComponent: e.component,
        reportingInstance: this.opts.instance,
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      },
    });
  }

  /** Subjects remembered for the repeat check, Events being written and Events waiting to be. */
  sizes(): { recent: number; inFlight: number; queued: number } {
    return { recent: this.last.size, inFlight: this.inFlight.size, queued: this.queue.length };
  }

  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.inFlight.size > 0) await this.inFlight.drain();
  }

  /**
   * Drops entries a minute old (they suppress nothing any more) and, past the cap, the oldest (a burst of more
   * subjects within a minute: a repeat of those may be written twice). Oldest first, so this stops at the first one
   * kept: O(dropped) per emit (a full scan per emit made a burst past the cap quadratic).
   */
  private forgetOld(now: number): void {
    const max = this.opts.recentMax ?? RECENT_MAX;
    for (const [k, v] of this.last) {
      if (now - v.atMs < REPEAT_MS && this.last.size <= max) return;
      this.last.delete(k);
    }
  }
}
