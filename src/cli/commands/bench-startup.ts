import { existsSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { runStartupBench } from '../../bench/startup/startup-bench.ts';
import { CliError } from '../errors.ts';
import { intOption } from '../options.ts';
import { checkOutputFile } from '../paths.ts';

export function registerBenchStartup(bench: Command): void {
  bench
    .command('startup')
    .description('start-up time and peak RSS of `sits --version` and `sits lint` of one file, each in a fresh process, beside `node -e 0`')
    .option('--runs <n>', 'warm runs per case (after one cold run)', intOption('--runs', 1, 1000), 10)
    .option('--entry <file>', "another installation's bin/sits.mjs to measure (e.g. an older checkout), run with this Node")
    .requiredOption(
      '--json <file>',
      'write {node, cpuCores, loadAverage1m, goalsMs, cases: [{name, wallMs: {p50, p90, max}, firstRunMs, maxRssMiB}], baseline} here',
    )
    .action(async (o: { runs: number; json: string; entry?: string }) => {
      if (o.entry !== undefined && !existsSync(o.entry))
        throw new CliError(`bench startup --entry ${o.entry}: no such file`, { hint: 'give the bin/sits.mjs of an installation' });
      checkOutputFile('--json', o.json);
      const r = await runStartupBench({ runs: o.runs, ...(o.entry === undefined ? {} : { entry: o.entry }), progress: (m) => process.stdout.write(`${m}\n`) });
      process.stdout.write(`load average ${r.loadAverage1m} on ${r.cpuCores} cores, ${r.node}\n`);
      writeFileSync(o.json, `${JSON.stringify(r, null, 2)}\n`);
    });
}
