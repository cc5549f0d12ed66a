import type { Command } from 'commander';
import { writeFileMkdir } from '../../bench/output.ts';
import { benchTraining, TRAINING_POLICIES, type TrainingBenchResult } from '../../bench/training/training-bench.ts';
import { loadClusterText } from '../../formats/cluster-file.ts';
import { table } from '../format.ts';
import { intOption, numberOption } from '../options.ts';
import { readInput } from '../paths.ts';

interface BenchTrainingFlags {
  seed: number;
  hours: number;
  load: number;
  extraProfiles: string;
  json: string;
  cluster?: string;
  nicGbps: number;
  nicsPerNode: number;
  oversubscription: number;
}

export function registerBenchTraining(bench: Command): void {
  bench
    .command('training')
    .description(
      'the seed’s headline table re-measured: training tokens/s, GPU utilisation, job completion and wait times under kube-default, round-robin and sits, from the step-time model (ADR 0103, 0104)',
    )
    .option('--seed <n>', 'workload seed (same seed, same output)', intOption('--seed'), 1)
    .option('--hours <h>', 'hours of arrivals', numberOption('--hours', 0.1, 1000), 8)
    .option('--load <x>', 'arrival-rate multiplier (1 ≈ 90 % of the GPUs asked for)', numberOption('--load', 0.01, 100), 1)
    .option('--cluster <file>', 'a cluster of your own, in the `sits schedule --cluster` format (default: the bench’s 20 A100-class nodes in 4 racks)')
    .option('--nic-gbps <n>', 'line rate of one NIC between nodes, Gb/s', numberOption('--nic-gbps', 1, 10_000), 128)
    .option('--nics-per-node <n>', 'NICs per node one job’s traffic can use', intOption('--nics-per-node', 1, 64), 1)
    .option(
      '--oversubscription <x>',
      'leaf-to-spine oversubscription: traffic leaving a rack gets the NIC rate divided by this',
      numberOption('--oversubscription', 1, 64),
      2,
    )
    .option('--extra-profiles <list>', 'comma-separated profiles to run beside the three (reported outside "policies")', 'sits-step')
    .requiredOption('--json <file>', 'write {"policies": {"kube-default", "round-robin", "sits"}, "details", "ratios", …} here')
    .action((o: BenchTrainingFlags) => {
      const extra = o.extraProfiles
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      let cluster;
      if (o.cluster !== undefined) {
        const nodes = loadClusterText(o.cluster, readInput(o.cluster, 'cluster', '--cluster'));
        if (!nodes.ok) throw nodes.error;
        cluster = nodes.value;
      }
      const r = benchTraining({
        seed: o.seed,
        hours: o.hours,
        load: o.load,
        extraProfiles: extra,
        ...(cluster === undefined ? {} : { cluster }),
        network: { nicGbps: o.nicGbps, nicsPerNode: o.nicsPerNode, oversubscription: o.oversubscription },
      });
      writeFileMkdir(o.json, `${JSON.stringify(r, null, 2)}\n`);
      process.stdout.write(renderTraining(r));
    });
}

/** The table a person reads: one row per policy, the ideal and the seed's figures below. */
export function renderTraining(r: TrainingBenchResult): string {
  const all = { ...r.policies, ...r.extra };
  const names = [...TRAINING_POLICIES, ...Object.keys(r.extra)];
  const fig = (n: string) => all[n as keyof typeof all] as (typeof r.policies)['sits'];
  const det = (n: string) => r.details[n];
  const rows = names.map((n) => [
    n,
    fig(n).tokensPerSec,
    det(n)?.clusterTokensPerSec ?? '-',
    fig(n).gpuUtilizationPct.toFixed(2),
    fig(n).gangsInOneNvlinkDomainPct.toFixed(2),
    det(n)?.meanSlowdown.toFixed(2) ?? '-',
    det(n)?.jctSec.mean ?? '-',
    det(n)?.jctSec.p99 ?? '-',
    det(n)?.waitSec.p50 ?? '-',
    det(n)?.waitSec.p99 ?? '-',
    det(n)?.makespanHours.toFixed(2) ?? '-',
  ]);
  const dash = ['-', '-', '-', '-', '-', '-', '-'];
  rows.push([
    'every job ideally placed',
    r.workload.ideal.tokensPerSec,
    '-',
    r.workload.ideal.gpuUtilizationPct.toFixed(2),
    '-',
    '1.00',
    '-',
    '-',
    '-',
    '-',
    '-',
  ]);
  rows.push(['seed 000 §1: default', r.seedTable['kube-default'].tokensPerSec, '-', r.seedTable['kube-default'].gpuUtilizationPct.toFixed(2), ...dash]);
  rows.push(['seed 000 §1: SITS', r.seedTable.sits.tokensPerSec, '-', r.seedTable.sits.gpuUtilizationPct.toFixed(2), ...dash]);
  const q = r.ratios;
  const head = [
    'policy',
    'tokens/s per job',
    'cluster tokens/s',
    'GPU util %',
    'gangs in one NVLink domain %',
    'step / ideal',
    'JCT mean s',
    'JCT p99 s',
    'wait p50 s',
    'wait p99 s',
    'makespan h',
  ];
  return (
    `${r.workload.jobs} training jobs over ${r.workload.hours} h (load ${r.workload.load}) on ${r.cluster.nodes} nodes / ${r.cluster.gpus} GPUs in ${r.cluster.racks} racks\n\n` +
    `${table(head, rows)}\n\n` +
    `sits vs kube-default: ×${q.tokensPerSec} tokens/s per job, ×${q.clusterTokensPerSec ?? '∞'} cluster tokens/s, ×${q.meanJct ?? '∞'} mean JCT, ×${q.waitP50 ?? '∞'} wait p50, ` +
    `${q.gpuUtilizationPp >= 0 ? '+' : ''}${q.gpuUtilizationPp} pp utilisation (seed: ×${q.seedTokensPerSec}, +${q.seedGpuUtilizationPp} pp)\n`
  );
}
