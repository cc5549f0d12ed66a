import type { Command } from 'commander';
import { scheduleBatch, type BatchResult } from '../../app/schedule-batch.ts';
import { loadClusterText } from '../../formats/cluster-file.ts';
import { loadWorkloadText } from '../../formats/workload-file.ts';
import { CliError } from '../errors.ts';
import { table } from '../format.ts';
import { printed } from '../kube-flags.ts';
import { readInput } from '../paths.ts';

/** Placements as a table (-o wide adds each node's rack), then what stays pending and why. */
export function renderBatch(r: BatchResult, wide = false): string {
  const rows = r.placements.map((p) => [p.podId, p.gang ?? '', p.node, ...(wide ? [r.racks[p.node] ?? ''] : []), p.gpus.length === 0 ? '-' : p.gpus.join(',')]);
  const out = [
    `profile ${r.profile}: placed ${r.summary.placed}/${r.summary.pods} pods (${r.summary.gangsPlaced}/${r.summary.gangs} gangs), GPU allocation ${r.summary.gpuAllocatedPct}%`,
    '',
  ];
  if (rows.length > 0) out.push(table(['pod', 'gang', 'node', ...(wide ? ['rack'] : []), 'gpus'], rows), '');
  if (r.pending.length > 0) {
    out.push('pending:');
    for (const p of r.pending) out.push(`  ${p.explanation}`);
    out.push('');
  }
  return out.join('\n');
}

export function registerSchedule(program: Command): void {
  program
    .command('schedule')
    .description('place a batch of pods and gangs on a cluster and print placements (node, GPU indices) and explanations')
    .requiredOption('--cluster <file>', 'cluster YAML (node groups, shapes, racks)')
    .requiredOption('--workload <file>', 'workload YAML (pods and gangs)')
    .option('--profile <name>', 'scheduling profile', 'sits')
    .option('-o, --output <format>', "table | wide (with each node's rack) | json | yaml", 'table')
    .action((o: { cluster: string; workload: string; profile: string; output: string }) => {
      if (!['table', 'wide', 'json', 'yaml'].includes(o.output))
        throw new CliError(`--output: "${o.output}" is not a format`, { hint: 'one of table, wide, json, yaml' });
      const nodes = loadClusterText(o.cluster, readInput(o.cluster, 'cluster', '--cluster'));
      if (!nodes.ok) throw nodes.error;
      const units = loadWorkloadText(o.workload, readInput(o.workload, 'workload', '--workload'));
      if (!units.ok) throw units.error;
      const r = scheduleBatch(nodes.value, units.value, o.profile);
      if (!r.ok) throw new CliError(r.error.startsWith('unknown profile') ? `--profile: ${r.error}` : r.error);
      process.stdout.write(printed(r.value, o.output) ?? renderBatch(r.value, o.output === 'wide'));
    });
}
