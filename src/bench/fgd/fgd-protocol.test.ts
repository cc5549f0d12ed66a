import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { loadOpenbNodes, loadOpenbPods } from '../../sim/trace/openb.ts';
import type { TracePod } from '../../sim/trace/types.ts';
import { FgdMeter } from './metrics.ts';
import { pyRound, pyRound2 } from './py-round.ts';
import { prepareFgdTrace, runFgd } from './run.ts';
import { fgdBenchJson, parseSeeds, summarizePolicy } from './summary.ts';
import { fgdWorkload } from './workload.ts';

const fixture = (f: string): string => fileURLToPath(new URL(`../../sim/testdata/${f}`, import.meta.url));
const nodes = loadOpenbNodes(fixture('tiny_nodes.csv'));
const pods = loadOpenbPods(fixture('tiny_pods.csv')).pods;
const trace = prepareFgdTrace('tiny_pods.csv', nodes, pods);

const pod = (name: string, gpuCount: number, gpuMilli: number): TracePod => ({ name, cpuMilli: 1000, memoryMiB: 1, gpuCount, gpuMilli, gpuModels: [], line: 0 });

describe('Python rounding', () => {
  it('round() is half to even; round(x, 2) rounds the binary value', () => {
    expect([0.5, 1.5, 2.5, 99.5, 100.5, 100.49].map(pyRound)).toEqual([0, 2, 2, 100, 100, 100]);
    expect(pyRound2(95.144999)).toBe(95.14);
    expect(pyRound2(1 / 3)).toBe(0.33);
  });
});

describe('FgdMeter', () => {
  it('buckets by rounded arrived %, averages 2-decimal values, falls back to neighbours', () => {
    const m = new FgdMeter(10_000); // 10 GPUs: 1 % = 100 milli
    m.record(100, 100, 0); // bucket 1, alloc 1
    m.record(140, 100, 50); // bucket 1, alloc 1
    m.record(300, 200, 100); // bucket 3, alloc 2
    const b = m.buckets();
    expect(b.allocPct.slice(0, 4)).toEqual([1, 1, 1.33, 2]); // bucket 2 is empty: mean of buckets 1..3
    expect(b.allocPct[0]).toBe(1); // bucket 0 empty → mean of buckets 0..1
    expect(b.fragRatePct[1]).toBeCloseTo((0 + pyRound2((100 * 50) / 9900)) / 2, 12);
    expect(b.fragPct[3]).toBe(pyRound2((100 * 100) / 1000 / 10));
  });
});

describe('fgdWorkload', () => {
  const tinyNodes = [{ name: 'n', cpuMilli: 1, memoryMiB: 1, gpuCount: 2, model: 'T4', line: 2 }];
  it('tunes up with clones after the shuffled originals, stopping on the per-GPU share', () => {
    const w = fgdWorkload(tinyNodes, [pod('a', 1, 500), pod('b', 0, 0), pod('c', 1, 300)], 42, 1.3);
    const demand = w.pods.reduce((s, p) => s + p.request.gpuCount * p.request.gpuMilli, 0);
    expect(demand).toBeLessThanOrEqual(2600);
    expect(demand + 500).toBeGreaterThan(2600 - 300); // the stop test fired near the target
    expect(w.pods.slice(0, 3).map((p) => p.id).sort()).toEqual(['a', 'b', 'c']);
    expect(w.pods.slice(3).every((p) => /-tuned-\d+$/.test(p.id))).toBe(true);
    expect(w.clones).toBe(w.pods.length - 3);
  });
  it('tunes down by removing random pods until under the target', () => {
    const w = fgdWorkload(tinyNodes, Array.from({ length: 10 }, (_, i) => pod(`p${i}`, 1, 1000)), 7, 1.3);
    expect(w.pods.length).toBe(2); // 2 GPUs × 1.3 = 2600 milli → two whole-GPU pods
    expect(w.removed).toBe(8);
  });
  it('is a pure function of the seed', () => {
    const a = fgdWorkload(nodes, pods, 3);
    const b = fgdWorkload(nodes, pods, 3);
    expect(a.pods.map((p) => p.id)).toEqual(b.pods.map((p) => p.id));
    expect(nodes.map((n) => a.rankOf(n.name))).toEqual(nodes.map((n) => b.rankOf(n.name)));
    expect(fgdWorkload(nodes, pods, 4).pods.map((p) => p.id)).not.toEqual(a.pods.map((p) => p.id));
  });
});

describe('runFgd on a small trace', () => {
  it('places pods until the cluster is full and measures every event', () => {
    const r = runFgd(trace, 'fgd', 42);
    expect(r.pods).toBeGreaterThan(280);
    expect(r.placed).toBeGreaterThan(200);
    expect(r.placed).toBeLessThan(r.pods);
    expect(r.buckets.allocPct.length).toBeGreaterThanOrEqual(131);
    const at100 = r.buckets.allocPct[100] as number;
    expect(at100).toBeGreaterThan(80);
    expect(at100).toBeLessThanOrEqual(100);
    expect(r.runMs).toBe(0); // no clock given
  });
  it('sits and fgd both run on it and the summary has the contract’s keys', () => {
    const runs = [42, 43].flatMap((s) => [runFgd(trace, 'fgd', s), runFgd(trace, 'sits', s)]);
    const json = fgdBenchJson('tiny_pods.csv', [42, 43], ['fgd', 'sits'], runs);
    expect(Object.keys(json)).toEqual(['trace', 'seeds', 'results']);
    expect(json.results.map((r) => Object.keys(r))).toEqual([
      ['policy', 'unallocatedPct', 'fragRatePct', 'runMs'],
      ['policy', 'unallocatedPct', 'fragRatePct', 'runMs'],
    ]);
    expect(Object.keys(json.results[0]?.unallocatedPct ?? {})).toEqual(['90', '95', '100', '110', '120', '130']);
    expect(Object.keys(json.results[0]?.fragRatePct ?? {})).toEqual(['50', '80', '90']);
  });
  it('golden determinism: the same seed and input give byte-identical JSON', () => {
    const once = (): string => JSON.stringify(fgdBenchJson('tiny_pods.csv', [42, 43, 44], ['random', 'bestfit', 'fgd', 'sits'], ['random', 'bestfit', 'fgd', 'sits'].flatMap((p) => [42, 43, 44].map((s) => runFgd(trace, p, s)))));
    const a = once();
    expect(once()).toBe(a);
    expect(a).toMatch(/"policy":"sits"/);
  });
  it('summarizes medians per bucket', () => {
    const runs = [42, 43, 44].map((s) => runFgd(trace, 'bestfit', s));
    const s = summarizePolicy('bestfit', runs);
    const vals = runs.map((r) => 100 - (r.buckets.allocPct[100] as number)).sort((x, y) => x - y);
    expect(s.unallocatedPct['100']).toBeCloseTo(vals[1] as number, 4);
  });
});

describe('parseSeeds', () => {
  it('reads ranges and lists', () => {
    expect(parseSeeds('42-45')).toEqual([42, 43, 44, 45]);
    expect(parseSeeds('50,42-43,42')).toEqual([42, 43, 50]);
    expect(parseSeeds('4x')).toBeUndefined();
    expect(parseSeeds('9-3')).toBeUndefined();
  });
});
