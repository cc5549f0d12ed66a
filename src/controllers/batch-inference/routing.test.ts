// Declarative scenarios of the three-level routing decision, and profiling from the first shards.
import { describe, expect, it } from 'vitest';
import type { RouteInput, WorkloadProfile } from './routing.ts';
import { decideRoute, profileFromShards } from './routing.ts';

const longOut: WorkloadProfile = { shards: 3, promptTokensPerRecord: 500, outputTokensPerRecord: 400, msPerRecord: 90, peakKvFraction: 0.7 };

const SCENARIOS: { name: string; input: RouteInput; route: string; quantization?: string; reason?: RegExp }[] = [
  { name: 'urgent and exact: whole GPUs, full precision', input: { slaClass: 'P0', fragmentation: 0.1 }, route: 'gpu-exclusive', reason: /whole GPUs/ },
  {
    name: 'urgent with tolerance: whole GPUs, fp8',
    input: { slaClass: 'P1', accuracyTolerance: 0.97, fragmentation: 0.9 },
    route: 'gpu-exclusive',
    quantization: 'fp8',
  },
  { name: 'batch class, unfragmented cluster: shared whole GPUs', input: { slaClass: 'P2', fragmentation: 0.2 }, route: 'gpu-shared' },
  {
    name: 'batch class, fragmented: fill fragments',
    input: { slaClass: 'P3', accuracyTolerance: 0.9, fragmentation: 0.45 },
    route: 'gpu-fragments',
    quantization: 'int8',
  },
  {
    name: 'very fragmented and tolerant: CPU-elastic, int8',
    input: { slaClass: 'P3', accuracyTolerance: 0.8, fragmentation: 0.7 },
    route: 'cpu-elastic',
    quantization: 'int8',
    reason: /CPU-elastic/,
  },
  {
    name: 'very fragmented and tolerant but long outputs: fragments, not CPU',
    input: { slaClass: 'P2', accuracyTolerance: 0.8, fragmentation: 0.7, profile: longOut },
    route: 'gpu-fragments',
    quantization: 'int8',
  },
];

describe('routing scenarios', () => {
  for (const s of SCENARIOS) {
    it(s.name, () => {
      const d = decideRoute(s.input);
      expect(d.route).toBe(s.route);
      expect(d.quantization).toBe(s.quantization);
      expect(d.reasons).toHaveLength(3);
      if (s.reason !== undefined) expect(d.reasons.join('\n')).toMatch(s.reason);
    });
  }
});

describe('profiling from the first shards', () => {
  it('waits for three shards, then takes medians per record and the peak KV use', () => {
    const shard = (n: number, ms: number, kv: number) => ({ records: n, promptTokens: n * 1000, outputTokens: n * 20, ms, peakKvFraction: kv });
    expect(profileFromShards([shard(10, 1000, 0.5), shard(10, 3000, 0.6)])).toBeUndefined();
    expect(profileFromShards([shard(10, 1000, 0.5), shard(10, 3000, 0.6), shard(20, 2000, 0.9)])).toEqual({
      shards: 3,
      promptTokensPerRecord: 1000,
      outputTokensPerRecord: 20,
      msPerRecord: 100,
      peakKvFraction: 0.9,
    });
  });
});
