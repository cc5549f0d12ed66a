// The KV reading from RECORDED real /metrics texts (src/serving/fixtures/, each with its source in its header) and,
// for llama-server, whose recorded fixtures predate no KV gauge (it was dropped in 2025), from the stand-in's own
// /metrics text in llama-server's format.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RUNTIMES } from '../../serving/runtimes/index.ts';
import { KvWindow, readKv } from './engine-kv.ts';

const fixture = (name: string): string => readFileSync(new URL(`../../serving/fixtures/${name}`, import.meta.url), 'utf8');

describe('the engine KV-cache reading the batch worker feeds the batch-size strategy', () => {
  it('vLLM V1 (Qwen3-0.6B, idle): use 0 under the old gauge name, capacity 2340 blocks × 16 tokens from cache_config_info', () => {
    expect(readKv(RUNTIMES.vllm, fixture('vllm-v1-qwen3-0.6b.txt'))).toEqual({
      ok: true,
      value: { usedFraction: 0, freeFraction: 1, capacityTokens: 37_440, freeTokens: 37_440 },
    });
  });
  it('vLLM V0 (Qwen2.5-Coder-32B): use from gpu_cache_usage_perc, no capacity in the excerpt', () => {
    expect(readKv(RUNTIMES.vllm, fixture('vllm-v0-qwen2.5-coder-32b.txt'))).toEqual({ ok: true, value: { usedFraction: 0, freeFraction: 1 } });
  });
  it('vLLM prefers kv_cache_usage_perc and reads a busy engine', () => {
    const text = `${fixture('vllm-v1-qwen3-0.6b.txt')}# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name="Qwen/Qwen3-0.6B"} 0.25\n`;
    expect(readKv(RUNTIMES.vllm, text)).toEqual({ ok: true, value: { usedFraction: 0.25, freeFraction: 0.75, capacityTokens: 37_440, freeTokens: 28_080 } });
  });
  it('llama-server: the ratio, and the capacity from kv_cache_tokens ÷ the ratio while something is cached', () => {
    const text = (tokens: number, ratio: number): string =>
      `# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.\n# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio ${ratio}\n# HELP llamacpp:kv_cache_tokens KV-cache tokens.\n# TYPE llamacpp:kv_cache_tokens gauge\nllamacpp:kv_cache_tokens ${tokens}\n`;
    expect(readKv(RUNTIMES.llamacpp, text(512, 0.125))).toEqual({
      ok: true,
      value: { usedFraction: 0.125, freeFraction: 0.875, capacityTokens: 4096, freeTokens: 3584 },
    });
    expect(readKv(RUNTIMES.llamacpp, text(0, 0))).toEqual({ ok: true, value: { usedFraction: 0, freeFraction: 1 } });
  });
  it('says why when there is no gauge: a recorded llama-server without it, TGI and Triton, a bad text', () => {
    expect(readKv(RUNTIMES.llamacpp, fixture('llamacpp-counters.txt'))).toEqual({
      ok: false,
      reason: 'llamacpp /metrics has none of llamacpp:kv_cache_usage_ratio (a llama-server after 2025 dropped it)',
    });
    expect(readKv(RUNTIMES.tgi, 'tgi_queue_size 0\n')).toEqual({ ok: false, reason: 'tgi exports no KV-cache usage metric' });
    expect(readKv(RUNTIMES.triton, fixture('triton-trtllm.txt'))).toEqual({ ok: false, reason: 'triton exports no KV-cache usage metric' });
    expect(readKv(RUNTIMES.vllm, 'vllm:kv_cache_usage_perc 0.5')).toMatchObject({ ok: false, reason: expect.stringMatching(/^vllm \/metrics: /) });
  });
  it('a window keeps its peak use and the last capacity seen', () => {
    const w = new KvWindow();
    expect(w.take()).toBeUndefined();
    w.add({ usedFraction: 0.2, freeFraction: 0.8, capacityTokens: 1000, freeTokens: 800 });
    w.add({ usedFraction: 0.6, freeFraction: 0.4 });
    w.add({ usedFraction: 0.1, freeFraction: 0.9 });
    expect(w.take()).toEqual({ usedFraction: 0.6, freeFraction: 0.4, capacityTokens: 1000, freeTokens: 400 });
    expect(w.take()).toBeUndefined();
  });
});
