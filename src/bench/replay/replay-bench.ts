/**
 * Time-based replay as a benchmark: a trace (Alibaba openb with creation/deletion times, Philly jobs, Pollux
 * workloads, or our YAML workload) on a cluster, once per policy, with optional seeded GPU-node failures;
 * the JSON result and an offline HTML report. `sits bench replay` parses the options and prints the table.
 */
import { basename } from 'node:path';
import { writeFileMkdir } from '../output.ts';
import { replayReportHtml } from '../report/replay-html.ts';
import { replay, type ReplayResult } from './replay.ts';
import { compressTime, loadClusterSource, loadUnits, type ClusterSource, type TraceFormat } from './sources.ts';

export interface ReplayBenchInput {
  readonly trace: string;
  /** Default: recognised from the file. */
  readonly format?: TraceFormat;
  readonly cluster: ClusterSource;
  readonly policies: readonly string[];
  readonly seed: number;
  /** Arrival times divided by this (durations kept). */
  readonly compress: number;
  /** Stop after this many hours of virtual time from the first arrival. */
  readonly untilHours?: number;
  /** GPU-node failures: mean hours between failures of one node. */
  readonly failMtbfHours?: number;
  readonly repairHours: number;
}

export interface ReplayBench {
  readonly input: ReplayBenchInput;
  readonly format: TraceFormat;
  readonly nodes: number;
  readonly gpus: number;
  readonly results: readonly ReplayResult[];
}

/** Loads the trace and the cluster (TraceError, InputError), then replays once per policy. */
export function runReplayBench(input: ReplayBenchInput): ReplayBench {
  const loaded = loadUnits(input.trace, input.format);
  const nodes = loadClusterSource(input.cluster);
  const units = compressTime(loaded.units, input.compress);
  const origin = units.reduce((m, u) => Math.min(m, u.arrivalMs), Number.POSITIVE_INFINITY);
  const results = input.policies.map((policy) =>
    replay(nodes, units, {
      policy,
      seed: input.seed,
      ...(input.untilHours === undefined || !Number.isFinite(origin) ? {} : { untilMs: origin + input.untilHours * 3600e3 }),
      ...(input.failMtbfHours === undefined ? {} : { failures: { mtbfMs: input.failMtbfHours * 3600e3, repairMs: input.repairHours * 3600e3 } }),
    }),
  );
  const gpus = nodes.reduce((s, n) => s + n.gpus.length, 0);
  return { input, format: loaded.format, nodes: nodes.length, gpus, results };
}

/** The JSON result file. */
export function replayBenchJson(b: ReplayBench): object {
  return {
    trace: basename(b.input.trace),
    format: b.format,
    cluster: { nodes: b.nodes, gpus: b.gpus },
    compress: b.input.compress,
    seed: b.input.seed,
    results: b.results.map((r) => ({ policy: r.policy, units: r.units, pods: r.pods, placedPods: r.placedPods, gpuUtilisationPct: r.gpuUtilisationPct, peakAllocationPct: r.peakAllocationPct, queueDelayS: r.queueDelayS, neverPlaced: r.neverPlaced, ...(r.notArrived === undefined ? {} : { notArrived: r.notArrived }), evictions: r.evictions, failures: r.failures, spanS: r.spanS, training: r.training })),
  };
}

/** Writes the files asked for: the JSON result and the HTML report. */
export function writeReplayOutputs(b: ReplayBench, out: { readonly json?: string; readonly html?: string }): void {
  const o = b.input;
  if (out.json !== undefined) writeFileMkdir(out.json, `${JSON.stringify(replayBenchJson(b), null, 2)}\n`);
  if (out.html !== undefined) writeFileMkdir(out.html, replayReportHtml(`${basename(o.trace)} on ${b.nodes} nodes / ${b.gpus} GPUs`, `format ${b.format}; time compression ×${o.compress}; seed ${o.seed}${o.failMtbfHours === undefined ? '' : `; node MTBF ${o.failMtbfHours} h, repair ${o.repairHours} h`}`, b.results));
}
