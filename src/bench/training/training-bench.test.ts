import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { benchTraining, referenceNode, trainingCluster, trainingNetwork, trainingWorkload, TRAINING_NETWORK } from './training-bench.ts';
import { seededRng } from '../../core/ports.ts';
import { loadClusterText } from '../../formats/cluster-file.ts';

const EXAMPLE = new URL('../../../examples/training-cluster.yaml', import.meta.url).pathname;

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

describe('sits bench training on a cluster and network of one’s own', () => {
  const loaded = loadClusterText(EXAMPLE, readFileSync(EXAMPLE, 'utf8'));
  if (!loaded.ok) throw loaded.error;
  const nodes = loaded.value;

  it('reports completion as well as rate: JCT is wait plus run, per job, so mean JCT ≥ mean wait and p99 ≥ p50', () => {
    const r = benchTraining({ seed: 3, hours: 1.5 });
    for (const d of Object.values(r.details)) {
      expect(d.jctSec.p99).toBeGreaterThanOrEqual(d.jctSec.p50);
      expect(d.jctSec.p50).toBeGreaterThanOrEqual(d.waitSec.p50);
      expect(d.jctSec.mean).toBeGreaterThan(0);
      expect(d.makespanHours * 3600).toBeGreaterThanOrEqual(d.jctSec.p99 - 1.5 * 3600);
    }
    const k = r.details['kube-default'];
    const s = r.details.sits;
    expect(r.ratios.meanJct).toBeCloseTo((s?.jctSec.mean ?? 0) / (k?.jctSec.mean ?? 1), 1);
    // The tails as well, which the grid summarises.
    expect(r.ratios.jctP99).toBeCloseTo((s?.jctSec.p99 ?? 0) / (k?.jctSec.p99 ?? 1), 1);
    // At this light load no job waits under either policy: no difference, not a missing ratio.
    expect([s?.waitSec.p99, k?.waitSec.p99]).toEqual([0, 0]);
    expect(r.ratios.waitP99).toBe(1);
    expect(r.network).toEqual(TRAINING_NETWORK);
  });

  it('sizes the workload to the given cluster and measures the ideal on its fastest node', () => {
    expect(referenceNode(trainingCluster()).shape).toBe('hgx-a100');
    expect(referenceNode(nodes).shape).toBe('dgx-h100');
    const r = benchTraining({ seed: 2, hours: 2, cluster: nodes });
    expect(r.cluster).toMatchObject({ nodes: 12, gpus: 64, racks: 3 });
    for (const d of Object.values(r.details)) expect(d.jobsNeverStarted).toBe(0);
    // Arrivals scale with the cluster's GPUs: half the GPUs, about half the jobs of the default cluster.
    const base = benchTraining({ seed: 2, hours: 2 });
    expect(r.workload.jobs).toBeLessThan(base.workload.jobs);
  });

  it('a slower network between nodes slows the multi-node jobs, and oversubscription only the cross-rack ones', () => {
    expect(trainingNetwork({ nicGbps: 400, nicsPerNode: 4, oversubscription: 4 })).toMatchObject({
      nicGBps: { rack: 50, block: 12.5, cluster: 12.5 },
      nicsPerNode: 4,
    });
    const fast = benchTraining({ seed: 3, hours: 1.5, network: { nicGbps: 800, nicsPerNode: 4 } });
    const slow = benchTraining({ seed: 3, hours: 1.5, network: { nicGbps: 25 } });
    expect(slow.policies['kube-default'].tokensPerSec).toBeLessThan(fast.policies['kube-default'].tokensPerSec);
    expect(slow.workload.ideal.tokensPerSec).toBeLessThan(fast.workload.ideal.tokensPerSec);
    expect(slow.network.nicGBps.rack).toBe(25 / 8);
  });

  it('runs each policy through the queue cycle the live scheduler runs: SITS reserves for a gang that waited 4 h, kube-default does not', () => {
    const r = benchTraining({ seed: 1 });
    const sits = r.details.sits?.waitedFor ?? {};
    const kube = r.details['kube-default']?.waitedFor ?? {};
    expect(sits.reservation ?? 0).toBeGreaterThan(0);
    expect(kube.reservation ?? 0).toBe(0);
    expect(kube.capacity ?? 0).toBeGreaterThan(0);
    // The hold for a better placement is SITS's alone too (ADR 0188).
    expect(sits['better-placement'] ?? 0).toBeGreaterThan(0);
    expect(kube['better-placement'] ?? 0).toBe(0);
  });
});
