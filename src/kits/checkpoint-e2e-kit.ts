/**
 * The set-up the checkpoint e2e tests share (preemption with checkpoints, defragmentation, health migration): a dev
 * cluster with kube-controller-manager's PV binder and the real snapshot stack with csi-provisioner, and a
 * `stand-in` VolumeSnapshotClass and StorageClass of the stack's CSI driver. Plus the TrainingJob replica lookup
 * those tests make.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../api/wire.ts';
import { listPods } from '../harness/e2e-kit.ts';
import {
  ensureCsiProvisioner,
  ensureSnapshotComponents,
  SNAPSHOT_API,
  startSnapshotStack,
  storageClass,
  volumeSnapshotClass,
  type SnapshotStack,
} from '../harness/snapshot-stack.ts';
import type { KubeClient } from '../kube/client/client.ts';
import { Reflector } from '../kube/client/reflector.ts';
import { startDevCluster, type DevCluster, type DevClusterOptions } from '../app/dev-cluster.ts';

/** The class name of the stand-in driver's VolumeSnapshotClass and StorageClass. */
export const STAND_IN_CLASS = 'stand-in';

export interface CheckpointCluster {
  readonly cluster: DevCluster;
  readonly client: KubeClient;
  readonly stack: SnapshotStack;
  /** Stops the snapshot stack, then the cluster. */
  stop(): Promise<void>;
}

export async function startCheckpointCluster(opts: DevClusterOptions): Promise<CheckpointCluster> {
  await Promise.all([ensureSnapshotComponents(), ensureCsiProvisioner()]);
  const cluster = await startDevCluster(opts);
  let stack: SnapshotStack | undefined;
  try {
    const client = cluster.client;
    await cluster.plane.startControllerManager({ controllers: ['persistentvolume-binder-controller'] });
    stack = await startSnapshotStack(cluster.plane, { client, withProvisioner: true });
    await client.post(`${SNAPSHOT_API}/volumesnapshotclasses`, volumeSnapshotClass(STAND_IN_CLASS, stack.driver.name, 'Delete'));
    await client.post('/apis/storage.k8s.io/v1/storageclasses', storageClass(STAND_IN_CLASS, stack.driver.name));
    const s = stack;
    return {
      cluster,
      client,
      stack: s,
      stop: async () => {
        await s.stop();
        await cluster.stop();
      },
    };
  } catch (e) {
    await stack?.stop();
    await cluster.stop();
    throw e;
  }
}

/** The first container's env as a map (what the TrainingJob controller rendered). */
export const containerEnv = (p: V1Pod): Record<string, string> => Object.fromEntries((p.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']));

/** The replica pods of a TrainingJob's attempt that are not being deleted. */
export async function trainingJobReplicas(client: KubeClient, ns: string, job: string, attempt: number): Promise<V1Pod[]> {
  return (await listPods(client, ns)).filter(
    (p) =>
      p.metadata?.labels?.[LABEL.trainingJob] === job &&
      p.metadata.labels[LABEL.role] === 'replica' &&
      p.metadata.labels[LABEL.attempt] === String(attempt) &&
      p.metadata.deletionTimestamp === undefined,
  );
}

export interface PodChange {
  readonly kind: 'add' | 'update' | 'delete';
  readonly pod: V1Pod;
  readonly atMs: number;
}

/** Every pod change in `ns` from now on, in order, with when it was seen (eviction order and reasons). */
export async function recordPodChanges(client: KubeClient, ns: string): Promise<{ readonly seen: PodChange[]; stop(): void }> {
  const seen: PodChange[] = [];
  const watch = new Reflector<V1Pod>(client, `/api/v1/namespaces/${ns}/pods`, {
    add: (p) => seen.push({ kind: 'add', pod: p, atMs: Date.now() }),
    update: (p) => seen.push({ kind: 'update', pod: p, atMs: Date.now() }),
    delete: (p) => seen.push({ kind: 'delete', pod: p, atMs: Date.now() }),
  });
  await watch.start();
  return { seen, stop: () => watch.stop() };
}
