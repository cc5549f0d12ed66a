import { describe, expect, it } from 'vitest';

import { runCheckpointBench } from './checkpoint-bench.ts';
import { summarize } from './snapshot-latency.ts';

describe('sits bench checkpoint', () => {
  it('writes the issue’s shape; a part left out is null and named in the details', async () => {
    const r = await runCheckpointBench({ snapshotLatency: false, redone: false, migration: false, health: false });
    expect(Object.keys(r.json)).toEqual(['snapshotLatencyMs', 'redoneGpuHours', 'migration', 'health']);
    expect(r.json).toEqual({ snapshotLatencyMs: null, redoneGpuHours: null, migration: null, health: null });
    expect(r.details.skipped).toEqual(['snapshotLatencyMs', 'redoneGpuHours', 'migration', 'health']);
  });

  it('fills health from the fault series, exactly the issue’s keys', async () => {
    const r = await runCheckpointBench({ snapshotLatency: false, redone: false, migration: false, health: { seeds: [1], devices: 40, days: 1 } });
    expect(Object.keys(r.json.health ?? {})).toEqual(['foreseenPct', 'falseQuarantinesPer1000GpuDays']);
    expect(r.json.health?.foreseenPct).toBe(r.details.health?.foreseenPct);
    expect(r.details.skipped).toEqual(['snapshotLatencyMs', 'redoneGpuHours', 'migration']);
  });

  it('summarizes latencies as {mean, p50, p99} by nearest rank, to 0.1 ms', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(summarize(xs)).toEqual({ mean: 50.5, p50: 50, p99: 99 });
    expect(summarize([12.34])).toEqual({ mean: 12.3, p50: 12.3, p99: 12.3 });
    expect(() => summarize([])).toThrow('no samples');
  });
});
