/**
 * `sits bench all` as a list of ordinary `sits` subcommands: the FGD grid on every openb pod list found,
 * the throughput table at 1k/5k/10k nodes (each size in a fresh process, for honest RSS), two replays,
 * admission at 1k/5k/10k nodes, the multi-tenant experiment, serving, batch inference, the webhook and training
 * throughput. Steps whose input files are missing are
 * left out. The CLI runs each in a child process and prints it first.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** A benchmark input that does not exist or cannot be used; the CLI prints the message. */
export class BenchInputError extends Error {
  override readonly name = 'BenchInputError';
}

export interface BenchAllInput {
  /** Directory for the JSON (and HTML) results. */
  readonly out: string;
  /** Folder with openb_node_list_gpu_node.csv and openb_pod_list_*.csv. */
  readonly traces: string;
  /** Folder with the Pollux/Philly workloads. */
  readonly philly: string;
  readonly seeds: string;
  readonly workers: number;
  /** false: skip the FGD grids. */
  readonly fgd: boolean;
}

/** The argument lists of the `sits` subcommands to run, in order. */
export function benchAllCommands(o: BenchAllInput): string[][] {
  const nodes = join(o.traces, 'openb_node_list_gpu_node.csv');
  if (!existsSync(nodes)) throw new BenchInputError(`--traces: ${nodes} not found`);
  const lists = readdirSync(o.traces)
    .filter((f) => /^openb_pod_list_.+\.csv$/.test(f))
    .sort();
  const commands: string[][] = [];
  if (o.fgd) {
    for (const f of lists) {
      const name = f.replace(/^openb_pod_list_/, '').replace(/\.csv$/, '');
      const html = name === 'default' ? ['--html', join(o.out, 'fgd-default.html')] : [];
      commands.push(['bench', 'fgd', '--nodes', nodes, '--pods', join(o.traces, f), '--seeds', o.seeds, '--workers', String(o.workers), '--json', join(o.out, `fgd-${name}.json`), ...html]);
    }
  }
  for (const n of [1000, 5000, 10000]) commands.push(['bench', 'throughput', '--nodes', String(n), '--gpus-per-node', '8', '--workload', 'mixed', '--json', join(o.out, `throughput-mixed-${n}.json`)]);
  commands.push(['bench', 'throughput', '--nodes', '10000', '--gpus-per-node', '8', '--pods', '100000', '--workload', 'mixed', '--json', join(o.out, 'throughput-mixed-10000-100k.json')]);
  commands.push(['bench', 'throughput', '--nodes', '5000', '--gpus-per-node', '8', '--workload', 'gang', '--json', join(o.out, 'throughput-gang-5000.json')]);
  const defaultPods = join(o.traces, 'openb_pod_list_default.csv');
  if (existsSync(defaultPods)) commands.push(['bench', 'replay', '--trace', defaultPods, '--nodes', nodes, '--compress', '1000', '--policies', 'sits,fgd,bestfit', '--json', join(o.out, 'replay-openb-default-x1000.json')]);
  const w6 = join(o.philly, 'workloads', 'workload-6.csv');
  if (existsSync(w6)) commands.push(['bench', 'replay', '--trace', w6, '--cluster-size', '8x8', '--policies', 'sits,fgd,bestfit', '--json', join(o.out, 'replay-pollux-workload-6.json')]);
  // Issue 6: admission decisions per second, and the multi-tenant fairness / ETA experiment.
  for (const n of [1000, 5000, 10000]) commands.push(['bench', 'admission', '--nodes', String(n), '--json', join(o.out, `admission-${n}.json`)]);
  const philly = join(o.philly, 'philly.csv');
  if (existsSync(philly)) commands.push(['bench', 'tenants', '--trace', philly, '--json', join(o.out, 'tenants.json')]);
  // Issues 12, 13, 16, 19: serving autoscalers and batch inference on their default (Azure) trace, the admission
  // webhook and lint, and training throughput by the step-time model. (`bench checkpoint`, `bench dashboard` and
  // `bench kube` need the built control plane or Chromium and run on their own.)
  commands.push(['bench', 'serving', '--json', join(o.out, 'serving.json')]);
  commands.push(['bench', 'batch', '--json', join(o.out, 'batch.json')]);
  commands.push(['bench', 'webhook', '--json', join(o.out, 'webhook.json')]);
  commands.push(['bench', 'training', '--json', join(o.out, 'training.json')]);
  return commands;
}
