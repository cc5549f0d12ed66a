import { describe, expect, it } from 'vitest';

import { CHECKPOINT_BENCH_TODO, runCheckpointBench } from './checkpoint-bench.ts';
import { summarize } from './snapshot-latency.ts';

describe('sits bench checkpoint', () => {
  it('writes the issue’s shape; parts other helpers build are null with the reason beside them', async () => {
    const r = await runCheckpointBench({ snapshotLatency: false });
    expect(Object.keys(r.json)).toEqual(['snapshotLatencyMs', 'redoneGpuHours', 'migration', 'health']);
    expect(r.json).toEqual({ snapshotLatencyMs: null, redoneGpuHours: null, migration: null, health: null });
    expect(Object.keys(r.details.todo).sort()).toEqual(['health', 'migration', 'redoneGpuHours']);
    for (const why of Object.values(CHECKPOINT_BENCH_TODO)) expect(why).toMatch(/^TODO: /);
  });

  it('summarizes latencies as {mean, p50, p99} by nearest rank, to 0.1 ms', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(summarize(xs)).toEqual({ mean: 50.5, p50: 50, p99: 99 });
    expect(summarize([12.34])).toEqual({ mean: 12.3, p50: 12.3, p99: 12.3 });
    expect(() => summarize([])).toThrow('no samples');
  });
});
