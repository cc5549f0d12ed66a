import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { inRevisionOrder, revisionOf } from './record-order.ts';

describe('chaos record order', () => {
  it('reads resourceVersion as a number, 0 when absent or not one', () => {
    expect(revisionOf({ metadata: { resourceVersion: '12345678901234567890' } } as V1Pod)).toBe(12345678901234567890n);
    expect(revisionOf({ metadata: {} } as V1Pod)).toBe(0n);
    expect(revisionOf({ metadata: { resourceVersion: 'abc' } } as V1Pod)).toBe(0n);
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
