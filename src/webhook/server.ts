/**
 * `sits webhook`: the validating and mutating admission webhook on a secure port (kube/secure/secure-server.ts:
 * TLS with rotated certificates, callers authenticated and authorized by delegation).
 *   POST /validate   AdmissionReview → the guard rules' verdict (enforce or audit)
 *   POST /mutate     AdmissionReview → idempotent SITS defaults as a JSONPatch
 *   GET  /metrics    Prometheus text (reviews, latency, findings by rule, certificate expiry)
 *   GET  /report     the audit report: findings by rule and the most recent ones (JSON)
 *   GET  /healthz, /readyz
 * A review never waits on the apiserver: rules read the informer caches; Events are written in the background.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ClusterFacts, Finding, KubeObject, Rule } from '../guard/rule.ts';
import { BodyTooLarge, readBody, type SecureServer } from '../kube/secure/secure-server.ts';
import { BadReview, findingText, mutate, parseReview, validate, type AdmissionRequest, type Mode, type MutateDeps, type ReviewOut } from './admission.ts';

/** The apiserver sends at most ~3 MiB (object + oldObject of 1.5 MiB each); more is not a review. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface WebhookMetrics {
  readonly registry: Registry;
  readonly reviews: Counter<'webhook' | 'kind' | 'operation' | 'result'>;
  readonly duration: Histogram<'webhook'>;
  readonly findings: Counter<'rule' | 'severity' | 'mode'>;
  readonly certExpiry: Gauge;
  readonly eventsDropped: Counter;
}

export function webhookMetrics(): WebhookMetrics {
  const registry = new Registry();
  return {
    registry,
    reviews: new Counter({
      name: 'sits_webhook_reviews_total',
      help: 'Admission reviews answered, by webhook (validate, mutate), kind, operation and result (allowed, denied, patched, error).',
      labelNames: ['webhook', 'kind', 'operation', 'result'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'sits_webhook_review_duration_seconds',
      help: 'Time from the request body read to the response written.',
      labelNames: ['webhook'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    findings: new Counter({
      name: 'sits_webhook_findings_total',
      help: 'Guard-rail findings on reviewed objects, by rule, severity and mode (enforce, audit); dry runs excluded.',
      labelNames: ['rule', 'severity', 'mode'],
      registers: [registry],
    }),
    certExpiry: new Gauge({
      name: 'sits_webhook_certificate_expiry_timestamp_seconds',
      help: 'notAfter of the serving certificate (Unix seconds).',
      registers: [registry],
    }),
    eventsDropped: new Counter({
      name: 'sits_webhook_events_dropped_total',
      help: 'Audit Events not written (rate limit or apiserver error).',
      registers: [registry],
    }),
  };
}

export interface RecordedFinding {
  readonly at: string;
  readonly rule: string;
  readonly severity: Finding['severity'];
  readonly message: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly operation: string;
  readonly user: string;
  readonly denied: boolean;
}

/** Where findings go besides the response: Events (audit mode) and the report. */
export interface FindingRecorder {
  record(req: AdmissionRequest, obj: KubeObject, findings: readonly Finding[], denied: boolean): void;
}

export interface WebhookHandlerOptions {
  readonly rules: readonly Rule[];
  readonly mode: Mode;
  readonly disabled?: ReadonlySet<string>;
  readonly cluster: () => ClusterFacts;
  readonly related?: (req: AdmissionRequest, obj: KubeObject) => readonly KubeObject[];
  /** Users whose controlled pods are warned, not denied (admission.ts `defaultControllerUsers`). */
  readonly controllerUsers?: ReadonlySet<string>;
  readonly mutate?: MutateDeps;
  readonly recorder?: FindingRecorder;
  readonly report?: () => unknown;
  readonly ready?: () => boolean;
  readonly metrics: WebhookMetrics;
  readonly log?: (m: string) => void;
}

/** A review body over the limit: answered 413 (the apiserver applies its failurePolicy). */
class TooLarge extends BadReview {}

function send(res: ServerResponse, status: number, body: string, type: string): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(body);
}

/** The request handler behind the secure server (authn/authz already done by it). */
export function webhookHandler(o: WebhookHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const review = async (which: 'validate' | 'mutate', req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const end = o.metrics.duration.startTimer({ webhook: which });
    let parsed: AdmissionRequest | undefined;
    try {
      let body: Buffer;
      try {
        body = await readBody(req, MAX_BODY_BYTES);
      } catch (e) {
        if (e instanceof BodyTooLarge) throw new TooLarge(e.message);
        throw e;
      }
      let json: unknown;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch (e) {
        throw new BadReview(`body is not JSON: ${(e as Error).message}`);
      }
      parsed = parseReview(json);
      const r = parsed;
      let outReview: ReviewOut;
      let result: string;
      if (which === 'validate') {
        const v = validate(r, {
          rules: o.rules,
          mode: o.mode,
          cluster: o.cluster(),
          ...(o.disabled !== undefined ? { disabled: o.disabled } : {}),
          ...(o.related !== undefined ? { related: o.related } : {}),
          ...(o.controllerUsers !== undefined ? { controllerUsers: o.controllerUsers } : {}),
        });
        outReview = v.review;
        result = v.denied ? 'denied' : 'allowed';
        // A dry run has no side effects (sideEffects: NoneOnDryRun): no events, no report, no finding counts.
        if (r.dryRun !== true && v.findings.length > 0 && r.object !== undefined) {
          for (const f of v.findings) o.metrics.findings.inc({ rule: f.rule, severity: f.severity, mode: o.mode });
          o.recorder?.record(r, r.object, v.findings, v.denied);
        }
      } else {
        outReview =
          o.mutate === undefined
            ? { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: r.uid, allowed: true } }
            : mutate(r, o.mutate);
        result = outReview.response.patch !== undefined ? 'patched' : 'allowed';
      }
      send(res, 200, JSON.stringify(outReview), 'application/json');
      o.metrics.reviews.inc({ webhook: which, kind: r.kind.kind, operation: r.operation, result });
    } catch (e) {
      o.metrics.reviews.inc({ webhook: which, kind: parsed?.kind.kind ?? '', operation: parsed?.operation ?? '', result: 'error' });
      if (e instanceof BadReview) {
        if (e instanceof TooLarge) res.setHeader('Connection', 'close');
        if (!res.headersSent && !res.destroyed)
          send(res, e instanceof TooLarge ? 413 : 400, `bad AdmissionReview: ${e.message}\n`, 'text/plain; charset=utf-8');
      } else {
        // A bug of ours: answer (the apiserver applies the failurePolicy) and keep serving.
        o.log?.(`${which}: ${(e as Error).stack ?? String(e)}`);
        if (!res.headersSent && !res.destroyed) send(res, 500, 'internal error\n', 'text/plain; charset=utf-8');
      }
    } finally {
      end();
    }
  };

  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const method = req.method ?? 'GET';
    if (path === '/validate' || path === '/mutate') {
      if (method !== 'POST') {
        res.setHeader('Allow', 'POST');
        send(res, 405, 'method not allowed\n', 'text/plain; charset=utf-8');
        return;
      }
      void review(path === '/validate' ? 'validate' : 'mutate', req, res);
      return;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      send(res, 405, 'method not allowed\n', 'text/plain; charset=utf-8');
      return;
    }
    switch (path) {
      case '/healthz':
      case '/livez':
        send(res, 200, 'ok\n', 'text/plain; charset=utf-8');
        return;
      case '/readyz':
        if (o.ready?.() === false) send(res, 503, 'not ready: caches not synced\n', 'text/plain; charset=utf-8');
        else send(res, 200, 'ok\n', 'text/plain; charset=utf-8');
        return;
      case '/metrics':
        o.metrics.registry.metrics().then(
          (t) => send(res, 200, t, o.metrics.registry.contentType),
          (e: unknown) => send(res, 500, `metrics: ${(e as Error).message}\n`, 'text/plain; charset=utf-8'),
        );
        return;
      case '/report':
        send(res, 200, `${JSON.stringify(o.report?.() ?? {}, null, 2)}\n`, 'application/json');
        return;
      default:
        send(res, 404, 'not found\n', 'text/plain; charset=utf-8');
    }
  };
}

/** The audit report: counts by rule and the most recent findings (bounded). */
export class FindingReport {
  private readonly recent: RecordedFinding[] = [];
  private readonly byRule = new Map<string, { error: number; warning: number }>();
  constructor(
    private readonly max = 1000,
    private readonly now: () => Date = () => new Date(),
  ) {}

  add(req: AdmissionRequest, obj: KubeObject, findings: readonly Finding[], denied: boolean): RecordedFinding[] {
    const md = (typeof obj.metadata === 'object' && obj.metadata !== null ? obj.metadata : {}) as {
      name?: unknown;
      generateName?: unknown;
      namespace?: unknown;
    };
    const name = typeof md.name === 'string' ? md.name : typeof md.generateName === 'string' ? `${md.generateName}*` : (req.name ?? '');
    const added: RecordedFinding[] = [];
    for (const f of findings) {
      const c = this.byRule.get(f.rule) ?? { error: 0, warning: 0 };
      c[f.severity]++;
      this.byRule.set(f.rule, c);
      const rec: RecordedFinding = {
        at: this.now().toISOString(),
        rule: f.rule,
        severity: f.severity,
        message: findingText(f),
        kind: req.kind.kind,
        namespace: req.namespace ?? '',
        name,
        operation: req.operation,
        user: req.userInfo?.username ?? '',
        denied,
      };
      this.recent.push(rec);
      added.push(rec);
    }
    if (this.recent.length > this.max) this.recent.splice(0, this.recent.length - this.max);
    return added;
  }

  view(): { byRule: Record<string, { error: number; warning: number }>; recent: readonly RecordedFinding[] } {
    return { byRule: Object.fromEntries([...this.byRule].sort(([a], [b]) => a.localeCompare(b))), recent: [...this.recent] };
  }
}

export type { SecureServer };
