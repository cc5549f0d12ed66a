import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, FULL_COUNTS, makePlan, SHORT_COUNTS } from './plan.ts';

const opts = { seed: 1, counts: FULL_COUNTS, gapSec: [2, 6] as const, windowSec: [4, 8] as const };

describe('chaos fault plan', () => {
  it('is the same for the same seed and differs for another', () => {
    expect(makePlan(opts)).toEqual(makePlan(opts));
    expect(makePlan({ ...opts, seed: 2 }).map((f) => f.kind)).not.toEqual(makePlan(opts).map((f) => f.kind));
  });

  it('holds exactly the asked number of each kind, indexed in order, with parameters in range', () => {
    const plan = makePlan(opts);
    for (const k of FAULT_KINDS) expect(plan.filter((f) => f.kind === k)).toHaveLength(FULL_COUNTS[k]);
    expect(plan.map((f) => f.index)).toEqual(plan.map((_, i) => i));
    for (const f of plan) {
      expect(f.gapSec).toBeGreaterThanOrEqual(2);
      expect(f.gapSec).toBeLessThanOrEqual(6);
      if (f.kind === 'schedulerKill') expect([1, 2, 3]).toContain(f.killAfterGangBinds);
      if (f.kind === 'leaderFailover') {
        expect(f.pauseLeases).toBeGreaterThan(1);
        expect([1, 2, 3]).toContain(f.pauseAfterGangBinds);
      }
      if (f.kind === 'throttle' || f.kind === 'slowApi') {
        expect(f.durationSec).toBeGreaterThanOrEqual(4);
        expect(f.durationSec).toBeLessThanOrEqual(8);
      }
      if (f.kind === 'slowApi') expect(f.delayMs).toBeGreaterThanOrEqual(100);
    }
  });

  it('the short plan has every kind once', () => {
    expect(
      makePlan({ ...opts, counts: SHORT_COUNTS })
        .map((f) => f.kind)
        .sort(),
    ).toEqual([...FAULT_KINDS].sort());
  });

  it('rejects bad input naming the field', () => {
    expect(() => makePlan({ ...opts, seed: 1.5 })).toThrow(/^seed:/);
    expect(() => makePlan({ ...opts, gapSec: [5, 1] })).toThrow(/^gapSec:/);
    expect(() => makePlan({ ...opts, windowSec: [-1, 1] })).toThrow(/^windowSec:/);
    expect(() => makePlan({ ...opts, counts: { ...FULL_COUNTS, etcdRestart: -1 } })).toThrow(/^counts\.etcdRestart:/);
  });
});
