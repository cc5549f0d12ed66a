/**
 * `sits bench checkpoint`, migration (issue 14, Numbers): the FGD default trace (openb default pod list on its
 * GPU node list) replayed with departures — pods leave at their trace deletion times — under the SITS profile,
 * without and with defragmentation by migration (ADR 0095). Reported: p99 wait of the multi-GPU units (those
 * that need whole GPUs of one node, the trace's gangs) and the unallocated GPU share over the arrival window,
 * where GPUs paused for a checkpoint/restore or held while movers checkpoint count as unallocated (the cost).
 * The trace is light (~1 % GPU allocation in real time), so arrivals are compressed to load the cluster.
 */
import { join } from 'node:path';
import type { MigrationCost } from '../../core/actions/migration.ts';
import { replay, type GangStats } from '../replay/replay.ts';
import { compressTime, loadClusterSource, loadUnits } from '../replay/sources.ts';

export const DEFAULT_FGD_TRACES = join(import.meta.dirname, '../../../../shared/traces/alibaba-gpu-v2023');

export interface MigrationBenchOptions {
  /** Folder with openb_node_list_gpu_node.csv and openb_pod_list_default.csv. */
  readonly traces?: string;
  /** Arrival times divided by this (default 200,000: the trace's 149 days arrive in about a minute, and the cluster queues). */
  readonly compress?: number;
  /** Measure (and stop) this many hours after the first arrival (default 2: pods leave at their trace times meanwhile); 0: until the last arrival. */
  readonly untilHours?: number;
  /** Only the first this many pods of the trace (default all). */
  readonly maxPods?: number;
  readonly policy?: string;
  readonly seed?: number;
  readonly cost?: MigrationCost;
}

export interface MigrationBenchResult {
  readonly withoutGangWaitP99Sec: number;
  readonly withGangWaitP99Sec: number;
  readonly withoutUnallocatedPct: number;
  readonly withUnallocatedPct: number;
}

export interface MigrationBenchDetail extends MigrationBenchResult {
  readonly without: GangStats;
  readonly with: GangStats;
}

export function runMigrationBenchDetail(o: MigrationBenchOptions = {}): MigrationBenchDetail {
  const dir = o.traces ?? DEFAULT_FGD_TRACES;
  const nodes = loadClusterSource({ kind: 'openb', file: join(dir, 'openb_node_list_gpu_node.csv') });
  const loaded = loadUnits(join(dir, 'openb_pod_list_default.csv'), 'openb');
  const units = compressTime(o.maxPods === undefined ? loaded.units : loaded.units.slice(0, o.maxPods), o.compress ?? 200_000);
  const origin = units.reduce((m, u) => Math.min(m, u.arrivalMs), Number.POSITIVE_INFINITY);
  const hours = o.untilHours ?? 2;
  const until = hours > 0 && Number.isFinite(origin) ? { untilMs: origin + hours * 3_600_000 } : {};
  const run = (migrate: boolean): GangStats => {
    const r = replay(nodes, units, { policy: o.policy ?? 'sits', seed: o.seed ?? 1, samples: 2, ...until, migration: { migrate, ...(o.cost === undefined ? {} : { cost: o.cost }) } });
    return r.gangs as GangStats;
  };
  const without = run(false);
  const withMigration = run(true);
  return { withoutGangWaitP99Sec: without.waitP99S, withGangWaitP99Sec: withMigration.waitP99S, withoutUnallocatedPct: without.unallocatedPct, withUnallocatedPct: withMigration.unallocatedPct, without, with: withMigration };
}

/** `{"withoutGangWaitP99Sec", "withGangWaitP99Sec", "withoutUnallocatedPct", "withUnallocatedPct"}`. */
export function runMigrationBench(o: MigrationBenchOptions = {}): MigrationBenchResult {
  const d = runMigrationBenchDetail(o);
  return { withoutGangWaitP99Sec: d.withoutGangWaitP99Sec, withGangWaitP99Sec: d.withGangWaitP99Sec, withoutUnallocatedPct: d.withoutUnallocatedPct, withUnallocatedPct: d.withUnallocatedPct };
}
