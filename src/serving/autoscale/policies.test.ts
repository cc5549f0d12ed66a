import { describe, expect, it } from 'vitest';
import { ConcurrencyPolicy } from './concurrency.ts';
import { KedaPolicy } from './keda.ts';
import { Window, type ServiceObservation } from './policy.ts';
import { StaticPolicy } from './static.ts';
import { sloAtRisk, TOKEN_AUTOSCALER_DEFAULTS, TokenAutoscaler, type TokenAutoscalerConfig } from './token.ts';

const obs = (o: Partial<ServiceObservation> & { nowSec: number }): ServiceObservation => ({
  readyReplicas: 1,
  startingReplicas: 0,
  desiredReplicas: 1,
  waiting: 0,
  running: 0,
  kvCacheUsage: 0,
  promptTokensPerSec: 0,
  generatedTokensPerSec: 0,
  meanPromptTokens: 1000,
  ...o,
});

describe('Window', () => {
  it('keeps the samples of the last seconds and answers mean, max and nearest-rank quantiles', () => {
    const w = new Window(10);
    for (let t = 0; t < 20; t++) w.push(t, t);
    expect(w.values()).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect(w.mean()).toBe(14.5);
    expect(w.max()).toBe(19);
    expect(w.quantile(0.95)).toBe(19);
    expect(w.quantile(0.5)).toBe(14);
    expect(new Window(5).quantile(0.9)).toBe(0);
  });
});

describe('static', () => {
  it('always answers its replica count', () => {
    const p = new StaticPolicy(5);
    expect(p.decide()).toBe(5);
  });
});

describe('KEDA on vllm:num_requests_waiting', () => {
  it('polls every 30 s, asks ceil(waiting / threshold) and scales up at most max(2×, +4)', () => {
    const p = new KedaPolicy({ threshold: 5, minReplicas: 1, maxReplicas: 50 });
    expect(p.decide(obs({ nowSec: 0, waiting: 12 }))).toBe(3);
    // Between polls the answer stands, whatever the queue does.
    expect(p.decide(obs({ nowSec: 10, waiting: 500, desiredReplicas: 3 }))).toBe(3);
    expect(p.decide(obs({ nowSec: 30, waiting: 500, desiredReplicas: 3 }))).toBe(7);
    expect(p.decide(obs({ nowSec: 60, waiting: 500, desiredReplicas: 7 }))).toBe(14);
  });
  it('keeps the highest recommendation of the last 300 s before scaling in (HPA stabilisation), never below 1 replica', () => {
    const p = new KedaPolicy({ threshold: 5, minReplicas: 0, maxReplicas: 50 });
    expect(p.decide(obs({ nowSec: 0, waiting: 20 }))).toBe(4);
    for (let t = 30; t <= 300; t += 30) expect(p.decide(obs({ nowSec: t, waiting: 0, running: 1, desiredReplicas: 4 }))).toBe(4);
    expect(p.decide(obs({ nowSec: 330, waiting: 0, running: 1, desiredReplicas: 4 }))).toBe(1);
  });
  it('goes to zero only after cooldownPeriod without activity when minReplicas is 0', () => {
    const p = new KedaPolicy({ threshold: 5, minReplicas: 0, maxReplicas: 5, stabilizationSec: 0 });
    expect(p.decide(obs({ nowSec: 0, waiting: 1 }))).toBe(1);
    expect(p.decide(obs({ nowSec: 270 }))).toBe(1);
    expect(p.decide(obs({ nowSec: 300 }))).toBe(0);
  });
  it("leaves the replicas alone within the HPA's 10 % tolerance", () => {
    const p = new KedaPolicy({ threshold: 10, minReplicas: 1, maxReplicas: 50 });
    expect(p.decide(obs({ nowSec: 0, waiting: 40, desiredReplicas: 4 }))).toBe(4);
    expect(p.decide(obs({ nowSec: 30, waiting: 43, desiredReplicas: 4 }))).toBe(4);
    expect(p.decide(obs({ nowSec: 60, waiting: 47, desiredReplicas: 4 }))).toBe(5);
  });
});

describe('KPA-like concurrency autoscaler', () => {
  it('sizes on the 60 s mean of in-flight requests at 70 % of the target', () => {
    const p = new ConcurrencyPolicy({ targetConcurrency: 10, minReplicas: 1, maxReplicas: 100 });
    let last = 0;
    for (let t = 0; t <= 60; t++) last = p.decide(obs({ nowSec: t, running: 14, readyReplicas: 2, desiredReplicas: 2 }));
    expect(last).toBe(2); // 14 / 7 = 2
  });
  it('panics on a burst the 6 s window sees before the 60 s window, and holds the panic replicas', () => {
    const p = new ConcurrencyPolicy({ targetConcurrency: 10, minReplicas: 1, maxReplicas: 100 });
    for (let t = 0; t < 60; t++) p.decide(obs({ nowSec: t, running: 5 }));
    let r = 0;
    for (let t = 60; t < 66; t++) r = p.decide(obs({ nowSec: t, running: 70 }));
    expect(r).toBeGreaterThanOrEqual(8);
    // The burst ends: no scale-down while in panic.
    for (let t = 66; t < 100; t++) r = p.decide(obs({ nowSec: t, running: 0, readyReplicas: 8, desiredReplicas: 8 }));
    expect(r).toBeGreaterThanOrEqual(8);
  });
  it('scales in by at most half per evaluation', () => {
    const p = new ConcurrencyPolicy({ targetConcurrency: 10, minReplicas: 1, maxReplicas: 100, stableWindowSec: 2, panicWindowSec: 1 });
    expect(p.decide(obs({ nowSec: 0, running: 0, readyReplicas: 8, desiredReplicas: 8 }))).toBe(4);
    expect(p.decide(obs({ nowSec: 2, running: 0, readyReplicas: 4, desiredReplicas: 4 }))).toBe(2);
  });
});

const cfg = (c: Partial<TokenAutoscalerConfig> = {}): TokenAutoscalerConfig => ({
  ...TOKEN_AUTOSCALER_DEFAULTS,
  sloTtftSec: 1,
  minReplicas: 1,
  maxReplicas: 20,
  ...c,
});

describe('SITS token autoscaler', () => {
  it('starts its threshold from the P95 of what one replica carried in the recent window', () => {
    const p = new TokenAutoscaler(cfg({ calibrationSec: 30, historyWindowSec: 300 }));
    expect(p.tokensPerReplica).toBe(TOKEN_AUTOSCALER_DEFAULTS.initialThreshold);
    for (let t = 0; t <= 30; t++)
      p.decide(obs({ nowSec: t, readyReplicas: 2, desiredReplicas: 2, promptTokensPerSec: t < 29 ? 8_000 : 16_000, generatedTokensPerSec: 0 }));
    // Per replica: 4,000 tokens/s most of the time, 8,000 in the last seconds: the P95 is 8,000.
    expect(p.tokensPerReplica).toBe(8_000);
  });
  it('lowers the threshold when the TTFT p99 misses the SLO and raises it with room, on evidence only', () => {
    const p = new TokenAutoscaler(cfg({ calibrationSec: 10, historyWindowSec: 60 }));
    const load = (t: number, ttft: number, tokens = 10_000): number =>
      p.decide(obs({ nowSec: t, readyReplicas: 1, promptTokensPerSec: tokens, ttftP99Sec: ttft }));
    for (let t = 0; t <= 10; t++) load(t, 0.2);
    expect(p.tokensPerReplica).toBe(10_000);
    // The first window met the SLO with room: 10,000 tokens/s per replica is proven.
    expect(p.provenTokensPerReplica).toBe(10_000);
    load(20, 2);
    // The miss lowers the threshold and drops what was proven (it no longer holds).
    expect(p.provenTokensPerReplica).toBe(0);
    expect(p.tokensPerReplica).toBeCloseTo(8_500, 6);
    load(30, 0.1);
    expect(p.calibratedTokensPerReplica).toBeCloseTo(8_925, 6);
    // …and the window at 30 s carried 10,000 within the SLO again: proven, so that is what replicas are sized with.
    expect(p.tokensPerReplica).toBe(10_000);
    // A quiet service gives no evidence that a replica can carry more: the threshold stays.
    const q = new TokenAutoscaler(cfg({ calibrationSec: 10, historyWindowSec: 20 }));
    for (let t = 0; t <= 10; t++) q.decide(obs({ nowSec: t, promptTokensPerSec: 20_000 }));
    for (let t = 11; t <= 40; t++) q.decide(obs({ nowSec: t, promptTokensPerSec: 100, ttftP99Sec: 0.05 }));
    // Once the busy seconds left the window, nothing raises it any more.
    const before = q.tokensPerReplica;
    for (let t = 41; t <= 200; t++) q.decide(obs({ nowSec: t, promptTokensPerSec: 100, ttftP99Sec: 0.05 }));
    expect(q.tokensPerReplica).toBe(before);
  });
  it('sizes replicas on the demand history and scales out at once on a queue (panic), up to 2× per decision', () => {
    const p = new TokenAutoscaler(cfg({ initialThreshold: 10_000 }));
    // A TTFT p99 of 0.9 s (over half the 1 s SLO) is the evidence of risk a scale-out needs.
    expect(p.decide(obs({ nowSec: 0, promptTokensPerSec: 25_000, ttftP99Sec: 0.9 }))).toBe(2);
    // 300 requests of 1,000 tokens queued: drained in 2 s they ask 150,000 tokens/s → 16 replicas, reached by doubling.
    expect(p.decide(obs({ nowSec: 1, promptTokensPerSec: 10_000, waiting: 300, desiredReplicas: 2 }))).toBe(4);
    expect(p.decide(obs({ nowSec: 2, promptTokensPerSec: 10_000, waiting: 300, desiredReplicas: 4 }))).toBe(8);
  });
  it('scales in one replica at a time, only after the lower count held for the delay and the history forgot the peak', () => {
    const p = new TokenAutoscaler(cfg({ initialThreshold: 10_000, historyWindowSec: 60, scaleDownDelaySec: 120, scaleDownStepSec: 30 }));
    expect(p.decide(obs({ nowSec: 0, promptTokensPerSec: 40_000, ttftP99Sec: 0.9 }))).toBe(2);
    expect(p.decide(obs({ nowSec: 1, promptTokensPerSec: 40_000, desiredReplicas: 2, ttftP99Sec: 0.9 }))).toBe(4);
    const seen: number[] = [];
    let r = 4;
    for (let t = 2; t <= 400; t++) {
      r = p.decide(obs({ nowSec: t, readyReplicas: r, desiredReplicas: r, promptTokensPerSec: 5_000 }));
      if (seen.at(-1) !== r) seen.push(r);
    }
    expect(seen).toEqual([4, 3, 2, 1]);
  });
  it('goes to zero after an idle period when minReplicas is 0, and back to one on the first request', () => {
    const p = new TokenAutoscaler(cfg({ minReplicas: 0, idleToZeroSec: 100, scaleDownDelaySec: 10, scaleDownStepSec: 1, historyWindowSec: 10 }));
    let r = 1;
    for (let t = 0; t <= 300 && r > 0; t++) r = p.decide(obs({ nowSec: t, readyReplicas: r, desiredReplicas: r }));
    expect(r).toBe(0);
    expect(p.decide(obs({ nowSec: 301, readyReplicas: 0, desiredReplicas: 0, waiting: 1 }))).toBe(1);
  });
  it('waits a whole observed idle period before going to zero, even when it starts on an idle service', () => {
    const p = new TokenAutoscaler(cfg({ minReplicas: 0, idleToZeroSec: 100, scaleDownDelaySec: 10, scaleDownStepSec: 1, historyWindowSec: 10 }));
    let r = 1;
    let zeroAt = -1;
    for (let t = 1000; t <= 1300 && r > 0; t++) {
      r = p.decide(obs({ nowSec: t, readyReplicas: r, desiredReplicas: r }));
      if (r === 0) zeroAt = t;
    }
    expect(zeroAt).toBeGreaterThanOrEqual(1100);
  });
  it('comes back from zero on an activation (a request held by a router) and restarts the idle period from it', () => {
    const p = new TokenAutoscaler(cfg({ minReplicas: 0, idleToZeroSec: 100, scaleDownDelaySec: 10, scaleDownStepSec: 1, historyWindowSec: 10 }));
    let r = 1;
    let t = 0;
    for (; t <= 300 && r > 0; t++) r = p.decide(obs({ nowSec: t, readyReplicas: r, desiredReplicas: r }));
    expect(r).toBe(0);
    // Nothing runs, nothing is asked: it stays at zero.
    for (let i = 0; i < 50; i++, t++) expect(p.decide(obs({ nowSec: t, readyReplicas: 0, desiredReplicas: 0 }))).toBe(0);
    p.activate(t);
    expect(p.decide(obs({ nowSec: t, readyReplicas: 0, desiredReplicas: 0 }))).toBe(1);
    // An idle replica stays for the idle period after the activation, then goes.
    const back = t;
    for (r = 1; r > 0 && t < back + 300;) r = p.decide(obs({ nowSec: ++t, readyReplicas: 1, desiredReplicas: 1 }));
    expect(t - back).toBeGreaterThanOrEqual(100);
    // An activation older than the idle period is no demand now.
    p.activate(t - 150);
    expect(p.decide(obs({ nowSec: t + 1, readyReplicas: 0, desiredReplicas: 0 }))).toBe(0);
  });
  it('does not scale out on demand above the threshold while the SLO holds with room; does on evidence of risk', () => {
    // A low threshold (2,000 tokens/s) and 3× that demand served with a TTFT p99 of 0.2 s and nothing queued: one
    // replica demonstrably suffices (and the window proves 6,000 tokens/s per replica).
    const p = new TokenAutoscaler(
      cfg({ initialThreshold: 2_000, minThreshold: 500, calibrationSec: 1_000, historyWindowSec: 60, demandQuantile: 1, riskHoldSec: 100 }),
    );
    for (let t = 0; t < 200; t++) expect(p.decide(obs({ nowSec: t, promptTokensPerSec: 6_000, ttftP99Sec: 0.2 }))).toBe(1);
    expect(p.sloRiskAtSec).toBe(Number.NEGATIVE_INFINITY);
    expect(p.tokensPerReplica).toBe(6_000);
    // 18,000 tokens/s and the p99 over half the SLO: now the demand history sizes the replicas (→ 3, ×2 per step).
    expect(p.decide(obs({ nowSec: 200, promptTokensPerSec: 18_000, ttftP99Sec: 0.6 }))).toBe(2);
    expect(p.decide(obs({ nowSec: 201, promptTokensPerSec: 18_000, desiredReplicas: 2, ttftP99Sec: 0.6 }))).toBe(3);
    expect(p.sloRiskAtSec).toBe(201);
    // A higher demand long after the risk (riskHoldSec 100 s) with the SLO met again adds nothing.
    let r = 3;
    for (let t = 400; t < 450; t++) r = p.decide(obs({ nowSec: t, readyReplicas: r, desiredReplicas: r, promptTokensPerSec: 30_000, ttftP99Sec: 0.2 }));
    expect(r).toBe(3);
  });
  it('counts a queue that takes longer than half the SLO to drain as risk, and panics on it at once', () => {
    const p = new TokenAutoscaler(cfg({ initialThreshold: 10_000 }));
    // 20 requests of 1,000 tokens queued behind 10,000 tokens/s served: 2 s to drain.
    expect(p.decide(obs({ nowSec: 0, promptTokensPerSec: 10_000, waiting: 20 }))).toBe(2);
    // 3 queued: 0.3 s to drain, under half the SLO, and the TTFT is fine: not at risk, nothing added.
    const q = new TokenAutoscaler(cfg({ initialThreshold: 10_000 }));
    expect(q.decide(obs({ nowSec: 0, promptTokensPerSec: 30_000, waiting: 3, ttftP99Sec: 0.3 }))).toBe(1);
  });
  it('sloAtRisk: a TTFT p99 over the limit, or queued tokens slower to drain than the limit at the serving rate', () => {
    const base = obs({ nowSec: 0, readyReplicas: 2 });
    expect(sloAtRisk({ ...base, ttftP99Sec: 0.51 }, 0, 0, 5_000, 0.5)).toBe(true);
    expect(sloAtRisk({ ...base, ttftP99Sec: 0.5 }, 0, 0, 5_000, 0.5)).toBe(false);
    // Drain rate: what was served, at least the threshold per ready replica (10,000 here).
    expect(sloAtRisk(base, 5_000, 0, 5_000, 0.5)).toBe(false);
    expect(sloAtRisk(base, 5_001, 0, 5_000, 0.5)).toBe(true);
    expect(sloAtRisk(base, 10_000, 40_000, 5_000, 0.5)).toBe(false);
    // A queue with nothing serving it never drains.
    expect(sloAtRisk({ ...base, readyReplicas: 0 }, 1, 0, 5_000, 0.5)).toBe(true);
  });
  it('learns what a replica carries within the SLO: windows without risk prove their peak, and it sizes with it', () => {
    const p = new TokenAutoscaler(cfg({ initialThreshold: 1_000, minThreshold: 500, calibrationSec: 30, historyWindowSec: 300, demandQuantile: 1 }));
    // A replica carries 1,000 tokens/s most of the time and 8,000 in one second, the TTFT p99 at 0.2 s throughout.
    for (let t = 0; t <= 60; t++) p.decide(obs({ nowSec: t, promptTokensPerSec: t === 45 ? 8_000 : 1_000, ttftP99Sec: 0.2 }));
    expect(p.provenTokensPerReplica).toBe(8_000);
    expect(p.tokensPerReplica).toBe(8_000);
    // A window with a risk proves nothing: its 20,000 tokens/s peak is not learned.
    for (let t = 61; t <= 90; t++) p.decide(obs({ nowSec: t, promptTokensPerSec: t === 70 ? 16_000 : 1_000, ttftP99Sec: t === 70 ? 0.7 : 0.2 }));
    expect(p.provenTokensPerReplica).toBe(8_000);
    // Sized on the proven capacity: the 16,000 tokens/s peak asks for 2 replicas, not the 16 a 1,000 threshold would.
    let r = 1;
    for (let t = 91; t <= 95; t++) r = p.decide(obs({ nowSec: t, readyReplicas: r, desiredReplicas: r, promptTokensPerSec: 1_000, ttftP99Sec: 0.7 }));
    expect(r).toBe(2);
  });
  it('does not flap: alternating risk and calm scales out once and steps in only after the delay', () => {
    const p = new TokenAutoscaler(cfg({ initialThreshold: 10_000, historyWindowSec: 60, scaleDownDelaySec: 120, scaleDownStepSec: 30, riskHoldSec: 60 }));
    const seen: number[] = [];
    let r = 1;
    for (let t = 0; t <= 600; t++) {
      // 20 s bursts of 30,000 tokens/s with a TTFT p99 of 0.8 s every 100 s for the first 200 s, then 5,000 tokens/s.
      const burst = t < 200 && t % 100 < 20;
      r = p.decide(obs({ nowSec: t, readyReplicas: r, desiredReplicas: r, promptTokensPerSec: burst ? 30_000 : 5_000, ttftP99Sec: burst ? 0.8 : 0.2 }));
      if (seen.at(-1) !== r) seen.push(r);
    }
    expect(seen).toEqual([2, 3, 2, 1]);
  });
  it('is deterministic: the same observations give the same answers', () => {
    const run = (): number[] => {
      const p = new TokenAutoscaler(cfg());
      return Array.from({ length: 200 }, (_, t) =>
        p.decide(obs({ nowSec: t, promptTokensPerSec: (t * 7919) % 50_000, waiting: t % 13, ttftP99Sec: (t % 7) / 4 })),
      );
    };
    expect(run()).toEqual(run());
  });
});
