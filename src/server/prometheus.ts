/**
 * A small Prometheus registry and the text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/): counters, gauges and histograms, with
 * labels, either kept here or read from elsewhere at scrape time. No dependency: prom-client is not
 * installed, and what a scheduler needs is little.
 */

export type Labels = Readonly<Record<string, string>>;
export type MetricType = 'counter' | 'gauge' | 'histogram';

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** HELP text: backslash and line feed escaped. */
export const escapeHelp = (s: string): string => s.replaceAll('\\', '\\\\').replaceAll('\n', '\\n');
/** Label values: backslash, double quote and line feed escaped. */
export const escapeLabelValue = (s: string): string => s.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');

/** Sample values as Go's ParseFloat reads them (integers without exponent, +Inf, -Inf, NaN). */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return Number.isInteger(v) && Math.abs(v) < 1e21 ? v.toFixed(0) : String(v);
}

function formatLabels(names: readonly string[], values: readonly string[], extra?: [string, string]): string {
  const pairs = names.map((n, i) => `${n}="${escapeLabelValue(values[i] ?? '')}"`);
  if (extra !== undefined) pairs.push(`${extra[0]}="${escapeLabelValue(extra[1])}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  render(out: string[]): void;
}

abstract class Labelled<T> implements Family {
  protected readonly children = new Map<string, { values: string[]; data: T }>();
  abstract readonly type: MetricType;
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    checkNames(name, labelNames);
  }
  protected child(labels: Labels): T {
    const values = this.labelNames.map((n) => {
      const v = labels[n];
      if (v === undefined) throw new Error(`${this.name}: label ${n} missing`);
      return v;
    });
    for (const k of Object.keys(labels)) if (!this.labelNames.includes(k)) throw new Error(`${this.name}: unknown label ${k}`);
    const key = JSON.stringify(values);
    let c = this.children.get(key);
    if (c === undefined) {
      c = { values, data: this.init() };
      this.children.set(key, c);
    }
    return c.data;
  }
  protected abstract init(): T;
  abstract render(out: string[]): void;
}

function checkNames(name: string, labelNames: readonly string[]): void {
  if (!METRIC_NAME.test(name)) throw new Error(`invalid metric name ${JSON.stringify(name)}`);
  for (const l of labelNames) if (!LABEL_NAME.test(l) || l.startsWith('__')) throw new Error(`${name}: invalid label name ${JSON.stringify(l)}`);
  if (new Set(labelNames).size !== labelNames.length) throw new Error(`${name}: duplicate label names`);
}

export class Counter extends Labelled<{ v: number }> {
  readonly type = 'counter';
  protected init(): { v: number } {
    return { v: 0 };
  }
  inc(labels: Labels = {}, by = 1): void {
    if (!(by >= 0)) throw new Error(`${this.name}: a counter only goes up (inc by ${by})`);
    this.child(labels).v += by;
  }
  render(out: string[]): void {
    for (const c of this.children.values()) out.push(`${this.name}${formatLabels(this.labelNames, c.values)} ${formatValue(c.data.v)}`);
  }
}

export class Gauge extends Labelled<{ v: number }> {
  readonly type = 'gauge';
  protected init(): { v: number } {
    return { v: 0 };
  }
  set(v: number, labels: Labels = {}): void {
    this.child(labels).v = v;
  }
  render(out: string[]): void {
    for (const c of this.children.values()) out.push(`${this.name}${formatLabels(this.labelNames, c.values)} ${formatValue(c.data.v)}`);
  }
}

interface HistogramData {
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Labelled<HistogramData> {
  readonly type = 'histogram';
  readonly buckets: readonly number[];
  constructor(name: string, help: string, buckets: readonly number[], labelNames: readonly string[] = []) {
    super(name, help, labelNames);
    if (labelNames.includes('le')) throw new Error(`${name}: "le" is reserved for buckets`);
    const b = [...buckets].filter((x) => x !== Number.POSITIVE_INFINITY);
    if (b.length === 0 || b.some((x, i) => !Number.isFinite(x) || (i > 0 && x <= (b[i - 1] as number)))) throw new Error(`${name}: buckets must be finite and strictly increasing`);
    this.buckets = b;
  }
  protected init(): HistogramData {
    return { counts: new Array<number>(this.buckets.length).fill(0), sum: 0, count: 0 };
  }
  observe(v: number, labels: Labels = {}): void {
    const d = this.child(labels);
    // Counts per bucket (not cumulative); rendering accumulates.
    const i = this.buckets.findIndex((b) => v <= b);
    if (i >= 0) d.counts[i] = (d.counts[i] as number) + 1;
    d.sum += v;
    d.count++;
  }
  /** Makes the series appear (all zero) before the first observation. */
  touch(labels: Labels = {}): void {
    this.child(labels);
  }
  render(out: string[]): void {
    for (const c of this.children.values()) {
      let acc = 0;
      this.buckets.forEach((b, i) => {
        acc += c.data.counts[i] as number;
        out.push(`${this.name}_bucket${formatLabels(this.labelNames, c.values, ['le', formatValue(b)])} ${formatValue(acc)}`);
      });
      out.push(`${this.name}_bucket${formatLabels(this.labelNames, c.values, ['le', '+Inf'])} ${formatValue(c.data.count)}`);
      out.push(`${this.name}_sum${formatLabels(this.labelNames, c.values)} ${formatValue(c.data.sum)}`);
      out.push(`${this.name}_count${formatLabels(this.labelNames, c.values)} ${formatValue(c.data.count)}`);
    }
  }
}

/** A counter or gauge whose samples are read at scrape time (e.g. from an object's `stats`). */
class Collected implements Family {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge',
    private readonly labelNames: readonly string[],
    private readonly collect: () => readonly (readonly [Labels, number])[],
  ) {
    checkNames(name, labelNames);
  }
  render(out: string[]): void {
    const seen = new Set<string>();
    for (const [labels, v] of this.collect()) {
      const values = this.labelNames.map((n) => labels[n] ?? '');
      const key = JSON.stringify(values);
      if (seen.has(key)) throw new Error(`${this.name}: duplicate series ${key}`);
      seen.add(key);
      out.push(`${this.name}${formatLabels(this.labelNames, values)} ${formatValue(v)}`);
    }
  }
}

export class Registry {
  private readonly families = new Map<string, Family>();

  private add<F extends Family>(f: F): F {
    for (const suffix of ['', '_bucket', '_sum', '_count']) {
      if (this.families.has(f.name + suffix)) throw new Error(`metric ${f.name} registered twice`);
    }
    this.families.set(f.name, f);
    return f;
  }
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.add(new Counter(name, help, labelNames));
  }
  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.add(new Gauge(name, help, labelNames));
  }
  histogram(name: string, help: string, buckets: readonly number[], labelNames: readonly string[] = []): Histogram {
    return this.add(new Histogram(name, help, buckets, labelNames));
  }
  /** `collect` returns the current samples: [labels, value] per series, or a plain number for a family without labels. */
  collected(name: string, help: string, type: 'counter' | 'gauge', labelNames: readonly string[], collect: () => readonly (readonly [Labels, number])[] | number): void {
    this.add(
      new Collected(name, help, type, labelNames, () => {
        const r = collect();
        return typeof r === 'number' ? [[{}, r]] : r;
      }),
    );
  }
  names(): string[] {
    return [...this.families.keys()];
  }
  /** The text exposition format: HELP, TYPE, then the family's samples; families in registration order. */
  render(): string {
    const out: string[] = [];
    for (const f of this.families.values()) {
      out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
      f.render(out);
    }
    return `${out.join('\n')}\n`;
  }
}
