/**
 * The embedded default for `npm start`: 32 nodes in 4 racks and 2 blocks — 8×H100 (dgx-h100), 12×A100
 * (hgx-a100) and 12×L4 (l4x8), 256 GPUs — and a seeded mixed workload of training gangs (2–64 GPUs),
 * inference pods and fractional-GPU pods arriving and finishing in virtual time.
 */
import type { NodeSpec } from '../core/model/node.ts';
import { NODE_SHAPES, nodeOfShape } from '../core/model/presets.ts';
import { makePod, type GangSpec, type PodSpec } from '../core/model/pod.ts';
import type { Rng } from '../core/ports.ts';

const RACKS: readonly { rack: string; block: string; groups: readonly [string, number][] }[] = [
  { rack: 'rack-0', block: 'block-0', groups: [['dgx-h100', 8]] },
  { rack: 'rack-1', block: 'block-0', groups: [['hgx-a100', 8]] },
  {
    rack: 'rack-2',
    block: 'block-1',
    groups: [
      ['hgx-a100', 4],
      ['l4x8', 4],
    ],
  },
  { rack: 'rack-3', block: 'block-1', groups: [['l4x8', 8]] },
];

export function demoCluster(): NodeSpec[] {
  const nodes: NodeSpec[] = [];
  for (const r of RACKS) {
    for (const [shapeId, count] of r.groups) {
      const shape = NODE_SHAPES[shapeId];
      if (shape === undefined) throw new Error(`demo: unknown preset ${shapeId}`);
      for (let i = 0; i < count; i++) {
        nodes.push(nodeOfShape(`${r.rack}-${shapeId}-${i}`, shape, { zone: 'zone-0', block: r.block, rack: r.rack }));
      }
    }
  }
  return nodes;
}

export type DemoJobKind = 'training' | 'inference' | 'fractional';

export interface DemoJob {
  readonly id: string;
  readonly kind: DemoJobKind;
  readonly arrivalMs: number;
  readonly durationMs: number;
  readonly gpus: number;
  /** A gang for training jobs, a single pod otherwise. */
  readonly unit: { readonly kind: 'gang'; readonly gang: GangSpec } | { readonly kind: 'pod'; readonly pod: PodSpec };
}

const HOUR = 3_600_000;
const MINUTE = 60_000;

/** Standard-normal sample (Box–Muller) from the seeded RNG. */
function normal(rng: Rng): number {
  const u = Math.max(rng.next(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next());
}
const lognormal = (rng: Rng, medianMs: number, sigma: number): number => Math.round(medianMs * Math.exp(sigma * normal(rng)));
const exponential = (rng: Rng, meanMs: number): number => -Math.log(1 - rng.next()) * meanMs;

function pickWeighted<T>(rng: Rng, items: readonly (readonly [T, number])[]): T {
  let x = rng.next() * items.reduce((s, [, w]) => s + w, 0);
  for (const [v, w] of items) {
    x -= w;
    if (x < 0) return v;
  }
  return (items[items.length - 1] as readonly [T, number])[0];
}

export interface DemoWorkloadOptions {
  readonly hours: number;
  /** Scales all arrival rates; 1 ≈ 95 % of GPU capacity demanded on average. */
  readonly load: number;
}

/**
 * Arrivals are Poisson per kind. Training: sizes 2–64 GPUs, 1-GPU replicas or 8-GPU replicas, on H100 or
 * A100, ~13/h. Inference: one GPU of sm_80 or newer, a third needing sm_89+, ~60/h. Fractional: a quarter
 * or half GPU, any model, ~40/h. Durations are log-normal.
 */
export function demoWorkload(rng: Rng, opts: DemoWorkloadOptions): DemoJob[] {
  const horizon = opts.hours * HOUR;
  const jobs: DemoJob[] = [];
  const streams: { kind: DemoJobKind; perHour: number }[] = [
    { kind: 'training', perHour: 13 * opts.load },
    { kind: 'inference', perHour: 60 * opts.load },
    { kind: 'fractional', perHour: 40 * opts.load },
  ];
  for (const s of streams) {
    let t = 0;
    let n = 0;
    for (;;) {
      t += exponential(rng, HOUR / s.perHour);
      if (t >= horizon) break;
      jobs.push(makeJob(rng, s.kind, `${s.kind.slice(0, 5)}-${n++}`, Math.round(t)));
    }
  }
  return jobs.sort((a, b) => a.arrivalMs - b.arrivalMs || (a.id < b.id ? -1 : 1));
}

function makeJob(rng: Rng, kind: DemoJobKind, id: string, arrivalMs: number): DemoJob {
  switch (kind) {
    case 'training': {
      const total = pickWeighted(rng, [
        [2, 25],
        [4, 25],
        [8, 20],
        [16, 15],
        [32, 10],
        [64, 5],
      ] as const);
      const perPod = total >= 8 && rng.next() < 0.6 ? 8 : 1;
      const replicas = total / perPod;
      const members = Array.from({ length: replicas }, (_, i) =>
        makePod(
          `${id}-${i}`,
          { cpuMilli: 12_000 * perPod, memoryMiB: 65_536 * perPod, gpuCount: perPod, gpuMilli: 1000 },
          { gpuModels: ['H100-SXM', 'A100-80G'], gang: id, priority: 0, queue: 'training' },
        ),
      );
      return {
        id,
        kind,
        arrivalMs,
        durationMs: lognormal(rng, 40 * MINUTE, 0.8),
        gpus: total,
        unit: { kind: 'gang', gang: { name: id, minMember: replicas, members, topology: {}, priority: 0, queue: 'training' } },
      };
    }
    case 'inference': {
      const cc = rng.next() < 1 / 3 ? 89 : 80;
      return {
        id,
        kind,
        arrivalMs,
        durationMs: lognormal(rng, 60 * MINUTE, 0.7),
        gpus: 1,
        unit: {
          kind: 'pod',
          pod: makePod(id, { cpuMilli: 8000, memoryMiB: 32_768, gpuCount: 1, gpuMilli: 1000 }, { minComputeCapability: cc, queue: 'inference' }),
        },
      };
    }
    case 'fractional': {
      const milli = rng.next() < 0.5 ? 250 : 500;
      return {
        id,
        kind,
        arrivalMs,
        durationMs: lognormal(rng, 30 * MINUTE, 0.7),
        gpus: milli / 1000,
        unit: { kind: 'pod', pod: makePod(id, { cpuMilli: 2000, memoryMiB: 8192, gpuCount: 1, gpuMilli: milli }, { queue: 'notebooks' }) },
      };
    }
  }
}
