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

  it('is deterministic by seed', () => {
    expect(runDemo({ seed: 1, hours: 1, profiles: ['sits', 'kube-default'] })).toEqual(r);
  });
});
