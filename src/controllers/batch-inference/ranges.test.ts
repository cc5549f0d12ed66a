import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { chunks, covers, normalise, split, subtract, total, union } from './ranges.ts';

describe('record ranges', () => {
  it('normalises overlapping and adjacent ranges into one sorted disjoint list', () => {
    expect(
      normalise([
        { start: 5, end: 8 },
        { start: 0, end: 2 },
        { start: 2, end: 4 },
        { start: 7, end: 9 },
        { start: 3, end: 3 },
      ]),
    ).toEqual([
      { start: 0, end: 4 },
      { start: 5, end: 9 },
    ]);
  });
  it('subtracts a set from a range', () => {
    const set = normalise([
      { start: 2, end: 4 },
      { start: 6, end: 7 },
    ]);
    expect(subtract({ start: 0, end: 10 }, set)).toEqual([
      { start: 0, end: 2 },
      { start: 4, end: 6 },
      { start: 7, end: 10 },
    ]);
    expect(subtract({ start: 2, end: 4 }, set)).toEqual([]);
    expect(covers(set, { start: 2, end: 4 })).toBe(true);
    expect(covers(set, { start: 2, end: 5 })).toBe(false);
  });
  it('chunks and splits without losing or repeating a record', () => {
    expect(chunks({ start: 0, end: 10 }, 4)).toEqual([
      { start: 0, end: 4 },
      { start: 4, end: 8 },
      { start: 8, end: 10 },
    ]);
    expect(split({ start: 0, end: 3 }, 5)).toEqual([
      { start: 0, end: 1 },
      { start: 1, end: 2 },
      { start: 2, end: 3 },
    ]);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 9 }), (s, n, k) => {
        const r = { start: s, end: s + n };
        for (const parts of [split(r, k), chunks(r, k)]) {
          expect(total(parts)).toBe(n);
          expect(union([], parts)).toEqual([r]);
        }
      }),
    );
  });
  it('subtract and union agree: r minus S plus S covers r', () => {
    const range = fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 10 })).map(([s, n]) => ({ start: s, end: s + n }));
    fc.assert(
      fc.property(range, fc.array(range, { maxLength: 6 }), (r, rs) => {
        const set = normalise(rs);
        const rest = subtract(r, set);
        for (const p of rest) for (const c of set) expect(p.start >= c.end || c.start >= p.end).toBe(true);
        if (r.end > r.start) expect(covers(union(set, rest), r)).toBe(true);
      }),
    );
  });
});
