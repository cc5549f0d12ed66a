/**
 * The dashboard's live feed: the host says "something changed" (a watch event, a cycle, a simulator step),
 * and at most every `minIntervalMs` the view is rebuilt incrementally (ClusterViewTracker) and pushed to every
 * open page as a server-sent event — the whole view when a page connects or the node list changed
 * (`event: view`), the changed nodes and tables otherwise (`event: patch`). Nothing polls the apiserver: the
 * input is the host's watch-fed cache or simulated state.
 */
import type { ServerResponse } from 'node:http';
import { ClusterViewTracker, emptyPatch, type ClusterView } from './cluster-view.ts';
import type { ViewSourceInput } from './cluster-view-sources.ts';

export interface ViewStreamOptions {
  /** Coalesce changes: at most one update per this many ms (default 100). */
  readonly minIntervalMs?: number;
  /** A comment line this often keeps idle connections open through proxies (default 15 s). */
  readonly heartbeatMs?: number;
  readonly log?: (m: string) => void;
  /** Open streams at most, over all callers (default 64); one more is answered 503. */
  readonly maxSubscribers?: number;
  /** Open streams at most per caller (user on the secure port, address on loopback; default 8); one more is 429. */
  readonly maxSubscribersPerClient?: number;
  /**
   * A page that has not taken this many bytes yet (default 8 MiB: a few whole views of a large cluster) is
   * dropped instead of sent more; its EventSource reconnects and starts from a whole view. Patches build on each
   * other, so skipping one would leave the page wrong: dropping is the only sound way to shed it.
   */
  readonly maxBufferedBytes?: number;
}

export const VIEW_STREAM_LIMITS = { maxSubscribers: 64, maxSubscribersPerClient: 8, maxBufferedBytes: 8 * 1024 * 1024 } as const;

export class ClusterViewStream {
  private readonly tracker = new ClusterViewTracker();
  private readonly clients = new Map<ServerResponse, string>();
  private readonly perClient = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastMs = 0;
  private dirty = true;
  private fullJson: { seq: number; text: string } | undefined;
  private readonly heartbeat: ReturnType<typeof setInterval>;
  private closed = false;
  /** Updates pushed so far, and the size of the last event sent (tests, benchmarks). */
  updates = 0;
  lastPatchBytes = 0;
  /** Streams refused at a cap and pages dropped for not reading (tests, and the log says so). */
  refused = 0;
  dropped = 0;

  constructor(
    private readonly source: () => ViewSourceInput,
    private readonly opts: ViewStreamOptions = {},
  ) {
    this.heartbeat = setInterval(() => {
      for (const c of this.clients.keys()) this.send(c, ': keep-alive\n\n');
    }, opts.heartbeatMs ?? 15_000);
    this.heartbeat.unref();
  }

  get subscribers(): number {
    return this.clients.size;
  }

  /** The current view, brought up to date first when something changed. */
  view(): ClusterView {
    if (this.dirty || this.tracker.view === undefined) this.flush();
    return this.tracker.view as ClusterView;
  }

  /** The current view as JSON (made once per view: many pages opening do not stringify 80,000 GPUs each). */
  viewJson(): string {
    const v = this.view();
    if (this.fullJson?.seq !== v.seq) this.fullJson = { seq: v.seq, text: JSON.stringify(v) };
    return this.fullJson.text;
  }

  /** Something the view shows may have changed: an update follows within `minIntervalMs`. */
  changed(): void {
    this.dirty = true;
    if (this.timer !== undefined || this.closed) return;
    const wait = Math.max(0, this.lastMs + (this.opts.minIntervalMs ?? 100) - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // Already brought up to date by a `view()` in between: nothing to send.
      if (this.dirty && this.clients.size > 0) this.flush();
    }, wait);
  }

  /**
   * Serves the event stream on `res`: the whole view at once, then the updates. `client` names the caller for the
   * per-caller cap. Every open stream holds a socket and whatever it has not read yet, so both are capped.
   */
  subscribe(res: ServerResponse, client: string): void {
    const max = this.opts.maxSubscribers ?? VIEW_STREAM_LIMITS.maxSubscribers;
    const maxPer = this.opts.maxSubscribersPerClient ?? VIEW_STREAM_LIMITS.maxSubscribersPerClient;
    const mine = this.perClient.get(client) ?? 0;
    if (this.clients.size >= max || mine >= maxPer) {
      this.refused++;
      const [status, body] =
        this.clients.size >= max
          ? [503, `too many open view streams (${max}); try again later\n`]
          : [429, `too many open view streams for ${client} (${maxPer}); close one first\n`];
      res.writeHead(status, {
        'Content-Type': 'text/plain; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
        'Cache-Control': 'no-store',
        'Retry-After': '10',
      });
      res.end(body);
      return;
    }
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    const json = this.viewJson();
    res.write(`retry: 2000\nevent: view\ndata: ${json}\n\n`);
    this.clients.set(res, client);
    this.perClient.set(client, mine + 1);
    res.on('close', () => this.forget(res));
  }

  private forget(res: ServerResponse): void {
    const client = this.clients.get(res);
    if (client === undefined) return;
    this.clients.delete(res);
    const n = (this.perClient.get(client) ?? 1) - 1;
    if (n <= 0) this.perClient.delete(client);
    else this.perClient.set(client, n);
  }

  /** Writes to one page, or drops it when it has left more than the bound unread (a slow or stalled reader). */
  private send(res: ServerResponse, text: string): void {
    const bound = this.opts.maxBufferedBytes ?? VIEW_STREAM_LIMITS.maxBufferedBytes;
    if (res.writableLength > bound) {
      this.dropped++;
      this.opts.log?.(`dashboard stream: dropped ${this.clients.get(res) ?? 'a page'}: ${res.writableLength} bytes unread (over ${bound})`);
      this.forget(res);
      res.destroy();
      return;
    }
    res.write(text);
  }

  /** Bytes written to the open pages and not yet taken by them (tests). */
  get bufferedBytes(): number {
    let n = 0;
    for (const c of this.clients.keys()) n += c.writableLength;
    return n;
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    clearInterval(this.heartbeat);
    for (const c of this.clients.keys()) c.end();
    this.perClient.clear();
    this.clients.clear();
  }

  /** Rebuilds the view and sends what changed to every page. */
  private flush(): void {
    this.dirty = false;
    this.lastMs = Date.now();
    let r: ReturnType<ClusterViewTracker['update']>;
    try {
      r = this.tracker.update(this.source());
    } catch (e) {
      this.opts.log?.(`dashboard view: ${(e as Error).stack ?? String(e)}`);
      return;
    }
    if (this.clients.size === 0) return;
    // A patch that only moves the time is still sent: it is small, and keeps every page's seq in step.
    if (r.patch === undefined || !emptyPatch(r.patch)) this.updates++;
    const text = r.patch === undefined ? `event: view\ndata: ${this.viewJson()}\n\n` : `event: patch\ndata: ${JSON.stringify(r.patch)}\n\n`;
    this.lastPatchBytes = Buffer.byteLength(text);
    for (const c of [...this.clients.keys()]) this.send(c, text);
  }
}
