/**
 * The FGD experiment (USENIX ATC '23) as a benchmark: one grid task per policy and seed on an Alibaba openb
 * trace, on worker threads; the JSON contract of issue 3 §6, and optionally an offline HTML report and the
 * per-seed detail. `sits bench fgd` parses the options and prints the table.
 */
import { basename } from 'node:path';
import { runGrid, type GridProgress } from '../grid/pool.ts';
import { loadFgdTrace, type FgdTask } from '../grid/tasks.ts';
import { writeFileMkdir } from '../output.ts';
import { fgdReportHtml } from '../report/fgd-html.ts';
import { fgdLowerBound } from './lower-bound.ts';
import type { FgdRun } from './run.ts';
import { fgdBenchJson, fgdCurves, lowerBoundJson, type FgdBenchJson } from './summary.ts';

export const FGD_POLICIES = ['random', 'dotprod', 'gpuclustering', 'gpupacking', 'bestfit', 'fgd', 'sits'];

export interface FgdBenchInput {
  readonly nodesFile: string;
  readonly podsFile: string;
  readonly policies: readonly string[];
  readonly seeds: readonly number[];
  /** Workload as a multiple of GPU capacity. */
  readonly tune: number;
  /** false: runMs is 0, so that the JSON is byte-identical across runs. */
  readonly timing: boolean;
  /** Compute the LP lower bound per seed (`lowerBound` in the JSON); default true. */
  readonly bound?: boolean;
}

export interface FgdBench {
  readonly json: FgdBenchJson;
  readonly runs: readonly FgdRun[];
  readonly tasks: number;
  readonly wallMs: number;
}

export interface FgdBenchOutputs {
  readonly json?: string;
  readonly html?: string;
  readonly detail?: string;
}

/**
 * Loads the trace once (a TraceError here, before any thread starts) and lists the grid: every policy
 * for every seed. `run` runs it (a GridTaskError names the failed task).
 */
export function prepareFgdBench(input: FgdBenchInput): { readonly tasks: readonly FgdTask[]; run(o: { workers: number; onProgress?: (p: GridProgress) => void }): Promise<FgdBench> } {
  const { nodesFile, podsFile } = input;
  const trace = loadFgdTrace(nodesFile, podsFile);
  const tasks: FgdTask[] = [];
  for (const policy of input.policies) for (const seed of input.seeds) tasks.push({ nodesFile, podsFile, policy, seed, tune: input.tune, timing: input.timing });
  return {
    tasks,
    async run(o) {
      const t0 = performance.now();
      const runs = await runGrid(tasks, { workers: o.workers, ...(o.onProgress === undefined ? {} : { onProgress: o.onProgress }) });
      const wallMs = performance.now() - t0;
      const json = fgdBenchJson(basename(podsFile), input.seeds, input.policies, runs);
      if (input.bound === false) return { json, runs, tasks: tasks.length, wallMs };
      const perSeed: (number | null)[] = [];
      for (const seed of input.seeds) perSeed.push(await fgdLowerBound(trace, seed, input.tune));
      return { json: { ...json, lowerBound: lowerBoundJson(perSeed) }, runs, tasks: tasks.length, wallMs };
    },
  };
}

/** Writes the files asked for: the medians as JSON, the HTML report, per-policy curves and per-seed values. */
export function writeFgdOutputs(b: FgdBench, policies: readonly string[], seeds: readonly number[], out: FgdBenchOutputs): void {
  const { json, runs } = b;
  if (out.json !== undefined) writeFileMkdir(out.json, `${JSON.stringify(json, null, 2)}\n`);
  const curves = out.html !== undefined || out.detail !== undefined ? fgdCurves(policies, runs) : [];
  if (out.html !== undefined) writeFileMkdir(out.html, fgdReportHtml(json, curves));
  if (out.detail !== undefined) {
    const failed = policies.map((p) => ({ policy: p, perSeed: runs.filter((r) => r.policy === p).map((r) => ({ seed: r.seed, pods: r.pods, placed: r.placed, failedTo100: r.failedTo100.slice(0, 20) })) }));
    writeFileMkdir(out.detail, `${JSON.stringify({ trace: json.trace, seeds, curves, failed }, null, 1)}\n`);
  }
}
