import { describe, expect, it } from 'vitest';
import { statusPatch } from './controller.ts';

describe('statusPatch', () => {
  it('sends only what changed, null for removed fields, nothing when equal', () => {
    expect(statusPatch({ phase: 'Running', restartCount: 1, nextAttemptTime: '2026-01-01T00:00:00Z' }, { phase: 'Running', restartCount: 2 })).toEqual({ restartCount: 2, nextAttemptTime: null });
    expect(statusPatch({ nodes: ['a'] }, { nodes: ['a'] })).toBeUndefined();
    expect(statusPatch({}, { phase: 'Pending' })).toEqual({ phase: 'Pending' });
  });
});
