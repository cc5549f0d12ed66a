/**
 * The live side of checkpoint-aware preemption (ADR 0093, the seam with the TrainingJob controller): the
 * queue cycle's "ask this victim for a checkpoint" becomes the annotation `ai.sits2026.dev/checkpoint-requested`
 * (RFC 3339 time of the request) on the victim's pods, and `ai.sits2026.dev/request-checkpoint:
 * Preemption/<time>` on its TrainingJob (found by the pods' `training-job` label). The pods' copy is the
 * request's state: the next cycle reads it back (queues.ts runningJobs) and evicts once the pods'
 * `last-checkpoint` annotation is at or after it, or the grace has run out. The TrainingJob's request is what its
 * controller honours (docs/checkpoints.md): it runs a checkpoint cycle and, when the snapshot is Ready, writes
 * `last-checkpoint` on the gang's pods. A job that has no TrainingJob is still evicted at the deadline.
 *
 * The patches are fire-and-forget, so the next cycle may run before the cache shows the ask. The requester
 * remembers its asks until the cache does (as the binder assumes its binds): the cycle reads them through
 * `withUnseenAsks` and waits on the ask it made instead of asking again, which would start a second
 * checkpoint cycle on the victim.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, API_PATH, LABEL } from '../../api/wire.ts';
import type { RunningJob } from '../../core/actions/jobs.ts';
import type { KubeClient } from '../client/client.ts';
import { InFlight, podStatusPath, splitKey } from '../client/in-flight.ts';
import { checkpointRequestedOf } from '../cache/queues.ts';

export class KubeCheckpointRequester {
  readonly stats = { requested: 0, errors: 0 };
  private readonly inFlight = new InFlight();
  /** Pod → the time of this requester's newest ask of it, until the cached pod shows that ask. */
  private readonly unseen = new Map<string, number>();

  constructor(
    private readonly client: KubeClient,
    /** `pod`: the cached pod by key (undefined once it is gone). */
    private readonly opts: { readonly log: (m: string) => void; readonly nowMs: () => number; readonly pod: (key: string) => V1Pod | undefined },
  ) {}

  /** Asks the job of `podIds` for a checkpoint for `by`; evicted at `deadlineMs` at the latest. */
  request(podIds: readonly string[], by: string, deadlineMs: number): void {
    const atMs = this.opts.nowMs();
    const at = new Date(atMs).toISOString();
    const patch = { metadata: { annotations: { [ANNOTATION.checkpointRequested]: at } } };
    // The TrainingJob controller's request (docs/checkpoints.md): `<reason>/<id>`, a new id per request.
    const jobPatch = { metadata: { annotations: { [ANNOTATION.requestCheckpoint]: `Preemption/${at}` } } };
    const jobs = new Set<string>();
    for (const pod of podIds) {
      this.unseen.set(pod, atMs);
      // Through pods/status (ADR 0175: the scheduler may not patch pods; a merge patch there writes the annotation).
      this.inFlight.track(this.patch(podStatusPath(pod), patch, `pod ${pod}`));
      const job = this.opts.pod(pod)?.metadata?.labels?.[LABEL.trainingJob];
      if (job !== undefined) jobs.add(`${splitKey(pod)[0]}/${job}`);
    }
    for (const key of jobs) {
      const [ns, name] = splitKey(key);
      this.inFlight.track(this.patch(`${API_PATH}/namespaces/${ns}/trainingjobs/${name}`, jobPatch, `TrainingJob ${key}`));
    }
    this.stats.requested++;
    this.opts.log(
      `checkpoint asked of ${podIds.length} pod(s)${jobs.size === 0 ? '' : ` of ${[...jobs].join(', ')}`} for ${by}; evicted by ${new Date(deadlineMs).toISOString()} at the latest`,
    );
  }

  /**
   * The running jobs with the asks the cache does not show yet (a job's request is its pods' newest ask, as
   * runningJobs reads the annotations). Forgets an ask once its pod shows it (or a later one) or is gone; an
   * ask whose patch failed stays, so the victim is evicted at the ask's deadline rather than asked again.
   */
  withUnseenAsks(running: Map<string, RunningJob>): Map<string, RunningJob> {
    if (this.unseen.size === 0) return running;
    for (const [key, atMs] of this.unseen) {
      const p = this.opts.pod(key);
      if (p === undefined || (checkpointRequestedOf(p) ?? Number.NEGATIVE_INFINITY) >= atMs) this.unseen.delete(key);
    }
    for (const [id, job] of running) {
      const asked = Math.max(...job.podIds.map((k) => this.unseen.get(k) ?? Number.NEGATIVE_INFINITY));
      if (asked > (job.checkpointRequestedMs ?? Number.NEGATIVE_INFINITY)) running.set(id, { ...job, checkpointRequestedMs: asked });
    }
    return running;
  }

  /** Asks not yet seen in the cache (for tests and debugging). */
  get unseenAsks(): number {
    return this.unseen.size;
  }

  async drain(): Promise<void> {
    await this.inFlight.drain();
  }

  private async patch(path: string, body: unknown, what: string): Promise<void> {
    try {
      await this.client.mergePatch(path, body);
    } catch (e) {
      // A request that did not reach the job only costs the grace: the victim is evicted at the deadline.
      this.stats.errors++;
      this.opts.log(`checkpoint request to ${what}: ${(e as Error).message}`);
    }
  }
}
