/**
 * `sits bench checkpoint`, redone work (issue 14, Numbers): the tenants simulation (gold/silver/bronze queues,
 * jobs checkpointing every 30 min) twice with the same jobs — plain whole-gang preemption and checkpoint-aware
 * preemption (ADR 0093) — and the GPU-hours of work redone after preemptions in each. It runs the `windows`
 * busiest windows of the Philly trace (non-overlapping) and sums them: one window has a handful of preemptions.
 * Fairness (Jain's index over share/entitled, the mean over the windows) is reported beside it: the saving
 * counts only at equal fairness.
 */
import { readFileSync } from 'node:fs';
import { DEFAULT_TENANTS_TRACE } from '../tenants/bench-tenants.ts';
import { busiestWindows, parsePhilly } from '../tenants/philly-window.ts';
import { runTenantSim, type TenantSimResult } from '../tenants/tenant-sim.ts';

export interface RedoneBenchOptions {
  readonly trace?: string;
  /** 8-GPU nodes (default 16, as `sits bench tenants`). */
  readonly nodes?: number;
  readonly windowHours?: number;
  /** How many of the busiest windows are replayed (default 8). */
  readonly windows?: number;
  readonly maxDurationHours?: number;
  readonly checkpointEveryMinutes?: number;
  readonly seed?: number;
}

export interface RedoneBenchResult {
  readonly checkpointAware: number;
  readonly plain: number;
}

interface RedoneRuns extends RedoneBenchResult {
  readonly jain: { readonly checkpointAware: number; readonly plain: number };
  readonly preemptions: { readonly checkpointAware: number; readonly plain: number };
  /** GPU-hours spent writing the checkpoints preemption asked for (checkpoint-aware only). */
  readonly checkpointGpuHours: number;
}

export interface RedoneWindow extends RedoneRuns {
  /** Hours from the trace's first submission. */
  readonly startHoursIntoTrace: number;
  readonly jobs: number;
  readonly demandGpuHours: number;
}

export interface RedoneBenchDetail extends RedoneRuns {
  readonly reductionPct: number;
  readonly windows: readonly RedoneWindow[];
}

const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** Both runs in every window with their fairness; `runRedoneBench` is the JSON contract's part of it. */
export function runRedoneBenchDetail(o: RedoneBenchOptions = {}): RedoneBenchDetail {
  const trace = o.trace ?? DEFAULT_TENANTS_TRACE;
  const nodes = o.nodes ?? 16;
  const windowHours = o.windowHours ?? 4;
  const jobs = parsePhilly(readFileSync(trace, 'utf8'), trace);
  const picked = busiestWindows(jobs, { windowSec: windowHours * 3600, maxDurationSec: (o.maxDurationHours ?? 6) * 3600, maxGpus: nodes * 8 }, o.windows ?? 8);
  const common = { mode: 'sits' as const, nodes, shape: 'dgx-h100', windowMs: windowHours * 3_600_000, checkpointEveryMs: (o.checkpointEveryMinutes ?? 30) * 60_000, etaSamples: 0, seed: o.seed ?? 1 };
  const redone = (r: TenantSimResult): number => r.redoneGpuHours ?? 0;
  let t0 = Infinity;
  for (const j of jobs) t0 = Math.min(t0, j.submitS);
  const windows: RedoneWindow[] = picked.map((w) => {
    const plain = runTenantSim(w.jobs, { ...common, checkpoint: 'plain' });
    const aware = runTenantSim(w.jobs, { ...common, checkpoint: 'aware' });
    return {
      startHoursIntoTrace: round((w.windowStartSec - t0) / 3600, 1),
      jobs: w.jobs.length,
      demandGpuHours: Math.round(w.demandGpuHours),
      checkpointAware: redone(aware),
      plain: redone(plain),
      jain: { checkpointAware: aware.jain, plain: plain.jain },
      preemptions: { checkpointAware: aware.preemptions, plain: plain.preemptions },
      checkpointGpuHours: aware.checkpointGpuHours ?? 0,
    };
  });
  const sum = (f: (w: RedoneWindow) => number): number => round(windows.reduce((a, w) => a + f(w), 0));
  const mean = (f: (w: RedoneWindow) => number): number => round(windows.reduce((a, w) => a + f(w), 0) / Math.max(1, windows.length), 4);
  const plain = sum((w) => w.plain);
  const checkpointAware = sum((w) => w.checkpointAware);
  return {
    checkpointAware,
    plain,
    jain: { checkpointAware: mean((w) => w.jain.checkpointAware), plain: mean((w) => w.jain.plain) },
    preemptions: { checkpointAware: sum((w) => w.preemptions.checkpointAware), plain: sum((w) => w.preemptions.plain) },
    checkpointGpuHours: sum((w) => w.checkpointGpuHours),
    reductionPct: plain === 0 ? 0 : round(100 * (1 - checkpointAware / plain), 1),
    windows,
  };
}

/** `{"checkpointAware": x, "plain": x}`: GPU-hours of work redone after preemption, summed over the windows. */
export function runRedoneBench(o: RedoneBenchOptions = {}): RedoneBenchResult {
  const d = runRedoneBenchDetail(o);
  return { checkpointAware: d.checkpointAware, plain: d.plain };
}
