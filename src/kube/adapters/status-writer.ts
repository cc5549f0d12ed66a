/**
 * The live StatusWriter: a waiting pod gets `PodScheduled=False, reason Unschedulable` with the message
 * that says which queue holds it and why (controllers read it), and the annotation
 * `ai.sits2026.dev/expected-start` (RFC 3339) with the start the forward run expects; a gang first held for a
 * better placement gets `ai.sits2026.dev/held-since` once (the hold's clock, read back after a failover). A pod that already
 * says the same is not written again; an expected start that moved by less than a minute is left alone.
 * The condition is written only onto the pod version the cycle saw unbound (its resourceVersion): a write that
 * lands after the pod's binding would otherwise leave a bound, running pod saying PodScheduled=False (the upstream
 * e2e suite's WaitForStableCluster fails on such a pod). On a conflict the pod is read again and the write
 * retried while it is still unbound.
 */
import type { StatusWriter } from '../../core/ports.ts';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeApiError, type KubeClient } from '../client/client.ts';
import type { ClusterCache } from '../cache/cluster-cache.ts';
import { InFlight, podPath, podStatusPath } from '../client/in-flight.ts';
import { ANNOTATION } from '../../api/wire.ts';

export class KubeStatusWriter implements StatusWriter {
  private readonly inFlight = new InFlight();

  constructor(
    private readonly client: KubeClient,
    private readonly cache: ClusterCache,
    private readonly opts: { readonly log: (m: string) => void; readonly nowMs: () => number },
  ) {}

  unschedulable(podIds: readonly string[], message: string): void {
    for (const id of podIds) {
      const pod = this.cache.pod(id);
      if (pod === undefined || (pod.spec?.nodeName ?? '') !== '') continue;
      const c = pod.status?.conditions?.find((x) => x.type === 'PodScheduled');
      if (c?.status === 'False' && c.message === message) continue;
      const condition = {
        type: 'PodScheduled',
        status: 'False',
        reason: 'Unschedulable',
        message,
        lastTransitionTime: new Date(this.opts.nowMs()).toISOString(),
      };
      this.track(this.writeUnbound(id, condition, pod.metadata?.resourceVersion), `condition ${id}`);
    }
  }

  /** Patches the condition onto the pod while it is unbound: `resourceVersion` is the precondition. */
  private async writeUnbound(id: string, condition: Record<string, string>, resourceVersion: string | undefined): Promise<void> {
    let rv = resourceVersion;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.request('PATCH', `${podPath(id)}/status`, {
          contentType: 'application/strategic-merge-patch+json',
          body: { ...(rv === undefined ? {} : { metadata: { resourceVersion: rv } }), status: { conditions: [condition] } },
        });
        return;
      } catch (e) {
        if (!(e instanceof KubeApiError) || e.status !== 409 || attempt >= 3) throw e;
      }
      const now = await this.client.get<V1Pod>(podPath(id));
      // Bound meanwhile: the binding's PodScheduled=True stands.
      if ((now.spec?.nodeName ?? '') !== '') return;
      rv = now.metadata?.resourceVersion;
    }
  }

  expectedStart(podIds: readonly string[], atMs: number): void {
    for (const id of podIds) {
      const pod = this.cache.pod(id);
      if (pod === undefined) continue;
      const prev = Date.parse(pod.metadata?.annotations?.[ANNOTATION.expectedStart] ?? '');
      if (Number.isFinite(prev) && Math.abs(prev - atMs) < 60_000) continue;
      this.annotateTime(id, ANNOTATION.expectedStart, atMs);
    }
  }

  heldSince(podIds: readonly string[], atMs: number): void {
    for (const id of podIds) {
      const pod = this.cache.pod(id);
      if (pod === undefined || (pod.spec?.nodeName ?? '') !== '' || pod.metadata?.annotations?.[ANNOTATION.heldSince] !== undefined) continue;
      this.annotateTime(id, ANNOTATION.heldSince, atMs);
    }
  }

  /** Sets a time annotation (RFC 3339) through pods/status, as the condition (ADR 0175: the scheduler may not patch pods). */
  private annotateTime(id: string, key: string, atMs: number): void {
    this.track(this.client.mergePatch(podStatusPath(id), { metadata: { annotations: { [key]: new Date(atMs).toISOString() } } }), `${key} ${id}`);
  }

  async drain(): Promise<void> {
    await this.inFlight.drain();
  }

  private track(p: Promise<unknown>, what: string): void {
    this.inFlight.track(p.catch((e: unknown) => this.opts.log(`${what}: ${(e as Error).message}`)));
  }
}
