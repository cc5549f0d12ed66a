import { execFile } from 'node:child_process';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { ANNOTATION, CHECKPOINT_LABEL, LABEL } from '../../api/wire.ts';
import type { PodObject } from '../kube-objects.ts';
import { checkpointCleanup, reconcileCheckpoints, readCommit, requestTrigger, type CheckpointInput } from './checkpoints.ts';
import type { VolumeSnapshotObject } from './model.ts';
import { reconcileTrainingJob } from './reconcile.ts';
import { makeJob, T0 } from './testing.ts';
import { DEFAULT_CONTROLLER_CONFIG } from './model.ts';

const CKPT = { volume: { claimName: 'ckpt' }, volumeSnapshotClassName: 'csi', writers: 'all-ranks' };

function rank0(annotations: Record<string, string> = {}): PodObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'bert-0', namespace: 'ml', uid: 'p0', annotations, labels: { [LABEL.rank]: '0' } } };
}

function snap(name: string, o: { seq: number; step?: number; ready?: boolean; committed?: boolean; readyMs?: number; error?: string }): VolumeSnapshotObject {
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      labels: {
        [LABEL.trainingJob]: 'bert',
        [CHECKPOINT_LABEL.seq]: String(o.seq),
        ...(o.step === undefined ? {} : { [CHECKPOINT_LABEL.step]: String(o.step) }),
        ...(o.committed === true ? { [CHECKPOINT_LABEL.committed]: 'true' } : {}),
      },
      ...(o.readyMs === undefined ? {} : { annotations: { [ANNOTATION.checkpointReadyTime]: new Date(o.readyMs).toISOString() } }),
    },
    status: { ...(o.ready === undefined ? {} : { readyToUse: o.ready }), ...(o.error === undefined ? {} : { error: { message: o.error } }) },
  };
}

function input(over: Partial<CheckpointInput> & { checkpoint?: Record<string, unknown>; annotations?: Record<string, string> } = {}): CheckpointInput {
  const job = makeJob({ replicas: 2, checkpoint: { ...CKPT, ...over.checkpoint } });
  const withAnn = over.annotations === undefined ? job : { ...job, metadata: { ...job.metadata, annotations: over.annotations } };
  const policy = withAnn.spec.checkpoint;
  if (policy === undefined) throw new Error('no policy');
  return {
    job: withAnn,
    policy,
    previous: undefined,
    running: true,
    worldSize: 2,
    rank0: rank0(),
    snapshots: [],
    claims: [{ metadata: { name: 'x' } }],
    startMs: T0,
    nowMs: T0 + 1000,
    ...over,
  };
}

describe('checkpoints seen by the scheduler (checkpoint-aware preemption, ADR 0093)', () => {
  it('the newest Ready time goes on every replica as last-checkpoint, once', () => {
    const ready = snap('bert-ckpt-3', { seq: 3, step: 300, ready: true, committed: true, readyMs: T0 - 5000 });
    const at = new Date(T0 - 5000).toISOString();
    const pod = (name: string, ann: Record<string, string> = {}): PodObject => ({ ...rank0(ann), metadata: { ...rank0(ann).metadata, name } });
    const a = reconcileCheckpoints(input({ snapshots: [ready], replicas: [pod('bert-0'), pod('bert-1', { [ANNOTATION.lastCheckpoint]: at })] }));
    expect(a.actions.filter((x) => x.kind === 'annotatePod')).toEqual([
      { kind: 'annotatePod', name: 'bert-0', annotations: { [ANNOTATION.lastCheckpoint]: at } },
    ]);
    const b = reconcileCheckpoints(input({ snapshots: [ready], replicas: [pod('bert-0', { [ANNOTATION.lastCheckpoint]: at })] }));
    expect(b.actions.filter((x) => x.kind === 'annotatePod')).toEqual([]);
  });

  it('replica pods of a job with a checkpoint policy say they can checkpoint; others do not', () => {
    const withPolicy = reconcileTrainingJob(
      { job: makeJob({ replicas: 2, checkpoint: CKPT }), pods: [], services: [], podGroups: [], nowMs: T0 },
      DEFAULT_CONTROLLER_CONFIG,
    );
    const created = withPolicy.actions.flatMap((x) => (x.kind === 'createPod' ? [x.pod] : []));
    expect(created.length).toBeGreaterThan(0);
    for (const p of created) expect(p.metadata.annotations?.[ANNOTATION.checkpointable]).toBe('true');
    const without = reconcileTrainingJob({ job: makeJob({ replicas: 2 }), pods: [], services: [], podGroups: [], nowMs: T0 }, DEFAULT_CONTROLLER_CONFIG);
    for (const x of without.actions) if (x.kind === 'createPod') expect(x.pod.metadata.annotations?.[ANNOTATION.checkpointable]).toBeUndefined();
  });
});

describe('checkpoints in the TrainingJob reconcile', () => {
  it('a request starts a cycle and asks rank 0; the commit creates the VolumeSnapshot in the same reconcile', () => {
    const a = reconcileCheckpoints(input({ annotations: { [ANNOTATION.requestCheckpoint]: 'Preemption/42' } }));
    expect(a.status).toMatchObject({
      seq: 1,
      handledRequest: 'Preemption/42',
      cycle: { seq: 1, trigger: 'Preemption', phase: 'Pre', snapshotName: 'bert-ckpt-1', request: 'Preemption/42' },
    });
    expect(a.actions).toEqual([{ kind: 'annotatePod', name: 'bert-0', annotations: { [ANNOTATION.checkpointRequest]: '1' } }]);
    expect(a.condition?.reason).toBe('Pre');

    const b = reconcileCheckpoints(
      input({
        annotations: { [ANNOTATION.requestCheckpoint]: 'Preemption/42' },
        previous: a.status,
        rank0: rank0({ [ANNOTATION.checkpointRequest]: '1', [ANNOTATION.checkpointCommit]: '{"seq":1,"step":900,"ranks":2}' }),
        nowMs: T0 + 2000,
      }),
    );
    expect(b.status.cycle).toMatchObject({ phase: 'SnapshotTrigger', step: 900 });
    const create = b.actions.find((x) => x.kind === 'createVolumeSnapshot');
    expect(create).toEqual({
      kind: 'createVolumeSnapshot',
      snapshot: {
        apiVersion: 'snapshot.storage.k8s.io/v1',
        kind: 'VolumeSnapshot',
        metadata: {
          name: 'bert-ckpt-1',
          namespace: 'ml',
          labels: { [LABEL.trainingJob]: 'bert', [CHECKPOINT_LABEL.seq]: '1', [CHECKPOINT_LABEL.step]: '900' },
        },
        spec: { volumeSnapshotClassName: 'csi', source: { persistentVolumeClaimName: 'ckpt' } },
      },
    });

    // readyToUse → labelled committed with its ready time → Ready, and the restore point in status.
    const c = reconcileCheckpoints(input({ previous: b.status, snapshots: [snap('bert-ckpt-1', { seq: 1, step: 900, ready: true })], nowMs: T0 + 2500 }));
    expect(c.actions).toContainEqual({
      kind: 'patchVolumeSnapshot',
      name: 'bert-ckpt-1',
      patch: {
        metadata: {
          labels: { [CHECKPOINT_LABEL.committed]: 'true', [CHECKPOINT_LABEL.step]: '900' },
          annotations: { [ANNOTATION.checkpointReadyTime]: new Date(T0 + 2500).toISOString() },
        },
      },
    });
    const d = reconcileCheckpoints(
      input({
        previous: c.status,
        snapshots: [snap('bert-ckpt-1', { seq: 1, step: 900, ready: true, committed: true, readyMs: T0 + 2500 })],
        nowMs: T0 + 2600,
      }),
    );
    expect(d.status).toMatchObject({
      cycle: { phase: 'Ready' },
      lastReady: { snapshotName: 'bert-ckpt-1', step: 900, readyTime: new Date(T0 + 2500).toISOString() },
      lastSnapshotLatencyMs: 500,
    });
    expect(d.actions).toContainEqual(expect.objectContaining({ kind: 'event', reason: 'CheckpointReady' }));
  });

  it('all-ranks writers: a commit naming fewer shards than WORLD_SIZE fails the cycle (IncompleteCommit) and withdraws the request', () => {
    const a = reconcileCheckpoints(input({ annotations: { [ANNOTATION.requestCheckpoint]: 'x' } }));
    const b = reconcileCheckpoints(
      input({
        annotations: { [ANNOTATION.requestCheckpoint]: 'x' },
        previous: a.status,
        rank0: rank0({ [ANNOTATION.checkpointRequest]: '1', [ANNOTATION.checkpointCommit]: '{"seq":1,"step":5,"ranks":1}' }),
      }),
    );
    expect(b.status.cycle).toMatchObject({ phase: 'Failed', failureReason: 'IncompleteCommit' });
    expect(b.actions).toContainEqual({ kind: 'annotatePod', name: 'bert-0', annotations: { [ANNOTATION.checkpointRequest]: null } });
  });

  it('periodic: the first cycle is due intervalSeconds after the start; before that it only wakes up then', () => {
    const early = reconcileCheckpoints(input({ checkpoint: { intervalSeconds: 60 }, nowMs: T0 + 30_000 }));
    expect(early.status.cycle).toBeUndefined();
    expect(early.wakeAt).toBe(T0 + 60_000);
    const due = reconcileCheckpoints(input({ checkpoint: { intervalSeconds: 60 }, nowMs: T0 + 60_000 }));
    expect(due.status.cycle).toMatchObject({ seq: 1, trigger: 'Periodic', phase: 'Pre' });
    // Not while the gang is not running.
    expect(reconcileCheckpoints(input({ checkpoint: { intervalSeconds: 60 }, nowMs: T0 + 60_000, running: false })).status.cycle).toBeUndefined();
  });

  it('never reuses the name of a kept snapshot (a re-created job of the same name after Retain)', () => {
    const r = reconcileCheckpoints(
      input({
        annotations: { [ANNOTATION.requestCheckpoint]: 'x' },
        snapshots: [snap('bert-ckpt-7', { seq: 7, step: 70, ready: true, committed: true, readyMs: T0 })],
      }),
    );
    expect(r.status.cycle?.snapshotName).toBe('bert-ckpt-8');
    expect(r.status.lastReady?.snapshotName).toBe('bert-ckpt-7');
  });

  it('retention: beyond keep and past the TTL go, never the newest; a TTL expiry wakes the reconcile', () => {
    const snaps = [10, 20, 30, 40].map((step, i) => snap(`bert-ckpt-${i + 1}`, { seq: i + 1, step, ready: true, committed: true, readyMs: T0 + i * 1000 }));
    const byCount = reconcileCheckpoints(input({ checkpoint: { retention: { keep: 2 } }, snapshots: snaps, nowMs: T0 + 5000 }));
    expect(byCount.actions.filter((a) => a.kind === 'deleteVolumeSnapshot').map((a) => (a.kind === 'deleteVolumeSnapshot' ? a.name : ''))).toEqual([
      'bert-ckpt-2',
      'bert-ckpt-1',
    ]);
    const byTtl = reconcileCheckpoints(input({ checkpoint: { retention: { keep: 10, ttlSeconds: 2 } }, snapshots: snaps, nowMs: T0 + 3500 }));
    expect(
      byTtl.actions
        .filter((a) => a.kind === 'deleteVolumeSnapshot')
        .map((a) => (a.kind === 'deleteVolumeSnapshot' ? a.name : ''))
        .sort(),
    ).toEqual(['bert-ckpt-1', 'bert-ckpt-2']);
    expect(byTtl.wakeAt).toBe(T0 + 2000 + 2000 + 1);
    const late = reconcileCheckpoints(input({ checkpoint: { retention: { keep: 10, ttlSeconds: 2 } }, snapshots: snaps.slice(3), nowMs: T0 + 999_999 }));
    expect(late.actions).toEqual([]);
  });

  it('claimTemplate: the missing claim is created, from the newest Ready snapshot when there is one', () => {
    const r = reconcileCheckpoints(
      input({
        checkpoint: { volume: { claimTemplate: { size: '10Gi', storageClassName: 'rwx' } } },
        claims: [],
        snapshots: [snap('bert-ckpt-3', { seq: 3, step: 30, ready: true, committed: true, readyMs: T0 })],
      }),
    );
    expect(r.claimActions).toEqual([
      {
        kind: 'createClaim',
        claim: expect.objectContaining({
          metadata: expect.objectContaining({ name: 'bert-checkpoint', labels: { [LABEL.trainingJob]: 'bert' } }),
          spec: {
            accessModes: ['ReadWriteMany'],
            resources: { requests: { storage: '10Gi' } },
            storageClassName: 'rwx',
            dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'bert-ckpt-3' },
          },
        }),
      },
    ]);
  });

  it('a failed save reported by rank 0 fails the cycle as VolumeFull naming the claim and its mount, withdraws the request and keeps the last Ready checkpoint', () => {
    const good = snap('bert-ckpt-1', { seq: 1, step: 100, ready: true, committed: true, readyMs: T0 - 60_000 });
    const a = reconcileCheckpoints(input({ annotations: { [ANNOTATION.requestCheckpoint]: 'Preemption/x' }, snapshots: [good] }));
    expect(a.status.cycle).toMatchObject({ seq: 2, phase: 'Pre' });
    const failed = {
      [ANNOTATION.checkpointRequest]: '2',
      [ANNOTATION.checkpointCommit]: '{"seq":2,"step":200,"error":"No space left on device (ENOSPC): /checkpoints/step-200"}',
    };
    const b = reconcileCheckpoints(
      input({ annotations: { [ANNOTATION.requestCheckpoint]: 'Preemption/x' }, previous: a.status, rank0: rank0(failed), snapshots: [good], nowMs: T0 + 5000 }),
    );
    expect(b.status.cycle).toMatchObject({ seq: 2, phase: 'Failed', failureReason: 'VolumeFull' });
    expect(b.condition).toMatchObject({
      type: 'Checkpointing',
      status: 'False',
      reason: 'VolumeFull',
      message: expect.stringContaining('claim ckpt mounted at /checkpoints is full: No space left on device (ENOSPC)'),
    });
    expect(b.status.lastReady).toMatchObject({ snapshotName: 'bert-ckpt-1', step: 100 });
    expect(b.actions).toContainEqual({ kind: 'annotatePod', name: 'bert-0', annotations: { [ANNOTATION.checkpointRequest]: null } });
    expect(b.actions).toContainEqual(expect.objectContaining({ kind: 'event', type: 'Warning', reason: 'CheckpointFailed' }));
    expect(b.actions.some((x) => x.kind === 'createVolumeSnapshot' || x.kind === 'deleteVolumeSnapshot')).toBe(false);
  });

  it('when the cycle answering a preemption fails, every replica says so (the scheduler evicts without waiting out the grace); other failures do not', () => {
    const pod = (name: string, ann: Record<string, string> = {}): PodObject => ({ ...rank0(ann), metadata: { ...rank0(ann).metadata, name } });
    const fail = (request: string): ReturnType<typeof reconcileCheckpoints> => {
      const a = reconcileCheckpoints(input({ annotations: { [ANNOTATION.requestCheckpoint]: request } }));
      const commit = { [ANNOTATION.checkpointRequest]: '1', [ANNOTATION.checkpointCommit]: '{"seq":1,"step":10,"error":"No space left on device (ENOSPC)"}' };
      return reconcileCheckpoints(
        input({
          annotations: { [ANNOTATION.requestCheckpoint]: request },
          previous: a.status,
          rank0: rank0(commit),
          replicas: [pod('bert-0', commit), pod('bert-1')],
          nowMs: T0 + 3000,
        }),
      );
    };
    const marks = (r: ReturnType<typeof reconcileCheckpoints>): unknown[] =>
      r.actions.filter((x) => x.kind === 'annotatePod' && ANNOTATION.checkpointFailed in x.annotations);
    const req = 'Preemption/2026-12-03T10:00:00.000Z';
    expect(marks(fail(req))).toEqual(['bert-0', 'bert-1'].map((name) => ({ kind: 'annotatePod', name, annotations: { [ANNOTATION.checkpointFailed]: req } })));
    // The next attempt's replicas (created after the cycle started) were not asked: they are not marked.
    const failed = fail(req);
    const later = { ...pod('bert-0'), metadata: { ...pod('bert-0').metadata, creationTimestamp: new Date(T0 + 60_000).toISOString() } };
    expect(
      marks(
        reconcileCheckpoints(input({ annotations: { [ANNOTATION.requestCheckpoint]: req }, previous: failed.status, replicas: [later], nowMs: T0 + 70_000 })),
      ),
    ).toEqual([]);
    expect(marks(fail('Migration/2026-12-03T10:00:00.000Z/n1/2'))).toEqual([]);
  });

  it('reads the commit strictly and says what is wrong with it', () => {
    expect(readCommit(rank0({ [ANNOTATION.checkpointCommit]: 'step 5' })).problem).toContain('is not JSON');
    expect(readCommit(rank0({ [ANNOTATION.checkpointCommit]: '{"seq":1,"step":-1,"ranks":1}' })).problem).toContain(
      'must be {"seq": int, "step": int, "ranks": int}',
    );
    expect(readCommit(rank0({ [ANNOTATION.checkpointCommit]: '{"seq":1,"step":5,"ranks":2}' })).commit).toEqual({ seq: 1, step: 5, ranksWritten: 2 });
    expect(readCommit(rank0({ [ANNOTATION.checkpointCommit]: '{"seq":2,"step":6,"error":"No space left on device (ENOSPC)"}' })).commit).toEqual({
      seq: 2,
      step: 6,
      ranksWritten: 0,
      error: 'No space left on device (ENOSPC)',
    });
    expect(readCommit(rank0({ [ANNOTATION.checkpointCommit]: '{"seq":2,"step":6,"error":""}' })).problem).toContain(
      'reporting a failed save must be {"seq": int, "step": int, "error": "…"}',
    );
    expect(readCommit(rank0({ [ANNOTATION.checkpointCommit]: '{"seq":2,"error":"ENOSPC"}' })).problem).toContain('reporting a failed save');
    expect(requestTrigger('Migration/abc')).toBe('Migration');
    expect(requestTrigger('because')).toBe('Manual');
  });

  it('deletion removes the claim and, with policy Delete, the snapshots; Retain keeps them', () => {
    const s = [snap('bert-ckpt-1', { seq: 1 })];
    const claims = [{ metadata: { name: 'bert-checkpoint', uid: 'c1' } }];
    const del = checkpointCleanup(makeJob({ checkpoint: { ...CKPT, volume: { claimTemplate: { size: '1Gi' } } } }), s, claims);
    expect(del.map((a) => a.kind)).toEqual(['deleteClaim', 'deleteVolumeSnapshot']);
    const keep = checkpointCleanup(makeJob({ checkpoint: { ...CKPT, retention: { policy: 'Retain' } } }), s, []);
    expect(keep).toEqual([]);
  });

  it('the whole reconcile: a per-pod checkpoint mount is refused naming the field; a new gang restores from the newest Ready checkpoint', () => {
    const bad = makeJob({
      container: undefined,
      podTemplate: {
        spec: {
          containers: [{ name: 'trainer', image: 'x', volumeMounts: [{ name: 'tmp', mountPath: '/checkpoints/run' }] }],
          volumes: [{ name: 'tmp', hostPath: { path: '/data' } }],
        },
      },
      checkpoint: CKPT,
    });
    const refused = reconcileTrainingJob({ job: bad, pods: [], services: [], podGroups: [], nowMs: T0 }, DEFAULT_CONTROLLER_CONFIG);
    expect(refused.status?.phase).toBe('Failed');
    expect(refused.status?.conditions?.find((c) => c.type === 'Failed')).toMatchObject({
      reason: 'CheckpointPathNotShared',
      message: expect.stringContaining('spec.podTemplate.spec.containers[0].volumeMounts[0]: mount /checkpoints/run of volume tmp, a hostPath'),
    });
    expect(refused.actions.some((a) => a.kind === 'createPod')).toBe(false);

    const good = makeJob({ replicas: 2, checkpoint: CKPT });
    const r = reconcileTrainingJob(
      {
        job: good,
        pods: [],
        services: [],
        podGroups: [],
        volumeSnapshots: [snap('bert-ckpt-2', { seq: 2, step: 200, ready: true, committed: true, readyMs: T0 })],
        nowMs: T0,
      },
      DEFAULT_CONTROLLER_CONFIG,
    );
    expect(r.status?.checkpoint?.restoredFrom).toEqual({ snapshotName: 'bert-ckpt-2', step: 200, attempt: 1 });
    const pods = r.actions.flatMap((a) => (a.kind === 'createPod' ? [a.pod] : []));
    expect(pods).toHaveLength(2);
    for (const p of pods) {
      expect(p.spec?.volumes).toContainEqual({ name: 'sits-checkpoint', persistentVolumeClaim: { claimName: 'ckpt' } });
      const env = Object.fromEntries((p.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
      expect(env).toMatchObject({
        SITS_CHECKPOINT_DIR: '/checkpoints',
        SITS_RESTORE_STEP: '200',
        SITS_RESTORE_SNAPSHOT: 'bert-ckpt-2',
        SITS_POD_NAME: { fieldRef: { fieldPath: 'metadata.name' } },
      });
    }
  });

  it('without spec.checkpoint nothing changes: no checkpoint status, no checkpoint volume (only /dev/shm), no env', () => {
    const r = reconcileTrainingJob({ job: makeJob({ replicas: 1 }), pods: [], services: [], podGroups: [], nowMs: T0 }, DEFAULT_CONTROLLER_CONFIG);
    expect(r.status?.checkpoint).toBeUndefined();
    const pod = r.actions.find((a) => a.kind === 'createPod');
    expect(pod?.kind === 'createPod' ? pod.pod.spec?.volumes : 'x').toEqual([{ name: 'sits-dshm', emptyDir: { medium: 'Memory' } }]);
  });
});

const HELPER = join(resolve(dirname(fileURLToPath(import.meta.url)), '../../..'), 'examples/sits_checkpoint.py');
const run = promisify(execFile);
async function py(args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  try {
    await run('python3', [HELPER, ...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
    return { code: 0, stderr: '' };
  } catch (e) {
    const x = e as { code?: number; stderr?: string };
    return { code: x.code ?? -1, stderr: x.stderr ?? '' };
  }
}

describe('examples/sits_checkpoint.py on bad input (the real contract is exercised in training-job-checkpoint.e2e.test.ts)', () => {
  it('describes a failed save by the first OSError inside it: itself, its cause, or a rank of a DCP CheckpointException', async () => {
    const code = [
      'import errno, sits_checkpoint as s',
      'class CheckpointException(Exception):',
      '    def __init__(self, failures): super().__init__("dcp"); self.failures = failures',
      "full = OSError(errno.ENOSPC, 'No space left on device', '/ckpt/step-7/__1_0.distcp')",
      'print(s.describe(full))',
      'print(s.describe(CheckpointException({1: (full, None)})))',
      'try:',
      '    try: raise OSError(errno.EDQUOT, "Disk quota exceeded")',
      '    except OSError as e: raise RuntimeError("save failed") from e',
      'except RuntimeError as e: print(s.describe(e))',
      'print(s.describe(ValueError("bad shard")))',
    ].join('\n');
    const r = await run('python3', ['-c', code], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONPATH: dirname(HELPER), PYTHONDONTWRITEBYTECODE: '1' },
    });
    expect(r.stdout.split('\n')).toEqual([
      'No space left on device (ENOSPC): /ckpt/step-7/__1_0.distcp',
      'No space left on device (ENOSPC): /ckpt/step-7/__1_0.distcp',
      'Disk quota exceeded (EDQUOT)',
      'ValueError: bad shard',
      '',
    ]);
  });

  it('says what is missing instead of a traceback', async () => {
    expect(await py(['committed', '5', '1'], {})).toEqual({
      code: 1,
      stderr: 'sits_checkpoint: no API server: KUBERNETES_SERVICE_HOST is not set (not in a pod?) and SITS_KUBE_API is unset\n',
    });
    expect(await py(['committed', '5', '1'], { SITS_KUBE_API: 'https://127.0.0.1:1' })).toEqual({
      code: 1,
      stderr: 'sits_checkpoint: SITS_POD_NAME and SITS_POD_NAMESPACE must be set (the TrainingJob controller sets them from the downward API)\n',
    });
    const noToken = await py(['requested'], {
      SITS_KUBE_API: 'https://127.0.0.1:1',
      SITS_POD_NAME: 'p',
      SITS_POD_NAMESPACE: 'n',
      SITS_KUBE_TOKEN_FILE: '/nonexistent/token',
    });
    expect(noToken).toEqual({ code: 1, stderr: 'sits_checkpoint: service account token /nonexistent/token: No such file or directory\n' });
    expect((await py(['committed', 'five', '1'], {})).code).toBe(2);
    expect(await py(['failed', '5', ' '], {})).toEqual({ code: 2, stderr: 'sits_checkpoint: failed(): the error message is empty\n' });
    expect((await py(['frobnicate'], {})).stderr).toContain('usage: sits_checkpoint.py requested | committed STEP SHARDS [SEQ] | failed STEP MESSAGE [SEQ]');
  });
});
