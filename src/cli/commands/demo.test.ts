import { describe, expect, it } from 'vitest';
import type { DemoProfileResult, DemoResult } from '../../app/demo.ts';
import { renderDemo } from './demo.ts';

const profile = (name: string, x: number): DemoProfileResult => ({
  profile: name,
  gpuAllocationPct: 80 + x,
  fragmentationPct: 30 - x,
  multiGpuJobs: { started: 10, oneNvlinkDomainPct: 70, oneRackPct: 90 },
  gangWaitSec: { p50: 0, p99: 5960 + x },
  jobsStarted: 100,
  jobsNeverStarted: 0,
  training: { tokensPerSec: 347_263, gpuUtilizationPct: 99.97, jctSec: { mean: 4729 + x, p99: 14_968 + x }, meanSlowdown: 1.38 },
});

describe('sits demo: the table', () => {
  it('renders every figure, the post-hoc JCT rows with their note, and the verdict (golden)', () => {
    const r: DemoResult = {
      seed: 1,
      cluster: { nodes: 32, gpus: 256, racks: 4 },
      workload: { jobs: 100, training: 10, inference: 50, fractional: 40, hours: 8 },
      results: [profile('sits', 0), profile('kube-default', 10)],
    };
    expect(renderDemo(r)).toBe(
      [
        'SITS demo — seed 1: 32 nodes / 256 GPUs in 4 racks (8×H100, 12×A100, 12×L4 nodes); 100 jobs over 8 h (10 training gangs of 2–64 GPUs, 50 inference, 40 fractional)',
        '',
        'metric                                      sits  kube-default',
        '─────────────────────────────────────────  ─────  ────────────',
        'GPU allocation % (time-avg)                80.00         90.00',
        'fragmentation % of idle GPU (FGD measure)  30.00         20.00',
        'multi-GPU jobs in one NVLink domain %      70.00         70.00',
        'multi-GPU jobs in one rack %               90.00         90.00',
        'gang wait p50 (s)                              0             0',
        'gang wait p99 (s)                           5960          5970',
        'jobs started                                 100           100',
        'jobs never started                             0             0',
        'training k tokens/s per job (step model)     347           347',
        'training GPU utilisation % (step model)    99.97         99.97',
        'training JCT mean (s, post-hoc*)            4729          4739',
        'training JCT p99 (s, post-hoc*)            14968         14978',
        '* post hoc: wait + trace duration × (step on its GPUs / ideal step), step model; GPUs were held for the trace duration',
        'sits vs kube-default: GPU allocation -10.00 pp, fragmentation +10.00 pp',
        '',
      ].join('\n'),
    );
  });
});
