/**
 * The scheduler process's HTTP server: `/healthz` (the process is alive), `/readyz` (the informers have
 * listed everything once; the body says whether this replica leads or stands by) and `/metrics`
 * (Prometheus text format, rendered by prom-client). It starts before the scheduler so that probes answer
 * during start-up; `attach()` hands it the running scheduler.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SitsMetrics, type ClientView, type SchedulerView } from './metrics.ts';

export interface ServerOptions {
  /** 0 picks a free port (tests). */
  readonly port: number;
  /** Default 0.0.0.0 (all interfaces: the kubelet probes the pod IP). */
  readonly host?: string;
  readonly scheduler?: SchedulerView;
  readonly client?: ClientView;
  readonly metrics?: SitsMetrics;
  readonly log?: (m: string) => void;
}

export interface SitsServer {
  /** http://host:port */
  readonly url: string;
  readonly port: number;
  readonly metrics: SitsMetrics;
  /** The scheduler has started (its informers have synced): /readyz turns ready. */
  attach(scheduler: SchedulerView, client?: ClientView): void;
  /** Shutting down: /readyz turns unready at once. */
  draining(): void;
  close(): Promise<void>;
}

export async function startServer(opts: ServerOptions): Promise<SitsServer> {
  const metrics = opts.metrics ?? new SitsMetrics();
  let scheduler: SchedulerView | undefined;
  let stopping = false;
  const attach = (s: SchedulerView, c?: ClientView): void => {
    scheduler = s;
    metrics.attach(s, c);
  };
  if (opts.scheduler !== undefined) attach(opts.scheduler, opts.client);

  const send = (res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
    res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
    res.end(res.req.method === 'HEAD' ? undefined : body);
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      send(res, 405, 'method not allowed\n');
      return;
    }
    switch (path) {
      case '/healthz':
      case '/livez':
        send(res, 200, 'ok\n');
        return;
      case '/readyz': {
        if (stopping) send(res, 503, 'not ready: shutting down\n');
        else if (scheduler === undefined) send(res, 503, 'not ready: informers not synced\n');
        else send(res, 200, `ok\ninformers: synced\nrole: ${scheduler.isLeader() ? 'leader' : 'standby'}\n`);
        return;
      }
      case '/metrics':
        metrics.metrics().then(
          (text) => send(res, 200, text, metrics.contentType),
          (e: unknown) => {
            opts.log?.(`metrics: ${(e as Error).message}`);
            send(res, 500, 'metrics unavailable\n');
          },
        );
        return;
      default:
        send(res, 404, 'not found\n');
    }
  };

  const server = createServer(handle);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (e) => opts.log?.(`http server: ${e.message}`));
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    metrics,
    attach,
    draining: () => {
      stopping = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        stopping = true;
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
