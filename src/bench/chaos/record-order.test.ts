import { describe, expect, it } from 'vitest';
import { inRevisionOrder, revisionOf } from './record-order.ts';

describe('chaos record order', () => {
  it('reads resourceVersion as a number, 0 when absent or not one', () => {
    expect(revisionOf('12345678901234567890')).toBe(12345678901234567890n);
    expect(revisionOf(undefined)).toBe(0n);
    expect(revisionOf('abc')).toBe(0n);
  });

  it('keeps the order of events of one revision', () => {
    const e = [
      { rv: 5n, id: 'b' },
      { rv: 5n, id: 'a' },
      { rv: 3n, id: 'c' },
    ];
    expect(inRevisionOrder(e).map((x) => x.id)).toEqual(['c', 'b', 'a']);
  });
});
