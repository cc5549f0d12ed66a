/**
 * An event-driven simulation of one InferenceService on vLLM-like replicas (continuous batching with chunked
 * prefill, KV-cache admission) under an autoscaler, replaying a request trace. Deterministic for a seed (the seed
 * only jitters replica start-up); fast because a run of decode-only steps is one event (the step durations of a
 * fixed batch form an arithmetic series, engine-model.ts) cut at the next arrival or observation.
 *
 * A replica's lifetime: granted its GPUs (GPU time starts) → loading for the engine's start-up time → ready →
 * draining (no new requests) → released when empty (GPU time ends). Requests go to the ready replica that will
 * start them soonest; with none ready they wait for one. An optional GPU pool (sharing.ts) decides when GPUs are
 * granted and takes them back.
 */
import { seededRng, type Rng } from '../../core/ports.ts';
import type { Autoscaler, ServiceObservation } from '../autoscale/policy.ts';
import { decodeRunSeconds, stepSeconds, type EngineModel } from '../engine-model.ts';
import type { TraceRequest } from './trace.ts';

/** Fine log-spaced buckets for latency samples too many to keep (inter-token latencies). */
export class LatencyHistogram {
  private readonly counts = new Float64Array(2000);
  total = 0;
  // Bucket i covers [1e-4 · 1.01^i, 1e-4 · 1.01^(i+1)) seconds: 1 % resolution from 0.1 ms to ~44 s.
  add(seconds: number, weight: number): void {
    if (weight <= 0) return;
    const i = Math.min(this.counts.length - 1, Math.max(0, Math.floor(Math.log(Math.max(seconds, 1e-4) / 1e-4) / Math.log(1.01))));
    this.counts[i] = (this.counts[i] as number) + weight;
    this.total += weight;
  }
  /** The upper edge of the bucket holding quantile q (a bound within 1 %), 0 when empty. */
  quantile(q: number): number {
    if (this.total === 0) return 0;
    const rank = q * this.total;
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i] as number;
      if (seen >= rank) return 1e-4 * 1.01 ** (i + 1);
    }
    return 1e-4 * 1.01 ** this.counts.length;
  }
}

/** Grants GPUs to replicas and takes them back; the default is an unbounded cluster that grants at once. */
export interface GpuPool {
  /** Asks for one replica's GPUs at `nowSec`; returns when they are granted (≥ now), or undefined when none ever will be. */
  request(nowSec: number, gpus: number): number | undefined;
  /** A replica released its GPUs. */
  release(nowSec: number, gpus: number): void;
  /** Cancels a request not granted yet (the autoscaler changed its mind). */
  cancel(nowSec: number, gpus: number, grantAtSec: number): void;
  /** The simulation is over: account up to `endSec`. */
  finish(endSec: number): void;
}

export const UNBOUNDED_POOL: GpuPool = { request: (now) => now, release: () => undefined, cancel: () => undefined, finish: () => undefined };

export interface SimOptions {
  readonly engine: EngineModel;
  readonly policy: Autoscaler;
  readonly initialReplicas: number;
  readonly sloTtftSec: number;
  readonly seed: number;
  /** Requests arriving from here on are reported, and GPU time is counted from here (the tuning split). */
  readonly reportFromSec?: number;
  /** GPU time is counted until here (default: the last arrival). */
  readonly reportToSec?: number;
  readonly pool?: GpuPool;
  /** How often the autoscaler observes the service (the controller's scrape interval), seconds. */
  readonly observeEverySec?: number;
  /** The TTFT p99 an observation carries is over first tokens of this window, seconds. */
  readonly ttftWindowSec?: number;
}

export interface SimResult {
  readonly requests: number;
  readonly sloAttainmentPct: number;
  readonly gpuHours: number;
  readonly ttftSec: { readonly p50: number; readonly p99: number };
  readonly itlSec: { readonly p99: number };
  readonly maxReplicas: number;
  /** (time, replicas holding GPUs) whenever it changed. */
  readonly replicaTimeline: readonly (readonly [number, number])[];
  /** Every request's TTFT in trace order (all requests, reported or not; Infinity when it never got a token). */
  readonly ttftPerRequestSec: Float64Array;
}

interface Seq {
  readonly req: TraceRequest;
  readonly index: number;
  prefillLeft: number;
  context: number;
  decodeLeft: number;
  firstTokenAt?: number;
}

interface Replica {
  readonly id: number;
  state: 'waiting-gpu' | 'starting' | 'ready' | 'draining';
  grantAt: number;
  readyAt: number;
  queue: Seq[];
  /** Admitted: prefilling (prefillLeft > 0) or decoding. */
  batch: Seq[];
  kvUsed: number;
  stepEnd: number;
  /** What the step in flight does, applied when it ends. */
  step: { readonly decodes: Seq[]; readonly steps: number; readonly chunks: readonly (readonly [Seq, number])[]; readonly start: number } | undefined;
}

const NEVER = Number.POSITIVE_INFINITY;

export function simulateService(trace: readonly TraceRequest[], o: SimOptions): SimResult {
  const m = o.engine;
  const rng: Rng = seededRng(o.seed);
  const pool = o.pool ?? UNBOUNDED_POOL;
  const reportFrom = o.reportFromSec ?? 0;
  const reportTo = o.reportToSec ?? trace.at(-1)?.arrivalSec ?? 0;
  const observeEvery = o.observeEverySec ?? 1;
  const ttftWindow = o.ttftWindowSec ?? 30;
  const replicas: Replica[] = [];
  const pending: Seq[] = [];
  const ttft = new Float64Array(trace.length).fill(Number.NaN);
  const itl = new LatencyHistogram();
  const recentFirstTokens: { t: number; v: number }[] = [];
  let nextId = 0;
  let gpuSeconds = 0;
  let desired = o.initialReplicas;
  let promptDone = 0;
  let generated = 0;
  let lastObs = { t: 0, prompt: 0, generated: 0, arrivals: 0, arrivedPrompt: 0 };
  let arrivals = 0;
  let arrivedPrompt = 0;
  const timeline: [number, number][] = [];
  let maxHeld = 0;

  const held = (): number => replicas.filter((r) => r.state !== 'waiting-gpu').length;
  const countGpu = (from: number, to: number): void => {
    const a = Math.max(from, reportFrom);
    const b = Math.min(to, reportTo);
    if (b > a) gpuSeconds += (b - a) * m.gpusPerReplica;
  };
  const noteTimeline = (t: number): void => {
    const h = held();
    maxHeld = Math.max(maxHeld, h);
    if (timeline.at(-1)?.[1] !== h) timeline.push([t, h]);
  };

  const startReplica = (now: number): void => {
    const grant = pool.request(now, m.gpusPerReplica);
    if (grant === undefined) return;
    // ±10 % start-up jitter (image cache, weight loading): the only use of the seed.
    const startup = m.startupSec * (0.9 + 0.2 * rng.next());
    replicas.push(newReplica(nextId++, grant <= now ? 'starting' : 'waiting-gpu', grant, grant + startup));
  };
  const release = (r: Replica, now: number): void => {
    replicas.splice(replicas.indexOf(r), 1);
    if (r.state === 'waiting-gpu') pool.cancel(now, m.gpusPerReplica, r.grantAt);
    else {
      countGpu(r.grantAt, now);
      pool.release(now, m.gpusPerReplica);
    }
  };

  const route = (s: Seq, now: number): void => {
    const best = soonestFree(replicas, now, m);
    if (best === undefined) pending.push(s);
    else {
      best.queue.push(s);
      if (best.stepEnd === NEVER) planStep(best, now, NEVER, m);
    }
  };

  const finishStep = (r: Replica, now: number): void => {
    const done = completeStep(r, now, m, reportFrom, { itl, ttft, recentFirstTokens });
    promptDone += done.prompt;
    generated += done.generated;
  };

  const observe = (now: number): ServiceObservation => {
    const { waiting, running, kv, ready, starting } = replicaCounts(replicas, pending.length, m.kvCapacityTokens);
    const dt = Math.max(1e-9, now - lastObs.t);
    while (recentFirstTokens.length > 0 && (recentFirstTokens[0] as { t: number }).t < now - ttftWindow) recentFirstTokens.shift();
    const vs = recentFirstTokens.map((x) => x.v).sort((a, b) => a - b);
    const dArr = arrivals - lastObs.arrivals;
    const obs: ServiceObservation = {
      nowSec: now,
      readyReplicas: ready,
      startingReplicas: starting,
      desiredReplicas: desired,
      waiting,
      running,
      kvCacheUsage: ready > 0 ? kv / ready : 0,
      promptTokensPerSec: (promptDone - lastObs.prompt) / dt,
      generatedTokensPerSec: (generated - lastObs.generated) / dt,
      meanPromptTokens: dArr > 0 ? (arrivedPrompt - lastObs.arrivedPrompt) / dArr : 2000,
      ...(vs.length > 0 ? { ttftP99Sec: vs[Math.min(vs.length - 1, Math.ceil(0.99 * vs.length) - 1)] as number } : {}),
    };
    lastObs = { t: now, prompt: promptDone, generated, arrivals, arrivedPrompt };
    return obs;
  };

  /** Brings the replicas holding or awaiting GPUs (not draining) to `want`. */
  const scaleTo = (want: number, now: number): void => {
    scaleReplicas(replicas, want, now, { start: startReplica, release, route });
    noteTimeline(now);
  };

  // --- the event loop ---
  replicas.push(...initialReplicas(pool, m, o.initialReplicas));
  nextId = replicas.length;
  noteTimeline(0);
  let nextArrival = 0;
  let nextObserve = observeEvery;
  let now = 0;
  const lastArrival = trace.at(-1)?.arrivalSec ?? 0;
  for (;;) {
    const arrivalAt = nextArrival < trace.length ? (trace[nextArrival] as TraceRequest).arrivalSec : NEVER;
    const { t, which, kind } = nextEvent(replicas, arrivalAt, nextObserve);
    const busy = pending.length > 0 || replicas.some((r) => r.batch.length > 0 || r.queue.length > 0);
    if (nextArrival >= trace.length && !busy && t > lastArrival) break;
    if (t === NEVER) break;
    now = t;
    const horizon = (): number => Math.min(nextArrival < trace.length ? (trace[nextArrival] as TraceRequest).arrivalSec : NEVER, nextObserve);
    if (kind === 'arrival') {
      const req = trace[nextArrival] as TraceRequest;
      const s: Seq = { req, index: nextArrival, prefillLeft: req.promptTokens, context: 0, decodeLeft: 0 };
      nextArrival++;
      arrivals++;
      arrivedPrompt += req.promptTokens;
      route(s, now);
    } else if (kind === 'observe') {
      nextObserve += observeEvery;
      const want = o.policy.decide(observe(now));
      desired = want;
      scaleTo(want, now);
    } else if (kind === 'grant' && which !== undefined) {
      which.state = 'starting';
      noteTimeline(now);
    } else if (kind === 'ready' && which !== undefined) {
      which.state = 'ready';
      const waiting = pending.splice(0);
      for (const s of waiting) route(s, now);
    } else if (kind === 'step' && which !== undefined) {
      finishStep(which, now);
      if (which.state === 'draining' && which.batch.length === 0 && which.queue.length === 0) {
        release(which, now);
        noteTimeline(now);
      } else planStep(which, now, horizon(), m);
    }
    // Idle replicas with work (a new arrival, a finished step) start their next step.
    for (const r of replicas)
      if (r.stepEnd === NEVER && (r.state === 'ready' || r.state === 'draining') && (r.queue.length > 0 || r.batch.length > 0)) planStep(r, now, horizon(), m);
  }
  const end = Math.max(now, reportTo);
  for (const r of [...replicas]) if (r.state !== 'waiting-gpu') countGpu(r.grantAt, end);
  pool.finish(end);
  const summary = ttftSummary(trace, ttft, reportFrom, o.sloTtftSec);
  return {
    requests: summary.requests,
    sloAttainmentPct: summary.sloAttainmentPct,
    gpuHours: gpuSeconds / 3600,
    ttftSec: summary.ttftSec,
    itlSec: { p99: itl.quantile(0.99) },
    maxReplicas: maxHeld,
    replicaTimeline: timeline,
    ttftPerRequestSec: ttft.map((v) => (Number.isNaN(v) ? NEVER : v)),
  };
}

/** Seconds until replica r could start a new request: its queued prefill work and its batch. */
function backlog(r: Replica, m: EngineModel): number {
  let tokens = 0;
  for (const s of r.queue) tokens += s.prefillLeft;
  for (const s of r.batch) tokens += s.prefillLeft;
  return tokens / m.prefillTokensPerSec + r.batch.length * m.stepPerSeqSec;
}

/** Plans replica r's next step at `now`; decode-only runs end before `horizon` (the next external event). */
function planStep(r: Replica, now: number, horizon: number, m: EngineModel): void {
  // Admit queued requests while the KV cache holds their whole sequence and the batch has room (FCFS).
  while (r.queue.length > 0 && r.batch.length < m.maxNumSeqs) {
    const s = r.queue[0] as Seq;
    const need = s.req.promptTokens + s.req.outputTokens;
    if (r.kvUsed + need > m.kvCapacityTokens && r.batch.length > 0) break;
    r.queue.shift();
    r.kvUsed += need;
    r.batch.push(s);
  }
  if (r.batch.length === 0) {
    r.step = undefined;
    r.stepEnd = NEVER;
    return;
  }
  const decodes = r.batch.filter((s) => s.prefillLeft === 0);
  let budget = m.maxBatchedTokens - decodes.length;
  const chunks: [Seq, number][] = [];
  for (const s of r.batch) {
    if (s.prefillLeft === 0 || budget <= 0) continue;
    const n = Math.min(s.prefillLeft, budget);
    chunks.push([s, n]);
    budget -= n;
  }
  let context = 0;
  for (const s of decodes) context += s.context;
  let steps = 1;
  let duration: number;
  if (chunks.length === 0) {
    // Decode only: run until a sequence finishes, the horizon, or a queued request could be admitted.
    let maxSteps = NEVER;
    for (const s of decodes) maxSteps = Math.min(maxSteps, s.decodeLeft);
    if (r.queue.length > 0) maxSteps = 1;
    steps = Math.max(1, maxSteps);
    if (horizon < NEVER && steps > 1) {
      let lo = 1;
      let hi = steps;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (now + decodeRunSeconds(m, decodes.length, context, mid) <= horizon) lo = mid;
        else hi = mid - 1;
      }
      steps = lo;
    }
    duration = decodeRunSeconds(m, decodes.length, context, steps);
  } else {
    let prefill = 0;
    for (const [, n] of chunks) prefill += n;
    duration = stepSeconds(m, decodes.length + chunks.length, context, prefill);
  }
  r.step = { decodes, steps, chunks, start: now };
  r.stepEnd = now + duration;
}

function newReplica(id: number, state: Replica['state'], grantAt: number, readyAt: number): Replica {
  return { id, state, grantAt, readyAt, queue: [], batch: [], kvUsed: 0, stepEnd: NEVER, step: undefined };
}

type EventKind = 'arrival' | 'observe' | 'step' | 'grant' | 'ready';

/** The earliest event: the next arrival or observation, else a replica's step end, GPU grant or readiness (ties: the first). */
function nextEvent(replicas: readonly Replica[], arrivalAt: number, nextObserve: number): { t: number; which: Replica | undefined; kind: EventKind } {
  let t = Math.min(arrivalAt, nextObserve);
  let which: Replica | undefined;
  let kind: EventKind = arrivalAt <= nextObserve ? 'arrival' : 'observe';
  for (const r of replicas) {
    if (r.stepEnd < t) {
      t = r.stepEnd;
      which = r;
      kind = 'step';
    }
    if (r.state === 'waiting-gpu' && r.grantAt < t) {
      t = r.grantAt;
      which = r;
      kind = 'grant';
    }
    if (r.state === 'starting' && r.readyAt < t) {
      t = r.readyAt;
      which = r;
      kind = 'ready';
    }
  }
  return { t, which, kind };
}

/** TTFT percentiles and SLO attainment over the reported requests (one that never got a token counts as never). */
function ttftSummary(
  trace: readonly TraceRequest[],
  ttft: Float64Array,
  reportFrom: number,
  sloTtftSec: number,
): Pick<SimResult, 'requests' | 'sloAttainmentPct' | 'ttftSec'> {
  const reported: number[] = [];
  for (let i = 0; i < trace.length; i++)
    if ((trace[i] as TraceRequest).arrivalSec >= reportFrom) reported.push(Number.isNaN(ttft[i] as number) ? NEVER : (ttft[i] as number));
  reported.sort((a, b) => a - b);
  const q = (p: number): number =>
    reported.length === 0 ? 0 : (reported[Math.min(reported.length - 1, Math.max(0, Math.ceil(p * reported.length) - 1))] as number);
  const within = reported.filter((v) => v <= sloTtftSec).length;
  return {
    requests: reported.length,
    sloAttainmentPct: reported.length === 0 ? 100 : (100 * within) / reported.length,
    ttftSec: { p50: q(0.5), p99: q(0.99) },
  };
}

/** Where a finished step's latencies go. */
interface StepSink {
  readonly itl: LatencyHistogram;
  readonly ttft: Float64Array;
  readonly recentFirstTokens: { t: number; v: number }[];
}

/** Applies replica r's step in flight as it ends at `now`; returns the prompt tokens it prefilled and the tokens it generated. */
function completeStep(r: Replica, now: number, m: EngineModel, reportFrom: number, sink: StepSink): { prompt: number; generated: number } {
  const out = { prompt: 0, generated: 0 };
  const step = r.step;
  if (step === undefined) return out;
  const { decodes, steps, chunks, start } = step;
  if (decodes.length > 0) {
    let context = 0;
    for (const s of decodes) context += s.context;
    // Every decoding sequence waits the whole step for its next token (a prefill chunk in the step included).
    if (start >= reportFrom) {
      if (chunks.length > 0) sink.itl.add(now - start, decodes.length);
      else for (let i = 0; i < steps; i++) sink.itl.add(stepSeconds(m, decodes.length, context + i * decodes.length, 0), decodes.length);
    }
    for (const s of decodes) {
      s.decodeLeft -= steps;
      s.context += steps;
    }
    out.generated += steps * decodes.length;
  }
  for (const [s, n] of chunks) {
    s.prefillLeft -= n;
    s.context += n;
    out.prompt += n;
    if (s.prefillLeft === 0) {
      // The prefill step samples the first token.
      s.firstTokenAt = now;
      s.decodeLeft = s.req.outputTokens - 1;
      out.generated += 1;
      const v = now - s.req.arrivalSec;
      sink.ttft[s.index] = v;
      sink.recentFirstTokens.push({ t: now, v });
    }
  }
  const done = r.batch.filter((s) => s.prefillLeft === 0 && s.decodeLeft <= 0);
  if (done.length > 0) {
    r.batch = r.batch.filter((s) => !(s.prefillLeft === 0 && s.decodeLeft <= 0));
    for (const s of done) r.kvUsed -= s.req.promptTokens + s.req.outputTokens;
  }
  r.step = undefined;
  r.stepEnd = NEVER;
  return out;
}

/** What the replicas hold: requests waiting (routed or not) and running, ready and starting replicas, and the sum of the serving ones' KV cache use. */
function replicaCounts(
  replicas: readonly Replica[],
  unrouted: number,
  kvCapacityTokens: number,
): { waiting: number; running: number; kv: number; ready: number; starting: number } {
  let waiting = unrouted;
  let running = 0;
  let kv = 0;
  let ready = 0;
  let starting = 0;
  for (const r of replicas) {
    waiting += r.queue.length;
    running += r.batch.length;
    if (r.state === 'ready' || r.state === 'draining') {
      ready += r.state === 'ready' ? 1 : 0;
      kv += r.kvUsed / kvCapacityTokens;
    } else if (r.state === 'starting') starting++;
  }
  return { waiting, running, kv, ready, starting };
}

/**
 * Brings the replicas holding or awaiting GPUs (not draining) to `want`: draining ones come back first, then new
 * ones start; excess gives up what has not started, then drains the least loaded ready ones.
 */
function scaleReplicas(
  replicas: Replica[],
  want: number,
  now: number,
  ops: { readonly start: (now: number) => void; readonly release: (r: Replica, now: number) => void; readonly route: (s: Seq, now: number) => void },
): void {
  const active = (): Replica[] => replicas.filter((r) => r.state !== 'draining');
  while (active().length < want) {
    const d = replicas.find((r) => r.state === 'draining');
    if (d !== undefined) d.state = 'ready';
    else {
      const before = replicas.length;
      ops.start(now);
      if (replicas.length === before) break;
    }
  }
  let excess = active().length - want;
  // Give up what has not started first (GPU requests, then loading replicas), then the least loaded ready ones.
  for (const state of ['waiting-gpu', 'starting'] as const) {
    for (const r of [...replicas].reverse()) {
      if (excess <= 0) break;
      if (r.state === state) {
        ops.release(r, now);
        excess--;
      }
    }
  }
  if (excess > 0) {
    const ready = replicas
      .filter((r) => r.state === 'ready')
      .sort((a, b) => a.batch.length + a.queue.length - (b.batch.length + b.queue.length) || b.id - a.id);
    for (const r of ready.slice(0, excess)) {
      r.state = 'draining';
      // Its queue goes back to the others; it finishes what it has admitted.
      const q = r.queue;
      r.queue = [];
      for (const s of q) ops.route(s, now);
      if (r.batch.length === 0) ops.release(r, now);
    }
  }
}

/** The ready replica that could start a new request soonest (its backlog and step in flight); undefined: none is ready. */
function soonestFree(replicas: readonly Replica[], now: number, m: EngineModel): Replica | undefined {
  let best: Replica | undefined;
  let bestCost = NEVER;
  for (const r of replicas) {
    if (r.state !== 'ready') continue;
    const c = backlog(r, m) + Math.max(0, r.stepEnd === NEVER ? 0 : r.stepEnd - now);
    if (c < bestCost) {
      bestCost = c;
      best = r;
    }
  }
  return best;
}

/** The replicas the service starts with, numbered from 0: as many as the pool grants, already up when the trace starts. */
function initialReplicas(pool: GpuPool, m: EngineModel, count: number): Replica[] {
  const out: Replica[] = [];
  for (let i = 0; i < count; i++) {
    const grant = pool.request(0, m.gpusPerReplica);
    if (grant === undefined) break;
    out.push(newReplica(i, grant <= 0 ? 'ready' : 'waiting-gpu', grant, grant <= 0 ? 0 : grant + m.startupSec));
  }
  return out;
}
