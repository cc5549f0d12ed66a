import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePromText, sampleValue } from '../../core/prom-text.ts';
import { waitFor } from '../e2e-kit.ts';
import { ArgsError, LlamaServerStandIn, parseLlamaServerArgs } from './llama-server.ts';
import { ensureTinyModel } from './tiny-model.ts';

describe('parseLlamaServerArgs', () => {
  it("reads llama-server's flags as the llamacpp runtime renders them", () => {
    const o = parseLlamaServerArgs(
      [
        '--model',
        '/mnt/models',
        '--alias',
        'tiny',
        '--host',
        '0.0.0.0',
        '--port',
        '9000',
        '--metrics',
        '--ctx-size',
        '512',
        '--lora',
        '/mnt/adapters/a',
        '--lora-init-without-apply',
        '-np',
        '2',
        '--n-gpu-layers',
        '999',
      ],
      (p) => `/host${p}`,
    );
    expect(o).toMatchObject({
      host: '0.0.0.0',
      port: 9000,
      alias: 'tiny',
      ctxSize: 512,
      parallel: 2,
      metrics: true,
      loraInitWithoutApply: true,
      model: { path: '/mnt/models', file: '/host/mnt/models' },
      loras: [{ path: '/mnt/adapters/a', file: '/host/mnt/adapters/a' }],
    });
  });
  it('refuses what llama-server refuses, naming the flag', () => {
    expect(() => parseLlamaServerArgs(['--model', 'm', '--bogus'])).toThrow(new ArgsError('error: invalid argument: --bogus'));
    expect(() => parseLlamaServerArgs(['--port', 'x', '--model', 'm'])).toThrow(/--port expects an integer/);
    expect(() => parseLlamaServerArgs(['--metrics'])).toThrow(/--model is required/);
    expect(() => parseLlamaServerArgs(['-hf', 'org/m'])).toThrow(/no network/);
  });
});

describe('the llama-server stand-in', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sits-llama-'));
  const hold = join(dir, 'hold');
  const fault = join(dir, 'fault');
  let server: LlamaServerStandIn;
  let base = '';
  beforeAll(async () => {
    const { model, lora } = ensureTinyModel();
    writeFileSync(hold, '');
    const o = parseLlamaServerArgs(
      [
        '--model',
        '/mnt/models',
        '--alias',
        'tiny',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--metrics',
        '--parallel',
        '1',
        '--ctx-size',
        '256',
        '--lora',
        '/mnt/adapters/a',
        '--lora-init-without-apply',
      ],
      (p) => (p === '/mnt/models' ? model : lora),
    );
    server = new LlamaServerStandIn({ ...o, holdWhileExists: hold, failWhileExists: fault });
    const a = await server.start();
    base = `http://127.0.0.1:${a.port}`;
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const post = async (path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
    const r = await fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body) });
    return { status: r.status, json: (await r.json()) as Record<string, unknown> };
  };
  const complete = async (body: Record<string, unknown>): Promise<string> => {
    const r = await post('/v1/completions', { prompt: 'the model server', max_tokens: 8, temperature: 0, ...body });
    expect(r.status).toBe(200);
    return (r.json.choices as { text: string }[])[0]?.text ?? '';
  };

  it('answers 503 "Loading model" until the model is loaded, then 200', async () => {
    const r = await fetch(`${base}/health`);
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ error: { code: 503, message: 'Loading model', type: 'unavailable_error' } });
    rmSync(hold);
    await waitFor('the stand-in to load', async () => (await fetch(`${base}/health`)).status === 200, 30_000);
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ status: 'ok' });
  });

  it('fails every completion with 500 while the fault file exists, health still ok (an injected device fault)', async () => {
    writeFileSync(fault, '');
    const r = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    expect(r.status).toBe(500);
    expect(r.json).toMatchObject({ error: { code: 500, type: 'server_error', message: expect.stringContaining('injected device fault') as unknown } });
    expect((await fetch(`${base}/health`)).status).toBe(200);
    rmSync(fault);
    expect((await post('/v1/completions', { prompt: 'x', max_tokens: 2 })).status).toBe(200);
  });

  it("keeps llama-server's ignore_eos: exactly max_tokens generated, whatever the model samples; a non-boolean is a 400", async () => {
    // A prompt the tiny model answers with an end-of-generation token at once at temperature 0 may exist or not;
    // what ignore_eos guarantees is the count: every one of these prompts yields exactly max_tokens tokens.
    for (const prompt of ['a', 'the end', 'stop here.', 'the model server']) {
      const r = await post('/v1/completions', { prompt, max_tokens: 24, temperature: 0, ignore_eos: true });
      expect(r.status).toBe(200);
      expect((r.json.usage as { completion_tokens: number }).completion_tokens).toBe(24);
      expect((r.json.choices as { finish_reason: string }[])[0]?.finish_reason).toBe('length');
    }
    const bad = await post('/v1/completions', { prompt: 'x', max_tokens: 2, ignore_eos: 'yes' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.json)).toContain("'ignore_eos' must be a boolean");
  });

  it('completes deterministically at temperature 0, counting tokens like llama-server', async () => {
    const a = await complete({});
    expect(a.split(' ').length).toBeGreaterThan(3);
    expect(await complete({})).toBe(a);
    const r = await post('/v1/completions', { prompt: 'the model server', max_tokens: 5, temperature: 0 });
    expect(r.json.usage).toEqual({ prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 });
    expect((r.json.choices as { finish_reason: string }[])[0]?.finish_reason).toBe('length');
    const chat = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hello' }], max_tokens: 3, temperature: 0 });
    expect(chat.json.object).toBe('chat.completion');
    expect((chat.json.choices as { message: { role: string } }[])[0]?.message.role).toBe('assistant');
  });

  it("tokenizes as llama-server's /tokenize and /apply-template: the same count a completion reports", async () => {
    const t = await post('/tokenize', { content: 'the model server' });
    expect(t.status).toBe(200);
    const plain = t.json.tokens as number[];
    const special = (await post('/tokenize', { content: 'the model server', add_special: true })).json.tokens as number[];
    // add_special puts the BOS first; the completion above counts it (prompt_tokens 4).
    expect(special.length).toBe(plain.length + 1);
    expect(special.length).toBe(4);
    const pieces = (await post('/tokenize', { content: 'the model server', with_pieces: true })).json.tokens as { id: number; piece: string }[];
    expect(pieces.map((p) => p.id)).toEqual(plain);
    expect(pieces.map((p) => p.piece.trim())).toEqual(['the', 'model', 'server']);
    const tpl = await post('/apply-template', { messages: [{ role: 'user', content: 'hello' }] });
    expect(tpl.json.prompt).toBe('<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n');
    const chat = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hello' }], max_tokens: 1, temperature: 0 });
    const counted = (await post('/tokenize', { content: tpl.json.prompt, add_special: true })).json.tokens as number[];
    expect((chat.json.usage as { prompt_tokens: number }).prompt_tokens).toBe(counted.length);
    expect((await post('/tokenize', { content: 3 })).status).toBe(400);
    expect((await post('/apply-template', { messages: 'hi' })).status).toBe(400);
  });

  it('streams server-sent events ending in [DONE]', async () => {
    const text = await (
      await fetch(`${base}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'the model', max_tokens: 4, temperature: 0, stream: true }) })
    ).text();
    const events = text.split('\n\n').filter((e) => e !== '');
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { choices: { text: string }[] });
    expect(chunks.map((c) => c.choices[0]?.text).join('')).toBe(await complete({ prompt: 'the model', max_tokens: 4 }));
  });

  it("switches adapters with POST /lora-adapters and per request, with llama-server's semantics", async () => {
    const plain = await complete({});
    expect(await (await fetch(`${base}/lora-adapters`)).json()).toEqual([{ id: 0, path: '/mnt/adapters/a', scale: 0 }]);
    const adapted = await complete({ lora: [{ id: 0, scale: 1 }] });
    expect(adapted).not.toBe(plain);
    expect((await post('/lora-adapters', [{ id: 0, scale: 1 }])).json).toEqual({ success: true });
    expect(await complete({})).toBe(adapted);
    // A request's list names the adapters it wants: the others are off for that request.
    expect(await complete({ lora: [] })).toBe(plain);
    expect((await post('/lora-adapters', [])).status).toBe(200);
    expect(await complete({})).toBe(plain);
    const bad = await post('/lora-adapters', [{ id: 3, scale: 1 }]);
    expect(bad.status).toBe(400);
    expect((bad.json.error as { message: string }).message).toMatch(/body\[0\]\.id: invalid adapter id 3/);
  });

  it('exports the families of recorded real llama-server /metrics with their names, types and HELP', async () => {
    const mine = parsePromText(await (await fetch(`${base}/metrics`)).text());
    const fixtures = join(import.meta.dirname, '..', '..', 'serving', 'fixtures');
    for (const f of ['llamacpp-counters.txt', 'llamacpp-requests.txt']) {
      const real = parsePromText(readFileSync(join(fixtures, f), 'utf8'));
      for (const [name, fam] of real) {
        expect(mine.get(name)?.type, `${f}: ${name}`).toBe(fam.type);
        // PR #11512 fixed "Number of request processing." to "requests"; the stand-in has the fixed text.
        expect(mine.get(name)?.help, `${f}: ${name}`).toBe(fam.help?.replace('of request ', 'of requests '));
      }
    }
  });

  it('refuses a request larger than a slot', async () => {
    const r = await post('/v1/completions', { prompt: 'the', max_tokens: 1000 });
    expect(r.status).toBe(400);
    expect((r.json.error as { type: string }).type).toBe('exceed_context_size_error');
  });

  it("exports llama-server's metrics in the Prometheus text format, queueing included", async () => {
    // One slot: of three concurrent requests, two wait.
    const burst = [1, 2, 3].map(() => complete({ max_tokens: 150 }));
    const seen = await waitFor(
      'a deferred request',
      async () => {
        const f = parsePromText(await (await fetch(`${base}/metrics`)).text());
        return (sampleValue(f, 'llamacpp:requests_deferred') ?? 0) >= 1 ? f : undefined;
      },
      30_000,
      5,
    );
    expect(sampleValue(seen, 'llamacpp:requests_processing')).toBe(1);
    await Promise.all(burst);
    const f = parsePromText(await (await fetch(`${base}/metrics`)).text());
    for (const n of ['prompt_tokens_total', 'tokens_predicted_total', 'prompt_seconds_total', 'tokens_predicted_seconds_total', 'n_decode_total'])
      expect(f.get(`llamacpp:${n}`)?.type).toBe('counter');
    expect(sampleValue(f, 'llamacpp:tokens_predicted_total')).toBeGreaterThanOrEqual(450);
    expect(sampleValue(f, 'llamacpp:requests_deferred')).toBe(0);
    expect(sampleValue(f, 'llamacpp:requests_processing')).toBe(0);
    expect(sampleValue(f, 'llamacpp:kv_cache_usage_ratio')).toBe(0);
  });
});
