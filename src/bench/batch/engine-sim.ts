/**
 * One continuous-batching engine replica stepped on the serving issue's engine model (serving/engine-model.ts,
 * ADR 0080): the same step-time function the serving simulator uses, so batch and serving numbers come from one
 * calibrated model. Each step decodes one token for every sequence past its prefill and prefills waiting prompt
 * tokens in chunks up to the engine's token budget (vLLM chunked prefill); sequences are admitted while they fit
 * in --max-num-seqs, the caller's batch size and the KV cache (prompt + output reserved).
 */
import type { EngineModel } from '../../serving/engine-model.ts';
import { stepSeconds } from '../../serving/engine-model.ts';

export interface EngineRequest {
  readonly index: number;
  readonly promptTokens: number;
  readonly outputTokens: number;
}

interface Seq {
  readonly req: EngineRequest;
  readonly submitMs: number;
  readonly tag: number;
  prefillLeft: number;
  outLeft: number;
  ctx: number;
}

export interface Finished {
  readonly req: EngineRequest;
  readonly submitMs: number;
  readonly doneMs: number;
  readonly tag: number;
}

export class EngineSim {
  nowMs = 0;
  busyMs = 0;
  /** busyMs at the model's speed: busyMs / modelMs is the slowdown a worker observes (step time vs the model). */
  modelMs = 0;
  tokens = 0;
  /** Sequences admitted at most (the batch size policy's knob); --max-num-seqs caps it. */
  maxSeqs: number;
  /** 1 = the model's speed; a straggler (thermal throttling, a bad link) is slower. */
  speed = 1;
  private running: Seq[] = [];
  private waiting: Seq[] = [];
  private kvUsed = 0;

  constructor(
    readonly m: EngineModel,
    readonly kvCapacity: number = m.kvCapacityTokens,
  ) {
    this.maxSeqs = m.maxNumSeqs;
  }

  get inFlight(): number {
    return this.running.length + this.waiting.length;
  }

  get kvFraction(): number {
    return this.kvUsed / this.kvCapacity;
  }

  submit(req: EngineRequest, tag = 0): void {
    this.waiting.push({ req, submitMs: this.nowMs, tag, prefillLeft: req.promptTokens, outLeft: Math.max(1, req.outputTokens), ctx: 0 });
  }

  /** Drops every sequence with `tag` (its attempt failed or was cancelled); returns how many. */
  drop(tag: number): number {
    const keep = (s: Seq): boolean => s.tag !== tag;
    const before = this.inFlight;
    for (const s of this.running) if (!keep(s)) this.kvUsed -= s.req.promptTokens + s.req.outputTokens;
    this.running = this.running.filter(keep);
    this.waiting = this.waiting.filter(keep);
    return before - this.inFlight;
  }

  clear(): void {
    this.running = [];
    this.waiting = [];
    this.kvUsed = 0;
  }

  idleUntil(ms: number): void {
    this.nowMs = Math.max(this.nowMs, ms);
  }

  /** One engine step; returns the sequences that finished in it. Undefined when there is nothing to run. */
  step(): Finished[] | undefined {
    const cap = Math.min(this.maxSeqs, this.m.maxNumSeqs);
    while (this.waiting.length > 0 && this.running.length < cap) {
      const s = this.waiting[0] as Seq;
      const need = s.req.promptTokens + s.req.outputTokens;
      if (this.running.length > 0 && this.kvUsed + need > this.kvCapacity) break;
      this.waiting.shift();
      this.kvUsed += need;
      this.running.push(s);
    }
    if (this.running.length === 0) return undefined;
    let decodeSeqs = 0;
    let ctx = 0;
    for (const s of this.running)
      if (s.prefillLeft === 0) {
        decodeSeqs++;
        ctx += s.ctx;
      }
    let budget = this.m.maxBatchedTokens - decodeSeqs;
    let prefill = 0;
    const prefilled: Seq[] = [];
    for (const s of this.running) {
      if (s.prefillLeft === 0 || budget <= 0) continue;
      const take = Math.min(s.prefillLeft, budget);
      s.prefillLeft -= take;
      budget -= take;
      prefill += take;
      if (s.prefillLeft === 0) prefilled.push(s);
    }
    const model = stepSeconds(this.m, decodeSeqs, ctx, prefill) * 1000;
    const dur = model / this.speed;
    this.nowMs += dur;
    this.busyMs += dur;
    this.modelMs += model;
    this.tokens += prefill + decodeSeqs;
    for (const s of this.running) {
      if (s.prefillLeft > 0) continue;
      if (prefilled.includes(s)) s.ctx = s.req.promptTokens; // the prefill step samples the first token
      s.outLeft--;
      s.ctx++;
    }
    const done: Finished[] = [];
    const still: Seq[] = [];
    for (const s of this.running) {
      if (s.outLeft <= 0) {
        done.push({ req: s.req, submitMs: s.submitMs, doneMs: this.nowMs, tag: s.tag });
        this.kvUsed -= s.req.promptTokens + s.req.outputTokens;
      } else still.push(s);
    }
    this.running = still;
    return done;
  }
}

/**
 * The engine model's ceiling on a token mix: tokens a second when every step is full (the token budget used, the
 * fixed step cost amortised over it). Utilisation is achieved tokens/s over this, like MFU over peak FLOPs.
 */
export function ceilingTokensPerSec(m: EngineModel, reqs: readonly EngineRequest[]): number {
  let tokens = 0;
  let sec = 0;
  for (const r of reqs) {
    const t = r.promptTokens + r.outputTokens;
    tokens += t;
    const avgCtx = r.promptTokens + r.outputTokens / 2;
    sec += r.promptTokens / m.prefillTokensPerSec + r.outputTokens * (m.stepPerSeqSec + m.stepPerContextTokenSec * avgCtx) + (t / m.maxBatchedTokens) * m.stepBaseSec;
  }
  return sec === 0 ? 0 : tokens / sec;
}

/**
 * Where the ceiling's time goes on a token mix: prefill (prompt tokens at the prefill rate), decode (per-sequence
 * and KV-read cost of each output token) and the steps' fixed cost. A mix whose time is mostly prefill leaves
 * little for any batching policy to win: batching amortises the fixed and per-step costs, not the prefill FLOPs.
 */
export function ceilingBreakdown(m: EngineModel, reqs: readonly EngineRequest[]): { prefillPct: number; decodePct: number; fixedPct: number } {
  let prefill = 0;
  let decode = 0;
  let fixed = 0;
  for (const r of reqs) {
    prefill += r.promptTokens / m.prefillTokensPerSec;
    decode += r.outputTokens * (m.stepPerSeqSec + m.stepPerContextTokenSec * (r.promptTokens + r.outputTokens / 2));
    fixed += ((r.promptTokens + r.outputTokens) / m.maxBatchedTokens) * m.stepBaseSec;
  }
  const all = prefill + decode + fixed;
  const pct = (x: number): number => (all === 0 ? 0 : Math.round((10000 * x) / all) / 100);
  return { prefillPct: pct(prefill), decodePct: pct(decode), fixedPct: pct(fixed) };
}
