import type { Command } from 'commander';
import { checkScenario, loadScenarioText } from '../../app/scenario.ts';
import { CliError, EXIT } from '../errors.ts';
import { outputOption, printed } from '../kube-flags.ts';
import { readInput } from '../paths.ts';
import { renderBatch } from './schedule.ts';

export function registerScenario(program: Command): void {
  program
    .command('scenario')
    .description(
      'run declarative scenario files (cluster, running pods, workload, expected placements; or queues, jobs and cycles with expected admissions and preemptions) and check them',
    )
    .argument('<files...>', 'scenario YAML files (see scenarios/)')
    .option('-v, --verbose', 'print every placement (queue scenarios: what each cycle started, preempted and held)')
    .addOption(outputOption(['text', 'json', 'yaml'], 'json/yaml: per file its name, ok, failures, placements and cycle log'))
    .action((files: string[], o: { verbose?: boolean; output: string }) => {
      let failed = 0;
      const results: unknown[] = [];
      const text = o.output === 'text';
      for (const f of files) {
        const s = loadScenarioText(f, readInput(f, 'scenario'));
        if (!s.ok) throw s.error;
        const { result, log, failures } = checkScenario(s.value);
        if (failures.length > 0) failed++;
        if (!text) {
          results.push({
            file: f,
            name: s.value.name,
            ok: failures.length === 0,
            failures,
            ...(result === undefined ? {} : { result }),
            ...(log.length === 0 ? {} : { log }),
          });
          continue;
        }
        process.stdout.write(
          `${failures.length === 0 ? 'ok  ' : 'FAIL'} ${s.value.name}${s.value.description === '' ? '' : ` — ${s.value.description.trim()}`}\n`,
        );
        for (const x of failures) process.stdout.write(`     ${x}\n`);
        if (o.verbose === true && result !== undefined) process.stdout.write(`${renderBatch(result).replace(/^/gm, '     ')}\n`);
        if (o.verbose === true && log.length > 0) process.stdout.write(`${log.map((l) => `     ${l}`).join('\n')}\n`);
      }
      if (!text) process.stdout.write(printed(results, o.output) ?? '');
      if (failed > 0)
        throw new CliError(`scenario: ${failed} of ${files.length} scenarios failed`, {
          hint: text ? 'the FAIL lines above say what differed' : 'the failures in the output say what differed',
          exitCode: EXIT.runtime,
        });
    });
}
