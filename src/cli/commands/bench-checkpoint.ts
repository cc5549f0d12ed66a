import type { Command } from 'commander';
import { runCheckpointBench } from '../../bench/checkpoint/checkpoint-bench.ts';
import { writeFileMkdir } from '../../bench/output.ts';
import { intOption, numberOption } from '../options.ts';

export function registerBenchCheckpoint(bench: Command): void {
  bench
    .command('checkpoint')
    .description(
      'checkpoints (issue 14): "checkpoint written" → "snapshot ready" on the real snapshot controller, snapshot linked to the commit vs an independent periodic snapshot schedule',
    )
    .option('--cycles <n>', 'checkpoints measured each way', intOption('--cycles', 3, 10_000), 100)
    .option(
      '--period-ms <n>',
      'period of the independent snapshot scheduler (cron-based schedulers offer a minute at best)',
      intOption('--period-ms', 50, 3_600_000),
      5000,
    )
    .option('--seed <n>', "seed of the independent run's write times", intOption('--seed'), 1)
    .option('--skip-snapshot-latency', 'leave snapshotLatencyMs null (no cluster is started)')
    .option('--redone-nodes <n>', '8-GPU nodes of the tenants simulation for redone work', intOption('--redone-nodes', 1, 10_000), 16)
    .option(
      '--redone-window-hours <h>',
      "hours of the Philly trace's busiest window it replays (the tenants bench uses 4; 2 keeps this run within minutes)",
      numberOption('--redone-window-hours', 0.1, 1000),
      2,
    )
    .option('--redone-windows <n>', 'how many of the busiest windows (non-overlapping) it replays and sums', intOption('--redone-windows', 1, 1000), 8)
    .option('--skip-redone', 'leave redoneGpuHours null')
    .option('--skip-migration', 'leave migration null')
    .option('--skip-health', 'leave health null')
    .requiredOption('--json <file>', 'write {snapshotLatencyMs: {linked, independent}, redoneGpuHours, migration, health} here (parts left out are null)')
    .option('--details <file>', "also write every sample, each part's detail (fairness, moves, failures by kind) and the parts left out here")
    .option('--verbose', 'print every cycle')
    .action(
      async (o: {
        cycles: number;
        periodMs: number;
        seed: number;
        skipSnapshotLatency?: boolean;
        redoneNodes: number;
        redoneWindowHours: number;
        redoneWindows: number;
        skipRedone?: boolean;
        skipMigration?: boolean;
        skipHealth?: boolean;
        json: string;
        details?: string;
        verbose?: boolean;
      }) => {
        const r = await runCheckpointBench({
          snapshotLatency: o.skipSnapshotLatency === true ? false : { cycles: o.cycles, periodMs: o.periodMs, seed: o.seed },
          redone: o.skipRedone === true ? false : { nodes: o.redoneNodes, windowHours: o.redoneWindowHours, windows: o.redoneWindows },
          migration: o.skipMigration === true ? false : {},
          health: o.skipHealth === true ? false : {},
          log: o.verbose === true ? (l: string) => process.stderr.write(`${l}\n`) : () => undefined,
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
        const d = r.details;
        if (d.redone !== undefined)
          process.stdout.write(
            `redone GPU-hours after preemption (${d.redone.windows.length} busiest windows): checkpoint-aware ${d.redone.checkpointAware}, plain ${d.redone.plain} (${d.redone.reductionPct} % less; ${d.redone.preemptions.checkpointAware} vs ${d.redone.preemptions.plain} preemptions; mean Jain ${d.redone.jain.checkpointAware} vs ${d.redone.jain.plain})\n`,
          );
        if (d.migration !== undefined) {
          const m = d.migration;
          process.stdout.write(
            `migration (seeds ${m.regime.seeds.join(',')}, medians): gang wait p99 ${m.withoutGangWaitP99Sec} s → ${m.withGangWaitP99Sec} s, unallocated ${m.withoutUnallocatedPct} % → ${m.withUnallocatedPct} %; ` +
              `${m.migrations} migrations, ${m.overheadGpuHours} GPU-h of checkpoint/restore, ${m.gangsHelped} of ${m.gangsBlockedByFragmentation} fragmentation-blocked gangs helped (${m.gangs} gangs)\n`,
          );
        }
        if (d.health !== undefined)
          process.stdout.write(
            `GPU health: ${d.health.foreseenPct} % of ${d.health.failures} failures foreseen, ${d.health.falseQuarantinesPer1000GpuDays} false quarantines per 1,000 GPU-days\n`,
          );
        for (const k of d.skipped) process.stdout.write(`${k}: null (left out by its option)\n`);
        writeFileMkdir(o.json, `${JSON.stringify(r.json, null, 2)}\n`);
        if (o.details !== undefined) writeFileMkdir(o.details, `${JSON.stringify(r.details, null, 2)}\n`);
      },
    );
}
