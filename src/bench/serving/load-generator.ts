/**
 * A load generator for live serving replicas (issue 12, item 6): it replays a window of the Azure LLM trace
 * (serving/sim/trace.ts) — the arrival shape time-compressed, the prompt and output lengths scaled down to what
 * the tiny test model holds, the same shape — against a set of OpenAI-compatible endpoints, round-robin, streaming,
 * and records each request's time to first token and latency. The endpoints are a list, or read from a Service's
 * EndpointSlices on the apiserver (ready endpoints only, as kube-proxy routes). Deterministic by seed: the window,
 * the prompts' words and the schedule are the same on every run; only the measured times differ.
 */
import type { KubeClient } from '../../kube/client/client.ts';
import type { TraceRequest } from '../../serving/sim/trace.ts';
import { prng, VOCAB_WORDS } from '../../harness/llm/tiny-model.ts';
import { readyEndpoints, SERVICE_NAME_LABEL, type Endpoint, type EndpointSliceLike } from '../../serving/activator-routing.ts';

export type { Endpoint };


export interface PlannedRequest {
  readonly index: number;
  /** When to send it, from the start of the run. */
  readonly atMs: number;
  readonly prompt: string;
  /** The prompt length the trace row asked for, scaled (one word of VOCAB_WORDS is one token of the tiny model). */
  readonly promptTokens: number;
  readonly maxTokens: number;
}

export interface PlanOptions {
  readonly seed: number;
  readonly count: number;
  /** The window's arrivals are squeezed into this many milliseconds (its shape kept). */
  readonly spanMs: number;
  readonly maxPromptTokens: number;
  readonly maxOutputTokens: number;
}

/** A seeded window of `count` consecutive trace requests, lengths scaled so the window's longest fits the caps. */
export function planLoad(trace: readonly TraceRequest[], o: PlanOptions): PlannedRequest[] {
  if (trace.length === 0) throw new Error('planLoad: the trace has no requests');
  if (!(o.count >= 1) || !(o.spanMs >= 0) || !(o.maxPromptTokens >= 1) || !(o.maxOutputTokens >= 1)) throw new Error('planLoad: count, maxPromptTokens and maxOutputTokens must be ≥ 1 and spanMs ≥ 0');
  const rand = prng(o.seed);
  const count = Math.min(o.count, trace.length);
  const start = Math.floor(rand() * (trace.length - count + 1));
  const window = trace.slice(start, start + count);
  const t0 = (window[0] as TraceRequest).arrivalSec;
  const span = (window[window.length - 1] as TraceRequest).arrivalSec - t0;
  const maxPrompt = Math.max(...window.map((r) => r.promptTokens));
  const maxOut = Math.max(...window.map((r) => r.outputTokens));
  return window.map((r, index) => {
    const promptTokens = Math.max(1, Math.round((r.promptTokens / maxPrompt) * o.maxPromptTokens));
    const words: string[] = [];
    for (let i = 0; i < promptTokens; i++) words.push(VOCAB_WORDS[Math.floor(rand() * VOCAB_WORDS.length)] as string);
    return {
      index,
      atMs: span > 0 ? ((r.arrivalSec - t0) / span) * o.spanMs : 0,
      prompt: words.join(' '),
      promptTokens,
      maxTokens: Math.max(1, Math.round((r.outputTokens / maxOut) * o.maxOutputTokens)),
    };
  });
}

interface EndpointSliceList {
  readonly items: EndpointSliceLike[];
}

/**
 * The ready endpoints of a Service from its EndpointSlices (label kubernetes.io/service-name), by port name or the
 * first port. `resolve` maps a pod IP to the address to dial (the dev pod network: harness/llm/engine-pods.ts).
 */
export async function endpointsFromSlices(client: KubeClient, namespace: string, service: string, portName?: string, resolve: (ip: string) => string = (ip) => ip): Promise<Endpoint[]> {
  const list = await client.get<EndpointSliceList>(`/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`, { labelSelector: `${SERVICE_NAME_LABEL}=${service}` });
  return readyEndpoints(list.items, portName, resolve);
}

export interface RequestResult {
  readonly index: number;
  readonly endpoint: string;
  readonly ok: boolean;
  readonly status?: number;
  readonly error?: string;
  readonly text: string;
  readonly promptTokens?: number;
  readonly completionTokens?: number;
  /** Send to the first non-empty text chunk. */
  readonly ttftMs?: number;
  readonly latencyMs: number;
}

export interface LoadSummary {
  readonly sent: number;
  readonly ok: number;
  readonly failed: number;
  readonly byEndpoint: Readonly<Record<string, number>>;
  readonly ttftMs: { readonly p50: number; readonly p99: number };
  readonly latencyMs: { readonly p50: number; readonly p99: number };
}

export interface RunOptions {
  /** The `model` field of each request (llama-server accepts any; vLLM routes adapters by it). */
  readonly model?: string;
  /** Extra fields for every request body (temperature, a llama.cpp `lora` list, ...). */
  readonly body?: Readonly<Record<string, unknown>>;
  readonly timeoutMs?: number;
}

/** Nearest-rank quantile; 0 for no values. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] as number;
}

/** Sends one streaming completion and times it. */
export async function sendCompletion(ep: Endpoint, r: Pick<PlannedRequest, 'index' | 'prompt' | 'maxTokens'>, o: RunOptions = {}): Promise<RequestResult> {
  const t0 = performance.now();
  const base = { index: r.index, endpoint: ep.name };
  try {
    const res = await fetch(`http://${ep.host}:${ep.port}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: o.model ?? 'default', prompt: r.prompt, max_tokens: r.maxTokens, stream: true, temperature: 0, ...o.body }),
      signal: AbortSignal.timeout(o.timeoutMs ?? 60_000),
    });
    if (res.status !== 200 || res.body === null) return { ...base, ok: false, status: res.status, error: await res.text(), text: '', latencyMs: performance.now() - t0 };
    let ttftMs: number | undefined;
    let text = '';
    let usage: { prompt_tokens?: number; completion_tokens?: number } | undefined;
    let buf = '';
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      let cut: number;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of event.split('\n')) {
          if (!line.startsWith('data: ')) continue;
          const data = line.slice(6).trim();
          if (data === '[DONE]') continue;
          const j = JSON.parse(data) as { choices?: { text?: string }[]; usage?: typeof usage };
          const piece = j.choices?.[0]?.text ?? '';
          if (piece !== '' && ttftMs === undefined) ttftMs = performance.now() - t0;
          text += piece;
          if (j.usage !== undefined) usage = j.usage;
        }
      }
    }
    return {
      ...base,
      ok: true,
      status: 200,
      text,
      ...(usage?.prompt_tokens !== undefined ? { promptTokens: usage.prompt_tokens } : {}),
      ...(usage?.completion_tokens !== undefined ? { completionTokens: usage.completion_tokens } : {}),
      ...(ttftMs !== undefined ? { ttftMs } : {}),
      latencyMs: performance.now() - t0,
    };
  } catch (e) {
    return { ...base, ok: false, error: (e as Error).message, text: '', latencyMs: performance.now() - t0 };
  }
}

/**
 * Replays the plan: each request leaves at its time (open loop: a slow replica does not slow the arrivals) to the
 * next endpoint round-robin. `endpoints` may be a function, read again for every request (a Service that scales).
 */
export async function runLoad(plan: readonly PlannedRequest[], endpoints: readonly Endpoint[] | (() => Promise<readonly Endpoint[]>), o: RunOptions = {}): Promise<{ results: RequestResult[]; summary: LoadSummary }> {
  const start = performance.now();
  let rr = 0;
  const pending: Promise<RequestResult>[] = [];
  for (const r of plan) {
    const wait = start + r.atMs - performance.now();
    if (wait > 0) await new Promise((res) => setTimeout(res, wait));
    const eps = typeof endpoints === 'function' ? await endpoints() : endpoints;
    const ep = eps.length === 0 ? undefined : eps[rr++ % eps.length];
    pending.push(ep === undefined ? Promise.resolve({ index: r.index, endpoint: '', ok: false, error: 'no ready endpoint', text: '', latencyMs: 0 }) : sendCompletion(ep, r, o));
  }
  const results = await Promise.all(pending);
  const ok = results.filter((r) => r.ok);
  const byEndpoint: Record<string, number> = {};
  for (const r of ok) byEndpoint[r.endpoint] = (byEndpoint[r.endpoint] ?? 0) + 1;
  const ttft = ok.flatMap((r) => (r.ttftMs === undefined ? [] : [r.ttftMs]));
  const lat = ok.map((r) => r.latencyMs);
  return {
    results,
    summary: {
      sent: results.length,
      ok: ok.length,
      failed: results.length - ok.length,
      byEndpoint,
      ttftMs: { p50: quantile(ttft, 0.5), p99: quantile(ttft, 0.99) },
      latencyMs: { p50: quantile(lat, 0.5), p99: quantile(lat, 0.99) },
    },
  };
}
