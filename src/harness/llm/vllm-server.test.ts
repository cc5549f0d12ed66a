import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePromText, sampleValue } from '../../core/prom-text.ts';
import { cacheGguf, ensureTinyModel, tinyLoraGguf } from './tiny-model.ts';
import { parseVllmArgs, VllmArgsError, VllmServerStandIn } from './vllm-server.ts';

describe('parseVllmArgs', () => {
  it('reads the args the vllm runtime renders, with the flags that mean nothing on a CPU ignored', () => {
    // serving/runtimes/vllm.ts's container for 2 GPUs, maxLoras 4, maxLoraRank 8 and one adapter (renderReplica's output).
    const args = [
      '--model',
      '/mnt/models',
      '--served-model-name',
      'tiny',
      '--port',
      '8000',
      '--tensor-parallel-size',
      '2',
      '--enable-lora',
      '--max-loras',
      '4',
      '--max-lora-rank',
      '8',
    ];
    const o = parseVllmArgs([...args, '--host', '127.0.0.1'], { VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True' }, (p) => `/host${p}`);
    expect(o).toMatchObject({
      host: '127.0.0.1',
      port: 8000,
      model: { path: '/mnt/models', file: '/host/mnt/models' },
      servedModelNames: ['tiny'],
      enableLora: true,
      maxLoras: 4,
      maxLoraRank: 8,
      runtimeLoraUpdating: true,
    });
  });
  it('takes `vllm serve MODEL`, --flag=value, underscores, several served names and --lora-modules in both forms', () => {
    const o = parseVllmArgs(
      [
        'serve',
        '/m.gguf',
        '--served_model_name',
        'a',
        'b',
        '--max-model-len=512',
        '--enable-lora',
        '--lora-modules',
        'x=/ad/x',
        '{"name": "y", "path": "/ad/y"}',
        '--enforce-eager',
      ],
      { VLLM_ALLOW_RUNTIME_LORA_UPDATING: '1' },
    );
    expect(o).toMatchObject({
      model: { path: '/m.gguf' },
      servedModelNames: ['a', 'b'],
      maxModelLen: 512,
      loraModules: [
        { name: 'x', path: '/ad/x' },
        { name: 'y', path: '/ad/y' },
      ],
      runtimeLoraUpdating: true,
      port: 8000,
    });
    expect(parseVllmArgs(['--model', '/m'], { VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'False' }).runtimeLoraUpdating).toBe(false);
    expect(parseVllmArgs(['--model', '/m']).servedModelNames).toEqual(['/m']);
  });
  it('refuses what argparse refuses, in its words, and what the stand-in cannot honour', () => {
    expect(() => parseVllmArgs(['--model', '/m', '--bogus', '--x=1'])).toThrow(new VllmArgsError('vllm serve: error: unrecognized arguments: --bogus --x=1'));
    expect(() => parseVllmArgs(['--model', '/m', '--port', 'x'])).toThrow("vllm serve: error: argument --port: invalid int value: 'x'");
    expect(() => parseVllmArgs(['--model', '/m', '--max-loras'])).toThrow('argument --max-loras: expected one argument');
    expect(() => parseVllmArgs(['--model', '/m', '--lora-modules', 'a=/x'])).toThrow('--lora-modules: needs --enable-lora');
    expect(() => parseVllmArgs(['--model', '/m', '--enable-lora', '--lora-modules', 'nopath'])).toThrow('expected name=path');
    expect(() => parseVllmArgs(['--model', '/m', '--api-key', 'k'])).toThrow('not supported by the stand-in');
    expect(() => parseVllmArgs(['--model', 'Qwen/Qwen3-0.6B'])).toThrow('no network');
    expect(() => parseVllmArgs(['--port', '1'])).toThrow('needs a model');
  });
  it('serves a Hugging Face id from the dev hub model when sits dev up names one; a path is still a path', () => {
    const hub = import.meta.filename;
    const o = parseVllmArgs(['--model', 'Qwen/Qwen3-0.6B'], { SITS_DEV_HUB_MODEL: hub });
    expect(o.model).toEqual({ path: 'Qwen/Qwen3-0.6B', file: hub });
    expect(o.servedModelNames).toEqual(['Qwen/Qwen3-0.6B']);
    expect(parseVllmArgs(['--model', '/m'], { SITS_DEV_HUB_MODEL: hub }).model.file).toBe('/m');
  });
});

describe('the vLLM stand-in', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sits-vllm-'));
  let server: VllmServerStandIn;
  let base = '';
  const { model, lora } = ensureTinyModel();
  const wide = cacheGguf('tiny-lora-r8', tinyLoraGguf(11, 8));
  beforeAll(async () => {
    // The adapter as a directory holding adapter.gguf (the stand-in's form of a PEFT directory), a PEFT directory, an empty one.
    mkdirSync(join(dir, 'sql'));
    copyFileSync(lora, join(dir, 'sql', 'adapter.gguf'));
    mkdirSync(join(dir, 'peft'));
    writeFileSync(join(dir, 'peft', 'adapter_config.json'), '{"r": 4}');
    mkdirSync(join(dir, 'empty'));
    const paths: Record<string, string> = {
      '/mnt/models': model,
      '/mnt/adapters/sql': join(dir, 'sql'),
      '/mnt/adapters/peft': join(dir, 'peft'),
      '/mnt/adapters/empty': join(dir, 'empty'),
      '/mnt/adapters/wide': wide,
    };
    const o = parseVllmArgs(
      [
        '--model',
        '/mnt/models',
        '--served-model-name',
        'tiny',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--max-model-len',
        '256',
        '--max-num-seqs',
        '1',
        '--enable-lora',
        '--max-loras',
        '1',
        '--max-lora-rank',
        '4',
        '--tensor-parallel-size',
        '1',
      ],
      { VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True' },
      (p) => paths[p] ?? p,
    );
    server = new VllmServerStandIn(o);
    const a = await server.start();
    base = `http://127.0.0.1:${a.port}`;
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const post = async (path: string, body: unknown): Promise<{ status: number; text: string; json: Record<string, unknown> }> => {
    const r = await fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });
    const text = await r.text();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // plain text (the LoRA routes' success)
    }
    return { status: r.status, text, json };
  };
  const complete = async (body: Record<string, unknown>): Promise<{ status: number; text: string; json: Record<string, unknown> }> =>
    post('/v1/completions', { model: 'tiny', prompt: 'the model server', max_tokens: 8, temperature: 1, seed: 42, ...body });
  const textOf = (r: { json: Record<string, unknown> }): string => (r.json.choices as { text: string }[])[0]?.text ?? '';
  const models = async (): Promise<{ id: string; parent: string | null; root: string }[]> =>
    ((await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string; parent: string | null; root: string }[] }).data;

  it('answers /health with an empty 200 and lists the served model', async () => {
    const r = await fetch(`${base}/health`);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('');
    expect(await models()).toMatchObject([{ id: 'tiny', parent: null, root: '/mnt/models' }]);
  });

  it('completes deterministically for a seed; `model` must be the base model or a loaded adapter', async () => {
    const a = await complete({});
    expect(a.status).toBe(200);
    expect(a.json).toMatchObject({ object: 'text_completion', model: 'tiny', usage: { prompt_tokens: 4, completion_tokens: 8, total_tokens: 12 } });
    expect(textOf(await complete({}))).toBe(textOf(a));
    expect(textOf(await complete({ model: undefined }))).toBe(textOf(a)); // no model: the base model
    const missing = await complete({ model: 'sql' });
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ error: { message: 'The model `sql` does not exist.', type: 'NotFoundError', param: 'model', code: 404 } });
    const chat = await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 3, temperature: 0 });
    expect(chat.json.object).toBe('chat.completion');
    expect((chat.json.choices as { message: { role: string } }[])[0]?.message.role).toBe('assistant');
    const long = await complete({ max_tokens: 1000 });
    expect(long.status).toBe(400);
    expect(long.json.error).toMatchObject({
      message: expect.stringContaining("This model's maximum context length is 256 tokens. However, you requested 1004 tokens") as unknown,
    });
  });

  it("tokenizes as vLLM's /tokenize: count and max_model_len, the count a completion then reports", async () => {
    const t = await post('/tokenize', { model: 'tiny', prompt: 'the model server' });
    expect(t.status).toBe(200);
    expect(t.json).toMatchObject({ count: 4, max_model_len: 256, token_strs: null });
    expect((t.json.tokens as number[]).length).toBe(4);
    expect((await post('/tokenize', { model: 'tiny', prompt: 'the model server', add_special_tokens: false })).json.count).toBe(3);
    const messages = [{ role: 'user', content: 'hello' }];
    const c = await post('/tokenize', { model: 'tiny', messages });
    const chat = await post('/v1/chat/completions', { model: 'tiny', messages, max_tokens: 1, temperature: 0 });
    expect(c.json.count).toBe((chat.json.usage as { prompt_tokens: number }).prompt_tokens);
    expect((await post('/tokenize', { model: 'nope', prompt: 'x' })).status).toBe(404);
    expect((await post('/tokenize', { model: 'tiny', prompt: 7 })).json.error).toMatchObject({ type: 'BadRequestError', param: 'prompt' });
  });

  it('loads an adapter at runtime: listed with its parent, and naming it changes the output for the same seed', async () => {
    const plain = textOf(await complete({}));
    const r = await post('/v1/load_lora_adapter', { lora_name: 'sql', lora_path: '/mnt/adapters/sql' });
    expect(r).toMatchObject({ status: 200, text: "Success: LoRA adapter 'sql' added successfully." });
    expect((await models()).map((m) => [m.id, m.parent, m.root])).toEqual([
      ['tiny', null, '/mnt/models'],
      ['sql', 'tiny', '/mnt/adapters/sql'],
    ]);
    const adapted = await complete({ model: 'sql' });
    expect(adapted.status).toBe(200);
    expect(adapted.json.model).toBe('sql');
    expect(textOf(adapted)).not.toBe(plain);
    expect(textOf(await complete({ model: 'sql' }))).toBe(textOf(adapted));
    // The base model is untouched by the adapter.
    expect(textOf(await complete({}))).toBe(plain);
    const again = await post('/v1/load_lora_adapter', { lora_name: 'sql', lora_path: '/mnt/adapters/sql' });
    expect(again.status).toBe(400);
    expect(again.json).toEqual({ error: { message: "The lora adapter 'sql' has already been loaded.", type: 'InvalidUserInput', param: null, code: 400 } });
  });

  it('refuses adapters as vLLM does: missing path 404, not an adapter or too high a rank 400, no name 400', async () => {
    const missing = await post('/v1/load_lora_adapter', { lora_name: 'nope', lora_path: '/mnt/adapters/nope' });
    expect(missing.status).toBe(404);
    expect(missing.json.error).toMatchObject({ type: 'NotFoundError', message: 'Loading lora nope failed: No adapter found for /mnt/adapters/nope' });
    expect((await post('/v1/load_lora_adapter', { lora_name: 'e', lora_path: '/mnt/adapters/empty' })).status).toBe(404);
    const peft = await post('/v1/load_lora_adapter', { lora_name: 'p', lora_path: '/mnt/adapters/peft' });
    expect(peft.status).toBe(400);
    expect(JSON.stringify(peft.json)).toContain('PEFT (safetensors) adapter');
    const model = await post('/v1/load_lora_adapter', { lora_name: 'm', lora_path: '/mnt/models' });
    expect(model.status).toBe(400);
    expect(JSON.stringify(model.json)).toContain('not a LoRA adapter');
    const wide = await post('/v1/load_lora_adapter', { lora_name: 'w', lora_path: '/mnt/adapters/wide' });
    expect(wide.status).toBe(400);
    expect(wide.json.error).toMatchObject({ message: 'LoRA rank 8 is greater than max_lora_rank 4.' });
    expect((await post('/v1/load_lora_adapter', { lora_name: 'x' })).json.error).toMatchObject({
      message: "Both 'lora_name' and 'lora_path' must be provided.",
    });
    // None of them was registered.
    expect((await models()).map((m) => m.id)).toEqual(['tiny', 'sql']);
  });

  it('holds more adapters than --max-loras, as vLLM does (max-loras bounds one batch, not the registry)', async () => {
    const r = await post('/v1/load_lora_adapter', { lora_name: 'sql2', lora_path: '/mnt/adapters/sql' });
    expect(r.status).toBe(200);
    expect(textOf(await complete({ model: 'sql2' }))).toBe(textOf(await complete({ model: 'sql' })));
    expect((await post('/v1/unload_lora_adapter', { lora_name: 'sql2' })).status).toBe(200);
  });

  it("exports vLLM V1's metric families (names, types, HELP of a recorded real /metrics) labelled model_name", async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    const mine = parsePromText(text);
    const real = parsePromText(readFileSync(join(import.meta.dirname, '..', '..', 'serving', 'fixtures', 'vllm-v1-qwen3-0.6b.txt'), 'utf8'));
    for (const [name, fam] of real) {
      expect(mine.get(name)?.type, name).toBe(fam.type);
      expect(mine.get(name)?.help, name).toBe(fam.help);
    }
    for (const n of ['vllm:kv_cache_usage_perc', 'vllm:inter_token_latency_seconds']) expect(mine.has(n), n).toBe(true);
    expect(sampleValue(mine, 'vllm:generation_tokens_total', { model_name: 'tiny' })).toBeGreaterThanOrEqual(40);
    expect(sampleValue(mine, 'vllm:prompt_tokens_total', { model_name: 'tiny' })).toBeGreaterThan(0);
    expect(sampleValue(mine, 'vllm:time_to_first_token_seconds_count', { model_name: 'tiny' })).toBeGreaterThan(0);
    expect(sampleValue(mine, 'vllm:num_requests_running', { model_name: 'tiny' })).toBe(0);
    expect(text).toContain('vllm:lora_requests_info{max_lora="1",running_lora_adapters="",waiting_lora_adapters=""}');
  });

  it('queues requests beyond --max-num-seqs in vllm:num_requests_waiting', async () => {
    const burst = [1, 2, 3].map(() => complete({ max_tokens: 150, ignore_eos: true }));
    let seen = 0;
    for (let i = 0; i < 400 && seen === 0; i++) {
      seen = sampleValue(parsePromText(await (await fetch(`${base}/metrics`)).text()), 'vllm:num_requests_waiting', { model_name: 'tiny' }) ?? 0;
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(seen).toBeGreaterThanOrEqual(1);
    for (const r of await Promise.all(burst)) expect((r.json.usage as { completion_tokens: number }).completion_tokens).toBe(150);
  });

  it('unloads: the adapter is gone from /v1/models, a request naming it is a 404, a second unload a 404', async () => {
    const r = await post('/v1/unload_lora_adapter', { lora_name: 'sql' });
    expect(r).toMatchObject({ status: 200, text: "Success: LoRA adapter 'sql' removed successfully." });
    expect((await models()).map((m) => m.id)).toEqual(['tiny']);
    expect((await complete({ model: 'sql' })).status).toBe(404);
    const again = await post('/v1/unload_lora_adapter', { lora_name: 'sql' });
    expect(again.status).toBe(404);
    expect(again.json.error).toMatchObject({ message: "The lora adapter 'sql' cannot be found.", type: 'NotFoundError' });
  });
});

describe('the vLLM stand-in without VLLM_ALLOW_RUNTIME_LORA_UPDATING', () => {
  let server: VllmServerStandIn;
  let base = '';
  beforeAll(async () => {
    const { model, lora } = ensureTinyModel();
    const o = parseVllmArgs(
      [
        '--model',
        model,
        '--served-model-name',
        'tiny',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--max-model-len',
        '128',
        '--enable-lora',
        '--lora-modules',
        `sql=${lora}`,
      ],
      {},
    );
    server = new VllmServerStandIn(o);
    base = `http://127.0.0.1:${(await server.start()).port}`;
  });
  afterAll(async () => server.close());

  it('has no runtime LoRA routes (FastAPI 404), but serves the --lora-modules it was started with', async () => {
    const r = await fetch(`${base}/v1/load_lora_adapter`, { method: 'POST', body: JSON.stringify({ lora_name: 'b', lora_path: '/x' }) });
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ detail: 'Not Found' });
    const data = ((await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string; parent: string | null }[] }).data;
    expect(data.map((m) => [m.id, m.parent])).toEqual([
      ['tiny', null],
      ['sql', 'tiny'],
    ]);
    const c = await fetch(`${base}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'sql', prompt: 'the', max_tokens: 2 }) });
    expect(c.status).toBe(200);
  });
});
