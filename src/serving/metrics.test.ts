// The engine-neutral signal read from RECORDED real /metrics texts (fixtures/, each with its source in its header).
// TGI: no recorded real TGI /metrics text was found among public outputs (only hand-made test payloads), so TGI's
// mapping is checked here on a text built from the names TGI documents, and says so.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { counterRate, histogramQuantile, readEngineSignals, type EngineSignals } from './metrics.ts';
import { RUNTIMES } from './runtimes/index.ts';

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
function signals(runtime: keyof typeof RUNTIMES, text: string): EngineSignals {
  const r = readEngineSignals(RUNTIMES[runtime], text);
  if (!r.ok) throw new Error(r.error);
  return r.signals;
}

describe('vLLM signals from recorded /metrics', () => {
  it('V1 (Qwen3-0.6B): queue, running, KV cache under its old name, token counters and both histograms', () => {
    const s = signals('vllm', fixture('vllm-v1-qwen3-0.6b.txt'));
    expect(s.running).toBe(0);
    expect(s.waiting).toBe(0);
    expect(s.kvCacheUsage).toBe(0);
    expect(s.promptTokensTotal).toBe(43952);
    expect(s.generatedTokensTotal).toBe(4874);
    expect(s.ttftSeconds?.count).toBe(69);
    expect(s.ttftSeconds?.sum).toBeCloseTo(4941.844, 3);
    expect(s.ttftSeconds?.buckets.at(-1)).toEqual({ le: Number.POSITIVE_INFINITY, count: 69 });
    // 69 first tokens, 31 by 7.5 s and 36 by 10 s: the median (rank 34.5) lies in (7.5, 10].
    const p50 = histogramQuantile(0.5, s.ttftSeconds!);
    expect(p50).toBeGreaterThan(7.5);
    expect(p50).toBeLessThanOrEqual(10);
    // The deprecated time_per_output_token histogram stands in for inter_token_latency on this release.
    expect(s.itlSeconds?.count).toBe(4805);
    const itl99 = histogramQuantile(0.99, s.itlSeconds!);
    // Rank 4756.95 of 4805: 4720 by 0.2 s, 4779 by 0.3 s.
    expect(itl99).toBeGreaterThan(0.2);
    expect(itl99).toBeLessThanOrEqual(0.3);
  });
  it('V0 (Qwen2.5-Coder-32B): the gauges, next to process metrics it ignores', () => {
    const s = signals('vllm', fixture('vllm-v0-qwen2.5-coder-32b.txt'));
    expect(s).toEqual({ running: 0, waiting: 0, kvCacheUsage: 0 });
  });
  it('V0 (bloom-560m under load): the token counters, no GPU KV gauge in the excerpt', () => {
    const s = signals('vllm', fixture('vllm-v0-bloom-560m.txt'));
    expect(s).toEqual({ promptTokensTotal: 1196, generatedTokensTotal: 218152 });
  });
});

describe('llama.cpp signals from recorded /metrics', () => {
  it('the token counters', () => {
    expect(signals('llamacpp', fixture('llamacpp-counters.txt'))).toEqual({ promptTokensTotal: 6886, generatedTokensTotal: 3469 });
  });
  it('processing and deferred requests as running and waiting', () => {
    expect(signals('llamacpp', fixture('llamacpp-requests.txt'))).toEqual({ running: 0, waiting: 0 });
  });
});

describe('Triton signals from recorded /metrics', () => {
  it('the pending-request count as the queue, and nothing Triton does not export', () => {
    expect(signals('triton', fixture('triton-trtllm.txt'))).toEqual({ waiting: 0 });
  });
  it('sums the pending requests of every model on the server', () => {
    const text = `${fixture('triton-trtllm.txt').replace('nv_inference_pending_request_count{model="tensorrt_llm",version="1"} 0', 'nv_inference_pending_request_count{model="tensorrt_llm",version="1"} 4\nnv_inference_pending_request_count{model="ensemble",version="1"} 3')}`;
    expect(signals('triton', text).waiting).toBe(7);
  });
});

describe('TGI signals (names as TGI documents them; no recorded text found)', () => {
  it("queue, batch, and token totals from the per-request histograms' sums", () => {
    const text = [
      '# TYPE tgi_queue_size gauge',
      'tgi_queue_size 3',
      '# TYPE tgi_batch_current_size gauge',
      'tgi_batch_current_size 12',
      '# TYPE tgi_request_generated_tokens histogram',
      'tgi_request_generated_tokens_bucket{le="10"} 2',
      'tgi_request_generated_tokens_bucket{le="+Inf"} 5',
      'tgi_request_generated_tokens_sum 410',
      'tgi_request_generated_tokens_count 5',
      '',
    ].join('\n');
    expect(signals('tgi', text)).toEqual({ waiting: 3, running: 12, generatedTokensTotal: 410 });
  });
});

describe('bad /metrics text', () => {
  it('is an error naming the runtime and the line, not a crash', () => {
    const r = readEngineSignals(RUNTIMES.vllm, '# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name="m} 1\n');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/^vllm \/metrics: line 2: /);
    const t = readEngineSignals(RUNTIMES.llamacpp, 'llamacpp:requests_deferred 1');
    expect(!t.ok && t.error).toBe('llamacpp /metrics: the last line must end with a line feed');
  });
});

describe('rates and quantiles between scrapes', () => {
  it('a counter rate, undefined across a restart or a missing counter', () => {
    expect(counterRate(100, 400, 10)).toBe(30);
    expect(counterRate(400, 100, 10)).toBeUndefined();
    expect(counterRate(undefined, 100, 10)).toBeUndefined();
    expect(counterRate(1, 2, 0)).toBeUndefined();
  });
  it('a quantile of the window only, interpolated inside the bucket like PromQL', () => {
    const before = {
      buckets: [
        { le: 0.1, count: 10 },
        { le: 1, count: 10 },
        { le: Number.POSITIVE_INFINITY, count: 10 },
      ],
      sum: 0.5,
      count: 10,
    };
    const after = {
      buckets: [
        { le: 0.1, count: 10 },
        { le: 1, count: 20 },
        { le: Number.POSITIVE_INFINITY, count: 20 },
      ],
      sum: 5,
      count: 20,
    };
    expect(histogramQuantile(0.5, after, before)).toBeCloseTo(0.55, 10);
    expect(histogramQuantile(0.5, before, before)).toBeUndefined();
    const inf = {
      buckets: [
        { le: 1, count: 0 },
        { le: Number.POSITIVE_INFINITY, count: 3 },
      ],
      sum: 9,
      count: 3,
    };
    expect(histogramQuantile(0.99, inf)).toBe(1);
  });
});
