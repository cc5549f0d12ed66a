// Restore through the real path: a PVC whose dataSource is a VolumeSnapshot, provisioned by the real csi-provisioner
// (external-provisioner v6.3.0) as a CreateVolume with the snapshot as content source; the stand-in driver unpacks
// the tarball into the new volume. What a restarted or migrated job's checkpoint claim will be (docs/snapshots.md).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { KubeClient } from '../kube/client/client.ts';
import { startControlPlane } from './control-plane.ts';
import type { ControlPlane } from './control-plane.ts';
import { createNs, waitFor } from './e2e-kit.ts';
import {
  createStaticVolume,
  ensureCsiProvisioner,
  ensureSnapshotComponents,
  restoredClaim,
  SNAPSHOT_API,
  startSnapshotStack,
  storageClass,
  volumeSnapshot,
  volumeSnapshotClass,
} from './snapshot-stack.ts';
import type { SnapshotStack, VolumeSnapshotObject } from './snapshot-stack.ts';

const NS = 'restore';
const GiB = 1024 * 1024 * 1024;

let plane: ControlPlane;
let client: KubeClient;
let stack: SnapshotStack;

beforeAll(async () => {
  await Promise.all([ensureSnapshotComponents(), ensureCsiProvisioner()]);
  plane = await startControlPlane();
  client = new KubeClient(plane.kubeConfig());
  await plane.startControllerManager({ controllers: ['persistentvolume-binder-controller'] });
  stack = await startSnapshotStack(plane, { client, withProvisioner: true });
  await createNs(client, NS);
});

afterAll(async () => {
  await stack?.stop();
  await plane?.stop();
});

interface Claim {
  spec?: { volumeName?: string };
  status?: { phase?: string };
}

describe('restore from a VolumeSnapshot (real csi-provisioner)', () => {
  it('a PVC with a VolumeSnapshot dataSource gets a new volume holding the snapshot’s files', async () => {
    const vol = await createStaticVolume(stack, { namespace: NS, pvcName: 'ckpt', capacityBytes: GiB });
    await waitFor(
      'claim ckpt Bound',
      async () => (await client.get<Claim>(`/api/v1/namespaces/${NS}/persistentvolumeclaims/ckpt`)).status?.phase === 'Bound',
      120_000,
    );
    writeFileSync(join(stack.driver.volumeDir(vol.volume.id), 'step-300.pt'), 'step 300 weights');
    await client.post(`${SNAPSHOT_API}/volumesnapshotclasses`, volumeSnapshotClass('stand-in', stack.driver.name, 'Delete'));
    await client.post(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots`, volumeSnapshot(NS, 'ckpt-300', 'ckpt', 'stand-in'));
    await waitFor(
      'VolumeSnapshot ckpt-300 readyToUse',
      async () => (await client.get<VolumeSnapshotObject>(`${SNAPSHOT_API}/namespaces/${NS}/volumesnapshots/ckpt-300`)).status?.readyToUse === true,
    );
    // The job writes on after the snapshot: the restore must hold the snapshot's content, not the live folder's.
    writeFileSync(join(stack.driver.volumeDir(vol.volume.id), 'step-300.pt'), 'overwritten later');

    await client.post('/apis/storage.k8s.io/v1/storageclasses', storageClass('stand-in', stack.driver.name));
    const t0 = performance.now();
    await client.post(`/api/v1/namespaces/${NS}/persistentvolumeclaims`, restoredClaim(NS, 'ckpt-restored', 'ckpt-300', 'stand-in', GiB));
    const claim = await waitFor(
      'restored claim Bound',
      async () => {
        const c = await client.get<Claim>(`/api/v1/namespaces/${NS}/persistentvolumeclaims/ckpt-restored`);
        return c.status?.phase === 'Bound' ? c : undefined;
      },
      120_000,
    );
    process.stderr.write(`restored PVC create → Bound: ${(performance.now() - t0).toFixed(0)} ms\n`);
    const pv = await client.get<{ spec?: { csi?: { volumeHandle?: string } } }>(`/api/v1/persistentvolumes/${claim.spec?.volumeName}`);
    const handle = pv.spec?.csi?.volumeHandle ?? '';
    expect(stack.driver.volumes().find((v) => v.id === handle)?.sourceSnapshotId).toBeDefined();
    expect(readFileSync(join(stack.driver.volumeDir(handle), 'step-300.pt'), 'utf8')).toBe('step 300 weights');
  });
});
