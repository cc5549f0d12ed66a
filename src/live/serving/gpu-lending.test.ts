import { describe, expect, it } from 'vitest';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { decideLending, LENDING_ANNOTATION, readLendingView, type JobObject } from './gpu-lending.ts';

const T0 = Date.parse('2026-12-01T20:00:00Z');
const node = (name: string, gpus: number): V1Node => ({ metadata: { name }, status: { allocatable: { 'nvidia.com/gpu': String(gpus) } } });
const gpuPod = (
  name: string,
  o: { node?: string; gpus?: number; labels?: Record<string, string>; priority?: number; unschedulable?: boolean; ns?: string },
): V1Pod => ({
  metadata: { name, namespace: o.ns ?? 'ns', uid: `uid-${name}`, labels: o.labels ?? {}, creationTimestamp: new Date(T0) },
  spec: {
    containers: [{ name: 'c', resources: { limits: { 'nvidia.com/gpu': String(o.gpus ?? 1) } } }],
    ...(o.node === undefined ? {} : { nodeName: o.node }),
    ...(o.priority === undefined ? {} : { priority: o.priority }),
  },
  status: {
    phase: o.node === undefined ? 'Pending' : 'Running',
    ...(o.unschedulable === true ? { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] } : {}),
  },
});
const worker = (job: string, rank: number, node: string | undefined, priority = 0): V1Pod =>
  gpuPod(`${job}-${rank}`, {
    ...(node === undefined ? {} : { node }),
    priority,
    labels: { 'ai.sits2026.dev/training-job': job, 'ai.sits2026.dev/role': 'replica' },
  });
const replica = (svc: string, i: number, o: { node?: string; priority?: number; queue?: string } = {}): V1Pod =>
  gpuPod(`${svc}-${i}`, {
    ...o,
    unschedulable: o.node === undefined,
    labels: { 'ai.sits2026.dev/inference-service': svc, ...(o.queue === undefined ? {} : { 'ai.sits2026.dev/queue': o.queue }) },
  });
const job = (
  name: string,
  o: {
    replicas?: number;
    min?: number;
    current?: number;
    phase?: string;
    ann?: Record<string, string>;
    checkpoint?: boolean;
    queue?: string;
    lastReady?: string;
  } = {},
): JobObject =>
  ({
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'TrainingJob',
    metadata: { name, namespace: 'ns', resourceVersion: '7', annotations: o.ann ?? {} },
    spec: {
      replicas: o.replicas ?? 4,
      minReplicas: o.min ?? 2,
      maxReplicas: 4,
      gpusPerReplica: 1,
      container: { image: 'trainer' },
      ...(o.queue === undefined ? {} : { queue: o.queue }),
      ...(o.checkpoint === true ? { checkpoint: { volume: { claimName: 'ckpt' }, volumeSnapshotClassName: 'csi' } } : {}),
    },
    status: {
      phase: o.phase ?? 'Running',
      currentReplicas: o.current ?? o.replicas ?? 4,
      ...(o.lastReady === undefined ? {} : { checkpoint: { lastReady: { snapshotName: 's', step: 1, readyTime: o.lastReady } } }),
    },
  }) as unknown as JobObject;

const nodes = [node('n0', 4), node('n1', 1)];
const full = (j = 'train', priority = 0): V1Pod[] => [
  worker(j, 0, 'n0', priority),
  worker(j, 1, 'n0', priority),
  worker(j, 2, 'n0', priority),
  worker(j, 3, 'n0', priority),
  replica('svc', 0, { node: 'n1' }),
];

describe('decideLending', () => {
  it('a replica waiting on a full cluster makes a preemptible elastic job shrink at once by whole workers', () => {
    const v = readLendingView(nodes, [...full(), replica('svc', 1)], [job('train', { ann: { 'ai.sits2026.dev/preemptible': 'true' } })], []);
    expect(v.freeGpus).toBe(0);
    const a = decideLending(v, T0, 60_000);
    expect(a.map((x) => [x.kind, x.kind === 'shrink' ? x.to : undefined])).toEqual([['shrink', 3]]);
  });
  it('a checkpointing job is asked for a checkpoint first and shrinks once one is Ready after the request', () => {
    const pods = [...full(), replica('svc', 1)];
    const first = decideLending(readLendingView(nodes, pods, [job('train', { checkpoint: true })], []), T0, 60_000);
    expect(first).toMatchObject([{ kind: 'requestCheckpoint', workers: 1, borrower: 'ns/svc' }]);
    const pending = { [LENDING_ANNOTATION.lendPending]: `1@${new Date(T0).toISOString()}` };
    // Pending, no newer checkpoint: nothing more (and no second loan for the same replica).
    expect(
      decideLending(
        readLendingView(nodes, pods, [job('train', { checkpoint: true, ann: pending, lastReady: new Date(T0 - 1000).toISOString() })], []),
        T0 + 5000,
        60_000,
      ),
    ).toEqual([]);
    const ready = decideLending(
      readLendingView(nodes, pods, [job('train', { checkpoint: true, ann: pending, lastReady: new Date(T0 + 3000).toISOString() })], []),
      T0 + 5000,
      60_000,
    );
    expect(ready).toMatchObject([{ kind: 'shrink', workers: 1, to: 3 }]);
    // The replica went away before the boundary: the loan is forgotten.
    expect(decideLending(readLendingView(nodes, full(), [job('train', { checkpoint: true, ann: pending })], []), T0 + 5000, 60_000)).toMatchObject([
      { kind: 'cancel' },
    ]);
  });
  it('GPUs coming free or still free are not borrowed twice; a restarting gang is not spare', () => {
    // The job was just shrunk to 3; its 4 old pods still hold their GPUs.
    const shrunk = job('train', { replicas: 3, current: 3, ann: { [LENDING_ANNOTATION.lentReplicas]: '1', 'ai.sits2026.dev/preemptible': 'true' } });
    expect(decideLending(readLendingView(nodes, [...full(), replica('svc', 1)], [shrunk], []), T0, 60_000)).toEqual([]);
    // The new gang of 3 waits for its GPUs: the 4 free ones are not spare for a give-back.
    const restarting = [worker('train', 0, undefined), worker('train', 1, undefined), worker('train', 2, undefined), replica('svc', 0, { node: 'n1' })];
    expect(
      decideLending(
        readLendingView(nodes, restarting, [job('train', { replicas: 3, phase: 'Scheduling', ann: { [LENDING_ANNOTATION.lentReplicas]: '1' } })], []),
        T0 + 600_000,
        60_000,
      ),
    ).toEqual([]);
  });
  it('gives lent workers back when GPUs are spare, nobody waits and the cooldown has passed', () => {
    const lent = (at: number) =>
      job('train', { replicas: 3, current: 3, ann: { [LENDING_ANNOTATION.lentReplicas]: '1', [LENDING_ANNOTATION.lentAt]: new Date(at).toISOString() } });
    const pods = [worker('train', 0, 'n0'), worker('train', 1, 'n0'), worker('train', 2, 'n0'), replica('svc', 0, { node: 'n1' })];
    expect(decideLending(readLendingView(nodes, pods, [lent(T0)], []), T0 + 30_000, 60_000)).toEqual([]);
    expect(decideLending(readLendingView(nodes, pods, [lent(T0)], []), T0 + 60_000, 60_000)).toMatchObject([{ kind: 'giveBack', workers: 1, to: 4 }]);
    // A replica waits: the GPU stays with serving.
    expect(
      decideLending(readLendingView(nodes, [...pods, replica('svc', 1), replica('svc', 2)], [lent(T0)], []), T0 + 60_000, 60_000).map((a) => a.kind),
    ).not.toContain('giveBack');
  });
  it('priorities and queues: a job of higher priority, or in a queue the service may not reclaim from, does not lend', () => {
    const high = decideLending(
      readLendingView(nodes, [...full('train', 1000), replica('svc', 1)], [job('train', { ann: { 'ai.sits2026.dev/preemptible': 'true' } })], []),
      T0,
      60_000,
    );
    expect(high).toMatchObject([
      { kind: 'refused', message: "replica svc-1 waits for 1 GPU(s): no training job lends 1 GPU(s) to ns/svc: ns/train has priority 1000, above ns/svc's 0" },
    ]);
    const queues = [
      { apiVersion: 'ai.sits2026.dev/v1', kind: 'Queue', metadata: { name: 'serving' }, spec: { tenant: 't', preemption: { reclaimWithinCohort: 'Never' } } },
    ] as never;
    const otherQueue = decideLending(
      readLendingView(
        nodes,
        [...full(), replica('svc', 1, { queue: 'serving' })],
        [job('train', { queue: 'research', ann: { 'ai.sits2026.dev/preemptible': 'true' } })],
        queues,
      ),
      T0,
      60_000,
    );
    expect(otherQueue).toMatchObject([{ kind: 'refused' }]);
    expect((otherQueue[0] as { message: string }).message).toContain('reclaimWithinCohort Never');
  });
});
