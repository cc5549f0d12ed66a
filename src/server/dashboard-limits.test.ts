// Issue 36, low findings: the dashboard's files are held for what web/ holds, not for every name asked, and the
// live stream caps its subscribers and drops a page that stops reading instead of buffering for it.
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { demoCluster } from '../app/demo-cluster.ts';
import { WebFiles } from './dashboard.ts';
import { demoFeedJobs, demoQueues } from './demo-serve.ts';
import { startServer, type SitsServer } from './server.ts';
import { SimFeed } from './sim-feed.ts';
import { ClusterViewStream } from './view-stream.ts';

const STREAM = '/dashboard/api/v1/cluster/stream';

/** GET from a given loopback source address (another "client" for the per-caller cap); resolves at the headers. */
function open(base: string, path: string, localAddress = '127.0.0.1'): Promise<{ status: number; close: () => void; chunks: Buffer[] }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', () => undefined);
      resolve({ status: res.statusCode ?? 0, close: () => req.destroy(), chunks });
    });
    req.on('error', reject);
    req.end();
  });
}

let server: SitsServer | undefined;
let stream: ClusterViewStream | undefined;
afterEach(async () => {
  stream?.close();
  await server?.close();
  server = undefined;
  stream = undefined;
});

describe('the page files (issue 36: the file cache grew by every name asked)', () => {
  it('answers 20,000 distinct unknown names 404 (400 for malformed escapes) without holding anything more, and still serves the page', async () => {
    const files = new WebFiles();
    const before = files.size;
    expect(before.entries).toBe(5);
    server = await startServer({ port: 0, host: '127.0.0.1', webDir: files });
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const get = (path: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request(`${server?.url}${path}`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
    const N = 20_000;
    const statuses = new Map<number, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < N) {
          const i = next++;
          // Names of every shape the old cache kept: random, known types, nested, encoded, malformed escapes.
          const name = [`${randomBytes(12).toString('hex')}.js`, `a/${i}/b.css`, `%2e%2e%2f${i}.html`, `${i}%zz.js`][i % 4] as string;
          const s = await get(`/dashboard/${name}`);
          statuses.set(s, (statuses.get(s) ?? 0) + 1);
        }
      }),
    );
    agent.destroy();
    // Malformed escapes are refused as bad requests before anything else (ADR 0177); the rest are unknown names.
    expect(Object.fromEntries(statuses)).toEqual({ 400: N / 4, 404: (3 * N) / 4 });
    expect(files.size).toEqual(before);
    for (const f of ['', 'dashboard.js', 'heatmap.js', 'view.js', 'dashboard.css']) {
      const r = await fetch(`${server.url}/dashboard/${f}`);
      expect(r.status, f).toBe(200);
    }
  }, 60_000);
});

describe('the live view stream (issue 36: no subscriber cap, no backpressure)', () => {
  const start = async (o: { maxSubscribers?: number; maxSubscribersPerClient?: number; maxBufferedBytes?: number }): Promise<SimFeed> => {
    const feed = new SimFeed({ nodes: demoCluster(), jobs: demoFeedJobs(3, 1, 1), queues: demoQueues(256), seed: 3 });
    // Every other update, a thousand pending rows come and go: each patch carries the whole pending table (~100 KB),
    // so a few hundred updates push more than the kernel's socket buffers hold.
    const rows = Array.from({ length: 1000 }, (_, i) => ({
      id: `team-${i}/job-${i}`,
      queue: 'training',
      priority: i % 7,
      pods: 1 + (i % 8),
      gpuMilli: 8000,
      arrivalMs: i,
      explanation: `waits for ${1 + (i % 8)} whole GPUs in one NVLink domain`,
    }));
    let flip = false;
    stream = new ClusterViewStream(
      () => {
        flip = !flip;
        const input = feed.input();
        return flip ? { ...input, pending: [...input.pending, ...rows] } : input;
      },
      { minIntervalMs: 0, heartbeatMs: 60_000, ...o },
    );
    server = await startServer({ port: 0, host: '127.0.0.1', view: stream });
    return feed;
  };

  it('refuses streams over the per-caller cap (429) and over the global cap (503), and takes one again after a close', async () => {
    await start({ maxSubscribers: 4, maxSubscribersPerClient: 2 });
    const base = (server as SitsServer).url;
    const a = [await open(base, STREAM), await open(base, STREAM)];
    expect(a.map((r) => r.status)).toEqual([200, 200]);
    const a3 = await open(base, STREAM);
    expect(a3.status).toBe(429);
    // Another caller (another source address) still gets its own share, up to the global cap.
    const b = [await open(base, STREAM, '127.0.0.2'), await open(base, STREAM, '127.0.0.2')];
    expect(b.map((r) => r.status)).toEqual([200, 200]);
    const c = await open(base, STREAM, '127.0.0.3');
    expect(c.status).toBe(503);
    expect(stream?.subscribers).toBe(4);
    a[0]?.close();
    await expect.poll(() => stream?.subscribers).toBe(3);
    const again = await open(base, STREAM, '127.0.0.3');
    expect(again.status).toBe(200);
    for (const r of [...a, ...b, again]) r.close();
  });

  it('drops a page that never reads, keeps what the server holds for it bounded, and keeps feeding a reading page', async () => {
    const BOUND = 1024 * 1024;
    const feed = await start({ maxBufferedBytes: BOUND });
    const base = new URL((server as SitsServer).url);
    // The attacker: asks for the stream and never reads a byte.
    const slow = connect({ host: base.hostname, port: Number(base.port) });
    slow.pause();
    await new Promise<void>((resolve) => slow.once('connect', resolve));
    slow.write(`GET ${STREAM} HTTP/1.1\r\nHost: ${base.host}\r\n\r\n`);
    // A page that reads.
    const reader = await open(base.origin, STREAM);
    await expect.poll(() => stream?.subscribers).toBe(2);
    let maxBuffered = 0;
    let biggest = 0;
    let sent = 0;
    for (let i = 1; sent < 32 * 1024 * 1024 && i < 20_000; i++) {
      feed.advanceTo(i * 60_000);
      stream?.changed();
      stream?.view();
      sent += stream?.lastPatchBytes ?? 0;
      biggest = Math.max(biggest, stream?.lastPatchBytes ?? 0);
      maxBuffered = Math.max(maxBuffered, stream?.bufferedBytes ?? 0);
      // Paced as a busy cluster would be: the reading page keeps up, the stalled one falls behind.
      await new Promise((r) => setTimeout(r, 1));
    }
    // Pushed far more than any socket buffer holds; the stalled page was cut off, not buffered for.
    expect(sent).toBeGreaterThan(30 * 1024 * 1024);
    expect(stream?.dropped).toBe(1);
    expect(stream?.subscribers).toBe(1);
    // What the server held for its pages never went past the bound and one event for the stalled page (the check is
    // before a write), plus the event just written to the reading page (patches reach 170 kB here: a fixed slack of
    // 64 kB for it failed when a demo change made the patches larger). Without the drop it would grow to 32 MB.
    expect(maxBuffered).toBeLessThanOrEqual(BOUND + 2 * biggest);
    // The reading page got the updates to the end: its last event carries the server's current seq.
    const seq = stream?.view().seq;
    await expect
      .poll(
        () => {
          const text = Buffer.concat(reader.chunks).toString('utf8');
          const last = text.trimEnd().split('\n\n').at(-1) ?? '';
          return (JSON.parse(/^data: (.*)$/m.exec(last)?.[1] ?? '{}') as { seq?: number }).seq;
        },
        { timeout: 20_000 },
      )
      .toBe(seq);
    reader.close();
    slow.destroy();
    console.log(`view stream: ${(sent / 1048576).toFixed(1)} MiB pushed, largest event ${biggest} B, server-side unread at most ${maxBuffered} B`);
  }, 60_000);
});
