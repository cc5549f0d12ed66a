// The CSI snapshot stack on the real control plane: real snapshot-controller and csi-snapshotter (external-snapshotter
// v8.6.0), kube-controller-manager's PV controller binding a static PV of the stand-in CSI driver, VolumeSnapshots
// that end as tarballs on disk. Also measures VolumeSnapshot create → readyToUse (docs/snapshots.md).
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { KubeClient, isStatus } from '../kube/client/client.ts';
import { startControlPlane } from './control-plane.ts';
import type { ControlPlane } from './control-plane.ts';
import { createNs, waitFor } from './e2e-kit.ts';
import { createStaticVolume, ensureSnapshotComponents, SNAPSHOT_API, startSnapshotStack, volumeSnapshot, volumeSnapshotClass } from './snapshot-stack.ts';
import type { SnapshotStack, StaticVolume, VolumeSnapshotObject } from './snapshot-stack.ts';

const NS = 'snap';
const GiB = 1024 * 1024 * 1024;
// Room for one 1 GiB volume and 256 KiB of tarballs: a snapshot of more incompressible data than that does not fit.
const CAPACITY = GiB + 256 * 1024;

let plane: ControlPlane;
let client: KubeClient;
let stack: SnapshotStack;
let vol: StaticVolume;

beforeAll(async () => {
  await ensureSnapshotComponents();
  plane = await startControlPlane();
  client = new KubeClient(plane.kubeConfig());
  await plane.startControllerManager({ controllers: ['persistentvolume-binder-controller'] });
  stack = await startSnapshotStack(plane, { client, capacityBytes: CAPACITY });
  await createNs(client, NS);
  vol = await createStaticVolume(stack, { namespace: NS, pvcName: 'ckpt', capacityBytes: GiB });
  await waitFor(
    'claim ckpt Bound by the PV controller',
    async () => (await client.get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${NS}/persistentvolumeclaims/ckpt`)).status?.phase === 'Bound',
    120_000,
  );
  await client.post(`${SNAPSHOT_API}/volumesnapshotclasses`, volumeSnapshotClass('stand-in', stack.driver.name, 'Delete'));
});

afterAll(async () => {
  await stack?.stop();
  await plane?.stop();
});

const vsPath = (name: string): string => `${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots/${name}`;
const getVs = (name: string): Promise<VolumeSnapshotObject> => client.get<VolumeSnapshotObject>(vsPath(name));

async function gone(path: string): Promise<boolean> {
  try {
    await client.get(path);
    return false;
  } catch (e) {
    if (isStatus(e, 404)) return true;
    throw e;
  }
}

describe('the CSI snapshot stack (real snapshot-controller + csi-snapshotter, stand-in driver)', () => {
  it('binds the static PV, and a VolumeSnapshot of its claim becomes readyToUse as a tarball on disk; deleting it removes the tarball', async () => {
    writeFileSync(join(stack.driver.volumeDir(vol.volume.id), 'step-100.pt'), 'rank 0 weights');
    await client.post(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots`, volumeSnapshot(NS, 'first', 'ckpt', 'stand-in'));
    const ready = await waitFor('VolumeSnapshot first readyToUse', async () => {
      const vs = await getVs('first');
      return vs.status?.readyToUse === true ? vs : undefined;
    });
    expect(ready.status?.restoreSize).toBe('1Gi');
    expect(ready.status?.creationTime).toBeDefined();
    const content = await client.get<{ status?: { snapshotHandle?: string; readyToUse?: boolean } }>(
      `${SNAPSHOT_API}/volumesnapshotcontents/${ready.status?.boundVolumeSnapshotContentName}`,
    );
    const handle = content.status?.snapshotHandle ?? '';
    // csi-snapshotter names the CSI snapshot after the VolumeSnapshot's UID.
    expect(stack.driver.snapshots().find((s) => s.id === handle)?.name).toBe(`snapshot-${ready.metadata.uid}`);
    const file = stack.driver.snapshotFile(handle);
    expect(execFileSync('tar', ['tzf', file], { encoding: 'utf8' }).split('\n')).toContain('./step-100.pt');

    await client.delete(vsPath('first'));
    await waitFor(
      'tarball removed after the VolumeSnapshot is deleted (deletionPolicy Delete)',
      async () => !existsSync(file) && (await gone(vsPath('first'))),
    );
    await waitFor('VolumeSnapshotContent deleted', () => gone(`${SNAPSHOT_API}/volumesnapshotcontents/${ready.status?.boundVolumeSnapshotContentName}`));
  });

  it('deletionPolicy Retain: deleting the VolumeSnapshot keeps its content and the tarball', async () => {
    await client.post(`${SNAPSHOT_API}/volumesnapshotclasses`, volumeSnapshotClass('stand-in-retain', stack.driver.name, 'Retain'));
    await client.post(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots`, volumeSnapshot(NS, 'kept', 'ckpt', 'stand-in-retain'));
    const ready = await waitFor('VolumeSnapshot kept readyToUse', async () => {
      const vs = await getVs('kept');
      return vs.status?.readyToUse === true ? vs : undefined;
    });
    const contentPath = `${SNAPSHOT_API}/volumesnapshotcontents/${ready.status?.boundVolumeSnapshotContentName}`;
    const handle = (await client.get<{ status?: { snapshotHandle?: string } }>(contentPath)).status?.snapshotHandle ?? '';
    await client.delete(vsPath('kept'));
    await waitFor('VolumeSnapshot kept gone', () => gone(vsPath('kept')));
    expect(await gone(contentPath)).toBe(false);
    expect(existsSync(stack.driver.snapshotFile(handle))).toBe(true);
    // Clean up as an operator would: switch the content to Delete, then delete it.
    await client.mergePatch(contentPath, { spec: { deletionPolicy: 'Delete' } });
    await client.delete(contentPath);
    await waitFor(
      'retained tarball removed once its content is deleted with policy Delete',
      async () => !existsSync(stack.driver.snapshotFile(handle)) && (await gone(contentPath)),
    );
  });

  it('measures VolumeSnapshot create → readyToUse', async () => {
    const times: number[] = [];
    const toDriver: number[] = [];
    for (let i = 0; i < 5; i++) {
      const name = `timed-${i}`;
      const t0 = performance.now();
      const wall0 = Date.now();
      const vs = await client.post<VolumeSnapshotObject>(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots`, volumeSnapshot(NS, name, 'ckpt', 'stand-in'));
      await waitFor(`VolumeSnapshot ${name} readyToUse`, async () => (await getVs(name)).status?.readyToUse === true, 60_000, 20);
      times.push(performance.now() - t0);
      // When the driver got CreateSnapshot: the rest is the controllers' status round trips.
      const snap = stack.driver.snapshots().find((x) => x.name === `snapshot-${vs.metadata.uid}`);
      toDriver.push((snap?.createdAtMs ?? NaN) - wall0);
    }
    process.stderr.write(`  of which create → CreateSnapshot at the driver: ${toDriver.map((t) => t.toFixed(0)).join(', ')} ms\n`);
    const sorted = [...times].sort((a, b) => a - b);
    const p50 = sorted[Math.floor(sorted.length / 2)] ?? 0;
    process.stderr.write(
      `VolumeSnapshot create → readyToUse: p50 ${p50.toFixed(0)} ms, min ${sorted[0]?.toFixed(0)} ms, max ${sorted.at(-1)?.toFixed(0)} ms (n=${times.length}; ${times.map((t) => t.toFixed(0)).join(', ')})\n`,
    );
    expect(stack.driver.snapshots().filter((s) => s.sourceVolumeId === vol.volume.id)).toHaveLength(5);
    for (let i = 0; i < 5; i++) await client.delete(vsPath(`timed-${i}`));
    await waitFor('timed snapshots deleted', async () => {
      const left = stack.driver.snapshots();
      if (left.length > 0)
        throw new Error(
          `still at the driver: ${left.map((x) => x.name).join(', ')}; VolumeSnapshots: ${JSON.stringify((await client.get<{ items: VolumeSnapshotObject[] }>(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots`)).items.map((v) => ({ name: v.metadata.name, finalizers: v.metadata.finalizers, status: v.status })))}`,
        );
      return true;
    });
  });

  it('a VolumeSnapshotClass that does not exist: the snapshot error names it', async () => {
    const calls = stack.driver.calls('CreateSnapshot');
    await client.post(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots`, volumeSnapshot(NS, 'no-class', 'ckpt', 'no-such-class'));
    const vs = await waitFor('VolumeSnapshot no-class has an error', async () => {
      const v = await getVs('no-class');
      return v.status?.error?.message !== undefined ? v : undefined;
    });
    process.stderr.write(`missing class → VolumeSnapshot status.error: ${vs.status?.error?.message}\n`);
    expect(vs.status?.error?.message).toContain('"no-such-class" not found');
    expect(vs.status?.readyToUse).not.toBe(true);
    expect(stack.driver.calls('CreateSnapshot')).toBe(calls); // refused before it reaches the driver
    await client.delete(vsPath('no-class'));
  });

  it('storage that is full: the snapshot error names RESOURCE_EXHAUSTED and what is free; nothing is left on disk', async () => {
    const big = join(stack.driver.volumeDir(vol.volume.id), 'shard-big.bin');
    writeFileSync(big, randomBytes(512 * 1024));
    const before = stack.driver.snapshots().length;
    await client.post(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots`, volumeSnapshot(NS, 'too-big', 'ckpt', 'stand-in'));
    const vs = await waitFor('VolumeSnapshot too-big has an error', async () => {
      const v = await getVs('too-big');
      return v.status?.error?.message !== undefined ? v : undefined;
    });
    process.stderr.write(`full storage → VolumeSnapshot status.error: ${vs.status?.error?.message}\n`);
    expect(vs.status?.error?.message).toMatch(
      /ResourceExhausted desc = storage full: snapshot snapshot-[0-9a-f-]+ of volume vol-\w+ needs \d+ bytes; \d+ of \d+ bytes are used, \d+ free/,
    );
    expect(vs.status?.readyToUse).not.toBe(true);
    expect(stack.driver.snapshots()).toHaveLength(before);
    await client.delete(vsPath('too-big'));
  });

  it('stop() ends both components and the driver; the plane no longer lists them', async () => {
    const pids = [stack.snapshotController.pid, stack.csiSnapshotter.pid];
    expect(plane.childPids()).toEqual(expect.arrayContaining(pids));
    await stack.stop();
    expect([stack.snapshotController.alive(), stack.csiSnapshotter.alive()]).toEqual([false, false]);
    expect(plane.childPids().filter((p) => pids.includes(p))).toEqual([]);
    expect(existsSync(stack.socket)).toBe(false);
    await stack.stop(); // idempotent
  });
});
