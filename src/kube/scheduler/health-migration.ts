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
 * A GPU that failed outright (the entry's `state: failed`, ADR 0150, or an in-process intent from `handle` with mode
 * `restore-last`) skips 1–2: the job on it is likely dead, so the gang is evicted at once and restarts from its
 * newest Ready checkpoint. Work that cannot checkpoint is left running (moving it would lose all its work now; the
 * quarantine keeps new work off), with an Event saying so. Events on the TrainingJob name why.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, API_PATH, LABEL } from '../../api/wire.ts';
import type { Clock } from '../../core/ports.ts';
import { migrateMode, type MigrateIntent } from '../../core/health/monitor.ts';
import { parseQuarantine, type QuarantineEntry } from '../../core/health/quarantine.ts';
import { isStatus, type KubeClient } from '../client/client.ts';
import { checkpointThenEvict, GangMover, type MoveJobObject, type MoveStep } from './gang-mover.ts';
import { Reflector } from '../client/reflector.ts';

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

type JobObject = MoveJobObject;

export type MigrationStep = MoveStep;

/**
 * What to do now about job `job` on quarantined GPU `entry` (pure). A request of ours counts only when it names the
 * device and is not older than the quarantine (an older one moved the job off an earlier quarantine).
 */
export function migrationStep(
  job: JobObject,
  entry: Pick<QuarantineEntry, 'node' | 'gpu' | 'sinceMs'>,
  mode: MigrateIntent['mode'],
  nowMs: number,
  graceMs: number,
): MigrationStep {
  const ck = job.status?.checkpoint;
  const newest =
    ck?.lastReady === undefined ? 'no Ready checkpoint yet' : `its newest Ready checkpoint ${ck.lastReady.snapshotName} (step ${ck.lastReady.step})`;
  if (mode === 'restore-last')
    return {
      kind: 'evict',
      why: `the GPU failed outright, so the job on it is likely dead and no checkpoint is asked for; the gang restarts elsewhere from ${newest}`,
    };
  if (job.spec.checkpoint === undefined)
    return {
      kind: 'leave',
      why: 'the job has no checkpoint policy, so moving it would lose all its work; it keeps running and the quarantine keeps new work off the GPU',
    };
  const req = parseMigrationRequest(job.metadata.annotations?.[ANNOTATION.requestCheckpoint]);
  const ours = req === undefined || req.node !== entry.node || req.gpu !== entry.gpu || req.atMs < entry.sinceMs ? undefined : req;
  return checkpointThenEvict(job, ours, migrationRequestValue(nowMs, entry.node, entry.gpu), nowMs, graceMs);
}

export interface MigrationTarget {
  readonly entry: Pick<QuarantineEntry, 'node' | 'gpu' | 'sinceMs' | 'reason'>;
  readonly mode: MigrateIntent['mode'];
}

/**
 * The GPUs to move work off and how (pure): each quarantine on the Nodes, `restore-last` when its entry says the GPU
 * `failed` (ADR 0150), else `checkpoint-first`; an in-process intent adds its device or gives its mode, but never
 * turns a Node's `failed` back into `checkpoint-first` (the intent may be older than the escalation).
 */
export function migrationTargets(quarantined: readonly QuarantineEntry[], intents: Iterable<MigrateIntent>): MigrationTarget[] {
  const out = new Map<string, MigrationTarget>();
  for (const e of quarantined) out.set(`${e.node}/${e.gpu}`, { entry: e, mode: migrateMode(e.state) });
  for (const i of intents) {
    const k = `${i.node}/${i.gpu}`;
    const onNode = out.get(k);
    if (onNode?.mode !== 'restore-last')
      out.set(k, { entry: { node: i.node, gpu: i.gpu, sinceMs: onNode?.entry.sinceMs ?? i.atMs, reason: i.reason }, mode: i.mode });
  }
  return [...out.values()];
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

const gpuIndices = (p: V1Pod): number[] =>
  (p.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '')
    .split(',')
    .filter((s) => /^\d+$/.test(s))
    .map(Number);
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
  private readonly mover: GangMover;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: GpuHealthMigratorOptions,
  ) {
    this.clock = opts.clock ?? { nowMs: () => Date.now() };
    this.mover = new GangMover(client, {
      log: opts.log,
      clock: this.clock,
      reason: MIGRATION_DISRUPTION_REASON,
      component: 'sits-health-migration',
      logPrefix: 'health migration',
      ...(opts.announceMs === undefined ? {} : { announceMs: opts.announceMs }),
    });
    const kick = (): void => this.kick();
    this.nodes = new Reflector<V1Node>(client, '/api/v1/nodes', {
      add: kick,
      update: kick,
      delete: () => undefined,
      error: (e) => opts.log(`health migration: nodes watch: ${e.message}`),
    });
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
    const quarantined: QuarantineEntry[] = [];
    for (const n of this.nodes.items.values()) {
      const name = n.metadata?.name ?? '';
      const text = n.metadata?.annotations?.[ANNOTATION.gpuQuarantine];
      if (text === undefined) continue;
      const q = parseQuarantine(name, text);
      if (!q.ok) {
        this.once_(`bad:${name}:${text}`, () => this.opts.log(`health migration: node ${name}: annotation ${ANNOTATION.gpuQuarantine}: ${q.error}`));
        continue;
      }
      quarantined.push(...q.value);
    }
    const onNodes = new Set(quarantined.map((e) => `${e.node}/${e.gpu}`));
    for (const [k, i] of this.intents) if (now - i.atMs > INTENT_TTL_MS && !onNodes.has(k)) this.intents.delete(k);
    for (const { entry, mode } of migrationTargets(quarantined, this.intents.values())) {
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
          this.opts.log(
            `health migration: pod ${ns}/${p.metadata?.name ?? ''} holds quarantined GPU ${entry.gpu} of ${entry.node} and is no TrainingJob: left running (its owner moves it, or it ends)`,
          );
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
          this.mover.event(job, 'Warning', 'GpuQuarantinedNotMoved', `${device} is quarantined (${entry.reason}); ${step.why}`);
        });
        continue;
      }
      if (step.kind === 'request') {
        const grace = Math.round((this.opts.graceMs ?? DEFAULT_MIGRATION_GRACE_MS) / 1000);
        await this.mover.request(
          job,
          step.value,
          'CheckpointForMigration',
          `${device} is quarantined (${entry.reason}): checkpoint requested (${step.value}); the gang moves once it is ready, within ${grace} s at the latest`,
        );
        this.stats.requested++;
        this.opts.log(`health migration: ${key} on ${device}: checkpoint requested (${step.value})`);
        continue;
      }
      await this.mover.evict(job, `${device} is quarantined (${entry.reason}): ${step.why}`, 'MigratedOffGpu');
      this.stats.evictedGangs = this.mover.stats.evictedGangs;
      this.stats.evictedPods = this.mover.stats.evictedPods;
    }
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
