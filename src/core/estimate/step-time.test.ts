import { describe, expect, it } from 'vitest';
import { NODE_SHAPES } from '../model/presets.ts';
import {
  allReduceSec,
  ddpJob,
  DEFAULT_TRAINING_MODEL,
  fabricOf,
  idealShares,
  sharedLevel,
  stepTime,
  type JobNodeShare,
  type NetworkModel,
  type ReferenceModel,
  type TrainingModel,
} from './step-time.ts';

const shape = (id: string) => {
  const s = NODE_SHAPES[id];
  if (s === undefined) throw new Error(id);
  return s;
};
const nodes = (id: string, n: number, per = 8, model?: string, rack = (_i: number) => 'r0'): JobNodeShare[] =>
  Array.from({ length: n }, (_, i) => ({
    name: `n${i}`,
    gpuModel: model ?? shape(id).gpus[0]?.model ?? '',
    topology: shape(id).topology,
    location: { zone: 'z', block: 'b', rack: rack(i) },
    gpus: Array.from({ length: per }, (_, g) => g),
  }));
const fsdp = (m: ReferenceModel, seq: number, microBatch: number, recompute = false): TrainingModel => ({
  ...ddpJob(m, seq, microBatch),
  parallelism: 'fsdp',
  gradBytes: 2,
  recompute,
});
/** A cluster network of `perNode` GB/s per 8-GPU node (the llm-foundry clusters: 1600 / 3200 Gb/s). */
const net = (perNode: number): NetworkModel => {
  const g = perNode / 8;
  return {
    nicGBps: { 'nvlink-domain': g, rack: g, block: g, zone: g, cluster: g },
    latencyUs: { 'nvlink-domain': 8, rack: 8, block: 8, zone: 8, cluster: 8 },
    nicsPerNode: 8,
  };
};

describe('step-time model against published figures (ADR 0103)', () => {
  // llm-foundry scripts/train/benchmarking/README.md, seq 2048, tokens/s per GPU (FSDP FULL_SHARD, bf16).
  const published: readonly [string, TrainingModel, JobNodeShare[], number, NetworkModel?][] = [
    ['1B 8×A100-80GB', fsdp('gpt-1b', 2048, 14), nodes('hgx-a100', 1), 20_513],
    ['3B 8×A100-80GB', fsdp('gpt-3b', 2048, 10), nodes('hgx-a100', 1), 10_811],
    ['7B 8×A100-80GB', fsdp('gpt-7b', 2048, 6), nodes('hgx-a100', 1), 4_641],
    ['760M 8×A100-80GB', fsdp('gpt-760m', 2048, 24), nodes('hgx-a100', 1), 32_434],
    ['1B 8×H100', fsdp('gpt-1b', 2048, 14), nodes('dgx-h100', 1), 45_455],
    ['1B 64×H100', fsdp('gpt-1b', 2048, 20), nodes('dgx-h100', 8), 44_402, net(400)],
    ['3B 64×H100', fsdp('gpt-3b', 2048, 6), nodes('dgx-h100', 8), 22_525, net(400)],
    ['3B 128×A100-40GB', fsdp('gpt-3b', 2048, 6), nodes('hgx-a100', 16, 8, 'A100-40G'), 9_538, net(200)],
    ['7B 128×A100-40GB', fsdp('gpt-7b', 2048, 18, true), nodes('hgx-a100', 16, 8, 'A100-40G'), 3_623, net(200)],
  ];
  for (const [name, m, shares, tokensPerGpu, nw] of published) {
    it(`${name}: within 12 % of ${tokensPerGpu} tokens/s/GPU`, () => {
      const s = stepTime(m, shares, nw);
      expect(Math.abs(s.tokensPerSec / s.gpus / tokensPerGpu - 1)).toBeLessThan(0.12);
    });
  }

  it('bus bandwidth: 8×A100 NVSwitch, 8×H100 NVSwitch (ring), 3 nodes × 8 A100 with 4×HDR, within 25 % of nccl-tests', () => {
    // nccl-tests#149 (~200 GB/s), nccl-tests#212 (ring ~370 GB/s), nccl-tests#119 (84.8 avg / 96 peak GB/s).
    expect(fabricOf(nodes('hgx-a100', 1)).busGBps / 200).toBeCloseTo(1.2, 1);
    expect(Math.abs(fabricOf(nodes('dgx-h100', 1)).busGBps / 370 - 1)).toBeLessThan(0.05);
    expect(Math.abs(fabricOf(nodes('hgx-a100', 3), net(100)).busGBps / 90 - 1)).toBeLessThan(0.08);
  });
});

describe('step-time model', () => {
  it('one GPU: no communication, utilisation 1', () => {
    const s = stepTime(DEFAULT_TRAINING_MODEL, nodes('hgx-a100', 1, 1));
    expect(s.commSec).toBe(0);
    expect(s.gpuUtilization).toBe(1);
    expect(s.algorithm).toBe('none');
  });

  it('the slowest link of the ring sets the bandwidth: NVSwitch > PCIe switch > cross-socket', () => {
    const nv = fabricOf(nodes('hgx-a100', 1, 2));
    const pcie = fabricOf([{ ...(nodes('l4x8', 1, 2)[0] as JobNodeShare) }]);
    const cross = fabricOf([{ ...(nodes('l4x8', 1)[0] as JobNodeShare), gpus: [0, 4] }]);
    expect(nv.bottleneck).toBe('nvswitch');
    expect(pcie.bottleneck).toBe('pcie-switch');
    expect(cross.bottleneck).toBe('cross-socket');
    expect(nv.busGBps).toBeGreaterThan(pcie.busGBps);
    expect(pcie.busGBps).toBeGreaterThan(cross.busGBps);
  });

  it('across nodes the NICs of the node with the fewest of the job’s GPUs limit the ring, at the shared level’s class', () => {
    const f = fabricOf([
      ...nodes('hgx-a100', 1, 6),
      { ...(nodes('hgx-a100', 1, 2)[0] as JobNodeShare), name: 'other', location: { zone: 'z', block: 'b2', rack: 'r9' } },
    ]);
    expect(f.bottleneck).toBe('zone');
    expect(f.busGBps).toBeCloseTo(2 * 12.5 * 0.9, 6);
    expect(
      sharedLevel([
        { zone: 'z', block: 'b', rack: 'r' },
        { zone: 'z', block: 'b', rack: 'r' },
      ]),
    ).toBe('rack');
  });

  it('ring time is 2(n−1)/n·S/B plus 2(n−1) latencies; tree wins small messages across many nodes, ring large ones', () => {
    const f = fabricOf(nodes('hgx-a100', 1));
    const r = allReduceSec(1e9, f);
    expect(r.sec).toBeCloseTo(14 * 2e-6 + (1.75 * 1e9) / 240e9, 9);
    const many = fabricOf(nodes('hgx-a100', 16, 1, undefined, (i) => `r${i}`));
    expect(allReduceSec(1e3, many).algorithm).toBe('tree');
    expect(allReduceSec(1e10, many).algorithm).toBe('ring');
  });

  it('DDP hides buckets behind the backward pass: a fast fabric exposes one bucket, a slow one the excess', () => {
    const m = ddpJob('gpt-1b', 2048, 8);
    const fast = stepTime(m, nodes('hgx-a100', 1));
    const slow = stepTime(m, nodes('l4x8', 1, 8, 'A100-80G'));
    expect(fast.exposedCommSec).toBeLessThan(0.01);
    expect(slow.exposedCommSec).toBeCloseTo(slow.commSec - (2 / 3) * slow.computeSec, 9);
    expect(slow.tokensPerSec).toBeLessThan(fast.tokensPerSec);
    expect(slow.gpuUtilization).toBeLessThan(fast.gpuUtilization);
  });

  it('the ideal layout of 16 GPUs is two whole nodes in one rack', () => {
    const like = nodes('hgx-a100', 1)[0] as JobNodeShare;
    const ideal = idealShares(like, 16);
    expect(ideal.map((s) => s.gpus.length)).toEqual([8, 8]);
    expect(sharedLevel(ideal.map((s) => s.location))).toBe('rack');
  });
});
