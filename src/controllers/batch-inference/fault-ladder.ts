/**
 * The fault ladder of a failing shard (seed 004 §2.6), a pure policy:
 *   rung 0  normal run;
 *   rung 1  retry on the same device at lower concurrency (half the batch) and, where the device allows it, a
 *           reduced clock/power limit: what cures OOMs and marginal thermals without moving data;
 *   rung 2  split the records into smaller chunks spread over other devices; the device that failed twice is
 *           quarantined (quarantineMinutes, 15 by default);
 *   rung 3  CPU fallback when the job allows it;
 *   then    give up: the records get error lines (the output stays complete, the failures are counted).
 * With no other device, rung 2's chunks wait for the quarantined device rather than being stranded.
 * A hardware fault (Xid, ECC, the device vanished) skips rung 1: retrying on a broken device wastes a turn, so
 * the device is quarantined at once. maxRetries bounds the rungs climbed in all.
 */
import type { Range } from './ranges.ts';
import { size, split } from './ranges.ts';

/** `model`: the engine cannot load the job's model (no device is at fault; the controller fails the job, no ladder). */
export type FailureKind = 'oom' | 'timeout' | 'crash' | 'hardware' | 'corrupt-output' | 'model';

export interface Failure {
  readonly kind: FailureKind;
  readonly message: string;
  readonly device: string;
}

export interface LadderConfig {
  readonly maxRetries: number;
  readonly retryAtReducedClock: boolean;
  readonly splitOnRetry: boolean;
  readonly cpuFallback: boolean;
  readonly quarantineMinutes: number;
}

export const DEFAULT_LADDER: LadderConfig = { maxRetries: 3, retryAtReducedClock: true, splitOnRetry: true, cpuFallback: false, quarantineMinutes: 15 };

/** Where on the ladder a piece of work is, and the constraints that come with the rung. */
export interface Rung {
  readonly level: 0 | 1 | 2 | 3;
  /** Rungs climbed so far (bounded by maxRetries). */
  readonly retries: number;
  /** Fraction of the normal batch size / concurrency. */
  readonly concurrencyFactor: number;
  readonly reducedClock: boolean;
  /** Run only on this device (rung 1). */
  readonly pinDevice?: string;
  /** Never on these devices (they failed this work). */
  readonly excludeDevices: readonly string[];
  readonly cpu: boolean;
  /** What happened so far, oldest first, for status and `sits explain`. */
  readonly history: readonly string[];
}

export const FRESH: Rung = { level: 0, retries: 0, concurrencyFactor: 1, reducedClock: false, excludeDevices: [], cpu: false, history: [] };

export type LadderDecision =
  | {
      readonly kind: 'retry';
      readonly pieces: readonly { readonly range: Range; readonly rung: Rung }[];
      readonly quarantine?: { readonly device: string; readonly reason: string; readonly untilMs: number };
    }
  | { readonly kind: 'give-up'; readonly reason: string; readonly quarantine?: { readonly device: string; readonly reason: string; readonly untilMs: number } };

export interface LadderContext {
  readonly nowMs: number;
  /** Whether the failed device supports a lower clock / power limit (NVML application clocks, power cap). */
  readonly deviceAllowsReducedClock: boolean;
  /** GPU devices that could take split chunks now (healthy, not the failed one). */
  readonly otherDevices: number;
}

/** The next rung for `range` after `failure` at `rung`. */
export function nextRung(range: Range, rung: Rung, failure: Failure, cfg: LadderConfig, ctx: LadderContext): LadderDecision {
  const note = `${failure.kind} on ${rung.cpu ? 'cpu' : failure.device} at rung ${rung.level}: ${failure.message}`;
  const history = [...rung.history, note];
  // A CPU-elastic worker's device is `<node>/cpu` (ADR 0161): no GPU to quarantine or to keep work off.
  const onCpu = rung.cpu || failure.device.endsWith('/cpu');
  const quarantine = (why: string) =>
    cfg.quarantineMinutes > 0 && !onCpu ? { device: failure.device, reason: why, untilMs: ctx.nowMs + cfg.quarantineMinutes * 60_000 } : undefined;
  const q = (why: string) => {
    const v = quarantine(why);
    return v === undefined ? {} : { quarantine: v };
  };
  if (rung.retries >= cfg.maxRetries)
    return { kind: 'give-up', reason: `gave up after ${rung.retries} retries: ${history.join('; ')}`, ...(failure.kind === 'hardware' ? q(note) : {}) };
  const base = { retries: rung.retries + 1, history };
  // With no other device the chunks stay on this one (after its quarantine): excluding it would strand them.
  const exclude = onCpu || ctx.otherDevices === 0 ? rung.excludeDevices : [...new Set([...rung.excludeDevices, failure.device])];

  // Rung 1: same device, half the concurrency, lower clock when possible. Not after a hardware fault.
  if (rung.level === 0 && failure.kind !== 'hardware') {
    return {
      kind: 'retry',
      pieces: [
        {
          range,
          rung: {
            ...base,
            level: 1,
            concurrencyFactor: rung.concurrencyFactor / 2,
            reducedClock: cfg.retryAtReducedClock && ctx.deviceAllowsReducedClock,
            pinDevice: failure.device,
            excludeDevices: rung.excludeDevices,
            cpu: false,
          },
        },
      ],
    };
  }
  // Rung 2: smaller chunks over other devices; the device failed this work twice (or broke): quarantine it.
  if (rung.level <= 1 && cfg.splitOnRetry && size(range) > 1) {
    const k = Math.max(2, Math.min(ctx.otherDevices, 8));
    return {
      kind: 'retry',
      pieces: split(range, k).map((r) => ({
        range: r,
        rung: { ...base, level: 2 as const, concurrencyFactor: rung.concurrencyFactor, reducedClock: false, excludeDevices: exclude, cpu: false },
      })),
      ...q(note),
    };
  }
  // Rung 3: the CPU fallback.
  if (rung.level <= 2 && cfg.cpuFallback) {
    return {
      kind: 'retry',
      pieces: [{ range, rung: { ...base, level: 3, concurrencyFactor: 1, reducedClock: false, excludeDevices: exclude, cpu: true } }],
      ...(rung.level <= 1 ? q(note) : {}),
    };
  }
  return {
    kind: 'give-up',
    reason: `no rung left (${cfg.splitOnRetry ? '' : 'splitOnRetry off, '}${cfg.cpuFallback ? '' : 'cpuFallback off'}): ${history.join('; ')}`,
    ...(rung.level <= 1 ? q(note) : {}),
  };
}
