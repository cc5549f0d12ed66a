/**
 * `sits bench checkpoint`, redone work (issue 14, Numbers): the tenants simulation (the busiest Philly window,
 * gold/silver/bronze queues, jobs checkpointing every 30 min) twice with the same jobs — plain whole-gang
 * preemption and checkpoint-aware preemption (ADR 0093) — and the GPU-hours of work redone after preemptions
 * in each. Fairness (Jain's index over share/entitled) is reported beside it: the saving counts only at equal
 * fairness.
 */
import { readFileSync } from 'node:fs';
import { DEFAULT_TENANTS_TRACE } from '../tenants/bench-tenants.ts';
import { busiestWindow, parsePhilly } from '../tenants/philly-window.ts';
import { runTenantSim, type TenantSimResult } from '../tenants/tenant-sim.ts';

export interface RedoneBenchOptions {
  readonly trace?: string;
  /** 8-GPU nodes (default 16, as `sits bench tenants`). */
  readonly nodes?: number;
  readonly windowHours?: number;
  readonly maxDurationHours?: number;
  readonly checkpointEveryMinutes?: number;
  readonly seed?: number;
}

export interface RedoneBenchResult {
  readonly checkpointAware: number;
  readonly plain: number;
}

export interface RedoneBenchDetail extends RedoneBenchResult {
  readonly jain: { readonly checkpointAware: number; readonly plain: number };
  readonly preemptions: { readonly checkpointAware: number; readonly plain: number };
  /** GPU-hours spent writing the checkpoints preemption asked for (checkpoint-aware only). */
  readonly checkpointGpuHours: number;
  readonly reductionPct: number;
}

/** Both runs with their fairness; `runRedoneBench` is the JSON contract's part of it. */
export function runRedoneBenchDetail(o: RedoneBenchOptions = {}): RedoneBenchDetail {
  const trace = o.trace ?? DEFAULT_TENANTS_TRACE;
  const nodes = o.nodes ?? 16;
  const windowHours = o.windowHours ?? 4;
  const jobs = parsePhilly(readFileSync(trace, 'utf8'), trace);
  const w = busiestWindow(jobs, { windowSec: windowHours * 3600, maxDurationSec: (o.maxDurationHours ?? 6) * 3600, maxGpus: nodes * 8 });
  const common = { mode: 'sits' as const, nodes, shape: 'dgx-h100', windowMs: windowHours * 3_600_000, checkpointEveryMs: (o.checkpointEveryMinutes ?? 30) * 60_000, etaSamples: 0, seed: o.seed ?? 1 };
  const plain = runTenantSim(w.jobs, { ...common, checkpoint: 'plain' });
  const aware = runTenantSim(w.jobs, { ...common, checkpoint: 'aware' });
  const redone = (r: TenantSimResult): number => r.redoneGpuHours ?? 0;
  return {
    checkpointAware: redone(aware),
    plain: redone(plain),
    jain: { checkpointAware: aware.jain, plain: plain.jain },
    preemptions: { checkpointAware: aware.preemptions, plain: plain.preemptions },
    checkpointGpuHours: aware.checkpointGpuHours ?? 0,
    reductionPct: redone(plain) === 0 ? 0 : Math.round(1000 * (1 - redone(aware) / redone(plain))) / 10,
  };
}

/** `{"checkpointAware": x, "plain": x}`: GPU-hours of work redone after preemption. */
export function runRedoneBench(o: RedoneBenchOptions = {}): RedoneBenchResult {
  const d = runRedoneBenchDetail(o);
  return { checkpointAware: d.checkpointAware, plain: d.plain };
}
