import { describe, expect, it } from 'vitest';
import { WorkQueue } from './work-queue.ts';

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
