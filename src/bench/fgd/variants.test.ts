import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { loadOpenbNodes, loadOpenbPods, parseOpenbPods } from '../../sim/trace/openb.ts';
import { generateVariant, measureShares, parseVariantName, variantCsv, variantName, VariantError, type VariantSpec } from './variants.ts';

const fixture = (f: string): string => fileURLToPath(new URL(`../../sim/testdata/${f}`, import.meta.url));
const nodes = loadOpenbNodes(fixture('tiny_nodes.csv'));
const all = loadOpenbPods(fixture('tiny_pods.csv')).pods;
// The base list has no constraints (as the default trace); the fixture's constrained pods serve as the spec source.
const base = all.map((p) => ({ ...p, gpuModels: [] }));
const key = (p: { cpuMilli: number; memoryMiB: number; gpuCount: number; gpuMilli: number }): string => `${p.cpuMilli}|${p.memoryMiB}|${p.gpuCount}|${p.gpuMilli}`;

describe('trace variants', () => {
  it('names round-trip', () => {
    const v: VariantSpec = { kind: 'cpu', share: 75, seed: 2 };
    expect(variantName(v)).toBe('cpu075-s2');
    expect(parseVariantName('cpu075-s2')).toEqual(v);
    expect(parseVariantName('gpuspec28-s1')).toEqual({ kind: 'gpuspec', share: 28, seed: 1 });
    expect(parseVariantName('default')).toBeUndefined();
  });
  it('are deterministic by seed and differ between seeds', () => {
    const v: VariantSpec = { kind: 'gpushare', share: 50, seed: 1 };
    expect(variantCsv(generateVariant(base, nodes, v))).toBe(variantCsv(generateVariant(base, nodes, v)));
    expect(variantCsv(generateVariant(base, nodes, { ...v, seed: 2 }))).not.toBe(variantCsv(generateVariant(base, nodes, v)));
  });
  it('move the share they are named after, and draw every pod from the base list', () => {
    const shapes = new Set(base.map(key));
    const cases: [VariantSpec, keyof ReturnType<typeof measureShares>, number][] = [
      [{ kind: 'cpu', share: 300, seed: 1 }, 'cpu', 30],
      [{ kind: 'gpushare', share: 60, seed: 1 }, 'gpushare', 8],
      [{ kind: 'gpuspec', share: 40, seed: 1 }, 'gpuspec', 0.5],
      [{ kind: 'multigpu', share: 50, seed: 1 }, 'multigpu', 5],
      // The paper's extreme: every GPU pod shares a GPU (ADR 0189's gpushare100).
      [{ kind: 'gpushare', share: 100, seed: 1 }, 'gpushare', 0],
    ];
    for (const [v, measure, tolerance] of cases) {
      const pods = generateVariant(base, nodes, v, all);
      expect(Math.abs(measureShares(pods, nodes)[measure] - v.share), variantName(v)).toBeLessThanOrEqual(tolerance);
      expect(pods.every((p) => shapes.has(key(p)))).toBe(true);
      expect(new Set(pods.map((p) => p.name)).size).toBe(pods.length);
    }
  });
  it('gpuspec keeps the pods and gives the chosen ones a model list the source uses for pods of that class', () => {
    const pods = generateVariant(base, nodes, { kind: 'gpuspec', share: 40, seed: 3 }, all);
    expect(pods.map(key).sort()).toEqual(base.map(key).sort());
    const lists = new Set(all.filter((p) => p.gpuModels.length > 0).map((p) => p.gpuModels.join('|')));
    for (const p of pods) if (p.gpuModels.length > 0) expect(lists.has(p.gpuModels.join('|'))).toBe(true);
    expect(() => generateVariant(base, nodes, { kind: 'gpuspec', share: 40, seed: 3 })).toThrow(VariantError);
  });
  it('the CSV loads back as the same pods', () => {
    const pods = generateVariant(base, nodes, { kind: 'gpuspec', share: 30, seed: 1 }, all);
    const back = parseOpenbPods(variantCsv(pods), 'v.csv');
    expect(back.map((p) => [p.name, key(p), p.gpuModels.join('|')])).toEqual(pods.map((p) => [p.name, key(p), p.gpuModels.join('|')]));
  });
});
