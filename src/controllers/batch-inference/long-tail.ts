/**
 * The long-tail breaker (seed 004 §4.3), a pure policy: from a running attempt's progress, predict when it will
 * finish; an attempt predicted to miss the deadline, or to take longer than thresholdPct of the typical attempt,
 * is re-sharded by records: it is asked to stop at a cut point a little past where it is now, and the rest of its
 * records become new chunks for idle workers (Spark speculation, but driven by the prediction and without running
 * the same records twice when the straggler honours the cut). Whatever races remain (a straggler that ignores the
 * cut, a chunk that finishes after the original), the commit protocol accepts each record once and the losing
 * copy is cancelled and its output discarded (coordinator.ts).
 */
import type { Range } from './ranges.ts';
import { size, split } from './ranges.ts';

export interface RunningAttempt {
  readonly id: string;
  readonly range: Range;
  readonly startMs: number;
  /** Records finished so far, in order from range.start. */
  readonly done: number;
  /** Already re-sharded or itself a chunk: only the idle steal may split it again, never the straggler rule. */
  readonly stealOnly?: boolean;
}

export interface LongTailConfig {
  readonly enabled: boolean;
  /** A straggler's predicted duration exceeds this percentage of the typical attempt duration (CRD default 130). */
  readonly thresholdPct: number;
  /** The job's deadline, when it has one. */
  readonly deadlineMs?: number;
  /** Progress observed for at least this long before predicting (a rate needs a few batches). */
  readonly minObservationMs: number;
  /** Time for a new chunk to start on another worker: the cut leaves the straggler this much work. */
  readonly handoffMs: number;
  /** Chunks smaller than this are not worth moving. */
  readonly minChunkRecords: number;
  /**
   * The tail steal: when workers are idle and nothing is queued, any attempt predicted to run longer than
   * 2 × handoffMs is split with them, the owner keeping its equal share (guided self-scheduling at the job's end).
   * Without it the job ends when its last whole shard does while the other workers wait; the straggler rule
   * (thresholdPct) only catches attempts far slower than typical. Unset: off (the behaviour before it existed).
   */
  readonly idleSteal?: boolean;
}

export const DEFAULT_LONG_TAIL: LongTailConfig = {
  enabled: true,
  thresholdPct: 130,
  minObservationMs: 5_000,
  handoffMs: 2_000,
  minChunkRecords: 4,
  idleSteal: true,
};

/** Predicted finish time of an attempt from its own rate; undefined before there is a rate. */
export function predictFinishMs(a: RunningAttempt, nowMs: number, minObservationMs: number): number | undefined {
  const elapsed = nowMs - a.startMs;
  if (elapsed < minObservationMs || a.done <= 0) return undefined;
  const rate = a.done / elapsed;
  return nowMs + (size(a.range) - a.done) / rate;
}

export interface Reshard {
  readonly attemptId: string;
  /** The straggler stops at this record (exclusive). */
  readonly cut: number;
  /** The rest, one chunk per idle worker. */
  readonly chunks: readonly Range[];
  readonly why: string;
}

/**
 * Which attempts to re-shard now. `typicalMsPerRecord` is the median of finished attempts (undefined before the
 * first finishes: then only the deadline can call a straggler); `idleWorkers` bounds the chunks handed out;
 * `queuedTasks` (open work the idle workers will take anyway) is subtracted from them for the tail steal.
 */
export function planReshards(
  running: readonly RunningAttempt[],
  nowMs: number,
  typicalMsPerRecord: number | undefined,
  idleWorkers: number,
  cfg: LongTailConfig,
  queuedTasks = 0,
): Reshard[] {
  if (!cfg.enabled || idleWorkers <= 0) return [];
  const out: Reshard[] = [];
  let idle = idleWorkers;
  let stealable = cfg.idleSteal === true ? Math.max(0, idleWorkers - queuedTasks) : 0;
  // Worst first: the latest predicted finish gets the idle workers.
  const scored = running
    .map((a) => ({ a, finish: predictFinishMs(a, nowMs, cfg.minObservationMs) }))
    .filter((x): x is { a: RunningAttempt; finish: number } => x.finish !== undefined)
    .sort((x, y) => y.finish - x.finish || x.a.id.localeCompare(y.a.id));
  for (const { a, finish } of scored) {
    if (idle <= 0) break;
    const expectedMs = typicalMsPerRecord === undefined ? undefined : typicalMsPerRecord * size(a.range);
    const late = a.stealOnly !== true && cfg.deadlineMs !== undefined && finish > cfg.deadlineMs;
    const slow = a.stealOnly !== true && expectedMs !== undefined && finish - a.startMs > (expectedMs * cfg.thresholdPct) / 100;
    const rate = a.done / (nowMs - a.startMs);
    const handoff = a.range.start + a.done + Math.ceil(rate * cfg.handoffMs);
    if (late || slow) {
      const cut = Math.min(a.range.end, handoff);
      const rest = a.range.end - cut;
      if (rest < cfg.minChunkRecords) continue;
      const k = Math.max(1, Math.min(idle, Math.floor(rest / cfg.minChunkRecords)));
      out.push({
        attemptId: a.id,
        cut,
        chunks: split({ start: cut, end: a.range.end }, k),
        why: late
          ? `predicted to finish at ${Math.round(finish)} ms, after the deadline ${cfg.deadlineMs} ms`
          : `predicted ${Math.round(finish - a.startMs)} ms, over ${cfg.thresholdPct} % of the typical ${Math.round(expectedMs ?? 0)} ms`,
      });
      idle -= k;
      stealable = Math.max(0, stealable - k);
      continue;
    }
    // The tail steal: the owner keeps an equal share (at least what it runs during the hand-off).
    if (stealable <= 0 || finish - nowMs <= 2 * cfg.handoffMs) continue;
    const left = a.range.end - (a.range.start + a.done);
    const k = Math.min(stealable, Math.floor(left / (2 * cfg.minChunkRecords)));
    if (k < 1) continue;
    const cut = Math.min(a.range.end, Math.max(handoff, a.range.start + a.done + Math.ceil(left / (k + 1))));
    if (a.range.end - cut < cfg.minChunkRecords) continue;
    out.push({
      attemptId: a.id,
      cut,
      chunks: split({ start: cut, end: a.range.end }, k),
      why: `${k} worker${k === 1 ? '' : 's'} idle with nothing queued: predicted ${Math.round(finish - nowMs)} ms left, split with them`,
    });
    idle -= k;
    stealable -= k;
  }
  return out;
}
