/**
 * Half-open record ranges [start, end) over the input's line order, and sets of them kept sorted and
 * disjoint. The output commit protocol is built on these: a commit accepts exactly the records of an attempt
 * not yet covered, so two copies of the same records (a retry, a speculative copy, an attempt adopted after a
 * coordinator restart) can never both reach the output.
 */
export interface Range {
  readonly start: number;
  readonly end: number;
}

export const size = (r: Range): number => Math.max(0, r.end - r.start);

export const overlaps = (a: Range, b: Range): boolean => a.start < b.end && b.start < a.end;

/** A sorted, disjoint, non-adjacent list of non-empty ranges. */
export type RangeSet = readonly Range[];

export function normalise(rs: readonly Range[]): Range[] {
  const sorted = rs.filter((r) => r.end > r.start).sort((a, b) => a.start - b.start || a.end - b.end);
  const out: Range[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && r.start <= last.end) out[out.length - 1] = { start: last.start, end: Math.max(last.end, r.end) };
    else out.push({ start: r.start, end: r.end });
  }
  return out;
}

export const union = (a: RangeSet, b: readonly Range[]): Range[] => normalise([...a, ...b]);

/** The parts of `r` not in `set`. */
export function subtract(r: Range, set: RangeSet): Range[] {
  const out: Range[] = [];
  let cursor = r.start;
  for (const c of set) {
    if (c.end <= cursor) continue;
    if (c.start >= r.end) break;
    if (c.start > cursor) out.push({ start: cursor, end: Math.min(c.start, r.end) });
    cursor = Math.max(cursor, c.end);
    if (cursor >= r.end) break;
  }
  if (cursor < r.end) out.push({ start: cursor, end: r.end });
  return out;
}

export const covers = (set: RangeSet, r: Range): boolean => subtract(r, set).length === 0;

export const total = (set: readonly Range[]): number => set.reduce((a, r) => a + size(r), 0);

/** Cuts `r` into consecutive pieces of at most `chunk` records. */
export function chunks(r: Range, chunk: number): Range[] {
  const step = Math.max(1, Math.floor(chunk));
  const out: Range[] = [];
  for (let s = r.start; s < r.end; s += step) out.push({ start: s, end: Math.min(r.end, s + step) });
  return out;
}

/** Cuts `r` into `k` consecutive pieces of near-equal size (fewer when `r` has fewer records). */
export function split(r: Range, k: number): Range[] {
  const n = size(r);
  const parts = Math.max(1, Math.min(n, Math.floor(k)));
  const out: Range[] = [];
  for (let i = 0; i < parts; i++) {
    const s = r.start + Math.floor((n * i) / parts);
    const e = r.start + Math.floor((n * (i + 1)) / parts);
    if (e > s) out.push({ start: s, end: e });
  }
  return out;
}

export const fmt = (r: Range): string => `[${r.start},${r.end})`;
