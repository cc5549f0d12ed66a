// `sits bench dashboard` in real headless Chromium (the JSON contract of issue 15, deterministic input), and
// `sits demo --serve` as a newcomer runs it: a URL on loopback, a cluster that fills while it replays, Ctrl-C stops it.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../harness/e2e-kit.ts';
import { syntheticFeed } from '../server/bench-feed.ts';
import type { ClusterView } from '../server/cluster-view.ts';
import { runBench } from './testing/bench-cli.ts';

const tmp = mkdtempSync(join(tmpdir(), 'sits-dash-cli-'));
const ROOT = resolve(import.meta.dirname, '../..');

describe('sits bench dashboard', () => {
  it('writes exactly {nodes, firstPaintMs, updateMs: {p50, p99}}, measured in Chromium; details beside', async () => {
    const json = join(tmp, 'd.json');
    const details = join(tmp, 'd-details.json');
    const r = await runBench(['dashboard', '--nodes', '64', '--updates', '12', '--json', json, '--details', details]);
    expect(r.error).toBeUndefined();
    const j = JSON.parse(readFileSync(json, 'utf8')) as { nodes: number; firstPaintMs: number; updateMs: { p50: number; p99: number } };
    expect(Object.keys(j)).toEqual(['nodes', 'firstPaintMs', 'updateMs']);
    expect(Object.keys(j.updateMs)).toEqual(['p50', 'p99']);
    expect(j.nodes).toBe(64);
    for (const x of [j.firstPaintMs, j.updateMs.p50, j.updateMs.p99]) expect(Number.isFinite(x) && x > 0).toBe(true);
    expect(j.updateMs.p99).toBeGreaterThanOrEqual(j.updateMs.p50);
    const d = JSON.parse(readFileSync(details, 'utf8')) as { gpus: number; updates: number; pageErrors: string[] };
    expect(d).toMatchObject({ gpus: 512, updates: 12, pageErrors: [] });
  });

  it('feeds the same cluster for the same seed', () => {
    const a = syntheticFeed(32, 5, 0.5).input();
    const b = syntheticFeed(32, 5, 0.5).input();
    const alloc = (s: typeof a.state): string => JSON.stringify(s.nodes.map((n) => [...n.allocations.values()].map((x) => [x.podId, x.gpus])));
    expect(alloc(a.state)).toBe(alloc(b.state));
    expect(alloc(a.state)).not.toBe(alloc(syntheticFeed(32, 6, 0.5).input().state));
  });
});

describe('sits demo --serve', () => {
  it('prints the dashboard URL on loopback, the cluster fills in virtual time, SIGINT stops it', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/sits.mjs'), 'demo', '--serve', '--port', '0', '--speed', '2000', '--hours', '1'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number>((r) => child.on('close', (code) => r(code ?? -1)));
    try {
      const url = await waitFor('the URL', async () => /SITS demo dashboard: (http:\/\/127\.0\.0\.1:\d+\/dashboard\/)/.exec(out)?.[1], 60_000);
      const api = `${url}api/v1/cluster`;
      const first = (await (await fetch(api)).json()) as ClusterView;
      expect(first).toMatchObject({ source: 'sim', totals: { nodes: 32, gpus: 256 } });
      const later = await waitFor(
        'the cluster filling',
        async () => {
          const v = (await (await fetch(api)).json()) as ClusterView;
          return v.atMs > first.atMs && v.totals.usedGpuMilli > 50_000 ? v : undefined;
        },
        60_000,
        250,
      );
      expect(later.running.length).toBeGreaterThan(0);
      expect(later.queues.map((q) => q.name)).toEqual(['inference', 'notebooks', 'training']);
      expect((await fetch(url)).status).toBe(200);
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited, err).toBe(0);
  });
});
