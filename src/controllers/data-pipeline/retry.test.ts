import { describe, expect, it } from 'vitest';
import { decideRetry, effectiveRetry, parseDurationMs } from './retry.ts';

describe('retryStrategy', () => {
  it('parses Argo durations', () => {
    expect(parseDurationMs('10')).toBe(10_000);
    expect(parseDurationMs('1m30s')).toBe(90_000);
    expect(parseDurationMs('500ms')).toBe(500);
    expect(parseDurationMs('2h')).toBe(7_200_000);
    expect(parseDurationMs('1x')).toBeUndefined();
  });

  it('backs off duration × factor^retries up to the limit', () => {
    const r = effectiveRetry({ limit: 3, retryPolicy: 'OnFailure', backoff: { duration: '2s', factor: 3 } }, 3);
    expect([0, 1, 2].map((n) => decideRetry(r, 'failure', n, 0, 0))).toEqual([
      { retry: true, delayMs: 2000 },
      { retry: true, delayMs: 6000 },
      { retry: true, delayMs: 18000 },
    ]);
    expect(decideRetry(r, 'failure', 3, 0, 0)).toEqual({ retry: false, why: 'retry limit 3 reached' });
  });

  it('retries by policy: OnFailure exit codes, OnError lost pods, Always both', () => {
    const of = (retryPolicy: 'Always' | 'OnFailure' | 'OnError') => effectiveRetry({ limit: 1, retryPolicy }, 0);
    expect(decideRetry(of('OnFailure'), 'error', 0, 0, 0)).toEqual({ retry: false, why: 'retryPolicy OnFailure does not retry an error' });
    expect(decideRetry(of('OnError'), 'failure', 0, 0, 0)).toEqual({ retry: false, why: 'retryPolicy OnError does not retry a failure' });
    expect(decideRetry(of('OnError'), 'error', 0, 0, 0).retry).toBe(true);
    expect(decideRetry(of('Always'), 'failure', 0, 0, 0).retry).toBe(true);
  });

  it('gives up when the next attempt would start after maxDuration', () => {
    const r = effectiveRetry({ limit: 10, retryPolicy: 'Always', backoff: { duration: '10s', factor: 2, maxDuration: '1m' } }, 0);
    expect(decideRetry(r, 'failure', 1, 0, 30_000)).toEqual({ retry: true, delayMs: 20_000 });
    expect(decideRetry(r, 'failure', 2, 0, 30_000)).toEqual({ retry: false, why: 'backoff maxDuration 60s reached' });
  });

  it('falls back to maxRetries immediate retries of failures', () => {
    expect(effectiveRetry(undefined, 3)).toEqual({ limit: 3, policy: 'OnFailure', durationMs: 0, factor: 1, maxDurationMs: undefined });
  });
});
