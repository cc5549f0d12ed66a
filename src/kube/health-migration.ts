/**
 * The consumer of the GPU health monitor's checkpoint-and-migrate intents (issue 14 §5, ADR 0096 → ADR 0129):
 * work still running on a quarantined GPU is checkpointed and moved. For each GPU quarantined on a Node
 * (ANNOTATION.gpuQuarantine, whoever wrote it) and each TrainingJob with a checkpoint policy whose replicas hold it:
 *
 *   1. ask for a checkpoint through the job's `request-checkpoint` annotation, the one mechanism preemption uses
 *      (ADR 0094), as `Migration/<time>/<node>/<gpu>`; the value is the request's state, so a restarted migrator
 *      continues where it was;
 *   2. wait until that request's cycle is Ready (a snapshot readyToUse after the request), or failed, or the grace
 *      has passed;
 *   3. evict the gang whole: every replica of the current attempt gets the DisruptionTarget condition naming the
 *      GPU and why, then is deleted. The TrainingJob controller restarts the gang from its newest Ready checkpoint
 *      (SITS_RESTORE_SNAPSHOT, ADR 0091), and the quarantine keeps the new gang off the GPU.
 *
 * `handle(intent)` takes the monitor's intents in-process: `restore-last` (the GPU failed, the job is likely dead)
 * skips the checkpoint and evicts at once. Work that cannot checkpoint is left running (moving it would lose all
 * its work now; the quarantine keeps new work off), with an Event saying so. Events on the TrainingJob name why.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, API_PATH, KIND, LABEL } from '../api/wire.ts';
import type { TrainingJob } from '../api/schema/training-job.ts';
import type { Clock } from '../core/ports.ts';
import type { MigrateIntent } from '../core/health/monitor.ts';
import { parseQuarantine, type QuarantineEntry } from '../core/health/quarantine.ts';
import { isStatus, type KubeClient } from './client.ts';
import { Reflector } from './reflector.ts';

/** The DisruptionTarget reason on a replica moved off a quarantined GPU. */
export const MIGRATION_DISRUPTION_REASON = 'GpuQuarantined';
/** 5 min, like the queues' default checkpointGraceSeconds (ADR 0093). */
export const DEFAULT_MIGRATION_GRACE_MS = 300_000;

export interface MigrationRequest {
  readonly value: string;
  readonly atMs: number;
  readonly node: string;
  readonly gpu: number;
}

export const migrationRequestValue = (atMs: number, node: string, gpu: number): string => `Migration/${new Date(atMs).toISOString()}/${node}/${gpu}`;

/** Reads `Migration/<time>/<node>/<gpu>` back; undefined for any other request. */
export function parseMigrationRequest(value: string | undefined): MigrationRequest | undefined {
  const m = /^Migration\/([^/]+)\/([^/]+)\/(\d+)$/.exec(value ?? '');
  if (m === null) return undefined;
  const atMs = Date.parse(m[1] as string);
  return Number.isFinite(atMs) ? { value: value as string, atMs, node: m[2] as string, gpu: Number(m[3]) } : undefined;
}

type JobObject = Pick<TrainingJob, 'spec' | 'status'> & { readonly metadata: { readonly name?: string; readonly namespace?: string; readonly uid?: string; readonly annotations?: Readonly<Record<string, string>> } };

export type MigrationStep =
  | { readonly kind: 'request'; readonly value: string }
  | { readonly kind: 'wait'; readonly untilMs: number }
  | { readonly kind: 'evict'; readonly why: string }
  | { readonly kind: 'leave'; readonly why: string };

/**
 * What to do now about job `job` on quarantined GPU `entry` (pure). A request of ours counts only when it names the
 * device and is not older than the quarantine (an older one moved the job off an earlier quarantine).
 */
export function migrationStep(job: JobObject, entry: Pick<QuarantineEntry, 'node' | 'gpu' | 'sinceMs'>, mode: MigrateIntent['mode'], nowMs: number, graceMs: number): MigrationStep {
  const ck = job.status?.checkpoint;
  const newest = ck?.lastReady === undefined ? 'no Ready checkpoint yet' : `its newest Ready checkpoint ${ck.lastReady.snapshotName} (step ${ck.lastReady.step})`;
  if (mode === 'restore-last') return { kind: 'evict', why: `the GPU failed; the gang restarts elsewhere from ${newest}` };
  if (job.spec.checkpoint === undefined) return { kind: 'leave', why: 'the job has no checkpoint policy, so moving it would lose all its work; it keeps running and the quarantine keeps new work off the GPU' };
  const req = parseMigrationRequest(job.metadata.annotations?.[ANNOTATION.requestCheckpoint]);
  if (req === undefined || req.node !== entry.node || req.gpu !== entry.gpu || req.atMs < entry.sinceMs) return { kind: 'request', value: migrationRequestValue(nowMs, entry.node, entry.gpu) };
  const readyMs = ck?.lastReady === undefined ? Number.NaN : Date.parse(ck.lastReady.readyTime);
  if (ck?.handledRequest === req.value && readyMs >= req.atMs) return { kind: 'evict', why: `checkpoint ${ck.lastReady?.snapshotName ?? ''} (step ${ck.lastReady?.step ?? 0}) is ready; the gang restarts elsewhere from it` };
  if (ck?.handledRequest === req.value && ck.cycle?.request === req.value && ck.cycle.phase === 'Failed') return { kind: 'evict', why: `the checkpoint asked for failed (${ck.cycle.failureReason ?? 'Failed'}); the gang restarts elsewhere from ${newest}` };
  if (nowMs >= req.atMs + graceMs) return { kind: 'evict', why: `no checkpoint within the grace of ${Math.round(graceMs / 1000)} s; the gang restarts elsewhere from ${newest}` };
  return { kind: 'wait', untilMs: req.atMs + graceMs };
}

export interface GpuHealthMigratorOptions {
  readonly log: (m: string) => void;
  readonly clock?: Clock;
  /** The longest wait for the checkpoint before the gang is evicted anyway (default 300 s). */
  readonly graceMs?: number;
  /** How often the quarantines are looked at (default 2 s); a Node change looks at once. */
  readonly intervalMs?: number;
  /** When given, only the leader acts. */
  readonly isLeader?: () => boolean;
  /** Between telling the controller (ANNOTATION.gangEvicted) and the deletes (default 1 s). */
  readonly announceMs?: number;
}

const gpuIndices = (p: V1Pod): number[] => (p.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '').split(',').filter((s) => /^\d+$/.test(s)).map(Number);
const live = (p: V1Pod): boolean => p.metadata?.deletionTimestamp === undefined && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
const INTENT_TTL_MS = 10 * 60_000;

export class GpuHealthMigrator {
  readonly stats = { requested: 0, evictedGangs: 0, evictedPods: 0, left: 0, errors: 0 };
  private readonly nodes: Reflector<V1Node>;
  private readonly intents = new Map<string, MigrateIntent>();
  /** Once per (job, device, reason) key: events and logs that would otherwise repeat every tick. */
  private readonly said = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly clock: Clock;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: GpuHealthMigratorOptions,
  ) {
    this.clock = opts.clock ?? { nowMs: () => Date.now() };
    const kick = (): void => this.kick();
    this.nodes = new Reflector<V1Node>(client, '/api/v1/nodes', { add: kick, update: kick, delete: () => undefined, error: (e) => opts.log(`health migration: nodes watch: ${e.message}`) });
  }

  async start(): Promise<void> {
    await this.nodes.start();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.nodes.stop();
    await this.running;
  }

  /** An intent from the health monitor in this process (its mode says whether to checkpoint first). */
  handle(intent: MigrateIntent): void {
    this.intents.set(`${intent.node}/${intent.gpu}`, intent);
    this.kick();
  }

  /** One pass over every quarantined GPU; exposed for tests. Never throws. */
  async once(): Promise<void> {
    if (this.opts.isLeader !== undefined && !this.opts.isLeader()) return;
    const now = this.clock.nowMs();
    const devices = new Map<string, { entry: Pick<QuarantineEntry, 'node' | 'gpu' | 'sinceMs' | 'reason'>; mode: MigrateIntent['mode'] }>();
    for (const n of this.nodes.items.values()) {
      const name = n.metadata?.name ?? '';
      const text = n.metadata?.annotations?.[ANNOTATION.gpuQuarantine];
      if (text === undefined) continue;
      const q = parseQuarantine(name, text);
      if (!q.ok) {
        this.once_(`bad:${name}:${text}`, () => this.opts.log(`health migration: node ${name}: annotation ${ANNOTATION.gpuQuarantine}: ${q.error}`));
        continue;
      }
      for (const e of q.value) devices.set(`${e.node}/${e.gpu}`, { entry: e, mode: 'checkpoint-first' });
    }
    for (const [k, i] of this.intents) {
      if (now - i.atMs > INTENT_TTL_MS && !devices.has(k)) this.intents.delete(k);
      else devices.set(k, { entry: { node: i.node, gpu: i.gpu, sinceMs: devices.get(k)?.entry.sinceMs ?? i.atMs, reason: i.reason }, mode: i.mode });
    }
    for (const { entry, mode } of devices.values()) {
      try {
        await this.device(entry, mode, now);
      } catch (e) {
        this.stats.errors++;
        this.opts.log(`health migration: node ${entry.node} GPU ${entry.gpu}: ${(e as Error).message}`);
      }
    }
  }

  private async device(entry: Pick<QuarantineEntry, 'node' | 'gpu' | 'sinceMs' | 'reason'>, mode: MigrateIntent['mode'], now: number): Promise<void> {
    const list = await this.client.get<{ items: V1Pod[] }>('/api/v1/pods', { fieldSelector: `spec.nodeName=${entry.node}` });
    const on = list.items.filter((p) => live(p) && gpuIndices(p).includes(entry.gpu));
    const jobs = new Map<string, V1Pod[]>();
    for (const p of on) {
      const job = p.metadata?.labels?.[LABEL.trainingJob];
      const ns = p.metadata?.namespace ?? 'default';
      if (job === undefined) {
        this.once_(`other:${ns}/${p.metadata?.name ?? ''}:${entry.node}/${entry.gpu}/${entry.sinceMs}`, () => {
          this.stats.left++;
          this.opts.log(`health migration: pod ${ns}/${p.metadata?.name ?? ''} holds quarantined GPU ${entry.gpu} of ${entry.node} and is no TrainingJob: left running (its owner moves it, or it ends)`);
        });
        continue;
      }
      jobs.set(`${ns}/${job}`, [...(jobs.get(`${ns}/${job}`) ?? []), p]);
    }
    const device = `GPU ${entry.gpu} of node ${entry.node}`;
    for (const key of jobs.keys()) {
      const [ns, name] = key.split('/') as [string, string];
      const path = `${API_PATH}/namespaces/${ns}/trainingjobs/${name}`;
      let job: JobObject;
      try {
        job = await this.client.get<JobObject>(path);
      } catch (e) {
        if (isStatus(e, 404)) continue;
        throw e;
      }
      const step = migrationStep(job, entry, mode, now, this.opts.graceMs ?? DEFAULT_MIGRATION_GRACE_MS);
      const tag = `${job.metadata.uid ?? key}:${entry.node}/${entry.gpu}/${entry.sinceMs}`;
      if (step.kind === 'wait') continue;
      if (step.kind === 'leave') {
        this.once_(`leave:${tag}`, () => {
          this.stats.left++;
          this.event(job, 'Warning', 'GpuQuarantinedNotMoved', `${device} is quarantined (${entry.reason}); ${step.why}`);
        });
        continue;
      }
      if (step.kind === 'request') {
        await this.client.mergePatch(path, { metadata: { annotations: { [ANNOTATION.requestCheckpoint]: step.value } } });
        this.stats.requested++;
        const grace = Math.round((this.opts.graceMs ?? DEFAULT_MIGRATION_GRACE_MS) / 1000);
        this.event(job, 'Normal', 'CheckpointForMigration', `${device} is quarantined (${entry.reason}): checkpoint requested (${step.value}); the gang moves once it is ready, within ${grace} s at the latest`);
        this.opts.log(`health migration: ${key} on ${device}: checkpoint requested (${step.value})`);
        continue;
      }
      await this.evict(job, key, `${device} is quarantined (${entry.reason}): ${step.why}`);
    }
  }

  /** Every replica of the job's current attempt, at once: the controller never sees half a gang moved. */
  private async evict(job: JobObject, key: string, why: string): Promise<void> {
    const [ns, name] = key.split('/') as [string, string];
    const attempt = String(job.status?.attempt ?? '');
    const pods = (await this.client.get<{ items: V1Pod[] }>(`/api/v1/namespaces/${ns}/pods`, { labelSelector: `${LABEL.trainingJob}=${name},${LABEL.role}=replica,${LABEL.attempt}=${attempt}` })).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
    if (pods.length === 0) return;
    const at = new Date(this.clock.nowMs()).toISOString();
    // Told first, so the controller restarts the gang at once and does not count the move as a failure. Its job
    // watch and its pod watch are separate streams: the pause lets the annotation reach its cache before the deletes.
    await this.client.mergePatch(`${API_PATH}/namespaces/${ns}/trainingjobs/${name}`, { metadata: { annotations: { [ANNOTATION.gangEvicted]: JSON.stringify({ attempt: job.status?.attempt ?? 0, reason: MIGRATION_DISRUPTION_REASON, message: why }) } } });
    await new Promise((r) => setTimeout(r, this.opts.announceMs ?? 1000));
    const condition = { type: 'DisruptionTarget', status: 'True', reason: MIGRATION_DISRUPTION_REASON, message: why.slice(0, 1000), lastTransitionTime: at };
    // Conditions first on all, then the deletes: a replica is never deleted before its siblings carry the reason.
    await Promise.all(
      pods.map((p) =>
        this.client
          .request('PATCH', `/api/v1/namespaces/${ns}/pods/${p.metadata?.name ?? ''}/status`, { contentType: 'application/strategic-merge-patch+json', body: { status: { conditions: [condition] } } })
          .catch((e: unknown) => this.opts.log(`health migration: ${ns}/${p.metadata?.name ?? ''}: condition: ${(e as Error).message}`)),
      ),
    );
    const results = await Promise.allSettled(pods.map((p) => this.client.request('DELETE', `/api/v1/namespaces/${ns}/pods/${p.metadata?.name ?? ''}`, { body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: p.metadata?.uid } } })));
    const failed = results.filter((r) => r.status === 'rejected' && !isStatus(r.reason, 404) && !isStatus(r.reason, 409));
    this.stats.evictedPods += results.length - failed.length;
    this.stats.evictedGangs++;
    this.event(job, 'Normal', 'MigratedOffGpu', `evicting the gang (attempt ${attempt}, ${pods.length} replicas): ${why}`);
    this.opts.log(`health migration: ${key}: evicted ${pods.length} replicas of attempt ${attempt}: ${why}`);
    // A delete that failed leaves the controller to restart the gang (a vanished replica restarts it whole).
    for (const f of failed) this.opts.log(`health migration: ${key}: delete: ${((f as PromiseRejectedResult).reason as Error).message}`);
  }

  private event(job: JobObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const ns = job.metadata.namespace ?? 'default';
    const name = job.metadata.name ?? '';
    const at = new Date(this.clock.nowMs()).toISOString();
    void this.client
      .post(`/api/v1/namespaces/${ns}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${name}.`, namespace: ns },
        involvedObject: { apiVersion: 'ai.sits2026.dev/v1', kind: KIND.trainingJob, name, namespace: ns, ...(job.metadata.uid === undefined ? {} : { uid: job.metadata.uid }) },
        reason,
        message: message.slice(0, 1000),
        type,
        source: { component: 'sits-health-migration' },
        reportingComponent: 'sits-health-migration',
        reportingInstance: 'sits-health-migration',
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      })
      .catch((e: unknown) => this.opts.log(`health migration: event: ${(e as Error).message}`));
  }

  private once_(key: string, fn: () => void): void {
    if (this.said.has(key)) return;
    if (this.said.size > 10_000) this.said.clear();
    this.said.add(key);
    fn();
  }

  private kick(): void {
    if (this.stopped) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.once().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.kick();
      } else this.schedule();
    });
  }

  private schedule(): void {
    if (this.stopped || this.running !== undefined) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), this.opts.intervalMs ?? 2000);
  }
}
