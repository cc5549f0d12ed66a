/**
 * `sits bench throughput`: scheduling decisions per second of the full `sits` profile in-process (no API
 * calls) on a synthetic cluster, with a workload sized to ~90 % of GPU capacity (issue 3 §7).
 */
import type { Command } from 'commander';
import { resolveProfile, formatProfileError } from '../../core/plugins/registry.ts';
import { writeFileMkdir } from '../../bench/output.ts';
import type { GangAttempt, ThroughputResult } from '../../bench/throughput/run.ts';
import {
  defaultThroughputPods,
  p99WithoutWaits,
  runThroughputBench,
  slowestAttempts,
  throughputFitError,
  throughputJson,
  type GcPause,
} from '../../bench/throughput/throughput-bench.ts';
import { WORKLOADS, type WorkloadKind } from '../../bench/throughput/workload.ts';
import { CliError } from '../errors.ts';
import { table } from '../format.ts';
import { intOption } from '../options.ts';

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

/** The n slowest gang attempts and what they did (see slowestAttempts). */
export function slowestTable(attempts: readonly GangAttempt[], gc: readonly GcPause[], n: number): string {
  const rows = slowestAttempts(attempts, gc, n).map((a) => [
    a.i,
    a.ms.toFixed(3),
    a.placed ? 'yes' : 'no',
    a.builds,
    a.evaluations,
    a.domainTrials,
    a.gcMs.toFixed(2),
    a.waitMs === undefined ? '–' : a.waitMs.toFixed(2),
  ]);
  return table(['attempt', 'ms', 'placed', 'index builds', 'nodes evaluated', 'domains tried', 'GC ms', 'waiting for a core ms'], rows);
}

export function throughputTable(r: ThroughputResult): string {
  const f = (v: number | null): string => (v === null ? '–' : v.toFixed(3));
  return table(
    ['nodes', 'GPUs', 'workload', 'pods', 'placed', 'gangs', 'filled %', 'pods/s', 'pods/CPU-s', 'gang p50 ms', 'gang p99 ms', 'RSS MiB'],
    [
      [
        r.nodes,
        r.gpus,
        r.workload,
        r.pods,
        r.placedPods,
        `${r.gangsPlaced}/${r.gangs}`,
        r.allocatedPct.toFixed(1),
        r.podsPerSecond,
        r.podsPerCpuSecond ?? '–',
        f(r.gangAttemptMs.p50),
        f(r.gangAttemptMs.p99),
        r.rssMiB,
      ],
    ],
  );
}

export function registerBenchThroughput(bench: Command): void {
  bench
    .command('throughput')
    .description('scheduling decisions per second of a profile in-process, on N nodes with a workload sized to ~90 % of GPU capacity')
    .option('--nodes <n>', 'nodes', intOption('--nodes', 1, 1_000_000), 5000)
    .option('--gpus-per-node <n>', 'GPUs per node', intOption('--gpus-per-node', 1, 64), 8)
    .option(
      '--pods <n>',
      'pods (default: ~90 % of GPU capacity: 0.9 per GPU for single, 0.9 per node for gang, one per GPU for fractional and mixed)',
      intOption('--pods', 1, 100_000_000),
    )
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
      const pods = o.pods ?? defaultThroughputPods(workload, o.nodes, o.gpusPerNode);
      const misfit = throughputFitError(workload, pods, o.nodes, o.gpusPerNode);
      if (misfit !== undefined) throw new CliError(misfit);
      const {
        result: r,
        gc,
        loadAverage,
      } = await runThroughputBench({
        nodes: o.nodes,
        gpusPerNode: o.gpusPerNode,
        pods,
        workload,
        profile: o.profile,
        seed: o.seed,
        warmup: o.warmup,
        diagnose: o.slowest !== undefined,
      });
      process.stdout.write(`${throughputTable(r)}\n`);
      if (gc !== undefined && loadAverage !== undefined && o.slowest !== undefined) {
        const [l1, l5] = loadAverage;
        process.stdout.write(
          `\n${o.slowest} slowest of ${r.attempts.length} gang attempts (load average ${l1.toFixed(2)} / ${l5.toFixed(2)}):\n${slowestTable(r.attempts, gc, o.slowest)}\n`,
        );
        const own = p99WithoutWaits(r.attempts);
        if (own !== undefined)
          process.stdout.write(
            `gang attempt p99 without the time spent waiting for a core: ${own.toFixed(3)} ms (wall-time p99 ${r.gangAttemptMs.p99?.toFixed(3) ?? '–'} ms)\n`,
          );
      }
      if (o.json !== undefined) writeFileMkdir(o.json, `${JSON.stringify(throughputJson(r), null, 2)}\n`);
    });
}
