import type { Command } from 'commander';
import { runChaos, type ChaosProgress } from '../../bench/chaos/run.ts';
import { FULL_COUNTS, SHORT_COUNTS } from '../../bench/chaos/plan.ts';
import { writeFileMkdir } from '../../bench/output.ts';
import { intOption, numberOption } from '../options.ts';

/** Progress on stderr: a self-overwriting status line on a TTY, every status line otherwise. */
function progress(): ChaosProgress {
  const tty = process.stderr.isTTY === true;
  return {
    line: (m) => void process.stderr.write(`${tty ? '\r\x1b[K' : ''}${m}\n`),
    status: (m) => {
      if (tty) process.stderr.write(`\r\x1b[K${m.slice(0, (process.stderr.columns ?? 160) - 1)}`);
      else if (m !== '') process.stderr.write(`${m}\n`);
    },
  };
}

/** `sits bench chaos`: the scheduler under control-plane faults, invariants checked against what the apiserver saw. */
export function registerBenchChaos(bench: Command): void {
  bench
    .command('chaos')
    .description(
      'two SITS replicas with the controllers on a real control plane while a seeded plan kills the apiserver, etcd and the leader (mid-gang), pauses the leader, expires watches, throttles (APF 429) and slows the API; then counts invariant violations from the watch and the audit log',
    )
    .requiredOption('--json <file>', 'write the result here')
    .option('--seed <n>', 'seed of the fault plan and the submissions', intOption('--seed'), 1)
    .option('--nodes <n>', 'fake 8-GPU nodes (8–16)', intOption('--nodes', 8, 16), 12)
    .option('--short', "the e2e test's plan: every fault kind once", false)
    .option('--lease-duration <sec>', "the replicas' lease duration", intOption('--lease-duration', 2, 60), 4)
    .option('--quiet <sec>', 'quiet period after the last fault', intOption('--quiet', 0, 600), 10)
    .option('--gang-window <sec>', 'how long a gang may stay partly bound before it counts as half-bound', numberOption('--gang-window', 1, 600), 30)
    .option('-v, --verbose', 'print control-plane logs')
    .action(
      async (o: { json: string; seed: number; nodes: number; short: boolean; leaseDuration: number; quiet: number; gangWindow: number; verbose?: boolean }) => {
        const r = await runChaos({
          seed: o.seed,
          nodes: o.nodes,
          counts: o.short ? SHORT_COUNTS : FULL_COUNTS,
          gapSec: o.short ? [1, 2] : [2, 5],
          windowSec: o.short ? [3, 4] : [4, 8],
          leaseDurationSec: o.leaseDuration,
          trainingRunSec: 15,
          quietSec: o.quiet,
          gangWindowSec: o.gangWindow,
          settleTimeoutSec: 180,
          progress: progress(),
          ...(o.verbose === true ? { log: (m: string) => void process.stderr.write(`${m}\n`) } : {}),
        });
        writeFileMkdir(o.json, `${JSON.stringify(r, null, 2)}\n`);
        process.stderr.write(`wrote ${o.json}\n`);
        process.stdout.write(`${JSON.stringify({ faults: r.faults, invariants: r.invariants, pods: r.pods, recoverySec: r.recoverySec })}\n`);
        if (Object.values(r.invariants).some((v) => v !== 0) || r.pods.bound !== r.pods.submitted || r.violations.length > 0) {
          process.stderr.write(`violations:\n${r.violations.join('\n')}\n`);
          process.exitCode = 1;
        }
      },
    );
}
