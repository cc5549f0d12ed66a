import { describe, expect, it } from 'vitest';
import { runDemo } from './demo.ts';

describe('demo: training figures by the step-time model (issue 19)', () => {
  const r = runDemo({ seed: 1, hours: 1, profiles: ['sits', 'kube-default'] });

  it('every profile reports training tokens/s per job and a GPU utilisation in (0, 100]', () => {
    for (const p of r.results) {
      expect(p.training.tokensPerSec).toBeGreaterThan(0);
      expect(p.training.gpuUtilizationPct).toBeGreaterThan(0);
      expect(p.training.gpuUtilizationPct).toBeLessThanOrEqual(100);
    }
  });

  it('every profile reports a post-hoc training JCT (issue 33): a p99 at least the mean, and no gang faster than its ideal placement', () => {
    for (const p of r.results) {
      expect(p.training.jctSec.mean).toBeGreaterThan(0);
      expect(p.training.jctSec.p99).toBeGreaterThanOrEqual(p.training.jctSec.mean);
      // The ideal step is the fastest layout the job accepts, so every real placement's ratio is at least 1.
      expect(p.training.meanSlowdown).toBeGreaterThanOrEqual(1);
    }
  });

  it('is deterministic by seed', () => {
    expect(runDemo({ seed: 1, hours: 1, profiles: ['sits', 'kube-default'] })).toEqual(r);
  });
});
