import { describe, expect, it, vi } from 'vitest';
import { safeReason, setCondition } from './conditions.ts';
import { statusPatch } from './runner.ts';
import { WorkQueue } from './work-queue.ts';
import { dataLoaderHint, mergeEnv } from './training-job/env.ts';

describe('WorkQueue', () => {
  it('runs one worker per key; a key added while it runs runs once more afterwards', async () => {
    const log: string[] = [];
    let release: (() => void) | undefined;
    const q = new WorkQueue(async (k) => {
      log.push(`start ${k}`);
      if (k === 'a' && release === undefined) await new Promise<void>((r) => (release = r));
      log.push(`end ${k}`);
    }, 2);
    q.add('a');
    q.add('b');
    await vi.waitFor(() => expect(log).toEqual(['start a', 'start b', 'end b']));
    // While a runs, adding it again starts no second worker: it is only marked to run once more.
    q.add('a');
    q.add('a');
    expect(log).toEqual(['start a', 'start b', 'end b']);
    release?.();
    await vi.waitFor(() => expect(log).toEqual(['start a', 'start b', 'end b', 'end a', 'start a', 'end a']));
    await q.stop();
    expect(log).toHaveLength(6);
  });

  it('addAfter keeps the earliest timer per key; stop cancels timers', async () => {
    // Fake timers: the test says exactly when each timer is due, whatever the machine's load.
    vi.useFakeTimers();
    try {
      const seen: string[] = [];
      const q = new WorkQueue(async (k) => {
        seen.push(k);
      });
      q.addAfter('k', 200);
      q.addAfter('k', 20);
      q.addAfter('k', 500);
      await vi.advanceTimersByTimeAsync(19);
      expect(seen).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(seen).toEqual(['k']);
      // The 200 ms and 500 ms timers were never kept.
      await vi.advanceTimersByTimeAsync(1000);
      expect(seen).toEqual(['k']);
      q.addAfter('late', 50);
      await q.stop();
      await vi.advanceTimersByTimeAsync(100);
      expect(seen).toEqual(['k']);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('statusPatch', () => {
  it('sends only what changed, null for removed fields, nothing when equal', () => {
    expect(statusPatch({ phase: 'Running', restartCount: 1, nextAttemptTime: '2026-01-01T00:00:00Z' }, { phase: 'Running', restartCount: 2 })).toEqual({ restartCount: 2, nextAttemptTime: null });
    expect(statusPatch({ nodes: ['a'] }, { nodes: ['a'] })).toBeUndefined();
    expect(statusPatch({}, { phase: 'Pending' })).toEqual({ phase: 'Pending' });
  });
});

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
    expect(mergeEnv([{ name: 'A', value: '1' }, { name: 'B', value: '2' }], [{ name: 'C', value: '3' }, { name: 'A', valueFrom: { fieldRef: {} } }])).toEqual([
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
