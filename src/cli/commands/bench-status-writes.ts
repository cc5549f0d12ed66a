import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { benchStatusWrites } from '../../bench/kube/status-writes.ts';
import { intOption } from '../options.ts';
import { checkOutputFile } from '../paths.ts';

export function registerBenchStatusWrites(bench: Command): void {
  bench
    .command('status-writes')
    .description('Queue and PodGroup status the live scheduler writes, per minute, counted by the real kube-apiserver under steady churn of TrainingJobs')
    .option('--jobs <n>', 'TrainingJobs (gangs of 1-4 replicas of 1-8 GPUs, each replica running 20-120 s)', intOption('--jobs', 1, 100_000), 1000)
    .option('--nodes <n>', '8-GPU fake nodes', intOption('--nodes', 1, 10_000), 125)
    .option('--queues <n>', 'Queues in one cohort, weights 1..n', intOption('--queues', 1, 100), 4)
    .option('--window <sec>', 'measured seconds of churn after every job is created', intOption('--window', 10, 3600), 120)
    .option('--seed <n>', 'seed of the jobs', intOption('--seed'), 1)
    .requiredOption(
      '--json <file>',
      'write {setup, perMinute: {queueStatus, podGroupStatus, total, etcdQueues, etcdPodGroups}, boundPerMinute, churn, stale} here',
    )
    .action(async (o: { jobs: number; nodes: number; queues: number; window: number; seed: number; json: string }) => {
      checkOutputFile('--json', o.json);
      const tty = process.stderr.isTTY;
      const r = await benchStatusWrites({
        jobs: o.jobs,
        nodes: o.nodes,
        queues: o.queues,
        windowSec: o.window,
        seed: o.seed,
        progress: (m) => process.stderr.write(tty ? `\r${m}\x1b[K` : `${m}\n`),
      });
      if (tty) process.stderr.write('\n');
      writeFileSync(o.json, `${JSON.stringify(r, null, 2)}\n`);
      process.stdout.write(
        `${r.setup.jobs} jobs on ${r.setup.gpus} GPUs: ${r.perMinute.total} status writes/min (queues ${r.perMinute.queueStatus}, podgroups ${r.perMinute.podGroupStatus}; bound ${r.boundPerMinute}) while ${r.churn.podsStarted} pods started and ${r.churn.podsFinished} finished; stale PodGroups ${r.stale.atEnd} at the end, ${r.stale.after12s} 12 s later (of ${r.stale.podGroups})\n`,
      );
    });
}
