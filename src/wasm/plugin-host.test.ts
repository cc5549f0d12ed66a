// The WASM plugin host on real modules: the AssemblyScript example compiled here by the AssemblyScript compiler,
// and hand-written WAT assembled by wabt for every way a plugin can be bad. Each bad plugin is refused with a
// reason naming what is wrong, and the decision falls back to the built-in strategy.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import asc from 'assemblyscript/asc';
import wabtInit from 'wabt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LLAMA31_8B_H100 } from '../serving/engine-model.ts';
import { aimdConfig, aimdStep, initialBatchSize, kvCapacityTokens } from '../controllers/batch-inference/batch-size.ts';
import { decideRoute } from '../controllers/batch-inference/routing.ts';
import type { BatchSizeInputs, PluginLimits, StrategyKind } from '../controllers/batch-inference/wasm-plugin.ts';
import { batchSizeInputs, decideBatchSize, decideRoutePlugin, pluginCondition } from '../controllers/batch-inference/wasm-plugin.ts';
import { WasmPlugin } from './plugin-host.ts';

const EXAMPLE = new URL('../../examples/batch-plugins/latency-ratio.ts', import.meta.url).pathname;
let dir: string;
let example: Uint8Array;
let wat: (src: string) => Uint8Array;
const open: WasmPlugin[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sits-wasm-'));
  const out = join(dir, 'latency-ratio.wasm');
  const r = await asc.main([EXAMPLE, '--outFile', out, '--runtime', 'stub', '--maximumMemory', '1', '-O3'], {});
  if (r.error) throw new Error(`asc: ${r.error.message}\n${r.stderr.toString()}`);
  example = readFileSync(out);
  const wabt = await wabtInit();
  wat = (src) => {
    const m = wabt.parseWat('plugin.wat', src);
    try {
      return m.toBinary({}).buffer;
    } finally {
      m.destroy();
    }
  };
}, 120_000);
afterAll(() => {
  for (const p of open) p.close();
  rmSync(dir, { recursive: true, force: true });
});

// Deadlines only decide the cases that loop forever (those set their own); elsewhere they are generous, so that a
// loaded CI machine starting the worker slowly cannot turn a good plugin into a refused one.
const GENEROUS: Partial<PluginLimits> = { loadTimeoutMs: 60_000, callTimeoutMs: 10_000 };
function load(bytes: Uint8Array, strategies: readonly StrategyKind[] = ['batchSize'], limits: Partial<PluginLimits> = {}, sha256?: string) {
  const r = WasmPlugin.load(bytes, { name: 'p.wasm', strategies, limits: { ...GENEROUS, ...limits }, ...(sha256 === undefined ? {} : { sha256 }) });
  if (r.ok) open.push(r.value);
  return r;
}
const reason = (r: ReturnType<typeof load>): string => (r.ok ? 'loaded' : r.reason);

/** A batch-size plugin whose batch_size body is `body` (11 params, result f64). */
const batchPlugin = (body: string, extra = '') => `(module ${extra}
  (func (export "sits_abi_version") (result i32) i32.const 1)
  (func (export "batch_size") (param i32 i32 i32 f64 f64 f64 f64 f64 f64 f64 f64) (result f64) ${body}))`;

const m = LLAMA31_8B_H100;
const mix = { promptTokens: Array.from({ length: 100 }, (_, i) => 200 + 20 * i), outputTokens: Array.from({ length: 100 }, (_, i) => 50 + 5 * i) };
const bounds = { min: 1, max: m.maxNumSeqs };
const SLA = 20_000;

describe('the AssemblyScript example plugin, compiled in this test', () => {
  it('loads, and decides batch sizes other than the built-in on the same inputs', () => {
    const r = load(example, ['batchSize', 'routing']);
    expect(reason(r)).toBe('loaded');
    const p = r.ok ? r.value : (undefined as never);
    const cap = kvCapacityTokens(m, undefined);
    // Start: the built-in holds p90 prompt + p90 output a sequence, then the SLA; the plugin the median prompt.
    const builtin = initialBatchSize(m, undefined, mix, 0.2, bounds, SLA).size;
    const start = decideBatchSize(p, batchSizeInputs(cap, mix, 0.2, bounds, SLA), builtin);
    expect(start.source).toBe('plugin');
    const i0 = batchSizeInputs(cap, mix, 0.2, bounds, SLA);
    expect(start.value).toBe(Math.min(256, Math.floor(cap / (i0.promptP50 * 0.8 + i0.outputP90))));
    // Adjustments: the built-in's AIMD against the plugin's proportional rule, window by window.
    const aimd = aimdConfig(100, bounds, SLA);
    const cases = [
      { p99Ms: 2 * SLA, memoryFraction: 0.5, plugin: 50 }, // × max(0.5, 1/2)
      { p99Ms: SLA / 2, memoryFraction: 0.5, plugin: 125 }, // × min(1.25, 2)
      { p99Ms: SLA / 1.1, memoryFraction: 0.5, plugin: 110 }, // × 1.1
      { p99Ms: SLA / 2, memoryFraction: 0.99, plugin: 80 }, // memory: × 0.8
    ];
    for (const c of cases) {
      const built = aimdStep(100, c, aimd).size;
      const d = decideBatchSize(p, batchSizeInputs(cap, mix, 0.2, bounds, SLA, 100, c), built);
      expect(d).toEqual({ value: c.plugin, source: 'plugin' });
      expect(d.value).not.toBe(built);
    }
  });
  it('routes bronze jobs to fragments where the built-in shares whole GPUs', () => {
    const r = load(example, ['routing']);
    const p = r.ok ? r.value : (undefined as never);
    const input = { slaClass: 'P2' as const, fragmentation: 0.1, tier: 'bronze' as const, accuracyTolerance: 0.97 };
    const builtin = decideRoute(input);
    expect(builtin.route).toBe('gpu-shared');
    expect(decideRoutePlugin(p, input, builtin)).toMatchObject({ route: 'gpu-fragments', quantization: 'fp8', source: 'plugin' });
    expect(decideRoutePlugin(p, { ...input, tier: 'gold' }, builtin)).toMatchObject({ route: 'gpu-shared', source: 'plugin' });
  });
  it('checks the sha256 the job names', () => {
    const sha = createHash('sha256').update(example).digest('hex');
    expect(reason(load(example, ['batchSize'], {}, sha))).toBe('loaded');
    expect(reason(load(example, ['batchSize'], {}, '0'.repeat(64)))).toBe(`plugin p.wasm: sha256 ${sha} differs from the ${'0'.repeat(64)} the job names`);
  });
});

describe('bad plugins are refused with a reason', () => {
  const cases: [string, () => Uint8Array, RegExp, StrategyKind[]?][] = [
    ['not wasm', () => new TextEncoder().encode('#!/bin/sh\necho hi\n'), /not a WebAssembly module/],
    ['invalid wasm', () => Uint8Array.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 0x01, 0x05, 0xff]), /invalid WebAssembly: /],
    ['no ABI version', () => wat('(module (func (export "batch_size") (result i32) i32.const 1))'), /missing export sits_abi_version/],
    [
      'wrong exports',
      () => wat('(module (func (export "sits_abi_version") (result i32) i32.const 1) (func (export "batchSize") (result i32) i32.const 1))'),
      /missing export batch_size \(the batchSize strategy\); the module exports sits_abi_version, batchSize/,
    ],
    [
      'wrong arity',
      () => wat('(module (func (export "sits_abi_version") (result i32) i32.const 1) (func (export "batch_size") (param f64 f64) (result f64) f64.const 8))'),
      /export batch_size takes 2 parameters; ABI 1 has 11/,
    ],
    [
      'another ABI version',
      () =>
        wat(
          '(module (func (export "sits_abi_version") (result i32) i32.const 2) (func (export "batch_size") (param i32 i32 i32 f64 f64 f64 f64 f64 f64 f64 f64) (result f64) f64.const 8))',
        ),
      /sits_abi_version returned 2; this host speaks ABI 1/,
    ],
    [
      'forbidden import',
      () => wat(batchPlugin('f64.const 8', '(import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))')),
      /forbidden import wasi_snapshot_preview1\.fd_write \(function\): a plugin may import only env\.abort, env\.memory/,
    ],
    [
      'an allowed name of the wrong kind',
      () => wat(batchPlugin('f64.const 8', '(import "env" "abort" (global i32))')),
      /import env\.abort must be a function, not a global/,
    ],
    ['memory without a maximum', () => wat(batchPlugin('f64.const 8', '(memory 1)')), /memory declares no maximum: declare one of at most 16 pages/],
    ['memory over the cap', () => wat(batchPlugin('f64.const 8', '(memory 1 100)')), /memory maximum 100 pages is over the cap of 16 pages \(1024 KiB\)/],
    [
      'imported memory over the cap',
      () => wat(batchPlugin('f64.const 8', '(import "env" "memory" (memory 32))')),
      /imported memory starts at 32 pages, over the cap of 16 pages/,
    ],
    ['a trap', () => wat(batchPlugin('unreachable')), /self-test of batch_size: batch_size failed \(trap: unreachable\)/],
    // AssemblyScript's abort(message, file, line, column): the message an AS string (byte length, then UTF-16) at 8.
    [
      'an abort',
      () =>
        wat(
          batchPlugin(
            'i32.const 8 i32.const 0 i32.const 7 i32.const 3 call $abort f64.const 1',
            '(import "env" "abort" (func $abort (param i32 i32 i32 i32))) (memory (export "memory") 1 1) (data (i32.const 4) "\\08\\00\\00\\00o\\00o\\00p\\00s\\00")',
          ),
        ),
      /self-test of batch_size: batch_size failed \(abort: oops\)/,
    ],
    ['a NaN', () => wat(batchPlugin('f64.const nan')), /self-test of batch_size: batch_size returned NaN, not a finite number/],
    ['a size out of range', () => wat(batchPlugin('f64.const 100000')), /batch_size returned 100000, outside \[1, 256\]/],
    ['a fraction', () => wat(batchPlugin('f64.const 2.5')), /batch_size returned 2\.5, not an integer/],
    [
      'a bad route',
      () =>
        wat(
          '(module (func (export "sits_abi_version") (result i32) i32.const 1) (func (export "route") (param f64 i32 i32 f64 f64) (result i32) i32.const 9))',
        ),
      /self-test of route: route returned route index 9, outside 0\.\.3/,
      ['routing'],
    ],
    [
      'a quantisation the tolerance forbids',
      () =>
        wat(
          '(module (func (export "sits_abi_version") (result i32) i32.const 1) (func (export "route") (param f64 i32 i32 f64 f64) (result i32) i32.const 513))',
        ),
      /route chose int8, which accuracyTolerance 1 does not allow/,
      ['routing'],
    ],
  ];
  it.each(cases)('%s', (_name, bytes, want, strategies) => {
    const r = load(bytes(), strategies ?? ['batchSize']);
    expect(r.ok).toBe(false);
    expect(reason(r)).toMatch(/^plugin p\.wasm: /);
    expect(reason(r)).toMatch(want);
    expect(pluginCondition({ kind: 'rejected', name: 'p.wasm', reason: reason(r) })).toMatchObject({ status: 'False', reason: 'PluginRejected' });
  });

  it('an endless loop in the self-test: the worker is terminated at the deadline', () => {
    const r = load(wat(batchPlugin('(loop $l (br $l)) f64.const 1')), ['batchSize'], { callTimeoutMs: 300 });
    expect(reason(r)).toMatch(/self-test of batch_size: batch_size gave no answer within 300 ms \(an endless loop, or the worker died\); worker terminated/);
  });
  it('an endless start function: loading times out', () => {
    const r = load(wat(batchPlugin('f64.const 1', '(func $start (loop $l (br $l))) (start $start)')), ['batchSize'], { loadTimeoutMs: 300 });
    expect(reason(r)).toBe('plugin p.wasm: loading gave no answer within 300 ms (an endless loop, or the worker died); worker terminated');
  });
});

describe('at run time, a failing decision falls back to the built-in', () => {
  const inputs = (current: number): BatchSizeInputs => ({ ...batchSizeInputs(100_000, mix, 0, bounds, SLA, current), observedP99Ms: current === 0 ? -1 : 100 });
  it('memory.grow past the cap is refused inside the module (grow returns -1, an invalid size)', () => {
    // Returns memory.grow(current) + 1 pages: 1 + 1 = 2 at the start (within 16), -1 + 1 = 0 when growing by 20.
    const r = load(wat(batchPlugin('local.get 0 memory.grow i32.const 1 i32.add f64.convert_i32_s', '(memory 1 16)')));
    const p = r.ok ? r.value : (undefined as never);
    expect(decideBatchSize(p, inputs(1), 7)).toEqual({ value: 2, source: 'plugin' }); // grew from 1 to 2 pages
    expect(decideBatchSize(p, inputs(20), 7)).toEqual({
      value: 7,
      source: 'builtin',
      reason: 'plugin p.wasm: batch_size returned 0, outside [1, 256]; built-in batch size 7 used',
    });
    // Imported memory: the host's, with the cap as its maximum.
    const q = load(wat(batchPlugin('local.get 0 memory.grow i32.const 1 i32.add f64.convert_i32_s', '(import "env" "memory" (memory 1))')));
    const qp = q.ok ? q.value : (undefined as never);
    expect(decideBatchSize(qp, inputs(15), 7)).toEqual({ value: 2, source: 'plugin' }); // 1 + 15 = 16 pages: allowed
    expect(decideBatchSize(qp, inputs(1), 7).source).toBe('builtin'); // 17 pages: refused
  });
  it('a trap or a bad answer costs one decision; a missed deadline disables the plugin for good', () => {
    // Answers 8 at the start; traps at current 3; returns +inf at current 4; loops at current 5.
    const body = `local.get 0 i32.eqz (if (then f64.const 8 return))
      local.get 0 i32.const 3 i32.eq (if (then unreachable))
      local.get 0 i32.const 4 i32.eq (if (then f64.const inf return))
      local.get 0 i32.const 5 i32.eq (if (then (loop $l (br $l))))
      local.get 0 f64.convert_i32_s`;
    const r = load(wat(batchPlugin(body)), ['batchSize'], { callTimeoutMs: 2000 });
    const p = r.ok ? r.value : (undefined as never);
    expect(decideBatchSize(p, inputs(0), 32)).toEqual({ value: 8, source: 'plugin' });
    expect(decideBatchSize(p, inputs(3), 32)).toEqual({
      value: 32,
      source: 'builtin',
      reason: 'plugin p.wasm: batch_size failed (trap: unreachable); built-in batch size 32 used',
    });
    expect(decideBatchSize(p, inputs(4), 32).reason).toBe('plugin p.wasm: batch_size returned Infinity, not a finite number; built-in batch size 32 used');
    expect(decideBatchSize(p, inputs(9), 32)).toEqual({ value: 9, source: 'plugin' }); // still deciding
    expect(decideBatchSize(p, inputs(5), 32).reason).toBe(
      'plugin p.wasm: batch_size gave no answer within 2000 ms (an endless loop, or the worker died); worker terminated; built-in batch size 32 used',
    );
    expect(p.disabled).toMatch(/no answer within 2000 ms/);
    expect(decideBatchSize(p, inputs(9), 32)).toMatchObject({
      value: 32,
      source: 'builtin',
      reason: expect.stringMatching(/disabled \(batch_size gave no answer/),
    });
    expect(pluginCondition({ kind: 'disabled', name: 'p.wasm', reason: p.disabled as string, tally: { plugin: 2, builtin: 4 } }).message).toMatch(
      /^plugin p\.wasm disabled: batch_size gave no answer within 2000 ms .*; built-in strategies used; 2 decisions by the plugin, 4 by the built-in$/,
    );
  });
});

describe('the plugin thread in a process with TypeScript preloads', () => {
  it("loads as in a plain process (the thread inherits none of the parent's --import flags)", () => {
    // How the dev kubelet starts a batch worker: node --import tsx --import <a .ts preload>. Before the thread's
    // execArgv was emptied, every plugin was refused there ("loading gave no answer").
    writeFileSync(join(dir, 'preload.ts'), 'const noop: number = 0;\nvoid noop;\n');
    writeFileSync(join(dir, 'example.wasm'), example);
    const host = new URL('./plugin-host.ts', import.meta.url).pathname;
    writeFileSync(
      join(dir, 'load.ts'),
      `import { readFileSync } from 'node:fs';\nimport { WasmPlugin } from ${JSON.stringify(host)};\nconst r = WasmPlugin.load(readFileSync(${JSON.stringify(join(dir, 'example.wasm'))}), { name: 'p', strategies: ['batchSize'], limits: { loadTimeoutMs: 20000, callTimeoutMs: 10000 } });\nconsole.log(r.ok ? 'loaded' : r.reason);\nif (r.ok) r.value.close();\n`,
    );
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--import', join(dir, 'preload.ts'), join(dir, 'load.ts')], {
      cwd: new URL('../..', import.meta.url).pathname,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(out.trim()).toBe('loaded');
  }, 90_000);
});
