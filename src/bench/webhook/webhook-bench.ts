/**
 * Admission webhook throughput and latency (issue 16 "Numbers"): the real handler behind the real secure
 * server (TLS 1.3, keep-alive), called the way the apiserver calls it — `concurrency` connections, each sending
 * AdmissionReviews back to back. The reviews are every rule's fixtures (bad and good), so each rule runs on
 * objects it matches. Callers present a client certificate (verified by TLS); the authorizer is an allow-all
 * stand-in, because live SubjectAccessReview answers are cached for 10 s and a cached answer is what nearly
 * every review sees. Client and server share this process, so the figures are conservative.
 */
import { Agent, request } from 'node:https';
import { parseAllDocuments } from 'yaml';
import type { KubeObject, Rule } from '../../guard/rule.ts';
import { createCa, issue } from '../../kube/secure/certs.ts';
import { ALLOW_ALL, clientCertAuthenticator } from '../../kube/secure/delegated-auth.ts';
import { startSecureServer } from '../../kube/secure/secure-server.ts';
import { percentiles } from '../../core/stats.ts';
import { webhookHandler, webhookMetrics } from '../../webhook/server.ts';

export interface WebhookBenchOptions {
  readonly rules: readonly Rule[];
  readonly reviews: number;
  readonly concurrency: number;
  readonly now: () => number;
  /** Objects related to each reviewed one (Services, PriorityClasses … of its namespace), as the caches hold them. */
  readonly relatedObjects?: number;
}

export interface WebhookBenchResult {
  readonly reviews: number;
  readonly concurrency: number;
  readonly objectKinds: number;
  readonly denied: number;
  readonly warned: number;
  readonly seconds: number;
  readonly reviewsPerSec: number;
  /** One review at a time (no queueing in front of the handler): what an apiserver request waits. */
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number };
  /** At `concurrency` connections in a closed loop: latency includes the queue of the saturated server. */
  readonly saturatedLatencyMs: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly auth: string;
}

const GROUPS: Record<string, string> = { Deployment: 'apps', StatefulSet: 'apps', ReplicaSet: 'apps', DaemonSet: 'apps', Job: 'batch', CronJob: 'batch', HorizontalPodAutoscaler: 'autoscaling', PriorityClass: 'scheduling.k8s.io' };

/** The fixture objects of every rule (a plain Pod when there are none). */
export function fixtureObjects(rules: readonly Rule[]): KubeObject[] {
  const out: KubeObject[] = [];
  for (const r of rules)
    for (const text of [r.fixtures.bad, r.fixtures.good])
      for (const d of parseAllDocuments(text)) {
        const o = d.toJS() as unknown;
        if (typeof o === 'object' && o !== null && !Array.isArray(o)) out.push(o as KubeObject);
      }
  if (out.length === 0) out.push({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'bench' }, spec: { containers: [{ name: 'c', image: 'registry.example/train:1.0' }] } });
  return out;
}

function reviewOf(obj: KubeObject, i: number): string {
  const kind = typeof obj.kind === 'string' ? obj.kind : 'Pod';
  const api = typeof obj.apiVersion === 'string' ? obj.apiVersion : 'v1';
  const [group, version] = api.includes('/') ? (api.split('/') as [string, string]) : [GROUPS[kind] ?? '', api];
  const md = (obj.metadata ?? {}) as { name?: string; namespace?: string };
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: `bench-${i}`, kind: { group, version, kind }, namespace: md.namespace ?? 'bench', name: md.name ?? `o${i}`, operation: 'CREATE', userInfo: { username: 'bench' }, object: obj },
  });
}

export async function runWebhookBench(o: WebhookBenchOptions): Promise<WebhookBenchResult> {
  const ca = await createCa('bench-ca', 3_600_000);
  const serving = await issue(ca, { commonName: 'localhost', dnsNames: ['localhost'], ips: ['127.0.0.1'], lifetimeMs: 3_600_000 });
  const client = await issue(ca, { commonName: 'sits:kube-apiserver-admission', usage: 'client', lifetimeMs: 3_600_000 });
  const objects = fixtureObjects(o.rules);
  const related: KubeObject[] = Array.from({ length: o.relatedObjects ?? 200 }, (_, i) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: `svc-${i}`, namespace: 'bench' }, spec: { clusterIP: `10.0.${i >> 8}.${i & 255}` } }));
  const handler = webhookHandler({ rules: o.rules, mode: 'enforce', cluster: () => ({ schedulerNames: ['sits-scheduler'], gpuModels: ['A100-SXM4-80GB', 'L4'], rdma: true }), related: () => related, metrics: webhookMetrics() });
  const server = await startSecureServer({ port: 0, host: '127.0.0.1', tls: serving, clientCa: ca.cert, authn: clientCertAuthenticator(), authz: ALLOW_ALL, handler: (req, res) => handler(req, res) });
  const agent = new Agent({ keepAlive: true, maxSockets: o.concurrency, ca: ca.cert, cert: client.cert, key: client.key, servername: 'localhost' });
  const bodies = objects.map(reviewOf);
  let denied = 0;
  let warned = 0;
  const post = (body: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const req = request(`${server.url}/validate`, { method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`status ${res.statusCode ?? 0}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  try {
    // Warm-up: TLS handshakes and JIT, not measured.
    await Promise.all(Array.from({ length: o.concurrency }, (_, i) => post(bodies[i % bodies.length] as string)));
    const phase = async (reviews: number, concurrency: number, count: boolean): Promise<{ seconds: number; latencies: number[] }> => {
      let next = 0;
      const latencies: number[] = [];
      const t0 = o.now();
      const worker = async (): Promise<void> => {
        for (;;) {
          const i = next++;
          if (i >= reviews) return;
          const s = o.now();
          const text = await post(bodies[i % bodies.length] as string);
          latencies.push(o.now() - s);
          if (!count) continue;
          const r = JSON.parse(text) as { response: { allowed: boolean; warnings?: string[] } };
          if (!r.response.allowed) denied++;
          else if ((r.response.warnings ?? []).length > 0) warned++;
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      return { seconds: (o.now() - t0) / 1000, latencies };
    };
    const saturated = await phase(o.reviews, o.concurrency, true);
    const single = await phase(Math.max(100, Math.min(2000, Math.floor(o.reviews / 5))), 1, false);
    const seconds = saturated.seconds;
    const round = (x: number | undefined): number => Math.round((x ?? 0) * 1000) / 1000;
    const lat = (l: number[]): { p50: number; p99: number; max: number } => {
      const [p50, p99, max] = percentiles(l, [50, 99, 100]);
      return { p50: round(p50), p99: round(p99), max: round(max) };
    };
    return {
      reviews: o.reviews,
      concurrency: o.concurrency,
      objectKinds: new Set(objects.map((x) => x.kind)).size,
      denied,
      warned,
      seconds: round(seconds),
      reviewsPerSec: Math.round(o.reviews / seconds),
      latencyMs: lat(single.latencies),
      saturatedLatencyMs: lat(saturated.latencies),
      auth: 'client certificate verified by TLS; authorizer: allow-all stand-in (live SubjectAccessReview answers are cached 10 s)',
    };
  } finally {
    agent.destroy();
    await server.close();
  }
}
