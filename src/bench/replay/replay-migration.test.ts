import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointMs } from '../../core/actions/checkpoint.ts';
import { makePod } from '../../core/model/pod.ts';
import { replay, type GangStats, type ReplayOptions } from './replay.ts';
import { loadClusterSource } from './sources.ts';
import type { ReplayUnit } from './units.ts';

// Two 8-GPU nodes. A and B (4 GPUs each) pack n0, C takes n1; B leaves at 10 s: 4 GPUs free on each node, 8 in
// all. G (8 GPUs, one pod) arrives at 20 s and fits only once a node is empty: without a move, when A or C
// leaves at 100,000 s, long after it gives up (at 2,000 s). Only fragmentation keeps it out.
const dir = mkdtempSync(join(tmpdir(), 'sits-replay-migration-'));
writeFileSync(join(dir, 'nodes.csv'), 'sn,cpu_milli,memory_mib,gpu,model\nnode-0,96000,786432,8,V100M32\nnode-1,96000,786432,8,V100M32\n');
const nodes = loadClusterSource({ kind: 'openb', file: join(dir, 'nodes.csv') });
const S = 1000;
const unit = (id: string, gpus: number, arrivalS: number, durationS: number, deadlineS = Number.POSITIVE_INFINITY, gpuMilli = 1000): ReplayUnit => ({
  id,
  arrivalMs: arrivalS * S,
  durationMs: durationS * S,
  deadlineMs: deadlineS * S,
  pod: makePod(id, { cpuMilli: 8000, memoryMiB: 32_768, gpuCount: gpus, gpuMilli }),
});
const units = [unit('a', 4, 0, 100_000), unit('b', 4, 0, 10), unit('c', 4, 0, 100_000), unit('g', 8, 20, 1_980, 2_000)];
const run = (migrate: boolean, extra: Partial<NonNullable<ReplayOptions['migration']>> = {}, us = units): GangStats =>
  replay(nodes, us, { policy: 'sits', untilMs: 3_600 * S, migration: { migrate, ...extra } }).gangs as GangStats;

describe('replay: defragmentation by migration', () => {
  it('a gang kept out only by fragmentation starts after one move instead of giving up', () => {
    const without = run(false);
    const withMigration = run(true);
    // Both runs see the same gang blocked by fragmentation (A, B and C, on 4 whole GPUs, are gangs too, never
    // blocked); only the migration run acts on it.
    expect(without).toMatchObject({ units: 4, fragmentationBlocked: 1, migrations: 0, helped: 0, planCalls: 0 });
    expect(withMigration).toMatchObject({ units: 4, fragmentationBlocked: 1, migrations: 1, movedUnits: 1, helped: 1 });
    // Without: G waits until it gives up at 2,000 s. With: it waits for the mover's checkpoint (half a node).
    expect(without.waitP99S).toBeCloseTo(2_000 - 20, 1);
    expect(withMigration.waitP99S).toBeCloseTo(checkpointMs(4) / 1000, 1);
    // The cost is paid: the mover's checkpoint + restore on 4 GPUs, and G's 8 GPUs held while the mover checkpoints.
    expect(withMigration.overheadGpuHours).toBeCloseTo((4 * 2 * checkpointMs(4) + 8 * checkpointMs(4)) / 1000 / 3600, 2);
    // G runs 1,980 s of the hour instead of nothing: less of the cluster is unallocated despite the cost.
    expect(withMigration.unallocatedPct).toBeLessThan(without.unallocatedPct);
  });

  it('moves nothing when no running unit may move, and says why', () => {
    const r = run(true, { movable: () => false });
    expect(r).toMatchObject({ fragmentationBlocked: 1, migrations: 0, helped: 0 });
    expect(r.planCalls).toBeGreaterThan(0);
    expect(Object.keys(r.noPlan)).toEqual(['no-domain']);
  });

  it('moves nothing when the checkpoint costs more than the earlier start gains', () => {
    // A day to checkpoint 4 GPUs (and as long to restore) is dearer than starting G 13,580 s before A or C ends.
    const day = { checkpointMs: (): number => 86_400 * S, restoreMs: (): number => 86_400 * S };
    const r = run(true, { cost: day });
    expect(r).toMatchObject({ migrations: 0, helped: 0 });
    expect(r.noPlan['no-gain']).toBeGreaterThan(0);
  });

  it('counts gangs, moves and GPU time only from fromMs', () => {
    const late = run(true, { fromMs: 30 * S });
    // G arrived at 20 s: not counted; the move at 20 s is outside the window, its pause inside is still paid.
    expect(late).toMatchObject({ units: 0, migrations: 0, helped: 0, waitP99S: 0 });
    expect(late.overheadGpuHours).toBeGreaterThan(0);
  });

  it('the same input gives the same statistics', () => {
    expect(JSON.stringify(run(true))).toBe(JSON.stringify(run(true)));
  });
});
