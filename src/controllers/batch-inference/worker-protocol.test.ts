import { describe, expect, it } from 'vitest';
import { checkpointName, formatAssignment, formatReport, parseAssignment, parseReport } from './worker-protocol.ts';

describe('the batch worker protocol', () => {
  it('round-trips an assignment and reads idle as none', () => {
    const a = { attempt: 'e2-a7', start: 100, end: 194, part: 'parts/e2-a7.jsonl', concurrency: 0.5 };
    expect(parseAssignment(formatAssignment(a))).toEqual(a);
    expect(parseAssignment(formatAssignment(undefined))).toBeUndefined();
    expect(parseAssignment(undefined)).toBeUndefined();
  });
  it('names what is wrong with a garbled assignment', () => {
    expect(parseAssignment('{"attempt":"e1-a1","start":5,"end":2,"part":"p"}')).toEqual({
      error: expect.stringMatching(/expected \{attempt, start, end, part\}/),
    });
    expect(parseAssignment('{nope')).toEqual({ error: expect.stringMatching(/^assignment: not JSON/) });
  });
  it('round-trips a report and ignores one that is not a report', () => {
    const r = {
      attempt: 'e1-a3',
      start: 0,
      end: 10,
      done: 4,
      tokens: 48,
      state: 'failed' as const,
      startedMs: 1000,
      failure: { kind: 'oom' as const, message: 'out of memory' },
    };
    expect(parseReport(formatReport(r))).toEqual(r);
    expect(parseReport('{"attempt":"e1-a3"}')).toBeUndefined();
    expect(parseReport('not json')).toBeUndefined();
    expect(parseReport(JSON.stringify({ ...r, state: 'paused' }))).toBeUndefined();
  });
  it('carries the live batch size and the plugin note, and drops bad ones without dropping the report', () => {
    const r = {
      attempt: 'e1-a3',
      start: 0,
      end: 10,
      done: 4,
      tokens: 48,
      state: 'running' as const,
      startedMs: 1000,
      batchSize: 12,
      batchNote: 'plugin p.wasm rejected: x',
    };
    expect(parseReport(formatReport(r))).toEqual(r);
    const { batchSize: _b, batchNote: _n, ...plain } = r;
    expect(parseReport(JSON.stringify({ ...r, batchSize: 0, batchNote: 7 }))).toEqual(plain);
    expect(parseReport(JSON.stringify({ ...r, batchSize: 'big' }))).toEqual({ ...plain, batchNote: r.batchNote });
    // The plugin's state: one of three words, anything else dropped.
    expect(parseReport(formatReport({ ...r, batchPlugin: 'rejected' }))?.batchPlugin).toBe('rejected');
    expect(parseReport(JSON.stringify({ ...r, batchPlugin: 'maybe' }))).toEqual(r);
  });
  it('carries a checkpoint file of the reporting attempt only', () => {
    const r = { attempt: 'e1-a3', start: 0, end: 10, done: 4, tokens: 48, state: 'running' as const, startedMs: 1000, checkpoint: checkpointName('e1-a3', 2) };
    expect(r.checkpoint).toBe('parts/e1-a3.c2.jsonl');
    expect(parseReport(formatReport(r))).toEqual(r);
    const { checkpoint: _c, ...plain } = r;
    // Another attempt's file, the final part, or a path out of parts/ are not checkpoints of this attempt.
    for (const bad of ['parts/e1-a4.c1.jsonl', 'parts/e1-a3.jsonl', 'parts/../manifest.json', '/etc/passwd', 3])
      expect(parseReport(JSON.stringify({ ...r, checkpoint: bad }))).toEqual(plain);
  });
  it('carries the stage pipeline, and drops a malformed one without dropping the report', () => {
    const stages = [
      {
        name: 'tokenise' as const,
        processed: 10,
        busyMs: 40,
        blockedMs: 3,
        maxQueue: 0,
        capacity: 0,
        promptTokens: 230,
        counter: 'engine' as const,
        refused: 1,
      },
      { name: 'infer' as const, processed: 9, busyMs: 900, blockedMs: 0, maxQueue: 8, capacity: 8 },
      { name: 'postprocess' as const, processed: 9, busyMs: 5, blockedMs: 0, maxQueue: 2, capacity: 4 },
    ];
    const r = { attempt: 'e1-a3', start: 0, end: 10, done: 4, tokens: 48, state: 'running' as const, startedMs: 1000, stages };
    expect(parseReport(formatReport(r))).toEqual(r);
    const { stages: _s, ...plain } = r;
    for (const bad of [[{ ...stages[0], name: 'gpu' }], [{ ...stages[1], busyMs: -1 }], 'tokenise', [...stages, ...stages]])
      expect(parseReport(JSON.stringify({ ...r, stages: bad }))).toEqual(plain);
  });
  it('carries the profile fields (output tokens, ms, free KV fraction, KV size) and drops bad ones', () => {
    const r = {
      attempt: 'e1-a3',
      start: 0,
      end: 10,
      done: 10,
      tokens: 48,
      state: 'done' as const,
      startedMs: 1000,
      outputTokens: 20,
      ms: 840,
      kvFree: 0.625,
      kvCapacityTokens: 4096,
    };
    expect(parseReport(formatReport(r))).toEqual(r);
    const { outputTokens: _o, ms: _m, kvFree: _k, kvCapacityTokens: _c, ...plain } = r;
    // More output than tokens, a fraction outside 0..1, a negative time or size: dropped, the report stays.
    expect(parseReport(JSON.stringify({ ...r, outputTokens: 49, ms: -1, kvFree: 1.5, kvCapacityTokens: 0 }))).toEqual(plain);
  });
});
