import { describe, expect, it } from 'vitest';
import { deservedGpu } from './fair-share.ts';
import { makeQueue } from './model.ts';

const G = (n: number) => ({ gpuMilli: n * 1000, cpuMilli: Infinity, memoryMiB: Infinity });
const deserved = (inputs: [ReturnType<typeof makeQueue>, number][], capacity: number): Record<string, number> =>
  Object.fromEntries(
    [
      ...deservedGpu(
        inputs.map(([queue, d]) => ({ queue, demandGpuMilli: d * 1000 })),
        capacity * 1000,
      ),
    ].map(([k, v]) => [k, Math.round(v) / 1000]),
  );

describe('deserved GPUs (weighted water-filling)', () => {
  it('splits by weight, capped at demand; what a capped queue leaves flows to the others', () => {
    expect(
      deserved(
        [
          [makeQueue('g', { weight: 4 }), 100],
          [makeQueue('s', { weight: 2 }), 100],
          [makeQueue('b', { weight: 1 }), 100],
        ],
        56,
      ),
    ).toEqual({ g: 32, s: 16, b: 8 });
    expect(
      deserved(
        [
          [makeQueue('g', { weight: 4 }), 8],
          [makeQueue('s', { weight: 2 }), 100],
          [makeQueue('b', { weight: 1 }), 100],
        ],
        56,
      ),
    ).toEqual({ g: 8, s: 32, b: 16 });
  });

  it('a queue is entitled to its nominal quota (the quota it owns) before the rest is split by weight', () => {
    const a = makeQueue('a', { cohort: 'c', nominal: G(16) });
    const b = makeQueue('b', { cohort: 'c', nominal: G(4) });
    const c = makeQueue('c', { cohort: 'c', nominal: G(4) });
    expect(
      deserved(
        [
          [a, 24],
          [b, 8],
          [c, 8],
        ],
        24,
      ),
    ).toEqual({ a: 16, b: 4, c: 4 });
    // Idle quota is shared by weight among the queues that want more.
    expect(
      deserved(
        [
          [a, 0],
          [b, 24],
          [c, 24],
        ],
        24,
      ),
    ).toEqual({ a: 0, b: 12, c: 12 });
  });

  it('guarantees come first, then nominal quotas by weight when they add up to more than the cluster', () => {
    const a = makeQueue('a', { cohort: 'c', nominal: G(16), weight: 1 });
    const b = makeQueue('b', { cohort: 'c', nominal: G(16), weight: 3, guaranteed: G(2) });
    expect(
      deserved(
        [
          [a, 100],
          [b, 100],
        ],
        16,
      ),
    ).toEqual({ a: 3.5, b: 12.5 });
  });
});
