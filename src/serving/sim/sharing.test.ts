import { describe, expect, it } from 'vitest';
import { ElasticTrainingPool, type SharingConfig } from './sharing.ts';

const cfg = (c: Partial<SharingConfig> = {}): SharingConfig => ({
  clusterGpus: 8,
  servingGpus: 1,
  trainingMinGpus: 4,
  checkpointIntervalSec: 60,
  restartSec: 30,
  regrowDelaySec: 120,
  preemptible: false,
  fromSec: 0,
  toSec: 10_000,
  ...c,
});

describe('an elastic training job lending GPUs to a service', () => {
  it('gives the service its own GPU at once, then lends one at the next checkpoint boundary', () => {
    const p = new ElasticTrainingPool(cfg());
    expect(p.request(10, 1)).toBe(10);
    expect(p.request(70, 1)).toBe(120);
    expect(p.request(120, 1)).toBe(120);
  });
  it('lends at once when preemptible, never below its minimum', () => {
    const p = new ElasticTrainingPool(cfg({ preemptible: true }));
    expect(p.request(0, 1)).toBe(0);
    expect(p.request(5, 1)).toBe(5);
    expect(p.request(5, 1)).toBe(5);
    expect(p.request(5, 1)).toBe(5);
    // 8 GPUs: the service holds 4, the job is at its minimum of 4.
    expect(p.request(5, 1)).toBeUndefined();
    expect(p.report().refused).toBe(1);
  });
  it('accounts the GPU-hours lent, and the lending cost: resize stalls and GPUs idle until the job regrows', () => {
    const p = new ElasticTrainingPool(cfg({ preemptible: true, regrowDelaySec: 100, restartSec: 30 }));
    p.request(0, 1); // its own GPU
    p.request(0, 1); // lent at 0: the job restarts on 6 GPUs
    p.release(3600, 1); // given back after an hour; the job regrows 100 s later onto 7 GPUs
    p.finish(7200);
    const r = p.report();
    expect(r.trainingGpuHoursLent).toBeCloseTo(1, 9);
    // Stalls: 30 s × 6 GPUs at the shrink, 30 s × 7 at the regrow; idle: 1 GPU for 100 s.
    expect(r.trainingGpuHoursLost).toBeCloseTo((30 * 6 + 30 * 7 + 100) / 3600, 9);
    expect([r.shrinks, r.regrows]).toEqual([1, 1]);
  });
  it('forgets a loan the service no longer wants before the boundary: no resize happens', () => {
    const p = new ElasticTrainingPool(cfg());
    p.request(0, 1);
    const at = p.request(10, 1) as number;
    p.cancel(20, 1, at);
    p.finish(1000);
    expect(p.report()).toMatchObject({ shrinks: 0, trainingGpuHoursLent: 0, trainingGpuHoursLost: 0 });
  });
  it('counts only the reporting window', () => {
    const p = new ElasticTrainingPool(cfg({ preemptible: true, fromSec: 1800, toSec: 3600 }));
    p.request(0, 1);
    p.request(0, 1);
    p.finish(7200);
    expect(p.report().trainingGpuHoursLent).toBeCloseTo(0.5, 9);
  });
});
