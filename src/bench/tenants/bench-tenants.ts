/** `sits bench tenants`: the Philly busy window under SITS and under FIFO, as the JSON contract of issue 6. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { busiestWindow, parsePhilly, TIERS, type Tier } from './philly-window.ts';
import { runTenantSim, type EtaMethod, type TenantSimResult, type TierMetrics } from './tenant-sim.ts';

/** The Pollux artifact's philly.csv in the shared traces folder next to the repository. */
export const DEFAULT_TENANTS_TRACE = join(import.meta.dirname, '../../../../shared/traces/pollux-philly/philly.csv');

export interface BenchTenantsOptions {
  readonly trace: string;
  readonly nodes: number;
  readonly windowHours: number;
  readonly maxDurationHours: number;
  readonly etaSamples: number;
  readonly seed: number;
  /** Also rerun SITS with parts of the start-time estimate switched off or given oracle knowledge (ADR 0021). */
  readonly etaAblation?: boolean;
  readonly onProgress?: (mode: string, done: number, total: number) => void;
}

export interface BenchTenantsReport {
  readonly trace: string;
  readonly window: { readonly startHoursIntoTrace: number; readonly hours: number; readonly jobs: number; readonly demandGpuHours: number; readonly capacityGpuHours: number; readonly jobsByTier: Record<Tier, number> };
  readonly cluster: { readonly nodes: number; readonly gpus: number; readonly shape: string };
  readonly sits: TenantSimResult;
  readonly fifo: TenantSimResult;
  /** Error of the start-time estimate with one part changed (diagnostics: oracle variants are not achievable). */
  readonly etaAblation?: Record<string, { readonly p50: number; readonly p90: number; readonly signedP50: number }>;
  readonly goals: { readonly everyTierWithin10PctOfEntitled: boolean; readonly utilizationNotBelowFifo: boolean; readonly etaMedianErrorAtMost20Pct: boolean };
}

export function benchTenants(o: BenchTenantsOptions): BenchTenantsReport {
  const jobs = parsePhilly(readFileSync(o.trace, 'utf8'), o.trace);
  const w = busiestWindow(jobs, { windowSec: o.windowHours * 3600, maxDurationSec: o.maxDurationHours * 3600, maxGpus: o.nodes * 8 });
  const common = { nodes: o.nodes, shape: 'dgx-h100', windowMs: o.windowHours * 3_600_000, checkpointEveryMs: 30 * 60_000, seed: o.seed };
  const sits = runTenantSim(w.jobs, { ...common, mode: 'sits', etaSamples: o.etaSamples, ...(o.onProgress === undefined ? {} : { onProgress: (d: number, t: number) => o.onProgress?.('sits', d, t) }) });
  const fifo = runTenantSim(w.jobs, { ...common, mode: 'fifo', etaSamples: 0, ...(o.onProgress === undefined ? {} : { onProgress: (d: number, t: number) => o.onProgress?.('fifo', d, t) }) });
  const etaAblation = o.etaAblation === true ? ablation(w.jobs, { ...common, mode: 'sits', etaSamples: o.etaSamples }) : undefined;
  const within = (m: TierMetrics): boolean => m.entitledPct === 0 || Math.abs(m.sharePct - m.entitledPct) / m.entitledPct <= 0.1;
  return {
    trace: o.trace.split('/').pop() ?? o.trace,
    window: {
      startHoursIntoTrace: Math.round((w.windowStartSec / 3600) * 100) / 100,
      hours: o.windowHours,
      jobs: w.jobs.length,
      demandGpuHours: Math.round(w.demandGpuHours),
      capacityGpuHours: o.nodes * 8 * o.windowHours,
      jobsByTier: Object.fromEntries(TIERS.map((t) => [t, w.jobs.filter((j) => j.tier === t).length])) as Record<Tier, number>,
    },
    cluster: { nodes: o.nodes, gpus: o.nodes * 8, shape: 'dgx-h100' },
    sits,
    fifo,
    ...(etaAblation === undefined ? {} : { etaAblation }),
    goals: {
      everyTierWithin10PctOfEntitled: TIERS.every((t) => within(sits.tiers[t])),
      utilizationNotBelowFifo: sits.utilizationPct >= fifo.utilizationPct,
      etaMedianErrorAtMost20Pct: (sits.etaErrorPct?.p50 ?? Infinity) <= 20,
    },
  };
}

/** Variants of the estimate, each one change from the method used for the reported error. */
export const ETA_VARIANTS: Readonly<Record<string, Partial<EtaMethod>>> = {
  'no arrival forecast': { forecast: false },
  'no cadence (cycle at every event)': { cadence: false },
  'preempted jobs vanish': { requeue: false },
  'waiting jobs keep their submit-time estimate': { refreshPending: false },
  'none of the four': { forecast: false, cadence: false, requeue: false, refreshPending: false },
  'oracle: true runtimes': { oracle: { runtimes: true } },
  'oracle: true later arrivals': { oracle: { arrivals: true } },
  'oracle: both': { oracle: { runtimes: true, arrivals: true } },
};

function ablation(jobs: Parameters<typeof runTenantSim>[0], opts: Parameters<typeof runTenantSim>[1]): Record<string, { p50: number; p90: number; signedP50: number }> {
  const out: Record<string, { p50: number; p90: number; signedP50: number }> = {};
  for (const [name, eta] of Object.entries(ETA_VARIANTS)) {
    const e = runTenantSim(jobs, { ...opts, eta }).etaErrorPct;
    if (e !== undefined) out[name] = { p50: e.p50, p90: e.p90, signedP50: e.signedP50 };
  }
  return out;
}
