/**
 * `sits bench serving-traces` (ADR 0183): the serving bench (serving-bench.ts, its protocol unchanged) on variants of
 * one trace, so a policy change is seen on traces it was not designed on: the trace as is, each half, reversed in
 * time, and thinned to every 2nd, 4th and 8th request (the last is one a single replica serves within the SLO all
 * along: an autoscaler should spend no more than static there). Pure: the caller reads the trace.
 */
import type { TraceRequest } from '../../serving/sim/trace.ts';
import { runServingBench, type PolicyNumbers, type ServingBenchOptions } from './serving-bench.ts';

export interface TraceVariant {
  readonly name: string;
  readonly describe: string;
  readonly trace: readonly TraceRequest[];
}

/** Arrivals shifted so the first request is at 0 s. */
const rebase = (t: readonly TraceRequest[]): TraceRequest[] => {
  const first = t[0]?.arrivalSec ?? 0;
  return t.map((r) => ({ ...r, arrivalSec: r.arrivalSec - first }));
};

export function traceVariants(trace: readonly TraceRequest[]): TraceVariant[] {
  const span = trace.at(-1)?.arrivalSec ?? 0;
  const every = (k: number): TraceVariant => ({ name: `every-${k}`, describe: `every ${k}th request (1/${k} of the load, same bursts in time)`, trace: trace.filter((_, i) => i % k === 0) });
  return [
    { name: 'as-is', describe: 'the trace as is', trace },
    { name: 'first-half', describe: 'the first half of the span', trace: rebase(trace.filter((r) => r.arrivalSec < span / 2)) },
    { name: 'second-half', describe: 'the second half of the span', trace: rebase(trace.filter((r) => r.arrivalSec >= span / 2)) },
    { name: 'reversed', describe: 'reversed in time', trace: [...trace].reverse().map((r) => ({ ...r, arrivalSec: span - r.arrivalSec })) },
    every(2),
    every(4),
    every(8),
  ];
}

export interface VariantResult {
  readonly name: string;
  readonly describe: string;
  readonly requests: number;
  readonly splitSec: number;
  readonly reportedRequests: number;
  readonly staticReplicas: number;
  readonly static: PolicyNumbers;
  readonly sits: PolicyNumbers;
  readonly sitsGpuHoursVsStatic: number;
  readonly sitsPeakReplicas: number;
  /** Static sized on the reported part alone, as a fraction of static's GPU-hours (what hindsight allows). */
  readonly hindsightStaticVsStatic: number;
  /**
   * The most any reactive peak-hold policy reaches within the SLO on the reported part, whatever its GPU-hours, over
   * the holds the bench tries up to 20 min (the bound `reactivePeakHold` of `bench serving`): it knows what every past
   * bin needed. Below 99 %, a burst of the reported part exceeds every need before it: no policy that scales on what
   * it has seen meets the SLO there without a margin beyond it, which static, sized in hindsight, does not pay for.
   */
  readonly reactiveBoundWithinPct: number;
  /** ≥ 99 % within the SLO and ≤ 1.0× static's GPU-hours on the reported part. */
  readonly goalMet: boolean;
  /** SITS with the settings it ships (what an InferenceService gets), not tuned on the variant, and its goal. */
  readonly sitsDefaults: PolicyNumbers;
  readonly sitsDefaultsVsStatic: number;
  readonly defaultsGoalMet: boolean;
}

export interface ServingTracesJson {
  readonly sloTtftSec: number;
  readonly tuneFraction: number;
  readonly seed: number;
  readonly variants: readonly VariantResult[];
}

/** Issue 33's serving goal on a reported part: ≥ 99 % within the SLO at ≤ 1.0× static's GPU-hours. */
const meetsGoal = (withinPct: number, vsStatic: number): boolean => withinPct >= 99 && vsStatic <= 1;

export function runServingTraces(trace: readonly TraceRequest[], o: ServingBenchOptions & { readonly only?: readonly string[] }): ServingTracesJson {
  const variants = traceVariants(trace).filter((v) => o.only === undefined || o.only.includes(v.name));
  const results = variants.map((v, i): VariantResult => {
    const { json, details } = runServingBench(v.trace, { ...o, onProgress: (m) => o.onProgress?.(`${v.name} (${i + 1}/${variants.length}): ${m}`) });
    const p = json.policies;
    const vsStatic = details.goal.sitsGpuHoursVsStatic;
    const { vsStatic: defaultsVsStatic, ...defaults } = details.sitsDefaults;
    return {
      name: v.name,
      describe: v.describe,
      requests: details.requests,
      splitSec: details.splitSec,
      reportedRequests: details.reportedRequests,
      staticReplicas: details.chosen.static,
      static: p.static,
      sits: p.sits,
      sitsGpuHoursVsStatic: vsStatic,
      sitsPeakReplicas: details.peakReplicas.sits ?? 0,
      hindsightStaticVsStatic: details.bound.hindsightStatic.vsStatic,
      reactiveBoundWithinPct: details.bound.reactivePeakHold.reduce((m, h) => Math.max(m, h.withinPct), 0),
      goalMet: meetsGoal(p.sits.sloAttainmentPct, vsStatic),
      sitsDefaults: defaults,
      sitsDefaultsVsStatic: defaultsVsStatic,
      defaultsGoalMet: meetsGoal(defaults.sloAttainmentPct, defaultsVsStatic),
    };
  });
  return { sloTtftSec: o.sloTtftSec, tuneFraction: o.tuneFraction, seed: o.seed, variants: results };
}
