/**
 * GPU lending between serving and elastic training (issue 12, Deliver 5; ADR 0131): which elastic training job
 * lends GPUs to a service replica that finds none free, how many whole workers it gives up, and whether it shrinks
 * at once or at its next checkpoint boundary; and how many workers it gets back once GPUs are spare again.
 *
 * One decision for every host: the serving simulator (serving/sim/sharing.ts) and the live lender
 * (live/serving/gpu-lending.ts) both call these functions, so the simulated and the live cluster lend by the same rules.
 * Pure: no clock (the host decides when a checkpoint boundary is and when a cooldown has passed), no I/O.
 *
 * Rules, per candidate job (all must hold):
 * - it keeps at least `minWorkers` workers after the loan, and gives whole workers (a worker is one replica pod
 *   with `gpusPerWorker` GPUs; the job stays one gang of fewer workers, never half of one);
 * - its priority is not above the borrower's;
 * - from another queue, the borrower's queue may reclaim (`reclaimWithinCohort` Any, or LowerPriority and the job
 *   has a lower priority), and the lender's queue keeps its guaranteed GPUs;
 * - it can stop cleanly: preemptible (shrinks now) or checkpointing (shrinks at its next checkpoint boundary).
 * Among those that qualify: preemptible first (the replica starts soonest), then lower priority, then the fewest
 * GPUs freed beyond the need, then the id (a documented tie-break, so every host picks the same job).
 */

export type ReclaimPolicy = 'Never' | 'LowerPriority' | 'Any';

export interface Borrower {
  readonly id: string;
  readonly queue: string;
  readonly priority: number;
  /** Whole GPUs the waiting replica still lacks. */
  readonly gpus: number;
  /** spec.preemption.reclaimWithinCohort of the borrower's queue (Any when it has no Queue object). */
  readonly reclaim: ReclaimPolicy;
}

export interface Lender {
  readonly id: string;
  readonly queue: string;
  readonly priority: number;
  /** Workers the job runs, less those already promised to a borrower. */
  readonly workers: number;
  readonly minWorkers: number;
  readonly gpusPerWorker: number;
  /** Marked preemptible: shrinks at once. */
  readonly preemptible: boolean;
  /** Has checkpoints to shrink at (a checkpoint policy). */
  readonly checkpoints: boolean;
  /** GPUs its queue may still give up before it falls below its guaranteed GPUs; undefined: no guarantee. */
  readonly queueLendableGpus?: number;
}

export type RefusalCode = 'AtMinimum' | 'HigherPriority' | 'QueueNoReclaim' | 'QueueGuaranteed' | 'NoBoundary' | 'NoGpus';

export interface Refusal {
  readonly lender: string;
  readonly code: RefusalCode;
  readonly message: string;
}

export type LendDecision =
  | { readonly ok: true; readonly lender: string; readonly workers: number; readonly gpus: number; readonly when: 'now' | 'checkpoint' }
  | { readonly ok: false; readonly refusals: readonly Refusal[]; readonly message: string };

/** Why `l` may not lend to `b`, or undefined when it may (workers = whole workers covering b.gpus). */
export function refusal(b: Borrower, l: Lender, workers: number): Refusal | undefined {
  const no = (code: RefusalCode, message: string): Refusal => ({ lender: l.id, code, message });
  if (l.gpusPerWorker <= 0) return no('NoGpus', `${l.id} holds no GPUs`);
  if (l.priority > b.priority) return no('HigherPriority', `${l.id} has priority ${l.priority}, above ${b.id}'s ${b.priority}`);
  if (l.queue !== b.queue) {
    if (b.reclaim === 'Never')
      return no('QueueNoReclaim', `queue ${b.queue} never reclaims from other queues (reclaimWithinCohort Never), ${l.id} is in queue ${l.queue}`);
    if (b.reclaim === 'LowerPriority' && l.priority >= b.priority)
      return no(
        'QueueNoReclaim',
        `queue ${b.queue} reclaims only from lower priorities, ${l.id} in queue ${l.queue} has priority ${l.priority} (${b.id}: ${b.priority})`,
      );
  }
  if (l.workers - workers < l.minWorkers) return no('AtMinimum', `${l.id} would run ${l.workers - workers} workers, below its minimum of ${l.minWorkers}`);
  const gpus = workers * l.gpusPerWorker;
  if (l.queue !== b.queue && l.queueLendableGpus !== undefined && gpus > l.queueLendableGpus)
    return no('QueueGuaranteed', `queue ${l.queue} keeps its guaranteed GPUs: ${l.id} may lend ${Math.max(0, l.queueLendableGpus)}, ${gpus} needed`);
  if (!l.preemptible && !l.checkpoints) return no('NoBoundary', `${l.id} is neither preemptible nor checkpointing: no boundary to shrink it at`);
  return undefined;
}

/** Whole workers of `gpusPerWorker` GPUs covering `gpus`. */
export const workersFor = (gpus: number, gpusPerWorker: number): number => Math.ceil(gpus / gpusPerWorker);

/** The job that lends to `b`, or every candidate's refusal. */
export function planLend(b: Borrower, lenders: readonly Lender[]): LendDecision {
  const refusals: Refusal[] = [];
  let best: { l: Lender; workers: number; waste: number } | undefined;
  for (const l of lenders) {
    const workers = l.gpusPerWorker > 0 ? workersFor(b.gpus, l.gpusPerWorker) : 0;
    const r = refusal(b, l, workers);
    if (r !== undefined) {
      refusals.push(r);
      continue;
    }
    const waste = workers * l.gpusPerWorker - b.gpus;
    if (best === undefined || better(l, waste, best.l, best.waste)) best = { l, workers, waste };
  }
  if (best === undefined) {
    const message =
      lenders.length === 0
        ? `no elastic training job to borrow ${b.gpus} GPU(s) from`
        : `no training job lends ${b.gpus} GPU(s) to ${b.id}: ${refusals.map((r) => r.message).join('; ')}`;
    return { ok: false, refusals, message };
  }
  return { ok: true, lender: best.l.id, workers: best.workers, gpus: best.workers * best.l.gpusPerWorker, when: best.l.preemptible ? 'now' : 'checkpoint' };
}

function better(a: Lender, aWaste: number, b: Lender, bWaste: number): boolean {
  if (a.preemptible !== b.preemptible) return a.preemptible;
  if (a.priority !== b.priority) return a.priority < b.priority;
  if (aWaste !== bWaste) return aWaste < bWaste;
  return a.id < b.id;
}

export interface GiveBack {
  /** Workers the job has lent and not got back. */
  readonly lentWorkers: number;
  readonly gpusPerWorker: number;
  /** Free GPUs no waiting replica needs. */
  readonly spareGpus: number;
}

/**
 * Whole workers the job gets back now: as many lent workers as the spare GPUs hold. The host calls it only once
 * its cooldown since the last resize has passed (every resize restarts the gang: no resize storms).
 */
export function giveBackWorkers(g: GiveBack): number {
  if (g.lentWorkers <= 0 || g.gpusPerWorker <= 0) return 0;
  return Math.min(g.lentWorkers, Math.floor(Math.max(0, g.spareGpus) / g.gpusPerWorker));
}
