import { describe, expect, it } from 'vitest';
import { makePod } from '../../model/pod.ts';
import { seededRng } from '../../ports.ts';
import { ClusterState } from '../../snapshot/cluster-state.ts';
import { nodeInState, nodeSpec, oneNode } from '../fgd/test-helpers.ts';
import { bestFitGpu, lowestFreeGpus, pickBestFit, pickRandomFit } from './gpu-pick.ts';
import { balancedAllocationScore, leastAllocatedScore } from './kube-default.ts';
import { bestFitScore, dotProdScore, gpuClusteringScore, gpuPackingScore } from './paper-scores.ts';

describe('paper baselines (fgd-reproduction.md §4), hand-computed', () => {
  // 8 GPUs free [1000, 1000, 500, 0, 1000, 1000, 1000, 1000] → F = 6500; 64 cores left.
  const { node } = oneNode(8, 'G2', 96000, [1000, 1000, 500, 0, 1000, 1000, 1000, 1000], 64000);
  const share = makePod('s', { cpuMilli: 8000, gpuCount: 1, gpuMilli: 500 });
  const whole2 = makePod('w', { cpuMilli: 16000, gpuCount: 2 });

  it('DotProd: trunc(100 (1 − [(cpuLeft/128k)(cpu/128k) + (F/8k)(n·m/8k)] / 2))', () => {
    // (64000/128000)(8000/128000) = 0.03125; (6500/8000)(500/8000) = 0.05078125; s = 1 − 0.08203125/2 = 0.958984375
    expect(dotProdScore(share, node)).toBe(95);
  });
  it('BestFit: trunc(100 (1 − [0.5 (cpuLeft − cpu)/128k + 0.5 (F − n·m)/8k]))', () => {
    // 0.5 · 56000/128000 = 0.21875; 0.5 · 6000/8000 = 0.375 → 1 − 0.59375 = 0.40625
    expect(bestFitScore(share, node)).toBe(40);
  });
  it('GpuPacking: a partly used GPU that fits → u = 0 → max(100 − Σ(free·100 div 1000) div 10, 50)', () => {
    expect(gpuPackingScore(share, node)).toBe(100 - Math.trunc(50 / 10)); // takes the 500 GPU: 95
    // Two whole GPUs on a used node: u = 2 → max(50 − 2, 33) = 48
    expect(gpuPackingScore(whole2, node)).toBe(48);
    const idle = oneNode(8, 'G2', 96000, Array(8).fill(1000), 96000).node;
    expect(gpuPackingScore(whole2, idle)).toBe(Math.max(33 - 8, 8)); // all free: max(33 − k, k)
    expect(gpuPackingScore(makePod('c', { cpuMilli: 1 }), node)).toBe(0);
  });
  it('GpuClustering: base = 25 (8000 − F) div 8000, +75 same kind only, +50 mixed, +25 no GPU pod', () => {
    const state = new ClusterState([nodeSpec('a', 8, 'G2', 96000), nodeSpec('b', 8, 'G2', 96000)]);
    const a = nodeInState(state, 'a', Array(8).fill(1000), 96000);
    expect(gpuClusteringScore(share, a)).toBe(0 + 25);
    state.allocate({ podId: 'x', node: 'a', gpus: [0], gpuMilli: 500, cpuMilli: 1, memoryMiB: 1, priority: 0, queue: 'q' });
    expect(gpuClusteringScore(share, a)).toBe(Math.trunc((25 * 500) / 8000) + 75);
    expect(gpuClusteringScore(whole2, a)).toBe(Math.trunc((25 * 500) / 8000) + 0);
    state.allocate({ podId: 'y', node: 'a', gpus: [1, 2], gpuMilli: 1000, cpuMilli: 1, memoryMiB: 1, priority: 0, queue: 'q' });
    expect(gpuClusteringScore(share, a)).toBe(Math.trunc((25 * 2500) / 8000) + 50);
    expect(gpuClusteringScore(makePod('c', { cpuMilli: 1 }), a)).toBe(0);
  });
  it('kube-default scores over CPU and memory', () => {
    const { node: n } = oneNode(1, 'T4', 10000, [1000], 10000);
    const p = makePod('p', { cpuMilli: 5000, memoryMiB: 0 });
    expect(leastAllocatedScore(p, n)).toBe(Math.trunc((50 + 100) / 2));
    expect(balancedAllocationScore(p, n)).toBe(Math.trunc((1 - 0.25) * 100));
  });
});

describe('GPU pick', () => {
  const { node } = oneNode(4, 'T4', 16000, [700, 1000, 300, 700], 16000);
  it('best fit: least free that fits, ties to the lowest index; whole GPUs: lowest-index fully free', () => {
    expect(bestFitGpu(node, 250)).toBe(2);
    expect(bestFitGpu(node, 500)).toBe(0);
    expect(pickBestFit(makePod('w', { gpuCount: 1 }), node)).toEqual([1]);
    expect(lowestFreeGpus(node, 2)).toBeUndefined();
    expect(lowestFreeGpus(node, 3, 300)).toEqual([0, 1, 2]);
  });
  it('random: one of the fitting GPUs, drawn from the RNG', () => {
    const seen = new Set<number>();
    const rng = seededRng(1);
    for (let i = 0; i < 50; i++) seen.add((pickRandomFit(makePod('s', { gpuCount: 1, gpuMilli: 600 }), node, rng) as number[])[0] as number);
    expect([...seen].sort()).toEqual([0, 1, 3]);
  });
});
