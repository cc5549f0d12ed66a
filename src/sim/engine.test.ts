import { describe, expect, it } from 'vitest';
import { Environment, EventHeap } from './engine.ts';

describe('EventHeap', () => {
  it('orders by time, then priority, then insertion', () => {
    const h = new EventHeap<string>();
    h.push(5, 1, 'c');
    h.push(5, 0, 'b');
    h.push(1, 9, 'a');
    h.push(5, 0, 'b2');
    h.push(7, 0, 'd');
    const out: string[] = [];
    for (let e = h.pop(); e !== undefined; e = h.pop()) out.push(e.payload);
    expect(out).toEqual(['a', 'b', 'b2', 'c', 'd']);
  });
});

describe('Environment', () => {
  it('advances virtual time and lets handlers schedule more events', () => {
    const seen: [number, string][] = [];
    const env = new Environment<string>((e, en) => {
      seen.push([en.nowMs, e.payload]);
      if (e.payload === 'start') en.schedule(10, 0, 'later');
    });
    env.schedule(5, 0, 'start');
    env.run(12);
    expect(seen).toEqual([[5, 'start']]);
    expect(env.nowMs).toBe(12);
    env.run();
    expect(seen.at(-1)).toEqual([15, 'later']);
  });

  it('rejects negative delays', () => {
    const env = new Environment<number>(() => undefined);
    expect(() => env.schedule(-1, 0, 1)).toThrow(/bad delay/);
  });
});
