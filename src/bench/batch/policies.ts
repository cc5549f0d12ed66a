/**
 * The three ways of running one offline job that `sits bench batch` compares, on W engines of the same model:
 *  - static: the KServe batcher's defaults (maxBatchSize 32, maxLatency 5000 ms): a batch of 32 goes to the
 *    engine and all 32 answers come back when its longest request finishes; a short last batch waits maxLatency;
 *  - fixed: Ray Data LLM's defaults (batch_size 32, max_concurrent_batches 8): 8 batches of 32 in flight per
 *    engine, a new batch when a whole batch is done, each answer as it finishes;
 *  - sits: the coordinator (shards, exactly-once commits, fault ladder, long-tail breaker) handing shards to the
 *    workers, each keeping its dynamic batch size of sequences in flight (start size from memory, the token mix
 *    and the engine model; AIMD on the observed p99 against the SLA), refilled one record at a time.
 * The static split for static and fixed is contiguous record ranges of equal size, as a Kubernetes Indexed Job
 * would give them. Everything is deterministic.
 */
import type { EngineModel } from '../../serving/engine-model.ts';
import type { Assignment, WorkerInfo } from '../../controllers/batch-inference/coordinator.ts';
import { BatchCoordinator, OUTPUT, deriveShardRecords } from '../../controllers/batch-inference/coordinator.ts';
import { aimdConfig, aimdStep, initialBatchSize, kvCapacityTokens } from '../../controllers/batch-inference/batch-size.ts';
import type { PluginCaller, PluginTally } from '../../controllers/batch-inference/wasm-plugin.ts';
import { batchSizeInputs, decideBatchSize, tally } from '../../controllers/batch-inference/wasm-plugin.ts';
import type { FailureKind } from '../../controllers/batch-inference/fault-ladder.ts';
import { DEFAULT_LADDER } from '../../controllers/batch-inference/fault-ladder.ts';
import { DEFAULT_LONG_TAIL } from '../../controllers/batch-inference/long-tail.ts';
import type { RecordInfo } from '../../controllers/batch-inference/openai-batch.ts';
import { outputCustomId } from '../../controllers/batch-inference/openai-batch.ts';
import { MemoryOutputStore } from '../../controllers/batch-inference/output-store.ts';
import { partLines } from '../../controllers/batch-inference/part-writer.ts';
import { MemoryQuarantine } from '../../controllers/batch-inference/quarantine.ts';
import { percentile } from '../../core/stats.ts';
import type { EngineRequest, Finished } from './engine-sim.ts';
import { EngineSim } from './engine-sim.ts';

export interface RunResult {
  readonly makespanMs: number;
  readonly latenciesMs: readonly number[];
  /** Tokens of the job (prompt + output of every record once). */
  readonly jobTokens: number;
  /** Tokens the engines processed (more than jobTokens when work was redone). */
  readonly engineTokens: number;
  readonly gpus: number;
}

const jobTokens = (reqs: readonly EngineRequest[]): number => reqs.reduce((a, r) => a + r.promptTokens + r.outputTokens, 0);

function evenSplit(n: number, w: number): { start: number; end: number }[] {
  return Array.from({ length: w }, (_, i) => ({ start: Math.floor((n * i) / w), end: Math.floor((n * (i + 1)) / w) }));
}

export const KSERVE_BATCHER = { maxBatchSize: 32, maxLatencyMs: 5000 };

export function runStatic(m: EngineModel, reqs: readonly EngineRequest[], gpus: number, o = KSERVE_BATCHER): RunResult {
  const lat: number[] = [];
  let makespan = 0;
  let engineTokens = 0;
  for (const part of evenSplit(reqs.length, gpus)) {
    const e = new EngineSim(m);
    for (let s = part.start; s < part.end; s += o.maxBatchSize) {
      const batch = reqs.slice(s, Math.min(part.end, s + o.maxBatchSize));
      if (batch.length < o.maxBatchSize) e.idleUntil(e.nowMs + o.maxLatencyMs); // the batcher waits for a full batch
      const start = e.nowMs;
      for (const r of batch) e.submit(r);
      while (e.step() !== undefined);
      for (let i = 0; i < batch.length; i++) lat.push(e.nowMs - start);
    }
    makespan = Math.max(makespan, e.nowMs);
    engineTokens += e.tokens;
  }
  return { makespanMs: makespan, latenciesMs: lat, jobTokens: jobTokens(reqs), engineTokens, gpus };
}

export const RAY_DATA = { batchSize: 32, maxConcurrentBatches: 8 };

export function runFixed(m: EngineModel, reqs: readonly EngineRequest[], gpus: number, o = RAY_DATA): RunResult {
  const lat: number[] = [];
  let makespan = 0;
  let engineTokens = 0;
  for (const part of evenSplit(reqs.length, gpus)) {
    const e = new EngineSim(m);
    let next = part.start;
    const left = new Map<number, number>();
    let tag = 0;
    const submitBatch = (): void => {
      const end = Math.min(part.end, next + o.batchSize);
      tag++;
      left.set(tag, end - next);
      for (; next < end; next++) e.submit(reqs[next] as EngineRequest, tag);
    };
    while (left.size < o.maxConcurrentBatches && next < part.end) submitBatch();
    for (let done = e.step(); done !== undefined; done = e.step()) {
      for (const f of done) {
        lat.push(f.doneMs - f.submitMs);
        const l = (left.get(f.tag) ?? 0) - 1;
        if (l === 0) left.delete(f.tag);
        else left.set(f.tag, l);
      }
      while (left.size < o.maxConcurrentBatches && next < part.end) submitBatch();
    }
    makespan = Math.max(makespan, e.nowMs);
    engineTokens += e.tokens;
  }
  return { makespanMs: makespan, latenciesMs: lat, jobTokens: jobTokens(reqs), engineTokens, gpus };
}

/** Faults injected into the SITS run. */
export interface FaultPlan {
  /** Workers whose device breaks at this time: every attempt on it fails after failAfterMs of running. */
  readonly brokenDevices?: readonly { readonly worker: number; readonly fromMs: number; readonly kind: FailureKind; readonly failAfterMs: number }[];
  /** Workers slower than the model (a throttled GPU) from fromMs until untilMs. */
  readonly stragglers?: readonly { readonly worker: number; readonly speed: number; readonly fromMs: number; readonly untilMs: number }[];
  /** Workers killed at this time; they come back after the engine's start-up time. */
  readonly kills?: readonly { readonly worker: number; readonly atMs: number }[];
  /** Coordinator restarts: a new coordinator from the output volume; running workers re-register their attempts. */
  readonly coordinatorRestartsMs?: readonly number[];
}

export interface SitsOptions {
  readonly slaP99Ms: number;
  readonly kvHitRate: number;
  readonly faults?: FaultPlan;
  /** AIMD window: requests finished on a worker between adjustments (default 128). */
  readonly windowRequests?: number;
  /** A WASM batch-size plugin deciding the start size and each window's adjustment instead of the built-in. */
  readonly batchPlugin?: PluginCaller;
  /** Commit each attempt's finished prefix this often (default 10 s; 0: only whole attempts). */
  readonly checkpointMs?: number;
}

export interface SitsResult extends RunResult {
  /** GPU time the engines were busy, at the model's speed (the work done; a straggler's slowness not counted). */
  readonly busyGpuMs: number;
  readonly recordsLost: number;
  readonly recordsDuplicated: number;
  readonly outputState: string;
  readonly batchSizes: readonly number[];
  readonly initialBatch: number;
  readonly events: readonly string[];
  readonly quarantined: readonly string[];
  /** With a batch plugin: its decisions and the built-in's fallbacks. */
  readonly pluginTally?: PluginTally;
}

interface Live {
  readonly a: Assignment;
  readonly tag: number;
  readonly startMs: number;
  next: number;
  end: number;
  readonly done: Set<number>;
  failAtMs?: number;
  /** The last checkpoint: when, how many records from the start it committed, and how many there were. */
  checkpoint: { atMs: number; upTo: number; n: number };
}

interface Worker {
  readonly i: number;
  readonly info: WorkerInfo;
  readonly e: EngineSim;
  live: Live[];
  size: number;
  window: number[];
  /** engine busyMs and modelMs when the window began: the window's observed slowdown. */
  windowFrom: { busyMs: number; modelMs: number };
  downUntil: number;
}

export function speedAt(f: FaultPlan, worker: number, nowMs: number): number {
  const s = f.stragglers?.find((x) => x.worker === worker && nowMs >= x.fromMs && nowMs < x.untilMs);
  return s?.speed ?? 1;
}

/**
 * The best makespan any scheduler could reach under `f`: the fault-free job's GPU time spread over the capacity
 * left (stragglers at their speed, killed workers down for the engine start-up, a broken device gone for the
 * quarantine). SITS's makespan with faults is judged against this as well as against the fault-free one.
 * `needGpuMs` is the fault-free run's busy GPU time (its work); unset, gpus × faultFreeMs, which also counts the
 * fault-free run's idle tail as work. Approximate either way: the batch sizes AIMD picks under faults differ, and
 * with them the work (a few per cent either side).
 */
export function capacityBoundMs(f: FaultPlan, gpus: number, faultFreeMs: number, startupMs: number, quarantineMs: number, needGpuMs?: number): number {
  const need = needGpuMs ?? gpus * faultFreeMs;
  const dt = 100;
  let got = 0;
  let t = 0;
  for (; got < need && t < 100 * faultFreeMs; t += dt) {
    for (let w = 0; w < gpus; w++) {
      const down = (f.kills ?? []).some((k) => k.worker === w && t >= k.atMs && t < k.atMs + startupMs) || (f.brokenDevices ?? []).some((b) => b.worker === w && t >= b.fromMs && t < b.fromMs + quarantineMs);
      if (!down) got += dt * speedAt(f, w, t);
    }
  }
  return t;
}

/** The SITS run: the real coordinator over a memory output volume, workers on the engine model. */
export function runSits(m: EngineModel, reqs: readonly EngineRequest[], gpus: number, o: SitsOptions): SitsResult {
  const records: RecordInfo[] = reqs.map((r) => ({ customId: `req-${r.index}`, promptTokens: r.promptTokens, maxOutputTokens: r.outputTokens }));
  const store = new MemoryOutputStore();
  const quarantine = new MemoryQuarantine();
  const cfg = { jobUid: 'bench', records, shardRecords: deriveShardRecords(records.length, gpus), ladder: DEFAULT_LADDER, longTail: DEFAULT_LONG_TAIL, quarantine };
  let c = BatchCoordinator.open(store, cfg, 0);
  const mix = { promptTokens: reqs.map((r) => r.promptTokens), outputTokens: reqs.map((r) => r.outputTokens) };
  const bounds = { min: 1, max: m.maxNumSeqs };
  const builtinInit = initialBatchSize(m, undefined, mix, o.kvHitRate, bounds, o.slaP99Ms);
  const aimd = aimdConfig(builtinInit.size, bounds, o.slaP99Ms, 0.98);
  // A batch plugin decides where the built-in would; a decision it fails is the built-in's (decideBatchSize).
  const plugin = o.batchPlugin;
  const pluginBase = plugin === undefined ? undefined : batchSizeInputs(kvCapacityTokens(m, undefined), mix, o.kvHitRate, bounds, o.slaP99Ms);
  const decisions = new PluginDecisions(plugin, pluginBase);
  const decide = (current: number, observed: { p99Ms: number; memoryFraction: number } | undefined, builtin: number): number => decisions.decide(current, observed, builtin);
  const init = { size: decide(0, undefined, builtinInit.size) };
  // The p99 of fewer than 100 samples is their maximum: a window of 128 is the smallest whose p99 is a p99.
  const windowN = o.windowRequests ?? 128;
  const f = o.faults ?? {};
  const workers: Worker[] = Array.from({ length: gpus }, (_, i) => newWorker(m, i, init.size));
  for (const w of workers) c.register(w.info);
  const lat: number[] = [];
  const sizes: number[] = [];
  let tagSeq = 0;
  const kills = [...(f.kills ?? [])].sort((a, b) => a.atMs - b.atMs);
  const restarts = [...(f.coordinatorRestartsMs ?? [])].sort((a, b) => a - b);
  let nextTick = 1000;
  /** Global simulated time: the last event or step processed. */
  let clock = 0;
  let doneAtMs = 0;
  const events: string[] = [];

  const broken = (w: Worker, now: number) => f.brokenDevices?.find((b) => b.worker === w.i && now >= b.fromMs);
  const submitted = (w: Worker) => w.live.reduce((s, l) => s + (l.next - l.a.range.start) - l.done.size, 0);

  const refill = (w: Worker): void => {
    if (w.e.nowMs < w.downUntil) return;
    const target = Math.max(1, Math.floor(w.size * Math.min(1, ...w.live.map((l) => l.a.concurrencyFactor), 1)));
    w.e.maxSeqs = target;
    while (submitted(w) < target) {
      let l = w.live.find((x) => x.next < x.end);
      if (l === undefined) {
        const a = c.assign(w.info, w.e.nowMs);
        if (a === undefined) return;
        const br = broken(w, w.e.nowMs);
        l = { a, tag: ++tagSeq, startMs: w.e.nowMs, next: a.range.start, end: a.range.end, done: new Set(), checkpoint: { atMs: w.e.nowMs, upTo: 0, n: 0 }, ...(br === undefined ? {} : { failAtMs: w.e.nowMs + br.failAfterMs }) };
        w.live.push(l);
      }
      w.e.submit(reqs[l.next] as EngineRequest, l.tag);
      l.next++;
    }
  };

  const finishAttempt = (w: Worker, l: Live): void => {
    const upTo = l.end - l.a.range.start;
    const lines = partLines(cfg.jobUid, records, l.a, { upTo });
    store.writeAtomic(l.a.part, lines.length === 0 ? '' : `${lines.join('\n')}\n`);
    const r = c.complete(l.a.attemptId, w.e.nowMs);
    if (c.done && doneAtMs === 0) doneAtMs = w.e.nowMs;
    w.live = w.live.filter((x) => x !== l);
    if (r.kind !== 'failed') cancel(r.cancel);
  };

  // The finished prefix is committed every checkpointMs, so a killed worker loses seconds of work, not a shard.
  const checkpointMs = o.checkpointMs ?? 10_000;
  const checkpoint = (l: Live, upTo: number, nowMs: number): void => {
    const n = l.checkpoint.n + 1;
    const file = `parts/${l.a.attemptId}.c${n}.jsonl`;
    store.writeAtomic(file, `${partLines(cfg.jobUid, records, l.a, { upTo }).join('\n')}\n`);
    l.checkpoint = { atMs: nowMs, upTo, n };
    const r = c.checkpoint(l.a.attemptId, file);
    if (r.kind !== 'failed') cancel(r.cancel);
    if (c.done && doneAtMs === 0) doneAtMs = nowMs;
  };

  const cancel = (ids: readonly string[]): void => {
    for (const w of workers)
      for (const l of [...w.live])
        if (ids.includes(l.a.attemptId)) {
          w.e.drop(l.tag);
          w.live = w.live.filter((x) => x !== l);
        }
  };

  const onFinished = (w: Worker, done: readonly Finished[]): void => {
    for (const d of done) {
      const l = w.live.find((x) => x.tag === d.tag);
      if (l === undefined) continue;
      lat.push(d.doneMs - d.submitMs);
      w.window.push(d.doneMs - d.submitMs);
      l.done.add(d.req.index);
      const contiguous = contiguousDone(l);
      c.progress(l.a.attemptId, contiguous, 0);
      if (l.done.size === l.end - l.a.range.start && l.next >= l.end) finishAttempt(w, l);
      else if (checkpointMs > 0 && d.doneMs - l.checkpoint.atMs >= checkpointMs && contiguous > l.checkpoint.upTo) checkpoint(l, contiguous, d.doneMs);
    }
    if (w.window.length >= windowN) {
      const { observed, slowdown } = windowObservation(w);
      w.size = decide(w.size, observed, aimdStep(w.size, { ...observed, slowdown }, aimd).size);
      sizes.push(w.size);
      w.window = [];
      w.windowFrom = { busyMs: w.e.busyMs, modelMs: w.e.modelMs };
    }
  };

  for (let guard = 0; !c.done && guard < 50_000_000; guard++) {
    // A worker whose clock is ahead with nothing running (killed, waiting for its engine to start) must not take
    // shards before its time comes.
    for (const w of workers) if (w.e.inFlight > 0 || w.live.length > 0 || w.e.nowMs <= clock) refill(w);
    const active = workers.filter((w) => w.e.inFlight > 0 && w.e.nowMs >= w.downUntil);
    // Nothing running: jump to the next tick or the next worker coming back, whichever is first (always forward).
    const now = active.length === 0 ? Math.min(nextTick, ...workers.map((w) => Math.max(w.e.nowMs, w.downUntil)).filter((t) => t > clock)) : Math.min(...active.map((w) => w.e.nowMs));
    clock = Math.max(clock, now);
    // Events due by now: kills, coordinator restarts, the coordinator's tick.
    if (kills.length > 0 && (kills[0]?.atMs ?? Infinity) <= now) {
      const k = kills.shift() as { worker: number; atMs: number };
      killWorker(c, workers[k.worker] as Worker, k.atMs + m.startupSec * 1000);
      continue;
    }
    if (restarts.length > 0 && (restarts[0] ?? Infinity) <= now) {
      restarts.shift();
      events.push(...c.events);
      c = BatchCoordinator.open(store, cfg, now);
      adoptAll(c, workers);
      continue;
    }
    if (now >= nextTick) {
      // Idle: up (a killed worker is down until its engine is back), nothing in flight, device not quarantined.
      const idle = workers.filter((w) => w.e.inFlight === 0 && now >= w.downUntil && !quarantine.isQuarantined(w.info.device, now)).length;
      applyCuts(workers, c.tick(now, idle));
      for (const w of workers) if (w.e.inFlight === 0) w.e.idleUntil(now);
      nextTick = now + 1000;
      continue;
    }
    if (active.length === 0) {
      for (const w of workers) w.e.idleUntil(now);
      continue;
    }
    const w = active.find((x) => x.e.nowMs === now) as Worker;
    w.e.speed = speedAt(f, w.i, now);
    const done = w.e.step() ?? [];
    onFinished(w, done);
    failDue(c, w, broken(w, w.e.nowMs));
    // An attempt whose records were all admitted and finished may have been cut below what it had in flight.
    for (const l of [...w.live]) if (l.next >= l.end && [...l.done].filter((x) => x < l.end).length === l.end - l.a.range.start) finishAttempt(w, l);
  }
  const makespan = doneAtMs;
  events.push(...c.events);
  const fin = c.finish(c.done ? undefined : 'simulation stopped');
  const { lost, dup } = auditOutput(store.read(OUTPUT) ?? '', records);
  return {
    makespanMs: makespan,
    latenciesMs: lat,
    jobTokens: jobTokens(reqs),
    engineTokens: workers.reduce((a, w) => a + w.e.tokens, 0),
    busyGpuMs: workers.reduce((a, w) => a + w.e.modelMs, 0),
    gpus,
    recordsLost: lost,
    recordsDuplicated: dup,
    outputState: fin.state,
    batchSizes: sizes,
    initialBatch: init.size,
    events,
    quarantined: quarantine.active(makespan).map((q) => `${q.device}: ${q.reason}`),
    ...(plugin === undefined ? {} : { pluginTally: decisions.tally }),
  };
}

function newWorker(m: EngineModel, i: number, size: number): Worker {
  const e = new EngineSim(m);
  return { i, info: { id: `w${i}`, device: `node-${i}/0`, cpu: false, allowsReducedClock: true }, e, live: [], size, window: [], windowFrom: { busyMs: 0, modelMs: 0 }, downUntil: 0 };
}

/** Records of an attempt finished without a gap from its start (what a checkpoint or progress report covers). */
function contiguousDone(l: Live): number {
  let contiguous = 0;
  while (l.done.has(l.a.range.start + contiguous)) contiguous++;
  return contiguous;
}

/** A worker's full latency window: its p99 and KV use for the batch-size decision, and the engine's slowdown over it. */
function windowObservation(w: Worker): { observed: { p99Ms: number; memoryFraction: number }; slowdown: number } {
  const p99 = percentile(w.window, 99) ?? 0;
  const modelled = w.e.modelMs - w.windowFrom.modelMs;
  const slowdown = modelled > 0 ? (w.e.busyMs - w.windowFrom.busyMs) / modelled : 1;
  return { observed: { p99Ms: p99, memoryFraction: w.e.kvFraction }, slowdown };
}

/** A worker killed: its engine loses everything, the coordinator its attempts; it registers again, down until `downUntil`. */
function killWorker(c: BatchCoordinator, w: Worker, downUntil: number): void {
  w.e.clear();
  w.live = [];
  c.lost(w.info.id);
  w.downUntil = downUntil;
  w.e.idleUntil(w.downUntil);
  c.register(w.info);
}

/** After a coordinator restart: every worker registers again and offers its running attempts; those refused are dropped. */
function adoptAll(c: BatchCoordinator, workers: readonly Worker[]): void {
  for (const w of workers) {
    c.register(w.info);
    for (const l of [...w.live]) {
      if (c.adopt(l.a.attemptId, { start: l.a.range.start, end: l.end }, w.info, l.startMs, contiguousDone(l)) === 'cancel') {
        w.e.drop(l.tag);
        w.live = w.live.filter((x) => x !== l);
      }
    }
  }
}

/** The long-tail cuts of a tick: an attempt ends at the cut, but records already in the engine finish. */
function applyCuts(workers: readonly Worker[], cuts: readonly { readonly attemptId: string; readonly cut: number }[]): void {
  for (const cut of cuts)
    for (const w of workers)
      for (const l of w.live)
        if (l.a.attemptId === cut.attemptId) l.end = Math.max(cut.cut, l.next);
}

/** Attempts on a broken device whose failure time has come fail with the device's fault kind. */
function failDue(c: BatchCoordinator, w: Worker, br: NonNullable<FaultPlan['brokenDevices']>[number] | undefined): void {
  for (const l of [...w.live]) {
    if (l.failAtMs === undefined || w.e.nowMs < l.failAtMs) continue;
    w.e.drop(l.tag);
    w.live = w.live.filter((x) => x !== l);
    c.fail(l.a.attemptId, { kind: br?.kind ?? 'crash', message: 'injected device fault', device: w.info.device }, w.e.nowMs);
  }
}

/** Records missing from the output and extra copies of records in it (exactly once: both 0). */
function auditOutput(output: string, records: readonly RecordInfo[]): { lost: number; dup: number } {
  const ids = output.split('\n').filter((x) => x !== '').map((x) => outputCustomId(x) as string);
  const count = new Map<string, number>();
  for (const id of ids) count.set(id, (count.get(id) ?? 0) + 1);
  const lost = records.filter((r) => !count.has(r.customId)).length;
  const dup = [...count.values()].reduce((a, n) => a + Math.max(0, n - 1), 0);
  return { lost, dup };
}

/** A batch plugin deciding where the built-in would, and the tally of whose decisions were used; without a plugin, the built-in's. */
class PluginDecisions {
  tally: PluginTally = { plugin: 0, builtin: 0 };

  constructor(
    private readonly plugin: PluginCaller | undefined,
    private readonly base: ReturnType<typeof batchSizeInputs> | undefined,
  ) {}

  decide(current: number, observed: { p99Ms: number; memoryFraction: number } | undefined, builtin: number): number {
    if (this.plugin === undefined || this.base === undefined) return builtin;
    const inputs = observed === undefined ? this.base : { ...this.base, current, observedP99Ms: observed.p99Ms, memoryFraction: observed.memoryFraction };
    const d = decideBatchSize(this.plugin, inputs, builtin);
    this.tally = tally(this.tally, d.source, d.reason);
    return d.value;
  }
}
