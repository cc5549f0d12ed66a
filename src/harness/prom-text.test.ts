import { describe, expect, it } from 'vitest';
import { parsePromText, PromParseError, sampleValue } from './prom-text.ts';

const ok = `# HELP a_total Things, with a \\\\ and a \\n in the help.
# TYPE a_total counter
a_total{kind="x\\"y\\\\z\\nw"} 3
a_total{kind="plain",} 4 1700000000000
# a comment
# TYPE h_seconds histogram
h_seconds_bucket{le="0.1"} 1
h_seconds_bucket{le="1"} 2
h_seconds_bucket{le="+Inf"} 3
h_seconds_sum 4.5
h_seconds_count 3
untyped_thing -1.5e-3
g NaN
# TYPE s_seconds summary
s_seconds{quantile="0.5"} 0.2
s_seconds{quantile="0.9"} NaN
s_seconds_sum 1.5
s_seconds_count 4
`;

describe('parsePromText', () => {
  it('reads HELP, TYPE, escaped label values, timestamps, histograms and untyped samples', () => {
    const f = parsePromText(ok);
    expect(f.get('a_total')?.help).toBe('Things, with a \\ and a \n in the help.');
    expect(f.get('a_total')?.type).toBe('counter');
    expect(sampleValue(f, 'a_total', { kind: 'x"y\\z\nw' })).toBe(3);
    expect(f.get('a_total')?.samples[1]?.timestampMs).toBe(1700000000000);
    expect(f.get('h_seconds')?.samples).toHaveLength(5);
    expect(sampleValue(f, 'untyped_thing')).toBe(-0.0015);
    expect(f.get('untyped_thing')?.type).toBe('untyped');
    expect(sampleValue(f, 'g')).toBeNaN();
    expect(f.get('s_seconds')?.samples.map((x) => x.name)).toEqual(['s_seconds', 's_seconds', 's_seconds_sum', 's_seconds_count']);
    expect(sampleValue(f, 's_seconds', { quantile: '0.5' })).toBe(0.2);
  });

  const bad: [string, string][] = [
    ['no final newline', 'a 1'],
    ['bad metric name', '1abc 1\n'],
    ['value missing', 'a\n'],
    ['value not a float', 'a one\n'],
    ['hex value', 'a 0x10\n'],
    ['text after the timestamp', 'a 1 2 3\n'],
    ['fractional timestamp', 'a 1 2.5\n'],
    ['unterminated label value', 'a{b="c} 1\n'],
    ['unquoted label value', 'a{b=c} 1\n'],
    ['bad escape in a label value', 'a{b="\\t"} 1\n'],
    ['bad escape in HELP', '# HELP a x\\"y\n'],
    ['duplicate label', 'a{b="1",b="2"} 1\n'],
    ['bad label name', 'a{1b="1"} 1\n'],
    ['missing comma', 'a{b="1" c="2"} 1\n'],
    ['unknown type', '# TYPE a countr\na 1\n'],
    ['TYPE twice', '# TYPE a gauge\n# TYPE a gauge\na 1\n'],
    ['HELP twice', '# HELP a x\n# HELP a y\na 1\n'],
    ['TYPE after samples', 'a 1\n# TYPE a gauge\n'],
    ['family split in two groups', 'a{x="1"} 1\nb 2\na{x="2"} 3\n'],
    ['duplicate series', 'a{x="1"} 1\na{x="1"} 2\n'],
    ['negative counter', '# TYPE a_total counter\na_total -1\n'],
    ['histogram without +Inf', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n'],
    ['histogram +Inf differs from _count', '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n'],
    ['histogram counts going down', '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="2"} 1\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 2\n'],
    ['histogram le not increasing', '# TYPE h histogram\nh_bucket{le="2"} 1\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'],
    ['histogram without _sum', '# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_count 1\n'],
    ['histogram bucket without le', '# TYPE h histogram\nh_bucket 1\nh_sum 1\nh_count 1\n'],
    ['histogram bare sample', '# TYPE h histogram\nh 1\n'],
    ['summary sample without quantile', '# TYPE s summary\ns 1\ns_sum 1\ns_count 1\n'],
    ['summary with a bucket', '# TYPE s summary\ns_bucket{le="1"} 1\ns_sum 1\ns_count 1\n'],
    ['carriage return', 'a 1\r\n'],
  ];
  it.each(bad)('rejects %s', (_what, text) => {
    expect(() => parsePromText(text)).toThrow(PromParseError);
  });
});
