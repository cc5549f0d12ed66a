/**
 * `sits bench batch` (issue 13, Numbers): one offline job over the Azure LLM trace's prompt/output token mix,
 * run three ways on the serving issue's engine model (Llama 3.1 8B, vLLM, H100; ADR 0080): static batching
 * (KServe batcher 32 / 5000 ms), Ray-Data-like fixed batch × concurrency (32 × 8), and SITS. Then the tenants'
 * WFQ shares of GPU time with two and three tenants, and the SITS job again with injected faults (a failing
 * device, a straggler, a killed worker, a coordinator restart): records lost or duplicated in the output, and the
 * makespan against the fault-free run. Pure and deterministic: the same trace gives byte-identical JSON.
 * Definitions (docs/adr/0101-batch-bench.md): throughput = the job's tokens (prompt + output, each record once)
 * over the makespan; p99 over every request's latency (submission to the engine → its answer back);
 * utilisation = achieved tokens/s per GPU over the engine model's ceiling on the same token mix;
 * GPU-hours per million tokens = GPUs × makespan / job tokens.
 */
import type { EngineModel } from '../../serving/engine-model.ts';
import { LLAMA31_8B_H100 } from '../../serving/engine-model.ts';
import type { TraceRequest } from '../../serving/sim/trace.ts';
import { percentile } from '../../core/stats.ts';
import { makeQueue, TIER_WEIGHTS } from '../../core/queue/model.ts';
import { simulateShares, tenantsFromQueues } from '../../controllers/batch-inference/wfq.ts';
import type { EngineRequest } from './engine-sim.ts';
import { ceilingBreakdown, ceilingTokensPerSec, EngineSim } from './engine-sim.ts';
import type { FaultPlan, RunResult, SitsResult } from './policies.ts';
import { capacityBoundMs, runFixed, runSits, runStatic } from './policies.ts';
import { DEFAULT_LADDER } from '../../controllers/batch-inference/fault-ladder.ts';
import type { PluginCaller, PluginTally } from '../../controllers/batch-inference/wasm-plugin.ts';
import type { FailureKind } from '../../controllers/batch-inference/fault-ladder.ts';
import { seededRng } from '../../core/ports.ts';

export interface BatchMetrics {
  readonly throughputTokensPerSec: number;
  readonly p99LatencyMs: number;
  readonly utilizationPct: number;
  readonly gpuHoursPerMTokens: number;
}

export interface TierShare {
  readonly sharePct: number;
  readonly entitledPct: number;
}

export interface BatchBenchJson {
  readonly static: BatchMetrics;
  readonly fixed: BatchMetrics;
  readonly sits: BatchMetrics;
  readonly tenants: { readonly gold: TierShare; readonly silver: TierShare; readonly bronze: TierShare };
  readonly faults: { readonly recordsLost: number; readonly recordsDuplicated: number; readonly makespanRatio: number };
  /**
   * API writes per job on the real apiserver's own metrics (`--control-plane`, kits/batch-control-plane.ts; ADR 0158),
   * SITS's controller and workers vs a controller that writes status on every record. Null when not measured: the
   * pure bench starts no cluster.
   */
  readonly controlPlane: ControlPlaneJson | null;
}

export interface ControlPlaneJson {
  readonly writesPerJob: { readonly sits: number; readonly naive: number };
}

export interface BatchBenchOptions {
  readonly gpus: number;
  /** The job's p99 latency SLA for SITS's AIMD, ms. */
  readonly slaP99Ms: number;
  /** Share of prompt tokens served from the KV cache (prefix reuse) assumed for the start size. */
  readonly kvHitRate: number;
  /** Use only the first n records of the trace (tests). */
  readonly records?: number;
  /** WFQ time slice quantum, ms (CRD default 30). */
  readonly quantumMs: number;
  readonly model?: EngineModel;
  /** Extra SITS runs at these SLAs for the details' frontier. */
  readonly frontier: readonly number[];
  /** A WASM batch-size plugin for every SITS run (`--batch-plugin`); unset: the built-in strategy. */
  readonly batchPlugin?: PluginCaller;
  /**
   * Held-out fault plans (`--fault-seeds`): the SITS job again under randomFaultPlan(seed) for each seed, so the
   * makespan ratio is also judged on injections no policy was tuned on. Empty: none (the default run is fast).
   */
  readonly faultSeeds?: readonly number[];
}

export const DEFAULT_BATCH_BENCH: BatchBenchOptions = { gpus: 4, slaP99Ms: 5000, kvHitRate: 0, quantumMs: 30, frontier: [2000, 10000, 20000, 60000] };

const r2 = (x: number): number => Math.round(x * 100) / 100;

function metrics(m: EngineModel, reqs: readonly EngineRequest[], r: RunResult): BatchMetrics {
  const sec = r.makespanMs / 1000;
  const tps = r.jobTokens / sec;
  return {
    throughputTokensPerSec: r2(tps),
    p99LatencyMs: r2(percentile(r.latenciesMs, 99) ?? 0),
    utilizationPct: r2((100 * tps) / r.gpus / ceilingTokensPerSec(m, reqs)),
    gpuHoursPerMTokens: Math.round(((r.gpus * sec) / 3600 / (r.jobTokens / 1e6)) * 1e5) / 1e5,
  };
}

/** Step durations of one engine running `reqs` with SITS's continuous refill at batch size `b` (a tenant's batches). */
function stepDurations(m: EngineModel, reqs: readonly EngineRequest[], b: number, limit: number): number[] {
  const e = new EngineSim(m);
  e.maxSeqs = b;
  const out: number[] = [];
  let next = 0;
  while (out.length < limit && next < reqs.length) {
    while (e.inFlight < b && next < reqs.length) e.submit(reqs[next++] as EngineRequest);
    const before = e.nowMs;
    if (e.step() === undefined) break;
    out.push(e.nowMs - before);
  }
  return out;
}

function tenantShares(m: EngineModel, reqs: readonly EngineRequest[], tiers: readonly ('gold' | 'silver' | 'bronze')[], quantumMs: number, sitsBatch: number): Record<string, TierShare> {
  const queues = tiers.map((t) => makeQueue(t, { tenant: `tenant-${t}`, weight: TIER_WEIGHTS[t] as number }));
  // Each tenant's job is a different part of the trace, so batch times differ between tenants.
  const steps = new Map(tiers.map((t, k) => [t, stepDurations(m, reqs.filter((_, i) => i % tiers.length === k), sitsBatch, 4000)]));
  const r = simulateShares(tenantsFromQueues(queues, quantumMs), 30 * 60_000, (t, turn, i) => {
    const s = steps.get(t as 'gold') as number[];
    return s[(turn * 7 + i) % s.length] as number;
  });
  const out: Record<string, TierShare> = {};
  for (const t of tiers) out[t] = { sharePct: r2(r[t]?.sharePct ?? 0), entitledPct: r2(r[t]?.entitledPct ?? 0) };
  return out;
}

/** The default run's fault plan (the one the JSON's `faults` reports), at fractions of the fault-free makespan T. */
export function defaultFaultPlan(gpus: number, T: number): FaultPlan {
  return {
    // A device that fails every shard from 60 % of the way (walks the ladder, quarantined for 15 minutes), a GPU
    // throttled to 30 % between 30 % and 70 %, a worker killed at 40 % (back after the engine's start-up), and the
    // coordinator restarted at 50 %.
    brokenDevices: [{ worker: 1 % gpus, fromMs: Math.round(T * 0.6), kind: 'oom', failAfterMs: 2000 }],
    stragglers: gpus > 2 ? [{ worker: 2, speed: 0.3, fromMs: Math.round(T * 0.3), untilMs: Math.round(T * 0.7) }] : [],
    kills: gpus > 3 ? [{ worker: 3, atMs: Math.round(T * 0.4) }] : [],
    coordinatorRestartsMs: [Math.round(T * 0.5)],
  };
}

/**
 * A held-out fault plan of the same family as the default one, drawn from `seed`: one device broken from a random
 * point (a random failure kind, failing after 0.5–5 s of running), one straggler at 20–60 % speed for 20–50 % of
 * the job, one worker killed, one coordinator restart, each on a different worker where there are enough.
 */
export function randomFaultPlan(seed: number, gpus: number, T: number): FaultPlan {
  const r = seededRng(seed);
  const between = (a: number, b: number): number => a + (b - a) * r.next();
  const order = Array.from({ length: gpus }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  const kinds: readonly FailureKind[] = ['oom', 'timeout', 'crash', 'hardware'];
  const from = Math.round(T * between(0.1, 0.6));
  return {
    brokenDevices: [{ worker: order[0] as number, fromMs: Math.round(T * between(0.3, 0.8)), kind: kinds[r.int(kinds.length)] as FailureKind, failAfterMs: Math.round(between(500, 5000)) }],
    stragglers: gpus > 1 ? [{ worker: order[1 % gpus] as number, speed: Math.round(between(0.2, 0.6) * 100) / 100, fromMs: from, untilMs: from + Math.round(T * between(0.2, 0.5)) }] : [],
    kills: gpus > 2 ? [{ worker: order[2] as number, atMs: Math.round(T * between(0.2, 0.8)) }] : [],
    coordinatorRestartsMs: [Math.round(T * between(0.2, 0.8))],
  };
}

export interface HeldOutFault {
  readonly seed: number;
  readonly makespanRatio: number;
  readonly capacityBoundRatio: number;
  readonly recordsLost: number;
  readonly recordsDuplicated: number;
}

export interface BatchBenchDetails {
  readonly records: number;
  readonly gpus: number;
  readonly model: string;
  readonly slaP99Ms: number;
  readonly makespanSec: { static: number; fixed: number; sits: number; sitsWithFaults: number };
  /** The faulted SITS run's p99 (a throttled GPU's requests miss the SLA at any batch size). */
  readonly sitsWithFaultsP99LatencyMs: number;
  readonly sitsInitialBatch: number;
  readonly sitsBatchSizes: { min: number; max: number; last: number };
  readonly twoTenants: Record<string, TierShare>;
  readonly faultPlan: FaultPlan;
  /** The best makespan ratio any scheduler could reach with the capacity the faults leave. */
  readonly faultCapacityBoundRatio: number;
  /**
   * The oracle: the engine model's ceiling on this token mix (every step full) over the GPUs, i.e. the most any
   * batching policy could reach, and what it allows against static batching; where the ceiling's time goes.
   */
  readonly oracle: { readonly tokensPerSec: number; readonly maxThroughputVsStatic: number; readonly maxUtilizationVsStatic: number; readonly sitsPctOfOracle: number; readonly timePct: { prefill: number; decode: number; fixed: number } };
  /** With faultSeeds: the held-out fault plans' makespan ratios and capacity bounds. */
  readonly heldOutFaults?: readonly HeldOutFault[];
  readonly slaFrontier: readonly ({ slaP99Ms: number } & BatchMetrics)[];
  readonly faultEvents: readonly string[];
  readonly quarantined: readonly string[];
  readonly outputState: string;
  readonly goal: Record<string, number | boolean>;
  /** With --batch-plugin: who decided the batch sizes of the fault-free SITS run. */
  readonly batchPlugin?: { readonly name: string } & PluginTally;
}

export function runBatchBench(trace: readonly TraceRequest[], opts: Partial<BatchBenchOptions> = {}): { json: BatchBenchJson; details: BatchBenchDetails } {
  const o = { ...DEFAULT_BATCH_BENCH, ...opts };
  const m = o.model ?? LLAMA31_8B_H100;
  const rows = o.records === undefined ? trace : trace.slice(0, o.records);
  const reqs: EngineRequest[] = rows.map((t, i) => ({ index: i, promptTokens: t.promptTokens, outputTokens: t.outputTokens }));
  const st = runStatic(m, reqs, o.gpus);
  const fx = runFixed(m, reqs, o.gpus);
  const plug = o.batchPlugin === undefined ? {} : { batchPlugin: o.batchPlugin };
  const sits = runSits(m, reqs, o.gpus, { slaP99Ms: o.slaP99Ms, kvHitRate: o.kvHitRate, ...plug });
  const T = sits.makespanMs;
  const plan = defaultFaultPlan(o.gpus, T);
  const faulty: SitsResult = runSits(m, reqs, o.gpus, { slaP99Ms: o.slaP99Ms, kvHitRate: o.kvHitRate, faults: plan, ...plug });
  const ms = { static: metrics(m, reqs, st), fixed: metrics(m, reqs, fx), sits: metrics(m, reqs, sits) };
  const three = tenantShares(m, reqs, ['gold', 'silver', 'bronze'], o.quantumMs, sits.initialBatch);
  const two = tenantShares(m, reqs, ['gold', 'bronze'], o.quantumMs, sits.initialBatch);
  const makespanRatio = r2(faulty.makespanMs / sits.makespanMs);
  const bound = (p: FaultPlan): number => r2(capacityBoundMs(p, o.gpus, T, m.startupSec * 1000, DEFAULT_LADDER.quarantineMinutes * 60_000, sits.busyGpuMs) / T);
  const boundRatio = bound(plan);
  const heldOut: HeldOutFault[] = (o.faultSeeds ?? []).map((seed) => {
    const p = randomFaultPlan(seed, o.gpus, T);
    const r = runSits(m, reqs, o.gpus, { slaP99Ms: o.slaP99Ms, kvHitRate: o.kvHitRate, faults: p, ...plug });
    return { seed, makespanRatio: r2(r.makespanMs / T), capacityBoundRatio: bound(p), recordsLost: r.recordsLost, recordsDuplicated: r.recordsDuplicated };
  });
  // The latency/throughput frontier of SITS's SLA (the one knob): what each p99 target costs in throughput.
  const frontier = o.frontier.map((sla) => {
    const r = metrics(m, reqs, runSits(m, reqs, o.gpus, { slaP99Ms: sla, kvHitRate: o.kvHitRate, ...plug }));
    return { slaP99Ms: sla, ...r };
  });
  const within = (s: Record<string, TierShare>) => Object.values(s).every((x) => Math.abs(x.sharePct - x.entitledPct) <= 0.1 * x.entitledPct);
  const json: BatchBenchJson = {
    ...ms,
    tenants: { gold: three.gold as TierShare, silver: three.silver as TierShare, bronze: three.bronze as TierShare },
    faults: { recordsLost: faulty.recordsLost, recordsDuplicated: faulty.recordsDuplicated, makespanRatio },
    controlPlane: null,
  };
  const sizes = sits.batchSizes.length === 0 ? [sits.initialBatch] : sits.batchSizes;
  const details: BatchBenchDetails = {
    records: reqs.length,
    gpus: o.gpus,
    model: m.name,
    slaP99Ms: o.slaP99Ms,
    makespanSec: { static: r2(st.makespanMs / 1000), fixed: r2(fx.makespanMs / 1000), sits: r2(sits.makespanMs / 1000), sitsWithFaults: r2(faulty.makespanMs / 1000) },
    sitsWithFaultsP99LatencyMs: r2(percentile(faulty.latenciesMs, 99) ?? 0),
    sitsInitialBatch: sits.initialBatch,
    sitsBatchSizes: { min: Math.min(...sizes), max: Math.max(...sizes), last: sizes[sizes.length - 1] as number },
    twoTenants: two,
    faultPlan: plan,
    faultCapacityBoundRatio: boundRatio,
    oracle: (() => {
      const ceil = ceilingTokensPerSec(m, reqs) * o.gpus;
      const b = ceilingBreakdown(m, reqs);
      return {
        tokensPerSec: r2(ceil),
        maxThroughputVsStatic: r2(ceil / ms.static.throughputTokensPerSec),
        maxUtilizationVsStatic: r2(100 / ms.static.utilizationPct),
        sitsPctOfOracle: r2((100 * ms.sits.throughputTokensPerSec) / ceil),
        timePct: { prefill: b.prefillPct, decode: b.decodePct, fixed: b.fixedPct },
      };
    })(),
    ...(heldOut.length === 0 ? {} : { heldOutFaults: heldOut }),
    slaFrontier: frontier,
    faultEvents: faulty.events.filter((e) => /quarantin|rung|lost|re-sharded|epoch/.test(e)).slice(0, 40),
    quarantined: faulty.quarantined,
    outputState: faulty.outputState,
    goal: {
      p99ReductionVsStaticPct: r2(100 * (1 - ms.sits.p99LatencyMs / ms.static.p99LatencyMs)),
      p99Goal47: ms.sits.p99LatencyMs <= 0.53 * ms.static.p99LatencyMs,
      utilizationVsStatic: r2(ms.sits.utilizationPct / ms.static.utilizationPct),
      utilizationGoal2x: ms.sits.utilizationPct >= 2 * ms.static.utilizationPct,
      throughputVsStatic: r2(ms.sits.throughputTokensPerSec / ms.static.throughputTokensPerSec),
      throughputGoal3_2x: ms.sits.throughputTokensPerSec >= 3.2 * ms.static.throughputTokensPerSec,
      tiersWithin10Pct: within(three) && within(two),
      exactlyOnce: faulty.recordsLost === 0 && faulty.recordsDuplicated === 0,
      makespanGoal1_2: makespanRatio <= 1.2,
    },
    ...(o.batchPlugin === undefined || sits.pluginTally === undefined ? {} : { batchPlugin: { name: o.batchPlugin.name, ...sits.pluginTally } }),
  };
  return { json, details };
}
