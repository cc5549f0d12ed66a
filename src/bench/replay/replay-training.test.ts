import { describe, expect, it } from 'vitest';
import { makePod } from '../../core/model/pod.ts';
import { benchNodes } from '../throughput/workload.ts';
import { replay } from './replay.ts';
import { jobUnits, type ReplayUnit } from './units.ts';

const H = 3600e3;

describe('replay: training tokens/s and GPU utilisation by the step-time model (issue 19)', () => {
  const nodes = benchNodes(2, 8);

  it('a unit inside one node computes nearly all the time; one spread over two zones waits on the network', () => {
    const one = replay(nodes, jobUnits([{ name: 'one', submitS: 0, durationS: 100, gpus: 8, group: 'g', line: 2 }]), { policy: 'sits' });
    const two = replay(benchNodes(2, 8, 2), jobUnits([{ name: 'two', submitS: 0, durationS: 100, gpus: 16, group: 'g', line: 2 }]), { policy: 'sits' });
    expect(one.training.gpuUtilizationPct).toBeGreaterThan(99);
    expect(one.training.units).toBe(1);
    expect(two.training.units).toBe(1);
    expect(two.training.gpuUtilizationPct).toBeLessThan(one.training.gpuUtilizationPct);
    expect(two.training.tokensPerSec).toBeGreaterThan(one.training.tokensPerSec);
    expect(two.training.tokensPerSec).toBeLessThan(2 * one.training.tokensPerSec);
  });

  it('fractional-GPU and CPU-only units are not training units', () => {
    const frac: ReplayUnit = { id: 'f', arrivalMs: 0, durationMs: H, deadlineMs: Number.POSITIVE_INFINITY, pod: makePod('f', { gpuCount: 1, gpuMilli: 500 }) };
    const cpu: ReplayUnit = { id: 'c', arrivalMs: 0, durationMs: H, deadlineMs: Number.POSITIVE_INFINITY, pod: makePod('c', { cpuMilli: 1000 }) };
    const r = replay(nodes, [frac, cpu], { policy: 'sits' });
    expect(r.training).toEqual({ units: 0, tokensPerSec: 0, gpuUtilizationPct: 0 });
  });
});
