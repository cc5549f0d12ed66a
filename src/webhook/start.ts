/**
 * Composition of `sits webhook`: informer caches → rules → secure server, with certificates from a Secret
 * kept by CertRotation (or from files, re-read when they change), and audit findings recorded as Events and
 * in the report. Everything the process starts is stopped by `close()`.
 */
import { readFileSync } from 'node:fs';
import type { KubeClient } from '../kube/client/client.ts';
import { delegatedAuth, type Authorizer, type Authenticator } from '../kube/secure/delegated-auth.ts';
import { InFlight } from '../kube/client/in-flight.ts';
import { startSecureServer, type SecureServer } from '../kube/secure/secure-server.ts';
import { certValidity, watchCertFiles, type CertPair } from '../kube/secure/certs.ts';
import type { Finding, KubeObject, Rule } from '../guard/rule.ts';
import { defaultControllerUsers, findingText, type AdmissionRequest, type Mode } from './admission.ts';
import { startContextCache, type ContextCache } from './context-cache.ts';
import { CertRotation, type CertRotationOptions } from './cert-rotation.ts';
import { FindingReport, webhookHandler, webhookMetrics, type WebhookMetrics } from './server.ts';

export interface WebhookOptions {
  readonly client: KubeClient;
  readonly rules: readonly Rule[];
  readonly mode: Mode;
  readonly disabled?: ReadonlySet<string>;
  readonly schedulerName: string;
  readonly port: number;
  readonly host?: string;
  /** Certificates: from a Secret kept by the webhook, or from files (cert-manager), or plain HTTP on loopback. */
  readonly tls: { readonly rotation: Omit<CertRotationOptions, 'log'> } | { readonly certFile: string; readonly keyFile: string } | 'none';
  /** PEM file of the CA for client certificates (the apiserver's, if it presents one). */
  readonly clientCaFile?: string;
  /** Override authn/authz (benchmarks: a stand-in that allows every caller). Default: delegated to the apiserver. */
  readonly auth?: { readonly authn: Authenticator; readonly authz: Authorizer };
  /** Write audit Events (default: in audit mode). */
  readonly events?: boolean;
  /**
   * Users whose controlled pods are warned, not denied. Default: `defaultControllerUsers` of the namespace of the
   * certificate Secret (SITS's own), or kube-controller-manager's alone when there is none.
   */
  readonly controllerUsers?: readonly string[];
  readonly log?: (m: string) => void;
}

/** The paths the webhook serves behind authorization (the probes are always allowed). */
export const WEBHOOK_PATHS = ['/validate', '/mutate', '/metrics', '/report'] as const;

export interface RunningWebhook {
  readonly url: string;
  readonly port: number;
  readonly metrics: WebhookMetrics;
  readonly report: FindingReport;
  readonly cache: ContextCache;
  readonly rotation: CertRotation | undefined;
  /** Waits for the Events written so far. */
  drain(): Promise<void>;
  close(): Promise<void>;
}

const EVENT_REPEAT_MS = 10 * 60_000;
const EVENTS_PER_SECOND = 50;

/** Audit Events: one per object and rule per 10 minutes, at most 50 per second (the rest counted as dropped). */
class AuditEvents {
  private readonly last = new Map<string, number>();
  private tokens = EVENTS_PER_SECOND;
  private refilledAt = performance.now();
  readonly inFlight = new InFlight();
  constructor(
    private readonly client: KubeClient,
    private readonly metrics: WebhookMetrics,
    private readonly log: (m: string) => void,
  ) {}

  record(req: AdmissionRequest, obj: KubeObject, findings: readonly Finding[], denied: boolean): void {
    const md = (typeof obj.metadata === 'object' && obj.metadata !== null ? obj.metadata : {}) as { name?: unknown; generateName?: unknown; uid?: unknown };
    const name = typeof md.name === 'string' && md.name !== '' ? md.name : (req.name ?? (typeof md.generateName === 'string' ? md.generateName : 'unnamed'));
    const ns = req.namespace ?? 'default';
    const now = performance.now();
    this.tokens = Math.min(EVENTS_PER_SECOND, this.tokens + ((now - this.refilledAt) / 1000) * EVENTS_PER_SECOND);
    this.refilledAt = now;
    for (const f of findings) {
      const key = `${ns}/${req.kind.kind}/${name}/${f.rule}`;
      const prev = this.last.get(key);
      if (prev !== undefined && now - prev < EVENT_REPEAT_MS) continue;
      if (this.tokens < 1) {
        this.metrics.eventsDropped.inc();
        continue;
      }
      this.tokens--;
      this.last.set(key, now);
      if (this.last.size > 50_000) for (const [k, at] of this.last) if (now - at >= EVENT_REPEAT_MS) this.last.delete(k);
      const at = new Date().toISOString();
      const apiVersion =
        typeof obj.apiVersion === 'string' ? obj.apiVersion : req.kind.group === '' ? req.kind.version : `${req.kind.group}/${req.kind.version}`;
      const task = this.client
        .post(`/api/v1/namespaces/${ns}/events`, {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { generateName: `${name}.`, namespace: ns, labels: { 'lint.sits2026.dev/rule': f.rule } },
          involvedObject: { apiVersion, kind: req.kind.kind, name, namespace: ns, ...(typeof md.uid === 'string' ? { uid: md.uid } : {}) },
          reason: 'PolicyViolation',
          message: `${denied ? 'denied: ' : ''}${f.severity} ${findingText(f)}`.slice(0, 1000),
          type: 'Warning',
          source: { component: 'sits-webhook' },
          reportingComponent: 'sits-webhook',
          reportingInstance: 'sits-webhook',
          firstTimestamp: at,
          lastTimestamp: at,
          count: 1,
        })
        .catch((e: unknown) => {
          this.metrics.eventsDropped.inc();
          this.log(`event: ${(e as Error).message}`);
        });
      this.inFlight.track(task);
    }
  }
}

export async function startWebhook(o: WebhookOptions): Promise<RunningWebhook> {
  const log = o.log ?? (() => undefined);
  const metrics = webhookMetrics();
  const report = new FindingReport();
  const cache = await startContextCache(o.client, { schedulerNames: [o.schedulerName], log });
  if (cache.skipped.length > 0) log(`webhook: not watching ${cache.skipped.join(', ')} (API not served)`);
  const events = (o.events ?? o.mode === 'audit') ? new AuditEvents(o.client, metrics, log) : undefined;

  let rotation: CertRotation | undefined;
  let tls: CertPair | undefined;
  let stopFileWatch: (() => void) | undefined;
  if (o.tls === 'none') tls = undefined;
  else if ('rotation' in o.tls) {
    rotation = new CertRotation(o.client, { ...o.tls.rotation, log });
    tls = await rotation.start();
  } else {
    const { certFile, keyFile } = o.tls;
    tls = { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  }
  if (tls !== undefined) metrics.certExpiry.set(certValidity(tls.cert).notAfter.getTime() / 1000);

  const clientCa = o.clientCaFile === undefined ? undefined : readFileSync(o.clientCaFile, 'utf8');
  // Reviews through their own client and gate; only the paths served are reviewed (ADR 0177).
  const delegated =
    o.auth === undefined
      ? delegatedAuth(o.client, { ...(clientCa !== undefined ? { clientCa } : {}), paths: WEBHOOK_PATHS, userAgent: 'sits-webhook-auth/0.1' })
      : undefined;
  const auth = o.auth ?? (delegated as NonNullable<typeof delegated>);

  const handler = webhookHandler({
    rules: o.rules,
    mode: o.mode,
    ...(o.disabled !== undefined ? { disabled: o.disabled } : {}),
    cluster: () => cache.cluster(),
    related: (req, obj) =>
      cache.related(req.namespace, {
        kind: req.kind.kind,
        ...(typeof (obj.metadata as { name?: unknown } | undefined)?.name === 'string' ? { name: (obj.metadata as { name: string }).name } : {}),
      }),
    controllerUsers: new Set(
      o.controllerUsers ?? defaultControllerUsers(typeof o.tls === 'object' && 'rotation' in o.tls ? o.tls.rotation.secret.namespace : undefined),
    ),
    mutate: { schedulerName: o.schedulerName, namespace: (n) => cache.namespace(n) },
    recorder: {
      record: (req, obj, findings, denied) => {
        report.add(req, obj, findings, denied);
        events?.record(req, obj, findings, denied);
      },
    },
    report: () => report.view(),
    metrics,
    log,
  });

  const server: SecureServer = await startSecureServer({
    port: o.port,
    ...(o.host !== undefined ? { host: o.host } : {}),
    ...(tls !== undefined ? { tls } : {}),
    ...(clientCa !== undefined ? { clientCa } : {}),
    authn: auth.authn,
    authz: auth.authz,
    handler: (req, res) => handler(req, res),
    log,
  });
  rotation?.onRotate((m) => {
    server.setTls(m);
    metrics.certExpiry.set(m.notAfter.getTime() / 1000);
    log(`webhook: serving a renewed certificate (until ${m.notAfter.toISOString()})`);
  });
  if (o.tls !== 'none' && !('rotation' in o.tls)) {
    // Certificates from files (cert-manager renews them in place): re-read when they change.
    stopFileWatch = watchCertFiles(
      o.tls,
      30_000,
      (pair) => {
        server.setTls(pair);
        metrics.certExpiry.set(certValidity(pair.cert).notAfter.getTime() / 1000);
        log('webhook: serving the certificate re-read from its files');
      },
      (m) => log(`webhook: ${m}`),
    );
  }

  return {
    url: server.url,
    port: server.port,
    metrics,
    report,
    cache,
    rotation,
    drain: async () => {
      await events?.inFlight.drain();
    },
    close: async () => {
      rotation?.stop();
      stopFileWatch?.();
      cache.stop();
      await server.close();
      delegated?.close();
      await events?.inFlight.drain();
    },
  };
}
