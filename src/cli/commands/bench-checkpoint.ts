import type { Command } from 'commander';
import { runCheckpointBench } from '../../bench/checkpoint/checkpoint-bench.ts';
import { writeFileMkdir } from '../../bench/output.ts';
import { intOption } from '../options.ts';

export function registerBenchCheckpoint(bench: Command): void {
  bench
    .command('checkpoint')
    .description('checkpoints (issue 14): "checkpoint written" → "snapshot ready" on the real snapshot controller, snapshot linked to the commit vs an independent periodic snapshot schedule')
    .option('--cycles <n>', 'checkpoints measured each way', intOption('--cycles', 3, 10_000), 100)
    .option('--period-ms <n>', 'period of the independent snapshot scheduler (cron-based schedulers offer a minute at best)', intOption('--period-ms', 50, 3_600_000), 5000)
    .option('--seed <n>', 'seed of the independent run\'s write times', intOption('--seed'), 1)
    .option('--skip-snapshot-latency', 'leave snapshotLatencyMs null (no cluster is started)')
    .requiredOption('--json <file>', 'write {snapshotLatencyMs: {linked, independent}, redoneGpuHours, migration, health} here (parts not built yet are null)')
    .option('--details <file>', 'also write every sample, the period and why a part is null here')
    .option('--verbose', 'print every cycle')
    .action(async (o: { cycles: number; periodMs: number; seed: number; skipSnapshotLatency?: boolean; json: string; details?: string; verbose?: boolean }) => {
      const r = await runCheckpointBench({
        snapshotLatency: o.skipSnapshotLatency === true ? false : { cycles: o.cycles, periodMs: o.periodMs, seed: o.seed },
        ...(o.verbose === true ? { log: (l: string) => process.stderr.write(`${l}\n`) } : {}),
      });
      const l = r.json.snapshotLatencyMs;
      if (l !== null) {
        const ratio = (a: number, b: number): string => (a > 0 ? `${(b / a).toFixed(1)}×` : 'n/a');
        process.stdout.write(
          `snapshot latency (written → ready, ${o.cycles} cycles each): linked mean ${l.linked.mean} ms, p50 ${l.linked.p50}, p99 ${l.linked.p99}; ` +
            `independent (every ${o.periodMs} ms) mean ${l.independent.mean} ms, p50 ${l.independent.p50}, p99 ${l.independent.p99}; ` +
            `ratio mean ${ratio(l.linked.mean, l.independent.mean)}, p99 ${ratio(l.linked.p99, l.independent.p99)}\n`,
        );
      }
      for (const [k, why] of Object.entries(r.details.todo)) process.stdout.write(`${k}: null (${why})\n`);
      writeFileMkdir(o.json, `${JSON.stringify(r.json, null, 2)}\n`);
      if (o.details !== undefined) writeFileMkdir(o.details, `${JSON.stringify(r.details, null, 2)}\n`);
    });
}
