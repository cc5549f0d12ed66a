import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { runAdmissionBench } from '../../bench/admission/admission-bench.ts';
import { intOption, numberOption } from '../options.ts';

export function registerBenchAdmission(bench: Command): void {
  bench
    .command('admission')
    .description('admission decisions per second: one queue cycle (quota + whole-gang placement) over a backlog larger than the cluster')
    .option('--nodes <n>', 'nodes', intOption('--nodes', 1, 100_000), 1000)
    .option('--gpus-per-node <n>', 'GPUs per node', intOption('--gpus-per-node', 1, 64), 8)
    .option('--backlog <x>', 'backlog as a multiple of what fills the cluster', numberOption('--backlog', 0.1, 20), 2)
    .option('--seed <n>', 'seed', intOption('--seed'), 1)
    .requiredOption('--json <file>', 'write the result here')
    .action((o: { nodes: number; gpusPerNode: number; backlog: number; seed: number; json: string }) => {
      const r = runAdmissionBench({ ...o, now: () => performance.now() });
      writeFileSync(o.json, `${JSON.stringify(r, null, 2)}\n`);
      process.stdout.write(
        `${r.jobs} jobs on ${r.nodes} nodes: ${r.admitted} admitted, waiting ${JSON.stringify(r.waiting)}; ${r.decisionsPerSecond} decisions/s (cycle ${r.cycleMs} ms)\n`,
      );
    });
}
