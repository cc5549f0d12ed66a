/**
 * The live side of checkpoint-aware preemption (ADR 0093, the seam with the TrainingJob controller): the
 * queue cycle's "ask this victim for a checkpoint" becomes the annotation `ai.sits2026.dev/checkpoint-requested`
 * (RFC 3339 time of the request) on the victim's pods, and `ai.sits2026.dev/request-checkpoint:
 * Preemption/<time>` on its TrainingJob (found by the pods' `training-job` label). The pods' copy is the
 * request's state: the next cycle reads it back (queues.ts runningJobs) and evicts once the pods'
 * `last-checkpoint` annotation is at or after it, or the grace has run out. The TrainingJob's request is what its
 * controller honours (docs/checkpoints.md): it runs a checkpoint cycle and, when the snapshot is Ready, writes
 * `last-checkpoint` on the gang's pods. A job that has no TrainingJob is still evicted at the deadline.
 */
import { ANNOTATION, API_PATH, LABEL } from '../api/wire.ts';
import type { KubeClient } from './client.ts';
import { InFlight, podPath, splitKey } from './in-flight.ts';

export class KubeCheckpointRequester {
  readonly stats = { requested: 0, errors: 0 };
  private readonly inFlight = new InFlight();

  constructor(
    private readonly client: KubeClient,
    private readonly opts: { readonly log: (m: string) => void; readonly nowMs: () => number; readonly labelsOf: (pod: string) => Readonly<Record<string, string>> | undefined },
  ) {}

  /** Asks the job of `podIds` for a checkpoint for `by`; evicted at `deadlineMs` at the latest. */
  request(podIds: readonly string[], by: string, deadlineMs: number): void {
    const at = new Date(this.opts.nowMs()).toISOString();
    const patch = { metadata: { annotations: { [ANNOTATION.checkpointRequested]: at } } };
    // The TrainingJob controller's request (docs/checkpoints.md): `<reason>/<id>`, a new id per request.
    const jobPatch = { metadata: { annotations: { [ANNOTATION.requestCheckpoint]: `Preemption/${at}` } } };
    const jobs = new Set<string>();
    for (const pod of podIds) {
      this.inFlight.track(this.patch(podPath(pod), patch, `pod ${pod}`));
      const job = this.opts.labelsOf(pod)?.[LABEL.trainingJob];
      if (job !== undefined) jobs.add(`${splitKey(pod)[0]}/${job}`);
    }
    for (const key of jobs) {
      const [ns, name] = splitKey(key);
      this.inFlight.track(this.patch(`${API_PATH}/namespaces/${ns}/trainingjobs/${name}`, jobPatch, `TrainingJob ${key}`));
    }
    this.stats.requested++;
    this.opts.log(`checkpoint asked of ${podIds.length} pod(s)${jobs.size === 0 ? '' : ` of ${[...jobs].join(', ')}`} for ${by}; evicted by ${new Date(deadlineMs).toISOString()} at the latest`);
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
