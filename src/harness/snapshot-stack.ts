/**
 * The CSI snapshot stack on a test control plane, all real but the storage: the VolumeSnapshot CRDs of
 * external-snapshotter's client module, the real snapshot-controller and csi-snapshotter (built by
 * tools/snapshots/ensure.mjs), a CSIDriver object, and the stand-in CSI driver (csi/stand-in-driver.ts) whose
 * volumes are folders and whose snapshots are tarballs. See docs/snapshots.md.
 *
 * PVC binding is kube-controller-manager's job: start it with 'persistentvolume-binder-controller' (the stack does
 * not, so a test chooses its controllers).
 */
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { isStatus, KubeClient } from '../kube/client/client.ts';
import { runEnsure } from './control-plane.ts';
import type { ComponentProcess, ControlPlane } from './control-plane.ts';
import { startStandInCsiDriver } from './csi/stand-in-driver.ts';
import type { StandInCsiDriver, StandInVolume } from './csi/stand-in-driver.ts';
import { waitFor } from './e2e-kit.ts';
import { applyCrdObjects, upstreamCrds } from './upstream-crds.ts';

const TOOLS = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'tools/snapshots');
const ENSURE_SCRIPT = join(TOOLS, 'ensure.mjs');
const ENSURE_PROVISIONER_SCRIPT = join(TOOLS, 'ensure-provisioner.mjs');

export const SNAPSHOT_API = '/apis/snapshot.storage.k8s.io/v1';

/**
 * The client-side rate limit of both components: upstream's default (5 QPS, burst 10) spaces their apiserver calls
 * 200 ms apart once a few snapshots have drained the burst, which alone made create → readyToUse about 1.8 s in a
 * row of snapshots. The test apiserver is local; pass `['--kube-api-qps=5', '--kube-api-burst=10']` as
 * controllerArgs and snapshotterArgs to measure upstream's defaults.
 */
export const RATE_ARGS = ['--kube-api-qps=100', '--kube-api-burst=200'] as const;

let ensured: Promise<string> | undefined;

/** Runs tools/snapshots/ensure.mjs once per process (SITS_SNAPSHOTS_BIN, or the cache it builds on first use). */
export function ensureSnapshotComponents(opts: { log?: (line: string) => void } = {}): Promise<string> {
  ensured ??= runEnsure(ENSURE_SCRIPT, opts.log ?? ((l) => process.stderr.write(`${l}\n`))).catch((e: unknown) => {
    ensured = undefined;
    throw e;
  });
  return ensured;
}

let ensuredProvisioner: Promise<string> | undefined;

/** Runs tools/snapshots/ensure-provisioner.mjs once per process (SITS_CSI_PROVISIONER_BIN, or its own cache). */
export function ensureCsiProvisioner(opts: { log?: (line: string) => void } = {}): Promise<string> {
  ensuredProvisioner ??= runEnsure(ENSURE_PROVISIONER_SCRIPT, opts.log ?? ((l) => process.stderr.write(`${l}\n`))).catch((e: unknown) => {
    ensuredProvisioner = undefined;
    throw e;
  });
  return ensuredProvisioner;
}

export interface SnapshotStackOptions {
  /**
   * Also run the real csi-provisioner (external-provisioner v6.3.0), so a PVC of a StorageClass of the driver is
   * provisioned, and one whose dataSource is a VolumeSnapshot is restored from its tarball.
   */
  readonly withProvisioner?: boolean;
  /** Client for the CRDs and the CSIDriver object. Default: the plane's admin. */
  readonly client?: KubeClient;
  /** The stand-in driver's folder. Default `<plane.dir>/csi` (removed with the plane). */
  readonly stateDir?: string;
  /** Storage capacity of the stand-in driver (volumes + snapshot tarballs). Default unlimited. */
  readonly capacityBytes?: number;
  /** Folder holding snapshot-controller and csi-snapshotter. Default: tools/snapshots/ensure.mjs. */
  readonly binDir?: string;
  /** Extra csi-snapshotter flags (later flags win). */
  readonly snapshotterArgs?: readonly string[];
  /** Extra snapshot-controller flags. */
  readonly controllerArgs?: readonly string[];
  readonly log?: (line: string) => void;
}

export interface SnapshotStack {
  readonly driver: StandInCsiDriver;
  /** The client the stack was set up with. */
  readonly client: KubeClient;
  /** The driver's unix socket path. */
  readonly socket: string;
  readonly binDir: string;
  readonly snapshotController: ComponentProcess;
  readonly csiSnapshotter: ComponentProcess;
  /** Present with `withProvisioner`. */
  readonly csiProvisioner: ComponentProcess | undefined;
  /** Stops the two components and the driver (the CRDs and the CSIDriver object stay). Idempotent. */
  stop(): Promise<void>;
}

/** Starts the snapshot stack against `plane`; resolves once csi-snapshotter has asked the driver for its capabilities. */
export async function startSnapshotStack(plane: ControlPlane, opts: SnapshotStackOptions = {}): Promise<SnapshotStack> {
  const client = opts.client ?? new KubeClient(plane.kubeConfig());
  const binDir = opts.binDir ?? (await ensureSnapshotComponents(opts.log ? { log: opts.log } : {}));
  await applyCrdObjects(client, upstreamCrds('snapshots'));
  const driver = await startStandInCsiDriver({
    stateDir: opts.stateDir ?? join(plane.dir, 'csi'),
    ...(opts.capacityBytes !== undefined ? { capacityBytes: opts.capacityBytes } : {}),
    ...(opts.log ? { log: (l: string) => opts.log?.(`[stand-in-csi] ${l}`) } : {}),
  });
  try {
    await client
      .post('/apis/storage.k8s.io/v1/csidrivers', {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSIDriver',
        metadata: { name: driver.name },
        // No attach step (no ControllerPublish) and no pod info: the driver serves folders.
        spec: { attachRequired: false, podInfoOnMount: false, volumeLifecycleModes: ['Persistent'] },
      })
      .catch((e: unknown) => {
        if (!isStatus(e, 409)) throw e;
      });
    const snapshotController = plane.startProcess('snapshot-controller', join(binDir, 'snapshot-controller'), [
      `--kubeconfig=${plane.kubeconfigPath}`,
      '--leader-election=false',
      '--retry-interval-start=500ms',
      ...RATE_ARGS,
      ...(opts.controllerArgs ?? []),
    ]);
    const csiSnapshotter = plane.startProcess('csi-snapshotter', join(binDir, 'csi-snapshotter'), [
      `--kubeconfig=${plane.kubeconfigPath}`,
      `--csi-address=${driver.socketPath}`,
      '--leader-election=false',
      '--retry-interval-start=500ms',
      ...RATE_ARGS,
      ...(opts.snapshotterArgs ?? []),
    ]);
    const provisionerBin = opts.withProvisioner === true ? await ensureCsiProvisioner(opts.log ? { log: opts.log } : {}) : undefined;
    const csiProvisioner =
      provisionerBin === undefined
        ? undefined
        : plane.startProcess('csi-provisioner', join(provisionerBin, 'csi-provisioner'), [
            `--kubeconfig=${plane.kubeconfigPath}`,
            `--csi-address=${driver.socketPath}`,
            '--leader-election=false',
            '--retry-interval-start=500ms',
            ...RATE_ARGS,
          ]);
    await waitFor(
      'csi-snapshotter to connect to the stand-in CSI driver',
      async () => {
        for (const p of [snapshotController, csiSnapshotter, ...(csiProvisioner ? [csiProvisioner] : [])])
          if (!p.alive()) throw new Error(`${p.logPath} ended:\n${p.tail().join('\n')}`);
        return driver.calls('ControllerGetCapabilities') > 0;
      },
      60_000,
    );
    let stopped: Promise<void> | undefined;
    return {
      driver,
      client,
      socket: driver.socketPath,
      binDir,
      snapshotController,
      csiSnapshotter,
      csiProvisioner,
      stop() {
        stopped ??= (async () => {
          await csiProvisioner?.stop();
          await csiSnapshotter.stop();
          await snapshotController.stop();
          await driver.stop();
        })();
        return stopped;
      },
    };
  } catch (e) {
    await driver.stop();
    throw e;
  }
}

export interface StaticVolumeOptions {
  readonly namespace: string;
  /** PVC name; the PV is `pv-<namespace>-<pvcName>`. */
  readonly pvcName: string;
  /** Bytes; default 1 GiB. */
  readonly capacityBytes?: number;
}

export interface StaticVolume {
  readonly volume: StandInVolume;
  readonly pvName: string;
  readonly pvcName: string;
}

/**
 * A driver volume, a PV naming it (spec.csi.volumeHandle) and a PVC for it; kube-controller-manager's PV controller
 * binds them (wait for the claim's phase Bound). What a pre-provisioned checkpoint volume looks like in a cluster.
 */
export async function createStaticVolume(stack: SnapshotStack, o: StaticVolumeOptions): Promise<StaticVolume> {
  const client = stack.client;
  const bytes = o.capacityBytes ?? 1024 * 1024 * 1024;
  const pvName = `pv-${o.namespace}-${o.pvcName}`;
  const volume = await stack.driver.createVolume(pvName, bytes);
  await client.post('/api/v1/persistentvolumes', {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: pvName },
    spec: {
      capacity: { storage: String(bytes) },
      accessModes: ['ReadWriteMany'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: '',
      volumeMode: 'Filesystem',
      claimRef: { namespace: o.namespace, name: o.pvcName },
      csi: { driver: stack.driver.name, volumeHandle: volume.id },
    },
  });
  await client.post(`/api/v1/namespaces/${o.namespace}/persistentvolumeclaims`, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: o.pvcName, namespace: o.namespace },
    spec: { accessModes: ['ReadWriteMany'], storageClassName: '', volumeName: pvName, resources: { requests: { storage: String(bytes) } } },
  });
  return { volume, pvName, pvcName: o.pvcName };
}

/** A StorageClass of the driver (csi-provisioner serves it; Immediate binding, Delete). */
export function storageClass(name: string, driver: string): Record<string, unknown> {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: driver,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
  };
}

/** A PVC restored from a VolumeSnapshot (csi-provisioner creates the volume from the snapshot's tarball). */
export function restoredClaim(namespace: string, name: string, snapshotName: string, storageClassName: string, bytes: number): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace },
    spec: {
      accessModes: ['ReadWriteMany'],
      storageClassName,
      dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: snapshotName },
      resources: { requests: { storage: String(bytes) } },
    },
  };
}

/** A VolumeSnapshotClass of the stand-in driver. */
export function volumeSnapshotClass(name: string, driver: string, deletionPolicy: 'Delete' | 'Retain' = 'Delete'): Record<string, unknown> {
  return { apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshotClass', metadata: { name }, driver, deletionPolicy };
}

/** A VolumeSnapshot of a PVC. */
export function volumeSnapshot(namespace: string, name: string, pvcName: string, className: string): Record<string, unknown> {
  return {
    apiVersion: 'snapshot.storage.k8s.io/v1',
    kind: 'VolumeSnapshot',
    metadata: { name, namespace },
    spec: { volumeSnapshotClassName: className, source: { persistentVolumeClaimName: pvcName } },
  };
}

export interface VolumeSnapshotStatus {
  boundVolumeSnapshotContentName?: string;
  creationTime?: string;
  readyToUse?: boolean;
  restoreSize?: string;
  error?: { message?: string; time?: string };
}

export interface VolumeSnapshotObject {
  metadata: { name: string; namespace: string; uid: string; finalizers?: string[] };
  status?: VolumeSnapshotStatus;
}
