// The pure half of the WASM plugins: output validation, fallback to the built-in, the status condition, and the
// structural checks on module bytes (the modules here are a few bytes, written out with what each byte means; the
// host's tests run real modules).
import { describe, expect, it } from 'vitest';
import { decideRoute } from './routing.ts';
import type { PluginCaller } from './wasm-plugin.ts';
import {
  MAX_MODULE_BYTES,
  PROBE_BATCH,
  decideBatchSize,
  decideRoutePlugin,
  inspectWasm,
  parsePluginLimits,
  pluginCondition,
  routeArgs,
  selfTest,
  tally,
  validateRoute,
} from './wasm-plugin.ts';

/** A caller answering from a table: the port the host implements, with the answers a module could give. */
const caller = (answers: Record<string, number | string>): PluginCaller => ({
  name: 't.wasm',
  call: (n) => {
    const a = answers[n];
    return typeof a === 'number' ? { ok: true, value: a } : { ok: false, reason: a ?? `no ${n}` };
  },
});

describe('batch size decisions', () => {
  it('takes a valid answer and falls back, with the reason, on any other', () => {
    expect(decideBatchSize(undefined, PROBE_BATCH, 40)).toEqual({ value: 40, source: 'builtin' });
    expect(decideBatchSize(caller({ batch_size: 64 }), PROBE_BATCH, 40)).toEqual({ value: 64, source: 'plugin' });
    expect(decideBatchSize(caller({ batch_size: 0 }), PROBE_BATCH, 40)).toEqual({
      value: 40,
      source: 'builtin',
      reason: 'plugin t.wasm: batch_size returned 0, outside [1, 256]; built-in batch size 40 used',
    });
    expect(decideBatchSize(caller({ batch_size: -Infinity }), PROBE_BATCH, 40).reason).toMatch(/returned -Infinity, not a finite number/);
    expect(decideBatchSize(caller({ batch_size: 'batch_size failed (trap: unreachable)' }), PROBE_BATCH, 40).reason).toBe(
      'plugin t.wasm: batch_size failed (trap: unreachable); built-in batch size 40 used',
    );
  });
});

describe('route decisions', () => {
  const input = { slaClass: 'P3' as const, fragmentation: 0.7, accuracyTolerance: 0.9, tier: 'silver' as const };
  it('passes precision, class, tier, fragmentation and output length in ABI order', () => {
    expect(routeArgs(input)).toEqual([0.9, 3, 1, 0.7, -1]);
    expect(routeArgs({ slaClass: 'P0', fragmentation: 0 })).toEqual([1, 0, -1, 0, -1]);
  });
  it('decodes route index and quantisation, and refuses what the tolerance does not allow', () => {
    expect(validateRoute(2 + 256, input)).toEqual({ ok: true, value: { route: 'gpu-fragments', quantization: 'fp8' } });
    expect(validateRoute(3 + 512, input)).toEqual({ ok: true, value: { route: 'cpu-elastic', quantization: 'int8' } });
    expect(validateRoute(1 + 512, { ...input, accuracyTolerance: 0.96 })).toEqual({
      ok: false,
      reason: 'route chose int8, which accuracyTolerance 0.96 does not allow',
    });
    expect(validateRoute(3 * 256, input)).toEqual({ ok: false, reason: 'route returned quantisation 3, outside 0..2' });
    expect(validateRoute(-1, input).ok).toBe(false);
  });
  it("falls back to the built-in decision, keeping its reasons and adding the plugin's failure", () => {
    const builtin = decideRoute(input);
    const d = decideRoutePlugin(caller({ route: 7 }), input, builtin);
    expect(d).toMatchObject({ route: builtin.route, source: 'builtin' });
    expect(d.reasons).toEqual([...builtin.reasons, `plugin t.wasm: route returned route index 7, outside 0..3; built-in route ${builtin.route} used`]);
    expect(decideRoutePlugin(caller({ route: 1 }), input, builtin)).toEqual({
      route: 'gpu-shared',
      source: 'plugin',
      reasons: ['plugin t.wasm: route gpu-shared'],
    });
  });
});

describe('the self-test and the condition', () => {
  it('refuses another ABI version and a failing probe', () => {
    expect(selfTest(caller({ sits_abi_version: 1, batch_size: 16 }), ['batchSize'])).toEqual({ ok: true, value: true });
    expect(selfTest(caller({ sits_abi_version: 3, batch_size: 16 }), ['batchSize'])).toEqual({
      ok: false,
      reason: 'sits_abi_version returned 3; this host speaks ABI 1',
    });
    expect(selfTest(caller({ sits_abi_version: 1, batch_size: 16 }), ['routing'])).toEqual({ ok: false, reason: 'self-test of route: no route' });
  });
  it('says who decides, and why the built-in does', () => {
    let t = { plugin: 0, builtin: 0 };
    t = tally(t, 'plugin');
    t = tally(t, 'builtin', 'plugin t.wasm: batch_size returned 0, outside [1, 256]; built-in batch size 40 used');
    expect(pluginCondition({ kind: 'loaded', name: 't.wasm', tally: t })).toEqual({
      type: 'StrategyPlugin',
      status: 'True',
      reason: 'PluginActive',
      message:
        'plugin t.wasm loaded; 1 decisions by the plugin, 1 by the built-in (last: plugin t.wasm: batch_size returned 0, outside [1, 256]; built-in batch size 40 used)',
    });
    expect(pluginCondition({ kind: 'none' })).toMatchObject({ status: 'False', reason: 'NoPlugin' });
    expect(pluginCondition({ kind: 'rejected', name: 't.wasm', reason: 'forbidden import wasi.fd_write (function)' }).message).toBe(
      'plugin t.wasm rejected: forbidden import wasi.fd_write (function); built-in strategies used',
    );
  });
});

describe('structural checks', () => {
  // magic \0asm, version 1; type section (1): one type () -> i32; import section (2): none; function section (3):
  // two functions of type 0; memory section (5): one memory, flags 1 (has max), initial 1, maximum 2; export section
  // (7): "sits_abi_version" and "batch_size" as functions 0 and 1; code section (10): two bodies `i32.const 1`.
  const name = (s: string) => [s.length, ...new TextEncoder().encode(s)];
  const section = (id: number, body: number[]) => [id, body.length, ...body];
  const mod = (maxPages: number) =>
    Uint8Array.from([
      0x00,
      0x61,
      0x73,
      0x6d,
      0x01,
      0x00,
      0x00,
      0x00,
      ...section(1, [1, 0x60, 0, 1, 0x7f]),
      ...section(3, [2, 0, 0]),
      ...section(5, [1, 1, 1, maxPages]),
      ...section(7, [2, ...name('sits_abi_version'), 0, 0, ...name('batch_size'), 0, 1]),
      ...section(10, [2, 4, 0, 0x41, 1, 0x0b, 4, 0, 0x41, 1, 0x0b]),
    ]);
  it('reads exports and memory limits without running the module', () => {
    expect(inspectWasm(mod(2), ['batchSize'], { maxMemoryPages: 16 })).toEqual({
      ok: true,
      value: { imports: [], exports: ['sits_abi_version', 'batch_size'], memory: { initial: 1, maximum: 2, imported: false } },
    });
    expect(inspectWasm(mod(17), ['batchSize'], { maxMemoryPages: 16 })).toEqual({
      ok: false,
      reason: 'memory maximum 17 pages is over the cap of 16 pages (1024 KiB)',
    });
    expect(inspectWasm(mod(2), ['routing'], { maxMemoryPages: 16 })).toEqual({
      ok: false,
      reason: 'missing export route (the routing strategy); the module exports sits_abi_version, batch_size',
    });
    const huge = new Uint8Array(MAX_MODULE_BYTES + 1);
    huge.set(mod(2));
    expect(inspectWasm(huge, ['batchSize'], { maxMemoryPages: 16 })).toEqual({
      ok: false,
      reason: `module is ${MAX_MODULE_BYTES + 1} bytes, over the limit of ${MAX_MODULE_BYTES}`,
    });
  });
});

describe('memories beyond the first (issue 36: multi-memory escaped the cap)', () => {
  // The same module as above with other import (2) and memory (5) sections. Node 24 compiles every one of these
  // (the assertion below says so), so each is an attack on the cap, not a module the engine would refuse anyway.
  const name = (s: string) => [s.length, ...new TextEncoder().encode(s)];
  const section = (id: number, body: number[]) => [id, body.length, ...body];
  const importMemory = (flags: number, ...limits: number[]) => [...name('env'), ...name('memory'), 2, flags, ...limits];
  const mod = (o: { imports?: number[][]; memories?: number[][] }) =>
    Uint8Array.from([
      0x00,
      0x61,
      0x73,
      0x6d,
      0x01,
      0x00,
      0x00,
      0x00,
      ...section(1, [1, 0x60, 0, 1, 0x7f]),
      ...(o.imports === undefined ? [] : section(2, [o.imports.length, ...o.imports.flat()])),
      ...section(3, [2, 0, 0]),
      ...(o.memories === undefined ? [] : section(5, [o.memories.length, ...o.memories.flat()])),
      ...section(7, [2, ...name('sits_abi_version'), 0, 0, ...name('batch_size'), 0, 1]),
      ...section(10, [2, 4, 0, 0x41, 1, 0x0b, 4, 0, 0x41, 1, 0x0b]),
    ]);
  const limits = { maxMemoryPages: 16 };
  it('refuses a second declared memory, one declared beside an imported one, and two imports of env.memory', () => {
    // A capped first memory, then one with no maximum (it could grow to 4 GiB).
    const twoDeclared = mod({
      memories: [
        [1, 1, 2],
        [0, 1],
      ],
    });
    const importedAndDeclared = mod({ imports: [importMemory(0, 1)], memories: [[0, 1]] });
    const twoImports = mod({ imports: [importMemory(1, 1, 2), importMemory(0, 1)] });
    for (const [bytes, reason] of [
      [twoDeclared, 'the module has 2 memories (0 imported, 2 declared): a plugin may have one, capped at 16 pages'],
      [importedAndDeclared, 'the module has 2 memories (1 imported, 1 declared): a plugin may have one, capped at 16 pages'],
      [twoImports, 'the module has 2 memories (2 imported, 0 declared): a plugin may have one, capped at 16 pages'],
    ] as const) {
      expect(WebAssembly.validate(bytes), reason).toBe(true);
      expect(inspectWasm(bytes, ['batchSize'], limits)).toEqual({ ok: false, reason });
    }
  });
  it('refuses a 64-bit and a shared memory, declared or imported', () => {
    for (const [bytes, reason] of [
      [mod({ memories: [[0x05, 1, 2]] }), "the module has a 64-bit memory (memory64): a plugin's memory is 32-bit"],
      [mod({ imports: [importMemory(0x05, 1, 2)] }), "the module has a 64-bit memory (memory64): a plugin's memory is 32-bit"],
      [mod({ memories: [[0x03, 1, 2]] }), "the module has a shared memory: a plugin's memory is its own"],
    ] as const) {
      expect(WebAssembly.validate(bytes), reason).toBe(true);
      expect(inspectWasm(bytes, ['batchSize'], limits)).toEqual({ ok: false, reason });
    }
  });
  it('still takes one capped memory, declared or imported', () => {
    expect(inspectWasm(mod({ memories: [[1, 1, 2]] }), ['batchSize'], limits)).toMatchObject({
      ok: true,
      value: { memory: { initial: 1, maximum: 2, imported: false } },
    });
    expect(inspectWasm(mod({ imports: [importMemory(0, 1)] }), ['batchSize'], limits)).toMatchObject({
      ok: true,
      value: { memory: { initial: 1, maximum: 16, imported: true } },
    });
  });
});

describe("the worker's --plugin-limits flag", () => {
  it('takes positive integer limits and names a bad field', () => {
    expect(parsePluginLimits('{"callTimeoutMs":10000,"loadTimeoutMs":60000}')).toEqual({ callTimeoutMs: 10000, loadTimeoutMs: 60000 });
    expect(parsePluginLimits('{"callTimeoutMs":0}')).toEqual({ error: '--plugin-limits: callTimeoutMs must be a positive integer, got 0' });
    expect(parsePluginLimits('{"fuel":5}')).toEqual({ error: '--plugin-limits: unknown field fuel (known: maxMemoryPages, callTimeoutMs, loadTimeoutMs)' });
    expect(parsePluginLimits('[1]')).toMatchObject({ error: expect.stringMatching(/expected an object/) });
    expect(parsePluginLimits('{')).toMatchObject({ error: expect.stringMatching(/^--plugin-limits: not JSON/) });
  });
});
