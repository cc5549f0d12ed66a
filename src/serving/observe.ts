/**
 * From live scrapes to what an autoscaler decides on: the controller scrapes every ready replica's /metrics
 * (metrics.ts), keeps the previous scrape, and calls `observeService` once per interval; the result goes to the
 * same `Autoscaler.decide` the simulator drives. Counters are rated per replica (a restarted replica's reset
 * counts nothing for one interval) and the TTFT p99 is taken over the first tokens of the interval, all replicas
 * merged, as PromQL's histogram_quantile over summed buckets would.
 */
import type { ServiceObservation } from './autoscale/policy.ts';
import { counterRate, histogramQuantile, type EngineSignals, type Histogram } from './metrics.ts';

export interface ReplicaScrape {
  /** Pod name: pairs the scrape with the previous one of the same replica. */
  readonly replica: string;
  readonly atSec: number;
  readonly signals: EngineSignals;
}

export interface ServiceState {
  readonly nowSec: number;
  readonly readyReplicas: number;
  readonly startingReplicas: number;
  readonly desiredReplicas: number;
  /** Requests the router holds because no replica is ready (scale from zero). */
  readonly pendingRequests?: number;
}

/** The recent mean prompt length when no request finished in the interval (the policy needs some size for a queue). */
export const DEFAULT_MEAN_PROMPT_TOKENS = 1000;

function mergeHistograms(hs: readonly Histogram[]): Histogram | undefined {
  if (hs.length === 0) return undefined;
  const byLe = new Map<number, number>();
  for (const h of hs) for (const b of h.buckets) byLe.set(b.le, (byLe.get(b.le) ?? 0) + b.count);
  return {
    buckets: [...byLe.entries()].sort((a, b) => a[0] - b[0]).map(([le, count]) => ({ le, count })),
    sum: hs.reduce((a, h) => a + h.sum, 0),
    count: hs.reduce((a, h) => a + h.count, 0),
  };
}

/** Builds the observation from this interval's scrapes and the previous ones (by replica). */
export function observeService(
  state: ServiceState,
  now: readonly ReplicaScrape[],
  before: readonly ReplicaScrape[],
  meanPromptTokens = DEFAULT_MEAN_PROMPT_TOKENS,
): ServiceObservation {
  const prev = new Map(before.map((s) => [s.replica, s]));
  let waiting = state.pendingRequests ?? 0;
  let running = 0;
  let kv = 0;
  let kvN = 0;
  let prompt = 0;
  let generated = 0;
  const ttftNow: Histogram[] = [];
  const ttftBefore: Histogram[] = [];
  for (const s of now) {
    const p = prev.get(s.replica);
    waiting += s.signals.waiting ?? 0;
    running += s.signals.running ?? 0;
    if (s.signals.kvCacheUsage !== undefined) {
      kv += s.signals.kvCacheUsage;
      kvN++;
    }
    if (p === undefined) continue;
    const dt = s.atSec - p.atSec;
    prompt += counterRate(p.signals.promptTokensTotal, s.signals.promptTokensTotal, dt) ?? 0;
    generated += counterRate(p.signals.generatedTokensTotal, s.signals.generatedTokensTotal, dt) ?? 0;
    // A histogram that went down (restart) would give negative counts: skip that replica's interval.
    if (s.signals.ttftSeconds !== undefined && p.signals.ttftSeconds !== undefined && s.signals.ttftSeconds.count >= p.signals.ttftSeconds.count) {
      ttftNow.push(s.signals.ttftSeconds);
      ttftBefore.push(p.signals.ttftSeconds);
    }
  }
  const after = mergeHistograms(ttftNow);
  const earlier = mergeHistograms(ttftBefore);
  const p99 = after === undefined ? undefined : histogramQuantile(0.99, after, earlier);
  return {
    nowSec: state.nowSec,
    readyReplicas: state.readyReplicas,
    startingReplicas: state.startingReplicas,
    desiredReplicas: state.desiredReplicas,
    waiting,
    running,
    kvCacheUsage: kvN > 0 ? kv / kvN : 0,
    promptTokensPerSec: prompt,
    generatedTokensPerSec: generated,
    meanPromptTokens,
    ...(p99 !== undefined ? { ttftP99Sec: p99 } : {}),
  };
}
