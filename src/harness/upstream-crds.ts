/**
 * Real CRDs of the projects SITS works beside (KEDA's ScaledObject, Kubeflow's PyTorchJob, the CSI VolumeSnapshot), taken from their Go
 * modules through the module proxy (`go mod download`: the module cache keeps them, nothing is vendored), so the
 * apiserver in tests validates those objects exactly as a cluster running those projects does.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { isStatus, type KubeClient } from '../kube/client/client.ts';

export const UPSTREAM_CRDS = {
  keda: {
    module: 'github.com/kedacore/keda/v2',
    version: 'v2.20.2',
    files: ['config/crd/bases/keda.sh_scaledobjects.yaml', 'config/crd/bases/keda.sh_scaledjobs.yaml'],
  },
  kubeflow: { module: 'github.com/kubeflow/training-operator', version: 'v1.9.2', files: ['manifests/base/crds/kubeflow.org_pytorchjobs.yaml'] },
  // The CSI snapshot API (VolumeSnapshot, VolumeSnapshotContent, VolumeSnapshotClass) that snapshot-controller serves.
  snapshots: {
    module: 'github.com/kubernetes-csi/external-snapshotter/client/v8',
    version: 'v8.6.0',
    files: [
      'config/crd/snapshot.storage.k8s.io_volumesnapshotclasses.yaml',
      'config/crd/snapshot.storage.k8s.io_volumesnapshotcontents.yaml',
      'config/crd/snapshot.storage.k8s.io_volumesnapshots.yaml',
    ],
  },
} as const;

export type UpstreamProject = keyof typeof UPSTREAM_CRDS;

/** The CRD objects of a project, read from its module directory (downloaded once into the Go module cache). */
export function upstreamCrds(project: UpstreamProject): Record<string, unknown>[] {
  const p = UPSTREAM_CRDS[project];
  const out = execFileSync('go', ['mod', 'download', '-json', `${p.module}@${p.version}`], {
    encoding: 'utf8',
    env: { ...process.env, GOFLAGS: '-mod=mod' },
    cwd: '/',
  });
  const dir = (JSON.parse(out) as { Dir?: string; Error?: string }).Dir;
  if (dir === undefined) throw new Error(`go mod download ${p.module}@${p.version}: ${out}`);
  return p.files.map((f) => parse(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>);
}

/** Creates CRDs (an existing one is kept) and waits until each is Established. */
export async function applyCrdObjects(client: KubeClient, crds: readonly unknown[], timeoutMs = 60_000): Promise<void> {
  for (const crd of crds) {
    try {
      await client.post('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    } catch (e) {
      if (!isStatus(e, 409)) throw e;
    }
  }
  const deadline = performance.now() + timeoutMs;
  for (const crd of crds) {
    const name = (crd as { metadata: { name: string } }).metadata.name;
    for (;;) {
      const got = await client.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
      );
      if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true) break;
      if (performance.now() > deadline) throw new Error(`CRD ${name} not Established after ${timeoutMs / 1000} s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
