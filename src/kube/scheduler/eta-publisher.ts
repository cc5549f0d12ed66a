/**
 * "When will my job start": at most once a minute, the queue cycle is run forward over a copy of the
 * cluster and each waiting pod gets its expected start through the StatusWriter (the annotation
 * `ai.sits2026.dev/expected-start`); controllers copy it into their status. As in the simulator (ADR 0021):
 * runtimes are the user's (`expected-runtime-seconds`) or learned from the queue's finished jobs (running
 * jobs end at their conditional expectation given the time they ran), victims of the forward run go back
 * to their queue if a controller recreates them, and later arrivals are forecast per queue. No cadence: the
 * live queue cycle runs on every change, which is the forward run's event-driven mode.
 */
import { startedJob, type RunningJob } from '../../core/actions/jobs.ts';
import { estimateStarts } from '../../core/actions/eta.ts';
import type { CycleResult } from '../../core/actions/queue-cycle.ts';
import type { Profile } from '../../core/framework/types.ts';
import type { Rng, StatusWriter } from '../../core/ports.ts';
import type { ClusterState } from '../../core/snapshot/cluster-state.ts';
import { ETA_MAX_JOBS, type JobsView, type PodJobs } from '../cache/pod-jobs.ts';

const ETA_REFRESH_MS = 60_000;
/** A job without an estimate yet gets one this soon after the last forward run. */
const ETA_NEW_JOB_MS = 5_000;

export class EtaPublisher {
  private lastMs = Number.NEGATIVE_INFINITY;
  private readonly estimated = new Set<string>();
  /** Whether any job waited at the last call (only then is a refresh ever due), and one had no estimate yet. */
  private waited = false;
  private fresh = false;
  /** The expected start last published per waiting job (ms), for the metrics' expected-start error; at most ETA_MAX_JOBS. */
  private readonly published = new Map<string, number>();

  constructor(
    private readonly jobs: PodJobs,
    private readonly status: StatusWriter,
    private readonly rng: () => Rng,
  ) {}

  /** Jobs with an estimate and expected starts kept (`sits bench soak` checks that neither grows). */
  sizes(): { estimated: number; published: number } {
    return { estimated: this.estimated.size, published: this.published.size };
  }

  /** The expected start last published for a job that starts now, then forgotten; undefined when it had none. */
  takePublished(jobId: string): number | undefined {
    const at = this.published.get(jobId);
    this.published.delete(jobId);
    return at;
  }

  /** When the next refresh is due (never while no job waits). */
  dueAtMs(): number {
    return this.waited ? this.lastMs + (this.fresh ? ETA_NEW_JOB_MS : ETA_REFRESH_MS) : Number.POSITIVE_INFINITY;
  }

  /**
   * At `nowMs` (wall clock ms) over `state`, which holds the last cycle's commits; `waitingIds` are the jobs
   * that wait after it (tried and not started); `res` is that cycle's result when one ran now (its started
   * jobs run, its victims are gone). Runs when a refresh is due, or soon when a waiting job has no estimate yet.
   */
  publish(nowMs: number, state: ClusterState, profile: Profile, view: JobsView, waitingIds: ReadonlySet<string>, res?: CycleResult): void {
    const started = new Set(res?.started.map((x) => x.job.id) ?? []);
    const waiting = view.jobs.filter((j) => waitingIds.has(j.id) && !started.has(j.id));
    // Every job not started takes part in the forward run (one about to be tried is waiting too).
    const pending = view.jobs.filter((j) => !started.has(j.id));
    // Too many jobs for a forward run: none is due until the jobs change (the next call decides again).
    this.waited = waiting.length > 0 && pending.length <= ETA_MAX_JOBS;
    if (!this.waited) return;
    const fresh = waiting.some((j) => !this.estimated.has(j.id));
    this.fresh = fresh;
    if (nowMs - this.lastMs < (fresh ? ETA_NEW_JOB_MS : ETA_REFRESH_MS)) return;
    this.lastMs = nowMs;
    this.fresh = false;
    const stillRunning = new Map<string, RunningJob>(view.running);
    for (const p of res?.preempted ?? []) stillRunning.delete(p.victim.id);
    for (const x of res?.started ?? []) {
      stillRunning.set(x.job.id, startedJob(x.job, x.placements, nowMs));
    }
    const arrivals = this.jobs.forecast(nowMs, view.jobs.length);
    const eta = estimateStarts({
      nowMs,
      state,
      profile,
      rng: this.rng(),
      queues: view.queues,
      pending,
      running: stillRunning,
      options: { minRuntimeMs: view.minRuntimeMs, explain: false },
      requeue: this.jobs.requeueOf(view.jobs, arrivals),
      arrivals,
    });
    this.estimated.clear();
    this.published.clear();
    for (const j of waiting) {
      this.estimated.add(j.id);
      const at = eta.get(j.id);
      if (at === undefined) continue;
      this.published.set(j.id, at);
      this.status.expectedStart(
        (view.podsOf.get(j.id) ?? []).map((p) => p.key),
        at,
      );
    }
  }
}
