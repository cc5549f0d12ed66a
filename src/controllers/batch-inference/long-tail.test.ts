// Declarative scenarios of the long-tail breaker: running attempts, the typical rate, idle workers → re-shards.
import { describe, expect, it } from 'vitest';
import type { LongTailConfig, RunningAttempt } from './long-tail.ts';
import { DEFAULT_LONG_TAIL, planReshards, predictFinishMs } from './long-tail.ts';

const cfg: LongTailConfig = { ...DEFAULT_LONG_TAIL, minObservationMs: 1000, handoffMs: 1000, minChunkRecords: 4 };
const at = (id: string, start: number, end: number, done: number, startMs = 0): RunningAttempt => ({ id, range: { start, end }, startMs, done });

interface Scenario {
  name: string;
  running: RunningAttempt[];
  nowMs: number;
  typicalMsPerRecord?: number;
  idle: number;
  cfg?: Partial<LongTailConfig>;
  expect: { attemptId: string; cut: number; chunks: number }[];
}

const SCENARIOS: Scenario[] = [
  { name: 'on pace: nothing to do', running: [at('a', 0, 100, 50)], nowMs: 50_000, typicalMsPerRecord: 1000, idle: 2, expect: [] },
  // 10 records in 50 s: 5 s a record, 500 s predicted vs 130 s allowed; cut after 10 + 1 s × 0.2/s → 11.
  { name: 'slow against the typical rate: cut and split over the idle workers', running: [at('a', 0, 100, 10)], nowMs: 50_000, typicalMsPerRecord: 1000, idle: 3, expect: [{ attemptId: 'a', cut: 11, chunks: 3 }] },
  { name: 'no idle worker: nothing to move to', running: [at('a', 0, 100, 10)], nowMs: 50_000, typicalMsPerRecord: 1000, idle: 0, expect: [] },
  { name: 'before a rate is known: no prediction', running: [at('a', 0, 100, 0)], nowMs: 500, typicalMsPerRecord: 1000, idle: 2, expect: [] },
  { name: 'no finished attempt yet: only the deadline calls a straggler', running: [at('a', 0, 100, 10)], nowMs: 50_000, idle: 2, expect: [] },
  { name: 'predicted past the deadline', running: [at('a', 0, 100, 50)], nowMs: 50_000, idle: 1, cfg: { deadlineMs: 80_000 }, expect: [{ attemptId: 'a', cut: 51, chunks: 1 }] },
  { name: 'the worst straggler gets the idle workers first', running: [at('a', 0, 100, 20), at('b', 100, 200, 10)], nowMs: 50_000, typicalMsPerRecord: 1000, idle: 2, expect: [{ attemptId: 'b', cut: 111, chunks: 2 }] },
  { name: 'too little left to move', running: [at('a', 0, 14, 10)], nowMs: 50_000, typicalMsPerRecord: 100, idle: 2, expect: [] },
  { name: 'disabled', running: [at('a', 0, 100, 10)], nowMs: 50_000, typicalMsPerRecord: 1000, idle: 2, cfg: { enabled: false }, expect: [] },
];

describe('long-tail breaker scenarios', () => {
  for (const s of SCENARIOS) {
    it(s.name, () => {
      const plans = planReshards(s.running, s.nowMs, s.typicalMsPerRecord, s.idle, { ...cfg, ...s.cfg });
      expect(plans.map((p) => ({ attemptId: p.attemptId, cut: p.cut, chunks: p.chunks.length }))).toEqual(s.expect);
      for (const p of plans) {
        const a = s.running.find((x) => x.id === p.attemptId)!;
        expect(p.chunks[0]!.start).toBe(p.cut);
        expect(p.chunks.at(-1)!.end).toBe(a.range.end);
      }
    });
  }
  it('predicts from the attempt\'s own rate', () => {
    expect(predictFinishMs(at('a', 0, 100, 25, 0), 10_000, 1000)).toBe(40_000);
    expect(predictFinishMs(at('a', 0, 100, 25, 0), 500, 1000)).toBeUndefined();
  });
});
