import {
  WORKLOAD_KINDS,
  argTokens,
  envOf,
  field,
  isRecord,
  list,
  mountFor,
  mountsOf,
  namespaceOf,
  podSites,
  str,
  volumesOf,
  type ContainerSite,
  type PodSite,
} from '../pod-specs.ts';
import type { KubeObject, Rule, RuleContext, RuleHit } from '../rule.ts';
import { findObject } from '../set-index.ts';

/** This many pods or more loading the same weights at once is "many readers" (a DaemonSet always is). */
export const MIN_SHARED_READERS = 3;

const NET_INLINE = ['nfs', 'cephfs', 'glusterfs', 'azureFile', 'quobyte', 'rbd'];
const NET_DRIVER = /nfs|efs|ceph|lustre|fsx|filestore|juicefs|gcsfuse|azurefile|file\.csi\.azure|s3|weka|gpfs|spectrum|beegfs|alluxio|fuse/i;
const MODEL_PATH = /model|weight|huggingface|(^|\/)hf([-_](home|cache|hub))?(\/|$)|\/llm/i;
const MODEL_FLAGS = new Set([
  '--model',
  '--model-path',
  '--model-dir',
  '--model-id',
  '--model-name-or-path',
  '--model-repository',
  '--model-store',
  '--weights',
]);
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

/** Indices of the container's mounts it reads model weights from: mounts at a model-looking path, and the mounts a model flag or env value lies on. */
function modelMounts(c: ContainerSite): ReadonlySet<number> {
  const out = new Set<number>();
  for (const m of mountsOf(c).values()) if (MODEL_PATH.test(m.mountPath)) out.add(m.index);
  const add = (value: string | undefined): void => {
    const m = value === undefined ? undefined : mountFor(c, value);
    if (m !== undefined) out.add(m.index);
  };
  const toks = argTokens(c);
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]?.text ?? '';
    if (!t.startsWith('--')) continue;
    const eq = t.indexOf('=');
    const flag = (eq < 0 ? t : t.slice(0, eq)).toLowerCase().replace(/_/g, '-');
    if (MODEL_FLAGS.has(flag)) add(eq < 0 ? toks[i + 1]?.text : t.slice(eq + 1));
  }
  const env = envOf(c);
  for (const n of MODEL_ENV) add(env.get(n)?.value);
  return out;
}

/** Volumes an init container copies from: it mounts them together with a pod-local volume (emptyDir, hostPath, ephemeral). */
function copiedToLocal(s: PodSite): ReadonlySet<string> {
  const local = new Set<string>();
  for (const [name, v] of volumesOf(s)) if (v.emptyDir !== undefined || v.hostPath !== undefined || v.ephemeral !== undefined) local.add(name);
  const out = new Set<string>();
  for (const c of s.containers) {
    if (!c.init) continue;
    const names = [...mountsOf(c).values()].map((m) => m.volume);
    if (names.some((n) => local.has(n))) for (const n of names) out.add(n);
  }
  return out;
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
  selector: {matchLabels: {app: vllm}}
  replicas: 8
  template:
    metadata: {labels: {app: vllm}}
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
  selector: {matchLabels: {app: tgi}}
  replicas: 4
  template:
    metadata: {labels: {app: tgi}}
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
  selector: {matchLabels: {app: vllm}}
  replicas: 8
  template:
    metadata: {labels: {app: vllm}}
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
  selector: {matchLabels: {app: two}}
  replicas: 2
  template:
    metadata: {labels: {app: two}}
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
      const copied = copiedToLocal(s);
      for (const c of s.containers) {
        if (c.init) continue;
        const reads = modelMounts(c);
        for (const m of mountsOf(c).values()) {
          if (!reads.has(m.index) || copied.has(m.volume)) continue;
          const why = sharedNetworkVolume(ctx, obj, volumesOf(s).get(m.volume));
          if (why === undefined) continue;
          const readers = s.replicas === undefined ? "every node's pod reads" : `${s.replicas} replicas read`;
          hits.push({
            message: `${readers} model weights from volume ${m.volume} (${why}) at ${m.mountPath} with no local copy: page-cache contention on the shared filesystem makes read() time out while the replicas load at once; copy the weights into an emptyDir in an init container (or a node-local cache) and load from there`,
            path: [...c.path, 'volumeMounts', m.index],
          });
        }
      }
    }
    return hits;
  },
};
