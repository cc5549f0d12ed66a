/**
 * The one parser of the Prometheus text exposition format 0.0.4, for tests and benchmarks (why our own:
 * docs/adr/0033-prometheus-text-parser.md). It is strict: it rejects what Prometheus' own parser rejects
 * (bad names, bad escapes, unterminated label values, duplicate labels, values that are not floats, a TYPE
 * after samples or twice, a family split into groups, no final newline) and then checks what the format
 * promises about each family: counters not negative, no duplicate series, histograms with increasing `le`,
 * cumulative counts that never go down, a `+Inf` bucket equal to `_count`, and a `_sum`.
 */

export type FamilyType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
  readonly timestampMs?: number;
}

export interface MetricFamily {
  readonly name: string;
  help?: string;
  type: FamilyType;
  readonly samples: Sample[];
}

export class PromParseError extends Error {
  readonly code = 'PromParseError';
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(line > 0 ? `line ${line}: ${message}` : message);
    this.name = 'PromParseError';
  }
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;
// Go's strconv.ParseFloat, decimal only: digits with optional fraction and exponent, [+-]Inf(inity), NaN.
const FLOAT = /^(?:[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?)|nan)$/i;
const TYPES: readonly FamilyType[] = ['counter', 'gauge', 'histogram', 'summary', 'untyped'];

export function parseFloatStrict(s: string, line: number): number {
  if (!FLOAT.test(s)) throw new PromParseError(line, `not a float: ${JSON.stringify(s)}`);
  if (/^[+-]?inf/i.test(s)) return s.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  if (/^nan$/i.test(s)) return Number.NaN;
  return Number(s);
}

function unescape(s: string, allowQuote: boolean, line: number): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const n = s[++i];
    if (n === '\\') out += '\\';
    else if (n === 'n') out += '\n';
    else if (n === '"' && allowQuote) out += '"';
    else throw new PromParseError(line, `invalid escape sequence \\${n ?? ''}`);
  }
  return out;
}

/** Parses `{a="x",b="y"}` starting at s[0] === '{'; returns the labels and the rest of the line. */
function parseLabels(s: string, line: number): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  for (;;) {
    if (s[i] === '}') return { labels, rest: s.slice(i + 1) };
    const m = LABEL_NAME.exec(s.slice(i));
    if (m === null) throw new PromParseError(line, `invalid label name at ${JSON.stringify(s.slice(i, i + 20))}`);
    const name = m[0];
    i += name.length;
    if (s[i] !== '=') throw new PromParseError(line, `expected = after label ${name}`);
    if (s[i + 1] !== '"') throw new PromParseError(line, `expected " to open the value of label ${name}`);
    i += 2;
    let raw = '';
    for (;;) {
      const c = s[i];
      if (c === undefined) throw new PromParseError(line, `unterminated value of label ${name}`);
      if (c === '\\') {
        raw += c + (s[i + 1] ?? '');
        i += 2;
        continue;
      }
      if (c === '"') break;
      raw += c;
      i++;
    }
    i++;
    if (name in labels) throw new PromParseError(line, `duplicate label ${name}`);
    labels[name] = unescape(raw, true, line);
    if (s[i] === ',') i++;
    else if (s[i] !== '}') throw new PromParseError(line, `expected , or } after label ${name}`);
  }
}

function familyOf(name: string, families: Map<string, MetricFamily>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const base = name.slice(0, -suffix.length);
    const f = families.get(base);
    if (f !== undefined && (f.type === 'histogram' || (f.type === 'summary' && suffix !== '_bucket'))) return base;
  }
  return name;
}

/** Parses a whole scrape; throws PromParseError on the first problem. */
export function parsePromText(text: string): Map<string, MetricFamily> {
  if (text.length > 0 && !text.endsWith('\n')) throw new PromParseError(0, 'the last line must end with a line feed');
  const families = new Map<string, MetricFamily>();
  const closed = new Set<string>();
  let current: string | undefined;
  const family = (name: string): MetricFamily => {
    let f = families.get(name);
    if (f === undefined) {
      f = { name, type: 'untyped', samples: [] };
      families.set(name, f);
    }
    return f;
  };
  const enter = (name: string, line: number): void => {
    if (current === name) return;
    if (closed.has(name)) throw new PromParseError(line, `metric family ${name} appears in more than one group`);
    if (current !== undefined) closed.add(current);
    current = name;
  };
  const lines = text.split('\n');
  lines.pop();
  lines.forEach((raw, idx) => {
    const line = idx + 1;
    if (raw.trim() === '') return;
    if (raw.includes('\r')) throw new PromParseError(line, 'carriage return in line');
    const trimmed = raw.replace(/^[ \t]+/, '');
    if (trimmed.startsWith('#')) {
      const m = /^#[ \t]+(HELP|TYPE)[ \t]+(.*)$/.exec(trimmed);
      if (m === null) return; // an ordinary comment
      const [, kw, restRaw] = m as unknown as [string, string, string];
      const nm = METRIC_NAME.exec(restRaw);
      if (nm === null) throw new PromParseError(line, `invalid metric name in ${kw}`);
      const name = nm[0];
      const after = restRaw.slice(name.length);
      if (after !== '' && !/^[ \t]/.test(after)) throw new PromParseError(line, `invalid metric name in ${kw}`);
      const arg = after.replace(/^[ \t]/, '');
      enter(name, line);
      const f = family(name);
      if (kw === 'HELP') {
        if (f.help !== undefined) throw new PromParseError(line, `second HELP for ${name}`);
        f.help = unescape(arg, false, line);
      } else {
        const t = arg.trim();
        if (!(TYPES as readonly string[]).includes(t)) throw new PromParseError(line, `unknown type ${JSON.stringify(t)} for ${name}`);
        if ((f as { typed?: boolean }).typed === true) throw new PromParseError(line, `second TYPE for ${name}`);
        if (f.samples.length > 0) throw new PromParseError(line, `TYPE for ${name} after its samples`);
        f.type = t as FamilyType;
        (f as { typed?: boolean }).typed = true;
      }
      return;
    }
    const nm = METRIC_NAME.exec(trimmed);
    if (nm === null) throw new PromParseError(line, `invalid metric name at ${JSON.stringify(trimmed.slice(0, 30))}`);
    const name = nm[0];
    let rest = trimmed.slice(name.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, line));
    if (!/^[ \t]+\S/.test(rest)) throw new PromParseError(line, `expected a value after ${name}`);
    const parts = rest.trim().split(/[ \t]+/);
    if (parts.length > 2) throw new PromParseError(line, `unexpected text after the value: ${JSON.stringify(parts.slice(2).join(' '))}`);
    const value = parseFloatStrict(parts[0] as string, line);
    let timestampMs: number | undefined;
    if (parts[1] !== undefined) {
      if (!/^-?\d+$/.test(parts[1])) throw new PromParseError(line, `invalid timestamp ${JSON.stringify(parts[1])}`);
      timestampMs = Number(parts[1]);
    }
    const fname = familyOf(name, families);
    enter(fname, line);
    const f = family(fname);
    if (f.type === 'histogram' && name === `${fname}_bucket` && labels.le === undefined) throw new PromParseError(line, `${name} without le`);
    if (f.type === 'histogram' && name === fname) throw new PromParseError(line, `histogram ${fname} has a sample without _bucket/_sum/_count`);
    // A summary's quantiles are samples of the bare name (kube-apiserver writes some).
    if (f.type === 'summary' && name === fname && labels.quantile === undefined)
      throw new PromParseError(line, `summary ${fname} has a sample without quantile, _sum or _count`);
    if (f.type !== 'histogram' && f.type !== 'summary' && name !== fname) throw new PromParseError(line, `sample ${name} in family ${fname}`);
    f.samples.push({ name, labels, value, ...(timestampMs === undefined ? {} : { timestampMs }) });
  });
  for (const f of families.values()) checkFamily(f);
  return families;
}

const seriesKey = (name: string, labels: Readonly<Record<string, string>>, without?: string): string =>
  `${name}${JSON.stringify(
    Object.keys(labels)
      .filter((k) => k !== without)
      .sort()
      .map((k) => [k, labels[k]]),
  )}`;

function checkFamily(f: MetricFamily): void {
  const seen = new Set<string>();
  for (const s of f.samples) {
    const k = seriesKey(s.name, s.labels);
    if (seen.has(k)) throw new PromParseError(0, `duplicate series ${k}`);
    seen.add(k);
    if (f.type === 'counter' && !(s.value >= 0)) throw new PromParseError(0, `counter ${s.name} is ${s.value}`);
  }
  if (f.type !== 'histogram') return;
  const groups = new Map<string, { le: number[]; counts: number[]; count?: number; sum?: number }>();
  const group = (labels: Readonly<Record<string, string>>): { le: number[]; counts: number[]; count?: number; sum?: number } => {
    const k = seriesKey('', labels, 'le');
    let g = groups.get(k);
    if (g === undefined) {
      g = { le: [], counts: [] };
      groups.set(k, g);
    }
    return g;
  };
  for (const s of f.samples) {
    const g = group(s.labels);
    if (s.name.endsWith('_bucket')) {
      g.le.push(parseFloatStrict(s.labels.le as string, 0));
      g.counts.push(s.value);
    } else if (s.name.endsWith('_count')) g.count = s.value;
    else g.sum = s.value;
  }
  for (const [k, g] of groups) {
    const where = `histogram ${f.name}${k}`;
    for (let i = 1; i < g.le.length; i++) {
      if (!((g.le[i] as number) > (g.le[i - 1] as number))) throw new PromParseError(0, `${where}: le not increasing (${g.le[i - 1]} then ${g.le[i]})`);
      if ((g.counts[i] as number) < (g.counts[i - 1] as number)) throw new PromParseError(0, `${where}: bucket counts go down at le=${g.le[i]}`);
    }
    if (g.le.at(-1) !== Number.POSITIVE_INFINITY) throw new PromParseError(0, `${where}: no le="+Inf" bucket`);
    if (g.count === undefined) throw new PromParseError(0, `${where}: no _count`);
    if (g.sum === undefined) throw new PromParseError(0, `${where}: no _sum`);
    if (g.counts.at(-1) !== g.count) throw new PromParseError(0, `${where}: +Inf bucket ${g.counts.at(-1)} differs from _count ${g.count}`);
  }
}

/** Every sample of a scrape, in the order of the text (families are never split): for sums across families. */
export function promSamples(text: string): Sample[] {
  return [...parsePromText(text).values()].flatMap((f) => f.samples);
}

/** The value of one series (labels must match exactly), or undefined. */
export function sampleValue(families: Map<string, MetricFamily>, name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  for (const f of families.values()) for (const s of f.samples) if (s.name === name && seriesKey('', s.labels) === seriesKey('', labels)) return s.value;
  return undefined;
}
