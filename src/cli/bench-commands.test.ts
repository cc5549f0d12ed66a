// Tests of the `sits bench fgd|throughput|replay` subcommands, driven in-process through commander
// (they live here because src/cli/commands holds only the command files).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CliError } from './errors.ts';
import { runBench as run, simFixture as fixture } from './testing/bench-cli.ts';

const tmp = mkdtempSync(join(tmpdir(), 'sits-bench-'));

afterEach(() => vi.restoreAllMocks());

describe('sits bench fgd', () => {
  const base = ['fgd', '--nodes', fixture('tiny_nodes.csv'), '--pods', fixture('tiny_pods.csv'), '--workers', '0', '--no-timing'];
  it('writes the JSON contract, a table and an HTML report; the JSON is byte-identical across runs', async () => {
    const a = join(tmp, 'a.json');
    const b = join(tmp, 'b.json');
    const html = join(tmp, 'r.html');
    const r = await run([...base, '--policies', 'bestfit,fgd,sits', '--seeds', '42-44', '--json', a, '--html', html]);
    expect(r.error).toBeUndefined();
    expect(r.out).toMatch(/policy\s+@90\s+@95\s+@100/);
    await run([...base, '--policies', 'bestfit,fgd,sits', '--seeds', '42-44', '--json', b]);
    expect(readFileSync(a, 'utf8')).toBe(readFileSync(b, 'utf8'));
    const j = JSON.parse(readFileSync(a, 'utf8'));
    expect(j).toMatchObject({ trace: 'tiny_pods.csv', seeds: [42, 43, 44] });
    expect(j.results.map((x: { policy: string; runMs: number }) => [x.policy, x.runMs])).toEqual([
      ['bestfit', 0],
      ['fgd', 0],
      ['sits', 0],
    ]);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('new Chart(');
    expect(page).toContain('Chart.js v4');
    expect(page).not.toMatch(/<script[^>]+src=/); // everything inline: works offline
  });
  it.each([
    [['--seeds', 'x'], /--seeds must look like 42-51/],
    [['--policies', 'fgd,nope'], /unknown profile "nope"/],
    [['--policies', 'fgd,fgd'], /twice/],
  ])('rejects bad arguments %j with a CliError', async (extra, msg) => {
    const r = await run([...base, ...extra]);
    expect(r.error).toBeInstanceOf(CliError);
    expect(r.error?.message).toMatch(msg);
  });
  it('names the file and line of a bad trace row', async () => {
    const r = await run(['fgd', '--nodes', fixture('tiny_pods.csv'), '--pods', fixture('tiny_pods.csv'), '--workers', '0']);
    expect(r.error).toBeInstanceOf(CliError);
    expect(r.error?.message).toMatch(/tiny_pods\.csv:1: field "sn": missing column/);
  });
  it('requires --nodes and --pods', async () => {
    const r = await run(['fgd', '--pods', fixture('tiny_pods.csv')]);
    expect(r.error?.message).toMatch(/required option '--nodes <csv>'/);
  });
});

describe('sits bench throughput', () => {
  it('writes exactly the contract’s fields', async () => {
    const f = join(tmp, 't.json');
    const r = await run(['throughput', '--nodes', '32', '--workload', 'mixed', '--no-warmup', '--json', f]);
    expect(r.error).toBeUndefined();
    const j = JSON.parse(readFileSync(f, 'utf8'));
    expect(Object.keys(j)).toEqual(['nodes', 'pods', 'workload', 'podsPerSecond', 'gangAttemptMs', 'rssMiB']);
    expect(Object.keys(j.gangAttemptMs)).toEqual(['p50', 'p99']);
    expect(j).toMatchObject({ nodes: 32, pods: 256, workload: 'mixed' });
  });
  it('--slowest lists the slowest gang attempts with their work (the JSON stays the contract)', async () => {
    const f = join(tmp, 's.json');
    const r = await run(['throughput', '--nodes', '32', '--workload', 'gang', '--pods', '16', '--no-warmup', '--slowest', '2', '--json', f]);
    expect(r.error).toBeUndefined();
    expect(r.out).toMatch(/2 slowest of 2 gang attempts/);
    expect(r.out).toMatch(/index builds +nodes evaluated +domains tried +GC ms/);
    expect(Object.keys(JSON.parse(readFileSync(f, 'utf8')))).toEqual(['nodes', 'pods', 'workload', 'podsPerSecond', 'gangAttemptMs', 'rssMiB']);
  });
  it('rejects an unknown workload and oversized single workloads', async () => {
    expect((await run(['throughput', '--nodes', '4', '--workload', 'huge'])).error?.message).toMatch(/--workload must be one of/);
    expect((await run(['throughput', '--nodes', '4', '--workload', 'single', '--pods', '100'])).error?.message).toMatch(/do not fit/);
    expect((await run(['throughput', '--nodes', '0'])).error?.message).toMatch(/0 is out of range \(give a whole number from 1 to/);
  });
});

describe('sits bench replay', () => {
  it('replays the openb fixture with its timestamps', async () => {
    const f = join(tmp, 'replay.json');
    const r = await run([
      'replay',
      '--trace',
      fixture('tiny_pods.csv'),
      '--nodes',
      fixture('tiny_nodes.csv'),
      '--compress',
      '20',
      '--policies',
      'sits,fgd',
      '--json',
      f,
      '--html',
      join(tmp, 'replay.html'),
    ]);
    expect(r.error).toBeUndefined();
    const j = JSON.parse(readFileSync(f, 'utf8'));
    expect(j.results.map((x: { policy: string }) => x.policy)).toEqual(['sits', 'fgd']);
    expect(j.results[0].pods).toBe(280);
  });
  it('needs exactly one cluster source', async () => {
    const r = await run(['replay', '--trace', fixture('tiny_pods.csv')]);
    expect(r.error?.message).toMatch(/exactly one of --nodes/);
    expect((await run(['replay', '--trace', fixture('tiny_pods.csv'), '--cluster-size', '8by8'])).error?.message).toMatch(/--cluster-size must look like 64x8/);
  });
});

describe('sits bench webhook', () => {
  it("writes exactly issue 16's JSON shape, the details apart", async () => {
    const json = join(tmp, 'webhook.json');
    const details = join(tmp, 'webhook-details.json');
    const r = await run(['webhook', '--reviews', '200', '--concurrency', '4', '--manifests', '200', '--json', json, '--details', details]);
    expect(r.error).toBeUndefined();
    const j = JSON.parse(readFileSync(json, 'utf8')) as Record<string, unknown>;
    expect(Object.keys(j)).toEqual(['reviewsPerSec', 'latencyMs', 'lintManifestsPerSec']);
    expect(Object.keys(j.latencyMs as object)).toEqual(['p50', 'p99']);
    for (const v of [j.reviewsPerSec, (j.latencyMs as { p50: number }).p50, (j.latencyMs as { p99: number }).p99, j.lintManifestsPerSec])
      expect(v).toBeGreaterThan(0);
    const d = JSON.parse(readFileSync(details, 'utf8')) as { webhook: { reviews: number; denied: number }; lint: { manifests: number } };
    expect(d.webhook.reviews).toBe(200);
    expect(d.webhook.denied).toBeGreaterThan(0);
    expect(d.lint.manifests).toBe(200);
  }, 60_000);
});

describe('sits bench serving', () => {
  // A small trace in the Azure format: a quiet minute, a burst, a quiet minute.
  const rows = ['TIMESTAMP,ContextTokens,GeneratedTokens'];
  for (let i = 0; i < 240; i++) {
    const sec = i < 40 ? i * 1.5 : i < 200 ? 60 + (i - 40) * 0.25 : 100 + (i - 200) * 1.5;
    rows.push(
      `2023-11-16 18:${String(17 + Math.floor(sec / 60)).padStart(2, '0')}:${(sec % 60).toFixed(3).padStart(6, '0')},${800 + ((i * 613) % 3000)},${1 + ((i * 17) % 40)}`,
    );
  }
  const trace = join(tmp, 'azure.csv');
  writeFileSync(trace, `${rows.join('\n')}\n`);
  it("writes exactly issue 12's JSON shape, byte-identical across runs, the details apart", async () => {
    const a = join(tmp, 'serving-a.json');
    const b = join(tmp, 'serving-b.json');
    const details = join(tmp, 'serving-details.json');
    const r = await run(['serving', '--trace', trace, '--max-replicas', '6', '--json', a, '--details', details]);
    expect(r.error).toBeUndefined();
    expect(r.out).toMatch(/policy\s+within SLO %\s+GPU-h/);
    expect(r.out).toMatch(/SITS as shipped \(an InferenceService's defaults, not tuned on the trace\): [\d.]+ % within SLO, [\d.]+× static GPU-h/);
    await run(['serving', '--trace', trace, '--max-replicas', '6', '--json', b]);
    expect(readFileSync(a, 'utf8')).toBe(readFileSync(b, 'utf8'));
    const j = JSON.parse(readFileSync(a, 'utf8')) as { policies: Record<string, object>; sharing: object };
    expect(Object.keys(j)).toEqual(['sloTtftSec', 'policies', 'sharing']);
    expect(Object.keys(j.policies)).toEqual(['static', 'keda', 'concurrency', 'sits']);
    expect(Object.keys(JSON.parse(readFileSync(details, 'utf8')) as object)).toContain('goal');
  }, 120_000);
  it('names the file, line and column of a bad trace row', async () => {
    const bad = join(tmp, 'bad.csv');
    writeFileSync(bad, 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,x,1\n');
    const r = await run(['serving', '--trace', bad, '--json', join(tmp, 'x.json')]);
    expect(r.error).toBeInstanceOf(CliError);
    expect(r.error?.message).toBe(`${bad}:2:21: ContextTokens "x" is not a whole number ≥ 1`);
  });
  it('serving-traces: runs the chosen variants, the same JSON for the same seed, and names an unknown variant', async () => {
    const a = join(tmp, 'traces-a.json');
    const b = join(tmp, 'traces-b.json');
    const args = ['serving-traces', '--trace', trace, '--max-replicas', '6', '--variants', 'as-is,every-8'];
    const r = await run([...args, '--json', a]);
    expect(r.error).toBeUndefined();
    expect(r.out).toMatch(/variant\s+requests\s+static n/);
    expect(r.out).toMatch(/reactive bound %\s+goal\s+defaults within SLO %\s+defaults × static\s+goal \(defaults\)/);
    await run([...args, '--json', b]);
    expect(readFileSync(a, 'utf8')).toBe(readFileSync(b, 'utf8'));
    const j = JSON.parse(readFileSync(a, 'utf8')) as { variants: { name: string; requests: number }[] };
    expect(j.variants.map((v) => [v.name, v.requests])).toEqual([
      ['as-is', 240],
      ['every-8', 30],
    ]);
    const bad = await run(['serving-traces', '--trace', trace, '--variants', 'as-is,sideways', '--json', join(tmp, 'y.json')]);
    expect(bad.error).toBeInstanceOf(CliError);
    expect(bad.error?.message).toMatch(/^--variants: unknown sideways \(known: as-is, first-half/);
  }, 120_000);
});

describe('sits bench kube', () => {
  // Checked before any control plane starts: a bad limit would otherwise surface after minutes of pod creation.
  it.each(['lots', '0'])('rejects --sits-memory-limit %s with a CliError', async (limit) => {
    const r = await run(['kube', '--nodes', '1', '--pods', '1', '--sits-memory-limit', limit]);
    expect(r.error).toBeInstanceOf(CliError);
    expect(r.error?.message).toBe(`--sits-memory-limit: not a memory limit: "${limit}"`);
  });
});
