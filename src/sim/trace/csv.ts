/**
 * Minimal CSV reader that keeps line numbers: a header row, then rows of fields addressed by column name.
 * Quoted fields ("a,b", "" for a quote) are accepted; the shipped traces use none. Blank lines are skipped
 * (philly.csv ends with one).
 */
import { TraceError } from './errors.ts';

export interface CsvRow {
  /** 1-based line number in the file. */
  readonly line: number;
  readonly fields: readonly string[];
}

export interface CsvTable {
  readonly file: string;
  readonly header: readonly string[];
  readonly rows: readonly CsvRow[];
  /** Column index by name; missing = -1. */
  column(name: string): number;
}

function splitLine(text: string): string[] {
  if (!text.includes('"')) return text.split(',');
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

export function parseCsv(text: string, file: string): CsvTable {
  const lines = text.split('\n');
  let headerLine = -1;
  for (let i = 0; i < lines.length; i++) {
    if ((lines[i] as string).trim() !== '') {
      headerLine = i;
      break;
    }
  }
  if (headerLine < 0) throw new TraceError('Empty', file, 1, undefined, 'empty file: expected a header row');
  const header = splitLine((lines[headerLine] as string).replace(/\r$/, '')).map((h) => h.trim());
  const rows: CsvRow[] = [];
  for (let i = headerLine + 1; i < lines.length; i++) {
    const raw = (lines[i] as string).replace(/\r$/, '');
    if (raw.trim() === '') continue;
    const fields = splitLine(raw);
    if (fields.length !== header.length) {
      throw new TraceError('FieldCount', file, i + 1, undefined, `expected ${header.length} fields (${header.join(',')}), got ${fields.length}`);
    }
    rows.push({ line: i + 1, fields });
  }
  const index = new Map(header.map((h, i) => [h, i]));
  return { file, header, rows, column: (name) => index.get(name) ?? -1 };
}

/** Column indices for `names`, throwing MissingColumn (line 1) for the first one absent. */
export function requireColumns(t: CsvTable, names: readonly string[]): number[] {
  return names.map((n) => {
    const i = t.column(n);
    if (i < 0) throw new TraceError('MissingColumn', t.file, 1, n, `missing column (header: ${t.header.join(',')})`);
    return i;
  });
}

/** A non-negative integer field. */
export function intField(t: CsvTable, row: CsvRow, col: number, opts: { min?: number; max?: number } = {}): number {
  const name = t.header[col] as string;
  const s = (row.fields[col] ?? '').trim();
  if (!/^-?\d+$/.test(s)) throw new TraceError('BadValue', t.file, row.line, name, `expected an integer, got ${JSON.stringify(s)}`);
  const v = Number(s);
  const min = opts.min ?? 0;
  if (v < min) throw new TraceError('BadValue', t.file, row.line, name, `must be ≥ ${min}, got ${v}`);
  if (opts.max !== undefined && v > opts.max) throw new TraceError('BadValue', t.file, row.line, name, `must be ≤ ${opts.max}, got ${v}`);
  return v;
}

/** A finite non-negative number field (durations in seconds may carry decimals). */
export function numField(t: CsvTable, row: CsvRow, col: number): number {
  const name = t.header[col] as string;
  const s = (row.fields[col] ?? '').trim();
  const v = s === '' ? Number.NaN : Number(s);
  if (!Number.isFinite(v) || v < 0) throw new TraceError('BadValue', t.file, row.line, name, `expected a non-negative number, got ${JSON.stringify(s)}`);
  return v;
}

export function textField(t: CsvTable, row: CsvRow, col: number, required = true): string {
  const s = (row.fields[col] ?? '').trim();
  if (required && s === '') throw new TraceError('BadValue', t.file, row.line, t.header[col], 'must not be empty');
  return s;
}
