import { describe, expect, it } from 'vitest';
import { runStartupBench } from './startup-bench.ts';

describe('sits bench startup', () => {
  it('times the compiled command in fresh processes and reads each one’s peak RSS', async () => {
    const r = await runStartupBench({ runs: 2 });
    expect(r.node).toBe(process.version);
    expect(r.cases.map((c) => c.name)).toEqual(['sits --version', 'sits lint pod.yaml']);
    for (const c of [...r.cases, r.baseline]) {
      expect(c.runs).toBe(2);
      expect(c.wallMs.p50).toBeGreaterThan(0);
      expect(c.wallMs.p50).toBeLessThanOrEqual(c.wallMs.max);
      // A Node process holds tens of MiB; a missing or unparsed RSS report would be NaN or 0.
      expect(c.maxRssMiB).toBeGreaterThan(20);
      expect(c.maxRssMiB).toBeLessThan(2048);
    }
  });
});
