// `sits bench batch` driven in-process through commander: the JSON shape, byte-identical runs, bad traces.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wabtInit from 'wabt';
import { describe, expect, it } from 'vitest';
import { CliError } from './errors.ts';
import { runBench as run } from './testing/bench-cli.ts';

const tmp = mkdtempSync(join(tmpdir(), 'sits-bench-batch-'));

describe('sits bench batch', () => {
  it("writes exactly issue 13's JSON shape, byte-identical across runs", async () => {
    const a = join(tmp, 'a.json');
    const b = join(tmp, 'b.json');
    const details = join(tmp, 'd.json');
    const r = await run(['batch', '--records', '300', '--json', a, '--details', details]);
    expect(r.error).toBeUndefined();
    expect(r.out).toMatch(/policy\s+tokens\/s\s+p99 ms\s+util %/);
    await run(['batch', '--records', '300', '--json', b]);
    expect(readFileSync(a, 'utf8')).toBe(readFileSync(b, 'utf8'));
    const j = JSON.parse(readFileSync(a, 'utf8')) as Record<string, Record<string, unknown>>;
    expect(Object.keys(j)).toEqual(['static', 'fixed', 'sits', 'tenants', 'faults', 'controlPlane']);
    for (const k of ['static', 'fixed', 'sits'])
      expect(Object.keys(j[k] as object)).toEqual(['throughputTokensPerSec', 'p99LatencyMs', 'utilizationPct', 'gpuHoursPerMTokens']);
    expect(Object.keys(j.tenants as object)).toEqual(['gold', 'silver', 'bronze']);
    expect(Object.keys((j.tenants as Record<string, object>).gold as object)).toEqual(['sharePct', 'entitledPct']);
    expect(j.faults).toEqual({ recordsLost: 0, recordsDuplicated: 0, makespanRatio: expect.any(Number) });
    // Without --control-plane no cluster is started, and the run says so rather than inventing a number.
    expect(j.controlPlane).toBeNull();
    expect(r.out).toContain('controlPlane: null (not measured: needs --control-plane');
    const d = JSON.parse(readFileSync(details, 'utf8')) as { goal: object; controlPlane: { notMeasured: string } };
    expect(d.goal).toBeDefined();
    expect(d.controlPlane.notMeasured).toMatch(/^not measured: needs --control-plane/);
  }, 120_000);
  it('runs the SITS batch sizes from a WASM plugin (--batch-plugin), and refuses a bad one', async () => {
    const wabt = await wabtInit();
    const wasm = (name: string, body: string) => {
      const file = join(tmp, name);
      const src = `(module (func (export "sits_abi_version") (result i32) i32.const 1)
        (func (export "batch_size") (param i32 i32 i32 f64 f64 f64 f64 f64 f64 f64 f64) (result i32) ${body}))`;
      writeFileSync(file, wabt.parseWat(name, src).toBinary({}).buffer);
      return file;
    };
    const d0 = join(tmp, 'd0.json');
    await run(['batch', '--records', '300', '--json', join(tmp, 'j0.json'), '--details', d0]);
    const d8 = join(tmp, 'd8.json');
    const r = await run(['batch', '--records', '300', '--json', join(tmp, 'j8.json'), '--details', d8, '--batch-plugin', wasm('eight.wasm', 'i32.const 8')]);
    expect(r.error).toBeUndefined();
    expect(r.out).toMatch(/batch plugin .*eight\.wasm: \d+ batch sizes by the plugin, 0 by the built-in\n/);
    const builtin = JSON.parse(readFileSync(d0, 'utf8')) as { sitsInitialBatch: number };
    const plugged = JSON.parse(readFileSync(d8, 'utf8')) as {
      sitsInitialBatch: number;
      sitsBatchSizes: object;
      batchPlugin: { plugin: number; builtin: number };
    };
    expect(builtin.sitsInitialBatch).not.toBe(8);
    expect(plugged.sitsInitialBatch).toBe(8);
    expect(plugged.sitsBatchSizes).toEqual({ min: 8, max: 8, last: 8 });
    expect(plugged.batchPlugin.builtin).toBe(0);
    const bad = wasm('loops.wasm', '(loop $l (br $l)) i32.const 8');
    const e = await run(['batch', '--records', '300', '--json', join(tmp, 'x.json'), '--batch-plugin', bad]);
    expect(e.error).toBeInstanceOf(CliError);
    expect(e.error?.message).toBe(
      `--batch-plugin: plugin ${bad}: self-test of batch_size: batch_size gave no answer within 1000 ms (an endless loop, or the worker died); worker terminated`,
    );
  }, 120_000);
  it('--control-plane without the control-plane binaries fails saying why, and writes no JSON', async () => {
    const empty = mkdtempSync(join(tmp, 'no-bin-'));
    const out = join(tmp, 'cp.json');
    const saved = process.env.SITS_K8S_BIN;
    process.env.SITS_K8S_BIN = empty;
    try {
      const r = await run(['batch', '--records', '300', '--json', out, '--control-plane']);
      expect(r.error).toBeInstanceOf(CliError);
      expect(r.error?.message).toMatch(/^--control-plane: not measured: .*ensure\.mjs failed/s);
      expect(r.error?.message).toContain(empty);
      expect(existsSync(out)).toBe(false);
    } finally {
      if (saved === undefined) delete process.env.SITS_K8S_BIN;
      else process.env.SITS_K8S_BIN = saved;
    }
  });
  it('names the file, line and column of a bad trace row', async () => {
    const bad = join(tmp, 'bad.csv');
    writeFileSync(bad, 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,12,y\n');
    const r = await run(['batch', '--trace', bad, '--json', join(tmp, 'x.json')]);
    expect(r.error).toBeInstanceOf(CliError);
    expect(r.error?.message).toBe(`${bad}:2:24: GeneratedTokens "y" is not a whole number ≥ 1`);
  });
});
