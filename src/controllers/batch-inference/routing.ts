/**
 * Workload profiling and routing (seed 004 §3.1–§3.2, issue 13 Deliver 8), pure. A job is profiled from its first
 * committed shards (tokens in and out, time and peak KV use per record), then routed by three levels, each with its
 * reason for status and `sits explain`:
 *   1. precision tolerance (spec.sla.accuracyTolerance δ): δ < 1 allows quantised weights (fp8 at δ ≥ 0.95, int8
 *      below), which halve the weights' memory and raise the batch that fits;
 *   2. SLA class: P0/P1 get whole GPUs (no time slicing, may preempt lower classes); P2/P3 share GPUs in WFQ slices;
 *   3. the cluster's fragmentation F (share of free GPU capacity in partial, unusable-for-gangs pieces): when F is
 *      high, a P2/P3 job fills fragments (shared slices or MIG-sized pieces) instead of taking whole GPUs, and one
 *      that tolerates δ < 0.85 with short outputs goes to the CPU-elastic path when F ≥ 0.6.
 * The seed's thresholds (0.95, 0.85, 0.3, 0.6) are kept as the defaults.
 */
import { median } from '../../core/stats.ts';

export interface ShardSample {
  readonly records: number;
  readonly promptTokens: number;
  readonly outputTokens: number;
  readonly ms: number;
  /** Peak KV-cache use during the shard, 0..1; unset when the engine exports none (TGI, Triton). */
  readonly peakKvFraction?: number;
}

export interface WorkloadProfile {
  readonly shards: number;
  readonly promptTokensPerRecord: number;
  readonly outputTokensPerRecord: number;
  readonly msPerRecord: number;
  /** Unset when no shard reported its engine's KV use. */
  readonly peakKvFraction?: number;
}

/** The profile from the first shards; undefined until `minShards` have finished (one shard is an anecdote). */
export function profileFromShards(samples: readonly ShardSample[], minShards = 3): WorkloadProfile | undefined {
  const s = samples.filter((x) => x.records > 0);
  if (s.length < minShards) return undefined;
  const kv = s.flatMap((x) => (x.peakKvFraction === undefined ? [] : [x.peakKvFraction]));
  return {
    shards: s.length,
    promptTokensPerRecord: median(s.map((x) => x.promptTokens / x.records)),
    outputTokensPerRecord: median(s.map((x) => x.outputTokens / x.records)),
    msPerRecord: median(s.map((x) => x.ms / x.records)),
    ...(kv.length === 0 ? {} : { peakKvFraction: Math.max(...kv) }),
  };
}

export type Route = 'gpu-exclusive' | 'gpu-shared' | 'gpu-fragments' | 'cpu-elastic';

export interface RouteInput {
  /** spec.sla.accuracyTolerance; unset means 1 (full precision). */
  readonly accuracyTolerance?: number;
  readonly slaClass: 'P0' | 'P1' | 'P2' | 'P3';
  /** Free GPU capacity in fragments ÷ all free GPU capacity, 0..1 (the scheduler's fragmentation metric). */
  readonly fragmentation: number;
  readonly profile?: WorkloadProfile;
}

export interface RouteDecision {
  readonly route: Route;
  readonly quantization?: 'fp8' | 'int8';
  /** One line per level, in order. */
  readonly reasons: readonly string[];
}

export function decideRoute(i: RouteInput): RouteDecision {
  const d = i.accuracyTolerance ?? 1;
  const reasons: string[] = [];
  const quantization = d >= 1 ? undefined : d >= 0.95 ? ('fp8' as const) : ('int8' as const);
  reasons.push(quantization === undefined ? 'precision: full (accuracyTolerance 1)' : `precision: ${quantization} allowed (accuracyTolerance ${d})`);
  const urgent = i.slaClass === 'P0' || i.slaClass === 'P1';
  reasons.push(urgent ? `SLA ${i.slaClass}: whole GPUs, may preempt lower classes` : `SLA ${i.slaClass}: shares GPUs in weighted time slices`);
  const q = quantization === undefined ? {} : { quantization };
  if (urgent) {
    reasons.push(`fragmentation ${i.fragmentation.toFixed(2)}: not considered for ${i.slaClass}`);
    return { route: 'gpu-exclusive', ...q, reasons };
  }
  const shortOutputs = i.profile === undefined || i.profile.outputTokensPerRecord <= 64;
  if (i.fragmentation >= 0.6 && d < 0.85 && shortOutputs) {
    reasons.push(
      `fragmentation ${i.fragmentation.toFixed(2)} ≥ 0.6 with accuracyTolerance < 0.85${i.profile === undefined ? '' : ` and ${i.profile.outputTokensPerRecord.toFixed(0)} output tokens a record`}: CPU-elastic, leave the GPU fragments to gangs`,
    );
    return { route: 'cpu-elastic', quantization: 'int8', reasons };
  }
  if (i.fragmentation >= 0.3) {
    reasons.push(`fragmentation ${i.fragmentation.toFixed(2)} ≥ 0.3: fill fragments (partial GPUs) rather than take whole ones`);
    return { route: 'gpu-fragments', ...q, reasons };
  }
  reasons.push(`fragmentation ${i.fragmentation.toFixed(2)} < 0.3: shared whole GPUs`);
  return { route: 'gpu-shared', ...q, reasons };
}

/**
 * What a decided route changes, as reason lines after the decision's own: a quantisation the spec does not ask for
 * is advice (the model is never changed behind its owner's back, ADR 0165); `acted` is what was done to the
 * workers (route-placement.ts, ADR 0161: fractional GPUs, CPU-elastic workers, or why not).
 */
export function routeEffects(d: Pick<RouteDecision, 'route' | 'quantization'>, specQuantization: string | undefined, acted: string): string[] {
  const out: string[] = [];
  if (d.quantization !== undefined) {
    out.push(
      specQuantization === undefined
        ? `quantization ${d.quantization}: advisory only, spec.model.quantization is unset and the model is not changed; set it to run quantised`
        : `quantization: the model runs ${specQuantization} as spec.model.quantization says`,
    );
  }
  out.push(acted);
  return out;
}
