import { describe, expect, it } from 'vitest';
import { queueFromObject } from './queues.ts';

describe('Queue objects as core queues', () => {
  it('carries quotas, weight, cohort, accepted priority classes and namespaces, and the preemption policy', () => {
    const q = queueFromObject({
      metadata: { name: 'research' },
      spec: {
        tenant: 'nlp',
        tier: 'gold',
        cohort: 'pool',
        resources: [{ name: 'nvidia.com/gpu', nominal: 16, borrowingLimit: '8', lendingLimit: 4, guaranteed: 2 }, { name: 'memory', nominal: '1Ti' }],
        gpuModels: [{ model: 'NVIDIA-H100-80GB-HBM3', nominal: 8 }],
        priorityClasses: ['train-high', 'train-low'],
        defaultPriorityClassName: 'train-low',
        namespaces: ['nlp-dev', 'nlp-prod'],
        preemption: { withinQueue: 'Never', reclaimWithinCohort: 'LowerPriority', cooldownSeconds: 120, criticalPhaseGraceSeconds: 30 },
      },
    });
    expect(q.weight).toBe(4);
    expect(q.cohort).toBe('pool');
    expect(q.nominal).toEqual({ gpuMilli: 16_000, cpuMilli: Infinity, memoryMiB: 1024 * 1024 });
    expect(q.borrowingLimit.gpuMilli).toBe(8000);
    expect(q.lendingLimit.gpuMilli).toBe(4000);
    expect(q.guaranteed.gpuMilli).toBe(2000);
    expect(Object.keys(q.models)).toHaveLength(1);
    expect(q.priorityClasses).toEqual(['train-high', 'train-low']);
    expect(q.defaultPriorityClass).toBe('train-low');
    expect(q.namespaces).toEqual(['nlp-dev', 'nlp-prod']);
    expect(q.preemption).toEqual({ withinQueue: 'Never', reclaimWithinCohort: 'LowerPriority', cooldownMs: 120_000, criticalGraceMs: 30_000 });
  });

  it('an object without a preemption policy gets the CRD defaults; empty lists restrict nothing', () => {
    const q = queueFromObject({ metadata: { name: 'q' }, spec: { tenant: 'q', priorityClasses: [], namespaces: [] } });
    expect(q.preemption).toEqual({ withinQueue: 'LowerPriority', reclaimWithinCohort: 'Any', cooldownMs: 60_000, criticalGraceMs: 300_000 });
    expect(q.priorityClasses).toBeUndefined();
    expect(q.namespaces).toBeUndefined();
  });
});
