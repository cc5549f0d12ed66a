import { describe, expect, it } from 'vitest';
import { evalWhen, handlesFailureOf, parseWhen, stagesOf } from './when.ts';

const parsed = (t: string) => {
  const r = parseWhen(t);
  if (!r.ok) throw new Error(r.error);
  return r.expr;
};

describe('when expressions', () => {
  it('evaluates outcomes with && || ! and parentheses, Argo spelling and lower case', () => {
    const phases = { train: 'Succeeded', eval: 'Failed', extra: 'Skipped' } as const;
    const at = (s: string) => phases[s as keyof typeof phases];
    expect(evalWhen(parsed('train.Succeeded && eval.Failed'), at)).toBe(true);
    expect(evalWhen(parsed('train.succeeded && !(eval.failed || extra.Skipped)'), at)).toBe(false);
    expect(evalWhen(parsed('extra.Completed || eval.Completed'), at)).toBe(true);
    expect(evalWhen(parsed('extra.Any && !extra.Completed'), at)).toBe(true);
  });

  it('names the stages and whether a failure is handled', () => {
    const e = parsed('a.Succeeded || (b.Failed && !a.Skipped)');
    expect(stagesOf(e)).toEqual(['a', 'b']);
    expect(handlesFailureOf(e, 'b')).toBe(true);
    expect(handlesFailureOf(e, 'a')).toBe(false);
  });

  it('reports the column of a bad token', () => {
    expect(parseWhen('a.Succeeded && b.Done')).toEqual({
      ok: false,
      error: 'unknown outcome Done (Succeeded, Failed, Skipped, Completed or Any) at column 16',
    });
    expect(parseWhen('a.Succeeded &&')).toEqual({ ok: false, error: 'expected a stage outcome at the end' });
    expect(parseWhen('(a.Succeeded')).toEqual({ ok: false, error: 'expected ) at the end' });
    expect(parseWhen('a.Succeeded b.Failed')).toEqual({ ok: false, error: 'unexpected b.Failed at column 13' });
    expect(parseWhen('a.Succeeded & b')).toEqual({ ok: false, error: 'unexpected input at column 13' });
  });
});
