import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { placeStages, simulatePipeline } from './stages.ts';

describe('stage placement', () => {
  it('tokenise on CPU, infer on GPU, post-process on the NPU when there is one', () => {
    const p = placeStages(new Set(['cpu', 'gpu', 'npu']));
    expect([p.tokenise.device, p.infer.device, p.postprocess.device]).toEqual(['cpu', 'gpu', 'npu']);
  });
  it('falls back to the CPU and says why', () => {
    const p = placeStages(new Set(['cpu']));
    expect(p.infer).toEqual({ device: 'cpu', reason: 'infer on cpu: no gpu in the cluster' });
    expect(p.postprocess).toEqual({ device: 'cpu', reason: 'postprocess on cpu: no npu in the cluster' });
  });
});

describe('pipeline with bounded queues', () => {
  const stage = (name: string, servers: number, ms: number) => ({ name, servers, serviceMs: () => ms });
  it('runs at the pace of the slowest stage', () => {
    // GPU stage: 1 server, 10 ms a record → 1000 records take about 10 s whatever the others do.
    const r = simulatePipeline([stage('tokenise', 4, 2), stage('infer', 1, 10), stage('postprocess', 2, 3)], 1000, 8);
    expect(r.makespanMs).toBeGreaterThanOrEqual(10_000);
    expect(r.makespanMs).toBeLessThan(10_000 + 2 + 3 + 1);
  });
  it('never queues more than the bound: the fast upstream blocks instead', () => {
    const r = simulatePipeline([stage('tokenise', 4, 1), stage('infer', 1, 10), stage('postprocess', 1, 1)], 500, 4);
    expect(Math.max(...r.maxQueue)).toBeLessThanOrEqual(4);
    expect(r.maxQueue[1]).toBe(4);
    expect(r.blockedMs[0]).toBeGreaterThan(0);
  });
  it('a slow post-processor backs up to the GPU', () => {
    const r = simulatePipeline([stage('tokenise', 1, 1), stage('infer', 1, 2), stage('postprocess', 1, 8)], 200, 2);
    expect(r.blockedMs[1]).toBeGreaterThan(0);
    expect(r.makespanMs).toBeGreaterThanOrEqual(200 * 8);
  });
  it('any pipeline finishes every record, keeps its bounds and is no faster than its slowest stage (property)', () => {
    const st = fc.record({ servers: fc.integer({ min: 1, max: 4 }), ms: fc.integer({ min: 1, max: 20 }), jitter: fc.integer({ min: 0, max: 7 }) });
    fc.assert(
      fc.property(fc.array(st, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 5 }), (ss, n, cap) => {
        const stages = ss.map((x, k) => ({ name: `s${k}`, servers: x.servers, serviceMs: (i: number) => x.ms + ((i * 7 + k) % (x.jitter + 1)) }));
        const r = simulatePipeline(stages, n, cap);
        expect(Math.max(...r.maxQueue)).toBeLessThanOrEqual(cap);
        for (const [k, x] of ss.entries()) {
          const work = Array.from({ length: n }, (_, i) => stages[k]!.serviceMs(i)).reduce((a, b) => a + b, 0);
          expect(r.makespanMs).toBeGreaterThanOrEqual(work / x.servers - 1e-9);
        }
      }),
      { numRuns: 200 },
    );
  });
  it('refuses a queue of no capacity', () => {
    expect(() => simulatePipeline([stage('a', 1, 1)], 1, 0)).toThrow('queue capacity must be at least 1');
  });
});
