// A job's spec.strategy to loaded plugins and its StrategyPlugin condition: files under the plugin directory and
// ConfigMap bytes, digests, and every refusal leaving that strategy to the built-in.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wabtInit from 'wabt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBE_BATCH, decideBatchSize } from '../controllers/batch-inference/wasm-plugin.ts';
import { loadJobPlugins } from './job-plugins.ts';

let dir: string;
let batch: Uint8Array;
let route: Uint8Array;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  const wabt = await wabtInit();
  const bin = (src: string) => wabt.parseWat('p.wat', src).toBinary({}).buffer;
  batch = bin(
    '(module (func (export "sits_abi_version") (result i32) i32.const 1) (func (export "batch_size") (param i32 i32 i32 f64 f64 f64 f64 f64 f64 f64 f64) (result i32) i32.const 24))',
  );
  route = bin(
    '(module (func (export "sits_abi_version") (result i32) i32.const 1) (func (export "route") (param f64 i32 i32 f64 f64) (result i32) i32.const 2))',
  );
  dir = mkdtempSync(join(tmpdir(), 'sits-plugins-'));
  writeFileSync(join(dir, 'batch.wasm'), batch);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('loadJobPlugins', () => {
  it('loads a file plugin and a ConfigMap plugin; the condition says both decide', () => {
    const j = loadJobPlugins(
      {
        batchSize: { wasm: { file: 'batch.wasm', sha256: sha(batch) } },
        routing: { wasm: { configMap: { name: 'plugins', key: 'route.wasm' }, sha256: sha(route) } },
      },
      // Generous deadlines: a loaded CI machine may start the workers slowly.
      {
        pluginDir: dir,
        configMapBytes: (n, k) => (n === 'plugins' && k === 'route.wasm' ? route : undefined),
        limits: { loadTimeoutMs: 60_000, callTimeoutMs: 10_000 },
      },
    );
    try {
      expect(j.condition).toEqual({
        type: 'StrategyPlugin',
        status: 'True',
        reason: 'PluginActive',
        message: 'batchSize: plugin batch.wasm loaded; routing: plugin configmap/plugins/route.wasm loaded',
      });
      expect(decideBatchSize(j.batchSize, PROBE_BATCH, 40)).toEqual({ value: 24, source: 'plugin' });
      expect(j.routing?.call('route', [1, 2, -1, 0.1, -1])).toEqual({ ok: true, value: 2 });
    } finally {
      j.close();
    }
  });
  it('refuses a wrong digest, a missing key, a missing file and an escape; those strategies stay built-in', () => {
    const j = loadJobPlugins(
      {
        batchSize: { wasm: { file: 'batch.wasm', sha256: '0'.repeat(64) } },
        routing: { wasm: { configMap: { name: 'plugins', key: 'gone.wasm' }, sha256: sha(route) } },
      },
      { pluginDir: dir, configMapBytes: () => undefined },
    );
    expect(j.batchSize).toBeUndefined();
    expect(j.routing).toBeUndefined();
    expect(j.condition.status).toBe('False');
    expect(j.condition.reason).toBe('PluginRejected');
    expect(j.condition.message).toBe(
      `batchSize: plugin batch.wasm rejected: sha256 ${sha(batch)} differs from the ${'0'.repeat(64)} the job names; built-in strategies used; ` +
        'routing: plugin configmap/plugins/gone.wasm rejected: ConfigMap plugins does not exist or has no key gone.wasm; built-in strategies used',
    );
    const f = loadJobPlugins(
      { batchSize: { wasm: { file: 'nope.wasm', sha256: sha(batch) } }, routing: { wasm: { file: '../x.wasm', sha256: sha(route) } } },
      { pluginDir: dir },
    );
    expect(f.states.batchSize).toMatchObject({ kind: 'rejected', reason: expect.stringMatching(/^cannot read .*nope\.wasm: ENOENT/) });
    expect(f.states.routing).toEqual({ kind: 'rejected', name: '../x.wasm', reason: 'file ../x.wasm is outside the plugin directory' });
    expect(loadJobPlugins({ batchSize: { wasm: { file: 'batch.wasm', sha256: sha(batch) } } }, {}).states.batchSize).toMatchObject({
      kind: 'rejected',
      reason: "file references need the controller's plugin directory, and none is configured",
    });
    expect(loadJobPlugins(undefined, {}).condition).toEqual({ type: 'StrategyPlugin', status: 'False', reason: 'NoPlugin', message: 'built-in strategies' });
  });
});
