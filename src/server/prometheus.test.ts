import { describe, expect, it } from 'vitest';
import { escapeHelp, escapeLabelValue, formatValue, Registry } from './prometheus.ts';
import { parsePromText, sampleValue } from '../harness/prom-text.ts';

describe('Registry', () => {
  it('renders counters, gauges and histograms that the strict parser reads back', () => {
    const r = new Registry();
    const c = r.counter('x_total', 'help with \\ and\nnewline', ['a']);
    c.inc({ a: 'q"uote' }, 2);
    c.inc({ a: 'q"uote' });
    const g = r.gauge('y_bytes', 'a gauge');
    g.set(-3.5);
    const h = r.histogram('z_seconds', 'a histogram', [0.1, 1]);
    h.observe(0.05);
    h.observe(0.5);
    h.observe(5);
    r.collected('w', 'collected', 'gauge', ['k'], () => [[{ k: 'v' }, Number.POSITIVE_INFINITY]]);
    const f = parsePromText(r.render());
    expect(f.get('x_total')?.help).toBe('help with \\ and\nnewline');
    expect(sampleValue(f, 'x_total', { a: 'q"uote' })).toBe(3);
    expect(sampleValue(f, 'y_bytes')).toBe(-3.5);
    expect(sampleValue(f, 'z_seconds_bucket', { le: '0.1' })).toBe(1);
    expect(sampleValue(f, 'z_seconds_bucket', { le: '1' })).toBe(2);
    expect(sampleValue(f, 'z_seconds_bucket', { le: '+Inf' })).toBe(3);
    expect(sampleValue(f, 'z_seconds_sum')).toBe(5.55);
    expect(sampleValue(f, 'w', { k: 'v' })).toBe(Number.POSITIVE_INFINITY);
  });

  it('refuses bad names, labels, buckets, duplicates and counters going down', () => {
    const r = new Registry();
    expect(() => r.counter('1bad', 'x')).toThrow(/invalid metric name/);
    expect(() => r.counter('ok_total', 'x', ['__reserved'])).toThrow(/invalid label name/);
    expect(() => r.histogram('h', 'x', [1, 1])).toThrow(/strictly increasing/);
    expect(() => r.histogram('h2', 'x', [1], ['le'])).toThrow(/reserved/);
    const c = r.counter('c_total', 'x', ['a']);
    expect(() => r.gauge('c_total', 'x')).toThrow(/twice/);
    expect(() => c.inc({ a: '1' }, -1)).toThrow(/only goes up/);
    expect(() => c.inc({})).toThrow(/label a missing/);
    expect(() => c.inc({ a: '1', b: '2' })).toThrow(/unknown label b/);
  });

  it('escapes and formats as the format says', () => {
    expect(escapeHelp('a\\b\nc"d')).toBe('a\\\\b\\nc"d');
    expect(escapeLabelValue('a\\b\nc"d')).toBe('a\\\\b\\nc\\"d');
    expect([formatValue(3), formatValue(0.25), formatValue(Number.NaN), formatValue(Number.NEGATIVE_INFINITY), formatValue(1e21)]).toEqual(['3', '0.25', 'NaN', '-Inf', '1e+21']);
  });
});
