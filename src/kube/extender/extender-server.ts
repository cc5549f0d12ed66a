/**
 * `sits extender`: SitsExtender (extender.ts) behind the secure port (secure-server.ts, ADR 0053). kube-scheduler
 * authenticates with a client certificate (its `tlsConfig.certData`) checked against `--client-ca-file`, or a
 * bearer token (TokenReview); each call is authorized by a SubjectAccessReview for `post` on its path
 * (`/filter`, `/prioritize`, `/bind`, `/preempt` under the prefix). The cluster is seen as a passive live
 * scheduler sees it (informers into a ClusterCache and PodJobs, a binder; no loop, no leader) for kube-scheduler's
 * scheduler name.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { blendShapes, WHOLE_GPU_PRIOR } from '../../core/estimate/expected-workload.ts';
import { formatProfileError, resolveProfile } from '../../core/plugins/registry.ts';
import { seededRng } from '../../core/ports.ts';
import type { CertPair } from '../secure/certs.ts';
import type { KubeClient } from '../client/client.ts';
import { delegatedAuth, type Authenticator, type Authorizer } from '../secure/delegated-auth.ts';
import { SitsExtender, type ExtenderArgs, type ExtenderBindingArgs, type ExtenderPreemptionArgs } from './extender.ts';
import { LeaderElector } from '../scheduler/leader.ts';
import { KubeBinder } from '../adapters/binder.ts';
import { ClusterCache } from '../cache/cluster-cache.ts';
import { KubeEventSink } from '../adapters/event-sink.ts';
import { startInformers } from '../cache/informers.ts';
import { WALL_CLOCK } from '../scheduler/live-scheduler.ts';
import { PodJobs } from '../cache/pod-jobs.ts';
import { BodyTooLarge, readBody, startSecureServer } from '../secure/secure-server.ts';

/** kube-scheduler's own name: the pods the extender is asked about carry it. */
export const KUBE_SCHEDULER_NAME = 'default-scheduler';
/** Largest request body (ExtenderArgs with full Node objects when not nodeCacheCapable). */
const MAX_BODY_BYTES = 64 << 20;
export const EXTENDER_VERBS = ['filter', 'prioritize', 'bind', 'preempt'] as const;

export interface ExtenderServerOptions {
  readonly client: KubeClient;
  readonly port: number;
  readonly host?: string;
  /** Serving certificate; undefined = plain HTTP on loopback (development). */
  readonly tls?: CertPair;
  /** PEM of the CA of kube-scheduler's client certificate. */
  readonly clientCa?: string;
  /** Override authn/authz (benchmarks, --insecure-localhost). Default: delegated to the apiserver. */
  readonly auth?: { readonly authn: Authenticator; readonly authz: Authorizer };
  /** Token audiences the extender accepts (TokenReview spec.audiences); default the apiserver's. */
  readonly audiences?: readonly string[];
  /** Path prefix of the verbs (the part of kube-scheduler's urlPrefix after host:port), e.g. `/sits`; default none. */
  readonly pathPrefix?: string;
  /** schedulerName of the pods kube-scheduler sends (its profile's name). */
  readonly schedulerName?: string;
  readonly profile?: string;
  readonly planTtlMs?: number;
  readonly gangPlanTtlMs?: number;
  /**
   * Several replicas (ADR 0078): they elect a leader on this Lease; only the leader answers the verbs and is
   * Ready (`/readyz`), so a Service in front of them sends kube-scheduler to the one that holds the plans.
   * Undefined: one replica, always serving.
   */
  readonly leaderElection?: { readonly namespace: string; readonly name: string; readonly identity: string; readonly leaseDurationSec?: number };
  readonly log?: (m: string) => void;
}

export interface RunningExtender {
  readonly url: string;
  readonly port: number;
  readonly extender: SitsExtender;
  readonly live: ClusterWatch;
  /** Whether this replica answers the verbs now (always without leader election). */
  serving(): boolean;
  setTls(pair: CertPair): void;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  let body: Buffer;
  try {
    body = await readBody(req, MAX_BODY_BYTES);
  } catch (e) {
    if (e instanceof BodyTooLarge) throw new HttpError(413, e.message);
    throw e;
  }
  try {
    const v: unknown = JSON.parse(body.toString('utf8'));
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('want a JSON object');
    return v;
  } catch (e) {
    throw new HttpError(400, `bad request body: ${(e as Error).message}`);
  }
}

function send(res: ServerResponse, status: number, body: string, type = 'application/json'): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(body);
}

/** The extender's view of the cluster and its binder. */
export interface ClusterWatch {
  readonly cache: ClusterCache;
  readonly jobs: PodJobs;
  readonly binder: KubeBinder;
  stop(): Promise<void>;
}

/** Informers into a ClusterCache and PodJobs, and the binder the verbs commit through; no events of ours (kube-scheduler reports). */
async function watchCluster(client: KubeClient, schedulerName: string, log: (m: string) => void): Promise<ClusterWatch> {
  const nowMs = (): number => WALL_CLOCK.nowMs();
  const cache = new ClusterCache(schedulerName, log);
  // The extender never asks for a checkpoint: the running jobs are the cache's as they are.
  const jobs = new PodJobs(cache, schedulerName, WALL_CLOCK, (running) => running);
  const events = new KubeEventSink(client, cache, { component: schedulerName, instance: 'sits-extender', enabled: false, log, nowMs });
  const binder = new KubeBinder(client, cache, { schedulerName, events, log, nowMs });
  // Nothing cycles here: a watch event needs no wake-up, the verbs read the cache as it is.
  const informers = await startInformers(client, cache, jobs, { changed: () => undefined, queuesChanged: () => undefined, log });
  return {
    cache,
    jobs,
    binder,
    stop: async () => {
      informers.stop();
      await Promise.allSettled([binder.drain(), events.drain()]);
    },
  };
}

export async function startExtender(o: ExtenderServerOptions): Promise<RunningExtender> {
  const log = o.log ?? (() => undefined);
  const profile = resolveProfile(o.profile ?? 'sits', { typicalShapes: blendShapes([], WHOLE_GPU_PRIOR, 0) });
  if (!profile.ok) throw new Error(formatProfileError(profile.error));
  // Passive: the informers fill the cache; kube-scheduler reports (its own events), so ours are off.
  const live = await watchCluster(o.client, o.schedulerName ?? KUBE_SCHEDULER_NAME, log);
  const extender = new SitsExtender(
    { client: o.client, cache: live.cache, jobs: live.jobs, binder: live.binder },
    {
      profile: profile.value,
      rng: () => seededRng(1),
      nowMs: () => WALL_CLOCK.nowMs(),
      ...(o.planTtlMs === undefined ? {} : { planTtlMs: o.planTtlMs }),
      ...(o.gangPlanTtlMs === undefined ? {} : { gangPlanTtlMs: o.gangPlanTtlMs }),
      log,
    },
  );
  // A gang a previous process (or leader) was binding when it stopped (plan annotations written, not every
  // Binding): completed or rolled back before this one serves, as a new leader of the live scheduler does (ADR 0006).
  let serving = false;
  let elector: LeaderElector | undefined;
  const lead = async (): Promise<void> => {
    // Plans this replica made in an earlier term may have been overtaken by the other leader's: start clean.
    extender.close('dropped: leadership changed');
    await live.binder.recover();
    serving = elector === undefined || elector.isLeader();
    if (serving) log('extender: leading, serving the verbs');
  };
  if (o.leaderElection === undefined) await lead();
  else {
    const le = o.leaderElection;
    elector = new LeaderElector(o.client, {
      namespace: le.namespace,
      name: le.name,
      identity: le.identity,
      ...(le.leaseDurationSec === undefined
        ? {}
        : {
            leaseDurationSec: le.leaseDurationSec,
            renewDeadlineSec: Math.max(1, le.leaseDurationSec * 0.66),
            retryPeriodSec: Math.max(0.5, le.leaseDurationSec / 7),
          }),
      log,
      onStartedLeading: () => void lead().catch((e: unknown) => log(`extender: recovery on leading: ${(e as Error).message}`)),
      onStoppedLeading: () => {
        serving = false;
        extender.close('dropped: no longer the leader');
        log('extender: lost the lease, not serving');
      },
    });
    elector.start();
  }
  // Plans expire even when no call comes: a gang member's bind waiting for the others is answered on time.
  const sweep = setInterval(() => extender.expire(), 500);
  sweep.unref();
  const prefix = (o.pathPrefix ?? '').replace(/\/+$/, '');
  const route = async (verb: string, body: unknown): Promise<unknown> => {
    switch (verb) {
      case 'filter':
        return extender.filter(extenderArgs(body));
      case 'prioritize':
        return extender.prioritize(extenderArgs(body));
      case 'bind':
        return extender.bind(bindingArgs(body));
      case 'preempt':
        return extender.preempt(preemptionArgs(body));
      default:
        throw new HttpError(404, `no extender verb ${verb}`);
    }
  };
  // Reviews go through their own client and gate, not the binding client's queue; only the verbs are reviewed (ADR 0177).
  const delegated =
    o.auth === undefined
      ? delegatedAuth(o.client, {
          ...(o.clientCa !== undefined ? { clientCa: o.clientCa } : {}),
          ...(o.audiences !== undefined ? { audiences: o.audiences } : {}),
          paths: ['filter', 'prioritize', 'bind', 'preempt'].map((v) => `${prefix}/${v}`),
          userAgent: 'sits-extender-auth/0.1',
        })
      : undefined;
  const authn = o.auth?.authn ?? (delegated as NonNullable<typeof delegated>).authn;
  const authz = o.auth?.authz ?? (delegated as NonNullable<typeof delegated>).authz;
  const server = await startSecureServer({
    port: o.port,
    ...(o.host === undefined ? {} : { host: o.host }),
    ...(o.tls === undefined ? {} : { tls: o.tls }),
    ...(o.clientCa === undefined ? {} : { clientCa: o.clientCa }),
    authn,
    authz,
    log,
    handler: (req, res) => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      if (path === '/healthz' || path === '/livez' || (path === '/readyz' && serving)) {
        send(res, 200, 'ok\n', 'text/plain; charset=utf-8');
        return;
      }
      // A replica that does not lead is alive but not Ready: the Service sends kube-scheduler elsewhere.
      if (path === '/readyz') {
        send(res, 503, 'not the leader\n', 'text/plain; charset=utf-8');
        return;
      }
      void (async () => {
        if (!serving) {
          // Closed after the answer: kube-scheduler's next call opens a new connection, which the Service sends to the leader.
          res.setHeader('Connection', 'close');
          throw new HttpError(503, 'this extender replica is not the leader (its plans live in the leader): retry through the Service');
        }
        if (!path.startsWith(`${prefix}/`)) throw new HttpError(404, `not found: ${path}`);
        if (req.method !== 'POST') throw new HttpError(405, `${req.method ?? ''} ${path}: extender verbs are POST`);
        const body = await readJson(req);
        const out = await route(path.slice(prefix.length + 1), body);
        send(res, 200, JSON.stringify(out));
      })().catch((e: unknown) => {
        const status = e instanceof HttpError ? e.status : 500;
        if (status === 500) log(`extender ${path}: ${(e as Error).stack ?? String(e)}`);
        if (!res.headersSent) send(res, status, `${(e as Error).message}\n`, 'text/plain; charset=utf-8');
      });
    },
  });
  return {
    url: server.url,
    port: server.port,
    extender,
    live,
    serving: () => serving,
    setTls: (p) => server.setTls(p),
    close: async () => {
      clearInterval(sweep);
      serving = false;
      extender.close();
      await server.close();
      delegated?.close();
      // Released: a standby replica takes over at once instead of after the lease's duration.
      await elector?.stop(true);
      await live.stop();
    },
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const bad = (field: string, want: string, v: unknown): HttpError =>
  new HttpError(400, `${field}: want ${want}, got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);

/** ExtenderArgs with the fields SITS reads checked (the Pod itself is read as the apiserver stored it). */
export function extenderArgs(body: unknown): ExtenderArgs {
  if (!isObject(body)) throw bad('ExtenderArgs', 'an object', body);
  const { Pod, Nodes, NodeNames } = body;
  if (!isObject(Pod)) throw bad('ExtenderArgs.Pod', 'a Pod object', Pod);
  if (!isObject(Pod.metadata) || typeof Pod.metadata.name !== 'string')
    throw bad('ExtenderArgs.Pod.metadata.name', 'a string', isObject(Pod.metadata) ? Pod.metadata.name : Pod.metadata);
  if (NodeNames !== undefined && NodeNames !== null) {
    if (!Array.isArray(NodeNames)) throw bad('ExtenderArgs.NodeNames', 'an array of node names', NodeNames);
    NodeNames.forEach((n, i) => {
      if (typeof n !== 'string') throw bad(`ExtenderArgs.NodeNames[${i}]`, 'a string', n);
    });
  } else if (Nodes !== undefined && Nodes !== null) {
    if (!isObject(Nodes) || !Array.isArray(Nodes.items)) throw bad('ExtenderArgs.Nodes.items', 'an array of Nodes', isObject(Nodes) ? Nodes.items : Nodes);
    Nodes.items.forEach((n, i) => {
      if (!isObject(n)) throw bad(`ExtenderArgs.Nodes.items[${i}]`, 'a Node object', n);
    });
  } else throw new HttpError(400, 'ExtenderArgs: neither NodeNames nor Nodes given');
  return body as ExtenderArgs;
}

/** ExtenderPreemptionArgs: the victim maps checked as far as SITS reads them. */
export function preemptionArgs(body: unknown): ExtenderPreemptionArgs {
  if (!isObject(body)) throw bad('ExtenderPreemptionArgs', 'an object', body);
  if (body.Pod !== undefined && body.Pod !== null && !isObject(body.Pod)) throw bad('ExtenderPreemptionArgs.Pod', 'a Pod object', body.Pod);
  for (const k of ['NodeNameToMetaVictims', 'NodeNameToVictims'] as const) {
    const m = body[k];
    if (m === undefined || m === null) continue;
    if (!isObject(m)) throw bad(`ExtenderPreemptionArgs.${k}`, 'a map of node name to victims', m);
    for (const [node, v] of Object.entries(m)) {
      if (v === null) continue;
      if (!isObject(v)) throw bad(`ExtenderPreemptionArgs.${k}[${node}]`, 'victims', v);
      if (v.Pods !== undefined && v.Pods !== null && !(Array.isArray(v.Pods) && v.Pods.every(isObject)))
        throw bad(`ExtenderPreemptionArgs.${k}[${node}].Pods`, 'an array of pods', v.Pods);
      if (k === 'NodeNameToMetaVictims' && Array.isArray(v.Pods))
        (v.Pods as Record<string, unknown>[]).forEach((p, i) => {
          if (typeof p.UID !== 'string') throw bad(`ExtenderPreemptionArgs.${k}[${node}].Pods[${i}].UID`, 'a string', p.UID);
        });
    }
  }
  return body as ExtenderPreemptionArgs;
}

/** ExtenderBindingArgs with its fields checked (a wrong type is named, not a crash). */
export function bindingArgs(body: unknown): ExtenderBindingArgs {
  if (!isObject(body)) throw bad('ExtenderBindingArgs', 'an object', body);
  const b = body;
  const field = (k: string, required: boolean): string => {
    const v = b[k];
    if (v === undefined && !required) return '';
    if (typeof v !== 'string') throw new HttpError(400, `ExtenderBindingArgs.${k}: want a string, got ${v === undefined ? 'nothing' : typeof v}`);
    return v;
  };
  return { PodName: field('PodName', true), PodNamespace: field('PodNamespace', true), PodUID: field('PodUID', false), Node: field('Node', true) };
}
