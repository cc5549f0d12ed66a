/**
 * Where `sits top` gets its cluster view: `GET /dashboard/api/v1/cluster` of a running scheduler (the dashboard's JSON
 * endpoint on `sits run`'s port), authenticated as kubectl would be, with the kubeconfig's user (bearer token or
 * client certificate) over TLS; or, with `--sim`, the demo workload replayed under SITS in virtual time.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { readFileSync } from 'node:fs';
import { loadKubeConfig } from '../app/live.ts';
import { KubeConfigError } from '../kube/client/kubeconfig.ts';
import { demoCluster } from '../app/demo-cluster.ts';
import { buildClusterView, CLUSTER_VIEW_VERSION, type ClusterView } from '../server/cluster-view.ts';
import { demoFeedJobs, demoQueues } from '../server/demo-serve.ts';
import { SimFeed } from '../server/sim-feed.ts';
import { DASHBOARD_PATHS } from '../server/dashboard.ts';
import { CliError, EXIT, systemErrorLine } from './errors.ts';

export interface LiveSourceOptions {
  /** The scheduler's HTTP(S) base URL (`sits run --metrics-host/--metrics-port`). */
  readonly server: string;
  readonly kubeconfig?: string;
  /** A kubeconfig context other than the current one (its user's credentials are sent). */
  readonly context?: string;
  /** A bearer token instead of the kubeconfig user's credentials. */
  readonly token?: string;
  /** CA bundle that signed the scheduler's serving certificate (default: the kubeconfig cluster's CA). */
  readonly certificateAuthority?: string;
  readonly insecureSkipTlsVerify?: boolean;
  readonly timeoutMs?: number;
}

/** Checks that a parsed body is a cluster view of the version this `sits top` reads. */
export function asClusterView(body: unknown, from: string): ClusterView {
  const v = body as Partial<ClusterView> | null;
  if (v === null || typeof v !== 'object') throw new CliError(`${from}: not a cluster view (expected a JSON object)`);
  if (v.version !== CLUSTER_VIEW_VERSION)
    throw new CliError(`${from}: cluster view version ${String(v.version)}; this sits top reads version ${CLUSTER_VIEW_VERSION}`);
  for (const k of ['nodes', 'queues', 'pending', 'running'] as const)
    if (!Array.isArray(v[k])) throw new CliError(`${from}: cluster view field "${k}" is not a list`);
  if (v.totals === undefined || typeof v.totals !== 'object') throw new CliError(`${from}: cluster view has no "totals"`);
  return v as ClusterView;
}

/** The view of a running scheduler. Errors name the URL and say what to do (TLS trust, credentials, RBAC). */
export async function fetchLiveView(o: LiveSourceOptions): Promise<ClusterView> {
  let base: URL;
  try {
    base = new URL(o.server);
  } catch {
    throw new CliError(`--server: "${o.server}" is not a URL (expected https://host:port of sits run's metrics port)`);
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new CliError(`--server: "${o.server}" must be an https:// (or, on loopback, http://) URL`);
  const url = new URL(DASHBOARD_PATHS.view, base);
  const opts: RequestOptions = { method: 'GET', headers: { Accept: 'application/json' }, timeout: o.timeoutMs ?? 15_000 };
  if (base.protocol === 'https:') {
    const kc = (() => {
      try {
        return loadKubeConfig(o.kubeconfig, o.context);
      } catch (e) {
        if (o.token !== undefined && o.context === undefined) return undefined;
        // A KubeConfigError already names the file and what to do.
        if (e instanceof KubeConfigError) throw new CliError(e.message, { hint: o.context === undefined ? `${e.hint}, or pass --token` : e.hint });
        throw new CliError(`kubeconfig${o.kubeconfig === undefined ? '' : ` ${o.kubeconfig}`}: ${(e as Error).message}`);
      }
    })();
    // The kubeconfig user's credentials, as kubectl sends them (token, client certificate, exec plugin).
    if (kc !== undefined && o.token === undefined) await kc.applyToHTTPSOptions(opts);
    // Only the user's credentials are taken (and the cluster's CA as default trust): the agent client-node builds
    // and the cluster's insecure-skip-tls-verify are about the apiserver; the scheduler's certificate is checked
    // unless --insecure-skip-tls-verify says otherwise.
    delete opts.agent;
    delete opts.rejectUnauthorized;
    if (o.token !== undefined) opts.headers = { ...opts.headers, Authorization: `Bearer ${o.token}` };
    if (o.certificateAuthority !== undefined) {
      try {
        opts.ca = readFileSync(o.certificateAuthority, 'utf8');
      } catch (e) {
        throw new CliError(`--certificate-authority ${o.certificateAuthority}: ${(e as Error).message}`);
      }
    }
    if (o.insecureSkipTlsVerify === true) opts.rejectUnauthorized = false;
    // Served under the scheduler's own name, not the apiserver's: the kubeconfig's server name does not apply.
    delete opts.servername;
  }
  const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = (base.protocol === 'https:' ? httpsRequest : httpRequest)(url, opts, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${(o.timeoutMs ?? 15_000) / 1000}s`)));
    req.on('error', reject);
    req.end();
  }).catch((e: unknown) => {
    const err = e as NodeJS.ErrnoException;
    const tls = /certificate|self[- ]signed|CERT|UNABLE_TO_VERIFY/i.test(`${err.code ?? ''} ${err.message}`);
    const hint = tls
      ? ' (the scheduler serves a certificate this machine does not trust: pass --certificate-authority <the CA or the --tls-cert-file of sits run>, or --insecure-skip-tls-verify)'
      : '';
    const sys = systemErrorLine(e);
    if (sys?.network === true)
      throw new CliError(`${url.href}: ${sys.why}`, { hint: 'is sits run up? --server is its metrics address', exitCode: EXIT.runtime });
    throw new CliError(`${url.href}: ${err.message}${hint}`, { exitCode: EXIT.runtime });
  });
  if (status === 401) throw new CliError(`${url.href}: 401 Unauthorized (the scheduler could not authenticate you: check the kubeconfig user or pass --token)`);
  if (status === 403)
    throw new CliError(`${url.href}: 403 Forbidden (${body.trim() || 'RBAC'}: the user needs "get" on the non-resource URL ${DASHBOARD_PATHS.view})`);
  if (status === 503) throw new CliError(`${url.href}: 503 ${body.trim() || 'not ready'} (the scheduler is still starting)`);
  if (status !== 200) throw new CliError(`${url.href}: HTTP ${status}${body.trim() === '' ? '' : `: ${body.trim().slice(0, 200)}`}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (e) {
    throw new CliError(`${url.href}: the answer is not JSON (${(e as Error).message})`);
  }
  return asClusterView(parsed, url.href);
}

export interface SimSourceOptions {
  readonly seed: number;
  readonly hours: number;
  readonly load: number;
  /** Virtual minutes into the replay. */
  readonly atMinutes: number;
}

/** The demo workload (the one `npm start` and `sits demo --serve` use) under SITS, at `atMinutes` of virtual time. */
export function simView(o: SimSourceOptions): ClusterView {
  return simSource(o)(0);
}

/**
 * The same replay kept open, for `sits top --sim --watch`: each call advances it to `atMinutes` plus `laterMs` of
 * virtual time (never back), so the redraws play the demo on in real time.
 */
export function simSource(o: SimSourceOptions): (laterMs: number) => ClusterView {
  const nodes = demoCluster();
  const feed = new SimFeed({
    nodes,
    jobs: demoFeedJobs(o.seed, o.hours, o.load),
    queues: demoQueues(nodes.reduce((s, n) => s + n.gpus.length, 0)),
    seed: o.seed,
    etaEveryMs: 5 * 60_000,
  });
  let seq = 0;
  return (laterMs) => {
    feed.advanceTo(o.atMinutes * 60_000 + laterMs);
    return buildClusterView({ ...feed.input(), seq: ++seq });
  };
}
