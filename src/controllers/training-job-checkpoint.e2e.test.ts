// Issue 14 items 1–2 on a real control plane: the TrainingJob controller with spec.checkpoint, the real
// snapshot-controller and csi-snapshotter over the stand-in CSI driver, kube-controller-manager's PV binder. The
// test plays rank 0 through the documented contract by running examples/sits_checkpoint.py for real, as a
// service account allowed only to get and patch pods.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { startControllers, type Controllers } from '../app/controllers.ts';
import { EXIT_CODE_ANNOTATION } from '../harness/fake-kubelet.ts';
import { runCheckpointHelper, saveOnFullVolume, trainerTokenFile } from '../harness/checkpoint-helper.ts';
import { createNs, listPods, waitFor } from '../harness/e2e-kit.ts';
import {
  createStaticVolume,
  ensureCsiProvisioner,
  ensureSnapshotComponents,
  SNAPSHOT_API,
  startSnapshotStack,
  storageClass,
  volumeSnapshotClass,
  type SnapshotStack,
  type VolumeSnapshotObject,
} from '../harness/snapshot-stack.ts';
import type { TrainingJobObject } from './training-job/model.ts';

const TJ = '/apis/ai.sits2026.dev/v1';
const jobsPath = (ns: string): string => `${TJ}/namespaces/${ns}/trainingjobs`;

let cluster: DevCluster;
let client: DevCluster['client'];
let stack: SnapshotStack;
let controllers: Controllers;
const logs: string[] = [];

beforeAll(async () => {
  await Promise.all([ensureSnapshotComponents(), ensureCsiProvisioner()]);
  cluster = await startDevCluster({ nodes: 2, shape: 'a800x4', log: (m) => logs.push(m), controllers: false });
  client = cluster.client;
  // PVC protection: the apiserver's admission adds its finalizer to every claim; its controller removes it once no
  // pod uses the claim (a deleted job's checkpoint claim must really go).
  await cluster.plane.startControllerManager({ controllers: ['persistentvolume-binder-controller', 'persistentvolumeclaim-protection-controller'] });
  stack = await startSnapshotStack(cluster.plane, { client, withProvisioner: true });
  await client.post(`${SNAPSHOT_API}/volumesnapshotclasses`, volumeSnapshotClass('stand-in', stack.driver.name, 'Delete'));
  await client.post('/apis/storage.k8s.io/v1/storageclasses', storageClass('stand-in', stack.driver.name));
  controllers = await startControllers(client, { log: (m) => logs.push(`controller: ${m}`), config: { backoffBaseMs: 500, backoffMaxMs: 2000 } });
}, 240_000);

afterAll(async () => {
  await controllers?.stop();
  await stack?.stop();
  await cluster?.stop();
});

const getJob = (ns: string, name: string): Promise<TrainingJobObject> => client.get<TrainingJobObject>(`${jobsPath(ns)}/${name}`);
const snapshots = async (ns: string, job: string): Promise<VolumeSnapshotObject[]> =>
  (
    await client.get<{ items: VolumeSnapshotObject[] }>(
      `${SNAPSHOT_API}/namespaces/${ns}/volumesnapshots?labelSelector=${encodeURIComponent(`ai.sits2026.dev/training-job=${job}`)}`,
    )
  ).items;
const replicaPods = async (ns: string, job: string): Promise<V1Pod[]> =>
  (await listPods(client, ns)).filter(
    (p) =>
      p.metadata?.labels?.['ai.sits2026.dev/training-job'] === job &&
      p.metadata.labels['ai.sits2026.dev/role'] === 'replica' &&
      p.metadata.deletionTimestamp === undefined,
  );
const envOf = (p: V1Pod): Record<string, string> => Object.fromEntries((p.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']));

/** A namespace with a bound RWX checkpoint claim `ckpt` and a service account `trainer` that may get and patch pods. */
async function setUp(ns: string): Promise<{ volumeDir: string; tokenFile: string }> {
  await createNs(client, ns);
  const vol = await createStaticVolume(stack, { namespace: ns, pvcName: 'ckpt' });
  const tokenFile = await trainerTokenFile(client, cluster.plane, ns);
  await waitFor(
    `claim ${ns}/ckpt Bound`,
    async () => (await client.get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/ckpt`)).status?.phase === 'Bound',
    120_000,
  );
  return { volumeDir: stack.driver.volumeDir(vol.volume.id), tokenFile };
}

/** examples/sits_checkpoint.py as rank 0's container would run it. */
const helper = (pod: V1Pod, tokenFile: string, args: string[]): ReturnType<typeof runCheckpointHelper> =>
  runCheckpointHelper(cluster.plane, pod, tokenFile, args);

function job(name: string, checkpoint: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'TrainingJob',
    metadata: { name },
    spec: {
      replicas: 2,
      gpusPerReplica: 1,
      container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
      checkpoint: { volume: { claimName: 'ckpt' }, volumeSnapshotClassName: 'stand-in', writers: 'rank0', ...checkpoint },
      ...extra,
    },
  };
}

async function runningRank0(ns: string, name: string, attempt?: number): Promise<V1Pod> {
  return waitFor(
    `${ns}/${name} Running (attempt ${attempt ?? 'any'})`,
    async () => {
      const j = await getJob(ns, name);
      if (j.status?.phase !== 'Running' || (attempt !== undefined && j.status.attempt !== attempt)) return undefined;
      return (await replicaPods(ns, name)).find(
        (p) => p.metadata?.labels?.['ai.sits2026.dev/rank'] === '0' && p.metadata.labels['ai.sits2026.dev/attempt'] === String(j.status?.attempt),
      );
    },
    60_000,
  );
}

/** Asks for a checkpoint (annotation on the job) and waits until rank 0's pod carries the request; returns its seq. */
async function request(ns: string, name: string, id: string, tokenFile: string): Promise<{ seq: number; pod: V1Pod }> {
  await client.mergePatch(`${jobsPath(ns)}/${name}`, { metadata: { annotations: { 'ai.sits2026.dev/request-checkpoint': `Manual/${id}` } } });
  const pod = await runningRank0(ns, name);
  const want = await waitFor(
    `${name}: a cycle started for request ${id}`,
    async () => {
      const c = (await getJob(ns, name)).status?.checkpoint;
      return c?.handledRequest === `Manual/${id}` && c.cycle?.request === `Manual/${id}` ? c.cycle.seq : undefined;
    },
    30_000,
  );
  const seq = await waitFor(
    `rank 0 of ${name} asked for checkpoint ${id} (seq ${want})`,
    async () => {
      const r = await helper(pod, tokenFile, ['requested']);
      if (r.code !== 0) throw new Error(`sits_checkpoint.py requested: ${r.stderr}`);
      const s = r.stdout.trim();
      return s === String(want) ? want : undefined;
    },
    30_000,
    200,
  );
  return { seq, pod };
}

/** Rank 0's part: the files on the shared volume, then the commit through the helper. */
async function commit(pod: V1Pod, volumeDir: string, tokenFile: string, step: number, seq: number): Promise<void> {
  writeFileSync(join(volumeDir, `step-${step}.pt`), `weights of step ${step}`);
  const r = await helper(pod, tokenFile, ['committed', String(step), '1', String(seq)]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
}

async function readyCheckpoint(ns: string, name: string, snapshotName: string): Promise<TrainingJobObject> {
  return waitFor(
    `${name}: ${snapshotName} is the newest Ready checkpoint`,
    async () => {
      const j = await getJob(ns, name);
      return j.status?.checkpoint?.lastReady?.snapshotName === snapshotName && j.status.checkpoint.cycle?.phase === 'Ready' ? j : undefined;
    },
    60_000,
  );
}

const gone = async (path: string): Promise<boolean> =>
  client.get(path).then(
    () => false,
    (e: unknown) => {
      if ((e as { status?: number }).status === 404 || /\b404\b/.test((e as Error).message)) return true;
      throw e;
    },
  );

describe('TrainingJob checkpoints on the real snapshot stack', () => {
  it('a commit through the contract becomes a readyToUse VolumeSnapshot; count retention drops the oldest; a restarted gang restores from the newest and status names it', async () => {
    const ns = 'ckpt-main';
    const { volumeDir, tokenFile } = await setUp(ns);
    await client.post(jobsPath(ns), job('llm', { retention: { keep: 2 } }));
    const pod0 = await runningRank0(ns, 'llm', 1);
    // Every rank mounts the one claim at the same path and knows where it is.
    for (const p of await replicaPods(ns, 'llm')) {
      expect(p.spec?.volumes?.find((v) => v.name === 'sits-checkpoint')?.persistentVolumeClaim?.claimName).toBe('ckpt');
      expect(p.spec?.containers[0]?.volumeMounts?.find((m) => m.name === 'sits-checkpoint')?.mountPath).toBe('/checkpoints');
      expect(envOf(p).SITS_CHECKPOINT_DIR).toBe('/checkpoints');
      expect(envOf(p).SITS_RESTORE_STEP).toBeUndefined();
    }
    expect(pod0.spec?.containers[0]?.env?.find((e) => e.name === 'SITS_POD_NAME')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');

    for (const [i, step] of [
      [1, 100],
      [2, 200],
      [3, 300],
    ] as const) {
      const { seq, pod } = await request(ns, 'llm', `r${i}`, tokenFile);
      expect(seq).toBe(i);
      await commit(pod, volumeDir, tokenFile, step, seq);
      const j = await readyCheckpoint(ns, 'llm', `llm-ckpt-${i}`);
      expect(j.status?.checkpoint?.lastReady?.step).toBe(step);
      expect(j.status?.lastCheckpointTime).toBe(j.status?.checkpoint?.lastReady?.readyTime);
      expect(j.status?.checkpoint?.handledRequest).toBe(`Manual/r${i}`);
      expect(j.status?.checkpoint?.lastSnapshotLatencyMs).toBeGreaterThan(0);
      // The helper sees its request answered.
      expect((await helper(pod, tokenFile, ['requested'])).stdout.trim()).toBe('');
    }
    const snaps = await waitFor(
      'retention keeps the newest 2',
      async () => {
        const s = (await snapshots(ns, 'llm')).filter((x) => x.metadata.name !== undefined);
        return s.length === 2 ? s : undefined;
      },
      60_000,
    );
    expect(snaps.map((s) => s.metadata.name).sort()).toEqual(['llm-ckpt-2', 'llm-ckpt-3']);
    const newest = snaps.find((s) => s.metadata.name === 'llm-ckpt-3');
    expect(newest?.status?.readyToUse).toBe(true);
    const content = await client.get<{ status?: { snapshotHandle?: string } }>(
      `${SNAPSHOT_API}/volumesnapshotcontents/${newest?.status?.boundVolumeSnapshotContentName ?? ''}`,
    );
    expect(execFileSync('tar', ['tzf', stack.driver.snapshotFile(content.status?.snapshotHandle ?? '')], { encoding: 'utf8' }).split('\n')).toContain(
      './step-300.pt',
    );

    // A replica fails: the new gang starts from step 300.
    const pods = await replicaPods(ns, 'llm');
    const rank1 = pods.find((p) => p.metadata?.labels?.['ai.sits2026.dev/rank'] === '1');
    await client.mergePatch(`/api/v1/namespaces/${ns}/pods/${rank1?.metadata?.name ?? ''}`, { metadata: { annotations: { [EXIT_CODE_ANNOTATION]: '137' } } });
    await runningRank0(ns, 'llm', 2);
    const j = await getJob(ns, 'llm');
    expect(j.status?.checkpoint?.restoredFrom).toEqual({ snapshotName: 'llm-ckpt-3', step: 300, attempt: 2 });
    for (const p of await replicaPods(ns, 'llm')) expect(envOf(p)).toMatchObject({ SITS_RESTORE_STEP: '300', SITS_RESTORE_SNAPSHOT: 'llm-ckpt-3' });

    await client.delete(`${jobsPath(ns)}/llm`);
    await waitFor(
      'the job and (retention.policy Delete) its snapshots gone',
      async () => (await gone(`${jobsPath(ns)}/llm`)) && (await snapshots(ns, 'llm')).length === 0,
      60_000,
    );
  });

  it('TTL retention deletes checkpoints older than ttlSeconds but never the newest', async () => {
    const ns = 'ckpt-ttl';
    const { volumeDir, tokenFile } = await setUp(ns);
    await client.post(jobsPath(ns), job('ttl', { retention: { keep: 10, ttlSeconds: 3 } }));
    for (const [i, step] of [
      [1, 10],
      [2, 20],
    ] as const) {
      const { seq, pod } = await request(ns, 'ttl', `t${i}`, tokenFile);
      await commit(pod, volumeDir, tokenFile, step, seq);
      await readyCheckpoint(ns, 'ttl', `ttl-ckpt-${i}`);
    }
    const left = await waitFor(
      'ttl-ckpt-1 deleted by TTL',
      async () => {
        const s = await snapshots(ns, 'ttl');
        return s.length === 1 ? s : undefined;
      },
      60_000,
    );
    expect(left[0]?.metadata.name).toBe('ttl-ckpt-2');
    // Well past the TTL the newest one stays: it is the restore point.
    await new Promise((r) => setTimeout(r, 4000));
    expect((await snapshots(ns, 'ttl')).map((s) => s.metadata.name)).toEqual(['ttl-ckpt-2']);
    expect((await getJob(ns, 'ttl')).status?.checkpoint?.lastReady?.snapshotName).toBe('ttl-ckpt-2');
  });

  it('bad input: a checkpoint that never commits, a full volume and a VolumeSnapshotClass that does not exist get a condition naming it; the last good checkpoint is kept', async () => {
    const ns = 'ckpt-bad';
    const { volumeDir, tokenFile } = await setUp(ns);
    // The good checkpoint gets deadlines a loaded machine cannot miss: the test's own request and commit (two Python
    // helpers) took over 3 s under load, and the real snapshot chain over 6 s. The short ones are set where they are
    // what the test waits for: the commit limit before the silent request, the snapshot limit with the missing class.
    await client.post(jobsPath(ns), job('bad', { commitTimeoutSeconds: 300, snapshotTimeoutSeconds: 300 }));
    const first = await request(ns, 'bad', 'good', tokenFile);
    await commit(first.pod, volumeDir, tokenFile, 50, first.seq);
    await readyCheckpoint(ns, 'bad', 'bad-ckpt-1');

    // Asked, never committed.
    // Only the annotation: the cycle may fail before a helper could see its request (3 s), and then it is withdrawn.
    // The 3 s limit comes in the same write, so the controller sees both at once.
    await client.mergePatch(`${jobsPath(ns)}/bad`, {
      metadata: { annotations: { 'ai.sits2026.dev/request-checkpoint': 'Manual/silent' } },
      spec: { checkpoint: { commitTimeoutSeconds: 3 } },
    });
    const never = await waitFor(
      'NeverCommitted',
      async () => {
        const j = await getJob(ns, 'bad');
        return j.status?.checkpoint?.cycle?.request === 'Manual/silent' && j.status.checkpoint.cycle.phase === 'Failed' ? j : undefined;
      },
      60_000,
    );
    expect(never.status?.checkpoint?.cycle?.failureReason).toBe('NeverCommitted');
    expect(never.status?.conditions?.find((c) => c.type === 'Checkpointing')).toMatchObject({ status: 'False', reason: 'NeverCommitted' });
    expect(never.status?.checkpoint?.lastReady?.snapshotName).toBe('bad-ckpt-1');

    // The volume is full: rank 0's save raises ENOSPC inside sits_checkpoint.saving(), which reports it. The write
    // goes to /dev/full, the kernel's always-full device: a real ENOSPC from a real write(2). The cycle fails at
    // once (the commit limit is raised to 300 s first, so only the report can end it) as VolumeFull.
    await client.mergePatch(`${jobsPath(ns)}/bad`, { spec: { checkpoint: { commitTimeoutSeconds: 300 } } });
    const full = await request(ns, 'bad', 'full-volume', tokenFile);
    const save = await saveOnFullVolume(cluster.plane, full.pod, tokenFile, 60, full.seq);
    expect(save.stderr).toBe('');
    expect(save.stdout.trim()).toBe('No space left on device (ENOSPC), saving /checkpoints/step-60');
    const volumeFull = await waitFor(
      'VolumeFull',
      async () => {
        const j = await getJob(ns, 'bad');
        return j.status?.checkpoint?.cycle?.seq === full.seq && j.status.checkpoint.cycle.phase === 'Failed' ? j : undefined;
      },
      60_000,
    );
    expect(volumeFull.status?.checkpoint?.cycle?.failureReason).toBe('VolumeFull');
    expect(volumeFull.status?.conditions?.find((c) => c.type === 'Checkpointing')).toMatchObject({
      status: 'False',
      reason: 'VolumeFull',
      message: `checkpoint ${full.seq} (manual) of step 60 failed: claim ckpt mounted at /checkpoints is full: No space left on device (ENOSPC), saving /checkpoints/step-60; the last Ready checkpoint is kept`,
    });
    expect(volumeFull.status?.checkpoint?.lastReady).toMatchObject({ snapshotName: 'bad-ckpt-1', step: 50 });
    // The failed cycle's request is withdrawn from rank 0's pod.
    await waitFor(
      'the failed cycle’s request withdrawn',
      async () =>
        (await client.get<V1Pod>(`/api/v1/namespaces/${ns}/pods/${full.pod.metadata?.name ?? ''}`)).metadata?.annotations?.[
          'ai.sits2026.dev/checkpoint-request'
        ] === undefined,
      30_000,
    );

    // The class is changed to one that does not exist: the snapshot-controller's error, naming it, is the condition.
    await client.mergePatch(`${jobsPath(ns)}/bad`, { spec: { checkpoint: { volumeSnapshotClassName: 'no-such-class', snapshotTimeoutSeconds: 6 } } });
    const third = await request(ns, 'bad', 'missing-class', tokenFile);
    await commit(third.pod, volumeDir, tokenFile, 70, third.seq);
    const erroring = await waitFor(
      'SnapshotError naming the class',
      async () => {
        const c = (await getJob(ns, 'bad')).status?.conditions?.find((x) => x.type === 'Checkpointing');
        return c?.reason === 'SnapshotError' || c?.reason === 'SnapshotFailed' ? c : undefined;
      },
      60_000,
    );
    expect(erroring.message).toContain('no-such-class');
    const failed = await waitFor(
      'SnapshotFailed at the deadline',
      async () => {
        const j = await getJob(ns, 'bad');
        return j.status?.checkpoint?.cycle?.phase === 'Failed' && j.status.checkpoint.cycle.seq === third.seq ? j : undefined;
      },
      60_000,
    );
    expect(failed.status?.checkpoint?.cycle?.failureReason).toBe('SnapshotFailed');
    expect(failed.status?.conditions?.find((c) => c.type === 'Checkpointing')?.message).toContain('no-such-class');
    expect(failed.status?.checkpoint?.lastReady).toMatchObject({ snapshotName: 'bad-ckpt-1', step: 50 });
    await waitFor(
      'the failed cycle’s snapshot deleted, the good one kept',
      async () => {
        const names = (await snapshots(ns, 'bad')).map((s) => s.metadata.name);
        return names.length === 1 && names[0] === 'bad-ckpt-1';
      },
      60_000,
    );
  });

  it('claimTemplate + Retain: a job re-created after deletion gets its claim restored from the newest kept snapshot (dataSource) and starts from its step', async () => {
    const ns = 'ckpt-restore';
    const { tokenFile } = await setUp(ns);
    const spec = { volume: { claimTemplate: { size: '1Gi', storageClassName: 'stand-in' } }, retention: { policy: 'Retain' } };
    const claimDir = async (): Promise<string> => {
      const claim = await waitFor(
        'rs-checkpoint Bound',
        async () => {
          const c = await client
            .get<{ spec?: { volumeName?: string }; status?: { phase?: string } }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/rs-checkpoint`)
            .catch(() => undefined);
          return c?.status?.phase === 'Bound' ? c : undefined;
        },
        60_000,
      );
      const pv = await client.get<{ spec?: { csi?: { volumeHandle?: string } } }>(`/api/v1/persistentvolumes/${claim.spec?.volumeName ?? ''}`);
      return stack.driver.volumeDir(pv.spec?.csi?.volumeHandle ?? '');
    };
    await client.post(jobsPath(ns), job('rs', spec));
    const first = await request(ns, 'rs', 'a', tokenFile);
    await commit(first.pod, await claimDir(), tokenFile, 500, first.seq);
    await readyCheckpoint(ns, 'rs', 'rs-ckpt-1');

    await client.delete(`${jobsPath(ns)}/rs`);
    await waitFor(
      'rs and its claim gone',
      async () => (await gone(`${jobsPath(ns)}/rs`)) && (await gone(`/api/v1/namespaces/${ns}/persistentvolumeclaims/rs-checkpoint`)),
      60_000,
    );
    expect((await snapshots(ns, 'rs')).map((x) => x.metadata.name)).toEqual(['rs-ckpt-1']);

    await client.post(jobsPath(ns), job('rs', spec));
    const claim = await waitFor(
      'the new claim names the kept snapshot as its dataSource',
      async () => {
        const c = await client
          .get<{ spec?: { dataSource?: { kind?: string; name?: string } } }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/rs-checkpoint`)
          .catch(() => undefined);
        return c?.spec?.dataSource === undefined ? undefined : c;
      },
      60_000,
    );
    expect(claim.spec?.dataSource).toMatchObject({ kind: 'VolumeSnapshot', name: 'rs-ckpt-1' });
    expect(readFileSync(join(await claimDir(), 'step-500.pt'), 'utf8')).toBe('weights of step 500');
    await runningRank0(ns, 'rs', 1);
    const j = await getJob(ns, 'rs');
    expect(j.status?.checkpoint?.restoredFrom).toEqual({ snapshotName: 'rs-ckpt-1', step: 500, attempt: 1 });
    for (const p of await replicaPods(ns, 'rs')) expect(envOf(p)).toMatchObject({ SITS_RESTORE_STEP: '500', SITS_RESTORE_SNAPSHOT: 'rs-ckpt-1' });
    // The next cycle does not reuse the kept snapshot's name.
    const next = await request(ns, 'rs', 'b', tokenFile);
    expect(next.seq).toBe(2);
  });

  it('admission: the CRD refuses a policy without exactly one shared volume; the controller refuses ranks that would see different checkpoint paths, naming the field', async () => {
    const ns = 'ckpt-admit';
    await createNs(client, ns);
    const refused = async (body: Record<string, unknown>): Promise<string> =>
      client.post(jobsPath(ns), body).then(
        () => 'accepted',
        (e: unknown) => (e as Error).message,
      );
    const both = await refused(job('both', { volume: { claimName: 'ckpt', claimTemplate: { size: '10Gi' } } }));
    expect(both).toContain('spec.checkpoint.volume.claimName');
    expect(both).toContain('set exactly one of claimName or claimTemplate');
    const none = await refused(job('none', { volume: undefined }));
    expect(none).toContain('spec.checkpoint.volume');

    const local = job(
      'local',
      { volume: { claimName: 'ckpt' } },
      {
        container: undefined,
        podTemplate: {
          spec: {
            containers: [{ name: 'trainer', image: 'pytorch:2.3', volumeMounts: [{ name: 'scratch', mountPath: '/checkpoints' }] }],
            volumes: [{ name: 'scratch', emptyDir: {} }],
          },
        },
      },
    );
    await client.post(jobsPath(ns), local);
    const j = await waitFor(
      'local refused',
      async () => {
        const x = await getJob(ns, 'local');
        return x.status?.phase === 'Failed' ? x : undefined;
      },
      30_000,
    );
    const c = j.status?.conditions?.find((x) => x.type === 'Failed');
    expect(c?.reason).toBe('CheckpointPathNotShared');
    expect(c?.message).toContain('spec.podTemplate.spec.containers[0].volumeMounts[0]');
    expect(c?.message).toContain('an emptyDir');
    expect(await replicaPods(ns, 'local')).toHaveLength(0);
  });
});
