/**
 * The dashboard's HTTP routes, read-only (GET/HEAD): the page (static files of `web/`, plain ESM and CSS —
 * nothing to build at run time, nothing fetched from the internet), `GET /dashboard/api/v1/cluster` (the cluster
 * view as JSON) and `GET /dashboard/api/v1/cluster/stream` (server-sent events: the view, then its patches). On the secure port
 * every one of these paths is authenticated and authorized like /metrics (a SubjectAccessReview on the
 * non-resource URL), since the secure server checks every path but the probes.
 */
import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LiveScheduler } from '../kube/scheduler/live-scheduler.ts';
import { liveViewInput } from './cluster-view-sources.ts';
import { ClusterViewStream, type ViewStreamOptions } from './view-stream.ts';

/** The shipped page: `web/` at the repository (package) root. */
export const WEB_DIR = fileURLToPath(new URL('../../web/', import.meta.url));

/**
 * Everything under /dashboard/: `/api/*` is the apiserver's discovery space, which Kubernetes' default
 * `system:discovery` ClusterRole opens to every authenticated user — a view of every pod and queue must not
 * ride on that (ADR 0061).
 */
export const DASHBOARD_PATHS = {
  page: '/dashboard/',
  view: '/dashboard/api/v1/cluster',
  stream: '/dashboard/api/v1/cluster/stream',
  restart: '/dashboard/api/v1/replay/restart',
} as const;

/** A replay the page may start over (`sits demo --serve`): the one write the dashboard has, and only there. */
export interface ReplayControl {
  restart(): void;
}

/**
 * `POST /dashboard/api/v1/replay/restart`. Authentication and authorization are the server's, as for every
 * path (on the secure port a SubjectAccessReview for verb `post` on this URL). The demo's loopback port has
 * none, so a web page of another origin must not be able to restart it from the user's browser: a POST that
 * says it comes from elsewhere (Origin, Sec-Fetch-Site) is refused, and so is a form post (no JSON type: forms
 * cannot send one without a CORS preflight, which this server never grants).
 */
export function replayRestartRoute(req: IncomingMessage, res: ServerResponse, replay: ReplayControl | undefined): void {
  const reply = (status: number, body: string): void => {
    res.writeHead(status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(body);
  };
  if (replay === undefined) return reply(404, '{"error":"no replay to restart: only sits demo --serve has one"}\n');
  const site = req.headers['sec-fetch-site'];
  const origin = req.headers.origin;
  const host = req.headers.host;
  const sameOrigin = origin === undefined || (host !== undefined && (origin === `http://${host}` || origin === `https://${host}`));
  if ((site !== undefined && site !== 'same-origin' && site !== 'none') || !sameOrigin) return reply(403, '{"error":"cross-origin request refused"}\n');
  if (!(req.headers['content-type'] ?? '').startsWith('application/json')) return reply(415, '{"error":"send Content-Type: application/json"}\n');
  // The body is not needed: drained so that the connection can be reused.
  req.resume();
  replay.restart();
  return reply(200, '{"restarted":true}\n');
}

/**
 * RBAC rules that let a caller read the dashboard on the secure port (a ClusterRole's `rules`): the page, the view
 * and its stream, nothing else (not /metrics).
 */
export { DASHBOARD_VIEWER_RULES } from '../deploy/rbac.ts';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

/** A request the dashboard handles: true when it answered. `client` names the caller (the stream's per-caller cap). */
export type DashboardRoute = (req: IncomingMessage, res: ServerResponse, path: string, client?: string) => boolean;

function send(res: ServerResponse, status: number, body: string | Buffer, type: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, {
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...extra,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/** What the page's folder may hold: the shipped page is 5 files and 50 KB; a folder over this is refused at start. */
export const WEB_LIMITS = { maxFiles: 256, maxBytes: 16 * 1024 * 1024 } as const;

/**
 * The page's files, read once at start: every file under the folder with a known type (symlinks resolved, and
 * kept only when they stay inside it). A name asked for later is looked up, never added, so the map holds what
 * the folder held and no more, whatever names callers send (issue 36: a cache keyed by every name asked grew
 * without bound).
 */
export class WebFiles {
  private readonly files = new Map<string, Buffer>();
  private total = 0;

  constructor(webDir: string = WEB_DIR, limits: { readonly maxFiles: number; readonly maxBytes: number } = WEB_LIMITS) {
    const root = realpathSync(webDir);
    for (const e of readdirSync(root, { recursive: true, withFileTypes: true })) {
      const full = join(e.parentPath, e.name);
      if (TYPES[extname(full)] === undefined || e.isDirectory()) continue;
      let real: string;
      try {
        real = realpathSync(full);
      } catch {
        continue; // a dangling link: nothing to serve
      }
      if (!real.startsWith(root + sep) || !statSync(real).isFile()) continue;
      const body = readFileSync(real);
      this.total += body.length;
      if (this.files.size + 1 > limits.maxFiles || this.total > limits.maxBytes)
        throw new Error(
          `dashboard files: ${root} holds more than ${limits.maxFiles} files or ${limits.maxBytes} bytes of page files; point --web-dir at the page's folder only`,
        );
      // URL paths use `/` whatever the platform.
      this.files.set(relative(root, full).split(sep).join('/'), body);
    }
  }

  get(name: string): Buffer | undefined {
    return this.files.get(name);
  }

  /** Files held and their bytes (fixed after start; tests check that requests do not add to them). */
  get size(): { readonly entries: number; readonly bytes: number } {
    return { entries: this.files.size, bytes: this.total };
  }
}

/** A page file's name from the URL path: undefined when its %-escapes are malformed (a 404, as any unknown name). */
function pageName(encoded: string): string | undefined {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
}

/** The routes over a view stream (undefined until the host has one: the API answers 503 then, as /readyz does). */
export function dashboardRoutes(stream: () => ClusterViewStream | undefined, web: string | WebFiles = WEB_DIR): DashboardRoute {
  const files = typeof web === 'string' ? new WebFiles(web) : web;
  return (req, res, path, client) => {
    if (path === '/' || path === '/dashboard') {
      res.writeHead(302, { Location: DASHBOARD_PATHS.page, 'Content-Length': 0 });
      res.end();
      return true;
    }
    if (path === DASHBOARD_PATHS.view || path === DASHBOARD_PATHS.stream) {
      const s = stream();
      if (s === undefined) {
        send(res, 503, 'cluster view not ready: informers not synced\n', 'text/plain; charset=utf-8');
        return true;
      }
      if (path === DASHBOARD_PATHS.view) send(res, 200, s.viewJson(), 'application/json; charset=utf-8');
      else if (req.method === 'HEAD') send(res, 200, '', 'text/event-stream; charset=utf-8');
      else s.subscribe(res, client ?? `address ${req.socket.remoteAddress ?? '?'}`);
      return true;
    }
    if (!path.startsWith(DASHBOARD_PATHS.page)) return false;
    const name = path === DASHBOARD_PATHS.page ? 'index.html' : pageName(path.slice(DASHBOARD_PATHS.page.length));
    const body = name === undefined ? undefined : files.get(name);
    if (body === undefined) send(res, 404, 'not found\n', 'text/plain; charset=utf-8');
    else
      send(res, 200, body, TYPES[extname(name as string)] as string, {
        'Content-Security-Policy': "default-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
      });
    return true;
  };
}

/** The live scheduler's view stream: rebuilt on its watch events and cycles (never by asking the apiserver). */
export function liveViewStream(scheduler: LiveScheduler, opts: ViewStreamOptions = {}): ClusterViewStream {
  const stream = new ClusterViewStream(() => liveViewInput(scheduler, Date.now()), opts);
  // Chained: another reader of the hook (sits top, metrics) keeps its own.
  const before = scheduler.onChange;
  scheduler.onChange = () => {
    before?.();
    stream.changed();
  };
  return stream;
}
