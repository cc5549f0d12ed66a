import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { CHART_MEMORY_LIMIT, runKubeBench, type Progress, type SchedulerId } from '../../bench/kube/run.ts';
import { HEAP_NODE_OPTION, maxOldSpaceMiB } from '../../deploy/heap-cap.ts';
import { BENCH_MIXES, gpusPerNode, type BenchMix } from '../../bench/kube/workload.ts';
import { CliError } from '../errors.ts';
import { intOption } from '../options.ts';

/** Progress on stderr: a self-overwriting status line on a TTY, a status line every 5 s otherwise. */
export function stderrProgress(): Progress {
  const tty = process.stderr.isTTY === true;
  let shown = false;
  let lastPlain = 0;
  return {
    line: (m) => {
      if (tty && shown) process.stderr.write('\r\x1b[K');
      shown = false;
      process.stderr.write(`${m}\n`);
    },
    status: (m) => {
      if (tty) {
        process.stderr.write(`\r\x1b[K${m.slice(0, (process.stderr.columns ?? 160) - 1)}`);
        shown = m !== '';
      } else if (m !== '' && performance.now() - lastPlain > 5000) {
        lastPlain = performance.now();
        process.stderr.write(`${m}\n`);
      }
    },
  };
}

/** `sits bench kube`: kube-scheduler and SITS side by side, each on a fresh real control plane. */
export function registerBenchKube(bench: Command): void {
  bench
    .command('kube')
    .description(
      'pods bound per second through a real kube-apiserver: kube-scheduler vs the SITS scheduler, same fake nodes, same 1-GPU pods, a fresh control plane each',
    )
    .option('--nodes <n>', 'fake nodes', intOption('--nodes', 1, 20_000), 1000)
    .option('--pods <n>', 'plain 1-GPU pods', intOption('--pods', 1, 200_000), 10_000)
    .option('--json <file>', 'write the result as JSON')
    .option('--shape <preset>', 'node preset (e.g. dgx-h100); default: plain nodes with --gpus-per-node GPUs')
    .option('--gpus-per-node <n>', 'GPUs per plain node', intOption('--gpus-per-node', 1, 64), 16)
    .option('--gpu-model <model>', 'GPU model label of plain nodes', 'H100-SXM')
    .option('--nodes-per-rack <n>', 'nodes per rack label', intOption('--nodes-per-rack', 1, 1000), 16)
    .option('--qps <n>', 'kube-scheduler clientConnection.qps (and SITS has no QPS limit)', intOption('--qps', 1, 1_000_000), 5000)
    .option('--burst <n>', 'kube-scheduler clientConnection.burst', intOption('--burst', 1, 1_000_000), 5000)
    .option('--max-in-flight <n>', 'SITS API requests in flight at most', intOption('--max-in-flight', 1, 10_000), 64)
    .option('--create-concurrency <n>', 'parallel pod creators (scheduler_perf uses 30)', intOption('--create-concurrency', 1, 1000), 30)
    .option(
      '--mode <mode>',
      'precreated: all pods exist before the scheduler starts; streamed: pods created while the scheduler runs, as scheduler_perf does',
      'precreated',
    )
    .option(
      '--mix <mix>',
      'plain: 1-GPU pods only; constraints: every second pod with a node affinity (required In/NotIn, preferred), a toleration of tainted nodes, a hostname anti-affinity or a hostname spread',
      'plain',
    )
    .option('--runs <n>', 'runs per scheduler (alternating order); the median is reported', intOption('--runs', 1, 20), 1)
    .option('--only <scheduler>', 'run only "sits" or "kube-scheduler" (no ratio)')
    .option('--profile <name>', 'SITS scheduling profile', 'sits')
    .option('--sits-cpu-prof <dir>', 'write a V8 CPU profile (.cpuprofile) of each SITS scheduler process here')
    .option('--sits-heap-snapshot <dir>', 'write V8 heap snapshots of each SITS scheduler process here (halfway through binding, and once its pods are bound)')
    .option(
      '--sits-memory-limit <quantity>',
      `SITS runs with the V8 old-space cap a container with this memory limit gets (${HEAP_NODE_OPTION}); "none": V8's default for this host`,
      CHART_MEMORY_LIMIT,
    )
    .option('--timeout <sec>', 'give up on a run after this long', intOption('--timeout', 10, 36_000), 1800)
    .option(
      '--settle <ms>',
      'pause before the measured window (after the scheduler is ready, or after the pods are created)',
      intOption('--settle', 0, 60_000),
      2000,
    )
    .option('-v, --verbose', 'print control-plane and scheduler logs')
    .action(
      async (o: {
        nodes: number;
        pods: number;
        json?: string;
        shape?: string;
        gpusPerNode: number;
        gpuModel: string;
        nodesPerRack: number;
        qps: number;
        burst: number;
        maxInFlight: number;
        createConcurrency: number;
        mode: string;
        mix: string;
        runs: number;
        only?: string;
        profile: string;
        sitsCpuProf?: string;
        sitsHeapSnapshot?: string;
        sitsMemoryLimit: string;
        timeout: number;
        settle: number;
        verbose?: boolean;
      }) => {
        if (o.only !== undefined && o.only !== 'sits' && o.only !== 'kube-scheduler')
          throw new CliError(`--only must be "sits" or "kube-scheduler", got "${o.only}"`);
        if (o.mode !== 'streamed' && o.mode !== 'precreated') throw new CliError(`--mode must be "streamed" or "precreated", got "${o.mode}"`);
        if (!(BENCH_MIXES as readonly string[]).includes(o.mix)) throw new CliError(`--mix must be ${BENCH_MIXES.join(' or ')}, got "${o.mix}"`);
        const shape = { ...(o.shape === undefined ? {} : { preset: o.shape }), gpusPerNode: o.gpusPerNode, gpuModel: o.gpuModel, nodesPerRack: o.nodesPerRack };
        let perNode: number;
        try {
          perNode = gpusPerNode(shape);
        } catch (e) {
          throw new CliError((e as Error).message);
        }
        if (o.pods > o.nodes * perNode)
          throw new CliError(`${o.pods} 1-GPU pods do not fit on ${o.nodes} nodes × ${perNode} GPUs; use more nodes or --gpus-per-node`);
        if (o.sitsMemoryLimit !== 'none') {
          try {
            maxOldSpaceMiB(o.sitsMemoryLimit);
          } catch (e) {
            throw new CliError(`--sits-memory-limit: ${(e as Error).message}`);
          }
        }
        if (o.sitsCpuProf !== undefined) mkdirSync(o.sitsCpuProf, { recursive: true });
        if (o.sitsHeapSnapshot !== undefined) mkdirSync(o.sitsHeapSnapshot, { recursive: true });
        const schedulers: SchedulerId[] = o.only === undefined ? ['kube-scheduler', 'sits'] : [o.only as SchedulerId];
        const result = await runKubeBench({
          nodes: o.nodes,
          pods: o.pods,
          shape,
          qps: o.qps,
          burst: o.burst,
          maxInFlight: o.maxInFlight,
          createConcurrency: o.createConcurrency,
          mode: o.mode,
          mix: o.mix as BenchMix,
          runs: o.runs,
          schedulers,
          sitsProfile: o.profile,
          ...(o.sitsCpuProf === undefined ? {} : { sitsCpuProfDir: o.sitsCpuProf }),
          ...(o.sitsHeapSnapshot === undefined ? {} : { sitsHeapSnapshotDir: o.sitsHeapSnapshot }),
          ...(o.sitsMemoryLimit === 'none' ? {} : { sitsMemoryLimit: o.sitsMemoryLimit }),
          timeoutSec: o.timeout,
          settleMs: o.settle,
          progress: stderrProgress(),
          ...(o.verbose === true ? { verbose: true } : {}),
        });
        const head = {
          nodes: result.nodes,
          pods: result.pods,
          sits: { podsPerSecond: result.sits.podsPerSecond },
          kubeScheduler: { podsPerSecond: result.kubeScheduler.podsPerSecond },
          ratio: result.ratio,
          ratioOverall: result.ratioOverall,
          ratioWithEvents: result.ratioWithEvents,
        };
        if (o.json !== undefined) {
          mkdirSync(dirname(o.json), { recursive: true });
          writeFileSync(o.json, `${JSON.stringify(result, null, 2)}\n`);
          process.stderr.write(`wrote ${o.json}\n`);
        }
        process.stdout.write(`${JSON.stringify(head)}\n`);
      },
    );
}
