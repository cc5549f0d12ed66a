/**
 * Argo-like retries of a failed stage: whether an attempt's outcome is retried (retryPolicy), how long to wait
 * (backoff duration × factor^retries), and when to give up (limit, maxDuration since the stage first started).
 */
import type { RetryPolicy, RetryStrategy } from '../../api/schema/data-pipeline.ts';

/** `failure`: the container exited non-zero or the workload reported Failed. `error`: the pod or workload was lost. */
export type AttemptOutcome = 'failure' | 'error';

/** "1m30s", "500ms", "10" (seconds) → milliseconds; undefined for anything else. */
export function parseDurationMs(text: string): number | undefined {
  if (/^[0-9]+$/.test(text)) return Number(text) * 1000;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let rest = text;
  while (rest.length > 0) {
    const m = /^([0-9]+)(ms|s|m|h)/.exec(rest);
    if (m === null) return undefined;
    total += Number(m[1]) * (unit[m[2] ?? ''] ?? 0);
    rest = rest.slice(m[0].length);
  }
  return text.length > 0 ? total : undefined;
}

export interface EffectiveRetry {
  readonly limit: number;
  readonly policy: RetryPolicy;
  readonly durationMs: number;
  readonly factor: number;
  readonly maxDurationMs: number | undefined;
}

/** retryStrategy when set, else maxRetries immediate retries of failures (the older field). */
export function effectiveRetry(strategy: RetryStrategy | undefined, maxRetries: number): EffectiveRetry {
  if (strategy === undefined) return { limit: maxRetries, policy: 'OnFailure', durationMs: 0, factor: 1, maxDurationMs: undefined };
  const b = strategy.backoff;
  const max = b?.maxDuration === undefined ? undefined : parseDurationMs(b.maxDuration);
  return {
    limit: strategy.limit,
    policy: strategy.retryPolicy,
    durationMs: b === undefined ? 0 : (parseDurationMs(b.duration) ?? 0),
    factor: b?.factor ?? 2,
    maxDurationMs: max,
  };
}

export type RetryDecision = { readonly retry: true; readonly delayMs: number } | { readonly retry: false; readonly why: string };

/**
 * After attempt `retries + 1` ended with `outcome` at `nowMs`: retry (and after how long) or give up (and why).
 * `startedMs` is when the stage's first attempt started.
 */
export function decideRetry(r: EffectiveRetry, outcome: AttemptOutcome, retries: number, startedMs: number, nowMs: number): RetryDecision {
  const policyAllows = r.policy === 'Always' || (r.policy === 'OnFailure' ? outcome === 'failure' : outcome === 'error');
  if (!policyAllows) return { retry: false, why: `retryPolicy ${r.policy} does not retry ${outcome === 'failure' ? 'a failure' : 'an error'}` };
  if (retries >= r.limit) return { retry: false, why: r.limit === 0 ? 'no retries allowed' : `retry limit ${r.limit} reached` };
  const delayMs = Math.round(r.durationMs * r.factor ** retries);
  if (r.maxDurationMs !== undefined && nowMs + delayMs - startedMs > r.maxDurationMs)
    return { retry: false, why: `backoff maxDuration ${r.maxDurationMs / 1000}s reached` };
  return { retry: true, delayMs };
}
