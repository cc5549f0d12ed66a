// spec.strategy (WASM strategy plugins, issue 13 Deliver 9): what a job may name, offline; the same cases run
// against the real apiserver through INVALID_CASES (src/api/crds.e2e.test.ts).
import { describe, expect, it } from 'vitest';
import { EXAMPLES } from '../examples.ts';
import { validateResource } from '../validate.ts';

const withStrategy = (strategy: unknown) => {
  const m = structuredClone(EXAMPLES.BatchInferenceJob);
  (m.spec as Record<string, unknown>).strategy = strategy;
  return validateResource('BatchInferenceJob', m);
};
const sha = 'ab'.repeat(32);

describe('spec.strategy', () => {
  it('accepts a module from a ConfigMap key or a file, pinned by digest', () => {
    const r = withStrategy({
      batchSize: { wasm: { configMap: { name: 'batch-plugins', key: 'latency-ratio.wasm' }, sha256: sha } },
      routing: { wasm: { file: 'tiers/bronze.wasm', sha256: sha } },
    });
    expect(r.ok).toBe(true);
    expect(r.ok && r.value.spec.strategy?.routing?.wasm.file).toBe('tiers/bronze.wasm');
    expect(withStrategy(undefined).ok).toBe(true);
  });
  it('names the field of a bad reference', () => {
    const paths = (s: unknown) => {
      const r = withStrategy(s);
      return r.ok ? [] : r.errors.map((e) => e.path);
    };
    expect(paths({ batchSize: { wasm: { sha256: sha } } })).toEqual(['spec.strategy.batchSize.wasm.configMap']);
    expect(paths({ batchSize: { wasm: { file: 'a.wasm' } } })).toEqual(['spec.strategy.batchSize.wasm.sha256']);
    expect(paths({ batchSize: { wasm: { file: 'a/.hidden/b.wasm', sha256: sha } } })).toEqual(['spec.strategy.batchSize.wasm.file']);
    expect(paths({ routing: { wasm: { configMap: { name: 'Plugins', key: 'a.wasm' }, sha256: sha } } })).toEqual(['spec.strategy.routing.wasm.configMap.name']);
    expect(paths({ routing: {} })).toEqual(['spec.strategy.routing.wasm']);
    expect(paths({ batchSize: { wasm: { configMap: { name: 'plugins', key: '..' }, sha256: sha } } })).toEqual(['spec.strategy.batchSize.wasm.configMap.key']);
    expect(paths({ batchSize: { wasm: { configMap: { name: 'plugins', key: '..data' }, sha256: sha } } })).toEqual([
      'spec.strategy.batchSize.wasm.configMap.key',
    ]);
    expect(paths({ batchSize: { wasm: { configMap: { name: 'plugins', key: '.grow.wasm' }, sha256: sha } } })).toEqual([]);
  });
});
