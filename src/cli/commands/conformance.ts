import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { CI_CASES, FULL_FOCUS, SKIPPED_CASES } from '../../app/conformance-cases.ts';
import { runConformance } from '../../app/conformance.ts';
import { anyOf } from '../../harness/upstream-e2e.ts';
import { ExitStatus } from '../errors.ts';
import { intOption } from '../options.ts';

export function registerConformance(program: Command): void {
  program
    .command('conformance')
    .description(
      'run the upstream Kubernetes e2e scheduling cases (SchedulerPredicates, SchedulerPreemption, PodTopologySpread) against the dev cluster with SITS as default-scheduler; builds the suite on first use; writes a JSON summary',
    )
    .option('--focus <regexp>', 'ginkgo focus (default: the three families)')
    .option('--ci', 'only the quick subset `npm test` runs')
    .option('--nodes <n>', 'fake nodes of the dev cluster', intOption('--nodes', 2, 100), 4)
    .option('--shape <preset>', 'node preset', 'dgx-h100')
    .option('--timeout <minutes>', 'ginkgo timeout of the whole run', intOption('--timeout', 1, 600), 90)
    .option('--out <file>', 'JSON summary', 'bench/results/conformance.json')
    .option('--keep <dir>', "keep the suite's log and ginkgo report in this folder")
    .option('-v, --verbose', 'print the cluster, scheduler and suite logs')
    .action(async (o: { focus?: string; ci?: boolean; nodes: number; shape: string; timeout: number; out: string; keep?: string; verbose?: boolean }) => {
      const focus = o.focus ?? (o.ci === true ? anyOf(CI_CASES) : FULL_FOCUS);
      const say = (m: string): void => void process.stderr.write(`${m}\n`);
      const summary = await runConformance({
        focus,
        skipped: SKIPPED_CASES,
        nodes: o.nodes,
        shape: o.shape,
        timeoutMs: o.timeout * 60_000,
        ...(o.keep === undefined ? {} : { workDir: o.keep }),
        // The suite's progress (one line per case) always; everything else with -v.
        log: (m) => {
          if (o.verbose === true || /^(•|\[(FAILED|PANICKED|SKIPPED|TIMEDOUT)\]|Ran \d+ of|running the upstream)/.test(m)) say(m);
        },
      });
      mkdirSync(dirname(o.out), { recursive: true });
      writeFileSync(o.out, `${JSON.stringify(summary, null, 2)}\n`);
      for (const c of summary.cases) say(`${c.state.padEnd(7)} ${c.name}${c.skipReason === undefined ? '' : ` — ${c.skipReason}`}`);
      say(`${summary.counts.passed} passed, ${summary.counts.failed} failed, ${summary.counts.skipped} skipped in ${summary.seconds} s; summary in ${o.out}`);
      if (summary.counts.failed > 0 || (summary.exitCode !== 0 && summary.counts.passed === 0)) throw new ExitStatus(1);
    });
}
