/** Plain-text tables for the terminal. */

/** The width every default table keeps to (kubectl's habit: the rest goes to `-o wide`). */
export const TABLE_WIDTH = 120;

export interface TableOptions {
  /** Columns aligned left (default: the first only; the others right, as numbers are). */
  readonly left?: readonly number[];
  /** At most this many columns wide: the `shrink` column's cells are cut with … to fit. */
  readonly maxWidth?: number;
  /** The column cut to fit `maxWidth` (default: the last). */
  readonly shrink?: number;
}

/** `text` cut to `width` characters, the last one an ellipsis when cut. */
export function ellipsis(text: string, width: number): string {
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join('')}…`;
}

export function table(headers: readonly string[], rows: readonly (readonly (string | number)[])[], opts: TableOptions = {}): string {
  let cells = [headers, ...rows.map((r) => r.map((c) => String(c)))];
  const len = (s: string): number => [...s].length;
  const widthsOf = (cs: readonly (readonly string[])[]): number[] => headers.map((_, i) => Math.max(...cs.map((r) => len(r[i] ?? ''))));
  let widths = widthsOf(cells);
  if (opts.maxWidth !== undefined) {
    const k = opts.shrink ?? headers.length - 1;
    const others = widths.reduce((a, w, i) => (i === k ? a : a + w), 0) + 2 * (headers.length - 1);
    const room = Math.max(len(headers[k] ?? ''), opts.maxWidth - others);
    if ((widths[k] ?? 0) > room) {
      cells = cells.map((r) => r.map((c, i) => (i === k ? ellipsis(c, room) : c)));
      widths = widthsOf(cells);
    }
  }
  const left = new Set(opts.left ?? [0]);
  const pad = (c: string, i: number): string => {
    const gap = ' '.repeat(Math.max(0, (widths[i] ?? 0) - len(c)));
    return left.has(i) ? c + gap : gap + c;
  };
  const line = (r: readonly string[]): string => r.map(pad).join('  ').trimEnd();
  return [line(cells[0] as string[]), widths.map((w) => '─'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}
