// The demo dashboard (`sits demo --serve`) in real headless Chromium, as a user sees it: every node row labelled
// with its name and GPU model, the heatmap across the window's width (and again after a resize), a PCIe-only L4
// GPU's tooltip saying so (an H100's naming its NVLink island), the "one NVLink domain" column never a red "no"
// for a gang no domain could hold, and the replay saying it ended — with a restart button that starts it over.
// No control plane: the simulator feeds the page. Screenshots go to test-artefacts/demo-dashboard/ (git-ignored).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../harness/e2e-kit.ts';
import { launchChromium, pageErrors } from '../testing/chromium.ts';
import type { ClusterView, RunningJobView } from './cluster-view.ts';
import { serveDemo, type DemoServe } from './demo-serve.ts';

const ARTEFACTS = join(import.meta.dirname, '../../test-artefacts/demo-dashboard');
// 1 h of arrivals (+25 % to drain) = 4,500 virtual s; at 300× the replay ends 15 s after it starts.
const HOURS = 1;
const SPEED = 300;

interface Dash {
  view: ClusterView;
  firstPaintMs?: number;
  heatmap: {
    labels: { node: string; model: string }[];
    layout: { racks: { x: number; w: number }[] };
    cellCentre(i: number, g: number): { x: number; y: number };
  };
}

let demo: DemoServe;
let browser: Browser;
let page: Page;
let errors: string[];

const view = (): Promise<ClusterView> => page.evaluate(() => (window as unknown as { sitsDashboard: Dash }).sitsDashboard.view);

/** Hovers the centre of a GPU's cell and returns the tooltip's text once it names that node. */
async function hover(node: string, gpu: number): Promise<string> {
  const at = await cellOnScreen(node, gpu);
  // Scrolled into view first: the mouse only reaches what is on screen.
  await page.evaluate((y) => window.scrollTo(0, Math.max(0, y + window.scrollY - 200)), at.y);
  const moved = await cellOnScreen(node, gpu);
  await page.mouse.move(moved.x, moved.y);
  return waitFor(`the tooltip of ${node} GPU ${gpu}`, async () => {
    const t = await page.locator('#tooltip').textContent();
    if ((await page.locator('#tooltip').isVisible()) && t !== null && t.startsWith(node)) return t;
    // The page may have laid out again since (it does 150 ms after a resize; late on a busy machine): aim again.
    const again = await cellOnScreen(node, gpu);
    await page.mouse.move(again.x, again.y);
    return undefined;
  });
}

/** Where a GPU's cell is on screen now. */
const cellOnScreen = (node: string, gpu: number): Promise<{ x: number; y: number }> =>
  page.evaluate(
    ([n, g]) => {
      const d = (window as unknown as { sitsDashboard: Dash }).sitsDashboard;
      const c = d.heatmap.cellCentre(
        d.view.nodes.findIndex((x) => x.name === n),
        g,
      );
      const r = document.getElementById('heatmap')?.getBoundingClientRect();
      return { x: (r?.left ?? 0) + c.x, y: (r?.top ?? 0) + c.y };
    },
    [node, gpu] as const,
  );

/** The heatmap's drawn extent against the viewport: the canvas box and the rightmost rack. */
const widths = (): Promise<{ viewport: number; canvas: number; racks: number }> =>
  page.evaluate(() => {
    const d = (window as unknown as { sitsDashboard: Dash }).sitsDashboard;
    const canvas = document.getElementById('heatmap')?.getBoundingClientRect();
    return { viewport: document.documentElement.clientWidth, canvas: canvas?.width ?? 0, racks: Math.max(...d.heatmap.layout.racks.map((r) => r.x + r.w)) };
  });

beforeAll(async () => {
  mkdirSync(ARTEFACTS, { recursive: true });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  errors = pageErrors(page);
  demo = await serveDemo({ seed: 1, hours: HOURS, load: 1, speed: SPEED, port: 0 });
  await page.goto(demo.url);
  await waitFor('the first paint', () => page.evaluate(() => (window as unknown as { sitsDashboard: Dash }).sitsDashboard.firstPaintMs !== undefined), 30_000);
});

afterAll(async () => {
  await browser?.close();
  await demo?.close();
});

describe('the demo dashboard in Chromium', () => {
  it('labels every node row with its name and GPU model, and spans the full width (also after a resize)', async () => {
    const v = await view();
    const labels = await page.evaluate(() => (window as unknown as { sitsDashboard: Dash }).sitsDashboard.heatmap.labels);
    expect(labels.map((l) => l.node).sort()).toEqual(v.nodes.map((n) => n.name).sort());
    for (const n of v.nodes) expect(labels.find((l) => l.node === n.name)?.model).toBe(n.model);
    expect(new Set(labels.map((l) => l.model))).toEqual(new Set(['H100-SXM', 'A100-80G', 'L4']));
    for (const size of [
      { width: 1400, height: 1000 },
      { width: 1000, height: 900 },
      { width: 1920, height: 1000 },
    ]) {
      await page.setViewportSize(size);
      // The page lays out again 150 ms after the last resize event.
      const w = await waitFor(
        `the heatmap at ${size.width} px`,
        async () => {
          const x = await widths();
          return x.viewport === size.width && x.racks >= 0.95 * x.viewport && x.racks <= x.canvas ? x : undefined;
        },
        10_000,
        50,
      );
      expect(w.canvas, `canvas at ${size.width}`).toBeGreaterThanOrEqual(0.95 * w.viewport);
      expect(w.racks, `racks at ${size.width}`).toBeGreaterThanOrEqual(0.95 * w.viewport);
      expect(w.racks).toBeLessThanOrEqual(w.canvas);
      await page.screenshot({ path: join(ARTEFACTS, `1-labels-${size.width}.png`) });
    }
    await page.setViewportSize({ width: 1400, height: 1000 });
  });

  it('says "PCIe only (no NVLink)" over an L4 GPU and the NVLink island over an H100', async () => {
    const v = await view();
    const l4 = v.nodes.find((n) => n.model === 'L4');
    const h100 = v.nodes.find((n) => n.model === 'H100-SXM');
    if (l4 === undefined || h100 === undefined) throw new Error('demo cluster without L4 or H100 nodes');
    const tip = await hover(l4.name, 2);
    expect(tip).toContain('GPU 2 · PCIe only (no NVLink) ·');
    expect(tip).not.toContain('NVLink island');
    await page.screenshot({ path: join(ARTEFACTS, '2-tooltip-l4.png') });
    const tipH = await hover(h100.name, 5);
    expect(tipH).toContain('GPU 5 · NVLink island 0 ·');
    await page.mouse.move(0, 0);
  });

  it('flags "one NVLink domain" only where a domain could hold the gang: no red "no" for a gang larger than any', async () => {
    await page.evaluate(() => window.scrollTo(0, 0));
    // Gangs of 2–64 GPUs arrive; on this cluster no NVLink domain has more than 8 GPUs.
    const big = await waitFor(
      'a running gang larger than every NVLink domain',
      async () => (await view()).running.find((r) => r.gpus > r.largestNvlinkDomainGpus && r.gpus > 8),
      30_000,
      100,
    );
    expect(big.largestNvlinkDomainGpus).toBe(8);
    await page.locator('#running-section').scrollIntoViewIfNeeded();
    const rows = await page.evaluate(() =>
      Array.from(document.querySelectorAll('#running tbody tr[data-job]'), (tr) => ({
        id: (tr as HTMLElement).dataset.job ?? '',
        text: tr.children[5]?.textContent ?? '',
        cls: tr.children[5]?.className ?? '',
      })),
    );
    const byId = new Map((await view()).running.map((r) => [r.id, r] as [string, RunningJobView]));
    let spans = 0;
    for (const row of rows) {
      const r = byId.get(row.id);
      if (r === undefined) continue;
      if (r.gpus > r.largestNvlinkDomainGpus) {
        spans++;
        expect(row, row.id).toEqual({ id: row.id, text: `spans domains (no domain holds ${r.gpus} GPUs)`, cls: 'neutral' });
      } else expect(row, row.id).toEqual({ id: row.id, text: r.oneNvlinkDomain ? 'yes' : 'no', cls: r.oneNvlinkDomain ? 'yes' : 'no' });
    }
    expect(spans).toBeGreaterThan(0);
    await page.screenshot({ path: join(ARTEFACTS, '3-running.png'), fullPage: true });
  });

  it('says the replay ended, at what virtual time, and restarts it from the button', async () => {
    await page.evaluate(() => window.scrollTo(0, 0));
    const replay = page.locator('#replay');
    const text = await waitFor(
      'the replay to end',
      async () => {
        const t = await replay.textContent();
        return t !== null && t.startsWith('replay ended at') ? t : undefined;
      },
      60_000,
      100,
    );
    // 4,500 virtual s = 75 min.
    expect(text).toBe('replay ended at t+75 min — restart');
    expect(await page.locator('#replay-restart').isVisible()).toBe(true);
    expect((await view()).replay).toMatchObject({ state: 'ended', run: 1 });
    await page.screenshot({ path: join(ARTEFACTS, '4-ended.png') });
    await page.locator('#replay-restart').click();
    await waitFor('the second run', async () => (await view()).replay?.run === 2, 10_000, 50);
    const v = await view();
    expect(v.replay?.state).toBe('running');
    expect(v.atMs).toBeLessThan(4_500_000);
    expect(await page.locator('#replay-restart').isVisible()).toBe(false);
    expect(await page.locator('#replay-text').textContent()).toMatch(/^replay \(run 2\) \d+ % of t\+75 min$/);
    await page.screenshot({ path: join(ARTEFACTS, '5-restarted.png') });
  });

  it('logged no console error or page error', () => {
    expect(errors).toEqual([]);
  });
});
