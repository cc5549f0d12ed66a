// The HTML reports of `sits bench fgd` and `sits bench replay`, opened in real headless Chromium: the
// inlined Chart.js must run without errors and draw every chart from the same numbers as the JSON.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, pageErrors } from '../testing/chromium.ts';
import { runBench, simFixture } from './testing/bench-cli.ts';

const tmp = mkdtempSync(join(tmpdir(), 'sits-report-'));
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

interface DrawnChart {
  readonly id: string;
  readonly type: string;
  readonly labels: string[];
  /** Per dataset: the values Chart.js holds and how many of its elements were laid out inside the plot area. */
  readonly data: unknown[][];
  readonly drawn: number[];
  readonly inkedPixels: number;
}

// Runs in the page: what Chart.js made of each canvas.
function inspectCharts(): DrawnChart[] {
  type ChartLike = {
    config: { type: string };
    data: { datasets: { label: string; data: unknown[] }[] };
    chartArea: { left: number; right: number; top: number; bottom: number };
    getDatasetMeta(i: number): { data: { x: number; y: number }[] };
  };
  const getChart = (globalThis as unknown as { Chart: { getChart(c: HTMLCanvasElement): ChartLike | undefined } }).Chart.getChart;
  return Array.from(document.querySelectorAll('canvas')).map((canvas) => {
    const chart = getChart(canvas);
    if (chart === undefined) return { id: canvas.id, type: 'none', labels: [], data: [], drawn: [], inkedPixels: 0 };
    const a = chart.chartArea;
    const ctx = canvas.getContext('2d');
    const px = ctx === null ? new Uint8ClampedArray() : ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    let inked = 0;
    for (let i = 3; i < px.length; i += 4) if ((px[i] ?? 0) > 0) inked++;
    return {
      id: canvas.id,
      type: chart.config.type,
      labels: chart.data.datasets.map((d) => d.label),
      data: chart.data.datasets.map((d) => d.data),
      drawn: chart.data.datasets.map(
        (_, i) =>
          chart
            .getDatasetMeta(i)
            .data.filter(
              (e) => Number.isFinite(e.x) && Number.isFinite(e.y) && e.x >= a.left - 1 && e.x <= a.right + 1 && e.y >= a.top - 1 && e.y <= a.bottom + 1,
            ).length,
      ),
      inkedPixels: inked,
    };
  });
}

async function open(file: string): Promise<{ charts: DrawnChart[]; table: string[][]; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = pageErrors(page);
  await page.goto(pathToFileURL(file).href);
  const charts = await page.evaluate(inspectCharts);
  const table = await page.$$eval('tbody tr', (rows) => rows.map((r) => Array.from(r.children).map((c) => c.textContent ?? '')));
  await page.screenshot({ path: `${file}.png`, fullPage: true });
  await page.close();
  return { charts, table, errors };
}

describe('bench reports in headless Chromium', () => {
  it('fgd: four charts drawn from the JSON medians, a table row per policy, no page errors', async () => {
    const json = join(tmp, 'fgd.json');
    const html = join(tmp, 'fgd.html');
    const policies = ['random', 'bestfit', 'fgd', 'sits'];
    const r = await runBench([
      'fgd',
      '--nodes',
      simFixture('tiny_nodes.csv'),
      '--pods',
      simFixture('tiny_pods.csv'),
      '--workers',
      '0',
      '--no-timing',
      '--policies',
      policies.join(','),
      '--seeds',
      '42-44',
      '--json',
      json,
      '--html',
      html,
    ]);
    expect(r.error).toBeUndefined();
    const results = (JSON.parse(readFileSync(json, 'utf8')) as { results: { policy: string; unallocatedPct: Record<string, number | null> }[] }).results;

    const { charts, table, errors } = await open(html);
    expect(errors).toEqual([]);
    expect(charts.map((c) => [c.id, c.type])).toEqual([
      ['alloc', 'line'],
      ['bars', 'bar'],
      ['unalloc', 'line'],
      ['frag', 'line'],
    ]);
    for (const c of charts) {
      expect(c.labels.slice(0, policies.length), c.id).toEqual(c.id === 'bars' ? ['ours (median)'] : policies);
      expect(
        c.drawn.every((n) => n > 0),
        `${c.id}: every dataset has points inside the plot area`,
      ).toBe(true);
      expect(c.inkedPixels, c.id).toBeGreaterThan(1000);
    }
    // The allocation chart carries the ideal diagonal; the bars are exactly the JSON's medians at 100 %.
    expect(charts[0]?.labels.at(-1)).toBe('ideal');
    expect(charts[1]?.data[0]).toEqual(results.map((x) => x.unallocatedPct['100']));
    expect(table.map((row) => row.slice(0, 4))).toEqual(
      results.map((x) => [x.policy, ...['90', '95', '100'].map((k) => x.unallocatedPct[k]?.toFixed(2) ?? '–')]),
    );
  });

  it('replay: allocation and waiting pods over time, one line per policy', async () => {
    const json = join(tmp, 'replay.json');
    const html = join(tmp, 'replay.html');
    const r = await runBench([
      'replay',
      '--trace',
      simFixture('tiny_pods.csv'),
      '--nodes',
      simFixture('tiny_nodes.csv'),
      '--compress',
      '20',
      '--policies',
      'sits,fgd',
      '--json',
      json,
      '--html',
      html,
    ]);
    expect(r.error).toBeUndefined();
    const results = (JSON.parse(readFileSync(json, 'utf8')) as { results: { policy: string; pods: number; placedPods: number }[] }).results;

    const { charts, table, errors } = await open(html);
    expect(errors).toEqual([]);
    expect(charts.map((c) => [c.id, c.type, c.labels])).toEqual([
      ['alloc', 'line', ['sits', 'fgd']],
      ['wait', 'line', ['sits', 'fgd']],
    ]);
    for (const c of charts) {
      expect(
        c.drawn.every((n) => n > 1),
        c.id,
      ).toBe(true);
      expect(c.inkedPixels, c.id).toBeGreaterThan(1000);
    }
    expect(table.map((row) => row.slice(0, 3))).toEqual(results.map((x) => [x.policy, String(x.pods), String(x.placedPods)]));
  });
});
