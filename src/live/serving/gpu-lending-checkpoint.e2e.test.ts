// Issue 12 Deliver 5 live, at a checkpoint boundary: the GPU lender against a TrainingJob that is not preemptible
// but checkpoints (spec.checkpoint on the real snapshot-controller and csi-snapshotter over the stand-in CSI driver).
// A service replica waits on the full node: the lender asks the job for a checkpoint and does not shrink it before
// the checkpoint is Ready; the test plays rank 0's commit with the contract helper (examples/sits_checkpoint.py);
// then the job shrinks by one worker, its new gang restores from that checkpoint, and the replica binds.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { startControllers, type Controllers } from '../../app/controllers.ts';
import { runCheckpointHelper } from '../../harness/checkpoint-helper.ts';
import { createNs, waitFor } from '../../harness/e2e-kit.ts';
import {
  createStaticVolume,
  ensureSnapshotComponents,
  SNAPSHOT_API,
  startSnapshotStack,
  volumeSnapshotClass,
  type SnapshotStack,
} from '../../harness/snapshot-stack.ts';
import type { TrainingJobObject } from '../../controllers/training-job/model.ts';
import { LENDING_ANNOTATION } from './gpu-lending.ts';
import { bound, elasticJob, lendingService, live, servicePods, workerPods } from '../../harness/gpu-lending-testing.ts';

const API = '/apis/ai.sits2026.dev/v1';
const NS = 'lend-ckpt';

let cluster: DevCluster;
let client: DevCluster['client'];
let stack: SnapshotStack;
let controllers: Controllers;
const logs: string[] = [];

beforeAll(async () => {
  await ensureSnapshotComponents();
  cluster = await startDevCluster({ nodes: 1, shape: 'a800x4', log: (m) => logs.push(m), controllers: false });
  client = cluster.client;
  await cluster.plane.startControllerManager({ controllers: ['persistentvolume-binder-controller'] });
  stack = await startSnapshotStack(cluster.plane, { client });
  await client.post(`${SNAPSHOT_API}/volumesnapshotclasses`, volumeSnapshotClass('stand-in', stack.driver.name, 'Delete'));
  controllers = await startControllers(client, {
    log: (m) => logs.push(`controller: ${m}`),
    config: { backoffBaseMs: 500, backoffMaxMs: 2000, resizeCooldownMs: 1500 },
    lending: { intervalMs: 500, cooldownMs: 6000 },
  });
}, 240_000);

afterAll(async () => {
  await controllers?.stop();
  await stack?.stop();
  await cluster?.stop();
});

const getJob = (): Promise<TrainingJobObject> => client.get<TrainingJobObject>(`${API}/namespaces/${NS}/trainingjobs/train`);
const workers = (): Promise<V1Pod[]> => workerPods(client, NS);
const replicas = (): Promise<V1Pod[]> => servicePods(client, NS);
const envOf = (p: V1Pod): Record<string, string> => Object.fromEntries((p.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']));

/** examples/sits_checkpoint.py as rank 0's container would run it. */
const helper = (pod: V1Pod, tokenFile: string, args: string[]): ReturnType<typeof runCheckpointHelper> =>
  runCheckpointHelper(cluster.plane, pod, tokenFile, args);

describe('GPU lending at a checkpoint boundary', () => {
  it('a checkpointing job is asked for a checkpoint, is not shrunk before it is Ready, then lends a whole worker and restores from it', async () => {
    await createNs(client, NS);
    const vol = await createStaticVolume(stack, { namespace: NS, pvcName: 'ckpt' });
    await waitFor(
      'claim ckpt Bound',
      async () => (await client.get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${NS}/persistentvolumeclaims/ckpt`)).status?.phase === 'Bound',
      120_000,
    );
    const tokenFile = join(cluster.plane.dir, 'lend-token');
    writeFileSync(tokenFile, cluster.plane.token, { mode: 0o600 });

    await client.post(`${API}/namespaces/${NS}/inferenceservices`, lendingService());
    await waitFor('the first service replica bound', async () => bound(await replicas()).length === 1, 60_000);
    await client.post(
      `${API}/namespaces/${NS}/trainingjobs`,
      elasticJob({ spec: { checkpoint: { volume: { claimName: 'ckpt' }, volumeSnapshotClassName: 'stand-in', writers: 'rank0' } } }),
    );
    await waitFor(
      'the job running with 3 workers',
      async () => {
        const j = await getJob();
        return j.status?.phase === 'Running' && j.status.currentReplicas === 3 && bound(await workers()).length === 3;
      },
      60_000,
    );

    await client.mergePatch(`${API}/namespaces/${NS}/inferenceservices/svc/scale`, { spec: { replicas: 2 } });
    // The lender asks for the boundary and waits for it.
    const asked = await waitFor(
      'a checkpoint cycle started for the loan',
      async () => {
        const j = await getJob();
        const c = j.status?.checkpoint?.cycle;
        return j.metadata.annotations?.[LENDING_ANNOTATION.lendPending]?.startsWith('1@') === true &&
          c?.request?.startsWith('Lending/') === true &&
          c.phase === 'Pre'
          ? c.seq
          : undefined;
      },
      60_000,
    );
    await new Promise((r) => setTimeout(r, 2000));
    expect((await getJob()).spec.replicas).toBe(3);
    expect(bound(await replicas())).toHaveLength(1);

    // Rank 0 saves and commits through the contract.
    const rank0 = live(await workers()).find((p) => p.metadata?.labels?.['ai.sits2026.dev/rank'] === '0') as V1Pod;
    writeFileSync(join(stack.driver.volumeDir(vol.volume.id), 'step-700.pt'), 'weights of step 700');
    const r = await helper(rank0, tokenFile, ['committed', '700', '1', String(asked)]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);

    const shrunk = await waitFor(
      'the job shrunk to 2 after the checkpoint',
      async () => {
        const j = await getJob();
        return j.spec.replicas === 2 && j.metadata.annotations?.[LENDING_ANNOTATION.lentReplicas] === '1' ? j : undefined;
      },
      90_000,
    );
    expect(shrunk.status?.checkpoint?.lastReady?.step).toBe(700);
    expect(shrunk.metadata.annotations?.[LENDING_ANNOTATION.lendPending]).toBeUndefined();
    const gang = await waitFor(
      'both replicas bound, the job running with 2 workers restored from step 700',
      async () => {
        const j = await getJob();
        const ws = bound(await workers());
        return bound(await replicas()).length === 2 && j.status?.phase === 'Running' && j.status.currentReplicas === 2 && ws.length === 2 ? ws : undefined;
      },
      90_000,
    );
    expect(gang.map((p) => envOf(p).SITS_RESTORE_STEP)).toEqual(['700', '700']);
  }, 400_000);
});
