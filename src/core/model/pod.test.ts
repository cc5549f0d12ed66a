import { describe, expect, it } from 'vitest';
import { makePod, totalGpuMilli, wholeGpus } from './pod.ts';

describe('makePod', () => {
  it('defaults: 1 CPU, 1 GiB, whole GPUs, any model, queue default, no gang', () => {
    const p = makePod('p', { gpuCount: 2 });
    expect(p).toEqual({
      id: 'p',
      request: { cpuMilli: 1000, memoryMiB: 1024, gpuCount: 2, gpuMilli: 1000 },
      gpuModels: [],
      minComputeCapability: 0,
      priority: 0,
      queue: 'default',
      tolerations: [],
      nodeSelector: {},
    });
    expect('gang' in p).toBe(false);
  });

  it('a CPU-only pod has gpuMilli 0 whatever was asked', () => {
    expect(makePod('c', { gpuMilli: 500 }).request.gpuMilli).toBe(0);
  });

  it('keeps a fractional share, GPU memory and the extras', () => {
    const p = makePod('f', { gpuCount: 1, gpuMilli: 250, gpuMemoryMiB: 8192 }, { gang: 'g', priority: 5, gpuModels: ['L4'], minComputeCapability: 89 });
    expect(p.request).toEqual({ cpuMilli: 1000, memoryMiB: 1024, gpuCount: 1, gpuMilli: 250, gpuMemoryMiB: 8192 });
    expect(p.gang).toBe('g');
    expect(p.priority).toBe(5);
    expect(p.gpuModels).toEqual(['L4']);
    expect(p.minComputeCapability).toBe(89);
  });
});

describe('wholeGpus / totalGpuMilli', () => {
  it('count whole devices only for whole-GPU requests, and total milli for all', () => {
    const whole = makePod('w', { gpuCount: 4 }).request;
    const frac = makePod('f', { gpuCount: 1, gpuMilli: 300 }).request;
    const none = makePod('n', {}).request;
    expect([wholeGpus(whole), totalGpuMilli(whole)]).toEqual([4, 4000]);
    expect([wholeGpus(frac), totalGpuMilli(frac)]).toEqual([0, 300]);
    expect([wholeGpus(none), totalGpuMilli(none)]).toEqual([0, 0]);
  });
});
