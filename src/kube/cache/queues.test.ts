import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, LABEL } from '../../api/wire.ts';
import { queueFromObject, runningJobs } from './queues.ts';

describe('Queue objects as core queues', () => {
  it('carries quotas, weight, cohort, accepted priority classes and namespaces, and the preemption policy', () => {
    const q = queueFromObject({
      metadata: { name: 'research' },
      spec: {
        tenant: 'nlp',
        tier: 'gold',
        cohort: 'pool',
        resources: [
          { name: 'nvidia.com/gpu', nominal: 16, borrowingLimit: '8', lendingLimit: 4, guaranteed: 2 },
          { name: 'memory', nominal: '1Ti' },
        ],
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
    // No reserveAfterSeconds: the cycle's default (4 h) applies.
    expect(q.reserveAfterMs).toBeUndefined();
  });

  it('spec.reserveAfterSeconds becomes the wait before its head reserves, 0 included', () => {
    expect(queueFromObject({ metadata: { name: 'q' }, spec: { reserveAfterSeconds: 1800 } }).reserveAfterMs).toBe(1_800_000);
    expect(queueFromObject({ metadata: { name: 'q' }, spec: { reserveAfterSeconds: 0 } }).reserveAfterMs).toBe(0);
  });
});

describe('running gangs as core jobs', () => {
  it('a bound gang is one job with its queue, total requests and the GPU model of its node', () => {
    const pod = (name: string, node: string): V1Pod => ({
      metadata: { name, namespace: 'ml', labels: { [LABEL.podGroup]: 'train' }, creationTimestamp: new Date(1000) },
      spec: {
        schedulerName: 'sits-scheduler',
        nodeName: node,
        priority: 10,
        containers: [{ name: 'c', resources: { requests: { 'nvidia.com/gpu': '4', cpu: '1', memory: '1Gi' } } }],
      },
    });
    const jobs = runningJobs(
      [pod('train-0', 'n0'), pod('train-1', 'n0')],
      'sits-scheduler',
      () => 'research',
      3_600_000,
      (n) => (n === 'n0' ? 'H100-SXM' : undefined),
    );
    const j = jobs.get('gang:ml/train');
    expect(j).toMatchObject({
      queue: 'research',
      priority: 10,
      podIds: ['ml/train-0', 'ml/train-1'],
      resources: { gpuMilli: 8000, cpuMilli: 2000, memoryMiB: 2048 },
      gpuModel: 'H100-SXM',
      preemptible: true,
    });
  });

  it('reads the checkpoint request and its failure back from the pods (a failure of another kind of request is not one)', () => {
    const at = '2026-12-03T10:00:00.000Z';
    const pod = (name: string, failed: string | undefined): V1Pod => ({
      metadata: {
        name,
        namespace: 'ml',
        labels: { [LABEL.podGroup]: 'train' },
        annotations: {
          [ANNOTATION.checkpointable]: 'true',
          [ANNOTATION.checkpointRequested]: at,
          ...(failed === undefined ? {} : { [ANNOTATION.checkpointFailed]: failed }),
        },
      },
      spec: { schedulerName: 'sits-scheduler', nodeName: 'n0', containers: [{ name: 'c' }] },
    });
    const read = (failed: string | undefined): ReturnType<typeof runningJobs> =>
      runningJobs([pod('train-0', failed), pod('train-1', undefined)], 'sits-scheduler', () => undefined, 3_600_000);
    expect(read(`Preemption/${at}`).get('gang:ml/train')).toMatchObject({
      checkpointable: true,
      checkpointRequestedMs: Date.parse(at),
      checkpointFailedMs: Date.parse(at),
    });
    expect(read(`Migration/${at}`).get('gang:ml/train')?.checkpointFailedMs).toBeUndefined();
    expect(read(undefined).get('gang:ml/train')?.checkpointFailedMs).toBeUndefined();
  });

  it("counts the scheduler's own decisions before the watch reports them: evicted pods leave their queue, a placed preemptor joins its own", () => {
    const pod = (name: string, group: string, node: string | undefined, extra: Partial<V1Pod['metadata']> = {}): V1Pod => ({
      metadata: { name, namespace: 'ml', labels: { [LABEL.podGroup]: group }, creationTimestamp: new Date(1000), ...extra },
      spec: {
        schedulerName: 'sits-scheduler',
        ...(node === undefined ? {} : { nodeName: node }),
        containers: [{ name: 'c', resources: { requests: { 'nvidia.com/gpu': '1' } } }],
      },
    });
    const pods = [
      pod('victim-0', 'victim', 'n0'),
      pod('gone-0', 'gone', 'n0', { deletionTimestamp: new Date(2000) }),
      pod('pre-0', 'pre', undefined),
      pod('waiting-0', 'waiting', undefined),
      pod('planned-0', 'planned', undefined, { annotations: { [ANNOTATION.planId]: 'p1', [ANNOTATION.assignedNode]: 'n1' } }),
    ];
    const queueOf = (g: string): string => (g.endsWith('pre') ? 'light' : 'heavy');
    // Without the view: what the watch shows (the victim still runs, the preemptor not yet; a written plan counts).
    expect([...runningJobs(pods, 'sits-scheduler', queueOf, 3_600_000).keys()].sort()).toEqual(['gang:ml/planned', 'gang:ml/victim']);
    const view = { nowMs: 50_000, assumedNode: (k: string) => (k === 'ml/pre-0' ? 'n0' : undefined), leaving: (k: string) => k === 'ml/victim-0' };
    const jobs = runningJobs(pods, 'sits-scheduler', queueOf, 3_600_000, (n) => (n === 'n0' ? 'A800' : undefined), view);
    expect([...jobs.keys()].sort()).toEqual(['gang:ml/planned', 'gang:ml/pre']);
    // The preemptor starts now (its full cooldown ahead), on the node it was placed on.
    expect(jobs.get('gang:ml/pre')).toMatchObject({ queue: 'light', startMs: 50_000, gpuModel: 'A800', resources: { gpuMilli: 1000 } });
  });
});
