import type { Command } from 'commander';
import { writeFileMkdir } from '../../bench/output.ts';
import { benchTraining, TRAINING_POLICIES } from '../../bench/training/training-bench.ts';
import { table } from '../format.ts';
import { intOption, numberOption } from '../options.ts';

export function registerBenchTraining(bench: Command): void {
  bench
    .command('training')
    .description(
      'the seed’s headline table re-measured: training tokens/s and GPU utilisation under kube-default, round-robin and sits, from the step-time model (ADR 0103, 0104)',
    )
    .option('--seed <n>', 'workload seed (same seed, same output)', intOption('--seed'), 1)
    .option('--hours <h>', 'hours of arrivals', numberOption('--hours', 0.1, 1000), 8)
    .option('--load <x>', 'arrival-rate multiplier (1 ≈ 90 % of the GPUs asked for)', numberOption('--load', 0.01, 100), 1)
    .option('--extra-profiles <list>', 'comma-separated profiles to run beside the three (reported outside "policies")', 'sits-step')
    .requiredOption('--json <file>', 'write {"policies": {"kube-default", "round-robin", "sits"}, …} here')
    .action((o: { seed: number; hours: number; load: number; extraProfiles: string; json: string }) => {
      const extra = o.extraProfiles
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const r = benchTraining({ seed: o.seed, hours: o.hours, load: o.load, extraProfiles: extra });
      writeFileMkdir(o.json, `${JSON.stringify(r, null, 2)}\n`);
      const all = { ...r.policies, ...r.extra };
      const names = [...TRAINING_POLICIES, ...Object.keys(r.extra)];
      const fig = (n: string) => all[n as keyof typeof all] as (typeof r.policies)['sits'];
      const det = (n: string) => r.details[n];
      const rows = names.map((n) => [
        n,
        fig(n).tokensPerSec,
        fig(n).gpuUtilizationPct.toFixed(2),
        fig(n).gangsInOneNvlinkDomainPct.toFixed(2),
        det(n)?.meanSlowdown.toFixed(2) ?? '-',
        det(n)?.gpuAllocationPct.toFixed(2) ?? '-',
        det(n)?.waitSec.p50 ?? '-',
      ]);
      rows.push(['every job ideally placed', r.workload.ideal.tokensPerSec, r.workload.ideal.gpuUtilizationPct.toFixed(2), '-', '1.00', '-', '-']);
      rows.push([
        'seed 000 §1: default',
        r.seedTable['kube-default'].tokensPerSec,
        r.seedTable['kube-default'].gpuUtilizationPct.toFixed(2),
        '-',
        '-',
        '-',
        '-',
      ]);
      rows.push(['seed 000 §1: SITS', r.seedTable.sits.tokensPerSec, r.seedTable.sits.gpuUtilizationPct.toFixed(2), '-', '-', '-', '-']);
      process.stdout.write(
        `${r.workload.jobs} training jobs over ${r.workload.hours} h (load ${r.workload.load}) on ${r.cluster.nodes} nodes / ${r.cluster.gpus} GPUs in ${r.cluster.racks} racks\n\n` +
          `${table(['policy', 'tokens/s per job', 'GPU util %', 'gangs in one NVLink domain %', 'step / ideal', 'GPU alloc %', 'wait p50 s'], rows)}\n\n` +
          `sits vs kube-default: ×${r.ratios.tokensPerSec} tokens/s, ${r.ratios.gpuUtilizationPp >= 0 ? '+' : ''}${r.ratios.gpuUtilizationPp} pp utilisation (seed: ×${r.ratios.seedTokensPerSec}, +${r.ratios.seedGpuUtilizationPp} pp)\n`,
      );
    });
}
