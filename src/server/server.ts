/**
 * The scheduler process's HTTP server: `/healthz` (the process is alive), `/readyz` (the informers have
 * listed everything once; the body says whether this replica leads or stands by), `/metrics`
 * (Prometheus text format, rendered by prom-client) and the dashboard (dashboard.ts: `/dashboard/`,
 * `/dashboard/api/v1/cluster` and its event stream). It starts before the scheduler so that probes answer
 * during start-up; `attach()` hands it the running scheduler.
 * On a non-loopback address it is the secure port of kube/secure/secure-server.ts (TLS, callers authenticated and
 * authorized by delegation; the probe paths always allowed), as kube-scheduler's; plain HTTP only on loopback.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CertPair } from '../kube/secure/certs.ts';
import { ALLOW_ALL, ANONYMOUS, ANONYMOUS_AUTHN, type Authenticator, type Authorizer, type Caller } from '../kube/secure/delegated-auth.ts';
import { startSecureServer } from '../kube/secure/secure-server.ts';
import { DASHBOARD_PATHS, dashboardRoutes, replayRestartRoute, type ReplayControl, type WebFiles } from './dashboard.ts';
import { SitsMetrics, type ClientView, type SchedulerView } from './metrics.ts';
import type { ClusterViewStream } from './view-stream.ts';

export interface ServerOptions {
  /** 0 picks a free port (tests). */
  readonly port: number;
  /** Default 0.0.0.0 (all interfaces: the kubelet probes the pod IP). */
  readonly host?: string;
  readonly scheduler?: SchedulerView;
  readonly client?: ClientView;
  readonly metrics?: SitsMetrics;
  readonly log?: (m: string) => void;
  /** Required off loopback: the serving certificate and the delegated authn/authz of callers. */
  readonly secure?: { readonly tls: CertPair; readonly clientCa?: string; readonly authn: Authenticator; readonly authz: Authorizer };
  /** The dashboard's live view (page, /dashboard/api/v1/cluster, its event stream); also given later by `attachView`. */
  readonly view?: ClusterViewStream;
  /** Folder of the page's files (default: the shipped `web/`), or those files already read. */
  readonly webDir?: string | WebFiles;
  /** A replay the page may restart (`sits demo --serve`): enables `POST /dashboard/api/v1/replay/restart`. */
  readonly replay?: ReplayControl;
}

/** The paths served behind authorization (the probes are always allowed): the review is for these routes. */
export const SERVER_PATHS = ['/metrics', '/', '/dashboard', '/dashboard/*'] as const;

export interface SitsServer {
  /** http://host:port */
  /** http://host:port on loopback, https://host:port otherwise */
  readonly url: string;
  readonly port: number;
  readonly metrics: SitsMetrics;
  /** The scheduler has started (its informers have synced): /readyz turns ready. */
  attach(scheduler: SchedulerView, client?: ClientView): void;
  /** The dashboard's view is ready: /dashboard/api/v1/cluster and its stream answer from now on. */
  attachView(view: ClusterViewStream): void;
  /** Shutting down: /readyz turns unready at once. */
  draining(): void;
  /** Serves a new certificate from the next TLS handshake on (throws on a pair that does not load). */
  setTls(pair: CertPair): void;
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
  let view = opts.view;
  const dashboard = dashboardRoutes(() => view, opts.webDir);

  const send = (res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
    res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
    res.end(res.req.method === 'HEAD' ? undefined : body);
  };

  const handle = (req: IncomingMessage, res: ServerResponse, caller: Caller): void => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    // The one write: a demo replay started over (404 where there is none, as any unknown path).
    if (path === DASHBOARD_PATHS.restart && req.method === 'POST') {
      replayRestartRoute(req, res, opts.replay);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', path === DASHBOARD_PATHS.restart ? 'POST' : 'GET, HEAD');
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
        // The stream's per-caller cap counts an authenticated user's streams together, an anonymous caller's by address.
        if (!dashboard(req, res, path, caller.user === ANONYMOUS.user ? `address ${req.socket.remoteAddress ?? '?'}` : `user ${caller.user}`))
          send(res, 404, 'not found\n');
    }
  };

  const server = await startSecureServer({
    port: opts.port,
    host: opts.host ?? '0.0.0.0',
    ...(opts.secure !== undefined ? { tls: opts.secure.tls, ...(opts.secure.clientCa !== undefined ? { clientCa: opts.secure.clientCa } : {}) } : {}),
    // Loopback without TLS: the local operator's own machine (tests, `sits dev`), as kube-scheduler's old insecure port.
    authn: opts.secure?.authn ?? ANONYMOUS_AUTHN,
    authz: opts.secure?.authz ?? ALLOW_ALL,
    handler: (req, res, caller) => handle(req, res, caller),
    ...(opts.log !== undefined ? { log: opts.log } : {}),
  });
  return {
    url: server.url,
    port: server.port,
    metrics,
    attach,
    attachView: (v) => {
      view = v;
    },
    draining: () => {
      stopping = true;
    },
    setTls: (p) => server.setTls(p),
    close: async () => {
      stopping = true;
      view?.close();
      await server.close();
    },
  };
}
