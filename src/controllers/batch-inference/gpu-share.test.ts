import { describe, expect, it } from 'vitest';
import { GpuShare } from './gpu-share.ts';

/** Two always-backlogged jobs on `budget` GPUs, reconciled every 100 ms; a yielding worker takes `drainMs` to go. */
function run(weights: Record<string, number>, budget: number, horizonMs: number, drainMs: number): Record<string, number> {
  const s = new GpuShare({ budgetGpus: budget, quantumMs: 1000 });
  const running = new Map<string, number>();
  const leaving = new Map<string, number>();
  for (let t = 0; t < horizonMs; t += 100) {
    for (const [tenant, weight] of Object.entries(weights)) {
      const n = s.workers(`job-${tenant}`, { name: tenant, weight }, 2, 1, t);
      const had = running.get(tenant) ?? 0;
      if (n < had && !leaving.has(tenant)) leaving.set(tenant, t + drainMs);
      const gone = leaving.get(tenant);
      if (gone !== undefined && t >= gone) {
        s.release(`job-${tenant}`, had - 1, t);
        leaving.delete(tenant);
        running.set(tenant, had - 1);
      } else if (n > had) running.set(tenant, n);
    }
  }
  const used = s.used(horizonMs);
  const total = [...used.values()].reduce((a, x) => a + x, 0);
  return Object.fromEntries([...used].map(([k, v]) => [k, (100 * v) / total]));
}

describe('GpuShare', () => {
  it('divides GPU time between backlogged tenants by weight, yielding at slice ends', () => {
    const gb = run({ gold: 4, bronze: 1 }, 2, 600_000, 300);
    expect(gb.gold).toBeGreaterThan(75);
    expect(gb.gold).toBeLessThan(85);
    const ss = run({ silver: 2, bronze: 1 }, 2, 600_000, 300);
    expect(Math.abs((ss.silver ?? 0) - 66.7)).toBeLessThan(5);
    const eq = run({ a: 1, b: 1 }, 3, 600_000, 300);
    expect(Math.abs((eq.a ?? 0) - 50)).toBeLessThan(5);
  });

  it('gives a lone tenant every GPU it asks for, and a finished job frees its GPUs', () => {
    const s = new GpuShare({ budgetGpus: 2, quantumMs: 1000 });
    expect(s.workers('a', { name: 'gold', weight: 4 }, 3, 1, 0)).toBe(2);
    expect(s.workers('b', { name: 'bronze', weight: 1 }, 1, 1, 0)).toBe(0);
    s.done('a', 5000);
    expect(s.workers('b', { name: 'bronze', weight: 1 }, 1, 1, 5000)).toBe(1);
    expect(s.used(6000).get('gold')).toBe(10_000);
    expect(s.used(6000).get('bronze')).toBe(1000);
  });

  it('refuses a budget or quantum that cannot work, naming the field', () => {
    expect(() => new GpuShare({ budgetGpus: 0, quantumMs: 1000 })).toThrow(/budgetGpus/);
    expect(() => new GpuShare({ budgetGpus: 1, quantumMs: 0 })).toThrow(/quantumMs/);
  });
});
