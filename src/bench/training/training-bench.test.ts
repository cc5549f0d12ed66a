import { describe, expect, it } from 'vitest';
import { benchTraining, trainingCluster, trainingWorkload } from './training-bench.ts';
import { seededRng } from '../../core/ports.ts';

describe('sits bench training', () => {
  const r = benchTraining({ seed: 3, hours: 1.5, extraProfiles: ['sits-step'] });

  it('reports exactly issue 19’s figures per policy, the rest outside "policies"', () => {
    expect(Object.keys(r.policies)).toEqual(['kube-default', 'round-robin', 'sits']);
    for (const t of Object.values(r.policies)) {
      expect(Object.keys(t)).toEqual(['tokensPerSec', 'gpuUtilizationPct', 'gangsInOneNvlinkDomainPct']);
      expect(t.tokensPerSec).toBeGreaterThan(0);
      expect(t.gpuUtilizationPct).toBeGreaterThan(0);
      expect(t.gpuUtilizationPct).toBeLessThanOrEqual(100);
    }
    expect(Object.keys(r.extra)).toEqual(['sits-step']);
    expect(r.details.sits?.jobsNeverStarted).toBe(0);
  });

  it('is deterministic by seed', () => {
    expect(JSON.stringify(benchTraining({ seed: 3, hours: 1.5, extraProfiles: ['sits-step'] }))).toBe(JSON.stringify(r));
    expect(JSON.stringify(benchTraining({ seed: 4, hours: 1.5 }).policies)).not.toBe(JSON.stringify(r.policies));
  });

  it('the cluster mixes NVSwitch, NVLink-mesh and PCIe-only nodes in four racks; the jobs are 2–32 GPUs', () => {
    const nodes = trainingCluster();
    expect(new Set(nodes.map((n) => n.location.rack)).size).toBe(4);
    expect(nodes.reduce((s, n) => s + n.gpus.length, 0)).toBe(128);
    expect(new Set(nodes.map((n) => n.shape))).toEqual(new Set(['hgx-a100', 'a100-pcie', 'a800x4']));
    const jobs = trainingWorkload(seededRng(1), { hours: 8, load: 1 });
    expect(new Set(jobs.map((j) => j.gpus))).toEqual(new Set([2, 4, 8, 16, 32]));
    expect(jobs.every((j, i) => i === 0 || j.arrivalMs >= (jobs[i - 1]?.arrivalMs ?? 0))).toBe(true);
  });
});
