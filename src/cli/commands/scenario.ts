import type { Command } from 'commander';
import { checkScenario, loadScenarioText } from '../../app/scenario.ts';
import { CliError, EXIT } from '../errors.ts';
import { readInput } from '../paths.ts';
import { renderBatch } from './schedule.ts';

export function registerScenario(program: Command): void {
  program
    .command('scenario')
    .description('run declarative scenario files (cluster, running pods, workload, expected placements; or queues, jobs and cycles with expected admissions and preemptions) and check them')
    .argument('<files...>', 'scenario YAML files (see scenarios/)')
    .option('-v, --verbose', 'print every placement (queue scenarios: what each cycle started, preempted and held)')
    .action((files: string[], o: { verbose?: boolean }) => {
      let failed = 0;
      for (const f of files) {
        const s = loadScenarioText(f, readInput(f, 'scenario'));
        if (!s.ok) throw s.error;
        const { result, log, failures } = checkScenario(s.value);
        process.stdout.write(`${failures.length === 0 ? 'ok  ' : 'FAIL'} ${s.value.name}${s.value.description === '' ? '' : ` — ${s.value.description.trim()}`}\n`);
        for (const x of failures) process.stdout.write(`     ${x}\n`);
        if (o.verbose === true && result !== undefined) process.stdout.write(`${renderBatch(result).replace(/^/gm, '     ')}\n`);
        if (o.verbose === true && log.length > 0) process.stdout.write(`${log.map((l) => `     ${l}`).join('\n')}\n`);
        if (failures.length > 0) failed++;
      }
      if (failed > 0) throw new CliError(`scenario: ${failed} of ${files.length} scenarios failed`, { hint: 'the FAIL lines above say what differed', exitCode: EXIT.runtime });
    });
}
