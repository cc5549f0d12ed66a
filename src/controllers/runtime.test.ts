import { describe, expect, it } from 'vitest';
import { safeReason, setCondition } from './conditions.ts';
import { statusPatch } from './runner.ts';
import { WorkQueue } from './work-queue.ts';
import { dataLoaderHint, mergeEnv } from './training-job/env.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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
    await sleep(10);
    q.add('a');
    q.add('a');
    await sleep(10);
    expect(log).toEqual(['start a', 'start b', 'end b']);
    release?.();
    await sleep(20);
    expect(log).toEqual(['start a', 'start b', 'end b', 'end a', 'start a', 'end a']);
    await q.stop();
  });

  it('addAfter keeps the earliest timer per key; stop cancels timers', async () => {
    const seen: string[] = [];
    const q = new WorkQueue(async (k) => {
      seen.push(k);
    });
    q.addAfter('k', 200);
    q.addAfter('k', 20);
    q.addAfter('k', 500);
    // Timers fire in deadline order: the 20 ms one before this sleep ends.
    await sleep(120);
    expect(seen).toHaveLength(1);
    await sleep(500);
    expect(seen).toHaveLength(1);
    q.addAfter('late', 50);
    await q.stop();
    await sleep(80);
    expect(seen).toHaveLength(1);
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
