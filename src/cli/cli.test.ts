import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runSits } from '../testing/sits-cli.ts';

const sits = runSits;
const tmp = mkdtempSync(join(tmpdir(), 'sits-cli-'));

describe('sits demo', () => {
  it('the same seed gives byte-identical JSON, another seed differs', async () => {
    const a = join(tmp, 'a.json');
    const b = join(tmp, 'b.json');
    const c = join(tmp, 'c.json');
    expect((await sits(['demo', '--seed', '7', '--hours', '2', '--json', a])).code).toBe(0);
    expect((await sits(['demo', '--seed', '7', '--hours', '2', '--json', b])).code).toBe(0);
    expect((await sits(['demo', '--seed', '8', '--hours', '2', '--json', c])).code).toBe(0);
    expect(readFileSync(a, 'utf8')).toBe(readFileSync(b, 'utf8'));
    expect(readFileSync(a, 'utf8')).not.toBe(readFileSync(c, 'utf8'));
    const j = JSON.parse(readFileSync(a, 'utf8'));
    expect(j.results.map((r: { profile: string }) => r.profile)).toEqual(['sits', 'kube-default']);
    for (const r of j.results) {
      expect(r.gpuAllocationPct).toBeGreaterThan(0);
      expect(r.gpuAllocationPct).toBeLessThanOrEqual(100);
      expect(r.jobsStarted + r.jobsNeverStarted).toBe(j.workload.jobs);
    }
  });

  it('rejects a bad seed with a clear message and exit code 2', async () => {
    const r = await sits(['demo', '--seed', 'abc']);
    expect(r.code).toBe(2);
    expect(r.err).toBe('sits: demo --seed: "abc" is not a whole number (give a whole number, e.g. 42; see sits demo --help)\n');
  });
});

describe('sits schedule', () => {
  const cluster = join(tmp, 'cluster.yaml');
  writeFileSync(cluster, 'nodes:\n  - {namePrefix: h100-, count: 2, shape: dgx-h100, rack: r0}\n');

  it('prints placements with GPU indices and explanations', async () => {
    const wl = join(tmp, 'wl.yaml');
    writeFileSync(wl, 'pods:\n  - {name: a, gpu: 2}\n  - {name: huge, gpu: 16}\n');
    const r = await sits(['schedule', '--cluster', cluster, '--workload', wl, '-o', 'json']);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.placements).toHaveLength(1);
    expect(j.placements[0].gpus).toHaveLength(2);
    expect(j.pending[0].explanation).toBe('0/2 nodes fit pod huge: 2 with fewer GPUs than the 16 requested');
    expect(j.pending[0].unresolvable).toBe(true);
  });

  it('names file, line, column and field of a bad workload, exits 2 and places nothing', async () => {
    const wl = join(tmp, 'bad.yaml');
    writeFileSync(wl, 'pods:\n  - {name: a, gpu: 1}\n  - name: b\n    gpu: two\n');
    const r = await sits(['schedule', '--cluster', cluster, '--workload', wl]);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`${wl}:4:10: pods[1].gpu: Expected number (got "two")`);
  });

  it('names an unknown shape in the cluster file', async () => {
    const bad = join(tmp, 'bad-cluster.yaml');
    writeFileSync(bad, 'nodes:\n  - {name: n0, shape: dgx-h200}\n');
    const wl = join(tmp, 'ok.yaml');
    writeFileSync(wl, 'pods: [{name: a, gpu: 1}]\n');
    const r = await sits(['schedule', '--cluster', bad, '--workload', wl]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(new RegExp(`${bad}:2:23: nodes\\[0\\]\\.shape: unknown shape "dgx-h200"`));
  });

  it('reads an unquoted minComputeCapability: 9.0 as sm_90: a Hopper-only pod is not placed on a T4 (issue 31)', async () => {
    const t4 = join(tmp, 't4.yaml');
    writeFileSync(t4, 'nodes:\n  - {namePrefix: t4-, count: 1, shape: t4x4, rack: r0}\n');
    const wl = join(tmp, 'hopper.yaml');
    writeFileSync(wl, 'pods:\n  - {name: h, gpu: 1, minComputeCapability: 9.0}\n  - {name: a, gpu: 1, minComputeCapability: 8.6}\n');
    const r = await sits(['schedule', '--cluster', t4, '--workload', wl, '-o', 'json']);
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out) as { placements: unknown[]; pending: { explanation: string }[] };
    expect(j.placements).toEqual([]);
    expect(j.pending.map((p) => p.explanation)).toEqual([
      '0/1 nodes fit pod h: 1 GPU model not allowed (needs sm_90)',
      '0/1 nodes fit pod a: 1 GPU model not allowed (needs sm_86)',
    ]);
  });

  it('reports a missing file', async () => {
    const r = await sits(['schedule', '--cluster', join(tmp, 'nope.yaml'), '--workload', cluster]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^sits: --cluster .*nope\.yaml: no such file \(check the path of the cluster file\)\n$/);
  });
});

describe('help', () => {
  it('every command has --help', async () => {
    for (const cmd of [[], ['demo'], ['schedule'], ['presets'], ['profiles'], ['bench']]) {
      const r = await sits([...cmd, '--help']);
      expect(r.code, cmd.join(' ')).toBe(0);
      expect(r.out).toContain('Usage: sits');
    }
  });
});
