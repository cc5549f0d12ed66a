/**
 * Health bench (issue 14 Numbers, "health"): on a generated fault series (fault-series.ts), the share of
 * failures the health monitor foresaw early enough to checkpoint first — flagged (suspect or failed, hence
 * quarantined) at least `checkpointMs` before the failure — and the quarantines of devices that did not fail
 * within `horizonMs` after them, per 1,000 GPU-days. The monitor is the one the live watcher runs
 * (core/health/monitor.ts): the detector, the 15-minute quarantine and its built-in health check.
 */
import type { DetectorConfig } from '../../core/health/detector.ts';
import { GpuHealthMonitor } from '../../core/health/monitor.ts';
import { faultSeries, type FaultKind } from './fault-series.ts';

export interface HealthBenchOptions {
  /** Seeds of the series (default: the held-out report seeds, 41–60; thresholds are tuned on 1–40 only, ADR 0166, ADR 0170). */
  readonly seeds?: readonly number[];
  readonly devices?: number;
  readonly days?: number;
  readonly sampleMs?: number;
  /** Time a checkpoint takes (000 §1: a 50 GB checkpoint in 89 s). */
  readonly checkpointMs?: number;
  /** A quarantine is false when its device does not fail within this time after it. */
  readonly horizonMs?: number;
  readonly detector?: DetectorConfig;
}

export interface HealthBenchResult {
  readonly foreseenPct: number;
  readonly falseQuarantinesPer1000GpuDays: number;
}

export interface HealthBenchDetail extends HealthBenchResult {
  /**
   * Foreseen among the failures that have a precursor at all: the generator's sudden failures (XID 79 with
   * nothing before) are unforeseeable by construction and cap foreseenPct at 100 − their share.
   */
  readonly foreseeablePct: number;
  /**
   * 95 % Wilson score interval of foreseenPct: the failures are a sample of the generator's, so a share over a
   * few hundred of them is known to about ±3 points (ADR 0166).
   */
  readonly foreseenPctCi95: readonly [number, number];
  readonly gpuDays: number;
  readonly failures: number;
  readonly foreseen: number;
  readonly falseQuarantines: number;
  readonly byKind: Readonly<Record<FaultKind, { readonly failures: number; readonly foreseen: number }>>;
  /** What raised the false quarantines (the detector's signal at the time). */
  readonly falseBySignal: Readonly<Record<string, number>>;
  /** Median lead time of the foreseen failures. */
  readonly leadP50Minutes: number;
}

/**
 * Thresholds are chosen on these seeds only. 1–10 were the tuning seeds of ADR 0146 and ADR 0154; 11–20 were
 * their report seeds, run by three sessions, and became tuning seeds in ADR 0166; 21–40 were the report seeds
 * of ADR 0168/0169, run once, and became tuning seeds when ADR 0170 was chosen after reading them.
 */
export const TUNING_SEEDS: readonly number[] = Array.from({ length: 40 }, (_, i) => i + 1);
/** Held out (ADR 0170): the numbers reported (`sits bench checkpoint`); never used to choose a threshold. */
export const REPORT_SEEDS: readonly number[] = Array.from({ length: 20 }, (_, i) => i + 41);
/** The tuning seeds by origin (above), so the docs can show each set's numbers. */
export const TUNING_GROUPS: readonly { readonly name: string; readonly seeds: readonly number[] }[] = [
  { name: '1-10', seeds: TUNING_SEEDS.slice(0, 10) },
  { name: '11-20', seeds: TUNING_SEEDS.slice(10, 20) },
  { name: '21-40', seeds: TUNING_SEEDS.slice(20, 40) },
];

const round = (x: number, d: number): number => Math.round(x * 10 ** d) / 10 ** d;

/** 95 % Wilson score interval of k successes in n, in percent. */
export function wilson95(k: number, n: number): [number, number] {
  if (n === 0) return [0, 100];
  const z = 1.959964;
  const p = k / n;
  const centre = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const half = ((z / (1 + (z * z) / n)) * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n)));
  return [round(100 * Math.max(0, centre - half), 2), round(100 * Math.min(1, centre + half), 2)];
}

export function healthBenchDetail(opts: HealthBenchOptions = {}): HealthBenchDetail {
  const seeds = opts.seeds ?? REPORT_SEEDS;
  const devices = opts.devices ?? 400;
  const days = opts.days ?? 3;
  const checkpointMs = opts.checkpointMs ?? 89_000;
  const horizonMs = opts.horizonMs ?? 72 * 3_600_000;
  const kinds: FaultKind[] = ['memory', 'thermal', 'nvlink', 'row-remap', 'sudden'];
  const byKind = Object.fromEntries(kinds.map((k) => [k, { failures: 0, foreseen: 0 }])) as Record<FaultKind, { failures: number; foreseen: number }>;
  let failures = 0;
  let foreseen = 0;
  let falseQ = 0;
  const falseBySignal: Record<string, number> = {};
  const leads: number[] = [];
  for (const seed of seeds) {
    for (const dev of faultSeries({ seed, devices, days, ...(opts.sampleMs === undefined ? {} : { sampleMs: opts.sampleMs }) })) {
      const m = new GpuHealthMonitor(opts.detector === undefined ? {} : { detector: opts.detector });
      const ref = { node: `n${dev.id}`, gpu: 0 };
      const flags: number[] = [];
      const signals: string[] = [];
      dev.run((t, fields) => {
        for (const a of m.observe(ref.node, [{ host: '', gpu: 0, uuid: '', model: '', activeXids: [], pods: [], fields }], t)) {
          if (a.kind === 'quarantine') {
            flags.push(t);
            signals.push(m.detector.current(`${ref.node}/${ref.gpu}`).signal ?? 'other');
          }
          if (a.kind === 'health-check-due') {
            const c = m.builtInCheck(ref);
            m.checkResult(ref, c.passed, t, c.detail);
          }
        }
      });
      const f = dev.fault;
      if (f !== undefined) {
        failures++;
        byKind[f.kind].failures++;
        const early = flags.find((t) => t <= f.failMs - checkpointMs && t >= f.failMs - horizonMs);
        if (early !== undefined) {
          foreseen++;
          byKind[f.kind].foreseen++;
          leads.push(f.failMs - early);
        }
      }
      for (const [i, t] of flags.entries()) {
        if (f !== undefined && f.failMs - t <= horizonMs) continue;
        falseQ++;
        const sig = signals[i] ?? 'other';
        falseBySignal[sig] = (falseBySignal[sig] ?? 0) + 1;
      }
    }
  }
  const gpuDays = seeds.length * devices * days;
  leads.sort((a, b) => a - b);
  return {
    foreseenPct: failures === 0 ? 100 : round((100 * foreseen) / failures, 2),
    foreseeablePct: failures - byKind.sudden.failures === 0 ? 100 : round((100 * foreseen) / (failures - byKind.sudden.failures), 2),
    foreseenPctCi95: wilson95(foreseen, failures),
    falseQuarantinesPer1000GpuDays: round((1000 * falseQ) / gpuDays, 3),
    gpuDays,
    failures,
    foreseen,
    falseQuarantines: falseQ,
    byKind,
    falseBySignal,
    leadP50Minutes: leads.length === 0 ? 0 : round((leads[Math.floor(leads.length / 2)] as number) / 60_000, 1),
  };
}

/** The two numbers `sits bench checkpoint` reports under "health". */
export function runHealthBench(opts: HealthBenchOptions = {}): HealthBenchResult {
  const d = healthBenchDetail(opts);
  return { foreseenPct: d.foreseenPct, falseQuarantinesPer1000GpuDays: d.falseQuarantinesPer1000GpuDays };
}
