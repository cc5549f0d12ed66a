/**
 * `sits bench checkpoint` (issue 14 "Numbers"): one function per part of the result, each filling its own key of
 * the JSON the issue fixes: snapshot latency on the real snapshot controller (snapshot-latency.ts), redone work
 * in the tenants simulation (redone.ts), defragmentation by migration in the replay (migration.ts) and predictive
 * GPU health on a generated fault series (health.ts). A part left out by its option is `null`, with the reason
 * in the details.
 */
import { healthBenchDetail, type HealthBenchDetail, type HealthBenchOptions } from './health.ts';
import { runMigrationBenchDetail, type MigrationBenchDetail, type MigrationBenchOptions } from './migration.ts';
import { runRedoneBenchDetail, type RedoneBenchDetail, type RedoneBenchOptions } from './redone.ts';
import { measureSnapshotLatency, type LatencySummary, type SnapshotLatencyOptions, type SnapshotLatencyResult } from './snapshot-latency.ts';

/** The result file, exactly the shape. */
export interface CheckpointBenchJson {
  readonly snapshotLatencyMs: { readonly linked: LatencySummary; readonly independent: LatencySummary } | null;
  /** GPU-hours redone after preemption in the tenants simulation (checkpoint-aware vs plain whole-gang). */
  readonly redoneGpuHours: { readonly checkpointAware: number; readonly plain: number } | null;
  /** The FGD default trace with departures, with and without defragmentation by migration. */
  readonly migration: { readonly withoutGangWaitP99Sec: number; readonly withGangWaitP99Sec: number; readonly withoutUnallocatedPct: number; readonly withUnallocatedPct: number } | null;
  /** Predictive GPU health on a generated fault series. */
  readonly health: { readonly foreseenPct: number; readonly falseQuarantinesPer1000GpuDays: number } | null;
}

export interface CheckpointBenchOptions {
  readonly snapshotLatency: SnapshotLatencyOptions | false;
  /** Each part's options, or false to leave it out (null in the JSON). */
  readonly redone?: RedoneBenchOptions | false;
  readonly migration?: MigrationBenchOptions | false;
  readonly health?: HealthBenchOptions | false;
  readonly log?: (line: string) => void;
}

export interface CheckpointBenchRun {
  readonly json: CheckpointBenchJson;
  readonly details: {
    readonly snapshotLatency?: SnapshotLatencyResult;
    readonly redone?: RedoneBenchDetail;
    readonly migration?: MigrationBenchDetail;
    readonly health?: HealthBenchDetail;
    /** The parts left out by their option. */
    readonly skipped: readonly string[];
  };
}

/** Part 1: "checkpoint written" → "snapshot ready", linked vs independent, on the real snapshot controller. */
async function snapshotLatencyPart(o: CheckpointBenchOptions): Promise<SnapshotLatencyResult | undefined> {
  if (o.snapshotLatency === false) return undefined;
  return measureSnapshotLatency({ ...o.snapshotLatency, ...(o.log === undefined ? {} : { log: o.log }) });
}

export async function runCheckpointBench(o: CheckpointBenchOptions): Promise<CheckpointBenchRun> {
  const latency = await snapshotLatencyPart(o);
  const step = <T>(name: string, opts: unknown, run: () => T): T | undefined => {
    if (opts === false) return undefined;
    o.log?.(`${name} …`);
    return run();
  };
  const redone = step('redone work (tenants simulation)', o.redone, () => runRedoneBenchDetail(o.redone || {}));
  const migration = step('migration (FGD default trace replay)', o.migration, () => runMigrationBenchDetail(o.migration || {}));
  const health = step('GPU health (fault series)', o.health, () => healthBenchDetail(o.health || {}));
  const json: CheckpointBenchJson = {
    snapshotLatencyMs: latency === undefined ? null : { linked: latency.linked, independent: latency.independent },
    redoneGpuHours: redone === undefined ? null : { checkpointAware: redone.checkpointAware, plain: redone.plain },
    migration: migration === undefined ? null : { withoutGangWaitP99Sec: migration.withoutGangWaitP99Sec, withGangWaitP99Sec: migration.withGangWaitP99Sec, withoutUnallocatedPct: migration.withoutUnallocatedPct, withUnallocatedPct: migration.withUnallocatedPct },
    health: health === undefined ? null : { foreseenPct: health.foreseenPct, falseQuarantinesPer1000GpuDays: health.falseQuarantinesPer1000GpuDays },
  };
  const skipped = (['snapshotLatencyMs', 'redoneGpuHours', 'migration', 'health'] as const).filter((k) => json[k] === null);
  return { json, details: { ...(latency === undefined ? {} : { snapshotLatency: latency }), ...(redone === undefined ? {} : { redone }), ...(migration === undefined ? {} : { migration }), ...(health === undefined ? {} : { health }), skipped } };
}
