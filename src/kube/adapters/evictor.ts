/**
 * The live Evictor: a preemption victim first gets the `DisruptionTarget` condition (reason
 * PreemptionByScheduler, the message saying who took its place), as kube-scheduler does, then is deleted;
 * its owner (a controller) recreates it and it queues again. A victim that is a TrainingJob's gang is announced
 * first (`gang-evicted`, reason Preempted, ADR 0143), so its controller restarts it at once, from its newest
 * checkpoint, without counting a failure.
 */
import type { Evictor } from '../../core/ports.ts';
import { LABEL } from '../../api/wire.ts';
import type { KubeClient } from '../client/client.ts';
import { announceGangEviction } from './gang-eviction.ts';
import { InFlight, podPath, splitKey } from '../client/in-flight.ts';

/** The reason the TrainingJob controller is told for a preemption eviction. */
export const PREEMPTION_EVICTION_REASON = 'Preempted';

export interface KubeEvictorOptions {
  readonly log: (m: string) => void;
  readonly nowMs: () => number;
  /** A victim's labels (the scheduler's cache): its TrainingJob and attempt, to announce the eviction. */
  readonly labelsOf?: (pod: string) => Readonly<Record<string, string>> | undefined;
  /** Between the announcement and the deletes (default 1 s, see gang-eviction.ts). */
  readonly announceMs?: number;
  /** Told at once which pods are going, so the next cycle does not count them for their queue (or evict for them again). */
  readonly leaving?: (podIds: readonly string[]) => void;
  /** A pod whose delete failed: it stays and counts again. */
  readonly stayed?: (podId: string) => void;
}

export class KubeEvictor implements Evictor {
  readonly stats = { evicted: 0, errors: 0, announced: 0 };
  private readonly inFlight = new InFlight();

  constructor(
    private readonly client: KubeClient,
    private readonly opts: KubeEvictorOptions,
  ) {}

  evict(podIds: readonly string[], reason: string): void {
    this.opts.leaving?.(podIds);
    // Victims of one TrainingJob attempt go together, after the announcement; others at once.
    const gangs = new Map<string, { ns: string; job: string; attempt: number; pods: string[] }>();
    for (const pod of podIds) {
      const labels = this.opts.labelsOf?.(pod);
      const job = labels?.[LABEL.trainingJob];
      const attempt = Number(labels?.[LABEL.attempt]);
      if (job === undefined || labels?.[LABEL.role] !== 'replica' || !Number.isInteger(attempt)) {
        this.inFlight.track(this.evictOne(pod, reason));
        continue;
      }
      const [ns] = splitKey(pod);
      const key = `${ns}/${job}/${attempt}`;
      const g = gangs.get(key) ?? { ns, job, attempt, pods: [] };
      g.pods.push(pod);
      gangs.set(key, g);
    }
    for (const g of gangs.values()) this.inFlight.track(this.evictGang(g, reason));
  }

  async drain(): Promise<void> {
    await this.inFlight.drain();
  }

  private async evictGang(g: { ns: string; job: string; attempt: number; pods: readonly string[] }, reason: string): Promise<void> {
    try {
      await announceGangEviction(this.client, g.ns, g.job, g.attempt, PREEMPTION_EVICTION_REASON, reason, this.opts.announceMs);
      this.stats.announced++;
    } catch (e) {
      // Unannounced, the eviction still happens; the controller then counts it like any lost replica.
      this.opts.log(`evict TrainingJob ${g.ns}/${g.job}: announcement: ${(e as Error).message}`);
    }
    await Promise.all(g.pods.map((p) => this.evictOne(p, reason)));
  }

  private async evictOne(pod: string, reason: string): Promise<void> {
    const condition = {
      type: 'DisruptionTarget',
      status: 'True',
      reason: 'PreemptionByScheduler',
      message: reason.slice(0, 1000),
      lastTransitionTime: new Date(this.opts.nowMs()).toISOString(),
    };
    try {
      await this.client.request('PATCH', `${podPath(pod)}/status`, {
        contentType: 'application/strategic-merge-patch+json',
        body: { status: { conditions: [condition] } },
      });
    } catch (e) {
      // The condition is informative: a victim that cannot be annotated is still evicted.
      this.opts.log(`evict ${pod}: condition: ${(e as Error).message}`);
    }
    try {
      await this.client.delete(podPath(pod));
      this.stats.evicted++;
    } catch (e) {
      this.stats.errors++;
      if ((e as { status?: number }).status !== 404) this.opts.stayed?.(pod);
      this.opts.log(`evict ${pod}: ${(e as Error).message}`);
    }
  }
}
