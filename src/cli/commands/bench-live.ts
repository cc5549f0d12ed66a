import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { benchLive } from '../../bench/live/bench-live.ts';
import { DEFAULT_TENANTS_TRACE } from '../../bench/tenants/bench-tenants.ts';
import { table } from '../format.ts';
import { intOption, numberOption } from '../options.ts';

export function registerBenchLive(bench: Command): void {
  bench
    .command('live')
    .description(
      'a contested Philly window, time-compressed, through the live scheduler on a dev cluster and through the simulator: shares, preemptions, utilisation, waits side by side',
    )
    .option('--trace <csv>', 'philly.csv of the Pollux artifact', DEFAULT_TENANTS_TRACE)
    .option('--nodes <n>', '8-GPU nodes in the cluster', intOption('--nodes', 1, 64), 4)
    .option('--window-hours <h>', 'length of the trace window', numberOption('--window-hours', 0.1, 48), 4)
    .option('--compress <x>', 'trace seconds per replay second (the live run lasts window / compress)', numberOption('--compress', 1, 100_000), 30)
    .option(
      '--max-duration-hours <h>',
      'job durations are clipped to this (trace hours; as bench tenants)',
      numberOption('--max-duration-hours', 0.01, 1000),
      6,
    )
    .option('--max-jobs <n>', 'a seeded sample of at most this many jobs of the window', intOption('--max-jobs', 1, 100_000))
    .option(
      '--cooldown-trace-seconds <s>',
      'victims are protected this long after they (re)start, in trace seconds',
      numberOption('--cooldown-trace-seconds', 0, 86_400),
      600,
    )
    .option('--seed <n>', 'seed', intOption('--seed'), 1)
    .option(
      '--peer',
      'also replay the same jobs on Kueue v0.17 (fair sharing, same weights) with kube-scheduler placing batch/v1 Jobs, on a fresh cluster (tools/kueue/ensure.mjs builds it once)',
    )
    .requiredOption('--json <file>', 'write the results here')
    .action(
      async (o: {
        peer?: boolean;
        trace: string;
        nodes: number;
        windowHours: number;
        compress: number;
        maxDurationHours: number;
        maxJobs?: number;
        cooldownTraceSeconds: number;
        seed: number;
        json: string;
      }) => {
        const tty = process.stderr.isTTY;
        const r = await benchLive({
          trace: o.trace,
          nodes: o.nodes,
          windowHours: o.windowHours,
          compress: o.compress,
          maxDurationHours: o.maxDurationHours,
          ...(o.maxJobs === undefined ? {} : { maxJobs: o.maxJobs }),
          cooldownTraceSec: o.cooldownTraceSeconds,
          seed: o.seed,
          peer: o.peer === true,
          ...(tty ? { onPeerProgress: (t: number, h: number) => process.stderr.write(`\rkueue: ${t}/${h} s   `) } : {}),
          ...(tty
            ? {
                onProgress: (t: number, h: number, n: number, g: number) =>
                  process.stderr.write(`\rlive: ${t}/${h} s, ${n} jobs submitted, ${g} GPUs in use   `),
              }
            : {}),
        });
        if (tty) process.stderr.write('\n');
        writeFileSync(o.json, `${JSON.stringify(r, null, 2)}\n`);
        const rows = r.workload.queues.map((q) => {
          const l = r.live.queues[q.name];
          const s = r.simulated.queues[q.name];
          return [
            q.name,
            q.weight,
            l?.sharePct ?? '-',
            s?.sharePct ?? '-',
            r.diff.sharePp[q.name] ?? '-',
            r.diff.sharePpAsArrived[q.name] ?? '-',
            l?.waitSec.p50 ?? '-',
            s?.waitSec.p50 ?? '-',
            l?.oscillation.swings ?? '-',
            s?.oscillation.swings ?? '-',
          ];
        });
        process.stdout.write(
          `${r.workload.jobs.length} jobs, ${r.workload.horizonSec} s (${r.workload.source.windowHours} h of trace ${r.workload.source.windowStartHoursIntoTrace} h in, /${r.workload.source.compress}) on ${r.workload.gpus} GPUs; steady from ${r.workload.steadyFromSec} s\n\n` +
            `${table(['queue', 'weight', 'live share %', 'sim share %', 'diff pp', 'diff pp as arrived', 'live wait p50 s', 'sim wait p50 s', 'live swings', 'sim swings'], rows)}\n\n` +
            `preemptions: live ${r.live.preemptions}, simulated ${r.simulated.preemptions}; utilisation: live ${r.live.utilizationPct} %, simulated ${r.simulated.utilizationPct} %\n` +
            (r.peer === null
              ? ''
              : `kueue ${r.peer.version}: shares ${Object.entries(r.peer.sharePct)
                  .map(([q, v]) => `${q} ${v} %`)
                  .join(
                    ', ',
                  )}; preemptions ${r.peer.preemptions}; utilisation ${r.peer.utilizationPct} %; time to steady: SITS live ${r.peer.timeToSteadySec.sitsLive ?? 'never'} s, Kueue ${r.peer.timeToSteadySec.kueue ?? 'never'} s\n`) +
            `goals: ${Object.entries(r.goals)
              .map(([k, v]) => `${k} ${v ? 'yes' : 'NO'}`)
              .join(', ')}\n`,
        );
      },
    );
}
