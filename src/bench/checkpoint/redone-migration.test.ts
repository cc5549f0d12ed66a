import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makePod } from '../../core/model/pod.ts';
import { runMigrationBench, runMigrationBenchDetail, tuneUnits } from './migration.ts';
import { runRedoneBench, runRedoneBenchDetail } from './redone.ts';

const dir = mkdtempSync(join(tmpdir(), 'sits-ckpt-bench-'));

// Two 8-GPU nodes. A and B (4 GPUs) pack n0, C takes n1; B leaves at 10 s: 4 GPUs free on each node. G (8
// GPUs, one pod) arrives at 20 s and, without a move, waits until A or C leaves at 100,000 s.
writeFileSync(join(dir, 'openb_node_list_gpu_node.csv'), 'sn,cpu_milli,memory_mib,gpu,model\nnode-0,96000,786432,8,V100M32\nnode-1,96000,786432,8,V100M32\n');
writeFileSync(
  join(dir, 'openb_pod_list_default.csv'),
  [
    'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time',
    'pod-a,8000,32768,4,1000,,LS,Running,0,100000,0',
    'pod-b,8000,32768,4,1000,,LS,Running,0,10,0',
    'pod-c,8000,32768,4,1000,,LS,Running,0,100000,0',
    'pod-g,8000,32768,8,1000,,LS,Running,20,2000,20',
    '',
  ].join('\n'),
);

describe('bench checkpoint: migration', () => {
  it('moving one 4-GPU pod lets the 8-GPU pod start after a checkpoint instead of giving up; medians and totals over seeds', () => {
    const o = { traces: dir, compress: 1, untilHours: 1, tune: 0, seeds: [1, 2], sensitivity: false };
    const d = runMigrationBenchDetail(o);
    expect(d.seeds.map((r) => [r.without.migrations, r.with.migrations, r.with.movedUnits, r.with.helped])).toEqual([
      [0, 1, 1, 1],
      [0, 1, 1, 1],
    ]);
    expect(d).toMatchObject({ migrations: 2, gangsHelped: 2, gangsBlockedByFragmentation: 2 });
    // Without: G gives up at its trace deletion time (2,000 s), never started (A, B, C count as gangs that never waited).
    expect(d.withoutGangWaitP99Sec).toBeCloseTo(2000 - 20, 0);
    // G waits for the mover's checkpoint: 44.5 s for half a node.
    expect(d.withGangWaitP99Sec).toBeCloseTo(44.5, 1);
    // Checkpoint + restore of 4 GPUs (89 s) and G's 8 GPUs held for 44.5 s are counted as unallocated, per seed.
    expect(d.overheadGpuHours).toBeCloseTo((2 * (4 * 89 + 8 * 44.5)) / 3600, 1);
    expect(d.withUnallocatedPct).toBeLessThan(d.withoutUnallocatedPct);
    expect(Object.keys(runMigrationBench(o))).toEqual(['withoutGangWaitP99Sec', 'withGangWaitP99Sec', 'withoutUnallocatedPct', 'withUnallocatedPct']);
  });

  it('tunes the pod list to the FGD load with clones that keep their times, the same for the same seed', () => {
    const units = [0, 1, 2].map((i) => ({ id: `p${i}`, arrivalMs: i * 1000, durationMs: 10_000, deadlineMs: Number.POSITIVE_INFINITY, pod: makePod(`p${i}`, { cpuMilli: 1000, gpuCount: 1 }) }));
    const a = tuneUnits(units, 4, 1.3, 7);
    // 3 GPUs asked of 4: two clones bring it to 5 ≤ 5.2, a third would cross it.
    expect(a.clones).toBe(2);
    expect(a.units.slice(3).every((u) => units.some((x) => x.arrivalMs === u.arrivalMs && u.id.startsWith(`${x.id}-tuned-`) && u.pod?.id === u.id))).toBe(true);
    expect(tuneUnits(units, 4, 1.3, 7)).toEqual(a);
    expect(tuneUnits(units, 4, 0, 7).clones).toBe(0);
  });
});

// Bronze fills both nodes with two 8-GPU jobs of 4 h; gold's jobs arrive 50 min later and reclaim (gold is
// under its share). Checkpoints every 30 min: plain preemption redoes the 20 min since the last one.
const philly = join(dir, 'philly.csv');
const rows = ['timestamp,duration,num_gpus,gpu_time,cluster'];
for (let i = 0; i < 2; i++) rows.push(`2017-10-01 00:00:0${i},14400.0,8,115200.0,ccc`);
for (let i = 0; i < 3; i++) rows.push(`2017-10-01 00:50:0${i},3600.0,8,28800.0,aaa`);
for (let i = 0; i < 4; i++) rows.push(`2017-10-01 00:5${i}:30,600.0,1,600.0,aaa`);
rows.push('2017-10-01 01:30:00,600.0,1,600.0,bbb', '2017-10-01 01:31:00,600.0,1,600.0,bbb', '2017-10-01 01:32:00,600.0,1,600.0,bbb');
// The same two hours again a day later: a second window, as busy as the first.
rows.push(...rows.slice(1).map((r) => r.replace('2017-10-01', '2017-10-02')));
writeFileSync(philly, `${rows.join('\n')}\n`);

describe('bench checkpoint: redone work', () => {
  it('checkpoint-aware preemption redoes far less than plain whole-gang preemption', () => {
    const d = runRedoneBenchDetail({ trace: philly, nodes: 2, windowHours: 2, windows: 1 });
    expect(d.preemptions.plain).toBeGreaterThan(0);
    expect(d.plain).toBeGreaterThan(0);
    expect(d.checkpointAware).toBeLessThan(d.plain * 0.2);
    expect(d.checkpointGpuHours).toBeGreaterThan(0);
    expect(runRedoneBench({ trace: philly, nodes: 2, windowHours: 2, windows: 1 })).toEqual({ checkpointAware: d.checkpointAware, plain: d.plain });
  });

  it('sums the busiest windows, each replayed on its own', () => {
    const one = runRedoneBenchDetail({ trace: philly, nodes: 2, windowHours: 2, windows: 1 });
    const d = runRedoneBenchDetail({ trace: philly, nodes: 2, windowHours: 2, windows: 8 });
    // Only two windows hold jobs; they are the same jobs a day apart (ties: the earlier first).
    expect(d.windows.map((w) => w.startHoursIntoTrace)).toEqual([0, 24]);
    for (const w of d.windows) expect({ plain: w.plain, checkpointAware: w.checkpointAware }).toEqual({ plain: one.plain, checkpointAware: one.checkpointAware });
    expect(d).toMatchObject({ plain: 2 * one.plain, checkpointAware: 2 * one.checkpointAware, reductionPct: one.reductionPct, jain: one.jain });
    expect(d.preemptions.plain).toBe(2 * one.preemptions.plain);
  });
});
