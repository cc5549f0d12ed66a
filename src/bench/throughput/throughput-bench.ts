/**
 * The throughput benchmark as a host: untimed warm-up runs (JIT), a pause for V8's background work, the timed
 * loop of run.ts on this process's clock, CPU time and RSS, and, for a diagnosis of the slowest gang
 * attempts, the GC pauses and run-queue waits around them. `sits bench throughput` parses the options and
 * prints the tables.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';
import { percentile } from '../../core/stats.ts';
import { prepareThroughput, runThroughput, type GangAttempt, type ThroughputJson, type ThroughputResult } from './run.ts';
import type { WorkloadKind } from './workload.ts';

const WARMUP_NODES = 512;
const WARMUP_RUNS = 3;
const SETTLE_MS = 100;

export interface GcPause {
  readonly startMs: number;
  readonly ms: number;
}

/** Pods for ~90 % of GPU capacity: 0.9 per GPU for single, 0.9 per node for gang (whole 8-pod gangs), one per GPU for fractional and mixed. */
export function defaultThroughputPods(workload: WorkloadKind, nodes: number, gpusPerNode: number): number {
  const gpus = nodes * gpusPerNode;
  return workload === 'single' ? Math.floor(0.9 * gpus) : workload === 'gang' ? Math.max(8, Math.round((0.9 * nodes) / 8) * 8) : gpus;
}

/** Why `pods` of this workload cannot be placed on the cluster at all, or undefined. */
export function throughputFitError(workload: WorkloadKind, pods: number, nodes: number, gpusPerNode: number): string | undefined {
  const gpus = nodes * gpusPerNode;
  if (workload === 'single' && pods > gpus) return `${pods} single-GPU pods do not fit on ${gpus} GPUs`;
  if (workload === 'gang' && pods < 8) return '--workload gang needs at least 8 pods (one 8-pod gang)';
  if (workload === 'gang' && pods > nodes) return `${pods} gang pods of a whole node each do not fit on ${nodes} nodes`;
  return undefined;
}

export interface ThroughputBenchInput {
  readonly nodes: number;
  readonly gpusPerNode: number;
  readonly pods: number;
  readonly workload: WorkloadKind;
  readonly profile: string;
  readonly seed: number;
  /** Untimed warm-up runs on a small cluster (JIT) and a pause before the timed loop. */
  readonly warmup: boolean;
  /** Also record GC pauses and run-queue waits, to explain the slowest gang attempts. */
  readonly diagnose: boolean;
}

export interface ThroughputBench {
  readonly result: ThroughputResult;
  /** With `diagnose`: the GC pauses of the run, and the load average (1 and 5 min) after it. */
  readonly gc?: readonly GcPause[];
  readonly loadAverage?: readonly [number, number];
}

/** This thread's run-queue wait so far in ms (Linux schedstat; updated at context switches), or undefined elsewhere. */
function runQueueWaitReader(): (() => number) | undefined {
  const read = (): number => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6;
  try {
    return Number.isFinite(read()) ? read : undefined;
  } catch {
    return undefined;
  }
}

export async function runThroughputBench(o: ThroughputBenchInput): Promise<ThroughputBench> {
  const { workload, pods } = o;
  const now = (): number => performance.now();
  if (o.warmup) {
    // Untimed: three runs on up to 512 nodes get the scheduling code compiled before the clock starts (one run
    // on 256 nodes left the gang path to be optimised, on V8's background threads, during the timed loop).
    const wn = Math.min(o.nodes, WARMUP_NODES);
    for (let w = 0; w < WARMUP_RUNS; w++) runThroughput({ nodes: wn, gpusPerNode: o.gpusPerNode, pods: Math.max(8, Math.round((pods * wn) / o.nodes)), workload, profile: o.profile, seed: o.seed + 1 + w, now });
  }
  const cpuMs = (): number => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const gc: GcPause[] = [];
  const obs = !o.diagnose ? undefined : new PerformanceObserver((list) => gc.push(...list.getEntries().map((e) => ({ startMs: e.startTime, ms: e.duration }))));
  obs?.observe({ entryTypes: ['gc'] });
  // Read around each gang attempt (outside its timing) only when the slowest attempts are asked for.
  const wait = !o.diagnose ? undefined : runQueueWaitReader();
  const prepared = prepareThroughput({ nodes: o.nodes, gpusPerNode: o.gpusPerNode, pods, workload, profile: o.profile, seed: o.seed, now, cpuMs, rssBytes: () => process.memoryUsage().rss, ...(wait === undefined ? {} : { runQueueWaitMs: wait }) });
  // The untimed preparation (workload, cluster, profile) leaves compilation and GC work on V8's background
  // threads; let it finish rather than compete with the timed loop for the cores.
  if (o.warmup) await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const result = prepared.run();
  if (obs === undefined) return { result };
  // GC entries arrive after the synchronous run: let them in.
  await new Promise((resolve) => setTimeout(resolve, 50));
  obs.disconnect();
  const [l1, l5] = loadavg();
  return { result, gc, loadAverage: [l1 ?? 0, l5 ?? 0] };
}

export function throughputJson(r: ThroughputResult): ThroughputJson {
  return { nodes: r.nodes, pods: r.pods, workload: r.workload, podsPerSecond: r.podsPerSecond, gangAttemptMs: r.gangAttemptMs, rssMiB: r.rssMiB };
}

/** A slow gang attempt with the GC time that overlapped it. */
export interface SlowAttempt extends GangAttempt {
  readonly gcMs: number;
}

/**
 * The n slowest gang attempts and what they did: index builds, nodes evaluated, domains tried, and the GC
 * pauses that overlapped them. Time not explained by those is mostly waiting for a core (other processes).
 */
export function slowestAttempts(attempts: readonly GangAttempt[], gc: readonly GcPause[], n: number): SlowAttempt[] {
  return [...attempts]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, n)
    .map((a) => {
      let overlap = 0;
      for (const g of gc) overlap += Math.max(0, Math.min(a.startMs + a.ms, g.startMs + g.ms) - Math.max(a.startMs, g.startMs));
      return { ...a, gcMs: overlap };
    });
}

/** The gang-attempt p99 without the time spent waiting for a core, when every attempt knows its wait (a diagnostic: the reported p99 is wall time). */
export function p99WithoutWaits(attempts: readonly GangAttempt[]): number | undefined {
  const own = attempts.flatMap((a) => (a.waitMs === undefined ? [] : [a.ms - a.waitMs]));
  return own.length === attempts.length && own.length > 0 ? (percentile(own, 99) as number) : undefined;
}
