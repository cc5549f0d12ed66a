import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../harness/e2e-kit.ts';
import { LlamaServerStandIn, parseLlamaServerArgs } from '../../harness/llm/llama-server.ts';
import { ensureTinyModel, tinyLoraGguf, cacheGguf } from '../../harness/llm/tiny-model.ts';
import { LLAMACPP } from '../../serving/runtimes/llamacpp.ts';
import { TRITON } from '../../serving/runtimes/triton.ts';
import { VLLM } from '../../serving/runtimes/vllm.ts';
import { adapterNameFromPath, EngineClient, EngineError } from './engine-client.ts';

/** A local HTTP server answering from a script: each request takes the next [status, body] (the last repeats). */
async function scripted(script: [number, unknown][]): Promise<{ server: Server; port: number; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url} ${body}`);
      const [status, out] = script[Math.min(seen.length - 1, script.length - 1)] as [number, unknown];
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(out));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, port: (server.address() as AddressInfo).port, seen };
}

describe('EngineClient retries', () => {
  const servers: Server[] = [];
  afterAll(() => servers.forEach((s) => s.close()));
  const client = async (script: [number, unknown][], attempts = 4) => {
    const s = await scripted(script);
    servers.push(s.server);
    const sleeps: number[] = [];
    const c = new EngineClient(
      VLLM,
      { name: 'svc-0', host: '127.0.0.1', port: s.port },
      { retry: { attempts, baseDelayMs: 100, maxDelayMs: 250 }, sleep: async (ms) => void sleeps.push(ms) },
    );
    return { c, seen: s.seen, sleeps, port: s.port };
  };

  it("retries a loading engine's 503 with exponential backoff, then succeeds (vLLM's load API)", async () => {
    const { c, seen, sleeps } = await client([
      [503, { message: 'loading' }],
      [503, { message: 'loading' }],
      [200, 'Success'],
    ]);
    await c.loadAdapter('sql', '/mnt/adapters/sql');
    expect(seen).toEqual(Array(3).fill('POST /v1/load_lora_adapter {"lora_name":"sql","lora_path":"/mnt/adapters/sql"}'));
    expect(sleeps).toEqual([100, 200]);
  });

  it('gives up after the attempts with an error naming the replica, its address and the adapter', async () => {
    const { c, sleeps, port } = await client([[500, { error: { message: 'CUDA out of memory' } }]], 3);
    const e = await c.loadAdapter('sql', '/mnt/adapters/sql').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).message).toBe(
      `replica svc-0 (http://127.0.0.1:${port}): load adapter "sql" failed after 3 attempt(s): POST /v1/load_lora_adapter answered 500: CUDA out of memory`,
    );
    expect(e).toMatchObject({ replica: 'svc-0', adapter: 'sql', retryable: true, status: 500 });
    expect(sleeps).toEqual([100, 200]);
  });

  it('does not retry a 4xx, and takes "already loaded" and "not found" as done', async () => {
    const bad = await client([[400, { message: 'lora_path does not exist' }]]);
    const e = (await bad.c.loadAdapter('x', '/nope').catch((x: unknown) => x)) as EngineError;
    expect(e.retryable).toBe(false);
    expect(e.message).toMatch(/load adapter "x" failed: POST \/v1\/load_lora_adapter answered 400: lora_path does not exist/);
    expect(bad.seen).toHaveLength(1);
    const again = await client([[400, { message: "The lora adapter 'x' has already been loaded." }]]);
    await again.c.loadAdapter('x', '/mnt/adapters/x');
    const gone = await client([[404, { message: "The lora adapter 'x' cannot be found." }]]);
    await gone.c.unloadAdapter('x');
    expect(gone.seen).toEqual(['POST /v1/unload_lora_adapter {"lora_name":"x"}']);
  });

  it('retries a refused connection and says so', async () => {
    const { c, port, server } = await (async () => {
      const s = await scripted([[200, {}]]);
      return {
        c: new EngineClient(VLLM, { name: 'svc-1', host: '127.0.0.1', port: s.port }, { retry: { attempts: 2, baseDelayMs: 1 } }),
        port: s.port,
        server: s.server,
      };
    })();
    await new Promise<void>((r) => server.close(() => r()));
    await expect(c.unloadAdapter('a')).rejects.toThrow(
      `replica svc-1 (http://127.0.0.1:${port}): unload adapter "a" failed after 2 attempt(s): POST /v1/unload_lora_adapter: ECONNREFUSED`,
    );
    expect(await c.health()).toEqual({ ready: false, error: 'ECONNREFUSED' });
  });

  it('lists vLLM adapters from /v1/models and refuses runtimes without a runtime LoRA API', async () => {
    const { c } = await client([
      [
        200,
        {
          data: [
            { id: 'base', root: '/mnt/models', parent: null },
            { id: 'sql', root: '/mnt/adapters/sql', parent: 'base' },
          ],
        },
      ],
    ]);
    expect(await c.listAdapters()).toEqual([{ name: 'sql', path: '/mnt/adapters/sql', active: true }]);
    const triton = new EngineClient(TRITON, { name: 't-0', host: '127.0.0.1', port: 1 });
    await expect(triton.loadAdapter('a', '/a')).rejects.toThrow(
      /t-0 .*: load adapter "a": Triton.* cannot load adapters into a running engine \(no LoRA support\)/,
    );
  });

  it('names an adapter by its path', () => {
    expect(adapterNameFromPath('/mnt/adapters/sql')).toBe('sql');
    expect(adapterNameFromPath('/x/y/chat.gguf')).toBe('chat');
  });
});

describe('EngineClient against the llama-server stand-in', () => {
  let server: LlamaServerStandIn;
  let c: EngineClient;
  let base = '';
  beforeAll(async () => {
    const { model, lora } = ensureTinyModel();
    const other = cacheGguf('tiny-lora', tinyLoraGguf(8));
    const files: Record<string, string> = { '/mnt/models': model, '/mnt/adapters/sql': lora, '/mnt/adapters/chat': other };
    const o = parseLlamaServerArgs(
      [
        '--model',
        '/mnt/models',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--metrics',
        '--parallel',
        '2',
        '--ctx-size',
        '512',
        '--lora',
        '/mnt/adapters/sql',
        '--lora',
        '/mnt/adapters/chat',
        '--lora-init-without-apply',
      ],
      (p) => files[p] ?? p,
    );
    server = new LlamaServerStandIn(o);
    const a = await server.start();
    base = `http://127.0.0.1:${a.port}`;
    c = new EngineClient(LLAMACPP, { name: 'tiny-0', host: '127.0.0.1', port: a.port }, { retry: { attempts: 40, baseDelayMs: 100, maxDelayMs: 500 } });
  });
  afterAll(() => server.close());

  it('becomes ready once the model is loaded', async () => {
    await waitFor('the stand-in to be ready', async () => (await c.health()).ready, 30_000);
    expect(await c.health()).toEqual({ ready: true, status: 200 });
  });

  it('switches adapters on and off through /lora-adapters, keeping the others', async () => {
    expect((await c.listAdapters()).map((a) => [a.name, a.scale])).toEqual([
      ['sql', 0],
      ['chat', 0],
    ]);
    await c.loadAdapter('sql', '/mnt/adapters/sql');
    await c.loadAdapter('chat', '/mnt/adapters/chat');
    expect((await c.listAdapters()).map((a) => [a.name, a.scale, a.active])).toEqual([
      ['sql', 1, true],
      ['chat', 1, true],
    ]);
    await c.unloadAdapter('sql', '/mnt/adapters/sql');
    expect((await c.listAdapters()).map((a) => [a.name, a.scale])).toEqual([
      ['sql', 0],
      ['chat', 1],
    ]);
    await c.unloadAdapter('never-there');
    const e = (await c.loadAdapter('new', '/mnt/adapters/new').catch((x: unknown) => x)) as EngineError;
    expect(e).toMatchObject({ replica: 'tiny-0', adapter: 'new', retryable: false });
    expect(e.message).toMatch(
      /replica tiny-0 .*: load adapter "new" failed: llama.cpp server was not launched with adapter "new" \(\/mnt\/adapters\/new\) \(it has \/mnt\/adapters\/sql, \/mnt\/adapters\/chat\); a new adapter needs the replica restarted with --lora/,
    );
  });

  it("reads the engine's /metrics into the serving layer's signals with the runtime's names", async () => {
    const before = await c.scrape();
    expect(before).toMatchObject({ running: 0, waiting: 0, kvCacheUsage: 0 });
    const burst = [1, 2, 3, 4].map(() =>
      fetch(`${base}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'the model server', max_tokens: 120, temperature: 0 }) }).then((r) =>
        r.json(),
      ),
    );
    const busy = await waitFor(
      'queueing in the signals',
      async () => {
        const s = await c.scrape();
        return (s.waiting ?? 0) >= 1 ? s : undefined;
      },
      30_000,
      5,
    );
    expect(busy.running).toBe(2);
    expect(busy.kvCacheUsage).toBeGreaterThan(0);
    await Promise.all(burst);
    const after = await c.scrape();
    expect((after.generatedTokensTotal ?? 0) - (before.generatedTokensTotal ?? 0)).toBe(480);
    expect((after.promptTokensTotal ?? 0) - (before.promptTokensTotal ?? 0)).toBe(16);
  });
});
