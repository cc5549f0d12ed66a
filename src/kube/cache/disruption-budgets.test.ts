import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { budgetsOf, matchesSelector, type PdbObject } from './disruption-budgets.ts';

const pod = (name: string, labels: Record<string, string>, o: { ready?: boolean; deleting?: boolean; phase?: string; ns?: string } = {}): V1Pod => ({
  metadata: { name, namespace: o.ns ?? 'ml', labels, ...(o.deleting === true ? { deletionTimestamp: new Date(0) } : {}) },
  status: { phase: o.phase ?? 'Running', conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }] },
});
const pdb = (name: string, spec: NonNullable<PdbObject['spec']>, ns = 'ml'): PdbObject => ({ metadata: { name, namespace: ns }, spec });

describe('matchesSelector (metav1.LabelSelector)', () => {
  it('matchLabels and every expression operator', () => {
    const l = { app: 'db', tier: 'a' };
    expect(matchesSelector({ matchLabels: { app: 'db' } }, l)).toBe(true);
    expect(matchesSelector({ matchLabels: { app: 'web' } }, l)).toBe(false);
    expect(matchesSelector({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }] }, l)).toBe(true);
    expect(matchesSelector({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['a'] }] }, l)).toBe(false);
    expect(matchesSelector({ matchExpressions: [{ key: 'gone', operator: 'NotIn', values: ['a'] }] }, l)).toBe(true);
    expect(matchesSelector({ matchExpressions: [{ key: 'app', operator: 'Exists' }] }, l)).toBe(true);
    expect(matchesSelector({ matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, l)).toBe(false);
    expect(matchesSelector({ matchExpressions: [{ key: 'app', operator: 'Gt', values: ['1'] }] }, l)).toBe(false);
    expect(matchesSelector({}, l)).toBe(true);
  });
});

describe('budgetsOf (allowed disruptions as the disruption controller counts them)', () => {
  const pods = [
    pod('db-0', { app: 'db' }),
    pod('db-1', { app: 'db' }),
    pod('db-2', { app: 'db' }, { ready: false }),
    pod('web', { app: 'web' }),
    pod('db-x', { app: 'db' }, { ns: 'other' }),
  ];
  it('healthy = Ready and not being deleted; expected = the pods selected in the namespace', () => {
    const [b] = budgetsOf([pdb('db', { selector: { matchLabels: { app: 'db' } }, minAvailable: 1 })], pods);
    expect(b?.name).toBe('ml/db');
    expect([...(b?.podIds ?? [])].sort()).toEqual(['ml/db-0', 'ml/db-1', 'ml/db-2']);
    expect(b?.disruptionsAllowed).toBe(1);
    const [deleting] = budgetsOf(
      [pdb('db', { selector: { matchLabels: { app: 'db' } }, minAvailable: 1 })],
      [...pods.slice(1), pod('db-0', { app: 'db' }, { deleting: true })],
    );
    expect(deleting?.disruptionsAllowed).toBe(0);
  });
  it('maxUnavailable and percentages scale with the pods not finished', () => {
    const withDone = [...pods, pod('db-done', { app: 'db' }, { phase: 'Succeeded', ready: false })];
    expect(budgetsOf([pdb('a', { selector: { matchLabels: { app: 'db' } }, maxUnavailable: 1 })], withDone)[0]?.disruptionsAllowed).toBe(0);
    expect(budgetsOf([pdb('a', { selector: { matchLabels: { app: 'db' } }, maxUnavailable: '34%' })], withDone)[0]?.disruptionsAllowed).toBe(1);
    expect(budgetsOf([pdb('a', { selector: { matchLabels: { app: 'db' } }, minAvailable: '34%' })], withDone)[0]?.disruptionsAllowed).toBe(0);
  });
  it('a null selector selects nothing, an empty one the whole namespace; output sorted by name', () => {
    const bs = budgetsOf([pdb('z', { selector: {}, maxUnavailable: 0 }), pdb('a', { selector: null, minAvailable: 1 })], pods);
    expect(bs.map((b) => [b.name, b.podIds.size, b.disruptionsAllowed])).toEqual([
      ['ml/a', 0, 0],
      ['ml/z', 4, 0],
    ]);
  });
});
