/**
 * `sits bench replay`: time-based replay of a trace (Alibaba openb with creation/deletion times, Philly
 * jobs, Pollux workloads, or our YAML workload) on a cluster, per policy: GPU allocation over time,
 * queueing delay, pods never placed; optional seeded GPU-node failures.
 */
import { basename } from 'node:path';
import type { Command } from 'commander';
import { resolveProfile, formatProfileError } from '../../core/plugins/registry.ts';
import type { ReplayResult } from '../../bench/replay/replay.ts';
import { runReplayBench, writeReplayOutputs } from '../../bench/replay/replay-bench.ts';
import { InputError, parseClusterSize, TRACE_FORMATS, type ClusterSource, type TraceFormat } from '../../bench/replay/sources.ts';
import { TraceError } from '../../sim/trace/errors.ts';
import { CliError } from '../errors.ts';
import { table } from '../format.ts';
import { intOption, numberOption } from '../options.ts';

interface ReplayOptions {
  trace: string;
  format?: string;
  nodes?: string;
  cluster?: string;
  clusterSize?: string;
  policies: string;
  seed: number;
  compress: number;
  untilHours?: number;
  failMtbfHours?: number;
  repairHours: number;
  json?: string;
  html?: string;
}

export function replayTable(results: readonly ReplayResult[]): string {
  return table(
    ['policy', 'pods', 'placed', 'never placed', 'GPU util %', 'peak %', 'delay mean s', 'p50 s', 'p90 s', 'p99 s', 'evictions'],
    results.map((r) => [
      r.policy,
      r.pods,
      r.placedPods,
      r.neverPlaced.pods,
      r.gpuUtilisationPct.toFixed(2),
      r.peakAllocationPct.toFixed(1),
      r.queueDelayS.mean.toFixed(0),
      r.queueDelayS.p50.toFixed(0),
      r.queueDelayS.p90.toFixed(0),
      r.queueDelayS.p99.toFixed(0),
      r.evictions,
    ]),
  );
}

export function registerBenchReplay(bench: Command): void {
  bench
    .command('replay')
    .description('time-based replay of a trace on a cluster: GPU allocation over time, queueing delay, pods never placed, per policy')
    .requiredOption('--trace <file>', 'openb pod list with timestamps, philly.csv, a Pollux workload-N.csv, or a YAML workload')
    .option('--format <format>', `trace format (${TRACE_FORMATS.join('|')}); default: recognised from the file`)
    .option('--nodes <csv>', 'cluster: an openb node list')
    .option('--cluster <yaml>', 'cluster: a cluster YAML file')
    .option('--cluster-size <NxG>', 'cluster: N nodes of G GPUs (8: HGX A100), 16 per rack', '')
    .option('--policies <list>', 'comma-separated profiles or aliases', 'sits,fgd,bestfit')
    .option('--seed <n>', 'seed for failures and random policies', intOption('--seed', 0, 2 ** 31 - 1), 1)
    .option('--compress <k>', 'divide arrival times by k (durations kept): k times the load', numberOption('--compress', 0.001, 1e6), 1)
    .option('--until-hours <h>', 'stop after this many hours of virtual time from the first arrival', numberOption('--until-hours', 0.001, 1e7))
    .option(
      '--fail-mtbf-hours <h>',
      'GPU-node failures: mean hours between failures of one node (off by default)',
      numberOption('--fail-mtbf-hours', 0.001, 1e9),
    )
    .option('--repair-hours <h>', 'hours until a failed node is back', numberOption('--repair-hours', 0, 1e6), 1)
    .option('--json <file>', 'write the results as JSON')
    .option('--html <file>', 'write an offline HTML report with charts')
    .action((o: ReplayOptions) => {
      const sources = [o.nodes !== undefined, o.cluster !== undefined, o.clusterSize !== ''].filter(Boolean).length;
      if (sources !== 1) throw new CliError('give exactly one of --nodes <csv>, --cluster <yaml>, --cluster-size <NxG>');
      let cluster: ClusterSource;
      if (o.nodes !== undefined) cluster = { kind: 'openb', file: o.nodes };
      else if (o.cluster !== undefined) cluster = { kind: 'yaml', file: o.cluster };
      else {
        const size = parseClusterSize(o.clusterSize ?? '');
        if (size === undefined) throw new CliError(`--cluster-size must look like 64x8, got "${o.clusterSize}"`);
        cluster = { kind: 'size', ...size };
      }
      if (o.format !== undefined && !(TRACE_FORMATS as readonly string[]).includes(o.format))
        throw new CliError(`--format must be one of ${TRACE_FORMATS.join(', ')}, got "${o.format}"`);
      const policies = o.policies
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '');
      if (policies.length === 0) throw new CliError('--policies is empty');
      for (const p of policies) {
        const r = resolveProfile(p, { typicalShapes: [] });
        if (!r.ok) throw new CliError(`--policies: ${formatProfileError(r.error)}`);
      }
      let b;
      try {
        b = runReplayBench({
          trace: o.trace,
          ...(o.format === undefined ? {} : { format: o.format as TraceFormat }),
          cluster,
          policies,
          seed: o.seed,
          compress: o.compress,
          ...(o.untilHours === undefined ? {} : { untilHours: o.untilHours }),
          ...(o.failMtbfHours === undefined ? {} : { failMtbfHours: o.failMtbfHours }),
          repairHours: o.repairHours,
        });
      } catch (e) {
        if (e instanceof TraceError || e instanceof InputError) throw new CliError(e.message);
        throw e;
      }
      process.stdout.write(
        `${basename(o.trace)} (${b.format}) on ${b.nodes} nodes / ${b.gpus} GPUs${o.compress === 1 ? '' : `, time compressed ×${o.compress}`}\n${replayTable(b.results)}\n`,
      );
      const later = b.results[0]?.notArrived;
      if (later !== undefined && later.pods > 0)
        process.stdout.write(`${later.pods} pods of the trace arrive after the ${o.untilHours ?? 0} h window: not counted above\n`);
      writeReplayOutputs(b, { ...(o.json === undefined ? {} : { json: o.json }), ...(o.html === undefined ? {} : { html: o.html }) });
    });
}
