import { describe, expect, it } from 'vitest';
import { runAdmissionBench } from './admission-bench.ts';

describe('admission benchmark', () => {
  it('decides every job of an oversized backlog: admitted or waiting with a reason, never over capacity', () => {
    let t = 0;
    const r = runAdmissionBench({ nodes: 64, gpusPerNode: 8, backlog: 2, seed: 1, now: () => (t += 5) });
    const waitingTotal = Object.values(r.waiting).reduce((a, b) => a + b, 0);
    expect(r.admitted + waitingTotal).toBe(r.jobs);
    expect(r.admitted).toBeGreaterThan(0);
    expect(waitingTotal).toBeGreaterThan(0); // twice the cluster: something must wait
    expect(r.cycleMs).toBe(5);
  });
});
