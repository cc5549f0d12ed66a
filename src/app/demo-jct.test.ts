import { describe, expect, it } from 'vitest';
import { nodeGpuModel } from '../core/model/node.ts';
import { DEFAULT_TRAINING_MODEL, idealShares, sharesOf, stepTime } from '../core/estimate/step-time.ts';
import { demoCluster } from './demo-cluster.ts';
import { idealStepsIn, jobJctMs, trainingJct, type TrainingRun } from './demo-jct.ts';

const run = (waitSec: number, traceSec: number, slowdown: number): TrainingRun => ({
  waitMs: waitSec * 1000,
  traceMs: traceSec * 1000,
  stepSec: 0.2 * slowdown,
  idealStepSec: 0.2,
});

describe('demo training JCT, post hoc (ADR 0192)', () => {
  it('a gang’s JCT is its wait plus its trace duration scaled by its step over the ideal step', () => {
    expect(jobJctMs({ waitMs: 60_000, traceMs: 1_000_000, stepSec: 0.3, idealStepSec: 0.2 })).toBeCloseTo(1_560_000, 6);
    expect(jobJctMs(run(0, 1000, 1))).toBe(1_000_000);
  });

  it('mean and nearest-rank p99 over hand-made gangs, in whole seconds', () => {
    // 1000, 500 + 2000×2 = 4500 and 600×1.5 = 900 s: mean 2133.3, p99 the largest of three.
    expect(trainingJct([run(0, 1000, 1), run(500, 2000, 2), run(0, 600, 1.5)])).toEqual({ mean: 2133, p99: 4500 });
    // JCTs 1..200 s: mean 100.5, nearest-rank p99 the 198th.
    expect(trainingJct(Array.from({ length: 200 }, (_, i) => run(0, i + 1, 1)))).toEqual({ mean: 101, p99: 198 });
    expect(trainingJct([])).toEqual({ mean: 0, p99: 0 });
  });

  const nodes = demoCluster();
  const idealStepSec = idealStepsIn(nodes, DEFAULT_TRAINING_MODEL);
  const of = (model: string) => nodes.find((n) => nodeGpuModel(n) === model);
  const ideal = (model: string, gpus: number): number => {
    const n = of(model);
    if (n === undefined) throw new Error(model);
    return stepTime(DEFAULT_TRAINING_MODEL, idealShares({ gpuModel: model, topology: n.topology, location: n.location }, gpus)).stepSec;
  };

  it('the ideal step is the fastest whole-node layout among the GPU models the job accepts', () => {
    const both = ['H100-SXM', 'A100-80G'];
    expect(ideal('A100-80G', 8)).toBeGreaterThan(ideal('H100-SXM', 8));
    expect(idealStepSec(8, both)).toBe(ideal('H100-SXM', 8));
    expect(idealStepSec(16, both)).toBe(ideal('H100-SXM', 16));
    expect(idealStepSec(8, ['A100-80G'])).toBe(ideal('A100-80G', 8));
    expect(idealStepSec(4, [])).toBe(Math.min(ideal('H100-SXM', 4), ideal('A100-80G', 4), ideal('L4', 4)));
    expect(() => idealStepSec(8, ['B200'])).toThrow(/no node takes/);
  });

  it('a real placement split over two nodes is slower than the ideal one', () => {
    const [a, b] = nodes.filter((n) => nodeGpuModel(n) === 'H100-SXM');
    if (a === undefined || b === undefined) throw new Error('two H100 nodes expected');
    const split = sharesOf(
      [
        { node: a.name, gpus: [0, 1, 2, 3] },
        { node: b.name, gpus: [0, 1, 2, 3] },
      ],
      (n) => nodes.find((x) => x.name === n),
    );
    expect(stepTime(DEFAULT_TRAINING_MODEL, split).stepSec).toBeGreaterThan(idealStepSec(8, ['H100-SXM', 'A100-80G']));
  });
});
