import { describe, expect, it } from 'vitest';
import { DEFAULT_QUARANTINE_MS, formatQuarantine, parseQuarantine, QuarantineBook, quarantineText } from './quarantine.ts';

const dev = { node: 'n1', gpu: 3 };
const T0 = Date.UTC(2026, 11, 1, 17, 0, 0);

describe('QuarantineBook', () => {
  it('quarantine → due after the period → a failing check keeps it, a passing one releases it', () => {
    const b = new QuarantineBook();
    expect(b.quarantine(dev, 'XID 79', T0 + DEFAULT_QUARANTINE_MS, T0, 'gpu-health', 'failed').kind).toBe('quarantined');
    expect(b.isQuarantined(dev)).toBe(true);
    expect(b.due(T0 + DEFAULT_QUARANTINE_MS - 1)).toEqual([]);
    expect(b.due(T0 + DEFAULT_QUARANTINE_MS).map((e) => e.gpu)).toEqual([3]);
    const kept = b.checkResult(dev, false, T0 + DEFAULT_QUARANTINE_MS, DEFAULT_QUARANTINE_MS, 'diag failed');
    expect(kept).toMatchObject({
      kind: 'extended',
      entry: { untilMs: T0 + 2 * DEFAULT_QUARANTINE_MS, failedChecks: 1, reason: 'diag failed', state: 'failed' },
    });
    // A passing check before the period is over does not release it.
    expect(b.checkResult(dev, true, T0 + DEFAULT_QUARANTINE_MS + 1)).toBeUndefined();
    expect(b.checkResult(dev, true, T0 + 2 * DEFAULT_QUARANTINE_MS)?.kind).toBe('released');
    expect(b.isQuarantined(dev)).toBe(false);
  });

  it('quarantining again keeps the start and the later end; release ends it without a check', () => {
    const b = new QuarantineBook();
    b.quarantine(dev, 'first', T0 + 100, T0, 'batch-fault-ladder', 'suspect');
    const again = b.quarantine(dev, 'second', T0 + 50, T0 + 10, 'gpu-health', 'suspect');
    expect(again).toEqual({
      kind: 'extended',
      entry: { ...dev, reason: 'second', state: 'suspect', sinceMs: T0, untilMs: T0 + 100, source: 'batch-fault-ladder', failedChecks: 0 },
    });
    expect(b.release(dev)?.reason).toBe('second');
    expect(b.release(dev)).toBeUndefined();
  });

  it('suspect escalates to failed; failed stays failed until the release, whoever quarantines it again', () => {
    const b = new QuarantineBook();
    b.quarantine(dev, 'pages pending retirement', T0 + 100, T0, 'gpu-health', 'suspect');
    expect(b.quarantine(dev, 'XID 48 (double-bit ECC error)', T0 + 200, T0 + 10, 'gpu-health', 'failed').entry.state).toBe('failed');
    expect(b.quarantine(dev, 'temperature rising', T0 + 300, T0 + 20, 'gpu-health', 'suspect').entry).toMatchObject({
      state: 'failed',
      reason: 'temperature rising',
    });
    b.release(dev);
    expect(b.quarantine(dev, 'temperature rising', T0 + 400, T0 + 30, 'gpu-health', 'suspect').entry.state).toBe('suspect');
  });

  it('the annotation round-trips and reads as sits explain shows it', () => {
    const b = new QuarantineBook();
    b.quarantine({ node: 'n1', gpu: 5 }, 'temperature rising', T0 + 900_000, T0, 'gpu-health', 'suspect');
    b.quarantine(dev, 'XID 79 (GPU has fallen off the bus)', T0 + 900_000, T0, 'gpu-health', 'failed');
    const text = formatQuarantine(b.ofNode('n1')) as string;
    expect(text).toBe(
      '{"3":{"reason":"XID 79 (GPU has fallen off the bus)","state":"failed","since":"2026-12-01T17:00:00.000Z","until":"2026-12-01T17:15:00.000Z","source":"gpu-health"},"5":{"reason":"temperature rising","state":"suspect","since":"2026-12-01T17:00:00.000Z","until":"2026-12-01T17:15:00.000Z","source":"gpu-health"}}',
    );
    expect(parseQuarantine('n1', text)).toEqual({ ok: true, value: b.ofNode('n1') });
    expect(quarantineText(b.get(dev) as never)).toBe('quarantined until 2026-12-01T17:15:00.000Z: XID 79 (GPU has fallen off the bus)');
    expect(formatQuarantine([])).toBeUndefined();
  });

  it('an entry written without a state (before ADR 0150) reads as suspect, and is written back with it', () => {
    const old =
      '{"3":{"reason":"shard failed 3 times","since":"2026-12-01T17:00:00.000Z","until":"2026-12-01T17:15:00.000Z","source":"batch-fault-ladder","failedChecks":2}}';
    const q = parseQuarantine('n1', old);
    expect(q).toEqual({
      ok: true,
      value: [
        {
          node: 'n1',
          gpu: 3,
          reason: 'shard failed 3 times',
          state: 'suspect',
          sinceMs: T0,
          untilMs: T0 + 900_000,
          source: 'batch-fault-ladder',
          failedChecks: 2,
        },
      ],
    });
    expect(formatQuarantine(q.ok ? q.value : [])).toBe(
      '{"3":{"reason":"shard failed 3 times","state":"suspect","since":"2026-12-01T17:00:00.000Z","until":"2026-12-01T17:15:00.000Z","source":"batch-fault-ladder","failedChecks":2}}',
    );
  });

  it('bad annotations are refused naming the GPU and the field', () => {
    expect(parseQuarantine('n', '{')).toMatchObject({ ok: false });
    expect(parseQuarantine('n', '[]')).toEqual({ ok: false, error: 'expected an object keyed by GPU index' });
    expect(parseQuarantine('n', '{"x":{}}')).toEqual({ ok: false, error: 'key "x": not a GPU index' });
    expect(parseQuarantine('n', '{"1":{"reason":"r","since":"yesterday","until":"2026-12-01T17:15:00Z"}}')).toEqual({
      ok: false,
      error: 'GPU 1: since: expected an RFC 3339 time',
    });
    expect(parseQuarantine('n', '{"1":{"since":"2026-12-01T17:15:00Z","until":"2026-12-01T17:15:00Z"}}')).toEqual({
      ok: false,
      error: 'GPU 1: reason: expected a non-empty string',
    });
    const at = '"since":"2026-12-01T17:00:00Z","until":"2026-12-01T17:15:00Z"';
    expect(parseQuarantine('n', `{"1":{"reason":"r","state":"dead",${at}}}`)).toEqual({
      ok: false,
      error: 'GPU 1: state: expected "suspect" or "failed", got "dead"',
    });
    expect(parseQuarantine('n', `{"1":{"reason":"r","state":null,${at}}}`)).toEqual({
      ok: false,
      error: 'GPU 1: state: expected "suspect" or "failed", got null',
    });
    expect(parseQuarantine('n', `{"1":{"reason":"r","state":"restore-last",${at}}}`)).toEqual({
      ok: false,
      error: 'GPU 1: state: expected "suspect" or "failed", got "restore-last"',
    });
  });
});
