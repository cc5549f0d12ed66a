import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { TraceRequest } from '../../serving/sim/trace.ts';
import { planLoad, quantile, runLoad } from './load-generator.ts';

const trace: TraceRequest[] = Array.from({ length: 50 }, (_, i) => ({ arrivalSec: i * 2 + (i % 3), promptTokens: 100 + 37 * i, outputTokens: 5 + (i % 7) * 10 }));

describe('planLoad', () => {
  const o = { seed: 3, count: 10, spanMs: 500, maxPromptTokens: 40, maxOutputTokens: 20 };
  it("is deterministic by seed and keeps the window's arrival shape and length ratios", () => {
    const a = planLoad(trace, o);
    expect(planLoad(trace, o)).toEqual(a);
    expect(planLoad(trace, { ...o, seed: 4 })).not.toEqual(a);
    expect(a).toHaveLength(10);
    expect(a[0]?.atMs).toBe(0);
    expect(a.at(-1)?.atMs).toBe(500);
    expect(a.every((r, i) => i === 0 || r.atMs >= (a[i - 1]?.atMs ?? 0))).toBe(true);
    expect(Math.max(...a.map((r) => r.promptTokens))).toBe(40);
    expect(Math.max(...a.map((r) => r.maxTokens))).toBe(20);
    for (const r of a) expect(r.prompt.split(' ')).toHaveLength(r.promptTokens);
  });
  it('refuses an empty trace and bad sizes', () => {
    expect(() => planLoad([], o)).toThrow(/no requests/);
    expect(() => planLoad(trace, { ...o, maxOutputTokens: 0 })).toThrow(/≥ 1/);
  });
});

describe('runLoad', () => {
  let server: Server;
  afterAll(() => server?.close());
  it('sends round-robin, streams, and times the first token', async () => {
    const seen: string[] = [];
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const b = JSON.parse(body) as { max_tokens: number; stream: boolean };
        seen.push(`${req.headers.host} ${b.stream}`);
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        for (let i = 0; i < b.max_tokens; i++) res.write(`data: ${JSON.stringify({ choices: [{ text: ' w' }] })}\n\n`);
        res.write(`data: ${JSON.stringify({ choices: [{ text: '', finish_reason: 'length' }], usage: { prompt_tokens: 3, completion_tokens: b.max_tokens } })}\n\n`);
        res.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    const plan = planLoad(trace, { seed: 1, count: 4, spanMs: 50, maxPromptTokens: 8, maxOutputTokens: 6 });
    const { results, summary } = await runLoad(plan, [
      { name: 'a', host: '127.0.0.1', port },
      { name: 'b', host: 'localhost', port },
    ]);
    expect(summary).toMatchObject({ sent: 4, ok: 4, failed: 0, byEndpoint: { a: 2, b: 2 } });
    expect(results.map((r) => r.endpoint)).toEqual(['a', 'b', 'a', 'b']);
    for (const r of results) {
      expect(r.completionTokens).toBe(plan[r.index]?.maxTokens);
      expect(r.text).toBe(' w'.repeat(plan[r.index]?.maxTokens ?? 0));
      expect(r.ttftMs).toBeLessThanOrEqual(r.latencyMs);
    }
    expect(seen.every((s) => s.endsWith(' true'))).toBe(true);
    const none = await runLoad(plan.slice(0, 1), []);
    expect(none.results[0]).toMatchObject({ ok: false, error: 'no ready endpoint' });
  });
  it('takes nearest-rank quantiles', () => {
    expect(quantile([], 0.5)).toBe(0);
    expect(quantile([5, 1, 3, 2, 4], 0.5)).toBe(3);
    expect(quantile([5, 1, 3, 2, 4], 0.99)).toBe(5);
  });
});
