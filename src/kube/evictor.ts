/**
 * The live Evictor: a preemption victim first gets the `DisruptionTarget` condition (reason
 * PreemptionByScheduler, the message saying who took its place), as kube-scheduler does, then is deleted;
 * its owner (a controller) recreates it and it queues again.
 */
import type { Evictor } from '../core/ports.ts';
import type { KubeClient } from './client.ts';
import { InFlight, podPath } from './in-flight.ts';

export class KubeEvictor implements Evictor {
  readonly stats = { evicted: 0, errors: 0 };
  private readonly inFlight = new InFlight();

  constructor(
    private readonly client: KubeClient,
    private readonly opts: { readonly log: (m: string) => void; readonly nowMs: () => number },
  ) {}

  evict(podIds: readonly string[], reason: string): void {
    for (const pod of podIds) {
      this.inFlight.track(this.evictOne(pod, reason));
    }
  }

  async drain(): Promise<void> {
    await this.inFlight.drain();
  }

  private async evictOne(pod: string, reason: string): Promise<void> {
    const condition = { type: 'DisruptionTarget', status: 'True', reason: 'PreemptionByScheduler', message: reason.slice(0, 1000), lastTransitionTime: new Date(this.opts.nowMs()).toISOString() };
    try {
      await this.client.request('PATCH', `${podPath(pod)}/status`, { contentType: 'application/strategic-merge-patch+json', body: { status: { conditions: [condition] } } });
    } catch (e) {
      // The condition is informative: a victim that cannot be annotated is still evicted.
      this.opts.log(`evict ${pod}: condition: ${(e as Error).message}`);
    }
    try {
      await this.client.delete(podPath(pod));
      this.stats.evicted++;
    } catch (e) {
      this.stats.errors++;
      this.opts.log(`evict ${pod}: ${(e as Error).message}`);
    }
  }
}
