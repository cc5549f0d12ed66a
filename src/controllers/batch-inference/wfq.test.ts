import { describe, expect, it } from 'vitest';
import { makeQueue, TIER_WEIGHTS } from '../../core/queue/model.ts';
import { simulateShares, tenantsFromQueues, WfqScheduler } from './wfq.ts';

const tiers = tenantsFromQueues(
  (['gold', 'silver', 'bronze'] as const).map((t) => makeQueue(t, { weight: TIER_WEIGHTS[t] as number })),
  30,
);

describe('WFQ GPU time slices', () => {
  it('takes tenants and weights from the Queue model; slices of quantum × weight', () => {
    expect(tiers).toEqual([
      { name: 'gold', weight: 4, sliceMs: 120 },
      { name: 'silver', weight: 2, sliceMs: 60 },
      { name: 'bronze', weight: 1, sliceMs: 30 },
    ]);
  });
  it('serves in virtual-time order: one turn each per round, gold first on a tie', () => {
    const s = new WfqScheduler(tiers);
    const all = new Set(['gold', 'silver', 'bronze']);
    const order: string[] = [];
    for (let i = 0; i < 6; i++) {
      const t = s.pick(all)!;
      order.push(t.name);
      s.charge(t.name, t.sliceMs);
    }
    expect(order).toEqual(['gold', 'silver', 'bronze', 'gold', 'silver', 'bronze']);
  });
  it('divides GPU time 4:2:1 even when batches overrun their slice', () => {
    // Batches of 7..53 ms that differ by tenant: slices end at a batch boundary, so every turn overruns a little.
    const r = simulateShares(tiers, 600_000, (t, turn, i) => 7 + ((turn * 31 + i * 17 + t.length * 13) % 47));
    for (const t of ['gold', 'silver', 'bronze']) expect(Math.abs(r[t]!.sharePct - r[t]!.entitledPct) / r[t]!.entitledPct).toBeLessThan(0.05);
    expect(r.gold!.entitledPct).toBeCloseTo((100 * 4) / 7);
  });
  it('does not bank idle time as credit: a tenant back from idle does not starve the others', () => {
    const s = new WfqScheduler(tiers);
    const busy = new Set(['silver', 'bronze']);
    for (let i = 0; i < 100; i++) {
      const t = s.pick(busy)!;
      s.charge(t.name, t.sliceMs);
    }
    const all = new Set(['gold', 'silver', 'bronze']);
    const next: string[] = [];
    for (let i = 0; i < 6; i++) {
      const t = s.pick(all)!;
      next.push(t.name);
      s.charge(t.name, t.sliceMs);
    }
    // With banked credit gold would take all six turns; without, about its one turn a round (it wins ties).
    const gold = next.filter((n) => n === 'gold').length;
    expect(gold).toBeGreaterThanOrEqual(2);
    expect(gold).toBeLessThanOrEqual(3);
    expect(next).toContain('silver');
    expect(next).toContain('bronze');
  });
  it('refuses a weight that is not positive', () => {
    expect(() => new WfqScheduler([{ name: 'x', weight: 0, sliceMs: 1 }])).toThrow('tenant x: weight must be positive');
  });
});
