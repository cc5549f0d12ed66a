// The OpenTelemetry adapter (the real SDK, spans kept by its in-memory exporter): the core's start/end spans nest
// under `run`, `run` stays the active context across awaits (concurrent reconciles do not mix), log lines get the
// ids of the span they are written in, and the configuration is read as the OTel spec says, with clear errors.
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { NO_TRACING, startTracing, withTraceIds, type Tracing } from './tracing.ts';

async function traced(fn: (t: Tracing) => Promise<void> | void): Promise<ReadableSpan[]> {
  // Keeps what the batch processor exports (the SDK's in-memory exporter forgets its spans on shutdown).
  const kept: ReadableSpan[] = [];
  const exporter: SpanExporter = {
    export: (spans, done) => {
      kept.push(...spans);
      done({ code: 0 });
    },
    shutdown: async () => undefined,
  };
  const t = startTracing({ serviceName: 'sits-test', serviceVersion: '9.9.9', instanceId: 'me', exporter, env: {} });
  await fn(t);
  await t.shutdown();
  return kept;
}

const parentId = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;

describe('OtelTracing', () => {
  it('nests the core spans under run and inside each other; the resource names the service', async () => {
    const spans = await traced((t) => {
      t.run('sits.cycle', { 'sits.cycle': 1 }, (cycle) => {
        const a = t.start('sits.attempt', { 'sits.job.id': 'ns/p' });
        const p = t.start('sits.preempt');
        p.set({ 'sits.result': 'no' });
        p.end();
        a.set({ 'sits.result': 'capacity', 'sits.pods': ['a', 'b'] });
        a.end();
        t.start('sits.attempt', { 'sits.job.id': 'ns/q' }).end();
        cycle.set({ 'sits.cycle.started': 0 });
      });
    });
    const by = (name: string, job?: string): ReadableSpan =>
      spans.find((s) => s.name === name && (job === undefined || s.attributes['sits.job.id'] === job)) as ReadableSpan;
    const cycle = by('sits.cycle');
    expect(parentId(cycle)).toBeUndefined();
    expect(cycle.attributes).toEqual({ 'sits.cycle': 1, 'sits.cycle.started': 0 });
    expect(parentId(by('sits.attempt', 'ns/p'))).toBe(cycle.spanContext().spanId);
    expect(parentId(by('sits.attempt', 'ns/q'))).toBe(cycle.spanContext().spanId);
    expect(parentId(by('sits.preempt'))).toBe(by('sits.attempt', 'ns/p').spanContext().spanId);
    expect(by('sits.attempt', 'ns/p').attributes).toEqual({ 'sits.job.id': 'ns/p', 'sits.result': 'capacity', 'sits.pods': ['a', 'b'] });
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    expect(cycle.resource.attributes).toMatchObject({ 'service.name': 'sits-test', 'service.version': '9.9.9', 'service.instance.id': 'me' });
  });

  it('keeps each run active across its awaits: concurrent runs get their own children and log ids', async () => {
    const lines: string[] = [];
    const spans = await traced(async (t) => {
      const log = withTraceIds(t, (m) => lines.push(m));
      const reconcile = (name: string, delayMs: number): Promise<void> =>
        t.run('sits.reconcile', { 'sits.object': name }, async () => {
          await new Promise((r) => setTimeout(r, delayMs));
          await t.run('sits.action', { 'sits.name': name }, async () => {
            await new Promise((r) => setTimeout(r, delayMs));
            log(`${name} acted`);
          });
          log(`${name} done`);
        });
      await Promise.all([reconcile('a', 20), reconcile('b', 5)]);
      log('outside');
    });
    for (const name of ['a', 'b']) {
      const r = spans.find((s) => s.name === 'sits.reconcile' && s.attributes['sits.object'] === name) as ReadableSpan;
      const act = spans.find((s) => s.name === 'sits.action' && s.attributes['sits.name'] === name) as ReadableSpan;
      expect(parentId(act)).toBe(r.spanContext().spanId);
      expect(act.spanContext().traceId).toBe(r.spanContext().traceId);
      expect(lines).toContain(`${name} acted trace_id=${r.spanContext().traceId} span_id=${act.spanContext().spanId}`);
      expect(lines).toContain(`${name} done trace_id=${r.spanContext().traceId} span_id=${r.spanContext().spanId}`);
    }
    expect(lines).toContain('outside');
  });

  it('marks a span whose function throws or rejects as an error and passes the error on', async () => {
    const spans = await traced(async (t) => {
      expect(() =>
        t.run('sync', {}, () => {
          throw new Error('boom');
        }),
      ).toThrow('boom');
      await expect(
        t.run('async', {}, async () => {
          throw new Error('later');
        }),
      ).rejects.toThrow('later');
      // An attempt left open by a throw is closed with the span around it.
      expect(() =>
        t.run('outer', {}, () => {
          t.start('left-open');
          throw new Error('x');
        }),
      ).toThrow('x');
      const outer = t.start('outer2');
      t.start('inner2');
      outer.end();
    });
    expect(spans.find((s) => s.name === 'sync')?.status).toEqual({ code: 2, message: 'boom' });
    expect(spans.find((s) => s.name === 'async')?.status).toEqual({ code: 2, message: 'later' });
    expect(spans.map((s) => s.name)).toEqual(expect.arrayContaining(['left-open', 'outer', 'inner2', 'outer2']));
  });
});

describe('startTracing configuration', () => {
  it('is off without an endpoint, with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none', () => {
    expect(startTracing({ serviceName: 's', env: {} })).toBe(NO_TRACING);
    expect(startTracing({ serviceName: 's', env: { OTEL_EXPORTER_OTLP_ENDPOINT: '' } })).toBe(NO_TRACING);
    expect(startTracing({ serviceName: 's', env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_SDK_DISABLED: 'true' } })).toBe(NO_TRACING);
    expect(startTracing({ serviceName: 's', endpoint: 'http://127.0.0.1:1', env: { OTEL_TRACES_EXPORTER: 'none' } })).toBe(NO_TRACING);
    const lines: string[] = [];
    const log = withTraceIds(NO_TRACING, (m) => lines.push(m));
    NO_TRACING.run('x', {}, () => log('plain'));
    expect(lines).toEqual(['plain']);
  });

  it('is on with the flag or the standard variables', async () => {
    for (const t of [
      startTracing({ serviceName: 's', endpoint: 'http://127.0.0.1:1', env: {} }),
      startTracing({ serviceName: 's', env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:1/v1/traces' } }),
    ]) {
      expect(t.enabled).toBe(true);
      await t.shutdown();
    }
  });

  it('names the flag or variable of a bad endpoint, and refuses a protocol other than OTLP/HTTP', () => {
    expect(() => startTracing({ serviceName: 's', endpoint: 'localhost:4318', env: {} })).toThrow(
      /--otlp-endpoint: "localhost:4318" must be an http:\/\/ or https:\/\/ URL/,
    );
    expect(() => startTracing({ serviceName: 's', endpoint: 'not a url', env: {} })).toThrow(/--otlp-endpoint: "not a url" is not a URL/);
    expect(() => startTracing({ serviceName: 's', env: { OTEL_EXPORTER_OTLP_ENDPOINT: '::bad' } })).toThrow(
      /^OTEL_EXPORTER_OTLP_ENDPOINT: "::bad" is not a URL/,
    );
    expect(() => startTracing({ serviceName: 's', env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' } })).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL=grpc: SITS exports OTLP over HTTP/,
    );
  });
});
