// `sits bench batch` driven in-process through commander: the JSON shape, byte-identical runs, bad traces.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliError } from './errors.ts';
import { runBench as run } from './testing/bench-cli.ts';

const tmp = mkdtempSync(join(tmpdir(), 'sits-bench-batch-'));

describe('sits bench batch', () => {
  it('writes exactly issue 13\'s JSON shape, byte-identical across runs', async () => {
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
    for (const k of ['static', 'fixed', 'sits']) expect(Object.keys(j[k] as object)).toEqual(['throughputTokensPerSec', 'p99LatencyMs', 'utilizationPct', 'gpuHoursPerMTokens']);
    expect(Object.keys(j.tenants as object)).toEqual(['gold', 'silver', 'bronze']);
    expect(Object.keys((j.tenants as Record<string, object>).gold as object)).toEqual(['sharePct', 'entitledPct']);
    expect(j.faults).toEqual({ recordsLost: 0, recordsDuplicated: 0, makespanRatio: expect.any(Number) });
    expect(j.controlPlane).toBeNull();
    expect(Object.keys(JSON.parse(readFileSync(details, 'utf8')) as object)).toContain('goal');
  }, 120_000);
  it('names the file, line and column of a bad trace row', async () => {
    const bad = join(tmp, 'bad.csv');
    writeFileSync(bad, 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,12,y\n');
    const r = await run(['batch', '--trace', bad, '--json', join(tmp, 'x.json')]);
    expect(r.error).toBeInstanceOf(CliError);
    expect(r.error?.message).toBe(`${bad}:2:24: GeneratedTokens "y" is not a whole number ≥ 1`);
  });
});
