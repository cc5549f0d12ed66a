/**
 * What the webhook knows besides the reviewed object, from informers (list + watch, kube/client/reflector.ts):
 * the namespace-scoped objects cross-object rules read (Services for rendezvous, HPAs and KEDA ScaledObjects
 * targeting training, PVCs for checkpoint and model volumes, workloads an autoscaler targets), the cluster's
 * PriorityClasses, Namespaces (opt-in and defaults for mutation) and, from the Nodes, the cluster facts
 * (GPU models present, RDMA). A review reads the cache; it never calls the apiserver.
 * Kinds whose API is not served (KEDA or the SITS CRDs not installed) are skipped, and named in `skipped`.
 */
import type { KubeClient } from '../kube/client/client.ts';
import { isStatus } from '../kube/client/client.ts';
import { modelFromProduct } from '../kube/cache/labels.ts';
import { Reflector, objectKey } from '../kube/client/reflector.ts';
import type { ClusterFacts, KubeObject } from '../guard/rule.ts';
import { LABEL } from '../api/wire.ts';
import type { NamespaceInfo } from './admission.ts';

interface Meta {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly resourceVersion?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
}
type Obj = KubeObject & Meta;

interface Source {
  readonly kind: string;
  readonly apiVersion: string;
  /** The list path; namespaced kinds are listed across namespaces. */
  readonly path: string;
  readonly namespaced: boolean;
}

/** Namespaced kinds the rules relate a reviewed object to. */
const RELATED: readonly Source[] = [
  { kind: 'Service', apiVersion: 'v1', path: '/api/v1/services', namespaced: true },
  { kind: 'PersistentVolumeClaim', apiVersion: 'v1', path: '/api/v1/persistentvolumeclaims', namespaced: true },
  { kind: 'Deployment', apiVersion: 'apps/v1', path: '/apis/apps/v1/deployments', namespaced: true },
  { kind: 'StatefulSet', apiVersion: 'apps/v1', path: '/apis/apps/v1/statefulsets', namespaced: true },
  { kind: 'DaemonSet', apiVersion: 'apps/v1', path: '/apis/apps/v1/daemonsets', namespaced: true },
  { kind: 'HorizontalPodAutoscaler', apiVersion: 'autoscaling/v2', path: '/apis/autoscaling/v2/horizontalpodautoscalers', namespaced: true },
  { kind: 'ScaledObject', apiVersion: 'keda.sh/v1alpha1', path: '/apis/keda.sh/v1alpha1/scaledobjects', namespaced: true },
  { kind: 'TrainingJob', apiVersion: 'ai.sits2026.dev/v1', path: '/apis/ai.sits2026.dev/v1/trainingjobs', namespaced: true },
  // A gang's pods are checked against their PodGroup (gang-without-min-member).
  { kind: 'PodGroup', apiVersion: 'ai.sits2026.dev/v1', path: '/apis/ai.sits2026.dev/v1/podgroups', namespaced: true },
  { kind: 'PyTorchJob', apiVersion: 'kubeflow.org/v1', path: '/apis/kubeflow.org/v1/pytorchjobs', namespaced: true },
  { kind: 'PriorityClass', apiVersion: 'scheduling.k8s.io/v1', path: '/apis/scheduling.k8s.io/v1/priorityclasses', namespaced: false },
];

/** The kinds a webhook's cache holds, so a caller can wait until it has seen one it just created. */
export const RELATED_KINDS: readonly string[] = RELATED.map((r) => r.kind);

const RDMA_PREFIXES = ['rdma/', 'nvidia.com/hca', 'mellanox.com/'];

export interface ContextCache {
  related(namespace: string | undefined, self: { kind: string; name?: string }): readonly KubeObject[];
  namespace(name: string): NamespaceInfo | undefined;
  cluster(): ClusterFacts;
  /** Kinds not watched because their API is not served. */
  readonly skipped: readonly string[];
  stop(): void;
}

export interface ContextCacheOptions {
  readonly schedulerNames: readonly string[];
  /** Watch Nodes for the cluster facts (default true); the facts can also be given outright. */
  readonly watchNodes?: boolean;
  readonly facts?: Partial<ClusterFacts>;
  readonly log?: (m: string) => void;
}

export async function startContextCache(client: KubeClient, o: ContextCacheOptions): Promise<ContextCache> {
  const reflectors: Reflector<Obj>[] = [];
  const skipped: string[] = [];
  // namespace → objects of that namespace (with kind set: list items carry none); rebuilt lazily on change.
  const byNs = new Map<string, Map<string, Obj>>();
  const cluster = new Map<string, Obj>();
  const nsView = new Map<string, readonly KubeObject[]>();
  let clusterView: readonly KubeObject[] | undefined;

  const withKind = (s: Source, obj: Obj): Obj => ({ ...obj, kind: s.kind, apiVersion: s.apiVersion });
  const keyOf = (s: Source, obj: Obj): string => `${s.kind}/${objectKey(obj)}`;
  const put = (s: Source, obj: Obj): void => {
    if (s.namespaced) {
      const ns = obj.metadata?.namespace ?? '';
      let m = byNs.get(ns);
      if (m === undefined) byNs.set(ns, (m = new Map()));
      m.set(keyOf(s, obj), withKind(s, obj));
      nsView.delete(ns);
    } else {
      cluster.set(keyOf(s, obj), withKind(s, obj));
      clusterView = undefined;
    }
  };
  const drop = (s: Source, obj: Obj): void => {
    if (s.namespaced) {
      const ns = obj.metadata?.namespace ?? '';
      byNs.get(ns)?.delete(keyOf(s, obj));
      nsView.delete(ns);
    } else {
      cluster.delete(keyOf(s, obj));
      clusterView = undefined;
    }
  };

  const start = async (s: Source): Promise<void> => {
    const r = new Reflector<Obj>(client, s.path, {
      add: (x) => put(s, x),
      update: (x) => put(s, x),
      delete: (x) => drop(s, x),
      error: (e) => o.log?.(`watch ${s.kind}: ${e.message}`),
    });
    try {
      await r.start();
      reflectors.push(r);
    } catch (e) {
      r.stop();
      if (isStatus(e, 404)) skipped.push(s.kind);
      else throw e;
    }
  };

  const namespaces = new Map<string, NamespaceInfo>();
  const nsReflector = new Reflector<Obj>(client, '/api/v1/namespaces', {
    add: (n) => namespaces.set(n.metadata?.name ?? '', { labels: n.metadata?.labels ?? {}, annotations: n.metadata?.annotations ?? {} }),
    update: (n) => namespaces.set(n.metadata?.name ?? '', { labels: n.metadata?.labels ?? {}, annotations: n.metadata?.annotations ?? {} }),
    delete: (n) => namespaces.delete(n.metadata?.name ?? ''),
    error: (e) => o.log?.(`watch Namespace: ${e.message}`),
  });

  // Cluster facts kept as counts, so a node change costs O(1).
  const models = new Map<string, number>();
  const nodeModel = new Map<string, { model: string | undefined; rdma: boolean }>();
  let rdmaNodes = 0;
  type NodeObj = Obj & { status?: { allocatable?: Record<string, string> } };
  const nodeFacts = (n: NodeObj): { model: string | undefined; rdma: boolean } => {
    const labels = n.metadata?.labels ?? {};
    const own = labels[LABEL.gpuModel];
    const gfd = labels[LABEL.gfdProduct];
    const model = own !== undefined && own !== '' ? own : gfd !== undefined && gfd !== '' ? modelFromProduct(gfd) : undefined;
    const alloc = n.status?.allocatable ?? {};
    const rdma =
      Object.keys(alloc).some((k) => RDMA_PREFIXES.some((p) => k.startsWith(p)) && alloc[k] !== '0') ||
      labels['feature.node.kubernetes.io/rdma.available'] === 'true';
    return { model, rdma };
  };
  const setNode = (n: NodeObj, present: boolean): void => {
    const name = n.metadata?.name ?? '';
    const old = nodeModel.get(name);
    if (old !== undefined) {
      if (old.model !== undefined) {
        const c = (models.get(old.model) ?? 1) - 1;
        if (c <= 0) models.delete(old.model);
        else models.set(old.model, c);
      }
      if (old.rdma) rdmaNodes--;
      nodeModel.delete(name);
    }
    if (!present) return;
    const f = nodeFacts(n);
    nodeModel.set(name, f);
    if (f.model !== undefined) models.set(f.model, (models.get(f.model) ?? 0) + 1);
    if (f.rdma) rdmaNodes++;
  };
  const nodeReflector =
    o.watchNodes === false
      ? undefined
      : new Reflector<NodeObj>(client, '/api/v1/nodes', {
          add: (n) => setNode(n, true),
          update: (n) => setNode(n, true),
          delete: (n) => setNode(n, false),
          error: (e) => o.log?.(`watch Node: ${e.message}`),
        });

  await Promise.all([...RELATED.map(start), nsReflector.start(), nodeReflector?.start()]);

  return {
    skipped,
    related(namespace, self) {
      let nsObjs: readonly KubeObject[] = [];
      if (namespace !== undefined) {
        let v = nsView.get(namespace);
        if (v === undefined) {
          v = [...(byNs.get(namespace)?.values() ?? [])];
          nsView.set(namespace, v);
        }
        nsObjs = v;
      }
      clusterView ??= [...cluster.values()];
      // The reviewed object's stored version is not related to itself (an UPDATE would see two of it).
      const other = (x: KubeObject): boolean => !(x.kind === self.kind && (x as Obj).metadata?.name === self.name);
      return [...nsObjs.filter(other), ...clusterView.filter(other)];
    },
    namespace: (name) => namespaces.get(name),
    cluster: () => ({
      schedulerNames: o.schedulerNames,
      gpuModels: o.facts?.gpuModels ?? [...models.keys()].sort(),
      rdma: o.facts?.rdma ?? rdmaNodes > 0,
    }),
    stop() {
      for (const r of reflectors) r.stop();
      nsReflector.stop();
      nodeReflector?.stop();
    },
  };
}
