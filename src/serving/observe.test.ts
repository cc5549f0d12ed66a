import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TOKEN_AUTOSCALER_DEFAULTS, TokenAutoscaler } from './autoscale/token.ts';
import { readEngineSignals, type EngineSignals } from './metrics.ts';
import { observeService } from './observe.ts';
import { RUNTIMES } from './runtimes/index.ts';

const recorded = (): EngineSignals => {
  const r = readEngineSignals(RUNTIMES.vllm, readFileSync(new URL('./fixtures/vllm-v1-qwen3-0.6b.txt', import.meta.url), 'utf8'));
  if (!r.ok) throw new Error(r.error);
  return r.signals;
};
/** The recorded scrape as a later one: counters and the TTFT histogram moved on by `k` first tokens above 1 s. */
const later = (s: EngineSignals, k: number, tokens: number): EngineSignals => ({
  ...s,
  waiting: 4,
  running: 12,
  kvCacheUsage: 0.5,
  promptTokensTotal: (s.promptTokensTotal ?? 0) + tokens,
  generatedTokensTotal: (s.generatedTokensTotal ?? 0) + tokens / 10,
  ttftSeconds: {
    buckets: (s.ttftSeconds?.buckets ?? []).map((b) => ({ le: b.le, count: b.count + (b.le >= 2.5 ? k : 0) })),
    sum: (s.ttftSeconds?.sum ?? 0) + 2 * k,
    count: (s.ttftSeconds?.count ?? 0) + k,
  },
});

describe('an observation from live scrapes', () => {
  const state = { nowSec: 100, readyReplicas: 2, startingReplicas: 1, desiredReplicas: 3, pendingRequests: 1 };
  it('sums queues and token rates over replicas and takes the TTFT p99 of the interval only', () => {
    const base = recorded();
    const before = [
      { replica: 'a', atSec: 90, signals: base },
      { replica: 'b', atSec: 90, signals: base },
    ];
    const now = [
      { replica: 'a', atSec: 100, signals: later(base, 10, 50_000) },
      { replica: 'b', atSec: 100, signals: later(base, 0, 30_000) },
    ];
    const o = observeService(state, now, before, 1500);
    expect(o).toMatchObject({
      nowSec: 100,
      readyReplicas: 2,
      startingReplicas: 1,
      desiredReplicas: 3,
      waiting: 9,
      running: 24,
      kvCacheUsage: 0.5,
      meanPromptTokens: 1500,
    });
    expect(o.promptTokensPerSec).toBeCloseTo(8_000, 9);
    expect(o.generatedTokensPerSec).toBeCloseTo(800, 9);
    // The 10 first tokens of the interval all fell in (1, 2.5] s: the p99 is there, not in the old 7.5-10 s history.
    expect(o.ttftP99Sec).toBeGreaterThan(1);
    expect(o.ttftP99Sec).toBeLessThanOrEqual(2.5);
  });
  it('counts nothing for a replica without a previous scrape or whose counters reset', () => {
    const base = recorded();
    const reset: EngineSignals = {
      ...base,
      promptTokensTotal: 10,
      generatedTokensTotal: 1,
      ttftSeconds: { buckets: [{ le: Number.POSITIVE_INFINITY, count: 1 }], sum: 0.1, count: 1 },
    };
    const o = observeService(
      state,
      [
        { replica: 'a', atSec: 100, signals: reset },
        { replica: 'new', atSec: 100, signals: base },
      ],
      [{ replica: 'a', atSec: 90, signals: base }],
    );
    expect(o.promptTokensPerSec).toBe(0);
    expect(o.ttftP99Sec).toBeUndefined();
  });
  it('feeds the same SITS policy the simulator drives', () => {
    const base = recorded();
    const p = new TokenAutoscaler({ ...TOKEN_AUTOSCALER_DEFAULTS, sloTtftSec: 1, minReplicas: 1, maxReplicas: 10, initialThreshold: 5_000 });
    const o = observeService(state, [{ replica: 'a', atSec: 100, signals: later(base, 5, 100_000) }], [{ replica: 'a', atSec: 90, signals: base }]);
    // 10,000 prompt + 1,000 generated tokens/s on a 5,000-token/s threshold: 3 replicas, the queue panics it higher.
    expect(p.decide(o)).toBeGreaterThanOrEqual(3);
  });
});
