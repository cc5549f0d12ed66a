import { describe, expect, it } from 'vitest';
import { makeQueue, type QueueSpec } from './model.ts';
import { checkQuota, cohortLendable, type QueueUsage } from './quota.ts';

const G = (n: number) => ({ gpuMilli: n * 1000, cpuMilli: Infinity, memoryMiB: Infinity });
const used = (n: number): QueueUsage => ({ total: { gpuMilli: n * 1000, cpuMilli: 0, memoryMiB: 0 }, byModel: {} });

describe('cohort borrowing', () => {
  const a = makeQueue('a', { cohort: 'c', nominal: G(8) });
  const b = makeQueue('b', { cohort: 'c', nominal: G(24), guaranteed: G(16) });
  const d = makeQueue('d', { cohort: 'c', nominal: G(0) });
  const qs = new Map<string, QueueSpec>([a, b, d].map((q) => [q.name, q]));

  it('lends unused nominal above the guarantee', () => {
    expect(cohortLendable(d, qs, new Map()).gpuMilli).toBe(8000 + 8000);
    expect(checkQuota(a, qs, new Map(), G(16)).ok).toBe(true);
  });

  it('a GPU lent to one queue is not lent again to another', () => {
    const usage = new Map([['a', used(16)]]); // a borrows b's 8 lendable GPUs
    expect(cohortLendable(d, qs, usage).gpuMilli).toBe(0);
    expect(checkQuota(d, qs, usage, G(1))).toEqual({ ok: false, reason: 'queue d quota: needs to borrow 1 GPU, cohort c can lend 0 GPU', cohortShort: true });
  });

  it('only a cohort that has nothing left to lend is "short" (reclaim can help); a borrowing limit is final', () => {
    const capped = makeQueue('e', { cohort: 'c', nominal: G(0), borrowingLimit: G(0) });
    const withE = new Map(qs).set('e', capped);
    const usage = new Map([['a', used(16)]]);
    expect(checkQuota(capped, withE, usage, G(1))).toEqual({ ok: false, reason: 'queue e quota: borrowing 1 GPU would exceed its borrowing limit 0 GPU' });
  });
});
