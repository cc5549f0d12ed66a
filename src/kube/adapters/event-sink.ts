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
const WARNING: ReadonlySet<SchedulingEvent['kind']> = new Set(['FailedScheduling', 'Preempted']);

export class KubeEventSink implements EventSink {
  private readonly last = new Map<string, { message: string; atMs: number }>();
  private readonly inFlight = new InFlight();
  /** When `last` was last swept of entries past REPEAT_MS (they suppress nothing any more). */
  private sweptMs = Number.NEGATIVE_INFINITY;

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
    },
  ) {}

  emit(ev: SchedulingEvent): void {
    if (!this.opts.enabled) return;
    const now = this.opts.nowMs();
    const key = `${ev.kind}|${ev.subject}`;
    const prev = this.last.get(key);
    if (prev !== undefined && prev.message === ev.message && now - prev.atMs < REPEAT_MS) return;
    this.last.set(key, { message: ev.message, atMs: now });
    // Swept once per REPEAT_MS: under steady churn the map holds about a minute of subjects, not 50,000 stale ones
    // (else it grew until the cap); the size cap still bounds a burst within a minute.
    if (now - this.sweptMs >= REPEAT_MS || this.last.size > 50_000) {
      this.sweptMs = now;
      this.forgetOld(now);
    }
    const [ns, name] = splitKey(ev.subject);
    const pod = this.cache.pod(ev.subject);
    const uid = pod?.metadata?.uid;
    // With several profiles, each pod hears from the profile that schedules it (kube: the profile's schedulerName).
    const component = this.opts.componentOf?.(pod?.spec?.schedulerName) ?? this.opts.component;
    const at = new Date(now).toISOString();
    const task = this.client
      .post(`/api/v1/namespaces/${ns}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${name}.`, namespace: ns },
        involvedObject: { apiVersion: 'v1', kind: 'Pod', name, namespace: ns, ...(uid === undefined ? {} : { uid }) },
        reason: ev.kind,
        message: ev.message.slice(0, 1000),
        type: WARNING.has(ev.kind) ? 'Warning' : 'Normal',
        source: { component },
        reportingComponent: component,
        reportingInstance: this.opts.instance,
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      })
      .catch((e: unknown) => this.opts.log(`event: ${(e as Error).message}`));
    this.inFlight.track(task);
  }

  /** Subjects remembered for the repeat check, and Events being written. */
  sizes(): { recent: number; inFlight: number } {
    return { recent: this.last.size, inFlight: this.inFlight.size };
  }

  async drain(): Promise<void> {
    await this.inFlight.drain();
  }

  private forgetOld(now: number): void {
    for (const [k, v] of this.last) if (now - v.atMs >= REPEAT_MS) this.last.delete(k);
  }
}
