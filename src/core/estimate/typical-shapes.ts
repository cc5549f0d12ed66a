/**
 * The typical pod shapes of a workload (FGD, ATC '23, ../shared/docs/fgd-reproduction.md §5): what the
 * fragmentation-aware plugins plan for and the expected-workload estimate builds.
 */

export interface TypicalShape {
  readonly cpuMilli: number;
  /** Per-GPU milli, 0 for CPU-only. */
  readonly gpuMilli: number;
  readonly gpuCount: number;
  /** Allowed models; empty = any. */
  readonly gpuModels: readonly string[];
  /** Popularity weight; the weights of a workload sum to 1. */
  readonly weight: number;
  /** Mean memory of the shape's pods, when known (FGD's fragment ignores it; SITS's memory term uses it). */
  readonly memoryMiB?: number;
}

export interface PodShapeInput {
  readonly cpuMilli: number;
  readonly gpuMilli: number;
  readonly gpuCount: number;
  readonly gpuModels: readonly string[];
  /** Optional: when given, each typical shape carries the mean memory of its pods. */
  readonly memoryMiB?: number;
}

/**
 * The typical workload: the most frequent shapes covering ≥ `coverage` of pods, weights renormalised to 1.
 * Ties in count go to the larger key (cpu, then milli, then count, then model string), as the paper's code.
 */
export function typicalShapes(pods: readonly PodShapeInput[], coverage = 0.95): TypicalShape[] {
  // Memory is not part of the key (a shape is what FGD calls one): it is averaged over the shape's pods.
  const counts = new Map<string, { shape: PodShapeInput; count: number; memSum: number; memCount: number }>();
  for (const p of pods) {
    const shape =
      p.gpuCount === 0 || p.gpuMilli === 0
        ? { cpuMilli: p.cpuMilli, gpuMilli: 0, gpuCount: 0, gpuModels: [] }
        : { cpuMilli: p.cpuMilli, gpuMilli: p.gpuMilli, gpuCount: p.gpuCount, gpuModels: p.gpuModels };
    const key = `${shape.cpuMilli}|${shape.gpuMilli}|${shape.gpuCount}|${shape.gpuModels.join('|')}`;
    let e = counts.get(key);
    if (e === undefined) {
      e = { shape, count: 0, memSum: 0, memCount: 0 };
      counts.set(key, e);
    }
    e.count++;
    if (p.memoryMiB !== undefined) {
      e.memSum += p.memoryMiB;
      e.memCount++;
    }
  }
  const entries = [...counts.values()].sort((a, b) => {
    if (a.count !== b.count) return b.count - a.count;
    const x = a.shape;
    const y = b.shape;
    if (x.cpuMilli !== y.cpuMilli) return y.cpuMilli - x.cpuMilli;
    if (x.gpuMilli !== y.gpuMilli) return y.gpuMilli - x.gpuMilli;
    if (x.gpuCount !== y.gpuCount) return y.gpuCount - x.gpuCount;
    const mx = x.gpuModels.join('|');
    const my = y.gpuModels.join('|');
    return mx === my ? 0 : mx < my ? 1 : -1;
  });
  const n = pods.length;
  const out: { shape: PodShapeInput; count: number; memSum: number; memCount: number }[] = [];
  let c = 0;
  for (const e of entries) {
    out.push(e);
    c += e.count;
    if (c >= coverage * n) break;
  }
  return out.map((e) => ({
    ...e.shape,
    gpuModels: [...e.shape.gpuModels],
    weight: e.count / n / (c / n),
    ...(e.memCount > 0 ? { memoryMiB: e.memSum / e.memCount } : {}),
  }));
}
