import { describe, expect, it, vi } from 'vitest';
import { WorkQueue } from './work-queue.ts';

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
