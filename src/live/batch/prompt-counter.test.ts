// The prompt counter against the engines' named stand-ins (real llama.cpp tokenization behind vLLM's and
// llama-server's /tokenize): the count must be the one the completion then reports in usage.prompt_tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../harness/e2e-kit.ts';
import { ensureTinyModel } from '../../harness/llm/tiny-model.ts';
import { LlamaServerStandIn, parseLlamaServerArgs } from '../../harness/llm/llama-server.ts';
import { parseVllmArgs, VllmServerStandIn } from '../../harness/llm/vllm-server.ts';
import { engineCapacity, estimatePromptTokens, promptCounter } from './prompt-counter.ts';

const chat = { messages: [{ role: 'user', content: 'count the model server tokens' }], max_tokens: 1, temperature: 0 };
const completion = { prompt: 'the model server', max_tokens: 1, temperature: 0 };
const signal = new AbortController().signal;

async function usage(base: string, path: string, body: unknown): Promise<number> {
  const r = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return ((await r.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
}

describe('promptCounter', () => {
  const { model } = ensureTinyModel();
  let llama: LlamaServerStandIn;
  let vllm: VllmServerStandIn;
  let llamaBase = '';
  let vllmBase = '';
  beforeAll(async () => {
    llama = new LlamaServerStandIn(
      parseLlamaServerArgs(
        ['--model', '/mnt/models', '--alias', 'tiny', '--host', '127.0.0.1', '--port', '0', '--parallel', '1', '--ctx-size', '256'],
        () => model,
      ),
    );
    llamaBase = `http://127.0.0.1:${(await llama.start()).port}`;
    vllm = new VllmServerStandIn(
      parseVllmArgs(
        ['--model', '/mnt/models', '--served-model-name', 'tiny', '--host', '127.0.0.1', '--port', '0', '--max-model-len', '192', '--max-num-seqs', '1'],
        {},
        () => model,
      ),
    );
    vllmBase = `http://127.0.0.1:${(await vllm.start()).port}`;
    // Both answer 503 until the model is loaded.
    for (const base of [llamaBase, vllmBase])
      await waitFor(`${base}/health`, async () => ((await fetch(`${base}/health`)).status === 200 ? true : undefined), 60_000, 50);
  });
  afterAll(async () => {
    await llama?.close();
    await vllm?.close();
  });

  it("reads llama-server's whole KV cache and its slots from /props; the others say neither there", async () => {
    // --parallel 1, --ctx-size 256: one slot of 256 tokens.
    expect(await engineCapacity('llamacpp', llamaBase, signal)).toEqual({ capacityTokens: 256, slots: 1 });
    expect(await engineCapacity('vllm', vllmBase, signal)).toBeUndefined();
    expect(await engineCapacity('llamacpp', 'http://127.0.0.1:1', signal)).toBeUndefined();
  });
  it("counts with llama-server's template and tokenizer, and reads a slot's context from /props", async () => {
    const count = promptCounter('llamacpp', llamaBase, 'tiny');
    const c = await count(chat, true, signal);
    expect(c).toEqual({ tokens: await usage(llamaBase, '/v1/chat/completions', chat), contextLimit: 256, estimated: false });
    expect((await count(completion, false, signal)).tokens).toBe(await usage(llamaBase, '/v1/completions', completion));
  });

  it("counts with vLLM's /tokenize and takes max_model_len as the limit", async () => {
    const count = promptCounter('vllm', vllmBase, 'tiny');
    expect(await count(chat, true, signal)).toEqual({
      tokens: await usage(vllmBase, '/v1/chat/completions', { model: 'tiny', ...chat }),
      contextLimit: 192,
      estimated: false,
    });
    expect((await count(completion, false, signal)).tokens).toBe(await usage(vllmBase, '/v1/completions', { model: 'tiny', ...completion }));
  });

  it('estimates for runtimes whose tokenizer it cannot reach, and says so; an engine that refuses is an error', async () => {
    expect(await promptCounter('tgi', 'http://127.0.0.1:1', 'm')(chat, true, signal)).toEqual({ tokens: estimatePromptTokens(chat), estimated: true });
    await expect(promptCounter('vllm', vllmBase, 'no-such-model')(completion, false, signal)).rejects.toThrow(/404/);
  });
});
