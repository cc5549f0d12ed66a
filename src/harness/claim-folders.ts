/**
 * Dev mode only: the BatchInferenceJob controller reads and commits a job's files where its claims are mounted,
 * `<claims>/<namespace>/<claim>` (ADR 0102, docs/batch-inference.md). On a cluster that folder is the controller
 * pod's volume mounts; in `sits dev up` the controller runs in-process, so this keeps one link per Bound claim whose
 * volume is a folder on this machine (a hostPath PV, or a volume of the dev CSI driver) and removes it when the
 * claim goes. Users put batch input into a claim through the same folder (docs/quick-start.md).
 */
import { lstatSync, mkdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client/client.ts';
import { Reflector } from '../kube/client/reflector.ts';

export interface ClaimFolders {
  /** The folder holding `<namespace>/<claim>` links. */
  readonly root: string;
  stop(): void;
}

/** Keeps `<root>/<ns>/<claim>` linked to each Bound claim's folder; `csiFolder` maps a CSI volume handle of a driver to its folder. */
export async function linkClaimFolders(
  client: KubeClient,
  root: string,
  csiFolder: (driver: string, handle: string) => string | undefined,
  log: (m: string) => void = () => undefined,
): Promise<ClaimFolders> {
  mkdirSync(root, { recursive: true });
  const seen: { claims?: Reflector<V1PersistentVolumeClaim> } = {};
  // A claim can be Bound before the watch here has its PV: link again when its PV arrives or changes.
  const relink = (pv: V1PersistentVolume): void => {
    const ref = pv.spec?.claimRef;
    const c = ref === undefined ? undefined : seen.claims?.items.get(`${ref.namespace ?? ''}/${ref.name ?? ''}`);
    if (c !== undefined) link(c);
  };
  const pvs = new Reflector<V1PersistentVolume>(client, '/api/v1/persistentvolumes', {
    add: relink,
    update: relink,
    delete: () => undefined,
    error: (e) => log(`claim folders: ${e.message}`),
  });
  const folderOf = (pvName: string): string | undefined => {
    const pv = pvs.items.get(pvName);
    if (pv?.spec?.hostPath !== undefined) return pv.spec.hostPath.path;
    const csi = pv?.spec?.csi;
    return csi === undefined ? undefined : csiFolder(csi.driver, csi.volumeHandle);
  };
  const link = (c: V1PersistentVolumeClaim): void => {
    const ns = c.metadata?.namespace ?? '';
    const name = c.metadata?.name ?? '';
    const at = join(root, ns, name);
    const want = c.status?.phase === 'Bound' && c.metadata?.deletionTimestamp === undefined ? folderOf(c.spec?.volumeName ?? '') : undefined;
    const st = lstatSync(at, { throwIfNoEntry: false });
    if (st !== undefined && want !== undefined && st.isSymbolicLink() && readlinkSync(at) === want) return;
    if (st !== undefined) rmSync(at, { force: true });
    if (want === undefined) return;
    mkdirSync(join(root, ns), { recursive: true });
    symlinkSync(want, at);
  };
  const unlink = (c: V1PersistentVolumeClaim): void => rmSync(join(root, c.metadata?.namespace ?? '', c.metadata?.name ?? ''), { force: true });
  await pvs.start();
  const watched = new Reflector<V1PersistentVolumeClaim>(client, '/api/v1/persistentvolumeclaims', {
    add: link,
    update: link,
    delete: unlink,
    error: (e) => log(`claim folders: ${e.message}`),
  });
  seen.claims = watched;
  await watched.start();
  return {
    root,
    stop() {
      watched.stop();
      pvs.stop();
    },
  };
}
