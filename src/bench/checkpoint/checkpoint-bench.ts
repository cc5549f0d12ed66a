/**
 * `sits bench checkpoint` (issue 14 "Numbers"): one function per part of the result, each filling its own key of
 * the JSON the issue fixes. Parts not built yet are `null` (see CHECKPOINT_BENCH_TODO); a new part is one more
 * function here and one more line in runCheckpointBench.
 */
import { measureSnapshotLatency, type LatencySummary, type SnapshotLatencyOptions, type SnapshotLatencyResult } from './snapshot-latency.ts';

/** The result file, exactly the shape. */
export interface CheckpointBenchJson {
  readonly snapshotLatencyMs: { readonly linked: LatencySummary; readonly independent: LatencySummary } | null;
  /** TODO(issue 14 item 3, checkpoint-aware preemption): GPU-hours redone in the tenants simulation. */
  readonly redoneGpuHours: { readonly checkpointAware: number; readonly plain: number } | null;
  /** TODO(issue 14 item 4, defragmentation by migration): the FGD default trace with departures. */
  readonly migration: { readonly withoutGangWaitP99Sec: number; readonly withGangWaitP99Sec: number; readonly withoutUnallocatedPct: number; readonly withUnallocatedPct: number } | null;
  /** TODO(issue 14 item 5, predictive GPU health): a generated fault series. */
  readonly health: { readonly foreseenPct: number; readonly falseQuarantinesPer1000GpuDays: number } | null;
}

/** Why a part is null, written beside the numbers (docs/checkpoints.md "Numbers"). */
export const CHECKPOINT_BENCH_TODO: Readonly<Record<Exclude<keyof CheckpointBenchJson, 'snapshotLatencyMs'>, string>> = {
  redoneGpuHours: 'TODO: null until checkpoint-aware preemption (issue 14 item 3) provides its tenants-simulation function',
  migration: 'TODO: null until defragmentation by migration (issue 14 item 4) provides its replay function',
  health: 'TODO: null until predictive GPU health (issue 14 item 5) provides its fault-series function',
};

export interface CheckpointBenchOptions {
  readonly snapshotLatency: SnapshotLatencyOptions | false;
  readonly log?: (line: string) => void;
}

export interface CheckpointBenchRun {
  readonly json: CheckpointBenchJson;
  readonly details: { readonly snapshotLatency?: SnapshotLatencyResult; readonly todo: typeof CHECKPOINT_BENCH_TODO };
}

/** Part 1: "checkpoint written" → "snapshot ready", linked vs independent, on the real snapshot controller. */
async function snapshotLatencyPart(o: CheckpointBenchOptions): Promise<SnapshotLatencyResult | undefined> {
  if (o.snapshotLatency === false) return undefined;
  return measureSnapshotLatency({ ...o.snapshotLatency, ...(o.log === undefined ? {} : { log: o.log }) });
}

// Parts 2–4 are other helpers' functions; each returns null here until it exists.
const redoneGpuHoursPart = (): CheckpointBenchJson['redoneGpuHours'] => null;
const migrationPart = (): CheckpointBenchJson['migration'] => null;
const healthPart = (): CheckpointBenchJson['health'] => null;

export async function runCheckpointBench(o: CheckpointBenchOptions): Promise<CheckpointBenchRun> {
  const latency = await snapshotLatencyPart(o);
  const json: CheckpointBenchJson = {
    snapshotLatencyMs: latency === undefined ? null : { linked: latency.linked, independent: latency.independent },
    redoneGpuHours: redoneGpuHoursPart(),
    migration: migrationPart(),
    health: healthPart(),
  };
  return { json, details: { ...(latency === undefined ? {} : { snapshotLatency: latency }), todo: CHECKPOINT_BENCH_TODO } };
}
