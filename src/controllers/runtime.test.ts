import { describe, expect, it } from 'vitest';
import { safeReason, setCondition } from './conditions.ts';
import { dataLoaderHint, mergeEnv } from './training-job/env.ts';

describe('conditions', () => {
  it('keep lastTransitionTime unless the status changes; reasons always match the metav1 pattern', () => {
    const a = setCondition([], { type: 'Running', status: 'True', reason: 'Go', message: 'x' }, 't1');
    const b = setCondition(a, { type: 'Running', status: 'True', reason: 'Go', message: 'y' }, 't2');
    const c = setCondition(b, { type: 'Running', status: 'False', reason: 'Stop', message: 'z' }, 't3');
    expect([a[0]?.lastTransitionTime, b[0]?.lastTransitionTime, c[0]?.lastTransitionTime]).toEqual(['t1', 't1', 't3']);
    expect(b[0]?.message).toBe('y');
    expect([safeReason('Not Found'), safeReason('409'), safeReason('ok:')]).toEqual(['NotFound', 'R409', 'ok']);
  });
});

describe('environment helpers', () => {
  it('mergeEnv: user entries replace injected ones in place, new ones come last', () => {
    expect(
      mergeEnv(
        [
          { name: 'A', value: '1' },
          { name: 'B', value: '2' },
        ],
        [
          { name: 'C', value: '3' },
          { name: 'A', valueFrom: { fieldRef: {} } },
        ],
      ),
    ).toEqual([
      { name: 'A', valueFrom: { fieldRef: {} } },
      { name: 'B', value: '2' },
      { name: 'C', value: '3' },
    ]);
  });

  it('dataLoaderHint follows seed 001 §1 and splits across processes', () => {
    expect([500, 1000, 2000, 4000, 8000].map((m) => dataLoaderHint(m, 1).workers)).toEqual([0, 0, 1, 2, 4]);
    expect(dataLoaderHint(32_000, 8)).toEqual({ workers: 2, pinMemory: true });
    expect(dataLoaderHint(1000, 1).pinMemory).toBe(false);
  });
});
