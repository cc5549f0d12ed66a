import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { runDemo, type DemoResult } from '../../app/demo.ts';
import { serveDemo } from '../../server/demo-serve.ts';
import { profileConfig, PROFILE_NAMES } from '../../core/plugins/registry.ts';
import { CliError, EXIT } from '../errors.ts';
import { table } from '../format.ts';
import { checkOutputFile } from '../paths.ts';
import { intOption, numberOption } from '../options.ts';
import { untilSignal } from './run.ts';

export function renderDemo(r: DemoResult): string {
  const [a, b] = r.results;
  const head =
    `SITS demo — seed ${r.seed}: ${r.cluster.nodes} nodes / ${r.cluster.gpus} GPUs in ${r.cluster.racks} racks (8×H100, 12×A100, 12×L4 nodes); ` +
    `${r.workload.jobs} jobs over ${r.workload.hours} h (${r.workload.training} training gangs of 2–64 GPUs, ${r.workload.inference} inference, ${r.workload.fractional} fractional)`;
  const rows: (string | number)[][] = [
    ['GPU allocation % (time-avg)', ...r.results.map((x) => x.gpuAllocationPct.toFixed(2))],
    ['fragmentation % of idle GPU (FGD measure)', ...r.results.map((x) => x.fragmentationPct.toFixed(2))],
    ['multi-GPU jobs in one NVLink domain %', ...r.results.map((x) => x.multiGpuJobs.oneNvlinkDomainPct.toFixed(2))],
    ['multi-GPU jobs in one rack %', ...r.results.map((x) => x.multiGpuJobs.oneRackPct.toFixed(2))],
    ['gang wait p50 (s)', ...r.results.map((x) => x.gangWaitSec.p50)],
    ['gang wait p99 (s)', ...r.results.map((x) => x.gangWaitSec.p99)],
    ['jobs started', ...r.results.map((x) => x.jobsStarted)],
    ['jobs never started', ...r.results.map((x) => x.jobsNeverStarted)],
    // Issue 19: by the step-time model (ADR 0103). Thousands, so the columns keep their widths.
    ['training k tokens/s per job (step model)', ...r.results.map((x) => Math.round(x.training.tokensPerSec / 1000))],
    ['training GPU utilisation % (step model)', ...r.results.map((x) => x.training.gpuUtilizationPct.toFixed(2))],
    // Issue 33: post hoc (ADR 0192), explained under the table; labels kept short so no column widens.
    ['training JCT mean (s, post-hoc*)', ...r.results.map((x) => x.training.jctSec.mean)],
    ['training JCT p99 (s, post-hoc*)', ...r.results.map((x) => x.training.jctSec.p99)],
  ];
  const note = '\n* post hoc: wait + trace duration × (step on its GPUs / ideal step), step model; GPUs were held for the trace duration';
  const verdict =
    a !== undefined && b !== undefined
      ? `\n${a.profile} vs ${b.profile}: GPU allocation ${a.gpuAllocationPct - b.gpuAllocationPct >= 0 ? '+' : ''}${(a.gpuAllocationPct - b.gpuAllocationPct).toFixed(2)} pp, fragmentation ${a.fragmentationPct - b.fragmentationPct >= 0 ? '+' : ''}${(a.fragmentationPct - b.fragmentationPct).toFixed(2)} pp`
      : '';
  return `${head}\n\n${table(['metric', ...r.results.map((x) => x.profile)], rows)}${note}${verdict}\n`;
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('run SITS and a kube-scheduler-like default on the embedded simulated cluster and compare them')
    .option('--seed <n>', 'workload seed (same seed, same output)', intOption('--seed'), 1)
    .option('--hours <h>', 'hours of arrivals', numberOption('--hours', 0.1, 1000), 8)
    .option('--load <x>', 'arrival-rate multiplier (1 ≈ 95 % of GPU capacity demanded)', numberOption('--load', 0.01, 100), 1)
    .option('--profiles <list>', 'comma-separated profiles to compare', 'sits,kube-default')
    .option('--json <file>', 'also write the figures as JSON (checked to be writable before the run)')
    .option('--serve', 'instead: replay the workload under SITS in accelerated virtual time and show it in the dashboard (http://127.0.0.1)')
    .option('--port <port>', 'port of the dashboard with --serve (0 = any free port)', intOption('--port', 0, 65535), 8090)
    .option('--speed <x>', 'with --serve: virtual seconds per second', numberOption('--speed', 1, 1_000_000), 300)
    .option('--loop', 'with --serve: start the replay over when it ends (without it the page says it ended and offers a restart)')
    .action(
      async (o: {
        seed: number;
        hours: number;
        load: number;
        profiles: string;
        json?: string;
        serve?: boolean;
        port: number;
        speed: number;
        loop?: boolean;
      }) => {
        if (o.serve === true) {
          const log = (m: string): void => void process.stderr.write(`${m}\n`);
          const d = await serveDemo({ seed: o.seed, hours: o.hours, load: o.load, speed: o.speed, port: o.port, loop: o.loop === true, log }).catch(
            (e: unknown) => {
              if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE')
                throw new CliError(`--port ${o.port}: address already in use`, {
                  hint: 'another sits demo --serve may run there: stop it, or choose another --port; --port 0 picks a free one',
                  exitCode: EXIT.runtime,
                  cause: e,
                });
              throw e;
            },
          );
          const wallSec = Math.round((o.hours * 3600 * 1.25) / o.speed);
          process.stdout.write(
            `SITS demo dashboard: ${d.url}\nreplaying ${d.feed.jobs} jobs over ${o.hours} h of virtual time (+25 % to drain) at ${o.speed}×: ${wallSec} s${o.loop === true ? ', then again (--loop)' : ''} (Ctrl-C to stop)\n`,
          );
          if (o.loop !== true)
            void d.done.then(() =>
              process.stdout.write(
                `replay finished: ${d.feed.stats.started} job starts, ${d.feed.waiting} still waiting; the dashboard stays up until Ctrl-C (its restart button starts the replay over)\n`,
              ),
            );
          await untilSignal();
          await d.close();
          return;
        }
        // Every mistake is found before the run, not after it (issue 31).
        if (o.loop === true)
          throw new CliError('--loop: only with --serve', { hint: 'sits demo --serve --loop replays the workload in the dashboard again and again' });
        const profiles = o.profiles
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        if (profiles.length === 0) throw new CliError('--profiles: no profile given', { hint: 'e.g. --profiles sits,kube-default; sits profiles lists them' });
        for (const p of profiles)
          if (profileConfig(p) === undefined) throw new CliError(`--profiles: unknown profile "${p}"`, { hint: `one of ${PROFILE_NAMES.join(', ')}` });
        if (o.json !== undefined) checkOutputFile('--json', o.json);
        const r = runDemo({ seed: o.seed, hours: o.hours, load: o.load, profiles });
        process.stdout.write(renderDemo(r));
        if (o.json !== undefined) writeFileSync(o.json, `${JSON.stringify(r, null, 2)}\n`);
      },
    );
}
