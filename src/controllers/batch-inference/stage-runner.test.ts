import { describe, expect, it } from 'vitest';
import { runStages, type LiveStage } from './stage-runner.ts';

const now = (): number => performance.now();
const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A source over 0..n-1 that counts what it handed out. */
function counter(n: number): { next: () => number | undefined; pulled: () => number } {
  let i = 0;
  return { next: () => (i < n ? i++ : undefined), pulled: () => i };
}

describe('runStages', () => {
  it('takes every record through the stages in order; a record finished early skips the rest', async () => {
    const seen: string[][] = Array.from({ length: 20 }, () => []);
    const stage = (name: string, early?: (i: number) => boolean): LiveStage<number> => ({
      name,
      concurrency: () => 3,
      run: async (i) => {
        await tick(i % 3);
        (seen[i] as string[]).push(name);
        return early?.(i) === true ? 'done' : 'next';
      },
    });
    const src = counter(20);
    const stats = await runStages(
      src.next,
      [stage('tokenise', (i) => i % 5 === 0), stage('infer'), stage('postprocess')],
      () => 4,
      new AbortController().signal,
      now,
    );
    for (let i = 0; i < 20; i++) expect(seen[i]).toEqual(i % 5 === 0 ? ['tokenise'] : ['tokenise', 'infer', 'postprocess']);
    expect(stats.map((s) => [s.name, s.processed])).toEqual([
      ['tokenise', 20],
      ['infer', 16],
      ['postprocess', 16],
    ]);
  });

  it('holds records back when a later stage is slow: queues stay within capacity and the source is read only as fast as the slow stage drains', async () => {
    const release: (() => void)[] = [];
    let inFirst = 0;
    let finished = 0;
    const src = counter(40);
    let worst = 0;
    const first: LiveStage<number> = {
      name: 'tokenise',
      concurrency: () => 4,
      run: async () => {
        inFirst++;
        await tick();
        inFirst--;
        return 'next';
      },
    };
    const slow: LiveStage<number> = {
      name: 'infer',
      concurrency: () => 2,
      run: () =>
        new Promise((r) => {
          release.push(() => r('next'));
        }),
    };
    const last: LiveStage<number> = {
      name: 'postprocess',
      concurrency: () => 1,
      run: async () => {
        finished++;
        return 'next';
      },
    };
    const done = runStages(src.next, [first, slow, last], (s) => (s === 1 ? 3 : 2), new AbortController().signal, now);
    for (let round = 0; round < 200 && finished < 40; round++) {
      await tick(1);
      // In flight: at most 4 in the first stage (working or waiting), 3 queued, 2 in the slow stage, and the last's.
      worst = Math.max(worst, src.pulled() - finished);
      release.shift()?.();
    }
    const stats = await done;
    expect(finished).toBe(40);
    expect(inFirst).toBe(0);
    expect(worst).toBeLessThanOrEqual(4 + 3 + 2 + 2 + 1);
    expect(worst).toBeGreaterThan(2); // it does run ahead, up to the bound
    expect(stats[1]?.maxQueue).toBe(3);
    expect(stats[0]?.blockedMs).toBeGreaterThan(0);
  });

  it('reads the concurrency at every start, so a new batch size applies to the next record', async () => {
    let slots = 1;
    let running = 0;
    let most = 0;
    const starts: number[] = [];
    const stage: LiveStage<number> = {
      name: 'infer',
      concurrency: () => slots,
      run: async (i) => {
        running++;
        most = Math.max(most, running);
        starts.push(running);
        if (i === 3) slots = 4;
        await tick(2);
        running--;
        return 'next';
      },
    };
    await runStages(counter(30).next, [stage], () => 1, new AbortController().signal, now);
    expect(starts.slice(0, 4)).toEqual([1, 1, 1, 1]);
    expect(most).toBe(4);
  });

  it('rejects with the first failure and starts nothing after it', async () => {
    const src = counter(100);
    let started = 0;
    const stage: LiveStage<number> = {
      name: 'infer',
      concurrency: () => 2,
      run: async (i) => {
        started++;
        await tick();
        if (i === 5) throw new Error('engine down');
        return 'next';
      },
    };
    await expect(runStages(src.next, [stage], () => 1, new AbortController().signal, now)).rejects.toThrow('engine down');
    const at = started;
    await tick(20);
    expect(started).toBe(at);
    expect(src.pulled()).toBeLessThan(10);
  });

  it('on abort, lets the work in flight end, drops what is queued and resolves', async () => {
    const ac = new AbortController();
    const src = counter(1000);
    let lastDone = 0;
    const stages: LiveStage<number>[] = [
      { name: 'tokenise', concurrency: () => 2, run: async () => 'next' },
      {
        name: 'infer',
        concurrency: () => 1,
        run: async () => {
          await tick(1);
          return 'next';
        },
      },
      {
        name: 'postprocess',
        concurrency: () => 1,
        run: async () => {
          lastDone++;
          return 'next';
        },
      },
    ];
    const done = runStages(src.next, stages, () => 2, ac.signal, now);
    await tick(15);
    ac.abort();
    const stats = await done;
    expect(src.pulled()).toBeLessThan(1000);
    expect(stats[2]?.processed).toBe(lastDone);
    expect(lastDone).toBeLessThan(src.pulled());
  });
});
