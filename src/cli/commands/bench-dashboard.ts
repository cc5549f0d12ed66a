import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import type { Command } from 'commander';
import { nearestRank } from '../../core/stats.ts';
import { syntheticFeed } from '../../server/bench-feed.ts';
import { startServer } from '../../server/server.ts';
import { ClusterViewStream } from '../../server/view-stream.ts';
import { intOption } from '../options.ts';

export interface DashboardBenchResult {
  readonly nodes: number;
  readonly firstPaintMs: number;
  readonly updateMs: { readonly p50: number; readonly p99: number };
}

interface Paint {
  readonly kind: string;
  readonly seq: number;
  readonly ms: number;
  readonly wallMs: number;
  readonly nodes?: number;
  readonly parseMs?: number;
  readonly heatmapMs?: number;
  readonly tablesMs?: number;
}

const round1 = (x: number): number => Math.round(x * 10) / 10;

/**
 * The dashboard in real headless Chromium on a synthetic cluster of `nodes` × 8 GPUs fed by the simulator:
 * first paint (navigation start → the frame with the whole heatmap and tables, the view built, sent and parsed
 * included), then `updates` changes one at a time (a simulator event that changed the cluster → the server's
 * patch → the frame that shows it, end to end on one machine's clock).
 */
export async function runDashboardBench(o: {
  readonly nodes: number;
  readonly seed: number;
  readonly updates: number;
  readonly log: (m: string) => void;
}): Promise<{ result: DashboardBenchResult; details: Record<string, unknown> }> {
  const t0 = performance.now();
  const feed = syntheticFeed(o.nodes, o.seed);
  const prefillMs = performance.now() - t0;
  o.log(`dashboard bench: ${o.nodes} nodes, ${feed.stats.started} job starts simulated in ${(prefillMs / 1000).toFixed(1)} s`);
  // No coalescing: every change is sent at once, so that an update is timed from its own change.
  const stream = new ClusterViewStream(() => feed.input(), { minIntervalMs: 0 });
  const server = await startServer({ port: 0, host: '127.0.0.1', view: stream });
  // Chromium is a test-time dependency (playwright-core with Debian's chromium): loaded only here.
  const { launchChromium, pageErrors } = await import('../../testing/chromium.ts');
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = pageErrors(page);
    const b0 = performance.now();
    const fullJson = stream.viewJson();
    const buildMs = performance.now() - b0;
    await page.goto(`${server.url}/dashboard/`);
    await page.waitForFunction(() => (window as unknown as { sitsDashboard?: { firstPaintMs?: number } }).sitsDashboard?.firstPaintMs !== undefined, null, {
      timeout: 300_000,
    });
    const firstPaintMs = await page.evaluate(() => performance.getEntriesByName('sits-first-paint')[0]?.startTime ?? Number.NaN);
    const samples: {
      endToEndMs: number;
      pageMs: number;
      serverMs: number;
      nodes: number;
      bytes: number;
      parseMs: number;
      heatmapMs: number;
      tablesMs: number;
    }[] = [];
    let patchBytes = 0;
    for (let i = 0; i < o.updates && feed.eventsLeft > 0; i++) {
      // The next simulator event that changes the cluster (an arrival that only waits changes the tables alone).
      const seq0 = feed.state.seq;
      for (let k = 0; k < 10_000 && feed.state.seq === seq0 && feed.step(); k++);
      const sent = Date.now();
      const s0 = performance.now();
      stream.changed();
      const v = stream.view();
      const serverMs = performance.now() - s0;
      const paint = await page.waitForFunction(
        (seq) => (window as unknown as { sitsDashboard: { paints: Paint[] } }).sitsDashboard.paints.find((p) => p.seq >= seq),
        v.seq,
        { timeout: 120_000 },
      );
      const p = (await paint.jsonValue()) as Paint;
      const bytes = stream.lastPatchBytes;
      patchBytes += bytes;
      samples.push({
        endToEndMs: p.wallMs - sent,
        pageMs: p.ms,
        serverMs,
        nodes: p.nodes ?? 0,
        bytes,
        parseMs: round1(p.parseMs ?? 0),
        heatmapMs: round1(p.heatmapMs ?? 0),
        tablesMs: round1(p.tablesMs ?? 0),
      });
    }
    const e2e = samples.map((s) => s.endToEndMs).sort((a, b) => a - b);
    const pageMs = samples.map((s) => s.pageMs).sort((a, b) => a - b);
    const serverMs = samples.map((s) => s.serverMs).sort((a, b) => a - b);
    const result: DashboardBenchResult = {
      nodes: o.nodes,
      firstPaintMs: round1(firstPaintMs),
      updateMs: { p50: round1(nearestRank(e2e, 50) ?? Number.NaN), p99: round1(nearestRank(e2e, 99) ?? Number.NaN) },
    };
    const longFrames = await page.evaluate(() => (window as unknown as { sitsDashboard: { longFrames?: unknown[] } }).sitsDashboard.longFrames ?? []);
    const v = stream.view();
    const details = {
      ...result,
      seed: o.seed,
      gpus: v.totals.gpus,
      viewport: '1400x1000',
      machine: { cpus: cpus().length, loadAverage1m: round1(loadavg()[0] ?? 0) },
      chromium: browser.version(),
      cluster: {
        usedGpuPct: round1((100 * v.totals.usedGpuMilli) / (v.totals.gpus * 1000)),
        runningJobs: v.totals.runningJobs,
        pendingJobs: v.totals.pendingJobs,
        virtualHours: round1(feed.nowMs / 3_600_000),
      },
      prefillSeconds: round1(prefillMs / 1000),
      fullView: { bytes: Buffer.byteLength(fullJson), buildMs: round1(buildMs) },
      updates: samples.length,
      updateDefinition:
        'simulator change announced → server builds and sends the patch → the page applies it and its frame is produced (Date.now on both sides, one machine)',
      pageUpdateMs: { p50: round1(nearestRank(pageMs, 50) ?? Number.NaN), p99: round1(nearestRank(pageMs, 99) ?? Number.NaN) },
      serverUpdateMs: { p50: round1(nearestRank(serverMs, 50) ?? Number.NaN), p99: round1(nearestRank(serverMs, 99) ?? Number.NaN) },
      pagePartsMs: Object.fromEntries(
        (['parseMs', 'heatmapMs', 'tablesMs'] as const).map((k) => [
          k,
          round1(
            nearestRank(
              samples.map((x) => x[k]).sort((a, b) => a - b),
              50,
            ) ?? Number.NaN,
          ),
        ]),
      ),
      meanPatchBytes: samples.length === 0 ? 0 : Math.round(patchBytes / samples.length),
      pageErrors: errors,
      longAnimationFrames: longFrames,
      samples,
    };
    return { result, details };
  } finally {
    await browser.close();
    await server.close();
  }
}

export function registerBenchDashboard(bench: Command): void {
  bench
    .command('dashboard')
    .description('the web dashboard in headless Chromium on a synthetic cluster of N nodes × 8 GPUs fed by the simulator: first paint and live update time')
    .option('--nodes <n>', 'nodes (8 GPUs each)', intOption('--nodes', 1, 100_000), 1000)
    .option('--seed <n>', 'seed of the synthetic workload (same seed, same input)', intOption('--seed'), 1)
    .option('--updates <n>', 'live updates to time', intOption('--updates', 1, 100_000), 200)
    .requiredOption('--json <file>', 'write {nodes, firstPaintMs, updateMs: {p50, p99}} here')
    .option('--details <file>', 'also write every measured detail (view size, server and page parts, samples) here')
    .action(async (o: { nodes: number; seed: number; updates: number; json: string; details?: string }) => {
      const { result, details } = await runDashboardBench({
        nodes: o.nodes,
        seed: o.seed,
        updates: o.updates,
        log: (m) => void process.stderr.write(`${m}\n`),
      });
      process.stdout.write(
        `dashboard: ${result.nodes} nodes, first paint ${result.firstPaintMs} ms, update p50 ${result.updateMs.p50} ms, p99 ${result.updateMs.p99} ms\n`,
      );
      writeFileSync(o.json, `${JSON.stringify(result, null, 2)}\n`);
      if (o.details !== undefined) writeFileSync(o.details, `${JSON.stringify(details, null, 2)}\n`);
    });
}
