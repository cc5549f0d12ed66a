/**
 * The throughput benchmark: scheduling decisions per second of a full profile in-process (no API calls),
 * over the synthetic cluster and workload of workload.ts. Every unit is scheduled once, in order: a pod
 * with `schedulePod`, a gang with `scheduleGang` (all-or-nothing, topology search). The clock (a port)
 * measures the whole loop and each gang attempt; building the cluster and the workload is not timed.
 */
import { simAppOrThrow } from '../../app/sim-app.ts';
import type { Scheduler } from '../../core/framework/scheduler.ts';
import { seededRng } from '../../core/ports.ts';
import { shapesOf } from '../../core/estimate/expected-workload.ts';
import { PolicyError } from '../fgd/run.ts';
import { median, percentile } from '../../core/stats.ts';
import { benchNodes, benchWorkload, zonesFor, type BenchWorkload, type WorkloadKind } from './workload.ts';

export interface ThroughputOptions {
  readonly nodes: number;
  readonly gpusPerNode: number;
  readonly pods: number;
  readonly workload: WorkloadKind;
  readonly profile?: string;
  readonly seed?: number;
  /** Monotonic clock in ms (performance.now). */
  readonly now: () => number;
  /** Resident set size in bytes (process.memoryUsage().rss). */
  readonly rssBytes?: () => number;
  /** CPU time of the process in ms (process.cpuUsage), read around the whole loop only: kernel CPU accounting is too coarse for one attempt. */
  readonly cpuMs?: () => number;
  /** Time this thread has waited for a core so far, in ms (Linux schedstat), read around each gang attempt when given. */
  readonly runQueueWaitMs?: () => number;
}

/** The JSON contract of `sits bench throughput` (issue 3 §7). */
export interface ThroughputJson {
  readonly nodes: number;
  readonly pods: number;
  readonly workload: WorkloadKind;
  readonly podsPerSecond: number;
  readonly gangAttemptMs: { readonly p50: number | null; readonly p99: number | null };
  readonly rssMiB: number;
}

/** One gang attempt: when it started and how long it took (the clock's ms), and the work it did. */
export interface GangAttempt {
  /** Position among the gang attempts, from 0. */
  readonly i: number;
  readonly startMs: number;
  readonly ms: number;
  readonly placed: boolean;
  /** Score-index builds (a shape's first use) during the attempt. */
  readonly builds: number;
  /** Nodes filtered and scored during the attempt (index refreshes and builds). */
  readonly evaluations: number;
  /** Candidate domains tried. */
  readonly domainTrials: number;
  /** Time spent waiting for a core during the attempt, when the host can tell. */
  readonly waitMs?: number;
}

export interface ThroughputResult extends ThroughputJson {
  readonly gpus: number;
  /** Pods per CPU second of the loop. */
  readonly podsPerCpuSecond: number | null;
  readonly placedPods: number;
  readonly gangs: number;
  readonly gangsPlaced: number;
  readonly fillPct: number;
  readonly allocatedPct: number;
  readonly seconds: number;
  /** Every gang attempt, in order (for `--slowest`). */
  readonly attempts: readonly GangAttempt[];
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

export function runThroughput(o: ThroughputOptions): ThroughputResult {
  return prepareThroughput(o).run();
}

/**
 * Builds the workload, the profile, the cluster and the scheduler (not timed) and returns the timed loop, so
 * that a host can let the background work of the preparation (JIT compilation, GC of the setup's objects)
 * finish before the clock starts. The loop itself is the same either way.
 */
export function prepareThroughput(o: ThroughputOptions): { run: () => ThroughputResult } {
  const seed = o.seed ?? 1;
  const wl = benchWorkload(o.workload, o.nodes, o.gpusPerNode, o.pods, seed);
  const allPods = wl.units.flatMap((u) => (u.kind === 'pod' ? [u.pod] : u.gang.members));
  // The expected workload is learned from the pods given, as a live scheduler learns it from pods seen.
  const typical = shapesOf(allPods);
  const { scheduler } = simAppOrThrow({ nodes: benchNodes(o.nodes, o.gpusPerNode, zonesFor(o.workload)), profile: o.profile ?? 'sits', typicalShapes: typical, rng: seededRng(seed) }, (m) => new PolicyError(m));
  return { run: () => timedLoop(o, wl, scheduler) };
}

function timedLoop(o: ThroughputOptions, wl: BenchWorkload, scheduler: Scheduler): ThroughputResult {
  const gangMs: number[] = [];
  const attempts: GangAttempt[] = [];
  const k = scheduler.counters;
  const cpu = o.cpuMs;
  let placed = 0;
  let gangsPlaced = 0;
  let usedMilli = 0;
  const t0 = o.now();
  const c0 = cpu?.() ?? 0;
  for (const u of wl.units) {
    if (u.kind === 'pod') {
      const r = scheduler.schedulePod(u.pod);
      if (r.ok) {
        placed++;
        usedMilli += u.pod.request.gpuCount * u.pod.request.gpuMilli;
      }
    } else {
      const b0 = k.builds;
      const e0 = k.evaluations;
      const d0 = k.domainTrials;
      const w0 = o.runQueueWaitMs?.();
      const g0 = o.now();
      const r = scheduler.scheduleGang(u.gang);
      const ms = o.now() - g0;
      const w1 = o.runQueueWaitMs?.();
      gangMs.push(ms);
      const a = { i: attempts.length, startMs: g0, ms, placed: r.ok, builds: k.builds - b0, evaluations: k.evaluations - e0, domainTrials: k.domainTrials - d0 };
      attempts.push(w0 === undefined || w1 === undefined ? a : { ...a, waitMs: w1 - w0 });
      if (r.ok) {
        gangsPlaced++;
        placed += r.placements.length;
        for (const m of u.gang.members) usedMilli += m.request.gpuCount * m.request.gpuMilli;
      }
    }
  }
  const seconds = (o.now() - t0) / 1000;
  const cpuSeconds = cpu === undefined ? undefined : (cpu() - c0) / 1000;
  const rss = o.rssBytes?.() ?? 0;
  return {
    nodes: o.nodes,
    pods: wl.pods,
    workload: o.workload,
    podsPerSecond: Math.round(wl.pods / seconds),
    gangAttemptMs: { p50: gangMs.length === 0 ? null : r3(median(gangMs)), p99: gangMs.length === 0 ? null : r3(percentile(gangMs, 99) as number) },
    rssMiB: Math.round(rss / 1048576),
    gpus: o.nodes * o.gpusPerNode,
    podsPerCpuSecond: cpuSeconds === undefined || cpuSeconds <= 0 ? null : Math.round(wl.pods / cpuSeconds),
    placedPods: placed,
    gangs: wl.gangs,
    gangsPlaced,
    fillPct: Math.round(wl.fillPct * 10) / 10,
    allocatedPct: Math.round((1000 * usedMilli) / (o.nodes * o.gpusPerNode * 1000)) / 10,
    seconds: r3(seconds),
    attempts,
  };
}
