/**
 * The Azure LLM inference trace format (TIMESTAMP,ContextTokens,GeneratedTokens; Patel et al., "Splitwise",
 * ISCA 2024): one request per row, its arrival time and its prompt and output lengths. Pure: it parses text the
 * caller read; a bad row is an error naming file:line:column.
 */
export interface TraceRequest {
  /** Seconds since the first request of the trace. */
  readonly arrivalSec: number;
  readonly promptTokens: number;
  readonly outputTokens: number;
}

export class TraceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TraceError';
  }
}

// "2023-11-16 18:17:03.9799600": date, time, optional fraction of any length (the trace has 7 digits).
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?$/;

function parseTimestamp(s: string): number | undefined {
  const m = TIMESTAMP.exec(s);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, se, frac] = m as unknown as [string, string, string, string, string, string, string, string | undefined];
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(se));
  if (Number.isNaN(ms)) return undefined;
  return ms / 1000 + (frac === undefined ? 0 : Number(`0.${frac}`));
}

/** Parses the CSV text (header required); arrivals must not go back in time. */
export function parseAzureTrace(text: string, file: string): TraceRequest[] {
  const lines = text.split(/\r?\n/);
  const header = (lines[0] ?? '').split(',').map((h) => h.trim());
  const col = (name: string): number => {
    const i = header.indexOf(name);
    if (i < 0) throw new TraceError(`${file}:1:1: the header must name TIMESTAMP, ContextTokens and GeneratedTokens (got ${JSON.stringify(lines[0] ?? '')})`);
    return i;
  };
  const [ti, ci, gi] = [col('TIMESTAMP'), col('ContextTokens'), col('GeneratedTokens')];
  const out: TraceRequest[] = [];
  let first: number | undefined;
  let last = Number.NEGATIVE_INFINITY;
  for (let n = 1; n < lines.length; n++) {
    const raw = lines[n] as string;
    if (raw.trim() === '') continue;
    const cells = raw.split(',');
    const column = (i: number): number => cells.slice(0, i).reduce((a, c) => a + c.length + 1, 1);
    const cell = (i: number): string => (cells[i] ?? '').trim();
    const t = parseTimestamp(cell(ti));
    if (t === undefined) throw new TraceError(`${file}:${n + 1}:${column(ti)}: TIMESTAMP ${JSON.stringify(cell(ti))} is not "YYYY-MM-DD hh:mm:ss[.fraction]"`);
    const count = (i: number, name: string, min: number): number => {
      const s = cell(i);
      if (!/^\d+$/.test(s) || Number(s) < min)
        throw new TraceError(`${file}:${n + 1}:${column(i)}: ${name} ${JSON.stringify(s)} is not a whole number ≥ ${min}`);
      return Number(s);
    };
    const promptTokens = count(ci, 'ContextTokens', 1);
    const outputTokens = count(gi, 'GeneratedTokens', 1);
    if (t < last) throw new TraceError(`${file}:${n + 1}:${column(ti)}: TIMESTAMP goes back in time (${cell(ti)})`);
    last = t;
    first ??= t;
    out.push({ arrivalSec: t - first, promptTokens, outputTokens });
  }
  if (out.length === 0) throw new TraceError(`${file}: no requests after the header`);
  return out;
}
