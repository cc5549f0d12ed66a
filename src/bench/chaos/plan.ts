/**
 * The fault plan of `sits bench chaos`: which faults, in which order, with which parameters — pure and seeded, so
 * the same seed and counts give the same plan (it is written into the result JSON). Faults run one after another;
 * `gapSec` is the quiet time after each, in which the submission goes on.
 */
import { seededRng, type Rng } from '../../core/ports.ts';

export const FAULT_KINDS = ['apiserverRestart', 'etcdRestart', 'schedulerKill', 'leaderFailover', 'watchExpired', 'throttle', 'slowApi'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export type FaultCounts = Readonly<Record<FaultKind, number>>;

export interface Fault {
  readonly index: number;
  readonly kind: FaultKind;
  /** Quiet seconds after the fault is over, before the next one. */
  readonly gapSec: number;
  /** schedulerKill: the leader dies after this many more gang-member bindings (1 = right after the first). */
  readonly killAfterGangBinds?: number;
  /** leaderFailover: the leader stops itself (SIGSTOP) after this many more gang-member bindings: paused mid-gang. */
  readonly pauseAfterGangBinds?: number;
  /** leaderFailover: how long the leader stays SIGSTOPped, in lease durations (> 1: the standby takes over). */
  readonly pauseLeases?: number;
  /** throttle, slowApi: how long the fault lasts. */
  readonly durationSec?: number;
  /** slowApi: the latency the proxy adds to every chunk, each way. */
  readonly delayMs?: number;
}

export interface PlanOptions {
  readonly seed: number;
  readonly counts: FaultCounts;
  /** Quiet time after a fault, drawn uniformly from [min, max]. */
  readonly gapSec: readonly [number, number];
  /** Length of a throttle or slow-apiserver window, drawn uniformly from [min, max]. */
  readonly windowSec: readonly [number, number];
}

/** The minimum per run (bench) and the short plan of the e2e test: every kind at least once. */
export const FULL_COUNTS: FaultCounts = {
  apiserverRestart: 3,
  etcdRestart: 2,
  schedulerKill: 20,
  leaderFailover: 5,
  watchExpired: 2,
  throttle: 2,
  slowApi: 2,
};
export const SHORT_COUNTS: FaultCounts = {
  apiserverRestart: 1,
  etcdRestart: 1,
  schedulerKill: 1,
  leaderFailover: 1,
  watchExpired: 1,
  throttle: 1,
  slowApi: 1,
};

const uniform = (rng: Rng, [lo, hi]: readonly [number, number]): number => Math.round((lo + rng.next() * (hi - lo)) * 10) / 10;

function checkRange(field: string, r: readonly [number, number]): void {
  const [lo, hi] = r;
  if (!Number.isFinite(lo) || !Number.isFinite(hi) || lo < 0 || hi < lo) throw new Error(`${field}: want [min, max] with 0 ≤ min ≤ max, got [${lo}, ${hi}]`);
}

/** The faults in a seeded order (Fisher–Yates over the multiset of kinds), each with its seeded parameters. */
export function makePlan(o: PlanOptions): Fault[] {
  if (!Number.isInteger(o.seed)) throw new Error(`seed: want an integer, got ${o.seed}`);
  checkRange('gapSec', o.gapSec);
  checkRange('windowSec', o.windowSec);
  const kinds: FaultKind[] = [];
  for (const k of FAULT_KINDS) {
    const n = o.counts[k];
    if (!Number.isInteger(n) || n < 0 || n > 1000) throw new Error(`counts.${k}: want an integer in [0, 1000], got ${n}`);
    for (let i = 0; i < n; i++) kinds.push(k);
  }
  const rng = seededRng(o.seed);
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [kinds[i], kinds[j]] = [kinds[j] as FaultKind, kinds[i] as FaultKind];
  }
  return kinds.map((kind, index) => {
    const gapSec = uniform(rng, o.gapSec);
    switch (kind) {
      case 'schedulerKill':
        return { index, kind, gapSec, killAfterGangBinds: 1 + rng.int(3) };
      case 'leaderFailover':
        return { index, kind, gapSec, pauseAfterGangBinds: 1 + rng.int(3), pauseLeases: 1.5 + rng.int(3) * 0.5 };
      case 'throttle':
        return { index, kind, gapSec, durationSec: uniform(rng, o.windowSec) };
      case 'slowApi':
        return { index, kind, gapSec, durationSec: uniform(rng, o.windowSec), delayMs: 100 + 50 * rng.int(7) };
      default:
        return { index, kind, gapSec };
    }
  });
}
