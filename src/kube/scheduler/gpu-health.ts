/**
 * The live GPU health loop (issue 14 §5): every interval it scrapes each node's dcgm-exporter, feeds the
 * pure monitor (core/health/monitor.ts) and writes the node's quarantines to the Node object as
 * ANNOTATION.gpuQuarantine, the annotation the scheduler reads (kube/cache/labels.ts): a quarantined GPU is
 * unhealthy, gets no new pods, and `sits explain` gives the quarantine's reason. Entries another writer put
 * there (the BatchInferenceJob fault ladder) are taken into the book and released the same way, after a
 * health check. Checkpoint-and-migrate intents go to `onIntent` (the seam for the controller that moves
 * the work: docs/adr/0096-predictive-gpu-health.md).
 *
 * An exporter that cannot be reached is logged (once until it changes), never a reason to quarantine: a
 * dead exporter is not a dead GPU.
 */
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import type { V1Node } from '@kubernetes/client-node';
import type { Clock } from '../../core/ports.ts';
import { readDcgmMetrics } from '../../core/health/dcgm.ts';
import type { DetectorConfig } from '../../core/health/detector.ts';
import { GpuHealthMonitor, type HealthAction, type MigrateIntent } from '../../core/health/monitor.ts';
import { formatQuarantine, parseQuarantine, type DeviceRef } from '../../core/health/quarantine.ts';
import { err, ok, type Result } from '../../core/result.ts';
import { ANNOTATION } from '../../api/wire.ts';
import { isStatus, type KubeClient } from '../client/client.ts';

/** One dcgm-exporter endpoint and the Node its GPUs belong to (its Hostname label is often the exporter's pod name). */
export interface DcgmTarget {
  readonly node: string;
  readonly url: string;
}

export interface HealthCheckResult {
  readonly passed: boolean;
  readonly detail: string;
}

export interface GpuHealthWatcherOptions {
  readonly client: KubeClient;
  readonly targets: readonly DcgmTarget[];
  readonly intervalMs: number;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  readonly quarantineMs?: number;
  readonly detector?: DetectorConfig;
  readonly onIntent?: (intent: MigrateIntent) => void;
  /** A device's health check (DCGM diagnostics, say); default: the detector's latest verdict on it. */
  readonly healthCheck?: (device: DeviceRef) => Promise<HealthCheckResult>;
  readonly scrapeTimeoutMs?: number;
}

const MAX_BODY = 16 * 1024 * 1024;

/** GETs a metrics endpoint: the text, or why not. */
export function scrape(url: string, timeoutMs: number): Promise<Result<string, string>> {
  return new Promise((resolve) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      resolve(err(`${url}: not a URL`));
      return;
    }
    const get = u.protocol === 'https:' ? httpsGet : httpGet;
    const req = get(u, { timeout: timeoutMs, headers: { Accept: 'text/plain' } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) req.destroy(new Error(`more than ${MAX_BODY} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => {
        if (res.statusCode !== 200) resolve(err(`${url}: HTTP ${res.statusCode ?? 0}`));
        else resolve(ok(Buffer.concat(chunks).toString('utf8')));
      });
      res.on('error', (e) => resolve(err(`${url}: ${e.message}`)));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e) => resolve(err(`${url}: ${e.message}`)));
  });
}

export interface TickSummary {
  readonly actions: readonly HealthAction[];
  readonly errors: readonly string[];
  /** Nodes whose annotation was written this round. */
  readonly written: readonly string[];
}

export class GpuHealthWatcher {
  readonly monitor: GpuHealthMonitor;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<TickSummary> | undefined;
  private stopped = false;
  private readonly lastError = new Map<string, string>();

  constructor(private readonly opts: GpuHealthWatcherOptions) {
    this.monitor = new GpuHealthMonitor({
      ...(opts.quarantineMs === undefined ? {} : { quarantineMs: opts.quarantineMs }),
      ...(opts.detector === undefined ? {} : { detector: opts.detector }),
    });
  }

  /** One scrape-judge-write round over every target. Never throws. */
  async once(): Promise<TickSummary> {
    const actions: HealthAction[] = [];
    const errors: string[] = [];
    const written: string[] = [];
    for (const t of this.opts.targets) {
      const problem = (e: string): void => {
        errors.push(e);
        if (this.lastError.get(t.node) !== e) this.opts.log(`gpu health: node ${t.node}: ${e}`);
        this.lastError.set(t.node, e);
      };
      try {
        const path = `/api/v1/nodes/${encodeURIComponent(t.node)}`;
        const node = await this.opts.client.get<V1Node>(path);
        const have = node.metadata?.annotations?.[ANNOTATION.gpuQuarantine];
        // The annotation as this version writes it: one written before ADR 0150 (no state) means the same with
        // `suspect`, so it is not rewritten for the format alone.
        let haveNormal = have;
        // Another writer's quarantines join the book (released only by a health check, like ours).
        if (have !== undefined) {
          const q = parseQuarantine(t.node, have);
          if (q.ok) haveNormal = formatQuarantine(q.value);
          if (q.ok) this.monitor.book.load(q.value.filter((e) => !this.monitor.book.isQuarantined(e)));
          else problem(`annotation ${ANNOTATION.gpuQuarantine}: ${q.error} (rewritten from this monitor's book)`);
        }
        const text = await scrape(t.url, this.opts.scrapeTimeoutMs ?? 10_000);
        const nowMs = this.opts.clock.nowMs();
        let mine: HealthAction[] = [];
        if (!text.ok) problem(`scraping dcgm-exporter: ${text.error}`);
        else {
          const devices = readDcgmMetrics(text.value);
          if (!devices.ok) problem(`${t.url}: ${devices.error}`);
          else {
            if (this.lastError.has(t.node)) this.opts.log(`gpu health: node ${t.node}: scraping works again`);
            this.lastError.delete(t.node);
            mine = this.monitor.observe(t.node, devices.value, nowMs);
          }
        }
        // Quarantines whose period is over get their check even while the exporter is down (another writer's).
        const due = new Set(mine.filter((a) => a.kind === 'health-check-due').map((a) => (a as { entry: DeviceRef }).entry.gpu));
        for (const e of this.monitor.book.due(nowMs)) if (e.node === t.node && !due.has(e.gpu)) mine.push({ kind: 'health-check-due', entry: e });
        for (const a of [...mine]) {
          if (a.kind !== 'health-check-due') continue;
          const check = this.opts.healthCheck === undefined ? this.monitor.builtInCheck(a.entry) : await this.opts.healthCheck(a.entry);
          mine.push(...this.monitor.checkResult(a.entry, check.passed, nowMs, check.detail));
        }
        for (const a of mine) {
          if (a.kind === 'checkpoint-and-migrate') this.opts.onIntent?.(a);
          if (a.kind === 'quarantine') this.opts.log(`gpu health: node ${t.node} GPU ${a.entry.gpu} quarantined (${a.state}): ${a.entry.reason}`);
          if (a.kind === 'release') this.opts.log(`gpu health: node ${t.node} GPU ${a.entry.gpu} released after a passing health check`);
        }
        actions.push(...mine);
        const want = formatQuarantine(this.monitor.book.ofNode(t.node));
        if (want !== have && want !== haveNormal) {
          // resourceVersion makes the write conditional: a concurrent writer's change is read next round, not lost.
          await this.opts.client.mergePatch(path, {
            metadata: { resourceVersion: node.metadata?.resourceVersion, annotations: { [ANNOTATION.gpuQuarantine]: want ?? null } },
          });
          written.push(t.node);
        }
      } catch (e) {
        problem(isStatus(e, 409) ? 'the node changed while writing its quarantine; retried next round' : (e as Error).message);
      }
    }
    return { actions, errors, written };
  }

  start(): void {
    const loop = async (): Promise<void> => {
      this.running = this.once();
      await this.running;
      this.running = undefined;
      if (!this.stopped) this.timer = setTimeout(() => void loop(), this.opts.intervalMs);
    };
    void loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.running;
  }
}
