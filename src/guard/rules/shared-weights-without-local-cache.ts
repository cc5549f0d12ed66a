import { WORKLOAD_KINDS, argTokens, envOf, field, isRecord, list, namespaceOf, podSites, str, type ContainerSite, type PodSite } from '../pod-specs.ts';
import type { KubeObject, Rule, RuleContext, RuleHit } from '../rule.ts';
import { findObject } from '../set-index.ts';

/** This many pods or more loading the same weights at once is "many readers" (a DaemonSet always is). */
export const MIN_SHARED_READERS = 3;

const NET_INLINE = ['nfs', 'cephfs', 'glusterfs', 'azureFile', 'quobyte', 'rbd'];
const NET_DRIVER = /nfs|efs|ceph|lustre|fsx|filestore|juicefs|gcsfuse|azurefile|file\.csi\.azure|s3|weka|gpfs|spectrum|beegfs|alluxio|fuse/i;
const MODEL_PATH = /model|weight|huggingface|(^|\/)hf([-_](home|cache|hub))?(\/|$)|\/llm/i;
const MODEL_FLAGS = new Set(['--model', '--model-path', '--model-dir', '--model-id', '--model-name-or-path', '--model-repository', '--model-store', '--weights']);
const MODEL_ENV = ['MODEL_PATH', 'MODEL_DIR', 'MODEL_ID', 'HF_HOME', 'HF_HUB_CACHE', 'TRANSFORMERS_CACHE', 'HUGGINGFACE_HUB_CACHE', 'MODEL_REPOSITORY'];

/** Why the volume is a network filesystem shared by all pods, or undefined. */
function sharedNetworkVolume(ctx: RuleContext, obj: KubeObject, v: unknown): string | undefined {
  if (!isRecord(v)) return undefined;
  for (const k of NET_INLINE) if (v[k] !== undefined) return `an inline ${k} volume`;
  const driver = str(field(v.csi, 'driver'));
  if (driver !== undefined && NET_DRIVER.test(driver)) return `CSI driver ${driver}`;
  const claim = str(field(v.persistentVolumeClaim, 'claimName'));
  if (claim === undefined) return undefined;
  const pvc = findObject(ctx, 'PersistentVolumeClaim', namespaceOf(obj), claim);
  const modes = list(field(pvc?.spec, 'accessModes')).filter((m): m is string => m === 'ReadWriteMany' || m === 'ReadOnlyMany');
  return modes.length > 0 ? `PVC ${claim} (${modes.join(', ')})` : undefined;
}

/** Mount paths a container reads model weights from: the mount's own path, or a model flag/env value under it. */
function readsModelsAt(c: ContainerSite, mountPath: string): boolean {
  if (MODEL_PATH.test(mountPath)) return true;
  const under = (p: string): boolean => p === mountPath || p.startsWith(mountPath.endsWith('/') ? mountPath : `${mountPath}/`);
  const toks = argTokens(c);
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]?.text ?? '';
    const eq = t.indexOf('=');
    const flag = (eq < 0 ? t : t.slice(0, eq)).toLowerCase().replace(/_/g, '-');
    if (!MODEL_FLAGS.has(flag)) continue;
    const value = eq < 0 ? toks[i + 1]?.text : t.slice(eq + 1);
    if (value !== undefined && under(value)) return true;
  }
  const env = envOf(c);
  return MODEL_ENV.some((n) => {
    const v = env.get(n)?.value;
    return v !== undefined && under(v);
  });
}

/** An init container that mounts the shared volume and a pod-local one is taken for a copy into a local cache. */
function hasLocalCopy(s: PodSite, shared: string): boolean {
  const local = new Set(
    list(s.spec.volumes)
      .filter((v) => isRecord(v) && (v.emptyDir !== undefined || v.hostPath !== undefined || v.ephemeral !== undefined))
      .map((v) => str(field(v, 'name'))),
  );
  return s.containers.some((c) => {
    if (!c.init) return false;
    const names = list(c.container.volumeMounts).map((m) => str(field(m, 'name')));
    return names.includes(shared) && names.some((n) => n !== undefined && local.has(n));
  });
}

export const sharedWeightsWithoutLocalCache: Rule = {
  id: 'shared-weights-without-local-cache',
  severity: 'warning',
  seed: '001 §1',
  title: 'Many replicas loading model weights from a shared network filesystem without a local cache',
  rationale:
    'When many pods load large weights from one NFS/CephFS/EFS volume at once, page-cache contention makes `read()` time out and replicas fail ' +
    `to start (seed 001 §1). Flagged when a template with ${MIN_SHARED_READERS} or more replicas (or a DaemonSet) mounts a network filesystem — ` +
    'inline `nfs`/`cephfs`/`glusterfs`/`azureFile`, a CSI driver such as `nfs.csi.k8s.io`, `efs.csi.aws.com`, `cephfs.csi.ceph.com`, or a PVC of ' +
    'the set with `ReadWriteMany`/`ReadOnlyMany` — at a model path (the mount path names model/weights/huggingface/hf, or `--model`, `MODEL_PATH`, ' +
    '`HF_HOME`, … point under it) and no init container copies it into a pod-local volume. Copy the weights into an `emptyDir` (or a node-local ' +
    'cache volume) in an init container and serve from there, or pre-warm a node-local cache with a DaemonSet.',
  kinds: WORKLOAD_KINDS,
  fixtures: {
    bad: `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: weights, namespace: ml}
spec:
  accessModes: [ReadOnlyMany]
  resources: {requests: {storage: 500Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: ml}
spec:
  replicas: 8
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.0
        args: [--model, /mnt/shared/llama-70b]
        volumeMounts: [{name: w, mountPath: /mnt/shared, readOnly: true}]
      volumes: [{name: w, persistentVolumeClaim: {claimName: weights}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: tgi, namespace: ml}
spec:
  replicas: 4
  template:
    spec:
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:2.0
        volumeMounts: [{name: models, mountPath: /models}]
      volumes: [{name: models, nfs: {server: nfs.example, path: /export/models}}]
`,
    good: `apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: ml}
spec:
  replicas: 8
  template:
    spec:
      initContainers:
      - name: copy-weights
        image: busybox
        command: [sh, -c, cp -r /mnt/shared/llama-70b /cache/]
        volumeMounts: [{name: w, mountPath: /mnt/shared}, {name: cache, mountPath: /cache}]
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.0
        readinessProbe: {httpGet: {path: /health, port: 8000}}
        args: [--model, /cache/llama-70b]
        volumeMounts: [{name: cache, mountPath: /cache}, {name: w, mountPath: /mnt/shared}]
      volumes:
      - {name: w, nfs: {server: nfs.example, path: /export/models}}
      - {name: cache, emptyDir: {}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: two, namespace: ml}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - {name: s, image: vllm/vllm-openai:v0.6.0, volumeMounts: [{name: models, mountPath: /models}], readinessProbe: {httpGet: {path: /health, port: 8000}}}
      volumes: [{name: models, nfs: {server: nfs.example, path: /export/models}}]
`,
  },
  check(obj, ctx) {
    const hits: RuleHit[] = [];
    for (const s of podSites(obj)) {
      if (s.replicas !== undefined && s.replicas < MIN_SHARED_READERS) continue;
      const volumes = new Map(list(s.spec.volumes).map((v) => [str(field(v, 'name')) ?? '', v] as const));
      for (const c of s.containers) {
        if (c.init) continue;
        list(c.container.volumeMounts).forEach((m, k) => {
          const name = str(field(m, 'name'));
          const mountPath = str(field(m, 'mountPath'));
          if (name === undefined || mountPath === undefined) return;
          const why = sharedNetworkVolume(ctx, obj, volumes.get(name));
          if (why === undefined || !readsModelsAt(c, mountPath) || hasLocalCopy(s, name)) return;
          const readers = s.replicas === undefined ? 'every node\'s pod reads' : `${s.replicas} replicas read`;
          hits.push({
            message: `${readers} model weights from volume ${name} (${why}) at ${mountPath} with no local copy: page-cache contention on the shared filesystem makes read() time out while the replicas load at once; copy the weights into an emptyDir in an init container (or a node-local cache) and load from there`,
            path: [...c.path, 'volumeMounts', k],
          });
        });
      }
    }
    return hits;
  },
};
