/**
 * `sits batch-worker`: the container beside the engine in a BatchInferenceJob's worker pod (docs/adr/0102). It
 * reads its shard from its own pod's assignment annotation (written by the controller), sends each record of it
 * to the engine's OpenAI endpoint on the pod's address, writes the shard's results as one part file, whole or not
 * at all (FsOutputStore: temp file, fsync, rename), and reports progress on its own pod's report annotation at a
 * bounded rate (one write per reportEveryMs at most, plus one when the part is written), so the API writes per job
 * grow with the shards, not the records. The controller commits the part; the worker never touches the manifest.
 * A new attempt in the assignment cancels the running one (nothing is written for it); a smaller end is the
 * long-tail breaker's cut (the part then stops there).
 * Requests in flight: the fixed --concurrency, or, when the job asks for dynamic batching or a batch-size plugin
 * (--batching), its live batch size (LiveBatchSize: AIMD or the plugin on each window's p99 against the SLA),
 * scaled by the fault ladder's assignment concurrency either way; the report carries the size in use.
 * KV cache (ADR 0164): while an attempt runs, the engine's /metrics is scraped at most once per kvEveryMs and read
 * through the runtime's own names (engine-kv.ts); each batch-size window gets its peak use and free tokens, and the
 * report carries the attempt's tightest free fraction (kvFree) for the controller's workload profile.
 * Checkpoints (ADR 0159): at the job's checkpoint interval the finished prefix is written as a part file of the
 * attempt's own and named in the report, for the controller to commit while the shard runs on.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ANNOTATION } from '../../api/wire.ts';
import { errorLine, parseRequestLine, successLine, type BatchRequestLine } from '../../controllers/batch-inference/openai-batch.ts';
import type { BatchPolicy } from '../../controllers/batch-inference/live-batch.ts';
import type { PluginLimits } from '../../controllers/batch-inference/wasm-plugin.ts';
import { LiveBatchSize, sharedPrefixFraction, tokenMixOf } from '../../controllers/batch-inference/live-batch.ts';
import {
  checkpointName,
  formatReport,
  parseAssignment,
  type BatchPluginState,
  type WireAssignment,
  type WireStage,
  type WireStageName,
  type WorkerReport,
} from '../../controllers/batch-inference/worker-protocol.ts';
import { runStages, type LiveStage, type StageStats } from '../../controllers/batch-inference/stage-runner.ts';
import { exportsKvUsage, KvWindow, readKv, type KvReading } from '../../controllers/batch-inference/engine-kv.ts';
import type { RuntimeDefinition } from '../../serving/runtime.ts';
import { engineCapacity, estimatePromptTokens, promptCounter, type PromptCount, type PromptCounter } from './prompt-counter.ts';
import type { KubeClient } from '../../kube/client/client.ts';
import { loadJobPlugins } from '../../wasm/job-plugins.ts';
import { FsOutputStore } from './batch-files.ts';

export interface BatchWorkerOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly podName: string;
  /** The job's input file (as mounted in this container). */
  readonly input: string;
  /** The job's output folder (as mounted). */
  readonly output: string;
  /** The engine's base URL, e.g. http://10.0.0.7:8080. */
  readonly engine: string;
  /** The model name the engine serves (set on every request body). */
  readonly model: string;
  readonly jobUid: string;
  /** Requests in flight at full concurrency. */
  readonly concurrency?: number;
  /** The job's dynamic batching and batch-size plugin (the controller's --batching flag); unset: fixed concurrency. */
  readonly batching?: BatchPolicy;
  /** Where the batch-size plugin's file is looked up (--plugin-dir or $SITS_PLUGIN_DIR). */
  readonly pluginDir?: string;
  /** Where the pod mounts the plugin's ConfigMap, its key as a file (--plugin-configmap-dir, set by the controller; ADR 0156). */
  readonly pluginConfigMapDir?: string;
  /** The operator's plugin limits (--plugin-limits, from the controller's config); unset: DEFAULT_PLUGIN_LIMITS. */
  readonly pluginLimits?: Partial<PluginLimits>;
  /** The engine's runtime (--runtime): where its /metrics is and its KV-cache gauge's name; unset: KV not read. */
  readonly runtime?: RuntimeDefinition;
  /** At most one /metrics scrape per this many ms while an attempt runs (default 1000). */
  readonly kvEveryMs?: number;
  /** Completions per batch-size window (default BATCH_WINDOW). */
  readonly batchWindow?: number;
  readonly pollMs?: number;
  readonly reportEveryMs?: number;
  /**
   * Checkpoint the attempt's finished prefix at least this often (the job's spec.checkpoint.intervalSeconds, ADR
   * 0159), and after every `checkpointRecords` records when set; unset: no checkpoints.
   */
  readonly checkpointEveryMs?: number;
  readonly checkpointRecords?: number;
  readonly requestTimeoutMs?: number;
  readonly log?: (m: string) => void;
}

interface Running {
  readonly a: WireAssignment;
  end: number;
  readonly abort: AbortController;
  done?: Promise<void>;
}

class EngineDown extends Error {}
/** The engine is up but says it could not load the model (llama-server's /health 500 after a failed load). */
class ModelUnavailable extends Error {}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/** The input's requests in record order (blank lines skipped, as the controller counts them). */
export function loadRequests(file: string): BatchRequestLine[] {
  const out: BatchRequestLine[] = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] as string;
    if (text.trim() === '') continue;
    out.push(parseRequestLine(text, file, i + 1).request);
  }
  return out;
}

/** A record in the worker's stage pipeline: what the tokenise stage counted, then the output line. */
interface StagedRecord {
  readonly i: number;
  prompt?: PromptCount;
  out?: { readonly line: string; readonly tokens: number; readonly outputTokens: number };
}

/** Prompts of the first shard counted with the engine's tokenizer for the start decision: a p90 that is not one record. */
const START_SAMPLE = 64;

/** max_tokens (or max_completion_tokens) of a request body, when it sets one. */
function maxOutputTokens(body: Readonly<Record<string, unknown>>): number | undefined {
  const v = body.max_tokens ?? body.max_completion_tokens;
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

/** The worker's stage totals over its attempts, as the report carries them. */
class StageTotals {
  private readonly sums = new Map<WireStageName, { processed: number; busyMs: number; blockedMs: number; maxQueue: number; capacity: number }>();
  promptTokens = 0;
  refused = 0;
  counter: 'engine' | 'estimated' | undefined;
  /** The attempt in flight: its live stats, added on top until it ends. */
  live: readonly StageStats[] = [];

  add(stats: readonly StageStats[], capacities: readonly number[]): void {
    stats.forEach((st, k) => {
      const name = st.name as WireStageName;
      const t = this.sums.get(name) ?? { processed: 0, busyMs: 0, blockedMs: 0, maxQueue: 0, capacity: 0 };
      this.sums.set(name, {
        processed: t.processed + st.processed,
        busyMs: t.busyMs + st.busyMs,
        blockedMs: t.blockedMs + st.blockedMs,
        maxQueue: Math.max(t.maxQueue, st.maxQueue),
        capacity: Math.max(t.capacity, capacities[k] ?? 0),
      });
    });
  }

  wire(capacities: readonly number[]): WireStage[] {
    const names: WireStageName[] = ['tokenise', 'infer', 'postprocess'];
    return names.map((name, k) => {
      const t = this.sums.get(name) ?? { processed: 0, busyMs: 0, blockedMs: 0, maxQueue: 0, capacity: 0 };
      const l = this.live[k];
      const base = {
        name,
        processed: t.processed + (l?.processed ?? 0),
        busyMs: Math.round(t.busyMs + (l?.busyMs ?? 0)),
        blockedMs: Math.round(t.blockedMs + (l?.blockedMs ?? 0)),
        maxQueue: Math.max(t.maxQueue, l?.maxQueue ?? 0),
        capacity: Math.max(t.capacity, capacities[k] ?? 0),
      };
      return name === 'tokenise'
        ? { ...base, promptTokens: this.promptTokens, refused: this.refused, ...(this.counter === undefined ? {} : { counter: this.counter }) }
        : base;
    });
  }
}
/** The batch size and its plugin, set up once per worker (the size outlives an attempt). */
interface BatchSizing {
  /** What the engine sustained on the last shard holds for the next; undefined: fixed concurrency. */
  readonly sizer: LiveBatchSize | undefined;
  readonly plugins: ReturnType<typeof loadJobPlugins> | undefined;
  /** Why the plugin is not used, or what it is: carried on every report. */
  readonly pluginNote: string | undefined;
  /** The plugin's state now (it may disable itself while the worker runs). */
  readonly pluginState: () => BatchPluginState | undefined;
}

function batchSizing(o: BatchWorkerOptions, requests: readonly BatchRequestLine[], kvWindow: KvWindow, log: (m: string) => void): BatchSizing {
  let sizer: LiveBatchSize | undefined;
  let pluginNote: string | undefined;
  const ref = o.batching?.plugin;
  // The worker may read its own pod only (RBAC): a ConfigMap module reaches it as a file the kubelet mounted.
  const cm = ref?.configMap;
  const cmDir = o.pluginConfigMapDir;
  if (cm !== undefined && cmDir === undefined)
    pluginNote = `batchSize: plugin configmap/${cm.name}/${cm.key} rejected: the batch worker cannot read ConfigMaps and none is mounted (--plugin-configmap-dir); built-in strategies used`;
  const mounted = (_name: string, key: string): Uint8Array | undefined =>
    cmDir !== undefined && existsSync(join(cmDir, key)) ? readFileSync(join(cmDir, key)) : undefined;
  const plugins =
    ref === undefined || (cm !== undefined && cmDir === undefined)
      ? undefined
      : loadJobPlugins(
          { batchSize: { wasm: ref } },
          {
            ...(o.pluginDir === undefined ? {} : { pluginDir: o.pluginDir }),
            configMapBytes: mounted,
            ...(o.pluginLimits === undefined ? {} : { limits: o.pluginLimits }),
          },
        );
  const pluginState = (): BatchPluginState | undefined =>
    ref === undefined ? undefined : plugins?.batchSize === undefined ? 'rejected' : plugins.batchSize.disabled !== undefined ? 'disabled' : 'active';
  if (o.batching !== undefined) {
    if (pluginNote !== undefined) log(`batch-size strategy: ${pluginNote}`);
    sizer = new LiveBatchSize(o.batching, tokenMixOf(requests.map((r) => r.body as Record<string, unknown>)), plugins?.batchSize, o.batchWindow, () =>
      kvWindow.take(),
    );
    if (plugins !== undefined) {
      const builtin = Math.max(o.batching.min, Math.min(o.batching.max, o.batching.start));
      pluginNote = `${plugins.condition.message}${plugins.batchSize === undefined ? '' : `; start batch size ${sizer.size} (${sizer.source}; the built-in's: ${builtin})`}`;
      log(`batch-size strategy: ${pluginNote}`);
    }
    if (sizer.lastFallback !== undefined) log(sizer.lastFallback);
    log(
      `batch size ${sizer.size} (${sizer.source})${o.batching.targetP99Ms === undefined ? ', fixed: the job sets no targetLatencyMs' : `, p99 target ${o.batching.targetP99Ms} ms`}`,
    );
  }
  return { sizer, plugins, pluginNote, pluginState };
}

/**
 * The tokenise stage's counter: the engine's tokenizer where the runtime has one; an answer it cannot give (an old
 * engine, a refusal) falls back to the estimate for that record and is said once.
 */
function promptCounting(
  o: BatchWorkerOptions,
  engine: string,
  totals: StageTotals,
  log: (m: string) => void,
): (body: Record<string, unknown>, chat: boolean, signal: AbortSignal) => Promise<PromptCount> {
  const counter: PromptCounter | undefined = o.runtime === undefined ? undefined : promptCounter(o.runtime.name, engine, o.model);
  let counterNote = false;
  return async (body, chat, signal) => {
    if (counter !== undefined) {
      try {
        const c = await counter(body, chat, signal);
        totals.counter = totals.counter === 'estimated' ? 'estimated' : c.estimated ? 'estimated' : 'engine';
        return c;
      } catch (e) {
        if (signal.aborted) throw new Error('cancelled');
        if (!counterNote) log(`tokenise: the engine's tokenizer did not answer (${(e as Error).message}); prompt tokens estimated`);
        counterNote = true;
      }
    }
    totals.counter = 'estimated';
    return { tokens: estimatePromptTokens(body), estimated: true };
  };
}

/** Reads the engine's KV-cache use from its /metrics through the runtime's own names (ADR 0164). */
class KvScraper {
  /** Why the KV cache is not read (logged once per new reason); undefined while it is. */
  reason: string | undefined;

  constructor(
    private readonly rt: RuntimeDefinition | undefined,
    private readonly engine: string,
    readonly everyMs: number,
    private readonly window: KvWindow,
    private readonly log: (m: string) => void,
  ) {
    this.reason =
      rt === undefined
        ? 'no --runtime: the engine KV cache is not read'
        : exportsKvUsage(rt)
          ? undefined
          : `${rt.name} exports no KV-cache usage metric: the batch-size strategy gets KV unknown (0)`;
  }

  /** One read of the engine's KV use; undefined (the reason logged once) when it cannot be read. */
  async scrape(signal: AbortSignal): Promise<KvReading | undefined> {
    const rt = this.rt;
    if (rt === undefined || !exportsKvUsage(rt)) return undefined;
    try {
      const res = await fetch(`${this.engine}${rt.metricsPath}`, { signal: AbortSignal.any([signal, AbortSignal.timeout(5000)]) });
      const r = readKv(rt, await res.text());
      if (r.ok) return r.value;
      if (this.reason !== r.reason) {
        this.reason = r.reason;
        this.log(`engine KV cache: ${r.reason}`);
      }
    } catch (e) {
      if (!signal.aborted) this.log(`engine KV cache: ${(e as Error).message}`);
    }
    return undefined;
  }

  /** Scrapes the engine's KV use until `signal`, at most once per everyMs; each reading goes to the window and `onRead`. */
  async sample(onRead: (r: KvReading) => void, signal: AbortSignal): Promise<void> {
    if (this.rt === undefined || !exportsKvUsage(this.rt)) return;
    // The first read a moment after the attempt starts: at its very start nothing is in flight yet.
    await sleep(Math.min(this.everyMs, 100), signal);
    while (!signal.aborted) {
      const k = await this.scrape(signal);
      if (k !== undefined) {
        this.window.add(k);
        onRead(k);
      }
      await sleep(this.everyMs, signal);
    }
  }
}

/** What the worker's attempts share. */
interface Worker {
  readonly o: BatchWorkerOptions;
  readonly log: (m: string) => void;
  readonly requests: readonly BatchRequestLine[];
  readonly store: FsOutputStore;
  readonly podPath: string;
  readonly engine: string;
  readonly concurrency: number;
  readonly reportEvery: number;
  readonly sizing: BatchSizing;
  readonly totals: StageTotals;
  readonly kv: KvScraper;
  readonly countPrompt: (body: Record<string, unknown>, chat: boolean, signal: AbortSignal) => Promise<PromptCount>;
  /** The stages' queue capacities of the attempt in flight (the report carries them). */
  capacities: number[];
  /** Whether the start batch size was chosen again from the engine (once per worker). */
  kvStarted: boolean;
}

async function report(w: Worker, r: WorkerReport): Promise<void> {
  const note = w.sizing.sizer?.lastFallback ?? w.sizing.pluginNote;
  const state = w.sizing.pluginState();
  const full: WorkerReport = {
    ...r,
    ...(note === undefined ? {} : { batchNote: note }),
    ...(state === undefined ? {} : { batchPlugin: state }),
    stages: w.totals.wire(w.capacities),
  };
  await w.o.client.mergePatch(w.podPath, { metadata: { annotations: { [ANNOTATION.batchReport]: formatReport(full) } } });
}

async function waitForEngine(engine: string, log: (m: string) => void, signal: AbortSignal): Promise<void> {
  let loadFailures = 0;
  for (let i = 0; !signal.aborted; i++) {
    try {
      const r = await fetch(`${engine}/health`, { signal: AbortSignal.timeout(5000) });
      const text = await r.text();
      if (r.status === 200) return;
      // 503 is "Loading model"; a 500 that says the load failed, three times running, is the model's fault.
      const msg = /failed to load model/i.test(text) ? ((JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text) : undefined;
      loadFailures = r.status === 500 && msg !== undefined ? loadFailures + 1 : 0;
      if (loadFailures >= 3) throw new ModelUnavailable((msg as string).slice(0, 500));
    } catch (e) {
      if (e instanceof ModelUnavailable) throw e;
      // Not listening yet.
    }
    if (i % 20 === 19) log(`waiting for the engine at ${engine}`);
    await sleep(250, signal);
  }
}

type RecordOut = { line: string; tokens: number; outputTokens: number };

/** One record: the output line and its tokens. Transient failures (refused, timeout, 5xx, 429) are retried. */
async function callEngine(w: Worker, index: number, signal: AbortSignal): Promise<RecordOut> {
  const { o, engine } = w;
  const req = w.requests[index] as BatchRequestLine;
  let last = '';
  for (let attempt = 0; attempt < 5; attempt++) {
    if (signal.aborted) throw new Error('cancelled');
    try {
      const res = await fetch(`${engine}${req.url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...req.body, model: o.model }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(o.requestTimeoutMs ?? 120_000)]),
      });
      const text = await res.text();
      if (res.status === 429 || res.status >= 500) {
        last = `${res.status} ${text.slice(0, 200)}`;
      } else {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        if (res.status >= 200 && res.status < 300) {
          const usage = (body as { usage?: { total_tokens?: number; completion_tokens?: number } }).usage;
          return {
            line: JSON.stringify(successLine(o.jobUid, req.custom_id, body, res.status)),
            tokens: usage?.total_tokens ?? 0,
            outputTokens: usage?.completion_tokens ?? 0,
          };
        }
        // The engine refused this request (4xx): an error line for this record, the shard goes on.
        const msg = (body as { error?: { message?: string } }).error?.message ?? text.slice(0, 500);
        return { line: JSON.stringify(errorLine(o.jobUid, req.custom_id, `http_${res.status}`, msg)), tokens: 0, outputTokens: 0 };
      }
    } catch (e) {
      if (signal.aborted) throw new Error('cancelled');
      last = (e as Error).message;
    }
    await sleep(200 * 2 ** attempt, signal);
  }
  throw new EngineDown(`the engine at ${engine} failed record ${index} (${req.custom_id}) five times: ${last}`);
}

/**
 * The first size was chosen before the engine was up. Once, with the engine's KV cache read and a sample of this
 * shard's prompts counted by its tokenizer, the start is chosen again (live-batch.ts startFromEngine).
 */
async function restartFromEngine(w: Worker, sizer: LiveBatchSize, r: Running): Promise<void> {
  const { o, engine } = w;
  const { a, abort } = r;
  const read = await w.kv.scrape(abort.signal);
  // An idle llama-server's /metrics cannot give its cache's size (tokens in use ÷ use); its /props can.
  const props =
    o.runtime === undefined || read === undefined || read.capacityTokens !== undefined ? undefined : await engineCapacity(o.runtime.name, engine, abort.signal);
  const k =
    read === undefined || props === undefined
      ? read
      : { ...read, capacityTokens: props.capacityTokens, freeTokens: Math.floor(props.capacityTokens * read.freeFraction) };
  const sample = Array.from({ length: Math.min(START_SAMPLE, r.end - a.start) }, (_, i) => w.requests[a.start + i] as BatchRequestLine);
  const counted =
    k === undefined
      ? []
      : await Promise.all(
          sample.map((q) => w.countPrompt(q.body as Record<string, unknown>, q.url.endsWith('/chat/completions'), abort.signal).catch(() => undefined)),
        );
  const bodies = sample.map((q) => q.body as Record<string, unknown>);
  const mix =
    counted.every((c) => c !== undefined && !c.estimated) && counted.length > 0
      ? { promptTokens: counted.map((c) => (c as PromptCount).tokens), outputTokens: tokenMixOf(bodies).outputTokens }
      : undefined;
  // Only an engine that caches prefixes across requests holds a shared prefix once.
  const shared = o.runtime?.sharesPrefixKv === true ? sharedPrefixFraction(bodies) : 0;
  const line = sizer.startFromEngine(k, mix, shared, props?.slots);
  if (line !== undefined) w.log(line);
}

/**
 * The stage pipeline (ADR 0167): tokenise in this container (CPU) with the engine's own tokenizer, infer on the
 * engine (the pod's accelerator), post-process here (CPU: `write`), with bounded queues between them.
 */
function attemptStages(w: Worker, signal: AbortSignal, slots: () => number, write: (rec: StagedRecord) => Promise<void>): LiveStage<StagedRecord>[] {
  const { o, totals } = w;
  return [
    {
      name: 'tokenise',
      concurrency: () => Math.max(2, Math.ceil(slots() / 2)),
      run: async (rec) => {
        const req = w.requests[rec.i] as BatchRequestLine;
        const body = req.body as Record<string, unknown>;
        rec.prompt = await w.countPrompt(body, req.url.endsWith('/chat/completions'), signal);
        totals.promptTokens += rec.prompt.tokens;
        const limit = rec.prompt.contextLimit;
        const maxOut = maxOutputTokens(body);
        // A prompt the engine's context cannot hold is refused here, without taking an engine slot; an estimate
        // never refuses (the engine decides then).
        if (!rec.prompt.estimated && limit !== undefined && (rec.prompt.tokens >= limit || (maxOut !== undefined && rec.prompt.tokens + maxOut > limit))) {
          totals.refused++;
          const why = `the prompt has ${rec.prompt.tokens} tokens${maxOut === undefined ? '' : ` and max_tokens is ${maxOut}`}; the engine's context holds ${limit}`;
          rec.out = { line: JSON.stringify(errorLine(o.jobUid, req.custom_id, 'context_length_exceeded', why)), tokens: 0, outputTokens: 0 };
        }
        return 'next';
      },
    },
    {
      name: 'infer',
      concurrency: slots,
      run: async (rec) => {
        if (rec.out !== undefined) return 'next';
        const t0 = performance.now();
        rec.out = await callEngine(w, rec.i, signal);
        const change = w.sizing.sizer?.observe(performance.now() - t0);
        if (change !== undefined) w.log(`batch size ${change.size} (${change.source}): ${change.why}`);
        return 'next';
      },
    },
    {
      name: 'postprocess',
      concurrency: () => 1,
      run: async (rec) => {
        await write(rec);
        return 'next';
      },
    },
  ];
}

async function runAttempt(w: Worker, r: Running): Promise<void> {
  const { o, log, totals } = w;
  const { a, abort } = r;
  const startedMs = Date.now();
  const lines: (string | undefined)[] = [];
  let tokens = 0;
  let outputTokens = 0;
  // The attempt's tightest KV moment: its free fraction rides on the reports (the controller's profile).
  let kvPeak: KvReading | undefined;
  let contiguous = 0;
  let next = a.start;
  let lastReportMs = 0;
  let reported = -1;
  // The latest checkpoint (ADR 0159): its file rides on every report after it, and is reported at once.
  const ckpt = { n: 0, upTo: 0, atMs: Date.now(), file: undefined as string | undefined, reported: undefined as string | undefined };
  const kvFields = (): Pick<WorkerReport, 'kvFree' | 'kvCapacityTokens'> =>
    kvPeak === undefined ? {} : { kvFree: kvPeak.freeFraction, ...(kvPeak.capacityTokens === undefined ? {} : { kvCapacityTokens: kvPeak.capacityTokens }) };
  const base = (): Omit<WorkerReport, 'done' | 'tokens' | 'state'> => ({
    attempt: a.attempt,
    start: a.start,
    end: a.end,
    startedMs,
    outputTokens,
    ...kvFields(),
    ...(ckpt.file === undefined ? {} : { checkpoint: ckpt.file }),
  });
  const maybeCheckpoint = (): void => {
    const every = o.checkpointEveryMs;
    const records = o.checkpointRecords;
    if ((every === undefined && records === undefined) || contiguous <= ckpt.upTo || contiguous >= r.end - a.start || abort.signal.aborted) return;
    if (!((every !== undefined && Date.now() - ckpt.atMs >= every) || (records !== undefined && contiguous - ckpt.upTo >= records))) return;
    const file = checkpointName(a.attempt, ckpt.n + 1);
    w.store.writeAtomic(file, `${(lines.slice(0, contiguous) as string[]).join('\n')}\n`);
    Object.assign(ckpt, { n: ckpt.n + 1, upTo: contiguous, atMs: Date.now(), file });
  };
  const maybeReport = async (): Promise<void> => {
    const now = Date.now();
    if (ckpt.file === ckpt.reported && (now - lastReportMs < w.reportEvery || contiguous === reported)) return;
    lastReportMs = now;
    reported = contiguous;
    ckpt.reported = ckpt.file;
    await report(w, { ...base(), done: contiguous, tokens, state: 'running', batchSize: slots() }).catch((e: Error) => log(`report: ${e.message}`));
  };
  try {
    await waitForEngine(w.engine, log, abort.signal);
  } catch (e) {
    if (!(e instanceof ModelUnavailable)) throw e;
    log(`attempt ${a.attempt}: ${e.message}`);
    await report(w, { ...base(), done: 0, tokens: 0, state: 'failed', failure: { kind: 'model', message: e.message } }).catch((err: Error) =>
      log(`report: ${err.message}`),
    );
    return;
  }
  const sizer = w.sizing.sizer;
  if (sizer !== undefined && !w.kvStarted) {
    w.kvStarted = true;
    await restartFromEngine(w, sizer, r);
  }
  const slots = (): number => Math.max(1, Math.round((sizer?.size ?? w.concurrency) * a.concurrency));
  const take = (): StagedRecord | undefined => (next < r.end && !abort.signal.aborted ? { i: next++ } : undefined);
  const stages = attemptStages(w, abort.signal, slots, async (rec) => {
    const out = rec.out as RecordOut;
    lines[rec.i - a.start] = out.line;
    tokens += out.tokens;
    outputTokens += out.outputTokens;
    while (lines[contiguous] !== undefined) contiguous++;
    maybeCheckpoint();
    await maybeReport();
  });
  // Enough tokenised records to refill every engine slot twice; results wait at most one batch for the writer.
  w.capacities = [0, Math.max(2, 2 * slots()), Math.max(2, slots())];
  const kvStop = new AbortController();
  const kvLoop = w.kv.sample(
    (k) => {
      if (kvPeak === undefined || k.usedFraction > kvPeak.usedFraction) kvPeak = k;
    },
    AbortSignal.any([abort.signal, kvStop.signal]),
  );
  const runStartMs = Date.now();
  try {
    const stats = await runStages(
      take,
      stages,
      (k) => (k === 1 ? Math.max(2, 2 * slots()) : Math.max(2, slots())),
      abort.signal,
      () => performance.now(),
      (st) => (totals.live = st),
    );
    totals.live = [];
    totals.add(stats, w.capacities);
  } catch (e) {
    totals.add(totals.live, w.capacities);
    totals.live = [];
    kvStop.abort();
    await kvLoop;
    if (abort.signal.aborted) return;
    // An engine that stops answering is the worker's device failing (the fault ladder's crash); anything else too.
    const kind = 'crash' as const;
    log(`attempt ${a.attempt} failed: ${(e as Error).message}`);
    await report(w, { ...base(), done: contiguous, tokens, state: 'failed', batchSize: slots(), failure: { kind, message: (e as Error).message } }).catch(
      (err: Error) => log(`report: ${err.message}`),
    );
    return;
  }
  kvStop.abort();
  await kvLoop;
  if (abort.signal.aborted) return;
  const n = Math.min(r.end - a.start, contiguous);
  const part = lines.slice(0, n) as string[];
  w.store.writeAtomic(a.part, part.length === 0 ? '' : `${part.join('\n')}\n`);
  await report(w, { ...base(), done: n, tokens, state: 'done', batchSize: slots(), ms: Date.now() - runStartMs });
  log(`attempt ${a.attempt} [${a.start},${a.start + n}) written to ${a.part}`);
}

export async function runBatchWorker(o: BatchWorkerOptions, stop: AbortSignal): Promise<void> {
  const log = o.log ?? (() => undefined);
  const requests = loadRequests(o.input);
  const engine = o.engine.replace(/\/+$/, '');
  // The KV readings since the last batch-size window (the sizer takes their peak at each window's end).
  const kvWindow = new KvWindow();
  const totals = new StageTotals();
  const w: Worker = {
    o,
    log,
    requests,
    store: new FsOutputStore(o.output),
    podPath: `/api/v1/namespaces/${o.namespace}/pods/${o.podName}`,
    engine,
    concurrency: Math.max(1, o.concurrency ?? 4),
    reportEvery: o.reportEveryMs ?? 2000,
    sizing: batchSizing(o, requests, kvWindow, log),
    totals,
    kv: new KvScraper(o.runtime, engine, o.kvEveryMs ?? 1000, kvWindow, log),
    countPrompt: promptCounting(o, engine, totals, log),
    capacities: [0, 0, 0],
    kvStarted: false,
  };
  const { podPath, kv } = w;
  let current: Running | undefined;
  log(
    `batch worker ${o.namespace}/${o.podName}: ${requests.length} requests in ${o.input}, engine ${engine}${kv.reason === undefined ? `, KV cache from ${o.runtime?.metricsPath ?? ''} every ${kv.everyMs} ms` : `; ${kv.reason}`}`,
  );
  while (!stop.aborted) {
    let want: WireAssignment | undefined;
    try {
      const pod = await o.client.get<{ metadata: { annotations?: Record<string, string> } }>(podPath);
      const parsed = parseAssignment(pod.metadata.annotations?.[ANNOTATION.batchAssignment]);
      if (parsed !== undefined && 'error' in parsed) {
        log(parsed.error);
        want = undefined;
      } else want = parsed;
    } catch (e) {
      log(`reading ${podPath}: ${(e as Error).message}`);
      await sleep(o.pollMs ?? 500, stop);
      continue;
    }
    if (current !== undefined && (want === undefined || want.attempt !== current.a.attempt)) {
      // Cancelled or replaced: drop it, write nothing for it.
      current.abort.abort();
      await current.done;
      current = undefined;
    }
    if (current !== undefined && want !== undefined && want.end < current.end) current.end = Math.max(want.start, want.end);
    if (current === undefined && want !== undefined) {
      const r: Running = { a: want, end: want.end, abort: new AbortController() };
      const id = want.attempt;
      r.done = runAttempt(w, r).catch((e: Error) => log(`attempt ${id}: ${e.message}`));
      current = r;
    }
    await sleep(o.pollMs ?? 500, stop);
  }
  current?.abort.abort();
  await current?.done;
  w.sizing.plugins?.close();
}
