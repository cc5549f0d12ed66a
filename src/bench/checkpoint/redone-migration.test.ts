import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runMigrationBench, runMigrationBenchDetail } from './migration.ts';
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
  it('moving one 4-GPU pod lets the 8-GPU pod start after a checkpoint instead of giving up', () => {
    const d = runMigrationBenchDetail({ traces: dir, compress: 1, untilHours: 1 });
    expect(d.without.migrations).toBe(0);
    expect(d.with.migrations).toBe(1);
    expect(d.with.movedUnits).toBe(1);
    // Without: G gives up at its trace deletion time (2,000 s), never started.
    expect(d.withoutGangWaitP99Sec).toBeCloseTo(2000 - 20, 0);
    // G waits for the mover's checkpoint: 44.5 s for half a node.
    expect(d.withGangWaitP99Sec).toBeCloseTo(44.5, 1);
    // Checkpoint + restore of 4 GPUs (89 s) and G's 8 GPUs held for 44.5 s are counted as unallocated.
    expect(d.with.overheadGpuHours).toBeCloseTo((4 * 89 + 8 * 44.5) / 3600, 2);
    expect(Object.keys(runMigrationBench({ traces: dir, compress: 1, untilHours: 1 }))).toEqual(['withoutGangWaitP99Sec', 'withGangWaitP99Sec', 'withoutUnallocatedPct', 'withUnallocatedPct']);
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
writeFileSync(philly, `${rows.join('\n')}\n`);

describe('bench checkpoint: redone work', () => {
  it('checkpoint-aware preemption redoes far less than plain whole-gang preemption', () => {
    const d = runRedoneBenchDetail({ trace: philly, nodes: 2, windowHours: 2 });
    expect(d.preemptions.plain).toBeGreaterThan(0);
    expect(d.plain).toBeGreaterThan(0);
    expect(d.checkpointAware).toBeLessThan(d.plain * 0.2);
    expect(d.checkpointGpuHours).toBeGreaterThan(0);
    expect(runRedoneBench({ trace: philly, nodes: 2, windowHours: 2 })).toEqual({ checkpointAware: d.checkpointAware, plain: d.plain });
  });
});
