/**
 * A real OpenTelemetry Collector for tracing tests: `sits-otelcol` (tools/otelcol: the collector's own OTLP
 * receiver and the contrib file exporter, built from Go modules by tools/otelcol/ensure.mjs) listening for
 * OTLP/HTTP on a free loopback port and writing what it receives as OTLP JSON lines, read back by `spans()`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePorts, runEnsure } from './control-plane.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ENSURE_SCRIPT = join(REPO_ROOT, 'tools/otelcol/ensure.mjs');

/** One span as the collector exported it, attributes flattened to JS values. */
export interface CollectedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Empty for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly attributes: Readonly<Record<string, unknown>>;
  /** The resource's attributes (service.name, …). */
  readonly resource: Readonly<Record<string, unknown>>;
  readonly startNs: bigint;
  readonly endNs: bigint;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  readonly status: number;
}

export interface OtelCollector {
  /** OTLP/HTTP base URL, for OTEL_EXPORTER_OTLP_ENDPOINT or `--otlp-endpoint`. */
  readonly endpoint: string;
  /** Every span received so far (the file exporter flushes every 100 ms). */
  spans(): CollectedSpan[];
  /** The collector's own log lines (last 200). */
  logTail(): string[];
  stop(): Promise<void>;
}

let ensured: Promise<string> | undefined;

/** Runs tools/otelcol/ensure.mjs once per process (the first run builds the collector: minutes). */
export function ensureOtelCollector(log: (l: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<string> {
  ensured ??= runEnsure(ENSURE_SCRIPT, log).catch((e: unknown) => {
    ensured = undefined;
    throw e;
  });
  return ensured;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: OtlpValue[] } };
type OtlpAttr = { key: string; value: OtlpValue };

function valueOf(v: OtlpValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

const attrsOf = (a: readonly OtlpAttr[] | undefined): Record<string, unknown> => Object.fromEntries((a ?? []).map((x) => [x.key, valueOf(x.value)]));

/** The spans of OTLP JSON lines (the file exporter's format: one ExportTraceServiceRequest a line). */
export function parseOtlpJsonLines(text: string): CollectedSpan[] {
  const out: CollectedSpan[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let req: { resourceSpans?: { resource?: { attributes?: OtlpAttr[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[] };
    try {
      req = JSON.parse(line) as typeof req;
    } catch (e) {
      throw new Error(`collector output line ${i + 1}: not JSON (${(e as Error).message})`);
    }
    for (const rs of req.resourceSpans ?? []) {
      const resource = attrsOf(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          out.push({
            traceId: String(s.traceId ?? ''),
            spanId: String(s.spanId ?? ''),
            parentSpanId: String(s.parentSpanId ?? ''),
            name: String(s.name ?? ''),
            attributes: attrsOf(s.attributes as OtlpAttr[] | undefined),
            resource,
            startNs: BigInt(String(s.startTimeUnixNano ?? '0')),
            endNs: BigInt(String(s.endTimeUnixNano ?? '0')),
            status: Number((s.status as { code?: number } | undefined)?.code ?? 0),
          });
        }
      }
    }
  }
  return out;
}

/** Starts the collector on a free loopback port; resolves once its receiver is ready. */
export async function startOtelCollector(opts: { readonly bin?: string; readonly log?: (l: string) => void } = {}): Promise<OtelCollector> {
  const bin = opts.bin ?? (await ensureOtelCollector(opts.log));
  const dir = mkdtempSync(join(tmpdir(), 'sits-otelcol-'));
  const [port] = (await freePorts(1)) as [number];
  const file = join(dir, 'spans.jsonl');
  // No internal telemetry port (it would need one more free port); traces only.
  writeFileSync(
    join(dir, 'config.yaml'),
    `receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:${port}\nexporters:\n  file:\n    path: ${file}\n    flush_interval: 100ms\nservice:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [file]\n`,
  );
  const tail: string[] = [];
  const child: ChildProcess = spawn(bin, [`--config=file:${join(dir, 'config.yaml')}`], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const kill = (): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  process.once('exit', kill);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const ready = new Promise<void>((res, rej) => {
    const onLine = (l: string): void => {
      tail.push(l);
      if (tail.length > 200) tail.shift();
      if (l.includes('Everything is ready')) res();
    };
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', onLine);
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', onLine);
    child.once('error', rej);
    child.once('exit', (code) => rej(new Error(`otel collector exited (code ${code}) before it was ready:\n${tail.slice(-20).join('\n')}`)));
  });
  const timer = setTimeout(() => kill(), 120_000);
  try {
    await ready;
  } catch (e) {
    kill();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => (existsSync(file) ? parseOtlpJsonLines(readFileSync(file, 'utf8')) : []),
    logTail: () => [...tail],
    stop: async () => {
      if (child.exitCode === null && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGTERM');
        } catch {
          // already gone
        }
        const t = setTimeout(kill, 5000);
        await exited;
        clearTimeout(t);
      }
      process.off('exit', kill);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
