import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readDcgmMetrics, type DcgmDevice } from './dcgm.ts';
import { GpuHealthMonitor } from './monitor.ts';
import { T4_LABELS, withValue } from './testing.ts';

const T4 = readFileSync(new URL('./fixtures/dcgm-t4-datadog.txt', import.meta.url), 'utf8');
const devices = (text: string): DcgmDevice[] => {
  const r = readDcgmMetrics(text);
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const MIN = 60_000;

describe('GpuHealthMonitor', () => {
  it('no fault: no action', () => {
    const m = new GpuHealthMonitor();
    for (let t = 0; t < 30; t++) expect(m.observe('node-a', devices(T4), t * MIN)).toEqual([]);
  });

  it('suspect → quarantine + checkpoint-first intent once; escalation to failed re-emits restore-last; check releases', () => {
    const m = new GpuHealthMonitor({ quarantineMs: 15 * MIN });
    m.observe('node-a', devices(T4), 0);
    const a = m.observe('node-a', devices(withValue(T4, 'DCGM_FI_DEV_RETIRED_PENDING', 0, 1, T4_LABELS)), MIN);
    expect(a.map((x) => x.kind)).toEqual(['quarantine', 'checkpoint-and-migrate']);
    expect(a[1]).toEqual({
      kind: 'checkpoint-and-migrate',
      node: 'node-a',
      gpu: 0,
      uuid: 'GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e',
      mode: 'checkpoint-first',
      reason: '1 page(s) pending retirement (reset needed)',
      pods: [],
      atMs: MIN,
    });
    // Still suspect: the quarantine is extended, no second intent.
    expect(m.observe('node-a', devices(withValue(T4, 'DCGM_FI_DEV_RETIRED_PENDING', 0, 1, T4_LABELS)), 2 * MIN).map((x) => x.kind)).toEqual(['extend']);
    const f = m.observe('node-a', devices(withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', 0, 48, T4_LABELS)), 3 * MIN);
    expect(f.map((x) => x.kind)).toEqual(['extend', 'checkpoint-and-migrate']);
    expect(f[1]).toMatchObject({ mode: 'restore-last', reason: 'XID 48 (double-bit ECC error)' });
    // The book (what the Node's annotation says) carries the state too: suspect, then failed.
    expect(a[0]).toMatchObject({ kind: 'quarantine', state: 'suspect', entry: { state: 'suspect' } });
    expect(m.book.get({ node: 'node-a', gpu: 0 })?.state).toBe('failed');
    // Healthy readings again; the period (15 min from the last flag) runs out, the check is due and passes.
    let due: string[] = [];
    for (let t = 4; t <= 18; t++) due = m.observe('node-a', devices(withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', 0, 48, T4_LABELS)), t * MIN).map((x) => x.kind);
    expect(due).toEqual(['health-check-due']);
    const ref = { node: 'node-a', gpu: 0 };
    expect(m.builtInCheck(ref)).toEqual({ passed: true, detail: '' });
    expect(m.checkResult(ref, true, 18 * MIN).map((x) => x.kind)).toEqual(['release']);
    expect(m.book.isQuarantined(ref)).toBe(false);
  });

  it('a failing check keeps the device out for another period', () => {
    const m = new GpuHealthMonitor({ quarantineMs: 15 * MIN });
    m.observe('node-a', devices(withValue(T4, 'DCGM_FI_DEV_GPU_TEMP', 0, 95, T4_LABELS)), 0);
    const ref = { node: 'node-a', gpu: 0 };
    expect(m.builtInCheck(ref)).toEqual({ passed: false, detail: 'health check failed: GPU at 95 °C (threshold 88 °C)' });
    expect(m.checkResult(ref, false, 15 * MIN, 'health check failed: GPU at 95 °C (threshold 88 °C)')).toMatchObject([
      { kind: 'extend', entry: { untilMs: 30 * MIN, failedChecks: 1 } },
    ]);
  });
});
