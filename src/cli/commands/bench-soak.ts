import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { runSoak } from '../../bench/kube/soak.ts';
import { CliError } from '../errors.ts';
import { intOption, numberOption } from '../options.ts';
import { stderrProgress } from './bench-kube.ts';

const ABOUT =
  'steady churn (pods and gangs submitted and completed) through a real kube-apiserver with fake nodes; samples the SITS process (RSS, heap, event-loop lag, cache and queue sizes) and fits the memory slope';

/** `sits bench soak`: steady churn through a real kube-apiserver for a long time; is the scheduler's memory flat? */
export function registerBenchSoak(bench: Command): void {
  bench
    .command('soak')
    .description(ABOUT)
    .option('--nodes <n>', 'fake nodes', intOption('--nodes', 1, 20_000), 1000)
    .option('--gpus-per-node <n>', 'GPUs per fake node', intOption('--gpus-per-node', 1, 64), 8)
    .option('--minutes <m>', 'churn duration', numberOption('--minutes', 0.1, 24 * 60), 30)
    .option('--rate <pods-per-s>', 'pods submitted per second (gang members count one each)', numberOption('--rate', 0.01, 1000), 10)
    .option('--lifetime <s>', 'mean pod lifetime in seconds (each uniform in 0.5-1.5 x this)', numberOption('--lifetime', 1, 86_400), 120)
    .option('--gang-fraction <f>', 'share of arrivals that are gangs of 2-4 pods', numberOption('--gang-fraction', 0, 1), 0.1)
    .option('--seed <n>', 'seed of the arrivals and lifetimes', intOption('--seed'), 1)
    .option('--sample-every <s>', 'seconds between samples of the SITS process', numberOption('--sample-every', 0.5, 600), 10)
    .option('--max-in-flight <n>', 'SITS API requests in flight at most', intOption('--max-in-flight', 1, 10_000), 64)
    .option('--drain-timeout <s>', 'after the churn, wait this long beyond the longest lifetime for the last pods', intOption('--drain-timeout', 1, 3600), 120)
    .requiredOption('--json <file>', 'write the result as JSON')
    .option('-v, --verbose', 'print control-plane and scheduler logs')
    .action(
      async (o: {
        nodes: number;
        gpusPerNode: number;
        minutes: number;
        rate: number;
        lifetime: number;
        gangFraction: number;
        seed: number;
        sampleEvery: number;
        maxInFlight: number;
        drainTimeout: number;
        json: string;
        verbose?: boolean;
      }) => {
        if (o.rate * o.lifetime > o.nodes * o.gpusPerNode)
          throw new CliError(
            `--rate ${o.rate} × --lifetime ${o.lifetime} s = ${o.rate * o.lifetime} pods running at once, more than the ${o.nodes * o.gpusPerNode} GPUs (--nodes × --gpus-per-node)`,
          );
        const r = await runSoak({
          nodes: o.nodes,
          gpusPerNode: o.gpusPerNode,
          durationS: Math.round(o.minutes * 60),
          rate: o.rate,
          lifetimeS: o.lifetime,
          gangFraction: o.gangFraction,
          seed: o.seed,
          sampleEveryS: o.sampleEvery,
          maxInFlight: o.maxInFlight,
          drainTimeoutS: o.drainTimeout,
          progress: stderrProgress(),
          ...(o.verbose === true ? { verbose: true } : {}),
        });
        mkdirSync(dirname(o.json), { recursive: true });
        writeFileSync(o.json, `${JSON.stringify(r, null, 2)}\n`);
        process.stderr.write(`wrote ${o.json}\n`);
        const s = r.summary;
        process.stdout.write(
          `${JSON.stringify({
            pods: r.pods,
            rssSlopeMiBPerHour: s.rss.slopeMiBPerHour,
            heapSlopeMiBPerHour: s.heapUsed.slopeMiBPerHour,
            lag: s.lag,
            growing: r.growth,
            loadAverage: r.loadAverage,
          })}\n`,
        );
      },
    );
}
