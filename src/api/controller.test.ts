import { describe, expect, it } from 'vitest';
import { statusPatch } from './controller.ts';

describe('statusPatch', () => {
  it('sends only what changed, null for removed fields, nothing when equal', () => {
    expect(statusPatch({ phase: 'Running', restartCount: 1, nextAttemptTime: '2026-01-01T00:00:00Z' }, { phase: 'Running', restartCount: 2 })).toEqual({
      restartCount: 2,
      nextAttemptTime: null,
    });
    expect(statusPatch({ nodes: ['a'] }, { nodes: ['a'] })).toBeUndefined();
    expect(statusPatch({}, { phase: 'Pending' })).toEqual({ phase: 'Pending' });
  });

  it('diffs nested objects so that a key dropped inside one is removed (a merge patch would keep it)', () => {
    const from = { checkpoint: { seq: 2, cycle: { phase: 'Failed', failureReason: 'NeverCommitted' } } };
    const to = { checkpoint: { seq: 3, cycle: { phase: 'Pre' } } };
    expect(statusPatch(from, to)).toEqual({ checkpoint: { seq: 3, cycle: { phase: 'Pre', failureReason: null } } });
    expect(statusPatch({ a: { b: 1 } }, { a: [1] })).toEqual({ a: [1] });
    expect(statusPatch({ a: { b: 1 } }, {})).toEqual({ a: null });
  });
});
