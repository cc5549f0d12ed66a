/**
 * `sits bench throughput`: scheduling decisions per second of the full `sits` profile in-process (no API
 * calls) on a synthetic cluster, with a workload sized to ~90 % of GPU capacity (issue 3 §7).
 */
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';
import { resolveProfile, formatProfileError } from '../../core/framework/registry.ts';
import { percentile, prepareThroughput, runThroughput, type GangAttempt, type ThroughputJson, type ThroughputResult } from '../../bench/throughput/run.ts';
import { WORKLOADS, type WorkloadKind } from '../../bench/throughput/workload.ts';
import { CliError } from '../errors.ts';
import { table } from '../format.ts';
import { intOption } from '../options.ts';
import { writeFileMkdir } from './bench-fgd.ts';

interface ThroughputOptions {
  nodes: number;
  gpusPerNode: number;
  pods?: number;
  workload: string;
  json?: string;
  profile: string;
  seed: number;
  warmup: boolean;
  slowest?: number;
}

const WARMUP_NODES = 512;
const WARMUP_RUNS = 3;
const SETTLE_MS = 100;

interface GcPause {
  readonly startMs: number;
  readonly ms: number;
}

/**
 * The n slowest gang attempts and what they did: index builds, nodes evaluated, domains tried, and the GC
 * pauses that overlapped them. Time not explained by those is mostly waiting for a core (other processes).
 */
export function slowestTable(attempts: readonly GangAttempt[], gc: readonly GcPause[], n: number): string {
  const rows = [...attempts]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, n)
    .map((a) => {
      let overlap = 0;
      for (const g of gc) overlap += Math.max(0, Math.min(a.startMs + a.ms, g.startMs + g.ms) - Math.max(a.startMs, g.startMs));
      return [a.i, a.ms.toFixed(3), a.placed ? 'yes' : 'no', a.builds, a.evaluations, a.domainTrials, overlap.toFixed(2), a.waitMs === undefined ? '–' : a.waitMs.toFixed(2)];
    });
  return table(['attempt', 'ms', 'placed', 'index builds', 'nodes evaluated', 'domains tried', 'GC ms', 'waiting for a core ms'], rows);
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

export function throughputJson(r: ThroughputResult): ThroughputJson {
  return { nodes: r.nodes, pods: r.pods, workload: r.workload, podsPerSecond: r.podsPerSecond, gangAttemptMs: r.gangAttemptMs, rssMiB: r.rssMiB };
}

export function throughputTable(r: ThroughputResult): string {
  const f = (v: number | null): string => (v === null ? '–' : v.toFixed(3));
  return table(
    ['nodes', 'GPUs', 'workload', 'pods', 'placed', 'gangs', 'filled %', 'pods/s', 'pods/CPU-s', 'gang p50 ms', 'gang p99 ms', 'RSS MiB'],
    [[r.nodes, r.gpus, r.workload, r.pods, r.placedPods, `${r.gangsPlaced}/${r.gangs}`, r.allocatedPct.toFixed(1), r.podsPerSecond, r.podsPerCpuSecond ?? '–', f(r.gangAttemptMs.p50), f(r.gangAttemptMs.p99), r.rssMiB]],
  );
}

export function registerBenchThroughput(bench: Command): void {
  bench
    .command('throughput')
    .description('scheduling decisions per second of a profile in-process, on N nodes with a workload sized to ~90 % of GPU capacity')
    .option('--nodes <n>', 'nodes', intOption('--nodes', 1, 1_000_000), 5000)
    .option('--gpus-per-node <n>', 'GPUs per node', intOption('--gpus-per-node', 1, 64), 8)
    .option('--pods <n>', 'pods (default: ~90 % of GPU capacity: 0.9 per GPU for single, 0.9 per node for gang, one per GPU for fractional and mixed)', intOption('--pods', 1, 100_000_000))
    .option('--workload <kind>', `one of ${WORKLOADS.join(', ')}`, 'mixed')
    .option('--json <file>', 'write the result as JSON')
    .option('--profile <name>', 'scheduling profile', 'sits')
    .option('--seed <n>', 'workload shuffle seed', intOption('--seed', 0, 2 ** 31 - 1), 1)
    .option('--no-warmup', 'skip the untimed warm-up runs on a small cluster (JIT) and the pause before the timed loop')
    .option('--slowest <n>', 'also print the n slowest gang attempts with their work and overlapping GC pauses', intOption('--slowest', 1, 10_000))
    .action(async (o: ThroughputOptions) => {
      if (!(WORKLOADS as readonly string[]).includes(o.workload)) throw new CliError(`--workload must be one of ${WORKLOADS.join(', ')}, got "${o.workload}"`);
      const workload = o.workload as WorkloadKind;
      const probe = resolveProfile(o.profile, { typicalShapes: [] });
      if (!probe.ok) throw new CliError(`--profile: ${formatProfileError(probe.error)}`);
      const gpus = o.nodes * o.gpusPerNode;
      const pods = o.pods ?? (workload === 'single' ? Math.floor(0.9 * gpus) : workload === 'gang' ? Math.max(8, Math.round((0.9 * o.nodes) / 8) * 8) : gpus);
      if (workload === 'single' && pods > gpus) throw new CliError(`${pods} single-GPU pods do not fit on ${gpus} GPUs`);
      if (workload === 'gang' && pods < 8) throw new CliError('--workload gang needs at least 8 pods (one 8-pod gang)');
      if (workload === 'gang' && pods > o.nodes) throw new CliError(`${pods} gang pods of a whole node each do not fit on ${o.nodes} nodes`);
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
      const obs = o.slowest === undefined ? undefined : new PerformanceObserver((list) => gc.push(...list.getEntries().map((e) => ({ startMs: e.startTime, ms: e.duration }))));
      obs?.observe({ entryTypes: ['gc'] });
      // Read around each gang attempt (outside its timing) only when the slowest attempts are asked for.
      const wait = o.slowest === undefined ? undefined : runQueueWaitReader();
      const prepared = prepareThroughput({ nodes: o.nodes, gpusPerNode: o.gpusPerNode, pods, workload, profile: o.profile, seed: o.seed, now, cpuMs, rssBytes: () => process.memoryUsage().rss, ...(wait === undefined ? {} : { runQueueWaitMs: wait }) });
      // The untimed preparation (workload, cluster, profile) leaves compilation and GC work on V8's background
      // threads; let it finish rather than compete with the timed loop for the cores.
      if (o.warmup) await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      const r = prepared.run();
      process.stdout.write(`${throughputTable(r)}\n`);
      if (obs !== undefined && o.slowest !== undefined) {
        // GC entries arrive after the synchronous run: let them in.
        await new Promise((resolve) => setTimeout(resolve, 50));
        obs.disconnect();
        const [l1, l5] = loadavg();
        process.stdout.write(`\n${o.slowest} slowest of ${r.attempts.length} gang attempts (load average ${(l1 ?? 0).toFixed(2)} / ${(l5 ?? 0).toFixed(2)}):\n${slowestTable(r.attempts, gc, o.slowest)}\n`);
        // A diagnostic only: the reported p99 is wall time, waits included.
        const own = r.attempts.flatMap((a) => (a.waitMs === undefined ? [] : [a.ms - a.waitMs]));
        if (own.length === r.attempts.length && own.length > 0) process.stdout.write(`gang attempt p99 without the time spent waiting for a core: ${(percentile(own, 99) as number).toFixed(3)} ms (wall-time p99 ${r.gangAttemptMs.p99?.toFixed(3) ?? '–'} ms)\n`);
      }
      if (o.json !== undefined) writeFileMkdir(o.json, `${JSON.stringify(throughputJson(r), null, 2)}\n`);
    });
}
