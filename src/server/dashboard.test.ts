import { afterEach, describe, expect, it } from 'vitest';
import { applyPatch, type ClusterView, type ClusterViewPatch } from './cluster-view.ts';
import { demoFeedJobs, demoQueues } from './demo-serve.ts';
import { demoCluster } from '../app/demo-cluster.ts';
import { startServer, type SitsServer } from './server.ts';
import { SimFeed } from './sim-feed.ts';
import { ClusterViewStream } from './view-stream.ts';

/** Reads server-sent events from `url` until `until` says stop; returns them in order. */
async function readEvents(url: string, until: (events: { event: string; data: string }[]) => boolean, timeoutMs = 20_000): Promise<{ event: string; data: string }[]> {
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
      return last === undefined ? -1 : ((JSON.parse(last.data) as { seq: number }).seq);
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
