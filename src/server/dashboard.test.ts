import { afterEach, describe, expect, it } from 'vitest';
import { applyPatch, type ClusterView, type ClusterViewPatch } from './cluster-view.ts';
import { demoFeedJobs, demoQueues, serveDemo, type DemoServe } from './demo-serve.ts';
import { demoCluster } from '../app/demo-cluster.ts';
import { startServer, type SitsServer } from './server.ts';
import { SimFeed } from './sim-feed.ts';
import { ClusterViewStream } from './view-stream.ts';

/** Reads server-sent events from `url` until `until` says stop; returns them in order. */
async function readEvents(
  url: string,
  until: (events: { event: string; data: string }[]) => boolean,
  timeoutMs = 20_000,
): Promise<{ event: string; data: string }[]> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  const res = await fetch(url, { signal: ctl.signal });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  let buf = '';
  const events: { event: string; data: string }[] = [];
  try {
    while (!until(events)) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let at: number;
      while ((at = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, at);
        buf = buf.slice(at + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event !== undefined && data !== undefined) events.push({ event, data });
      }
    }
  } finally {
    clearTimeout(timer);
    ctl.abort();
  }
  return events;
}

describe('the dashboard routes and the view stream (simulator feed)', () => {
  let server: SitsServer | undefined;
  let stream: ClusterViewStream | undefined;
  afterEach(async () => {
    stream?.close();
    await server?.close();
    server = undefined;
    stream = undefined;
  });

  const start = async (): Promise<{ feed: SimFeed; base: string }> => {
    const nodes = demoCluster();
    const feed = new SimFeed({ nodes, jobs: demoFeedJobs(3, 1, 1), queues: demoQueues(256), seed: 3 });
    // A short heartbeat wakes the reader, so that it sees the last event arrived before it knew what to wait for.
    stream = new ClusterViewStream(() => feed.input(), { minIntervalMs: 10, heartbeatMs: 50 });
    server = await startServer({ port: 0, host: '127.0.0.1', view: stream });
    return { feed, base: server.url };
  };

  it('serves the page, its files and the view; refuses what is not in web/', async () => {
    const { base } = await start();
    const page = await fetch(`${base}/dashboard/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await page.text();
    // Every file the page loads is served, as plain ESM/CSS (no build step, nothing from another origin).
    const refs = [...html.matchAll(/(?:src|href)="([^":]+)"/g)].map((m) => m[1] as string);
    expect(refs.sort()).toEqual(['dashboard.css', 'dashboard.js']);
    for (const f of ['dashboard.js', 'heatmap.js', 'view.js', 'dashboard.css']) {
      const r = await fetch(`${base}/dashboard/${f}`);
      expect(r.status, f).toBe(200);
      expect(await r.text()).not.toMatch(/https?:\/\//);
    }
    expect((await fetch(`${base}/dashboard/..%2fpackage.json`)).status).toBe(404);
    expect((await fetch(`${base}/dashboard/nope.js`)).status).toBe(404);
    expect((await fetch(`${base}/`, { redirect: 'manual' })).headers.get('location')).toBe('/dashboard/');
    const v = (await (await fetch(`${base}/dashboard/api/v1/cluster`)).json()) as ClusterView;
    expect(v).toMatchObject({ version: 1, source: 'sim', totals: { nodes: 32, gpus: 256 } });
    expect((await fetch(`${base}/dashboard/api/v1/cluster`, { method: 'POST' })).status).toBe(405);
  });

  it('answers 503 until a view is attached', async () => {
    server = await startServer({ port: 0, host: '127.0.0.1' });
    expect((await fetch(`${server.url}/dashboard/api/v1/cluster`)).status).toBe(503);
    expect((await fetch(`${server.url}/dashboard/`)).status).toBe(200);
  });

  it('streams the whole view, then patches that rebuild exactly the view the host has', async () => {
    const { feed, base } = await start();
    const target = { seq: Number.POSITIVE_INFINITY };
    const lastSeq = (ev: { event: string; data: string }[]): number => {
      const last = ev[ev.length - 1];
      return last === undefined ? -1 : (JSON.parse(last.data) as { seq: number }).seq;
    };
    const got = readEvents(`${base}/dashboard/api/v1/cluster/stream`, (ev) => lastSeq(ev) >= target.seq);
    // Let the subscription land, then move virtual time on in steps, as `sits demo --serve` does.
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 1; i <= 40; i++) {
      feed.advanceTo(i * 120_000);
      stream?.changed();
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 100));
    const whole = (stream as ClusterViewStream).view();
    // Bringing the view up to date sent its patch to the open stream too.
    target.seq = whole.seq;
    const events = await got;
    expect(events[0]?.event).toBe('view');
    let view = JSON.parse(events[0]?.data as string) as ClusterView;
    const patches = events.slice(1);
    expect(patches.filter((e) => (JSON.parse(e.data) as ClusterViewPatch).nodes.length > 0).length).toBeGreaterThan(3);
    for (const e of patches) {
      expect(e.event).toBe('patch');
      view = applyPatch(view, JSON.parse(e.data) as ClusterViewPatch);
    }
    expect(view.running.length).toBeGreaterThan(0);
    // What the page rebuilt from the patches is the view the server holds.
    expect(view).toEqual(whole);
    expect(view.totals.usedGpuMilli).toBe(view.nodes.reduce((s, n) => s + n.gpus.reduce((t, g) => t + g.usedMilli, 0), 0));
  });
});

describe('the demo replay: ended, restarted', () => {
  let demo: DemoServe | undefined;
  afterEach(async () => {
    await demo?.close();
    demo = undefined;
  });
  const view = async (): Promise<ClusterView> => (await (await fetch(`${demo?.server.url}/dashboard/api/v1/cluster`)).json()) as ClusterView;
  const until = async (what: string, ok: (v: ClusterView) => boolean): Promise<ClusterView> => {
    for (let i = 0; i < 300; i++) {
      const v = await view();
      if (ok(v)) return v;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  const restart = (headers: Record<string, string>): Promise<Response> =>
    fetch(`${demo?.server.url}/dashboard/api/v1/replay/restart`, { method: 'POST', headers, body: '{}' });

  it('says when the replay ended and where it stopped, and starts it over on a same-origin POST only', async () => {
    // 0.1 h (+25 %) = 450 virtual s at 900× = half a second.
    demo = await serveDemo({ seed: 2, hours: 0.1, load: 1, speed: 900, port: 0 });
    const ended = await until('the replay to end', (v) => v.replay?.state === 'ended');
    expect(ended.replay).toEqual({ state: 'ended', endMs: 450_000, loop: false, run: 1, restartPath: 'api/v1/replay/restart' });
    expect(ended.atMs).toBe(450_000);
    // A form post (no JSON), another origin, a cross-site fetch: refused, the replay stays ended.
    expect((await restart({ 'Content-Type': 'application/x-www-form-urlencoded' })).status).toBe(415);
    expect((await restart({ 'Content-Type': 'application/json', Origin: 'http://evil.example' })).status).toBe(403);
    expect((await restart({ 'Content-Type': 'application/json', 'Sec-Fetch-Site': 'cross-site' })).status).toBe(403);
    expect((await view()).replay?.run).toBe(1);
    // GET is not a restart.
    expect((await fetch(`${demo.server.url}/dashboard/api/v1/replay/restart`)).status).toBe(404);
    const ok = await restart({ 'Content-Type': 'application/json', Origin: demo.server.url });
    expect(ok.status).toBe(200);
    const again = await until('the second run', (v) => v.replay?.run === 2);
    expect(again.atMs).toBeLessThan(450_000);
    await until('the second run to end', (v) => v.replay?.run === 2 && v.replay.state === 'ended');
  });

  it('starts over by itself with loop', async () => {
    demo = await serveDemo({ seed: 2, hours: 0.1, load: 1, speed: 900, port: 0, loop: true });
    const v = await until('a second run', (x) => (x.replay?.run ?? 0) >= 2);
    expect(v.replay).toMatchObject({ loop: true });
  });

  it('has no restart on a server without a replay (sits run)', async () => {
    const server = await startServer({ port: 0, host: '127.0.0.1' });
    try {
      expect((await fetch(`${server.url}/dashboard/api/v1/replay/restart`, { method: 'POST', headers: { 'Content-Type': 'application/json' } })).status).toBe(
        404,
      );
    } finally {
      await server.close();
    }
  });
});

describe('the page modules (web/)', () => {
  type Mod = Record<string, (...a: never[]) => unknown>;
  const load = async (f: string): Promise<Mod> => (await import(new URL(`../../web/${f}`, import.meta.url).href)) as Mod;

  it('says PCIe only for a GPU without NVLink peers, the island where there is NVLink', async () => {
    const { nvlinkLabel } = (await load('view.js')) as { nvlinkLabel: (n: unknown, g: unknown) => string };
    const gpus = (islands: number[]): { index: number; island: number }[] => islands.map((island, index) => ({ index, island }));
    const l4 = { gpus: gpus([0, 1, 2, 3]) };
    expect(nvlinkLabel(l4, l4.gpus[2])).toBe('PCIe only (no NVLink)');
    const two = { gpus: gpus([0, 0, 1, 1]) };
    expect(nvlinkLabel(two, two.gpus[2])).toBe('NVLink island 1');
    const nvl = { nvlinkDomain: 'nvl-0', gpus: gpus([0, 1]) };
    expect(nvlinkLabel(nvl, nvl.gpus[1])).toBe('NVLink island 1 (domain nvl-0)');
  });

  it('flags "one NVLink domain: no" only when a domain could have held the job', async () => {
    const { domainCell } = (await load('view.js')) as { domainCell: (r: unknown) => [string, string] };
    expect(domainCell({ oneNvlinkDomain: true, gpus: 8, largestNvlinkDomainGpus: 8 })).toEqual(['yes', 'yes']);
    expect(domainCell({ oneNvlinkDomain: false, gpus: 8, largestNvlinkDomainGpus: 8 })).toEqual(['no', 'no']);
    expect(domainCell({ oneNvlinkDomain: false, gpus: 32, largestNvlinkDomainGpus: 8 })).toEqual(['spans domains (no domain holds 32 GPUs)', 'neutral']);
  });

  it('lays the heatmap out over the full width with a label column per node', async () => {
    const { layoutHeatmap } = (await load('heatmap.js')) as {
      layoutHeatmap: (
        n: unknown,
        w: number,
      ) => { width: number; labels: boolean; racks: { x: number; w: number; rows: { node: number; labelX?: number }[] }[]; cells: { x: number }[] };
    };
    const v = buildDemoView();
    for (const width of [1400, 900, 2400]) {
      const L = layoutHeatmap(v.nodes, width);
      expect(L.labels).toBe(true);
      const right = Math.max(...L.racks.map((r) => r.x + r.w));
      expect(right, `width ${width}`).toBeGreaterThanOrEqual(width * 0.97);
      expect(right).toBeLessThanOrEqual(width);
      // The label sits left of the node's first cell.
      for (const r of L.racks) {
        for (const row of r.rows) {
          expect(row.labelX).toBeGreaterThan(r.x);
          expect(row.labelX).toBeLessThan(L.cells[row.node]?.x ?? 0);
        }
      }
    }
  });
});

function buildDemoView(): ClusterView {
  const feed = new SimFeed({ nodes: demoCluster(), jobs: [], queues: demoQueues(256), seed: 1 });
  const s = new ClusterViewStream(() => feed.input());
  try {
    return s.view();
  } finally {
    s.close();
  }
}
