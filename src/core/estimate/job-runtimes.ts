/**
 * The glue between learned runtimes (`RuntimeModel`) and the forward run (`estimateStarts`), shared by the
 * simulator and the live scheduler (ADR 0021): which classes a job's runtime is learned under, running jobs'
 * estimated ends as the conditional expectation given the work they have done, and what a victim of the
 * forward run becomes when it goes back to its queue.
 */
import type { QueuedJob, RunningJob } from '../actions/jobs.ts';
import type { RuntimeModel } from './runtime.ts';

/** GPU size class of a job: 1 GPU (or a fraction of one), 2–8 (one node), 9+ (several nodes); '0' without GPUs. */
export function sizeClass(gpus: number): string {
  if (gpus <= 0) return '0';
  return gpus <= 1 ? '1' : gpus <= 8 ? '2-8' : '9+';
}

/** The classes a job's runtime is learned under, most specific first: queue and size class, then the queue. */
export function runtimeKeys(queue: string, gpus: number): string[] {
  return [`${queue}|${sizeClass(gpus)}`, queue];
}

/** Expected runtime still ahead of a job of these classes that has done `doneMs` of work (at least a second). */
export function expectedRemaining(model: RuntimeModel, keys: readonly string[], doneMs: number): number {
  return Math.max(1000, model.expectedTotal(keys, doneMs) - doneMs);
}

/** What the model needs to know of a running job: its classes and the work it has done. */
export interface RunningWork {
  readonly keys: readonly string[];
  readonly doneMs: number;
  /** The job's own end estimate stands (e.g. a user-given runtime); it still counts as a censored observation. */
  readonly keepEstimate?: boolean;
}

/**
 * Sets the model's censored observations to the running jobs' work as of `nowMs`, and returns the running
 * jobs (same order) with `estEndMs = now + E[T | T > done] − done` unless their estimate is kept.
 */
export function withLearnedEnds(
  model: RuntimeModel,
  running: ReadonlyMap<string, RunningJob>,
  workOf: (r: RunningJob) => RunningWork,
  nowMs: number,
): Map<string, RunningJob> {
  const work = [...running.values()].map((r) => [r, workOf(r)] as const);
  model.setRunning(work.map(([, w]) => ({ keys: w.keys, elapsedMs: w.doneMs })));
  const out = new Map<string, RunningJob>();
  for (const [r, w] of work) out.set(r.id, w.keepEstimate === true ? r : { ...r, estEndMs: nowMs + expectedRemaining(model, w.keys, w.doneMs) });
  return out;
}

/**
 * A victim of the forward run back in its queue as `base` (its queued form), with the runtime it was expected
 * to run less the work kept by its last checkpoint (`keptMs`): at least a second.
 */
export function requeueAfterCheckpoint(base: QueuedJob, victim: RunningJob, keptMs: number): QueuedJob {
  return { ...base, estRuntimeMs: Math.max(1000, victim.estEndMs - victim.startMs - keptMs) };
}
