import { describe, expect, it } from 'vitest';
import { waitFor } from './e2e-kit.ts';

describe('waitFor', () => {
  it('returns the first value that is not undefined or false, throws counting as not yet', async () => {
    let n = 0;
    const v = await waitFor(
      'the third poll',
      async () => {
        n++;
        if (n === 1) throw new Error('not ready');
        return n === 3 ? { n } : n === 2 ? false : undefined;
      },
      5000,
      1,
    );
    expect(v).toEqual({ n: 3 });
  });

  it('gives up once its idle-machine budget is spent, naming what it waited for and the last error', async () => {
    const t0 = performance.now();
    await expect(
      waitFor(
        'a thing that never comes',
        async () => {
          throw new Error('still 404');
        },
        150,
        5,
      ),
    ).rejects.toThrow(/timed out after \d+ ms \(a budget of 150 ms on an idle machine\) waiting for a thing that never comes \(last error: still 404\)/);
    // The budget is spent no faster than real time: it never gives up early.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(150);
  });
});
