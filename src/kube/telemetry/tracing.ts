/**
 * Tracing of the live scheduler and the controllers with OpenTelemetry (ADR 0067): the core's `Tracer` port
 * (synchronous spans nested by start/end, `core/ports.ts`) and `run`, a span that is the active context of what
 * it runs, awaits included (a controller's reconcile, the live scheduler's cycle). Spans go over OTLP/HTTP
 * (protobuf) to a collector when an endpoint is configured; with none, `NO_TRACING` records nothing and costs
 * nothing. `withTraceIds` appends ` trace_id=… span_id=…` to log lines written inside a span, so a log line
 * leads to its trace.
 */
import { context, diag, DiagLogLevel, SpanStatusCode, trace, type Attributes, type Span, type Tracer as OtelTracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { NO_TRACER, type TraceAttributes, type TraceSpan, type Tracer } from '../../core/ports.ts';

export interface Tracing extends Tracer {
  /**
   * Runs `fn` in a span that is the active context of everything it does, across awaits (a returned promise
   * ends the span when it settles; a throw or rejection marks it as an error). Children: spans that `fn` or its
   * callees start through `start` or `run`.
   */
  run<T>(name: string, attrs: TraceAttributes, fn: (span: TraceSpan) => T): T;
  /** The ids of the innermost open span, or undefined outside any. */
  currentIds(): { readonly traceId: string; readonly spanId: string } | undefined;
  /** Sends what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}

const NO_SPAN: TraceSpan = { set: () => undefined, end: () => undefined };

/** Tracing that is off: no spans, no ids, the functions run as they are. */
export const NO_TRACING: Tracing = {
  enabled: false,
  start: NO_TRACER.start,
  run: (_name, _attrs, fn) => fn(NO_SPAN),
  currentIds: () => undefined,
  shutdown: async () => undefined,
};

/** `log` whose lines, when written inside a span, end with ` trace_id=<32 hex> span_id=<16 hex>`. */
export function withTraceIds(tracing: Tracing, log: (m: string) => void): (m: string) => void {
  if (!tracing.enabled) return log;
  return (m) => {
    const ids = tracing.currentIds();
    log(ids === undefined ? m : `${m} trace_id=${ids.traceId} span_id=${ids.spanId}`);
  };
}

let contextManagerSet = false;

/** One AsyncLocalStorage context manager per process, so a span stays active across the awaits of what it runs. */
function ensureContextManager(): void {
  if (contextManagerSet) return;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  contextManagerSet = true;
}

const otelAttributes = (a: TraceAttributes): Attributes => a as Attributes;

function spanOf(s: Span): TraceSpan {
  return { set: (a) => void s.setAttributes(otelAttributes(a)), end: () => s.end() };
}

/** The `Tracing` over an OpenTelemetry tracer; `shutdown` flushes its provider. */
export class OtelTracing implements Tracing {
  readonly enabled = true;
  /** Spans of the synchronous core, innermost last (they nest by start/end within one synchronous stretch). */
  private readonly open: Span[] = [];

  constructor(
    private readonly tracer: OtelTracer,
    private readonly stop: () => Promise<void> = async () => undefined,
  ) {
    ensureContextManager();
  }

  private parent(): ReturnType<typeof context.active> {
    const top = this.open[this.open.length - 1];
    return top === undefined ? context.active() : trace.setSpan(context.active(), top);
  }

  start(name: string, attrs: TraceAttributes = {}): TraceSpan {
    const s = this.tracer.startSpan(name, { attributes: otelAttributes(attrs) }, this.parent());
    this.open.push(s);
    return {
      set: (a) => void s.setAttributes(otelAttributes(a)),
      end: () => {
        // Ends in reverse order of start; a span left open by a throw in between is closed with it.
        const i = this.open.lastIndexOf(s);
        if (i >= 0) for (const inner of this.open.splice(i).slice(1).reverse()) inner.end();
        s.end();
      },
    };
  }

  run<T>(name: string, attrs: TraceAttributes, fn: (span: TraceSpan) => T): T {
    const s = this.tracer.startSpan(name, { attributes: otelAttributes(attrs) }, this.parent());
    const failed = (e: unknown): void => {
      s.recordException(e instanceof Error ? e : String(e));
      s.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
    };
    // Core spans opened inside and left open by a throw end here: they must not become the parents of later ones.
    const depth = this.open.length;
    let out: T;
    try {
      out = context.with(trace.setSpan(context.active(), s), () => fn(spanOf(s)));
    } catch (e) {
      this.closeAbove(depth);
      failed(e);
      s.end();
      throw e;
    }
    this.closeAbove(depth);
    if (out instanceof Promise) {
      return out.then(
        (v: unknown) => {
          s.end();
          return v;
        },
        (e: unknown) => {
          failed(e);
          s.end();
          throw e;
        },
      ) as T;
    }
    s.end();
    return out;
  }

  private closeAbove(depth: number): void {
    while (this.open.length > depth) this.open.pop()?.end();
  }

  currentIds(): { readonly traceId: string; readonly spanId: string } | undefined {
    const s = this.open[this.open.length - 1] ?? trace.getSpan(context.active());
    const c = s?.spanContext();
    return c === undefined || !trace.isSpanContextValid(c) ? undefined : { traceId: c.traceId, spanId: c.spanId };
  }

  shutdown(): Promise<void> {
    return this.stop();
  }
}

export interface TracingOptions {
  /** OTLP/HTTP base URL (`http://collector:4318`; `/v1/traces` is appended), from `sits run --otlp-endpoint`. */
  readonly endpoint?: string;
  /** service.name unless OTEL_SERVICE_NAME says otherwise. */
  readonly serviceName: string;
  readonly serviceVersion?: string;
  /** service.instance.id (the leader-election identity). */
  readonly instanceId?: string;
  /** The environment (OTEL_* variables); default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where spans go instead of OTLP (tests). */
  readonly exporter?: SpanExporter;
  /** Where the SDK's own warnings go (a collector that cannot be reached, a rejected export). */
  readonly log?: (m: string) => void;
}

/**
 * Tracing as configured: on when an endpoint is given (flag) or the standard OTEL_EXPORTER_OTLP_ENDPOINT /
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (the exporter reads those, and OTEL_EXPORTER_OTLP_HEADERS, itself),
 * unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none; off otherwise. Throws on a bad endpoint or an
 * OTLP protocol other than HTTP.
 */
export function startTracing(opts: TracingOptions): Tracing {
  const env = opts.env ?? process.env;
  const fromEnv = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (opts.exporter === undefined && opts.endpoint === undefined && (fromEnv === undefined || fromEnv === '')) return NO_TRACING;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return NO_TRACING;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol !== undefined && protocol !== '' && protocol !== 'http/protobuf') {
    throw new Error(
      `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: SITS exports OTLP over HTTP (http/protobuf); point the endpoint at the collector's OTLP/HTTP port (4318 by default)`,
    );
  }
  let url: string | undefined;
  if (opts.endpoint !== undefined) {
    let u: URL;
    try {
      u = new URL(opts.endpoint);
    } catch {
      throw new Error(`--otlp-endpoint: "${opts.endpoint}" is not a URL (expected http(s)://host:port, e.g. http://localhost:4318)`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new Error(`--otlp-endpoint: "${opts.endpoint}" must be an http:// or https:// URL (OTLP/HTTP)`);
    url = `${opts.endpoint.replace(/\/+$/, '')}/v1/traces`;
  } else if (fromEnv !== undefined && fromEnv !== '') {
    try {
      new URL(fromEnv);
    } catch {
      const name = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
      throw new Error(`${name}: "${fromEnv}" is not a URL (expected http(s)://host:port, e.g. http://localhost:4318)`);
    }
  }
  const log = opts.log;
  if (log !== undefined) {
    const say = (m: string, ...args: unknown[]): void =>
      log(`tracing: ${[m, ...args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : JSON.stringify(a)))].join(' ')}`);
    diag.setLogger(
      { error: say, warn: say, info: () => undefined, debug: () => undefined, verbose: () => undefined },
      { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
    );
  }
  const exporter = opts.exporter ?? new OTLPTraceExporter(url === undefined ? {} : { url });
  // OTEL_SERVICE_NAME, then OTEL_RESOURCE_ATTRIBUTES (both read by the env detector), then ours.
  const detected = detectResources({ detectors: [envDetector] });
  const resource = detected.merge(
    resourceFromAttributes({
      ...(detected.attributes['service.name'] === undefined ? { 'service.name': opts.serviceName } : {}),
      ...(opts.serviceVersion === undefined ? {} : { 'service.version': opts.serviceVersion }),
      ...(opts.instanceId === undefined ? {} : { 'service.instance.id': opts.instanceId }),
    }),
  );
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000, maxQueueSize: 16_384 })],
  });
  return new OtelTracing(provider.getTracer('sits', opts.serviceVersion), () => provider.shutdown());
}
