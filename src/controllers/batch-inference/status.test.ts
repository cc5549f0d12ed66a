import { describe, expect, it } from 'vitest';
import { Value } from '@sinclair/typebox/value';
import { BatchInferenceJobStatus } from '../../api/schema/batch-inference-job.ts';
import '../../api/validate.ts'; // registers the date-time format the schema uses
import type { Progress } from './coordinator.ts';
import type { WrittenStatus } from './status.ts';
import { shouldWriteStatus, toStatus } from './status.ts';

const last: WrittenStatus = { atMs: 0, phase: 'Running', recordsProcessed: 100, percent: 10, quarantined: [] };
const next = (o: Partial<WrittenStatus>) => ({ phase: 'Running' as const, recordsProcessed: 100, percent: 10, quarantined: [] as string[], ...o });

describe('status writes', () => {
  it('writes on the first status, a phase change and a quarantine change', () => {
    expect(shouldWriteStatus(undefined, next({}), 0)).toBe(true);
    expect(shouldWriteStatus(last, next({ phase: 'Succeeded' }), 1)).toBe(true);
    expect(shouldWriteStatus(last, next({ quarantined: ['n1/0'] }), 1)).toBe(true);
  });
  it('otherwise only for 5 points of progress after 10 s, or any progress after 5 minutes', () => {
    expect(shouldWriteStatus(last, next({ recordsProcessed: 200, percent: 20 }), 5_000)).toBe(false);
    expect(shouldWriteStatus(last, next({ recordsProcessed: 200, percent: 20 }), 10_000)).toBe(true);
    expect(shouldWriteStatus(last, next({ recordsProcessed: 101, percent: 10 }), 200_000)).toBe(false);
    expect(shouldWriteStatus(last, next({ recordsProcessed: 101, percent: 10 }), 300_000)).toBe(true);
    expect(shouldWriteStatus(last, next({}), 900_000)).toBe(false);
  });
  it('a job of 10,000 records, one commit a second for 1,000 s: a few dozen writes, not 10,000', () => {
    let w: WrittenStatus | undefined;
    let writes = 0;
    for (let t = 0; t <= 1000; t++) {
      const n = { phase: t === 1000 ? ('Succeeded' as const) : ('Running' as const), recordsProcessed: t * 10, percent: Math.floor(t / 10), quarantined: [] };
      if (shouldWriteStatus(w, n, t * 1000)) {
        writes++;
        w = { ...n, atMs: t * 1000 };
      }
    }
    expect(writes).toBeLessThanOrEqual(25);
    expect(writes).toBeGreaterThanOrEqual(20);
  });
  it("renders the CRD's status shape", () => {
    const p: Progress = {
      recordsTotal: 10,
      recordsProcessed: 4,
      recordsFailed: 1,
      tokensProcessed: 900,
      shardsTotal: 3,
      shardsCompleted: 1,
      percent: 40,
      tokensPerSecond: 12.3456,
      expectedFinishMs: 60_000,
      running: 2,
    };
    const s = toStatus(p, { phase: 'Running', startMs: 0, nowMs: 30_000, batchSize: 48, quarantined: ['n1/0'], readyWorkers: 2 });
    expect([...Value.Errors(BatchInferenceJobStatus, s)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
    expect(s).toMatchObject({
      phase: 'Running',
      tokensPerSecond: 12.35,
      currentBatchSize: 48,
      quarantinedGpus: ['n1/0'],
      startTime: '1970-01-01T00:00:00Z',
      estimatedCompletionTime: '1970-01-01T00:01:00Z',
    });
    expect(s.progress).toMatchObject({ recordsProcessed: 4, recordsFailed: 1, percent: 40, lastCheckpointTime: '1970-01-01T00:00:30Z' });
  });
});
