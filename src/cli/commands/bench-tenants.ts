import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { benchTenants, DEFAULT_TENANTS_TRACE } from '../../bench/tenants/bench-tenants.ts';
import { TIERS } from '../../bench/tenants/philly-window.ts';
import { table } from '../format.ts';
import { intOption, numberOption } from '../options.ts';

export function registerBenchTenants(bench: Command): void {
  bench
    .command('tenants')
    .description('multi-tenant fairness: the busiest Philly window on a smaller cluster, SITS queues (gold/silver/bronze 4/2/1) vs one FIFO queue')
    .option('--trace <csv>', 'philly.csv of the Pollux artifact', DEFAULT_TENANTS_TRACE)
    .option('--nodes <n>', '8-GPU nodes in the cluster', intOption('--nodes', 1, 10_000), 16)
    .option('--window-hours <h>', 'length of the busy window', numberOption('--window-hours', 0.5, 168), 4)
    .option('--max-duration-hours <h>', 'job durations are clipped to this', numberOption('--max-duration-hours', 0.1, 1000), 6)
    .option('--eta-samples <n>', 'jobs whose start is predicted at submission', intOption('--eta-samples', 0, 100_000), 100)
    .option('--seed <n>', 'seed', intOption('--seed'), 1)
    .option('--eta-ablation', 'also rerun SITS with parts of the start-time estimate off or oracle-fed (8 more runs)', false)
    .requiredOption('--json <file>', 'write the results here')
    .action(
      (o: {
        trace: string;
        nodes: number;
        windowHours: number;
        maxDurationHours: number;
        etaSamples: number;
        seed: number;
        etaAblation: boolean;
        json: string;
      }) => {
        const tty = process.stderr.isTTY;
        const r = benchTenants({
          trace: o.trace,
          nodes: o.nodes,
          windowHours: o.windowHours,
          maxDurationHours: o.maxDurationHours,
          etaSamples: o.etaSamples,
          seed: o.seed,
          etaAblation: o.etaAblation,
          ...(tty ? { onProgress: (mode: string, d: number, t: number) => process.stderr.write(`\r${mode}: ${d}/${t} jobs finished   `) } : {}),
        });
        if (tty) process.stderr.write('\n');
        writeFileSync(o.json, `${JSON.stringify(r, null, 2)}\n`);
        const rows = TIERS.map((t) => [
          t,
          r.sits.tiers[t].sharePct.toFixed(2),
          r.sits.tiers[t].entitledPct.toFixed(2),
          r.fifo.tiers[t].sharePct.toFixed(2),
          r.sits.tiers[t].queueDelaySec.p50,
          r.fifo.tiers[t].queueDelaySec.p50,
        ]);
        process.stdout.write(
          `${r.window.jobs} jobs in the busiest ${r.window.hours} h window (${r.window.startHoursIntoTrace} h into the trace), ${r.window.demandGpuHours} GPU-h asked of ${r.window.capacityGpuHours}\n\n` +
            `${table(['tier', 'SITS share %', 'entitled %', 'FIFO share %', 'SITS wait p50 s', 'FIFO wait p50 s'], rows)}\n\n` +
            `Jain: SITS ${r.sits.jain}, FIFO ${r.fifo.jain}; utilisation: SITS ${r.sits.utilizationPct} %, FIFO ${r.fifo.utilizationPct} %; preemptions ${r.sits.preemptions}; ` +
            `ETA error p50 ${r.sits.etaErrorPct?.p50 ?? '-'} % p90 ${r.sits.etaErrorPct?.p90 ?? '-'} % (${r.sits.etaErrorPct?.samples ?? 0} jobs estimated at submission)\n` +
            (r.etaAblation === undefined
              ? ''
              : `${table(
                  ['ETA variant', 'p50 %', 'p90 %', 'signed p50 %'],
                  Object.entries(r.etaAblation).map(([k, v]) => [k, v.p50, v.p90, v.signedP50]),
                )}\n`) +
            `goals: ${Object.entries(r.goals)
              .map(([k, v]) => `${k} ${v ? 'yes' : 'NO'}`)
              .join(', ')}\n`,
        );
      },
    );
}
