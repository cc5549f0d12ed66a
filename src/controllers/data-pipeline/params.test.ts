import { describe, expect, it } from 'vitest';
import { parseOutputs, substitute } from './params.ts';

describe('parameters', () => {
  it('substitutes {{...}} in every string, deeply', () => {
    const vals: Record<string, string> = { 'steps.a.outputs.parameters.model': 'm-1', 'pipeline.name': 'p' };
    expect(
      substitute(
        {
          args: ['--model={{ steps.a.outputs.parameters.model }}', 'x'],
          env: [{ name: 'P', value: '{{pipeline.name}}/{{steps.a.outputs.parameters.model}}' }],
          n: 3,
        },
        's',
        (e) => vals[e],
      ),
    ).toEqual({
      ok: true,
      value: { args: ['--model=m-1', 'x'], env: [{ name: 'P', value: 'p/m-1' }], n: 3 },
    });
  });

  it('names the field of an unknown reference', () => {
    expect(substitute({ container: { args: ['ok', '{{steps.b.outputs.parameters.x}}'] } }, 'spec.stages[1]', () => undefined)).toEqual({
      ok: false,
      error: 'spec.stages[1].container.args[1]: {{steps.b.outputs.parameters.x}} names no known value',
    });
  });

  it('reads a JSON object of scalars; anything else is no outputs', () => {
    expect(parseOutputs('{"adapter":"/a/b","steps":1200,"ok":true,"nested":{}}')).toEqual({ adapter: '/a/b', steps: '1200', ok: 'true' });
    expect(parseOutputs('done')).toEqual({});
    expect(parseOutputs('[1]')).toEqual({});
    expect(parseOutputs(undefined)).toEqual({});
  });
});
