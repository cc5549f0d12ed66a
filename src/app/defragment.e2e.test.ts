// Issue 14 item 4 live (ADR 0144), end to end on the real control plane and snapshot stack: two 8-GPU nodes, two
// checkpointable 4-GPU TrainingJobs placed one per node, and an 8-GPU gang that fits nowhere only because the free
// GPUs are split 4 + 4. With the Queue's defragmentByMigration off nothing moves. Turned on, the scheduler's
// defragmenter (the core's planner, the replay's code) picks one job to move; it is asked for a checkpoint
// (Migration/<time>/defragment), the test plays rank 0 with examples/sits_checkpoint.py, the VolumeSnapshot
// becomes readyToUse, only then is its gang evicted (gang-evicted reason Defragment); the 8-GPU gang binds on the
// freed node and the moved job restarts on the other node from that snapshot, not counted as a failure.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';

import { ANNOTATION, LABEL } from '../api/wire.ts';
import type { TrainingJobObject } from '../controllers/training-job/model.ts';
import { runCheckpointHelper, trainerTokenFile } from '../harness/checkpoint-helper.ts';
import { createNs, listEvents, waitFor } from '../harness/e2e-kit.ts';
import { createStaticVolume, SNAPSHOT_API, type SnapshotStack, type VolumeSnapshotObject } from '../harness/snapshot-stack.ts';
import { DEFRAGMENT_REASON, parseDefragmentRequest } from '../kube/scheduler/defragmenter.ts';
import type { LiveScheduler } from '../kube/scheduler/live-scheduler.ts';
import { buildLiveScheduler } from './live.ts';
import { containerEnv, recordPodChanges, startCheckpointCluster, trainingJobReplicas, type CheckpointCluster } from '../kits/checkpoint-e2e-kit.ts';
import { startControllers, type Controllers } from './controllers.ts';

const TJ = '/apis/ai.sits2026.dev/v1';
const NS = 'defrag';

let env: CheckpointCluster;
let cluster: CheckpointCluster['cluster'];
let client: CheckpointCluster['client'];
let stack: SnapshotStack;
let controllers: Controllers;
let scheduler: LiveScheduler;
const logs: string[] = [];

beforeAll(async () => {
  env = await startCheckpointCluster({ nodes: 2, shape: 'l4x8', log: (m) => logs.push(m), controllers: false, withScheduler: false });
  ({ cluster, client, stack } = env);
  scheduler = buildLiveScheduler(client, { identity: 'sits-defrag', log: (m) => logs.push(`scheduler: ${m}`), defragment: { graceMs: 240_000 } });
  await scheduler.start();
  controllers = await startControllers(client, { log: (m) => logs.push(`controller: ${m}`), config: { backoffBaseMs: 500, backoffMaxMs: 2000 } });
}, 240_000);

afterAll(async () => {
  await controllers?.stop();
  await scheduler?.stop();
  await env?.stop();
});

const getJob = (name: string): Promise<TrainingJobObject> => client.get<TrainingJobObject>(`${TJ}/namespaces/${NS}/trainingjobs/${name}`);
const envOf = containerEnv;
const replicas = (job: string, attempt: number): Promise<V1Pod[]> => trainingJobReplicas(client, NS, job, attempt);
const queue = (defragment: boolean): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'Queue',
  metadata: { name: 'train' },
  spec: {
    tenant: 'train',
    resources: [{ name: 'nvidia.com/gpu', nominal: '16' }],
    preemption: { withinQueue: 'Never', reclaimWithinCohort: 'Never', defragmentByMigration: defragment },
  },
});
const trainingJob = (name: string, gpus: number, claim?: string): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'TrainingJob',
  metadata: { name },
  spec: {
    replicas: 1,
    queue: 'train',
    gpusPerReplica: gpus,
    container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
    // Without a stated runtime and no finished job to learn from, a job that has run e seconds is expected to run
    // about e more (the runtime model's doubling tail), and a minute-old job ends sooner than a checkpoint takes:
    // moving it would not pay, on a fast machine (the CI run on 45821c5), while a slow one got a plan.
    expectedRuntimeSeconds: 3600,
    ...(claim === undefined ? {} : { checkpoint: { volume: { claimName: claim }, volumeSnapshotClassName: 'stand-in', writers: 'rank0' } }),
  },
});
const runningOn = async (job: string, attempt: number): Promise<{ pod: V1Pod; node: string } | undefined> => {
  const j = await getJob(job);
  const [p] = await replicas(job, attempt);
  return j.status?.phase === 'Running' && j.status.attempt === attempt && p?.status?.phase === 'Running' && (p.spec?.nodeName ?? '') !== ''
    ? { pod: p, node: p.spec?.nodeName ?? '' }
    : undefined;
};
const cordon = (node: string, on: boolean): Promise<unknown> => client.mergePatch(`/api/v1/nodes/${node}`, { spec: { unschedulable: on } });

describe('defragmentation by migration on the live scheduler (ADR 0144)', () => {
  it('policy off: nothing moves; on: one 4-GPU job is checkpointed, evicted and restored on the other node, and the 8-GPU gang binds', async () => {
    // A failure on a busy CI machine says what the scheduler and controllers did.
    onTestFailed(() => console.error(`--- defragment e2e log (last 150 lines) ---\n${logs.slice(-150).join('\n')}`));
    await client.post(`${TJ}/queues`, queue(false));
    await createNs(client, NS);
    const vols = {
      a: await createStaticVolume(stack, { namespace: NS, pvcName: 'ckpt-a' }),
      b: await createStaticVolume(stack, { namespace: NS, pvcName: 'ckpt-b' }),
    };
    const tokenFile = await trainerTokenFile(client, cluster.plane, NS);
    for (const c of ['ckpt-a', 'ckpt-b'])
      await waitFor(
        `claim ${c} Bound`,
        async () => (await client.get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${NS}/persistentvolumeclaims/${c}`)).status?.phase === 'Bound',
        120_000,
      );

    // One 4-GPU job per node: the first node is cordoned while the second job is placed.
    await client.post(`${TJ}/namespaces/${NS}/trainingjobs`, trainingJob('a', 4, 'ckpt-a'));
    const a1 = await waitFor('a Running', () => runningOn('a', 1), 120_000);
    await cordon(a1.node, true);
    await client.post(`${TJ}/namespaces/${NS}/trainingjobs`, trainingJob('b', 4, 'ckpt-b'));
    const b1 = await waitFor('b Running', () => runningOn('b', 1), 120_000);
    expect(b1.node).not.toBe(a1.node);
    await cordon(a1.node, false);
    await waitFor('the node uncordoned', async () => (await client.get<V1Node>(`/api/v1/nodes/${a1.node}`)).spec?.unschedulable !== true);

    // The 8-GPU gang: 8 GPUs free in the cluster, 4 on each node.
    await client.post(`${TJ}/namespaces/${NS}/trainingjobs`, trainingJob('big', 8));
    await waitFor(
      'big waits for capacity',
      async () => {
        const [p] = await replicas('big', 1);
        return p?.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False') === true;
      },
      60_000,
    );
    // Policy off: no plan, no checkpoint asked, nothing evicted, for a while.
    await new Promise((r) => setTimeout(r, 5000));
    expect(scheduler.defragmenter.stats.plans).toBe(0);
    for (const j of ['a', 'b']) expect((await getJob(j)).metadata.annotations?.[ANNOTATION.requestCheckpoint]).toBeUndefined();
    expect((await replicas('big', 1))[0]?.spec?.nodeName ?? '').toBe('');

    const uids = new Map(
      [...(await replicas('a', 1)), ...(await replicas('b', 1))].map((p) => [p.metadata?.uid ?? '', p.metadata?.labels?.[LABEL.trainingJob] ?? '']),
    );
    const podWatch = await recordPodChanges(client, NS);
    const seen = podWatch.seen;
    try {
      // Policy on.
      const q = await client.get<{ metadata: { resourceVersion?: string } }>(`${TJ}/queues/train`);
      await client.mergePatch(`${TJ}/queues/train`, {
        metadata: { resourceVersion: q.metadata.resourceVersion },
        spec: { preemption: { defragmentByMigration: true } },
      });
      const asked = await waitFor(
        'a Migration checkpoint cycle on one of the 4-GPU jobs',
        async () => {
          for (const name of ['a', 'b']) {
            const j = await getJob(name);
            const req = parseDefragmentRequest(j.metadata.annotations?.[ANNOTATION.requestCheckpoint]);
            const c = j.status?.checkpoint?.cycle;
            if (req !== undefined && c?.request === req.value && c.trigger === 'Migration') return { name, seq: c.seq };
          }
          return undefined;
        },
        90_000,
      );
      const moved = asked.name;
      const stays = moved === 'a' ? 'b' : 'a';
      const from = moved === 'a' ? a1.node : b1.node;
      const to = moved === 'a' ? b1.node : a1.node;
      expect(scheduler.defragmenter.stats.plans).toBe(1);
      // The node the move frees is held for the gang while the plan stands (the moved job may not take it back).
      expect(scheduler.defragmenter.held(Date.now()).map((r) => r.nodes)).toEqual([[from]]);
      expect((await getJob(stays)).metadata.annotations?.[ANNOTATION.requestCheckpoint]).toBeUndefined();
      const [rank0] = await replicas(moved, 1);
      const seq = await waitFor(
        'rank 0 sees the request through the contract',
        async () => {
          const h = await runCheckpointHelper(cluster.plane, rank0 as V1Pod, tokenFile, ['requested']);
          if (h.code !== 0) throw new Error(`sits_checkpoint.py requested: ${h.stderr}`);
          return h.stdout.trim() === String(asked.seq) ? asked.seq : undefined;
        },
        60_000,
        200,
      );
      // Nothing is evicted before the checkpoint is committed and snapshotted.
      await new Promise((r) => setTimeout(r, 2000));
      expect((await replicas(moved, 1)).map((p) => p.metadata?.uid)).toEqual([rank0?.metadata?.uid]);

      writeFileSync(join(stack.driver.volumeDir((moved === 'a' ? vols.a : vols.b).volume.id), 'step-300.pt'), 'weights of step 300');
      const c = await runCheckpointHelper(cluster.plane, rank0 as V1Pod, tokenFile, ['committed', '300', '1', String(seq)]);
      expect(c.stderr).toBe('');
      expect(c.code).toBe(0);
      const snapshotName = `${moved}-ckpt-${seq}`;

      const big = await waitFor(
        'big bound on the freed node',
        async () => {
          const [p] = await replicas('big', 1);
          return (p?.spec?.nodeName ?? '') !== '' ? p : undefined;
        },
        120_000,
      );
      expect(big?.spec?.nodeName).toBe(from);
      await waitFor('the hold released once the gang started', async () => scheduler.defragmenter.held(Date.now()).length === 0, 60_000);
      const restarted = await waitFor(`${moved} attempt 2 Running on the other node`, () => runningOn(moved, 2), 120_000);
      expect(restarted.node).toBe(to);
      const j = await getJob(moved);
      expect(j.status?.checkpoint?.restoredFrom).toEqual({ snapshotName, step: 300, attempt: 2 });
      expect(envOf(restarted.pod)).toMatchObject({ SITS_RESTORE_STEP: '300', SITS_RESTORE_SNAPSHOT: snapshotName });
      expect(j.status?.restartCount ?? 0).toBe(0);
      expect(JSON.parse(j.metadata.annotations?.[ANNOTATION.gangEvicted] ?? '{}')).toMatchObject({ attempt: 1, reason: DEFRAGMENT_REASON });

      // Evicted only once the snapshot was readyToUse, with the reason; the job that stays was not touched.
      const snap = await client.get<VolumeSnapshotObject>(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots/${snapshotName}`);
      expect(snap.status?.readyToUse).toBe(true);
      const readyMs = Date.parse(j.status?.checkpoint?.lastReady?.readyTime ?? '');
      const movedUid = rank0?.metadata?.uid ?? '';
      const firstEvictMs = Math.min(
        ...seen.filter((e) => e.pod.metadata?.uid === movedUid && (e.kind === 'delete' || e.pod.metadata?.deletionTimestamp !== undefined)).map((e) => e.atMs),
      );
      expect(firstEvictMs).toBeGreaterThanOrEqual(readyMs);
      const cond = seen
        .filter((e) => e.pod.metadata?.uid === movedUid)
        .flatMap((e) => e.pod.status?.conditions ?? [])
        .find((x) => x.type === 'DisruptionTarget');
      expect(cond?.reason).toBe(DEFRAGMENT_REASON);
      expect(cond?.message).toContain(`is freed for gang:${NS}/big (defragmentation by migration): checkpoint ${snapshotName} (step 300) is ready`);
      for (const [uid, job] of uids)
        if (job === stays)
          expect(seen.some((e) => e.pod.metadata?.uid === uid && (e.kind === 'delete' || e.pod.metadata?.deletionTimestamp !== undefined))).toBe(false);
      expect((await getJob(stays)).status?.attempt).toBe(1);
      const ev = await waitFor(
        'the move’s events',
        async () => {
          const evs = (await listEvents(client, NS)).filter((e) => e.involvedObject?.name === moved);
          return evs.some((e) => e.reason === 'GangMoved') && evs.some((e) => e.reason === 'MovedForDefragmentation') ? evs : undefined;
        },
        30_000,
      );
      expect(ev.find((e) => e.reason === 'CheckpointForDefragmentation')?.message).toContain(`for gang:${NS}/big`);
      expect(scheduler.defragmenter.stats).toMatchObject({ plans: 1, requested: 1, evictedGangs: 1 });
    } finally {
      podWatch.stop();
    }
  });
});
