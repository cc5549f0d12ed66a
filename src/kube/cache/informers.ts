/**
 * The live scheduler's informers: list-then-watch of nodes, pods, namespaces, storage, pod groups, Queue objects and (for the
 * default spread constraints) Services, ReplicationControllers, ReplicaSets and StatefulSets into the
 * cache (and the pod→job translation's maps). Handlers only record: the snapshot is taken at the start of
 * the next cycle. A missing Queue or PodGroup CRD is logged and lived without, as are PodDisruptionBudgets
 * the scheduler may not read (preemption then sees no budgets).
 */
import type { V1Namespace, V1Node, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1StorageClass } from '@kubernetes/client-node';
import { API_PATH } from '../../api/wire.ts';
import { KubeApiError, type KubeClient } from '../client/client.ts';
import type { ClusterCache } from './cluster-cache.ts';
import type { PdbObject } from './disruption-budgets.ts';
import type { PodGroupObject, PodJobs } from './pod-jobs.ts';
import type { QueueObject } from './queues.ts';
import { objectKey, Reflector } from '../client/reflector.ts';
import { StringPool, watchTransform } from './watch-transform.ts';
import type { ControllerKind, SelectorObject } from './spread-owners.ts';

export interface InformerHandlers {
  /** Anything changed: a cycle may have work. */
  readonly changed: () => void;
  /** A Queue object changed: queue-held jobs may now be admitted. */
  readonly queuesChanged: () => void;
  readonly log: (m: string) => void;
}

export interface Informers {
  stop(): void;
  /** Objects each running watch holds, by API path (`sits bench soak` checks that none grows). */
  sizes(): Record<string, number>;
}

type AnyReflector = Reflector<{ metadata?: { name?: string } }>;

export async function startInformers(client: KubeClient, cache: ClusterCache, jobs: PodJobs, h: InformerHandlers): Promise<Informers> {
  const { changed, queuesChanged, log } = h;
  // The caches keep every pod for as long as it exists: each object loses its managedFields and shares its repeated
  // strings (watch-transform.ts), which halves what 50,000 pods hold.
  const transform = watchTransform(new StringPool());
  const started: AnyReflector[] = [];
  const stop = (): void => {
    for (const r of started) r.stop();
  };
  const nodes = new Reflector<V1Node>(client, '/api/v1/nodes', {
    transform,
    add: (n) => (cache.upsertNode(n), changed()),
    update: (n) => (cache.upsertNode(n), changed()),
    delete: (n) => (cache.deleteNode(n), changed()),
    error: (e) => log(`nodes watch: ${e.message}`),
  });
  const pods = new Reflector<V1Pod>(client, '/api/v1/pods', {
    transform,
    add: (p) => (cache.upsertPod(p), jobs.learn(p), changed()),
    update: (p) => (cache.upsertPod(p), jobs.learn(p), changed()),
    delete: (p) => (cache.deletePod(p), jobs.learn(p, true), changed()),
    error: (e) => log(`pods watch: ${e.message}`),
  });
  const groups = new Reflector<PodGroupObject>(client, `${API_PATH}/podgroups`, {
    transform,
    add: (g) => (jobs.podGroups.set(objectKey(g), g), changed()),
    // The scheduler writes PodGroup and Queue status itself (object-status.ts): only a spec change is news.
    update: (g) => {
      const spec = JSON.stringify(jobs.podGroups.get(objectKey(g))?.spec);
      jobs.podGroups.set(objectKey(g), g);
      if (JSON.stringify(g.spec) !== spec) changed();
    },
    delete: (g) => (jobs.podGroups.delete(objectKey(g)), changed()),
    error: (e) => log(`podgroups watch: ${e.message}`),
  });
  const queues = new Reflector<QueueObject>(client, `${API_PATH}/queues`, {
    transform,
    add: (q) => (jobs.queueObjs.set(objectKey(q), q), queuesChanged(), changed()),
    update: (q) => {
      const spec = JSON.stringify(jobs.queueObjs.get(objectKey(q))?.spec);
      jobs.queueObjs.set(objectKey(q), q);
      if (JSON.stringify(q.spec) === spec) return;
      queuesChanged();
      changed();
    },
    delete: (q) => (jobs.queueObjs.delete(objectKey(q)), queuesChanged(), changed()),
    error: (e) => log(`queues watch: ${e.message}`),
  });
  // Budgets only matter when a preemption is planned: a change is no reason to cycle.
  const pdbs = new Reflector<PdbObject>(client, '/apis/policy/v1/poddisruptionbudgets', {
    transform,
    add: (b) => void jobs.pdbs.set(objectKey(b), b),
    update: (b) => void jobs.pdbs.set(objectKey(b), b),
    delete: (b) => void jobs.pdbs.delete(objectKey(b)),
    error: (e) => log(`poddisruptionbudgets watch: ${e.message}`),
  });
  const namespaces = new Reflector<V1Namespace>(client, '/api/v1/namespaces', {
    transform,
    add: (n) => (cache.upsertNamespace(n), changed()),
    update: (n) => (cache.upsertNamespace(n), changed()),
    delete: (n) => (cache.deleteNamespace(n), changed()),
    error: (e) => log(`namespaces watch: ${e.message}`),
  });
  // The default spread constraints' selectors (ADR 0077): read only, and lived without when not readable.
  const owners = jobs.owners;
  const services = new Reflector<SelectorObject>(client, '/api/v1/services', {
    transform,
    add: (s) => (owners.upsertService(s), changed()),
    update: (s) => (owners.upsertService(s), changed()),
    delete: (s) => (owners.deleteService(s), changed()),
    error: (e) => log(`services watch: ${e.message}`),
  });
  const controllerWatch = (kind: ControllerKind, path: string): Reflector<SelectorObject> =>
    new Reflector<SelectorObject>(client, path, {
      transform,
      add: (o) => (owners.upsertController(kind, o), changed()),
      update: (o) => (owners.upsertController(kind, o), changed()),
      delete: (o) => (owners.deleteController(kind, o), changed()),
      error: (e) => log(`${path} watch: ${e.message}`),
    });
  const ownerWatches: [string, Reflector<SelectorObject>][] = [
    ['services', services],
    ['replicationcontrollers', controllerWatch('ReplicationController', '/api/v1/replicationcontrollers')],
    ['replicasets', controllerWatch('ReplicaSet', '/apis/apps/v1/replicasets')],
    ['statefulsets', controllerWatch('StatefulSet', '/apis/apps/v1/statefulsets')],
  ];
  // VolumeBinding, VolumeZone, VolumeRestrictions (ADR 0070): claims, volumes and classes.
  const pvcs = new Reflector<V1PersistentVolumeClaim>(client, '/api/v1/persistentvolumeclaims', {
    transform,
    add: (o) => (cache.upsertPersistentVolumeClaim(o), changed()),
    update: (o) => (cache.upsertPersistentVolumeClaim(o), changed()),
    delete: (o) => (cache.deletePersistentVolumeClaim(o), changed()),
    error: (e) => log(`persistentvolumeclaims watch: ${e.message}`),
  });
  const pvs = new Reflector<V1PersistentVolume>(client, '/api/v1/persistentvolumes', {
    transform,
    add: (o) => (cache.upsertPersistentVolume(o), changed()),
    update: (o) => (cache.upsertPersistentVolume(o), changed()),
    delete: (o) => (cache.deletePersistentVolume(o), changed()),
    error: (e) => log(`persistentvolumes watch: ${e.message}`),
  });
  const classes = new Reflector<V1StorageClass>(client, '/apis/storage.k8s.io/v1/storageclasses', {
    transform,
    add: (o) => (cache.upsertStorageClass(o), changed()),
    update: (o) => (cache.upsertStorageClass(o), changed()),
    delete: (o) => (cache.deleteStorageClass(o), changed()),
    error: (e) => log(`storageclasses watch: ${e.message}`),
  });
  try {
    await nodes.start();
    started.push(nodes as unknown as AnyReflector);
    await pods.start();
    started.push(pods as unknown as AnyReflector);
    // Namespace labels serve namespaceSelector in pod affinity terms; without the right to read them, only kube's
    // automatic kubernetes.io/metadata.name label is known.
    if (await optional(namespaces, 'namespaces not readable: namespaceSelector matches only kubernetes.io/metadata.name', log, [403, 404]))
      started.push(namespaces as unknown as AnyReflector);
    if (await optional(queues, "Queue CRD not installed: every pod is in its queue label's default queue, no quotas", log))
      started.push(queues as unknown as AnyReflector);
    if (await optional(groups, 'PodGroup CRD not installed: gangs read from pod annotations', log)) {
      started.push(groups as unknown as AnyReflector);
      jobs.podGroupsWatched = true;
    }
    // Without the right to read storage, pods with claims wait with "persistentvolumeclaim … not found" (never placed
    // blind to their volumes).
    const storageMissing = 'storage not readable (RBAC: persistentvolumeclaims, persistentvolumes, storageclasses): pods with volume claims wait';
    let storage = true;
    for (const r of [pvcs, pvs, classes] as AnyReflector[]) {
      if (!storage) break;
      if (await optional(r, storageMissing, log, [403, 404])) started.push(r);
      else storage = false;
    }
    if (storage) cache.enableStorage();
    if (await optional(pdbs, 'PodDisruptionBudgets not readable (RBAC): preemption ignores them', log, [403])) started.push(pdbs as unknown as AnyReflector);
    for (const [what, r] of ownerWatches)
      if (await optional(r, `${what} not readable (RBAC): no default spread constraints from them`, log, [403, 404]))
        started.push(r as unknown as AnyReflector);
  } catch (e) {
    stop();
    throw e;
  }
  return { stop, sizes: () => Object.fromEntries(started.map((r) => [r.path, r.items.size])) };
}

/** Starts a reflector on a CRD that may be missing (404: logged, false). */
async function optional<T extends { metadata?: { name?: string } }>(
  r: Reflector<T>,
  missing: string,
  log: (m: string) => void,
  statuses: readonly number[] = [404],
): Promise<boolean> {
  try {
    await r.start();
    return true;
  } catch (e) {
    if (!(e instanceof KubeApiError && statuses.includes(e.status))) throw e;
    log(missing);
    return false;
  }
}
