// Issue 14 §3 live, end to end on the real control plane and snapshot stack: a checkpointable TrainingJob borrowing
// the whole cluster is preempted by the queue that owns the quota. The checkpoint-aware SITS scheduler asks it for a
// checkpoint (Preemption/<time>); the test plays rank 0 with examples/sits_checkpoint.py; the VolumeSnapshot becomes
// readyToUse; only then is the gang evicted, announced to its controller as `gang-evicted` reason Preempted
// (ADR 0143), so the controller restarts it at once as GangMoved, not counted against backoffLimit, restoring from
// that checkpoint once the GPUs are free again.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';

import { ANNOTATION, LABEL } from '../api/wire.ts';
import type { TrainingJobObject } from '../controllers/training-job/model.ts';
import { runCheckpointHelper, saveOnFullVolume, trainerTokenFile } from '../harness/checkpoint-helper.ts';
import { createNs, listEvents, waitFor } from '../harness/e2e-kit.ts';
import { createStaticVolume, SNAPSHOT_API, type SnapshotStack, type VolumeSnapshotObject } from '../harness/snapshot-stack.ts';
import { PREEMPTION_EVICTION_REASON } from '../kube/adapters/evictor.ts';
import { scaled } from '../testing/timeouts.ts';
import { containerEnv, recordPodChanges, startCheckpointCluster, trainingJobReplicas, type CheckpointCluster } from '../kits/checkpoint-e2e-kit.ts';
import { startControllers, type Controllers } from './controllers.ts';
import { createLiveApp, type LiveApp } from './live.ts';

const TJ = '/apis/ai.sits2026.dev/v1';
const NS = 'preempt-ckpt';

let env: CheckpointCluster;
let cluster: CheckpointCluster['cluster'];
let client: CheckpointCluster['client'];
let stack: SnapshotStack;
let controllers: Controllers;
let app: LiveApp;
const logs: string[] = [];
/** Log lines with the time they were written (the failure dump tells what waited for what). */
const logAs =
  (who: string) =>
  (m: string): void => {
    logs.push(`${new Date().toISOString().slice(11, 23)} ${who}${m}`);
  };

beforeAll(async () => {
  env = await startCheckpointCluster({ nodes: 2, shape: 'a800x4', log: logAs(''), controllers: false, withScheduler: false });
  ({ cluster, client, stack } = env);
  // As `sits run --checkpoint-aware-preemption` starts it.
  app = await createLiveApp({ kubeconfig: cluster.kubeconfigPath, identity: 'sits-preempt-ckpt', checkpointAware: true, log: logAs('scheduler: ') });
  controllers = await startControllers(client, { log: logAs('controller: '), config: { backoffBaseMs: 500, backoffMaxMs: 2000 } });
}, 240_000);

afterAll(async () => {
  await controllers?.stop();
  await app?.stop();
  await env?.stop();
});

let tokenFile: string;
/** A failure in a full run under load is hard to reproduce alone: the scheduler's and controller's story with it. */
const dumpLogsOnFailure = (): void =>
  onTestFailed(() => console.error(`--- preemption-checkpoint e2e log (last 200 lines) ---\n${logs.slice(-200).join('\n')}`));
/** The DisruptionTarget condition a pod carried at any point of a recorded watch. */
const disruptionOf = (seen: readonly { pod: V1Pod }[], uid: string): { reason?: string; message?: string } | undefined =>
  seen
    .filter((e) => e.pod.metadata?.uid === uid)
    .flatMap((e) => e.pod.status?.conditions ?? [])
    .find((x) => x.type === 'DisruptionTarget');
const getJob = (name: string): Promise<TrainingJobObject> => client.get<TrainingJobObject>(`${TJ}/namespaces/${NS}/trainingjobs/${name}`);
const envOf = containerEnv;
const replicas = (job: string, attempt: number): Promise<V1Pod[]> => trainingJobReplicas(client, NS, job, attempt);
const queue = (name: string, tier: string, grace?: number): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'Queue',
  metadata: { name },
  spec: {
    tenant: name,
    tier,
    cohort: 'research',
    resources: [{ name: 'nvidia.com/gpu', nominal: '4' }],
    preemption: { cooldownSeconds: 0, ...(grace === undefined ? {} : { checkpointGraceSeconds: grace }) },
  },
});
const trainingJob = (name: string, queueName: string, priorityClassName: string, gpus: number, checkpoint: boolean): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'TrainingJob',
  metadata: { name },
  spec: {
    replicas: 2,
    queue: queueName,
    priorityClassName,
    gpusPerReplica: gpus,
    container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
    ...(checkpoint ? { checkpoint: { volume: { claimName: 'ckpt' }, volumeSnapshotClassName: 'stand-in', writers: 'rank0' } } : {}),
  },
});

describe('checkpoint-aware preemption of a TrainingJob on the live scheduler', () => {
  it('the preempted gang is checkpointed first, evicted whole as Preempted, restarted without a failure and restored from that checkpoint', async () => {
    dumpLogsOnFailure();
    for (const [name, value] of [
      ['ck-low', 100],
      ['ck-high', 1000],
    ] as const) {
      await client.post('/apis/scheduling.k8s.io/v1/priorityclasses', { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value });
    }
    await client.post(`${TJ}/queues`, queue('ck-a', 'gold'));
    await client.post(`${TJ}/queues`, queue('ck-b', 'bronze', 240));
    await createNs(client, NS);
    const vol = await createStaticVolume(stack, { namespace: NS, pvcName: 'ckpt' });
    tokenFile = await trainerTokenFile(client, cluster.plane, NS);
    await waitFor(
      `claim ${NS}/ckpt Bound`,
      async () => (await client.get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${NS}/persistentvolumeclaims/ckpt`)).status?.phase === 'Bound',
      120_000,
    );
    const volumeDir = stack.driver.volumeDir(vol.volume.id);

    // ck-b borrows ck-a's idle quota: 2 × 4 GPUs = the whole cluster.
    await client.post(`${TJ}/namespaces/${NS}/trainingjobs`, trainingJob('low', 'ck-b', 'ck-low', 4, true));
    const first = await waitFor(
      'low attempt 1 Running on all 8 GPUs',
      async () => {
        const j = await getJob('low');
        if (j.status?.phase !== 'Running' || j.status.attempt !== 1) return undefined;
        const ps = await replicas('low', 1);
        return ps.length === 2 && ps.every((p) => p.status?.phase === 'Running') ? ps : undefined;
      },
      120_000,
    );
    const rank0 = first.find((p) => p.metadata?.labels?.[LABEL.rank] === '0') as V1Pod;
    const oldUids = new Set(first.map((p) => p.metadata?.uid ?? ''));

    const podWatch = await recordPodChanges(client, NS);
    const seen = podWatch.seen;
    try {
      await client.post(`${TJ}/namespaces/${NS}/trainingjobs`, trainingJob('high', 'ck-a', 'ck-high', 2, false));
      // The scheduler asks the victim for a checkpoint; its controller runs a Preemption cycle.
      const cycle = await waitFor(
        'a Preemption checkpoint cycle on low',
        async () => {
          const j = await getJob('low');
          const req = j.metadata.annotations?.[ANNOTATION.requestCheckpoint];
          const c = j.status?.checkpoint?.cycle;
          // The cycle may answer an earlier Preemption request than the annotation's: the scheduler can ask twice
          // before its cache shows the first ask, and a cycle in progress answers the newer request when it ends
          // Ready (ADR 0083).
          return req?.startsWith('Preemption/') === true && c?.request?.startsWith('Preemption/') === true && c.trigger === 'Preemption'
            ? { req, seq: c.seq }
            : undefined;
        },
        90_000,
      );
      const seq = await waitFor(
        'rank 0 sees the request through the contract',
        async () => {
          const h = await runCheckpointHelper(cluster.plane, rank0, tokenFile, ['requested']);
          if (h.code !== 0) throw new Error(`sits_checkpoint.py requested: ${h.stderr}`);
          return h.stdout.trim() === String(cycle.seq) ? cycle.seq : undefined;
        },
        60_000,
        200,
      );
      // Not evicted before the checkpoint is committed and snapshotted.
      expect((await replicas('low', 1)).map((p) => p.metadata?.uid).sort()).toEqual([...oldUids].sort());

      writeFileSync(join(volumeDir, 'step-500.pt'), 'weights of step 500');
      const c = await runCheckpointHelper(cluster.plane, rank0, tokenFile, ['committed', '500', '1', String(seq)]);
      expect(c.stderr).toBe('');
      expect(c.code).toBe(0);
      const snapshotName = `low-ckpt-${seq}`;

      const highPods = await waitFor(
        'high bound on the GPUs low held',
        async () => {
          const ps = await replicas('high', 1);
          return ps.length === 2 && ps.every((p) => (p.spec?.nodeName ?? '') !== '') ? ps : undefined;
        },
        120_000,
      );
      expect(highPods).toHaveLength(2);
      const second = await waitFor(
        'low attempt 2 created (waiting for GPUs), restoring from the checkpoint',
        async () => {
          const j = await getJob('low');
          const ps = await replicas('low', 2);
          return j.status?.attempt === 2 && ps.length === 2 ? { j, ps } : undefined;
        },
        60_000,
      );

      // Evicted whole, only once the snapshot was readyToUse, each replica with the preemption's condition.
      const snap = await client.get<VolumeSnapshotObject>(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots/${snapshotName}`);
      expect(snap.status?.readyToUse).toBe(true);
      expect(second.j.status?.checkpoint?.lastReady).toMatchObject({ snapshotName, step: 500 });
      const readyMs = Date.parse(second.j.status?.checkpoint?.lastReady?.readyTime ?? '');
      const deletes = seen.filter((e) => e.kind === 'delete' && oldUids.has(e.pod.metadata?.uid ?? ''));
      expect(deletes).toHaveLength(2);
      const firstEvictMs = Math.min(
        ...seen.filter((e) => oldUids.has(e.pod.metadata?.uid ?? '') && e.pod.metadata?.deletionTimestamp !== undefined).map((e) => e.atMs),
        ...deletes.map((e) => e.atMs),
      );
      expect(firstEvictMs).toBeGreaterThanOrEqual(readyMs);
      for (const uid of oldUids) {
        expect(disruptionOf(seen, uid)?.reason).toBe('PreemptionByScheduler');
      }

      // The controller was told: a move, not a failure — restarted at once, restartCount unchanged.
      const announced = JSON.parse(second.j.metadata.annotations?.[ANNOTATION.gangEvicted] ?? '{}') as { attempt?: number; reason?: string };
      expect(announced).toMatchObject({ attempt: 1, reason: PREEMPTION_EVICTION_REASON });
      expect(second.j.status?.restartCount ?? 0).toBe(0);
      expect(second.j.status?.phase).not.toBe('Failed');
      const moved = await waitFor(
        'the controller’s GangMoved event',
        async () => (await listEvents(client, NS)).find((e) => e.involvedObject?.name === 'low' && e.reason === 'GangMoved'),
        30_000,
      );
      expect(moved.message).toContain(`SITS evicted the gang to move it (${PREEMPTION_EVICTION_REASON}:`);
      expect(
        (await listEvents(client, NS)).filter((e) => e.involvedObject?.name === 'low' && (e.reason === 'ReplicaDeleted' || e.reason === 'ReplicaEvicted')),
      ).toEqual([]);
      for (const p of second.ps) expect(envOf(p)).toMatchObject({ SITS_RESTORE_STEP: '500', SITS_RESTORE_SNAPSHOT: snapshotName });

      // When the quota's owner is done, low resumes from that checkpoint.
      await client.delete(`${TJ}/namespaces/${NS}/trainingjobs/high`);
      const resumed = await waitFor(
        'low attempt 2 Running',
        async () => {
          const j = await getJob('low');
          const ps = await replicas('low', 2);
          return j.status?.phase === 'Running' && j.status.attempt === 2 && ps.length === 2 && ps.every((p) => p.status?.phase === 'Running') ? j : undefined;
        },
        180_000,
      );
      expect(resumed.status?.checkpoint?.restoredFrom).toEqual({ snapshotName, step: 500, attempt: 2 });
      expect(resumed.status?.restartCount ?? 0).toBe(0);
      expect(app.scheduler.evictor.stats).toMatchObject({ announced: 1, evicted: 2 });
      // Asked once: the cycles between the ask and the cache showing it read the requester's memory of it.
      expect(app.scheduler.checkpoints.stats).toEqual({ requested: 1, errors: 0 });
    } finally {
      podWatch.stop();
    }
  });
  // Runs after the test above: `low` is Running again (attempt 2, restored from step 500) on all 8 GPUs.
  it('a victim whose checkpoint fails (its volume is full) is evicted at once, not at its grace; one that never commits is evicted at its grace', async () => {
    dumpLogsOnFailure();
    const running = async (attempt: number): Promise<V1Pod[]> =>
      waitFor(
        `low attempt ${attempt} Running on all 8 GPUs`,
        async () => {
          const j = await getJob('low');
          const ps = await replicas('low', attempt);
          return j.status?.phase === 'Running' && j.status.attempt === attempt && ps.length === 2 && ps.every((p) => p.status?.phase === 'Running')
            ? ps
            : undefined;
        },
        180_000,
      );
    const evictedAt = (seen: readonly { kind: string; pod: V1Pod; atMs: number }[], uids: ReadonlySet<string>): number =>
      Math.min(
        ...seen
          .filter((e) => uids.has(e.pod.metadata?.uid ?? '') && (e.kind === 'delete' || e.pod.metadata?.deletionTimestamp !== undefined))
          .map((e) => e.atMs),
      );
    /** The time of the first Preemption ask on low after `before` (the job's request-checkpoint value then). */
    const newAsk = (what: string, before: string | undefined): Promise<number> =>
      waitFor(
        what,
        async () => {
          const req = (await getJob('low')).metadata.annotations?.[ANNOTATION.requestCheckpoint];
          return req !== before && req?.startsWith('Preemption/') === true ? Date.parse(req.slice('Preemption/'.length)) : undefined;
        },
        90_000,
      );
    const boundHigh = (name: string): Promise<V1Pod[]> =>
      waitFor(
        `${name} bound on the GPUs low held`,
        async () => {
          const ps = await replicas(name, 1);
          return ps.length === 2 && ps.every((p) => (p.spec?.nodeName ?? '') !== '') ? ps : undefined;
        },
        150_000,
      );

    // 1. A full volume: rank 0's save raises ENOSPC (a real write(2) to /dev/full) and saving() reports it. The
    //    victim's queue grants 240 s; the gang goes as soon as the cycle has failed.
    const second = await running(2);
    const before = (await getJob('low')).metadata.annotations?.[ANNOTATION.requestCheckpoint];
    const rank0 = second.find((p) => p.metadata?.labels?.[LABEL.rank] === '0') as V1Pod;
    const uids2 = new Set(second.map((p) => p.metadata?.uid ?? ''));
    let watch = await recordPodChanges(client, NS);
    try {
      await client.post(`${TJ}/namespaces/${NS}/trainingjobs`, trainingJob('high2', 'ck-a', 'ck-high', 2, false));
      await newAsk('a new Preemption ask on low', before);
      const seq = await waitFor(
        'rank 0 sees the request',
        async () => {
          const h = await runCheckpointHelper(cluster.plane, rank0, tokenFile, ['requested']);
          if (h.code !== 0) throw new Error(`sits_checkpoint.py requested: ${h.stderr}`);
          return h.stdout.trim() === '' ? undefined : Number(h.stdout.trim());
        },
        60_000,
        200,
      );
      const save = await saveOnFullVolume(cluster.plane, rank0, tokenFile, 900, seq);
      expect(save.stderr).toBe('');
      expect(save.stdout).toContain('No space left on device (ENOSPC)');
      const reportedMs = Date.now();
      await boundHigh('high2');
      const j = await getJob('low');
      expect(j.status?.conditions?.find((c) => c.type === 'Checkpointing')).toMatchObject({
        reason: 'VolumeFull',
        message: expect.stringContaining('claim ckpt mounted at /checkpoints is full: No space left on device (ENOSPC)'),
      });
      // Evicted after the failure was reported, long before the 240 s grace, with the reason on each replica.
      const evictMs = evictedAt(watch.seen, uids2);
      expect(evictMs).toBeGreaterThanOrEqual(reportedMs - 1000);
      for (const uid of uids2) expect(disruptionOf(watch.seen, uid)?.message).toContain('the checkpoint asked of it failed');
      // The job keeps its last good checkpoint: the next attempt restores step 500.
      const third = await waitFor(
        'low attempt 3 created, restoring from step 500',
        async () => {
          const ps = await replicas('low', 3);
          return ps.length === 2 ? ps : undefined;
        },
        60_000,
      );
      for (const p of third) expect(envOf(p)).toMatchObject({ SITS_RESTORE_STEP: '500' });
      await client.delete(`${TJ}/namespaces/${NS}/trainingjobs/high2`);
    } finally {
      watch.stop();
    }

    // 2. Nobody commits: the victim is evicted at its queue's grace, not before.
    await client.mergePatch(`${TJ}/queues/ck-b`, { spec: { preemption: { checkpointGraceSeconds: 10 } } });
    const uids3 = new Set((await running(3)).map((p) => p.metadata?.uid ?? ''));
    watch = await recordPodChanges(client, NS);
    try {
      const before3 = (await getJob('low')).metadata.annotations?.[ANNOTATION.requestCheckpoint];
      await client.post(`${TJ}/namespaces/${NS}/trainingjobs`, trainingJob('high3', 'ck-a', 'ck-high', 2, false));
      const askMs = await newAsk('a third Preemption ask on low', before3);
      await boundHigh('high3');
      // Not before the grace; and at it, not at whatever event comes next (the scheduler wakes for the deadline).
      expect(evictedAt(watch.seen, uids3)).toBeGreaterThanOrEqual(askMs + 10_000);
      expect(evictedAt(watch.seen, uids3)).toBeLessThan(askMs + 10_000 + scaled(30_000));
      for (const uid of uids3) expect(disruptionOf(watch.seen, uid)?.message).toContain('the checkpoint asked of it did not commit within its grace of 10 s');
    } finally {
      watch.stop();
    }
  });
});
