/**
 * Dev mode and tests only: what the kubelet does for a pod's `persistentVolumeClaim` volumes, for the pods the fake
 * kubelet runs as processes (fake-kubelet.ts). The claim must be Bound; its PersistentVolume is then a `hostPath`
 * (the folder itself) or a CSI volume of a driver this kubelet knows, published with the CSI Node service's
 * NodePublishVolume at `<podDir>/volumes/kubernetes.io~csi/<pv>/mount`, as the kubelet's csi plugin does (the real
 * protocol over the driver's unix socket; the stand-in driver links its folder there). Each container's
 * `volumeMounts` of it (and `subPath`) are mapped to that folder. A claim that is missing, pending or lost fails the
 * mount with the kubelet's words and the pod stays in ContainerCreating (the caller retries).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { isStatus, type KubeClient } from '../kube/client/client.ts';
import { containerMounts, type PodVolumes } from './configmap-volumes.ts';
import { NodeService } from './csi/proto.ts';

export interface ClaimVolumeOptions {
  /** CSI driver name → its `unix://` address (the node plugins this kubelet has registered). */
  readonly csiDrivers: Readonly<Record<string, string>>;
}

type Root = { readonly ok: true; readonly dir: string; readonly readOnly: boolean } | { readonly ok: false; readonly reason: string };

function nodePublish(address: string, req: Record<string, unknown>): Promise<void> {
  const client = new NodeService(address, grpc.credentials.createInsecure());
  return new Promise<void>((resolve, reject) => {
    const fn = (client as unknown as Record<string, (r: unknown, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null) => void) => void>).NodePublishVolume;
    fn?.call(client, req, { deadline: Date.now() + 10_000 }, (e) => (e === null ? resolve() : reject(new Error(e.details))));
  }).finally(() => client.close());
}

async function claimRoot(client: KubeClient, ns: string, claimName: string, readOnly: boolean, podDir: string, o: ClaimVolumeOptions): Promise<Root> {
  let pvc: V1PersistentVolumeClaim;
  try {
    pvc = await client.get<V1PersistentVolumeClaim>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/${claimName}`);
  } catch (e) {
    if (isStatus(e, 404)) return { ok: false, reason: `persistentvolumeclaim "${claimName}" not found` };
    return { ok: false, reason: `reading persistentvolumeclaim "${claimName}": ${(e as Error).message}` };
  }
  const pvName = pvc.spec?.volumeName ?? '';
  if (pvc.status?.phase !== 'Bound' || pvName === '')
    return { ok: false, reason: `persistentvolumeclaim "${claimName}" is not bound (${pvc.status?.phase ?? 'Pending'})` };
  let pv: V1PersistentVolume;
  try {
    pv = await client.get<V1PersistentVolume>(`/api/v1/persistentvolumes/${pvName}`);
  } catch (e) {
    return { ok: false, reason: `reading persistentvolume "${pvName}": ${(e as Error).message}` };
  }
  if (pv.spec?.hostPath !== undefined) return { ok: true, dir: pv.spec.hostPath.path, readOnly };
  const csi = pv.spec?.csi;
  if (csi === undefined) return { ok: false, reason: `persistentvolume "${pvName}": only hostPath and CSI volumes can be mounted here` };
  const address = o.csiDrivers[csi.driver];
  if (address === undefined) return { ok: false, reason: `kubernetes.io/csi: driver name ${csi.driver} not found in the list of registered CSI drivers` };
  const target = join(podDir, 'volumes', 'kubernetes.io~csi', pvName, 'mount');
  mkdirSync(join(podDir, 'volumes', 'kubernetes.io~csi', pvName), { recursive: true });
  const ro = readOnly || csi.readOnly === true;
  const writer = (pv.spec?.accessModes ?? []).includes('ReadWriteMany') ? 'MULTI_NODE_MULTI_WRITER' : 'SINGLE_NODE_WRITER';
  try {
    await nodePublish(address, {
      volume_id: csi.volumeHandle,
      target_path: target,
      readonly: ro,
      volume_capability: { mount: { fs_type: csi.fsType ?? '', mount_flags: [] }, access_mode: { mode: ro ? 'MULTI_NODE_READER_ONLY' : writer } },
      volume_context: csi.volumeAttributes ?? {},
    });
  } catch (e) {
    return { ok: false, reason: `kubernetes.io/csi: mounter.SetUpAt failed: rpc error: ${(e as Error).message}` };
  }
  return { ok: true, dir: target, readOnly: ro };
}

/** Mounts the pod's claim volumes under `podDir` and returns, per container name, its mount paths mapped here. */
export async function materializeClaimVolumes(client: KubeClient, pod: V1Pod, podDir: string, o: ClaimVolumeOptions): Promise<PodVolumes> {
  const ns = pod.metadata?.namespace ?? 'default';
  const roots = new Map<string, string>();
  for (const v of pod.spec?.volumes ?? []) {
    const claim = v.persistentVolumeClaim;
    if (claim === undefined) continue;
    const r = await claimRoot(client, ns, claim.claimName, claim.readOnly === true, podDir, o);
    if (!r.ok) return { ok: false, volume: v.name, reason: r.reason };
    roots.set(v.name, r.dir);
  }
  return { ok: true, mounts: containerMounts(pod, roots) };
}
