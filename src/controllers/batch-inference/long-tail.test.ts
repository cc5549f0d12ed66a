// Declarative scenarios of the long-tail breaker: running attempts, the typical rate, idle workers → re-shards.
import { describe, expect, it } from 'vitest';
import type { LongTailConfig, RunningAttempt } from './long-tail.ts';
import { DEFAULT_LONG_TAIL, planReshards, predictFinishMs } from './long-tail.ts';

// The straggler rule alone unless a scenario turns the tail steal on.
const cfg: LongTailConfig = { ...DEFAULT_LONG_TAIL, minObservationMs: 1000, handoffMs: 1000, minChunkRecords: 4, idleSteal: false };
const at = (id: string, start: number, end: number, done: number, startMs = 0): RunningAttempt => ({ id, range: { start, end }, startMs, done });

interface Scenario {
  name: string;
  running: RunningAttempt[];
  nowMs: number;
  typicalMsPerRecord?: number;
  idle: number;
  queued?: number;
  cfg?: Partial<LongTailConfig>;
  expect: { attemptId: string; cut: number; chunks: number }[];
}

const SCENARIOS: Scenario[] = [
  { name: 'on pace: nothing to do', running: [at('a', 0, 100, 50)], nowMs: 50_000, typicalMsPerRecord: 1000, idle: 2, expect: [] },
  // 10 records in 50 s: 5 s a record, 500 s predicted vs 130 s allowed; cut after 10 + 1 s × 0.2/s → 11.
  {
    name: 'slow against the typical rate: cut and split over the idle workers',
    running: [at('a', 0, 100, 10)],
    nowMs: 50_000,
    typicalMsPerRecord: 1000,
    idle: 3,
    expect: [{ attemptId: 'a', cut: 11, chunks: 3 }],
  },
  { name: 'no idle worker: nothing to move to', running: [at('a', 0, 100, 10)], nowMs: 50_000, typicalMsPerRecord: 1000, idle: 0, expect: [] },
  { name: 'before a rate is known: no prediction', running: [at('a', 0, 100, 0)], nowMs: 500, typicalMsPerRecord: 1000, idle: 2, expect: [] },
  { name: 'no finished attempt yet: only the deadline calls a straggler', running: [at('a', 0, 100, 10)], nowMs: 50_000, idle: 2, expect: [] },
  {
    name: 'predicted past the deadline',
    running: [at('a', 0, 100, 50)],
    nowMs: 50_000,
    idle: 1,
    cfg: { deadlineMs: 80_000 },
    expect: [{ attemptId: 'a', cut: 51, chunks: 1 }],
  },
  {
    name: 'the worst straggler gets the idle workers first',
    running: [at('a', 0, 100, 20), at('b', 100, 200, 10)],
    nowMs: 50_000,
    typicalMsPerRecord: 1000,
    idle: 2,
    expect: [{ attemptId: 'b', cut: 111, chunks: 2 }],
  },
  { name: 'too little left to move', running: [at('a', 0, 14, 10)], nowMs: 50_000, typicalMsPerRecord: 100, idle: 2, expect: [] },
  { name: 'disabled', running: [at('a', 0, 100, 10)], nowMs: 50_000, typicalMsPerRecord: 1000, idle: 2, cfg: { enabled: false }, expect: [] },
  // Tail steal: on pace (50 of 100 in 50 s, 50 s left), 1 idle, nothing queued: the owner keeps 25, the idle worker takes 25.
  {
    name: 'tail steal: an on-pace attempt is split with the idle worker, the owner keeping an equal share',
    running: [at('a', 0, 100, 50)],
    nowMs: 50_000,
    typicalMsPerRecord: 1000,
    idle: 1,
    cfg: { idleSteal: true },
    expect: [{ attemptId: 'a', cut: 75, chunks: 1 }],
  },
  {
    name: 'tail steal: not while queued work will keep the idle workers busy',
    running: [at('a', 0, 100, 50)],
    nowMs: 50_000,
    idle: 2,
    queued: 2,
    cfg: { idleSteal: true },
    expect: [],
  },
  {
    name: 'tail steal: not worth it with less than two hand-offs left',
    running: [at('a', 0, 100, 98)],
    nowMs: 98_000,
    idle: 1,
    cfg: { idleSteal: true },
    expect: [],
  },
  {
    name: 'tail steal: off when configured off',
    running: [at('a', 0, 100, 50)],
    nowMs: 50_000,
    typicalMsPerRecord: 1000,
    idle: 1,
    cfg: { idleSteal: false },
    expect: [],
  },
  // A chunk (stealOnly) far slower than typical is not cut at the hand-off point as a straggler, only split evenly.
  {
    name: 'tail steal: a chunk is split again evenly, never judged a straggler twice',
    running: [{ ...at('a', 0, 100, 10), stealOnly: true }],
    nowMs: 50_000,
    typicalMsPerRecord: 100,
    idle: 2,
    cfg: { idleSteal: true },
    expect: [{ attemptId: 'a', cut: 40, chunks: 2 }],
  },
];

describe('long-tail breaker scenarios', () => {
  for (const s of SCENARIOS) {
    it(s.name, () => {
      const plans = planReshards(s.running, s.nowMs, s.typicalMsPerRecord, s.idle, { ...cfg, ...s.cfg }, s.queued);
      expect(plans.map((p) => ({ attemptId: p.attemptId, cut: p.cut, chunks: p.chunks.length }))).toEqual(s.expect);
      for (const p of plans) {
        const a = s.running.find((x) => x.id === p.attemptId)!;
        expect(p.chunks[0]!.start).toBe(p.cut);
        expect(p.chunks.at(-1)!.end).toBe(a.range.end);
      }
    });
  }
  it('the tail steal is off in a config written before it existed (no idleSteal field)', () => {
    const { idleSteal: _, ...old } = { ...cfg, idleSteal: true };
    expect(planReshards([at('a', 0, 100, 50)], 50_000, 1000, 1, old)).toEqual([]);
    expect(planReshards([at('a', 0, 100, 50)], 50_000, 1000, 1, { ...old, idleSteal: true })).toHaveLength(1);
  });
  it("predicts from the attempt's own rate", () => {
    expect(predictFinishMs(at('a', 0, 100, 25, 0), 10_000, 1000)).toBe(40_000);
    expect(predictFinishMs(at('a', 0, 100, 25, 0), 500, 1000)).toBeUndefined();
  });
});
