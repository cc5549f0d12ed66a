import { describe, expect, it } from 'vitest';
import { runPeriodically } from './periodic.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('runPeriodically', () => {
  it('never runs two passes at once, and stop waits for the pass in flight and ends the loop', async () => {
    let inFlight = 0;
    let most = 0;
    let passes = 0;
    let release: (() => void) | undefined;
    const loop = runPeriodically(async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      passes++;
      if (passes === 2) await new Promise<void>((r) => (release = r)); // a slow pass: the next one waits for it
      inFlight--;
    }, 1);
    for (let i = 0; i < 500 && release === undefined; i++) await sleep(2);
    expect(release).toBeDefined();
    await sleep(20);
    expect(passes).toBe(2);
    let stopped = false;
    const s = loop.stop().then(() => (stopped = true));
    await sleep(10);
    expect(stopped).toBe(false); // still waiting for the slow pass
    release?.();
    await s;
    const after = passes;
    await sleep(20);
    expect(passes).toBe(after);
    expect(most).toBe(1);
  });
});
