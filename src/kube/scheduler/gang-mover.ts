/**
 * Moving a TrainingJob's gang on purpose, checkpoint first (ADR 0129, ADR 0144): the one machinery the health
 * migrator (off a quarantined GPU) and the defragmenter (to free a whole domain for a waiting gang) share.
 *
 *   1. ask for a checkpoint through the job's `request-checkpoint` annotation (ADR 0094); the value is the request's
 *      state, so a restarted mover continues where it was;
 *   2. wait until that request's cycle is Ready (a snapshot readyToUse after the request), or failed, or the grace
 *      has passed (`checkpointThenEvict`, pure);
 *   3. evict the gang whole: announce it (`gang-evicted`, gang-eviction.ts), give every replica of the current
 *      attempt the DisruptionTarget condition, then delete them all. The TrainingJob controller restarts the gang
 *      from its newest Ready checkpoint (SITS_RESTORE_SNAPSHOT, ADR 0091) without counting a failure.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, API_PATH, KIND, LABEL } from '../../api/wire.ts';
import type { TrainingJob } from '../../api/schema/training-job.ts';
import type { Clock } from '../../core/ports.ts';
import { isStatus, type KubeClient } from '../client/client.ts';
import { announceGangEviction } from '../adapters/gang-eviction.ts';

export type MoveJobObject = Pick<TrainingJob, 'spec' | 'status'> & {
  readonly metadata: { readonly name?: string; readonly namespace?: string; readonly uid?: string; readonly annotations?: Readonly<Record<string, string>> };
};

export type MoveStep =
  | { readonly kind: 'request'; readonly value: string }
  | { readonly kind: 'wait'; readonly untilMs: number }
  | { readonly kind: 'evict'; readonly why: string }
  | { readonly kind: 'leave'; readonly why: string };

/**
 * Given the request of ours on the job (undefined when there is none yet), what to do now (pure): ask with
 * `newValue`, wait for the checkpoint, or evict once it is Ready after the request, its cycle failed or the grace ran out.
 */
export function checkpointThenEvict(
  job: MoveJobObject,
  req: { readonly value: string; readonly atMs: number } | undefined,
  newValue: string,
  nowMs: number,
  graceMs: number,
): MoveStep {
  if (req === undefined) return { kind: 'request', value: newValue };
  const ck = job.status?.checkpoint;
  const newest =
    ck?.lastReady === undefined ? 'no Ready checkpoint yet' : `its newest Ready checkpoint ${ck.lastReady.snapshotName} (step ${ck.lastReady.step})`;
  const readyMs = ck?.lastReady === undefined ? Number.NaN : Date.parse(ck.lastReady.readyTime);
  if (ck?.handledRequest === req.value && readyMs >= req.atMs)
    return {
      kind: 'evict',
      why: `checkpoint ${ck.lastReady?.snapshotName ?? ''} (step ${ck.lastReady?.step ?? 0}) is ready; the gang restarts elsewhere from it`,
    };
  if (ck?.handledRequest === req.value && ck.cycle?.request === req.value && ck.cycle.phase === 'Failed')
    return { kind: 'evict', why: `the checkpoint asked for failed (${ck.cycle.failureReason ?? 'Failed'}); the gang restarts elsewhere from ${newest}` };
  if (nowMs >= req.atMs + graceMs)
    return { kind: 'evict', why: `no checkpoint within the grace of ${Math.round(graceMs / 1000)} s; the gang restarts elsewhere from ${newest}` };
  return { kind: 'wait', untilMs: req.atMs + graceMs };
}

export interface GangMoverOptions {
  readonly log: (m: string) => void;
  readonly clock: Clock;
  /** The DisruptionTarget reason on the replicas and the `gang-evicted` reason (GpuQuarantined, Defragment). */
  readonly reason: string;
  /** The Events' source (sits-health-migration, …). */
  readonly component: string;
  /** The log lines' prefix (default the component). */
  readonly logPrefix?: string;
  /** Between the announcement and the deletes (default 1 s). */
  readonly announceMs?: number;
}

export class GangMover {
  readonly stats = { requested: 0, evictedGangs: 0, evictedPods: 0 };

  constructor(
    private readonly client: KubeClient,
    private readonly opts: GangMoverOptions,
  ) {}

  private get prefix(): string {
    return this.opts.logPrefix ?? this.opts.component;
  }

  /** The job's request-checkpoint annotation, and an Event `eventReason` saying why. */
  async request(job: MoveJobObject, value: string, eventReason: string, message: string): Promise<void> {
    const ns = job.metadata.namespace ?? 'default';
    await this.client.mergePatch(`${API_PATH}/namespaces/${ns}/trainingjobs/${job.metadata.name ?? ''}`, {
      metadata: { annotations: { [ANNOTATION.requestCheckpoint]: value } },
    });
    this.stats.requested++;
    this.event(job, 'Normal', eventReason, message);
  }

  /** Every replica of the job's current attempt, at once: the controller never sees half a gang moved. */
  async evict(job: MoveJobObject, why: string, eventReason: string): Promise<void> {
    const ns = job.metadata.namespace ?? 'default';
    const name = job.metadata.name ?? '';
    const key = `${ns}/${name}`;
    const attempt = String(job.status?.attempt ?? '');
    const pods = (
      await this.client.get<{ items: V1Pod[] }>(`/api/v1/namespaces/${ns}/pods`, {
        labelSelector: `${LABEL.trainingJob}=${name},${LABEL.role}=replica,${LABEL.attempt}=${attempt}`,
      })
    ).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
    if (pods.length === 0) return;
    const at = new Date(this.opts.clock.nowMs()).toISOString();
    // Told first, so the controller restarts the gang at once and does not count the move as a failure.
    await announceGangEviction(this.client, ns, name, job.status?.attempt ?? 0, this.opts.reason, why, this.opts.announceMs);
    const condition = { type: 'DisruptionTarget', status: 'True', reason: this.opts.reason, message: why.slice(0, 1000), lastTransitionTime: at };
    // Conditions first on all, then the deletes: a replica is never deleted before its siblings carry the reason.
    await Promise.all(
      pods.map((p) =>
        this.client
          .request('PATCH', `/api/v1/namespaces/${ns}/pods/${p.metadata?.name ?? ''}/status`, {
            contentType: 'application/strategic-merge-patch+json',
            body: { status: { conditions: [condition] } },
          })
          .catch((e: unknown) => this.opts.log(`${this.prefix}: ${ns}/${p.metadata?.name ?? ''}: condition: ${(e as Error).message}`)),
      ),
    );
    const results = await Promise.allSettled(
      pods.map((p) =>
        this.client.request('DELETE', `/api/v1/namespaces/${ns}/pods/${p.metadata?.name ?? ''}`, {
          body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: p.metadata?.uid } },
        }),
      ),
    );
    const failed = results.filter((r) => r.status === 'rejected' && !isStatus(r.reason, 404) && !isStatus(r.reason, 409));
    this.stats.evictedPods += results.length - failed.length;
    this.stats.evictedGangs++;
    this.event(job, 'Normal', eventReason, `evicting the gang (attempt ${attempt}, ${pods.length} replicas): ${why}`);
    this.opts.log(`${this.prefix}: ${key}: evicted ${pods.length} replicas of attempt ${attempt}: ${why}`);
    // A delete that failed leaves the controller to restart the gang (a vanished replica restarts it whole).
    for (const f of failed) this.opts.log(`${this.prefix}: ${key}: delete: ${((f as PromiseRejectedResult).reason as Error).message}`);
  }

  event(job: MoveJobObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const ns = job.metadata.namespace ?? 'default';
    const name = job.metadata.name ?? '';
    const at = new Date(this.opts.clock.nowMs()).toISOString();
    const component = this.opts.component;
    void this.client
      .post(`/api/v1/namespaces/${ns}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${name}.`, namespace: ns },
        involvedObject: {
          apiVersion: 'ai.sits2026.dev/v1',
          kind: KIND.trainingJob,
          name,
          namespace: ns,
          ...(job.metadata.uid === undefined ? {} : { uid: job.metadata.uid }),
        },
        reason,
        message: message.slice(0, 1000),
        type,
        source: { component },
        reportingComponent: component,
        reportingInstance: component,
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      })
      .catch((e: unknown) => this.opts.log(`${this.prefix}: event: ${(e as Error).message}`));
  }
}
