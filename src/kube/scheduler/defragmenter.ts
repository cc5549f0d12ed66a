/**
 * Live defragmentation by migration (issue 14 item 4, ADR 0095 → ADR 0144). Off unless a Queue says
 * `spec.preemption.defragmentByMigration: true`. In the scheduler's cycle, the longest-waiting gang of such a queue
 * that waits on capacity is given to the core's planner (`planMigration`, the replay's code): when the cluster has
 * the GPUs but no domain has room, and moving checkpointable running TrainingJobs out of one domain frees it with a
 * gain above the cost, the plan is taken. Its moves are carried out by the health migrator's machinery
 * (gang-mover.ts): each moved job is asked for a checkpoint (`Migration/<time>/defragment`), its gang is evicted
 * once the snapshot is Ready (or the cycle failed, or the grace ran out) with `gang-evicted` reason Defragment, and
 * its controller restarts it from that checkpoint, not counted as a failure. The scheduler then places the waiting
 * gang in the freed domain, and the moved jobs wherever they fit (the plan checked that they do).
 *
 * One plan at a time; the plan is dropped (nothing more is evicted) if its gang starts or goes before the moves.
 * While a plan stands, the domain it frees is held for its gang (`held`, a reservation the cycle honours as a
 * backfill reservation): the moved jobs' new pods, or any other job, cannot take it back while the gang waits.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, API_PATH, LABEL } from '../../api/wire.ts';
import { expectedStartMs, planMigration, type MigrationCost, type MigrationPlan, type Movable, type NoPlanReason } from '../../core/actions/migration.ts';
import type { QueuedJob, RunningJob } from '../../core/actions/jobs.ts';
import { reservationFor, type Reservation, type Waiting } from '../../core/actions/queue-cycle.ts';
import type { Scheduler } from '../../core/framework/scheduler.ts';
import type { GangSpec, PodSpec } from '../../core/model/pod.ts';
import type { Clock } from '../../core/ports.ts';
import type { QueueSpec } from '../../core/queue/model.ts';
import { isStatus, type KubeClient } from '../client/client.ts';
import { checkpointThenEvict, GangMover, type MoveJobObject } from './gang-mover.ts';
import { splitKey } from '../client/in-flight.ts';

/** The DisruptionTarget and `gang-evicted` reason of a defragmentation move. */
export const DEFRAGMENT_REASON = 'Defragment';
/** 5 min, like the queues' default checkpointGraceSeconds (ADR 0093). */
export const DEFAULT_DEFRAGMENT_GRACE_MS = 300_000;
/** After a plan, the same gang is not planned for again this soon (its moves are still settling). */
const REPLAN_MS = 60_000;
/** How long the freed domain stays held after the checkpoint grace, for the moved jobs to go and the gang to bind. */
const HOLD_AFTER_GRACE_MS = 600_000;

export const defragmentRequestValue = (atMs: number): string => `Migration/${new Date(atMs).toISOString()}/defragment`;

/** Reads `Migration/<time>/defragment` back; undefined for any other request. */
export function parseDefragmentRequest(value: string | undefined): { readonly value: string; readonly atMs: number } | undefined {
  const m = /^Migration\/([^/]+)\/defragment$/.exec(value ?? '');
  if (m === null) return undefined;
  const atMs = Date.parse(m[1] as string);
  return Number.isFinite(atMs) ? { value: value as string, atMs } : undefined;
}

export interface DefragmenterOptions {
  readonly log: (m: string) => void;
  readonly clock: Clock;
  /** The longest wait for a moved job's checkpoint before its gang is evicted anyway (default 300 s). */
  readonly graceMs?: number;
  readonly announceMs?: number;
  readonly cost?: MigrationCost;
}

export interface DefragmentInput {
  readonly nowMs: number;
  readonly scheduler: Scheduler;
  readonly queues: ReadonlyMap<string, QueueSpec>;
  readonly jobs: readonly QueuedJob[];
  readonly waiting: ReadonlyMap<string, Waiting>;
  readonly running: Iterable<RunningJob>;
  /** A pod of the cache by key, and its spec as the scheduler reads it. */
  readonly pod: (key: string) => V1Pod | undefined;
  readonly specOf: (pod: V1Pod) => PodSpec | undefined;
}

interface Move {
  readonly ns: string;
  readonly name: string;
  readonly jobId: string;
  done: boolean;
}

interface Active {
  readonly plan: MigrationPlan;
  readonly atMs: number;
  readonly moves: readonly Move[];
}

export class Defragmenter {
  readonly stats = { plans: 0, dropped: 0, requested: 0, evictedGangs: 0 };
  private readonly mover: GangMover;
  private active: Active | undefined;
  private holding: { readonly reservation: Reservation; readonly untilMs: number } | undefined;
  private readonly lastPlan = new Map<string, number>();
  /** The last reason logged per gang for making no plan: said once, not every cycle. */
  private readonly lastNoPlan = new Map<string, string>();
  private running: Promise<void> | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: DefragmenterOptions,
  ) {
    this.mover = new GangMover(client, {
      log: opts.log,
      clock: opts.clock,
      reason: DEFRAGMENT_REASON,
      component: 'sits-scheduler',
      logPrefix: 'defragment',
      ...(opts.announceMs === undefined ? {} : { announceMs: opts.announceMs }),
    });
  }

  /** The plan under way, if any (tests, `sits explain`). */
  get plan(): MigrationPlan | undefined {
    return this.active?.plan;
  }

  /** The freed domain of the plan under way, held for its gang until it starts (the cycle's `held`). */
  held(nowMs: number): readonly Reservation[] {
    const h = this.holding;
    if (h === undefined) return [];
    if (nowMs <= h.untilMs) return [h.reservation];
    this.opts.log(`defragment: the hold for ${h.reservation.jobId} on ${h.reservation.nodes.join(', ')} ran out`);
    this.holding = undefined;
    return [];
  }

  /** In the cycle, after its commits (synchronous: the scheduler's state is this cycle's). */
  consider(input: DefragmentInput): void {
    if (this.holding !== undefined && !input.waiting.has(this.holding.reservation.jobId)) this.holding = undefined;
    const a = this.active;
    if (a !== undefined) {
      // Its gang started or went before every move was made: the rest are not needed.
      if (!input.waiting.has(a.plan.jobId) && a.moves.some((m) => !m.done)) {
        this.stats.dropped++;
        this.opts.log(`defragment: ${a.plan.jobId} no longer waits; moves not yet made are dropped`);
        this.active = undefined;
      }
      return;
    }
    const candidates = input.jobs
      .filter(
        (j) =>
          input.waiting.get(j.id)?.reason === 'capacity' &&
          input.queues.get(j.queue)?.preemption?.defragmentByMigration === true &&
          input.nowMs - (this.lastPlan.get(j.id) ?? -Infinity) >= REPLAN_MS,
      )
      .sort((x, y) => x.arrivalMs - y.arrivalMs || (x.seq ?? 0) - (y.seq ?? 0));
    const job = candidates[0];
    if (job === undefined) return;
    const running = [...input.running];
    const movable: Movable[] = [];
    const keyOf = new Map<string, { ns: string; name: string }>();
    for (const r of running) {
      if (!r.preemptible || r.checkpointable !== true || (r.criticalUntilMs ?? -Infinity) > input.nowMs) continue;
      const pods = r.podIds.map((k) => input.pod(k));
      const tj = pods[0]?.metadata?.labels?.[LABEL.trainingJob];
      // Only TrainingJob gangs move: their controller restores them from the checkpoint.
      if (
        tj === undefined ||
        pods.some((p) => p === undefined || p.metadata?.labels?.[LABEL.trainingJob] !== tj || p.metadata.labels[LABEL.role] !== 'replica')
      )
        continue;
      const specs = pods.map((p) => input.specOf(p as V1Pod));
      if (specs.some((s) => s === undefined)) continue;
      const gang: GangSpec = { name: r.id, minMember: specs.length, members: specs as PodSpec[], topology: {}, priority: r.priority, queue: r.queue };
      movable.push({ job: r, gang });
      keyOf.set(r.id, { ns: splitKey(r.podIds[0] as string)[0], name: tj });
    }
    if (movable.length === 0)
      return this.noPlan(
        job.id,
        `no movable job (${running.length} running; a move needs a checkpointable TrainingJob gang, preemptible, not in a critical phase)`,
      );
    const expected = expectedStartMs(input.scheduler, job.gang, running, input.nowMs);
    let why: NoPlanReason | undefined;
    const plan = planMigration({
      nowMs: input.nowMs,
      scheduler: input.scheduler,
      job,
      movable,
      expectedStartMs: expected,
      onNoPlan: (r) => (why = r),
      ...(this.opts.cost === undefined ? {} : { cost: this.opts.cost }),
    });
    if (plan === undefined) return this.noPlan(job.id, `no plan (${why ?? 'none pays'}) with ${movable.length} movable job(s)`);
    this.lastNoPlan.delete(job.id);
    this.lastPlan.set(job.id, input.nowMs);
    if (this.lastPlan.size > 10_000) this.lastPlan.clear();
    this.stats.plans++;
    const moves = plan.moves.map((m) => ({ ...(keyOf.get(m.job.id) as { ns: string; name: string }), jobId: m.job.id, done: false }));
    this.active = { plan, atMs: input.nowMs, moves };
    const reservation = reservationFor(
      job.id,
      plan.startMs,
      plan.allocations.map((al) => ({ node: al.node, gpuMilli: al.gpus.length * al.gpuMilli })),
    );
    this.holding = { reservation, untilMs: input.nowMs + (this.opts.graceMs ?? DEFAULT_DEFRAGMENT_GRACE_MS) + HOLD_AFTER_GRACE_MS };
    const h = (ms: number): string => `${Math.round((100 * ms) / 3.6e6) / 100} GPU-h`;
    this.opts.log(
      `defragment: moving ${moves.map((m) => `${m.ns}/${m.name}`).join(', ')} (checkpoint, restore elsewhere) frees ${plan.level} ${plan.domain} for ${job.id}: gain ${h(plan.gainGpuMs)} > cost ${h(plan.costGpuMs)}`,
    );
  }

  private noPlan(jobId: string, why: string): void {
    if (this.lastNoPlan.get(jobId) === why) return;
    if (this.lastNoPlan.size > 10_000) this.lastNoPlan.clear();
    this.lastNoPlan.set(jobId, why);
    this.opts.log(`defragment: ${jobId} waits on capacity: ${why}`);
  }

  /** Drives the moves of the plan under way (once per loop turn; never overlaps itself; never throws). */
  tick(): void {
    if (this.active === undefined || this.running !== undefined) return;
    this.running = this.drive().finally(() => (this.running = undefined));
  }

  async drain(): Promise<void> {
    await this.running;
  }

  private async drive(): Promise<void> {
    const a = this.active;
    if (a === undefined) return;
    const now = this.opts.clock.nowMs();
    const grace = this.opts.graceMs ?? DEFAULT_DEFRAGMENT_GRACE_MS;
    for (const m of a.moves) {
      if (m.done || this.active !== a) continue;
      try {
        let job: MoveJobObject;
        try {
          job = await this.client.get<MoveJobObject>(`${API_PATH}/namespaces/${m.ns}/trainingjobs/${m.name}`);
        } catch (e) {
          if (!isStatus(e, 404)) throw e;
          m.done = true;
          continue;
        }
        const req = parseDefragmentRequest(job.metadata.annotations?.[ANNOTATION.requestCheckpoint]);
        const ours = req !== undefined && req.atMs >= a.atMs ? req : undefined;
        const step = checkpointThenEvict(job, ours, defragmentRequestValue(now), now, grace);
        const what = `${a.plan.level} ${a.plan.domain} is freed for ${a.plan.jobId} (defragmentation by migration)`;
        if (step.kind === 'request') {
          await this.mover.request(
            job,
            step.value,
            'CheckpointForDefragmentation',
            `${what}: checkpoint requested (${step.value}); the gang moves once it is ready, within ${Math.round(grace / 1000)} s at the latest`,
          );
          this.stats.requested++;
          this.opts.log(`defragment: ${m.ns}/${m.name}: checkpoint requested (${step.value})`);
        } else if (step.kind === 'evict') {
          await this.mover.evict(job, `${what}: ${step.why}`, 'MovedForDefragmentation');
          this.stats.evictedGangs++;
          m.done = true;
        }
      } catch (e) {
        this.opts.log(`defragment: ${m.ns}/${m.name}: ${(e as Error).message}`);
      }
    }
    if (this.active === a && a.moves.every((m) => m.done)) this.active = undefined;
  }
}
