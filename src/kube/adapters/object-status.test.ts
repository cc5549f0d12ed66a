import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { podGroupStatus } from './object-status.ts';

const member = (name: string, node: string | undefined, phase: string, why?: string): V1Pod => ({
  metadata: { name, namespace: 'ml' },
  spec: { containers: [], ...(node === undefined ? {} : { nodeName: node }) },
  status: { phase, ...(why === undefined ? {} : { conditions: [{ type: 'PodScheduled', status: 'False', message: why }] }) },
});

describe('PodGroup status from its members', () => {
  it("Pending with the scheduler's reason, Scheduled once minMember are bound, Running once they run", () => {
    expect(podGroupStatus(2, [member('a', undefined, 'Pending', 'queue q holds ml/g (capacity): 0/2 nodes fit'), member('b', undefined, 'Pending')])).toEqual({
      phase: 'Pending',
      scheduled: 0,
      message: 'queue q holds ml/g (capacity): 0/2 nodes fit',
    });
    expect(podGroupStatus(2, [member('a', 'n0', 'Pending'), member('b', undefined, 'Pending')])).toEqual({ phase: 'Pending', scheduled: 1 });
    expect(podGroupStatus(2, [member('a', 'n0', 'Pending'), member('b', 'n1', 'Pending')])).toEqual({ phase: 'Scheduled', scheduled: 2 });
    expect(podGroupStatus(2, [member('a', 'n0', 'Running'), member('b', 'n1', 'Running'), member('c', undefined, 'Pending')])).toEqual({
      phase: 'Running',
      scheduled: 2,
    });
  });

  it('Failed only when too few members are left to reach minMember; members being deleted do not count', () => {
    expect(podGroupStatus(2, [member('a', 'n0', 'Failed'), member('b', 'n1', 'Running')])).toMatchObject({ phase: 'Failed', scheduled: 1 });
    expect(podGroupStatus(2, [member('a', 'n0', 'Failed'), member('b', 'n1', 'Running'), member('c', undefined, 'Pending')])).toMatchObject({
      phase: 'Pending',
      scheduled: 1,
    });
    const leaving = { ...member('a', 'n0', 'Running'), metadata: { name: 'a', namespace: 'ml', deletionTimestamp: new Date() } };
    expect(podGroupStatus(1, [leaving])).toEqual({ phase: 'Pending', scheduled: 0 });
    expect(podGroupStatus(1, [])).toEqual({ phase: 'Pending', scheduled: 0 });
  });
});
