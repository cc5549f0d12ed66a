import { describe, expect, it } from 'vitest';
import { BatchFormatError, BatchInputValidator, errorLine, outputId, parseRequestLine, successLine } from './openai-batch.ts';

const ok = (id: string, extra = ''): string =>
  `{"custom_id":"${id}","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"hi"}]${extra}}}`;

describe('OpenAI batch input lines', () => {
  it('parses a request and plans with its max_tokens', () => {
    const { request, info } = parseRequestLine(ok('a', ',"max_tokens":40'), 'in.jsonl', 1);
    expect(request.custom_id).toBe('a');
    expect(info).toMatchObject({ customId: 'a', maxOutputTokens: 40 });
    expect(info.promptTokens).toBeGreaterThan(0);
  });
  it('names file:line:column of a line that is not JSON', () => {
    expect(() => parseRequestLine('{"custom_id": "a", }', 'in.jsonl', 7)).toThrow(BatchFormatError);
    expect(() => parseRequestLine('{"custom_id": "a", }', 'in.jsonl', 7)).toThrow(/^in\.jsonl:7:20: not JSON/);
  });
  it('names the field of a request of the wrong shape', () => {
    expect(() => parseRequestLine('{"custom_id":"a","method":"GET","url":"/v1/chat/completions","body":{}}', 'f', 3)).toThrow(/^f:3:1: method: /);
    expect(() => parseRequestLine('{"custom_id":"a","method":"POST","url":"/v1/images","body":{}}', 'f', 3)).toThrow(/^f:3:1: url: .*"\/v1\/images"/);
    expect(() => parseRequestLine('{"method":"POST","url":"/v1/completions","body":{}}', 'f', 4)).toThrow(/^f:4:1: (custom_id|\(line\)): /);
    expect(() => parseRequestLine('[1]', 'f', 5)).toThrow('f:5:1: a request must be a JSON object');
    expect(() => parseRequestLine(ok('a', ',"max_tokens":0'), 'f', 6)).toThrow(/^f:6:1: body\.max_tokens: /);
  });
  it('refuses a duplicate custom_id naming both lines, and collects every error at once', () => {
    const v = new BatchInputValidator('in.jsonl');
    [ok('a'), '', ok('b'), ok('a'), 'nope'].forEach((l, i) => v.feed(l, i + 1));
    const r = v.result();
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors).toEqual(['in.jsonl:4:1: custom_id: "a" already used on line 1', expect.stringMatching(/^in\.jsonl:5:1: not JSON/)]);
  });
  it('refuses an empty input', () => {
    const v = new BatchInputValidator('in.jsonl');
    v.feed('  ', 1);
    expect(v.result()).toEqual({ ok: false, errors: ['in.jsonl: no requests'] });
  });
});

describe('OpenAI batch output lines', () => {
  it('have the format and a stable id per (job, custom_id)', () => {
    expect(successLine('job', 'a', { x: 1 })).toEqual({
      id: outputId('job', 'a'),
      custom_id: 'a',
      response: { status_code: 200, request_id: outputId('job', 'a'), body: { x: 1 } },
      error: null,
    });
    expect(errorLine('job', 'a', 'shard_failed', 'm')).toMatchObject({ response: null, error: { code: 'shard_failed', message: 'm' } });
    expect(outputId('job', 'a')).toBe(outputId('job', 'a'));
    expect(outputId('job', 'a')).not.toBe(outputId('job', 'b'));
  });
});
