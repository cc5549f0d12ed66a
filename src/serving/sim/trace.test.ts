import { describe, expect, it } from 'vitest';
import { parseAzureTrace, TraceError } from './trace.ts';

describe('the Azure LLM trace format', () => {
  it('parses arrivals relative to the first request, with the 7-digit fraction of the real file', () => {
    const t = parseAzureTrace(
      'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n2023-11-16 18:18:03.5,5,1\n',
      'x.csv',
    );
    expect(t.map((r) => [Number(r.arrivalSec.toFixed(4)), r.promptTokens, r.outputTokens])).toEqual([
      [0, 4808, 10],
      [0.052, 3180, 8],
      [59.52, 5, 1],
    ]);
  });
  it('takes the columns in any order and CRLF line ends', () => {
    const t = parseAzureTrace('GeneratedTokens,TIMESTAMP,ContextTokens\r\n3,2023-11-16 18:17:03,100\r\n', 'y.csv');
    expect(t).toEqual([{ arrivalSec: 0, promptTokens: 100, outputTokens: 3 }]);
  });
  it.each([
    ['TIME,ContextTokens,GeneratedTokens\n', 'x.csv:1:1: the header must name TIMESTAMP, ContextTokens and GeneratedTokens'],
    ['TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,12a,3\n', 'x.csv:2:21: ContextTokens "12a" is not a whole number ≥ 1'],
    ['TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,12,0\n', 'x.csv:2:24: GeneratedTokens "0" is not a whole number ≥ 1'],
    ['TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,12,3\n', 'x.csv:2:1: TIMESTAMP "yesterday" is not'],
    ['TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:04,1,1\n2023-11-16 18:17:03,1,1\n', 'x.csv:3:1: TIMESTAMP goes back in time'],
    ['TIMESTAMP,ContextTokens,GeneratedTokens\n', 'x.csv: no requests after the header'],
  ])('names file:line:column of a bad row (%#)', (text, message) => {
    expect(() => parseAzureTrace(text, 'x.csv')).toThrow(TraceError);
    expect(() => parseAzureTrace(text, 'x.csv')).toThrow(message);
  });
});
