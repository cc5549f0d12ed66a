// Issue 14 §5 end to end on the real control plane and snapshot stack: a running checkpointable TrainingJob gang;
// dcgm-exporter text (the recorded T4 capture, served over real HTTP) shows XID 63 on the GPU rank 0 holds; the
// health watcher quarantines it on the Node (suspect: checkpoint first); the health migrator (in the controllers'
// process, learning the quarantine from the Node as it would from a node agent elsewhere) asks for a checkpoint
// through the TrainingJob's request-checkpoint annotation; the test plays rank 0 with examples/sits_checkpoint.py;
// the VolumeSnapshot becomes readyToUse; only then is the gang evicted, whole; the TrainingJob controller restarts
// it at once (not counted as a failure) with SITS_RESTORE_SNAPSHOT of that checkpoint, and the SITS scheduler
// keeps it off the quarantined GPU. And from the Node alone (ADR 0150): an entry whose state is `failed` evicts its job
// at once, without a checkpoint request, to restart from its newest Ready checkpoint; `suspect` (or no state, an entry
// written before ADR 0150) still asks for a checkpoint first.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ANNOTATION, LABEL } from '../api/wire.ts';
import type { TrainingJobObject } from '../controllers/training-job/model.ts';
import { T4_LABELS, withValue } from '../core/health/testing.ts';
import { runCheckpointHelper, trainerTokenFile } from '../harness/checkpoint-helper.ts';
import { createNs, listPods, waitFor } from '../harness/e2e-kit.ts';
import { createStaticVolume, SNAPSHOT_API, type SnapshotStack, type VolumeSnapshotObject } from '../harness/snapshot-stack.ts';
import { GpuHealthWatcher } from '../kube/scheduler/gpu-health.ts';
import { MIGRATION_DISRUPTION_REASON, parseMigrationRequest } from '../kube/scheduler/health-migration.ts';
import { Reflector } from '../kube/client/reflector.ts';
import { containerEnv, recordPodChanges, startCheckpointCluster, trainingJobReplicas, type CheckpointCluster } from '../kits/checkpoint-e2e-kit.ts';
import { startControllers, type Controllers } from './controllers.ts';

const T4 = readFileSync(new URL('../core/health/fixtures/dcgm-t4-datadog.txt', import.meta.url), 'utf8');
const TJ = '/apis/ai.sits2026.dev/v1';
const NS = 'health-move';

let env: CheckpointCluster;
let cluster: CheckpointCluster['cluster'];
let client: CheckpointCluster['client'];
let stack: SnapshotStack;
let controllers: Controllers;
let server: Server;
let served = '';
let url = '';
const logs: string[] = [];

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
    res.end(served);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  env = await startCheckpointCluster({ nodes: 2, shape: 'a800x4', log: (m) => logs.push(m), controllers: false });
  ({ cluster, client, stack } = env);
  controllers = await startControllers(client, {
    log: (m) => logs.push(`controller: ${m}`),
    config: { backoffBaseMs: 500, backoffMaxMs: 2000 },
    healthMigration: { graceMs: 240_000, intervalMs: 500 },
  });
}, 240_000);

afterAll(async () => {
  await controllers?.stop();
  await env?.stop();
  await new Promise((r) => server?.close(r));
});

const getJob = (name: string, ns = NS): Promise<TrainingJobObject> => client.get<TrainingJobObject>(`${TJ}/namespaces/${ns}/trainingjobs/${name}`);
const envOf = containerEnv;
const replicas = (job: string, attempt: number, ns = NS): Promise<V1Pod[]> => trainingJobReplicas(client, ns, job, attempt);
const gpusOf = (p: V1Pod): number[] =>
  (p.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '')
    .split(',')
    .filter((s) => s !== '')
    .map(Number);

/** The shared claims, and a service account `trainer` that may get and patch pods (the contract's Role), with its token. */
async function setUp(ns = NS, claims: readonly string[] = ['ckpt']): Promise<{ volumeDir: string; volumeDirs: Map<string, string>; tokenFile: string }> {
  await createNs(client, ns);
  const volumeDirs = new Map<string, string>();
  for (const pvcName of claims) volumeDirs.set(pvcName, stack.driver.volumeDir((await createStaticVolume(stack, { namespace: ns, pvcName })).volume.id));
  const tokenFile = await trainerTokenFile(client, cluster.plane, ns);
  for (const pvcName of claims)
    await waitFor(
      `claim ${ns}/${pvcName} Bound`,
      async () => (await client.get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/${pvcName}`)).status?.phase === 'Bound',
      120_000,
    );
  return { volumeDir: volumeDirs.get(claims[0] as string) as string, volumeDirs, tokenFile };
}

/** examples/sits_checkpoint.py as rank 0's container would run it. */
const helper = (pod: V1Pod, tokenFile: string, args: string[]): ReturnType<typeof runCheckpointHelper> =>
  runCheckpointHelper(cluster.plane, pod, tokenFile, args);

describe('moving TrainingJobs off quarantined GPUs (the health migrator, ADR 0129)', () => {
  it('XID 63 on rank 0’s GPU → quarantine → checkpoint asked → rank 0 commits → readyToUse → gang evicted whole → restarted from that checkpoint off the GPU', async () => {
    const { volumeDir, tokenFile } = await setUp();
    await client.post(`${TJ}/namespaces/${NS}/trainingjobs`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'TrainingJob',
      metadata: { name: 'llm' },
      spec: {
        replicas: 2,
        gpusPerReplica: 2,
        container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
        checkpoint: { volume: { claimName: 'ckpt' }, volumeSnapshotClassName: 'stand-in', writers: 'rank0' },
      },
    });
    const first = await waitFor(
      'attempt 1 Running with both replicas bound',
      async () => {
        const j = await getJob('llm');
        if (j.status?.phase !== 'Running' || j.status.attempt !== 1) return undefined;
        const ps = await replicas('llm', 1);
        return ps.length === 2 && ps.every((p) => p.status?.phase === 'Running' && gpusOf(p).length === 2) ? ps : undefined;
      },
      120_000,
    );
    const rank0 = first.find((p) => p.metadata?.labels?.[LABEL.rank] === '0') as V1Pod;
    const node = rank0.spec?.nodeName ?? '';
    const gpu = gpusOf(rank0)[0] as number;
    const oldUids = new Set(first.map((p) => p.metadata?.uid ?? ''));

    // Every pod change from here on, in order: the eviction must carry its reason and take the gang whole.
    const podWatch = await recordPodChanges(client, NS);
    const seen = podWatch.seen;
    try {
      // dcgm-exporter: healthy, then XID 63 (a row remap recorded: the GPU still runs, a failure is near) on that GPU.
      const labels = T4_LABELS.replace('gpu="0"', `gpu="${gpu}"`).replace('device="nvidia0"', `device="nvidia${gpu}"`);
      const watcher = new GpuHealthWatcher({
        client,
        targets: [{ node, url }],
        intervalMs: 1000,
        clock: { nowMs: () => Date.now() },
        log: (l) => logs.push(l),
      });
      served = withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', gpu, 0, labels);
      expect((await watcher.once()).written).toEqual([]);
      served = withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', gpu, 63, labels);
      const r = await watcher.once();
      expect(r.actions.find((a) => a.kind === 'quarantine')).toMatchObject({ state: 'suspect', entry: { node, gpu } });
      expect(r.written).toEqual([node]);
      const q = JSON.parse((await client.get<V1Node>(`/api/v1/nodes/${node}`)).metadata?.annotations?.[ANNOTATION.gpuQuarantine] ?? '{}') as Record<
        string,
        { reason: string; state: string }
      >;
      expect(q[String(gpu)]).toMatchObject({ reason: 'XID 63 (ECC page retirement or row remapping recorded (reset needed))', state: 'suspect' });

      // The migrator asks for a checkpoint through the one request annotation; the controller starts a Migration cycle.
      const cycle = await waitFor(
        'a Migration checkpoint cycle for the request',
        async () => {
          const j = await getJob('llm');
          const req = parseMigrationRequest(j.metadata.annotations?.[ANNOTATION.requestCheckpoint]);
          const c = j.status?.checkpoint?.cycle;
          return req !== undefined && c?.request === req.value && c.trigger === 'Migration' ? { req, seq: c.seq } : undefined;
        },
        60_000,
      );
      expect(cycle.req).toMatchObject({ node, gpu });
      const seq = await waitFor(
        'rank 0 sees the request through the contract',
        async () => {
          const h = await helper(rank0, tokenFile, ['requested']);
          if (h.code !== 0) throw new Error(`sits_checkpoint.py requested: ${h.stderr}`);
          return h.stdout.trim() === String(cycle.seq) ? cycle.seq : undefined;
        },
        60_000,
        200,
      );
      // Nothing is evicted before the checkpoint is committed and snapshotted.
      expect((await replicas('llm', 1)).map((p) => p.metadata?.uid).sort()).toEqual([...oldUids].sort());

      writeFileSync(join(volumeDir, 'step-700.pt'), 'weights of step 700');
      const c = await helper(rank0, tokenFile, ['committed', '700', '1', String(seq)]);
      expect(c.stderr).toBe('');
      expect(c.code).toBe(0);
      const snapshotName = `llm-ckpt-${seq}`;

      const second = await waitFor(
        'attempt 2 Running on two healthy GPUs each',
        async () => {
          const j = await getJob('llm');
          if (j.status?.phase !== 'Running' || j.status.attempt !== 2) return undefined;
          const ps = await replicas('llm', 2);
          return ps.length === 2 && ps.every((p) => p.status?.phase === 'Running' && gpusOf(p).length === 2) ? { j, ps } : undefined;
        },
        180_000,
      );

      // The snapshot was readyToUse before the first replica was evicted.
      const snap = await client.get<VolumeSnapshotObject>(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots/${snapshotName}`);
      expect(snap.status?.readyToUse).toBe(true);
      const readyMs = Date.parse(second.j.status?.checkpoint?.lastReady?.readyTime ?? '');
      expect(second.j.status?.checkpoint?.lastReady).toMatchObject({ snapshotName, step: 700 });
      expect(second.j.status?.checkpoint?.handledRequest).toBe(cycle.req.value);

      // Evicted whole, each with the reason, and the new gang created only once both old replicas were gone.
      const deletes = seen.filter((e) => e.kind === 'delete' && oldUids.has(e.pod.metadata?.uid ?? ''));
      expect(deletes).toHaveLength(2);
      for (const uid of oldUids) {
        const cond = seen
          .filter((e) => e.pod.metadata?.uid === uid)
          .flatMap((e) => e.pod.status?.conditions ?? [])
          .find((x) => x.type === 'DisruptionTarget');
        expect(cond?.reason).toBe(MIGRATION_DISRUPTION_REASON);
        expect(cond?.message).toBe(
          `GPU ${gpu} of node ${node} is quarantined (XID 63 (ECC page retirement or row remapping recorded (reset needed))): checkpoint ${snapshotName} (step 700) is ready; the gang restarts elsewhere from it`,
        );
      }
      const firstEvictMs = Math.min(
        ...seen.filter((e) => oldUids.has(e.pod.metadata?.uid ?? '') && e.pod.metadata?.deletionTimestamp !== undefined).map((e) => e.atMs),
        ...deletes.map((e) => e.atMs),
      );
      expect(firstEvictMs).toBeGreaterThanOrEqual(readyMs);
      const lastDelete = seen.lastIndexOf(deletes.at(-1) as (typeof seen)[number]);
      const firstNew = seen.findIndex(
        (e) => e.kind === 'add' && e.pod.metadata?.labels?.[LABEL.attempt] === '2' && e.pod.metadata.labels[LABEL.role] === 'replica',
      );
      expect(firstNew).toBeGreaterThan(lastDelete);

      // Restarted from that checkpoint, off the quarantined GPU.
      expect(second.j.status?.checkpoint?.restoredFrom).toEqual({ snapshotName, step: 700, attempt: 2 });
      for (const p of second.ps) {
        expect(envOf(p)).toMatchObject({ SITS_RESTORE_STEP: '700', SITS_RESTORE_SNAPSHOT: snapshotName });
        if (p.spec?.nodeName === node) expect(gpusOf(p)).not.toContain(gpu);
      }

      // Events on the TrainingJob say why.
      const events = await waitFor(
        'the migration events',
        async () => {
          const evs = (
            await client.get<{ items: { reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } }[] }>(
              `/api/v1/namespaces/${NS}/events`,
            )
          ).items.filter((e) => e.involvedObject?.kind === 'TrainingJob' && e.involvedObject.name === 'llm');
          return evs.some((e) => e.reason === 'MigratedOffGpu') ? evs : undefined;
        },
        30_000,
      );
      expect(events.find((e) => e.reason === 'CheckpointForMigration')?.message).toContain(`GPU ${gpu} of node ${node} is quarantined (XID 63`);
      expect(events.find((e) => e.reason === 'MigratedOffGpu')?.message).toBe(
        `evicting the gang (attempt 1, 2 replicas): GPU ${gpu} of node ${node} is quarantined (XID 63 (ECC page retirement or row remapping recorded (reset needed))): checkpoint ${snapshotName} (step 700) is ready; the gang restarts elsewhere from it`,
      );
      // The controller restarted the moved gang at once and did not count it against backoffLimit.
      expect(second.j.status?.restartCount ?? 0).toBe(0);
      const moved = await waitFor(
        'the controller’s GangMoved event',
        async () => {
          const evs = (
            await client.get<{ items: { reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } }[] }>(
              `/api/v1/namespaces/${NS}/events`,
            )
          ).items;
          return evs.find((e) => e.involvedObject?.kind === 'TrainingJob' && e.involvedObject.name === 'llm' && e.reason === 'GangMoved');
        },
        30_000,
      );
      expect(moved.message).toContain(`SITS evicted the gang to move it (${MIGRATION_DISRUPTION_REASON}: GPU ${gpu} of node ${node} is quarantined`);
      expect(controllers.healthMigration?.stats).toMatchObject({ requested: 1, evictedGangs: 1, evictedPods: 2 });
      // The moved gang is left alone: no second request, no second eviction.
      await new Promise((res) => setTimeout(res, 3000));
      expect(controllers.healthMigration?.stats).toMatchObject({ requested: 1, evictedGangs: 1 });
      expect((await getJob('llm')).status?.attempt).toBe(2);
    } finally {
      podWatch.stop();
    }
  });

  it('a job without a checkpoint policy on a quarantined GPU is left running, and a Warning says why', async () => {
    await client.post(`${TJ}/namespaces/${NS}/trainingjobs`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'TrainingJob',
      metadata: { name: 'plain' },
      spec: { replicas: 1, gpusPerReplica: 1, container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] } },
    });
    const [pod] = await waitFor(
      'plain Running',
      async () => {
        const ps = await replicas('plain', 1);
        return ps.length === 1 && ps[0]?.status?.phase === 'Running' && gpusOf(ps[0]).length === 1 ? ps : undefined;
      },
      120_000,
    );
    const node = pod?.spec?.nodeName ?? '';
    const gpu = gpusOf(pod as V1Pod)[0] as number;
    const path = `/api/v1/nodes/${node}`;
    const have = JSON.parse((await client.get<V1Node>(path)).metadata?.annotations?.[ANNOTATION.gpuQuarantine] ?? '{}') as Record<string, unknown>;
    const since = new Date().toISOString();
    // Written as another process would (the fault ladder, a node agent): the migrator reads the Node.
    await client.mergePatch(path, {
      metadata: {
        annotations: {
          [ANNOTATION.gpuQuarantine]: JSON.stringify({
            ...have,
            [String(gpu)]: {
              reason: 'correctable ECC errors rising: 17 in 60 min (threshold 16)',
              since,
              until: new Date(Date.now() + 900_000).toISOString(),
              source: 'gpu-health',
            },
          }),
        },
      },
    });
    const warning = await waitFor(
      'GpuQuarantinedNotMoved on plain',
      async () => {
        const evs = (
          await client.get<{ items: { type?: string; reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } }[] }>(
            `/api/v1/namespaces/${NS}/events`,
          )
        ).items;
        return evs.find((e) => e.involvedObject?.name === 'plain' && e.reason === 'GpuQuarantinedNotMoved');
      },
      60_000,
    );
    expect(warning.type).toBe('Warning');
    expect(warning.message).toBe(
      `GPU ${gpu} of node ${node} is quarantined (correctable ECC errors rising: 17 in 60 min (threshold 16)); the job has no checkpoint policy, so moving it would lose all its work; it keeps running and the quarantine keeps new work off the GPU`,
    );
    await new Promise((res) => setTimeout(res, 2000));
    expect((await replicas('plain', 1)).map((p) => p.metadata?.uid)).toEqual([pod?.metadata?.uid]);
    expect((await getJob('plain')).metadata.annotations?.[ANNOTATION.requestCheckpoint]).toBeUndefined();
  });

  it('from the Node alone: a failed entry (written by another process) evicts at once without a checkpoint request and restarts from the newest Ready checkpoint; suspect and state-less entries ask for a checkpoint first', async () => {
    const ns = 'health-failed';
    // The GPUs of the jobs above go back (the two quarantines they left stay): this test needs four free GPUs.
    for (const j of (await client.get<{ items: TrainingJobObject[] }>(`${TJ}/namespaces/${NS}/trainingjobs`)).items)
      await client.delete(`${TJ}/namespaces/${NS}/trainingjobs/${j.metadata.name ?? ''}`);
    await waitFor(
      `no replica left in ${NS}`,
      async () => (await listPods(client, NS)).every((p) => p.metadata?.labels?.[LABEL.trainingJob] === undefined),
      120_000,
    );

    const { volumeDirs, tokenFile } = await setUp(ns, ['ckpt-a', 'ckpt-b', 'ckpt-c']);
    const job = (name: string, claimName: string): Record<string, unknown> => ({
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'TrainingJob',
      metadata: { name },
      spec: {
        replicas: 1,
        gpusPerReplica: 1,
        container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
        checkpoint: { volume: { claimName }, volumeSnapshotClassName: 'stand-in', writers: 'rank0' },
      },
    });
    for (const [name, claim] of [
      ['dead', 'ckpt-a'],
      ['warm', 'ckpt-b'],
      ['old', 'ckpt-c'],
    ] as const)
      await client.post(`${TJ}/namespaces/${ns}/trainingjobs`, job(name, claim));
    const running = async (name: string): Promise<V1Pod> =>
      waitFor(
        `${name} attempt 1 Running`,
        async () => {
          const [p] = await replicas(name, 1, ns);
          return p?.status?.phase === 'Running' && gpusOf(p).length === 1 ? p : undefined;
        },
        120_000,
      );
    const dead = await running('dead');
    const warm = await running('warm');
    const old = await running('old');

    // `dead` has a Ready checkpoint from before the failure (asked for by hand, committed by rank 0 through the contract).
    await client.mergePatch(`${TJ}/namespaces/${ns}/trainingjobs/dead`, {
      metadata: { annotations: { [ANNOTATION.requestCheckpoint]: 'Manual/before-failure' } },
    });
    const seq = await waitFor(
      'dead: rank 0 sees the manual request',
      async () => {
        const h = await helper(dead, tokenFile, ['requested']);
        if (h.code !== 0) throw new Error(`sits_checkpoint.py requested: ${h.stderr}`);
        return /^\d+$/.test(h.stdout.trim()) ? Number(h.stdout.trim()) : undefined;
      },
      60_000,
      200,
    );
    writeFileSync(join(volumeDirs.get('ckpt-a') as string, 'step-300.pt'), 'weights of step 300');
    const c = await helper(dead, tokenFile, ['committed', '300', '1', String(seq)]);
    expect(c.stderr).toBe('');
    expect(c.code).toBe(0);
    const snapshotName = `dead-ckpt-${seq}`;
    await waitFor(`dead: ${snapshotName} Ready`, async () => (await getJob('dead', ns)).status?.checkpoint?.lastReady?.snapshotName === snapshotName, 120_000);

    // From here: every version of the three jobs and every pod change, in order.
    const jobsSeen: TrainingJobObject[] = [];
    const jobWatch = new Reflector<TrainingJobObject>(client, `${TJ}/namespaces/${ns}/trainingjobs`, {
      add: (j) => jobsSeen.push(j),
      update: (j) => jobsSeen.push(j),
      delete: () => undefined,
    });
    const [, podWatch] = await Promise.all([jobWatch.start(), recordPodChanges(client, ns)]);
    const seen = podWatch.seen;
    const before = { ...(controllers.healthMigration?.stats ?? { requested: 0, evictedGangs: 0 }) };
    try {
      // Written as a node agent's health monitor (another process) writes them, one patch per Node: `dead`'s GPU failed
      // outright, `warm`'s is suspect, `old`'s entry carries no state (written before ADR 0150).
      const writtenMs = Date.now();
      const since = new Date(writtenMs).toISOString();
      const until = new Date(Date.now() + 900_000).toISOString();
      const entries: [V1Pod, Record<string, string>][] = [
        [dead, { reason: 'XID 48 (double-bit ECC error)', state: 'failed' }],
        [warm, { reason: 'correctable ECC errors rising: 17 in 60 min (threshold 16)', state: 'suspect' }],
        [old, { reason: '1 page(s) pending retirement (reset needed)' }],
      ];
      const byNode = new Map<string, Record<string, unknown>>();
      for (const [p, e] of entries)
        byNode.set(p.spec?.nodeName ?? '', { ...byNode.get(p.spec?.nodeName ?? ''), [String(gpusOf(p)[0])]: { ...e, since, until, source: 'gpu-health' } });
      for (const [node, add] of byNode) {
        const path = `/api/v1/nodes/${node}`;
        const have = JSON.parse((await client.get<V1Node>(path)).metadata?.annotations?.[ANNOTATION.gpuQuarantine] ?? '{}') as Record<string, unknown>;
        await client.mergePatch(path, { metadata: { annotations: { [ANNOTATION.gpuQuarantine]: JSON.stringify({ ...have, ...add }) } } });
      }

      // Suspect and state-less: a Migration request naming the GPU, the gang still running.
      for (const p of [warm, old]) {
        const name = p.metadata?.labels?.[LABEL.trainingJob] ?? '';
        const req = await waitFor(
          `${name}: a Migration checkpoint request`,
          async () => parseMigrationRequest((await getJob(name, ns)).metadata.annotations?.[ANNOTATION.requestCheckpoint]),
          60_000,
        );
        expect(req).toMatchObject({ node: p.spec?.nodeName, gpu: gpusOf(p)[0] });
      }

      // Failed: evicted at once (well inside the 240 s grace the other two wait for), no checkpoint asked for.
      const deadUid = dead.metadata?.uid ?? '';
      const gone = await waitFor('dead: its replica deleted', async () => seen.find((e) => e.kind === 'delete' && e.pod.metadata?.uid === deadUid), 150_000);
      expect(gone.atMs - writtenMs).toBeLessThan(240_000);
      const gpu = gpusOf(dead)[0] as number;
      const node = dead.spec?.nodeName ?? '';
      const cond = seen
        .filter((e) => e.pod.metadata?.uid === deadUid)
        .flatMap((e) => e.pod.status?.conditions ?? [])
        .find((x) => x.type === 'DisruptionTarget');
      expect(cond?.reason).toBe(MIGRATION_DISRUPTION_REASON);
      expect(cond?.message).toBe(
        `GPU ${gpu} of node ${node} is quarantined (XID 48 (double-bit ECC error)): the GPU failed outright, so the job on it is likely dead and no checkpoint is asked for; the gang restarts elsewhere from its newest Ready checkpoint ${snapshotName} (step 300)`,
      );
      // The other two were not moved: they wait for their checkpoints.
      for (const p of [warm, old])
        expect(seen.some((e) => e.pod.metadata?.uid === p.metadata?.uid && (e.kind === 'delete' || e.pod.metadata?.deletionTimestamp !== undefined))).toBe(
          false,
        );

      // Restarted from the newest Ready checkpoint, off the failed GPU, with no checkpoint cycle after the failure.
      const second = await waitFor(
        'dead: attempt 2 Running',
        async () => {
          const j = await getJob('dead', ns);
          const [p] = await replicas('dead', 2, ns);
          return j.status?.phase === 'Running' && j.status.attempt === 2 && p?.status?.phase === 'Running' && gpusOf(p).length === 1 ? { j, p } : undefined;
        },
        180_000,
      );
      expect(second.j.status?.checkpoint?.restoredFrom).toEqual({ snapshotName, step: 300, attempt: 2 });
      expect(envOf(second.p)).toMatchObject({ SITS_RESTORE_STEP: '300', SITS_RESTORE_SNAPSHOT: snapshotName });
      if (second.p.spec?.nodeName === node) expect(gpusOf(second.p)).not.toContain(gpu);
      expect(second.j.status?.checkpoint?.seq).toBe(seq);
      expect(jobsSeen.filter((j) => j.metadata.name === 'dead').map((j) => j.metadata.annotations?.[ANNOTATION.requestCheckpoint])).toEqual(
        expect.arrayContaining(['Manual/before-failure']),
      );
      expect(
        jobsSeen.filter((j) => j.metadata.name === 'dead').every((j) => j.metadata.annotations?.[ANNOTATION.requestCheckpoint] === 'Manual/before-failure'),
      ).toBe(true);
      const events = (
        await client.get<{ items: { reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } }[] }>(
          `/api/v1/namespaces/${ns}/events`,
        )
      ).items.filter((e) => e.involvedObject?.kind === 'TrainingJob');
      expect(events.filter((e) => e.involvedObject?.name === 'dead' && e.reason === 'CheckpointForMigration')).toEqual([]);
      expect(
        events
          .filter((e) => e.reason === 'CheckpointForMigration')
          .map((e) => e.involvedObject?.name)
          .sort(),
      ).toEqual(['old', 'warm']);
      expect(controllers.healthMigration?.stats.requested).toBe(before.requested + 2);
      expect(controllers.healthMigration?.stats.evictedGangs).toBe(before.evictedGangs + 1);
      // Still only asked, not moved (their grace has not run out).
      for (const p of [warm, old])
        expect((await replicas(p.metadata?.labels?.[LABEL.trainingJob] ?? '', 1, ns)).map((x) => x.metadata?.uid)).toEqual([p.metadata?.uid]);
    } finally {
      jobWatch.stop();
      podWatch.stop();
    }
  });
});
