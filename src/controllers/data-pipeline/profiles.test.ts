import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { NODE_SHAPES, nodeOfShape, type NodeShape } from '../../core/model/presets.ts';
import type { NodeSpec } from '../../core/model/node.ts';
import {
  kvBytesPerToken,
  replicaTokensPerSec,
  resolveProfile,
  SERVING_MEMORY_FRACTION,
  SERVING_RESERVE_BYTES,
  summarizeCluster,
  trainingBytes,
  TRAINING_MEMORY_FRACTION,
  weightsBytes,
  type ProfileOverrides,
  type ProfileStep,
  type ResolvedProfile,
} from './profiles.ts';
import type { ClusterSummary, GpuPool } from './model.ts';

const shape = (id: string): NodeShape => {
  const s = NODE_SHAPES[id];
  if (s === undefined) throw new Error(`no preset ${id}`);
  return s;
};
const node = (name: string, id: string, rack = 'r1'): NodeSpec => nodeOfShape(name, shape(id), { zone: 'z', block: 'b', rack });

/** The seed's cluster: A100 nodes with two 4-GPU NVLink islands each, L4 inference nodes, one T4 node. */
const seedCluster = summarizeCluster([
  node('a1', 'nvlink-2x4'),
  node('a2', 'nvlink-2x4'),
  node('l1', 'l4x8', 'r2'),
  node('l2', 'l4x8', 'r2'),
  node('t1', 't4x4', 'r3'),
]);

const ft: ProfileStep = { name: 'fine-tune', kind: 'training', model: { params: 7e9 } };
const serve: ProfileStep = { name: 'serve', kind: 'serving', model: { params: 8.03e9, layers: 32, kvHeads: 8, headDim: 128 } };
const batch: ProfileStep = { name: 'score', kind: 'batch-inference', model: { params: 8.03e9, layers: 32, kvHeads: 8, headDim: 128 } };

function resolved(step: ProfileStep, profile: string, cluster: ClusterSummary = seedCluster, o?: ProfileOverrides): ResolvedProfile {
  const r = resolveProfile(step, profile, cluster, o);
  if (!r.ok) throw new Error(`${r.error.field}: ${r.error.message}`);
  return r.value;
}
function failure(step: ProfileStep, profile: string, cluster: ClusterSummary = seedCluster, o?: ProfileOverrides): string {
  const r = resolveProfile(step, profile, cluster, o);
  return r.ok ? 'ok' : `${r.error.field}: ${r.error.message}`;
}

describe('summarizeCluster', () => {
  it('counts healthy GPUs of schedulable nodes by model, with NVLink islands, nodes and racks', () => {
    expect(seedCluster.pools.map((p) => [p.model, p.gpus, p.islands, p.nodeGpus, p.rackGpus])).toEqual([
      ['A100-80G', 16, [4, 4, 4, 4], [8, 8], 16],
      ['L4', 16, new Array(16).fill(1), [8, 8], 16],
      ['T4', 4, [1, 1, 1, 1], [4], 4],
    ]);
    const a = node('a3', 'nvlink-2x4');
    const sick = { ...a, gpus: a.gpus.map((g) => (g.index === 0 ? { ...g, healthy: false } : g)) };
    const cordoned = { ...node('a4', 'nvlink-2x4'), unschedulable: true };
    const s = summarizeCluster([sick, cordoned, node('h1', 'dgx-h100', 'r9')]);
    expect(s.pools.map((p) => [p.model, p.gpus, p.islands])).toEqual([
      ['A100-80G', 7, [4, 3]],
      ['H100-SXM', 8, [8]],
    ]);
  });
});

describe('resolveProfile: the seed (training on A100×4, serving on L4×2)', () => {
  it('auto: a 7B fine-tune goes to the largest NVLink island that holds it, required as one NVLink domain', () => {
    const r = resolved(ft, 'auto');
    expect(r).toMatchObject({ rule: 'training', gpuModels: ['A100-80G'], gpusPerPod: 4, pods: 1, topology: { required: 'nvlink-domain', spread: false } });
    expect(r.reasons[0]).toBe(
      'auto chose training for a training step (7B params): full training holds 104 GiB of weights, gradients and optimizer state → A100-80G ×4 in one NVLink island (the largest NVLink island with ≥ 104 GiB: 4 × 80 GiB)',
    );
    expect(r.reasons).toContain('not possible: T4: bf16 needs sm_80, it has sm_75');
  });

  it('auto: serving an 8B model at 16 × 4096 tokens goes to L4 ×2, replicas spread', () => {
    const r = resolved({ ...serve, serving: { replicas: 2 } }, 'auto');
    expect(r).toMatchObject({ rule: 'low-latency', gpuModels: ['L4'], gpusPerPod: 2, pods: 2, topology: { spread: true } });
    expect(r.reasons[0]).toBe(
      'auto chose low-latency for a serving step (8B params): 15.0 GiB of weights + 8.0 GiB of KV for 16 × 4096 tokens → L4 ×2 per replica (the least GPU memory that holds it: 2 × 24 GiB, tensor-parallel over PCIe), replicas on separate nodes',
    );
  });

  it('low-latency: less concurrency fits one L4; a bigger model moves up to bigger GPUs', () => {
    expect(resolved({ ...serve, serving: { concurrency: 4 } }, 'low-latency')).toMatchObject({ gpuModels: ['L4'], gpusPerPod: 1 });
    const big = resolved({ name: 's', kind: 'serving', model: { params: 70e9, layers: 80, kvHeads: 8, headDim: 128 } }, 'low-latency');
    // 130 GiB of weights + 20 GiB of KV: 8 × L4 leave 141 GiB for the engine, too little; 4 × A100-80G in one island.
    expect(big).toMatchObject({ gpuModels: ['A100-80G'], gpusPerPod: 4, topology: { preferred: 'nvlink-domain', spread: true } });
    expect(big.reasons).toContain('not possible: L4: 8 × 24 GiB hold 141 GiB for the engine, the replica needs 150 GiB; T4: bf16 needs sm_80, it has sm_75');
  });

  it('bf16 needs sm_80 (T4 is out); fp16 weights may use T4', () => {
    const fp16 = resolved(
      { ...serve, model: { ...(serve.model as NonNullable<ProfileStep['model']>), dtype: 'fp16' }, serving: { concurrency: 1, contextTokens: 1024 } },
      'low-latency',
    );
    expect(fp16).toMatchObject({ gpuModels: ['L4'], gpusPerPod: 1 });
    expect(fp16.reasons.join('\n')).toContain('T4 ×2');
  });

  it('LoRA holds the frozen weights and small adapters: far less than full training', () => {
    const m = { params: 8e9 };
    expect(trainingBytes(m, 'lora')).toBeLessThan(trainingBytes(m, 'full') / 5);
    const r = resolved({ ...ft, model: m, training: { method: 'lora' } }, 'auto');
    expect(r.reasons[0]).toContain('LoRA holds 16.1 GiB (frozen weights and adapters) → A100-80G ×4 in one NVLink island');
  });

  it('a model too big for one island takes several, in one rack when the rack has them', () => {
    const h = summarizeCluster(['h1', 'h2', 'h3', 'h4'].map((n) => node(n, 'dgx-h100')));
    const r = resolved({ ...ft, model: { params: 70e9 } }, 'auto', h);
    expect(r).toMatchObject({ gpuModels: ['H100-SXM'], gpusPerPod: 8, pods: 3, topology: { required: 'rack' } });
    const spread = summarizeCluster(['h1', 'h2', 'h3', 'h4'].map((n, i) => node(n, 'dgx-h100', `r${i}`)));
    expect(resolved({ ...ft, model: { params: 70e9 } }, 'auto', spread).topology).toEqual({ preferred: 'rack', spread: false });
  });

  it('without NVLink a training pod takes a whole node over PCIe', () => {
    const l4 = summarizeCluster([node('l1', 'l4x8')]);
    expect(resolved(ft, 'auto', l4)).toMatchObject({ gpuModels: ['L4'], gpusPerPod: 8, pods: 1, topology: { spread: false } });
    expect(resolved(ft, 'auto', l4).reasons[0]).toContain('L4 ×8 on one node (no NVLink: PCIe)');
  });
});

describe('resolveProfile: batch-throughput', () => {
  it('picks the most tokens/s per GPU, and per price when the cluster gives prices', () => {
    const r = resolved(batch, 'auto');
    expect(r.rule).toBe('batch-throughput');
    expect(r.gpuModels).toEqual(['A100-80G']);
    const priced = resolved(batch, 'batch-throughput', { ...seedCluster, pricePerGpuHour: { 'A100-80G': 4, L4: 0.5 } });
    expect(priced.gpuModels).toEqual(['L4']);
    expect(priced.reasons[0]).toMatch(
      /^batch-throughput: batch-inference step \(8B params\): 15\.0 GiB of weights, batches of 4096-token sequences → L4 ×\d per replica \([\d,]+ tokens per unit of price/,
    );
    expect(priced.reasons[1]).toMatch(/^runners-up: A100-80G ×\d [\d,]+ tokens per unit of price$/);
  });

  it('the choice is the argmax of the engine model over the pools and TP sizes that fit', () => {
    const r = resolved(batch, 'batch-throughput');
    const m = batch.model as NonNullable<ProfileStep['model']>;
    const perGpu = (p: GpuPool, g: number): number => (replicaTokensPerSec(m, p, g, 4096) ?? 0) / g;
    const chosen = seedCluster.pools.find((p) => p.model === r.gpuModels[0]) as GpuPool;
    const best = perGpu(chosen, r.gpusPerPod);
    for (const p of seedCluster.pools.filter((x) => x.computeCapability >= 80)) for (const g of [1, 2, 4, 8]) expect(perGpu(p, g)).toBeLessThanOrEqual(best);
  });

  it('a training step under batch-throughput ranks by the step-time model per GPU-hour', () => {
    const r = resolved(ft, 'batch-throughput');
    expect(r).toMatchObject({ rule: 'training', gpuModels: ['A100-80G'] });
    expect(r.reasons[0]).toMatch(/tokens\/s per GPU by the step-time model/);
  });
});

describe('resolveProfile: overrides, CPU steps, queues', () => {
  it('per-step overrides win and are named', () => {
    const r = resolved(ft, 'auto', seedCluster, { gpuModels: ['l4'], topology: 'none', queue: 'research' });
    expect(r).toMatchObject({ gpuModels: ['L4'], gpusPerPod: 8, queue: 'research', topology: { spread: false } });
    expect(r.topology.required).toBeUndefined();
    expect(r.reasons.at(-1)).toBe('overrides from the step win: gpuModels=l4, topology=none, queue=research');
    const pinned = resolved(serve, 'auto', seedCluster, { gpusPerPod: 4, pods: 3, topology: 'rack' });
    expect(pinned).toMatchObject({ gpuModels: ['L4'], gpusPerPod: 4, pods: 3, topology: { required: 'rack', spread: true } });
  });

  it('an override the cluster cannot honour is an error naming it', () => {
    expect(failure(ft, 'auto', seedCluster, { gpuModels: ['H100-SXM'] })).toBe(
      'steps.fine-tune.overrides.gpuModels[0]: no H100-SXM GPU in the cluster (it has A100-80G, L4, T4)',
    );
    expect(failure(serve, 'auto', seedCluster, { gpuModels: ['L4'], gpusPerPod: 1 })).toMatch(
      /^steps\.serve\.overrides\.gpusPerPod: no GPU of the cluster can hold this serving step \(8B params, 15\.0 GiB of weights \+ 8\.0 GiB of KV for 16 × 4096 tokens\): L4: 1 × 24 GiB hold 17\.7 GiB for the engine, the replica needs 23\.0 GiB$/,
    );
    expect(failure(ft, 'auto', seedCluster, { pods: 1, gpusPerPod: 1, gpuModels: ['A100-80G'] })).toMatch(
      /^steps\.fine-tune\.overrides\.gpusPerPod: .*A100-80G: 1 × 1 GPUs hold 64\.0 GiB of model state, the step needs 104 GiB$/,
    );
    // Two such pods do hold it: the override stands.
    expect(resolved(ft, 'auto', seedCluster, { pods: 2, gpusPerPod: 1, gpuModels: ['A100-80G'] })).toMatchObject({
      pods: 2,
      gpusPerPod: 1,
      topology: { required: 'rack' },
    });
  });

  it('CPU containers take no GPU; a GPU container without a model needs its model and count', () => {
    expect(resolved({ name: 'export', kind: 'container' }, 'auto')).toEqual({
      profile: 'auto',
      rule: 'cpu',
      gpuModels: [],
      gpusPerPod: 0,
      pods: 1,
      topology: { spread: false },
      reasons: ['auto: container step asks for no GPU → CPU only'],
    });
    expect(failure({ name: 'merge', kind: 'container', gpus: 1 }, 'auto')).toBe(
      "steps.merge.model.params: container step needs the model's size to choose GPUs (or set overrides.gpuModels and gpusPerPod)",
    );
    expect(resolved({ name: 'merge', kind: 'container', gpus: 1 }, 'auto', seedCluster, { gpuModels: ['L4'] })).toMatchObject({
      gpuModels: ['L4'],
      gpusPerPod: 1,
      rule: 'batch-throughput',
    });
  });

  it("the cluster's queue for the rule, unless the step names one", () => {
    const c = { ...seedCluster, queues: { training: 'train-q', 'low-latency': 'serve-q' } };
    expect(resolved(ft, 'auto', c).queue).toBe('train-q');
    expect(resolved(ft, 'auto', c).reasons).toContain("queue train-q: the cluster's queue for training steps");
    expect(resolved(serve, 'auto', c).queue).toBe('serve-q');
    expect(resolved(batch, 'auto', c).queue).toBeUndefined();
  });
});

describe('resolveProfile: errors name the field', () => {
  it('unknown profile, profile that does not apply, missing or bad sizes, impossible requests', () => {
    expect(failure(ft, 'fastest')).toBe('steps.fine-tune.resourceProfile: unknown profile "fastest": one of auto, low-latency, batch-throughput');
    expect(failure({ ...ft, field: 'spec.steps[0]' }, 'low-latency')).toBe(
      'spec.steps[0].resourceProfile: low-latency is for serving and inference steps: a training step takes auto or batch-throughput',
    );
    expect(failure({ name: 'x', kind: 'serving' }, 'auto')).toBe(
      "steps.x.model.params: serving step needs the model's size to choose GPUs (or set overrides.gpuModels and gpusPerPod)",
    );
    expect(failure({ ...serve, model: { params: -1 } }, 'auto')).toBe('steps.serve.model.params: -1: a positive number of parameters');
    expect(failure({ ...serve, serving: { concurrency: 0 } }, 'auto')).toBe('steps.serve.serving.concurrency: 0: a whole number ≥ 1');
    expect(failure({ ...serve, model: { params: 8e9, dtype: 'fp4' as never } }, 'auto')).toBe(
      'steps.serve.model.dtype: unknown dtype "fp4": one of bf16, fp16, fp8, int8, int4',
    );
    expect(failure(serve, 'auto', seedCluster, { topology: 'galaxy' as never })).toBe(
      'steps.serve.overrides.topology: unknown level "galaxy": none or one of node, nvlink-domain, rack, block, zone',
    );
    expect(failure({ ...ft, kind: 'notebook' as never }, 'auto')).toBe(
      'steps.fine-tune.kind: unknown step kind "notebook": one of training, serving, batch-inference, container',
    );
    expect(failure(ft, 'auto', { pools: [] })).toBe('steps.fine-tune.resourceProfile: training step needs GPUs and the cluster has none');
    expect(failure({ ...ft, model: { params: 70e9 } }, 'auto')).toBe(
      'steps.fine-tune.model.params: no GPU of the cluster can hold this training step (70B params, full training holds 1043 GiB of weights, gradients and optimizer state): A100-80G: needs 5 NVLink islands of 4 GPUs, the cluster has 4; L4: needs 7 nodes of 8 GPUs, the cluster has 2; T4: bf16 needs sm_80, it has sm_75',
    );
  });
});

describe('memory arithmetic', () => {
  it('weights by dtype and KV from the architecture (Llama 3.1 8B: 128 KiB a token)', () => {
    expect(weightsBytes({ params: 8e9 })).toBe(16e9);
    expect(weightsBytes({ params: 8e9, dtype: 'int4' })).toBe(4e9);
    expect(kvBytesPerToken({ params: 8e9, layers: 32, kvHeads: 8, headDim: 128 })).toEqual({ bytes: 131_072, estimated: false });
    expect(kvBytesPerToken({ params: 8e9, kvBytesPerToken: 1000 })).toEqual({ bytes: 1000, estimated: false });
    expect(kvBytesPerToken({ params: 16.06e9 }).estimated).toBe(true);
    expect(kvBytesPerToken({ params: 16.06e9 }).bytes).toBeCloseTo(262_144, 0);
  });

  it('the serving reserve is what ADR 0080 leaves on an H100 after weights and KV (about 4 GB)', () => {
    expect(SERVING_RESERVE_BYTES / 1e9).toBeCloseTo(4.24, 1);
  });
});

describe('resolveProfile: properties', () => {
  const shapes = ['dgx-h100', 'hgx-a100', 'a800x4', 'nvlink-2x4', 'l4x8', 't4x4', 'v100-hcm'];
  const clusterArb = fc
    .uniqueArray(fc.constantFrom(...shapes), { minLength: 1, maxLength: 4 })
    .chain((ids) => fc.tuple(fc.constant(ids), fc.array(fc.integer({ min: 1, max: 3 }), { minLength: ids.length, maxLength: ids.length })));
  const build = ([ids, counts]: [string[], number[]]): ClusterSummary =>
    summarizeCluster(ids.flatMap((id, i) => Array.from({ length: counts[i] as number }, (_, k) => node(`${id}-${k}`, id, `r${k % 2}`))));
  const stepArb = fc.record({
    kind: fc.constantFrom<ProfileStep['kind']>('training', 'serving', 'batch-inference'),
    params: fc.constantFrom(1.3e9, 7e9, 8.03e9, 13e9, 34e9, 70e9),
    dtype: fc.constantFrom<'bf16' | 'fp16' | 'fp8'>('bf16', 'fp16', 'fp8'),
    lora: fc.boolean(),
    concurrency: fc.integer({ min: 1, max: 64 }),
    replicas: fc.integer({ min: 1, max: 4 }),
  });
  const toStep = (s: {
    kind: ProfileStep['kind'];
    params: number;
    dtype: 'bf16' | 'fp16' | 'fp8';
    lora: boolean;
    concurrency: number;
    replicas: number;
  }): ProfileStep => ({
    name: 's',
    kind: s.kind,
    model: { params: s.params, dtype: s.dtype },
    ...(s.kind === 'training' ? { training: { method: s.lora ? 'lora' : 'full' } } : { serving: { concurrency: s.concurrency, replicas: s.replicas } }),
  });

  it('deterministic, independent of pool order, and what it picks holds the step', () => {
    fc.assert(
      fc.property(clusterArb, stepArb, fc.constantFrom('auto', 'batch-throughput'), (cl, s, profile) => {
        const cluster = build(cl);
        const step = toStep(s);
        const a = resolveProfile(step, profile, cluster);
        expect(resolveProfile(step, profile, { ...cluster, pools: [...cluster.pools].reverse() })).toEqual(a);
        if (!a.ok) return;
        const r = a.value;
        const pool = cluster.pools.find((p) => p.model === r.gpuModels[0]) as GpuPool;
        expect(pool.gpus).toBeGreaterThanOrEqual(r.gpusPerPod * r.pods);
        expect(pool.nodeGpus[0]).toBeGreaterThanOrEqual(r.gpusPerPod);
        const m = step.model as NonNullable<ProfileStep['model']>;
        const mem = pool.memoryMiB * 1024 ** 2;
        if (r.rule === 'training') {
          expect(r.pods * r.gpusPerPod * mem * TRAINING_MEMORY_FRACTION).toBeGreaterThanOrEqual(trainingBytes(m, s.lora ? 'lora' : 'full'));
        } else if (r.rule === 'low-latency') {
          const need = weightsBytes(m) + s.concurrency * 4096 * kvBytesPerToken(m).bytes;
          expect(r.gpusPerPod * (mem * SERVING_MEMORY_FRACTION - SERVING_RESERVE_BYTES)).toBeGreaterThanOrEqual(need);
        } else {
          expect(r.gpusPerPod * (mem * SERVING_MEMORY_FRACTION - SERVING_RESERVE_BYTES)).toBeGreaterThan(weightsBytes(m));
        }
        if (s.dtype === 'bf16') expect(pool.computeCapability).toBeGreaterThanOrEqual(80);
        expect(r.reasons.length).toBeGreaterThan(0);
        expect(r.reasons.every((x) => x.length > 0 && !x.includes('\n'))).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it('low-latency: more concurrency never gets fewer GPUs a replica on the same GPU model', () => {
    const l4 = summarizeCluster([node('l1', 'l4x8'), node('l2', 'l4x8')]);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 60 }), (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const g = (c: number): number => {
          const r = resolveProfile({ ...serve, serving: { concurrency: c } }, 'low-latency', l4);
          return r.ok ? r.value.gpusPerPod : Number.POSITIVE_INFINITY;
        };
        expect(g(hi)).toBeGreaterThanOrEqual(g(lo));
      }),
      { numRuns: 60 },
    );
  });
});
