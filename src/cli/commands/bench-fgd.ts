/**
 * `sits bench fgd`: the FGD experiment (USENIX ATC '23) on an Alibaba openb trace for several policies
 * and seeds, in parallel on worker threads. Writes the JSON contract of issue 3 §6, prints a table, and
 * optionally an offline HTML report with charts.
 */
import { spawnSync } from 'node:child_process';
import type { Command } from 'commander';
import { resolveProfile, formatProfileError } from '../../core/plugins/registry.ts';
import { benchAllCommands, BenchInputError } from '../../bench/all/bench-all.ts';
import { FGD_POLICIES, prepareFgdBench, writeFgdOutputs } from '../../bench/fgd/fgd-bench.ts';
import { PUBLISHED_UNALLOCATED_100, publishedName } from '../../bench/fgd/published.ts';
import { FRAG_RATE_AT, UNALLOCATED_AT, parseSeeds, type FgdBenchJson } from '../../bench/fgd/summary.ts';
import { defaultWorkers, GridTaskError } from '../../bench/grid/pool.ts';
import { TraceError } from '../../sim/trace/errors.ts';
import { CliError } from '../errors.ts';
import { table } from '../format.ts';
import { intOption, numberOption } from '../options.ts';

interface FgdOptions {
  nodes?: string;
  pods?: string;
  policies: string;
  seeds: string;
  json?: string;
  html?: string;
  detail?: string;
  tune: number;
  workers: number;
  timing: boolean;
  bound: boolean;
}

export function fgdTable(json: FgdBenchJson): string {
  const published = PUBLISHED_UNALLOCATED_100[json.trace];
  const f = (v: number | null | undefined, d = 2): string => (v === null || v === undefined ? '–' : v.toFixed(d));
  const head = ['policy', ...UNALLOCATED_AT.map((b) => `@${b}`), ...(published ? ['paper@100'] : []), ...FRAG_RATE_AT.map((b) => `frag@${b}`), 'run ms'];
  const rows = json.results.map((r) => [
    r.policy,
    ...UNALLOCATED_AT.map((b) => f(r.unallocatedPct[String(b)])),
    ...(published ? [f(published[publishedName(r.policy)])] : []),
    ...FRAG_RATE_AT.map((b) => f(r.fragRatePct[String(b)], 1)),
    f(r.runMs, 0),
  ]);
  const lb = json.lowerBound === undefined ? '' : `\nlower bound (LP relaxation, no policy can go below) @100: ${f(json.lowerBound.unallocatedPct['100'])}`;
  return `unallocated GPU % by arrived workload %, frag rate %, median of ${json.seeds.length} seeds — ${json.trace}\n${table(head, rows)}${lb}`;
}

export function registerBenchFgd(bench: Command): void {
  bench
    .command('fgd')
    .description('FGD experiment (ATC ’23) on an Alibaba openb trace: unallocated GPU % vs arrived workload, fragmentation rate, per policy, median over seeds')
    .requiredOption('--nodes <csv>', 'node list, e.g. ../shared/traces/alibaba-gpu-v2023/openb_node_list_gpu_node.csv')
    .requiredOption('--pods <csv>', 'pod list, e.g. ../shared/traces/alibaba-gpu-v2023/openb_pod_list_default.csv')
    .option('--policies <list>', 'comma-separated profiles or aliases', FGD_POLICIES.join(','))
    .option('--seeds <list>', 'seeds: a range 42-51 and/or a list 42,45', '42-51')
    .option('--json <file>', 'write the medians as JSON')
    .option('--html <file>', 'write an offline HTML report with charts')
    .option('--detail <file>', 'write per-policy median curves (every arrived %) and per-seed values as JSON')
    .option('--tune <ratio>', 'workload as a multiple of GPU capacity', numberOption('--tune', 0.1, 10), 1.3)
    .option('--workers <n>', 'worker threads (0 = run in this thread)', intOption('--workers', 0, 256), defaultWorkers())
    .option('--no-timing', 'report runMs as 0 so that the JSON is byte-identical across runs')
    .option('--no-bound', 'skip the LP lower bound (lowerBound in the JSON)')
    .action(async (o: FgdOptions) => {
      const seeds = parseSeeds(o.seeds);
      if (seeds === undefined) throw new CliError(`--seeds must look like 42-51 or 42,43,50, got "${o.seeds}"`);
      const policies = o.policies
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '');
      if (policies.length === 0) throw new CliError('--policies is empty');
      if (new Set(policies).size !== policies.length) throw new CliError(`--policies lists a policy twice: ${o.policies}`);
      for (const p of policies) {
        const r = resolveProfile(p, { typicalShapes: [] });
        if (!r.ok) throw new CliError(`--policies: ${formatProfileError(r.error)}`);
      }
      const nodesFile = o.nodes as string;
      const podsFile = o.pods as string;
      let bench;
      try {
        bench = prepareFgdBench({ nodesFile, podsFile, policies, seeds, tune: o.tune, timing: o.timing, bound: o.bound }); // fails fast on a bad file, before any thread starts
      } catch (e) {
        if (e instanceof TraceError) throw new CliError(e.message);
        throw e;
      }
      const tty = process.stderr.isTTY === true;
      let b;
      try {
        b = await bench.run({
          workers: o.workers,
          onProgress: (p) => {
            if (!tty) return;
            const u = p.run.buckets.allocPct[100];
            const msg = `[${p.done}/${p.total}] ${p.task.policy} seed ${p.task.seed}: unallocated @100 ${u === null || u === undefined ? '–' : (100 - u).toFixed(2)} % (${p.run.runMs.toFixed(0)} ms)`;
            process.stderr.write(`\r\x1b[K${msg.slice(0, (process.stderr.columns ?? 120) - 1)}`);
          },
        });
      } catch (e) {
        if (e instanceof GridTaskError) throw new CliError(`${e.task.policy} seed ${e.task.seed}: ${e.message}`);
        throw e;
      } finally {
        if (tty) process.stderr.write('\r\x1b[K');
      }
      process.stdout.write(`${fgdTable(b.json)}\n${b.tasks} runs in ${(b.wallMs / 1000).toFixed(1)} s on ${Math.min(o.workers, b.tasks) || 1} thread(s)\n`);
      writeFgdOutputs(b, policies, seeds, {
        ...(o.json === undefined ? {} : { json: o.json }),
        ...(o.html === undefined ? {} : { html: o.html }),
        ...(o.detail === undefined ? {} : { detail: o.detail }),
      });
    });
}

interface AllOptions {
  out: string;
  traces: string;
  philly: string;
  workers: number;
  seeds: string;
  skipFgd?: boolean;
}

/** Runs one `sits` subcommand in a child process (fresh heap: honest RSS), echoing its table. */
function runChild(args: readonly string[]): void {
  const entry = process.argv[1];
  if (entry === undefined) throw new CliError('cannot find the sits entry point to run a benchmark in a child process');
  process.stdout.write(`$ sits ${args.join(' ')}\n`);
  const r = spawnSync(process.execPath, [...process.execArgv, entry, ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new CliError(`sits ${args.join(' ')} failed with exit code ${r.status ?? r.signal}`);
}

/**
 * `sits bench all`: every in-process benchmark into one directory — the FGD grid on every openb pod list
 * found, the throughput table at 1k/5k/10k nodes (each size in a fresh process), two replays, admission at
 * 1k/5k/10k nodes and the multi-tenant experiment. `bench kube` starts control planes and runs on its own.
 * Every step is an ordinary subcommand; the commands it runs are printed.
 */
export function registerBenchAll(bench: Command): void {
  bench
    .command('all')
    .description(
      'every in-process benchmark into one directory: FGD grid per trace, throughput at 1k/5k/10k nodes, replays, admission, tenants (bench kube, which starts control planes, runs on its own)',
    )
    .option('--out <dir>', 'directory for the JSON (and HTML) results', 'bench/results')
    .option('--traces <dir>', 'folder with openb_node_list_gpu_node.csv and openb_pod_list_*.csv', '../shared/traces/alibaba-gpu-v2023')
    .option('--philly <dir>', 'folder with the Pollux/Philly workloads', '../shared/traces/pollux-philly')
    .option('--seeds <list>', 'FGD seeds', '42-51')
    .option('--workers <n>', 'worker threads for the FGD grid', intOption('--workers', 0, 256), defaultWorkers())
    .option('--skip-fgd', 'skip the FGD grids')
    .action((o: AllOptions) => {
      let commands;
      try {
        commands = benchAllCommands({ out: o.out, traces: o.traces, philly: o.philly, seeds: o.seeds, workers: o.workers, fgd: o.skipFgd !== true });
      } catch (e) {
        if (e instanceof BenchInputError) throw new CliError(e.message);
        throw e;
      }
      for (const args of commands) runChild(args);
    });
}
