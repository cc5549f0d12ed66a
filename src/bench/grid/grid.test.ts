import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { fgdBenchJson } from '../fgd/summary.ts';
import { runGrid, GridTaskError } from './pool.ts';
import type { FgdTask } from './tasks.ts';

const fixture = (f: string): string => fileURLToPath(new URL(`../../sim/testdata/${f}`, import.meta.url));
const tasks: FgdTask[] = ['bestfit', 'sits'].flatMap((policy) => [42, 43, 44].map((seed) => ({ nodesFile: fixture('tiny_nodes.csv'), podsFile: fixture('tiny_pods.csv'), policy, seed, tune: 1.3, timing: false })));

describe('runGrid', () => {
  it('worker threads (TypeScript loader registered in each) give the same results, in task order, as one thread', async () => {
    const seen: number[] = [];
    const inline = await runGrid(tasks, { workers: 0, onProgress: (p) => seen.push(p.done) });
    const threaded = await runGrid(tasks, { workers: 2 });
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
    expect(threaded.map((r) => [r.policy, r.seed])).toEqual(tasks.map((t) => [t.policy, t.seed]));
    const json = (runs: typeof inline): string => JSON.stringify(fgdBenchJson('tiny_pods.csv', [42, 43, 44], ['bestfit', 'sits'], runs));
    expect(json(threaded)).toBe(json(inline));
  });
  it('reports the task that failed', async () => {
    const bad = { ...(tasks[0] as FgdTask), policy: 'no-such-policy' };
    await expect(runGrid([bad], { workers: 1 })).rejects.toBeInstanceOf(GridTaskError);
    await expect(runGrid([bad], { workers: 0 })).rejects.toThrow(/unknown profile "no-such-policy"/);
  });
});
