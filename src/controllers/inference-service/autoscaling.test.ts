import { describe, expect, it } from 'vitest';
import { ACTIVATE_ANNOTATION, activationPatch, activationTime } from './autoscaling.ts';

describe('the activate annotation (scale from zero, ADR 0126)', () => {
  it('reads an RFC 3339 time, and nothing when absent', () => {
    expect(activationTime({ [ACTIVATE_ANNOTATION]: '2026-12-01T20:30:00Z' })).toEqual({ atMs: Date.parse('2026-12-01T20:30:00Z') });
    expect(activationTime({ [ACTIVATE_ANNOTATION]: '2026-12-01T20:30:00.250+01:00' })).toEqual({ atMs: Date.parse('2026-12-01T19:30:00.250Z') });
    expect(activationTime(undefined)).toEqual({});
    expect(activationTime({ other: 'x' })).toEqual({});
  });
  it('names the annotation when the value is not a time', () => {
    for (const v of ['5', 'now', 'May 1 2026', '2026-13-45T99:00:00Z']) {
      expect(activationTime({ [ACTIVATE_ANNOTATION]: v }).error).toMatch(
        /^metadata\.annotations\["ai\.sits2026\.dev\/activate"\]: ".*" is not an RFC 3339 time/,
      );
    }
  });
  it('is what a router patches', () => {
    expect(activationPatch(new Date('2026-12-01T20:30:00Z'))).toEqual({ metadata: { annotations: { [ACTIVATE_ANNOTATION]: '2026-12-01T20:30:00.000Z' } } });
    expect(activationTime(activationPatch(new Date(1_000)).metadata.annotations).atMs).toBe(1_000);
  });
});
