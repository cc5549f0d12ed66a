import {
  WORKLOAD_KINDS,
  envOf,
  volumesOf,
  field,
  flagValue,
  isMultiRankTraining,
  isRecord,
  kindOf,
  list,
  mountFor,
  podCount,
  podSites,
  str,
  type ContainerSite,
  type PodSite,
} from '../pod-specs.ts';
import type { FieldPath, KubeObject, Rule, RuleHit } from '../rule.ts';
import { podLocalVolumeReason } from '../../api/checkpoint-paths.ts';

const FLAGS = [
  '--checkpoint-dir',
  '--checkpoint-path',
  '--checkpoint',
  '--ckpt-dir',
  '--ckpt-path',
  '--ckpt',
  '--save-dir',
  '--save',
  '--output-dir',
  '--checkpoint-root',
];
const isCkptEnv = (name: string): boolean => /CHECKPOINT|CKPT/.test(name.toUpperCase()) || name === 'SAVE_DIR' || name === 'OUTPUT_DIR';
const mentionsCkpt = (p: string): boolean => /checkpoint|ckpt/i.test(p);

interface Candidate {
  readonly dir: string;
  readonly from: string;
  readonly path: FieldPath;
}

function candidates(c: ContainerSite): Candidate[] {
  const out: Candidate[] = [];
  for (const e of envOf(c).values()) if (isCkptEnv(e.name) && e.value !== undefined) out.push({ dir: e.value, from: `env ${e.name}`, path: e.valuePath });
  for (const f of FLAGS) {
    const v = flagValue(c, [f]);
    if (v !== undefined) out.push({ dir: v.text, from: `argument ${f}`, path: v.path });
  }
  list(c.container.volumeMounts).forEach((m, k) => {
    const mp = str(field(m, 'mountPath'));
    if (mp !== undefined && mentionsCkpt(mp)) out.push({ dir: mp, from: 'mount', path: [...c.path, 'volumeMounts', k] });
  });
  return out;
}

const claimCache = new WeakMap<object, ReadonlySet<string>>();
const claimTemplates = (obj: KubeObject): ReadonlySet<string> => {
  let set = claimCache.get(obj);
  if (set === undefined) {
    set = new Set(list(field(obj.spec, 'volumeClaimTemplates')).map((t) => str(field(field(t, 'metadata'), 'name')) ?? ''));
    claimCache.set(obj, set);
  }
  return set;
};

/** Why the volume named `name` is private to one pod, or undefined when it may be shared. */
function perPodVolume(obj: KubeObject, s: PodSite, name: string): string | undefined {
  const v = volumesOf(s).get(name);
  if (isRecord(v)) return podLocalVolumeReason(v);
  if (kindOf(obj) === 'StatefulSet' && claimTemplates(obj).has(name)) {
    return 'a volumeClaimTemplate (one PVC per pod)';
  }
  return undefined;
}

export const checkpointOnPodLocalStorage: Rule = {
  id: 'checkpoint-on-pod-local-storage',
  severity: 'warning',
  seed: '001 §3.3',
  title: 'Checkpoint directory of a multi-rank job on storage that differs per pod',
  rationale:
    'Every rank must see the same checkpoint directory: a rank restarted on another node that finds no checkpoint silently starts from scratch ' +
    '(seed 001 §3.3: `/mnt/cp` on w-02 resolved to a local path while w-01 used the shared one). The checkpoint directory is read from env ' +
    '(`CHECKPOINT_DIR`, `CKPT_PATH`, `SAVE_DIR`, `OUTPUT_DIR`, …), arguments (`--checkpoint-dir`, `--save-dir`, `--output_dir`, …) and mounts ' +
    'whose path contains "checkpoint" or "ckpt"; it is flagged when it lies on an emptyDir, hostPath, generic ephemeral volume, a ' +
    "StatefulSet volumeClaimTemplate, a mount with a per-pod `subPathExpr`, or no volume at all (the container's own filesystem). Mount one " +
    'shared ReadWriteMany PVC at the same path in every pod, or write to object storage (`s3://…`), and let only rank 0 write.',
  kinds: WORKLOAD_KINDS,
  fixtures: {
    bad: `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bert, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3
            command: [torchrun, train.py, --checkpoint-dir, /ckpt/bert]
            volumeMounts: [{name: ckpt, mountPath: /ckpt}]
          volumes: [{name: ckpt, emptyDir: {}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ddp, namespace: ml}
spec:
  selector: {matchLabels: {app: ddp}}
  replicas: 3
  template:
    metadata: {labels: {app: ddp}}
    spec:
      containers:
      - name: t
        image: pytorch/pytorch:2.3
        env: [{name: WORLD_SIZE, value: "3"}, {name: CHECKPOINT_DIR, value: /data/checkpoints}]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 100Gi}}}
`,
    good: `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bert, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3
            command: [torchrun, train.py, --checkpoint-dir, /ckpt/bert, --output-dir, s3://bucket/bert]
            volumeMounts: [{name: ckpt, mountPath: /ckpt}, {name: dshm, mountPath: /dev/shm}]
          volumes: [{name: ckpt, persistentVolumeClaim: {claimName: shared-ckpt}}, {name: dshm, emptyDir: {medium: Memory}}]
---
apiVersion: v1
kind: Pod
metadata: {name: single, namespace: ml}
spec:
  containers:
  - {name: t, image: pytorch/pytorch:2.3, env: [{name: CHECKPOINT_DIR, value: /tmp/ckpt}]}
`,
  },
  check(obj) {
    if (!isMultiRankTraining(obj)) return [];
    const pods = podCount(obj);
    const many = pods === undefined ? 'every pod' : `each of the ${pods} pods`;
    const hits: RuleHit[] = [];
    for (const s of podSites(obj)) {
      for (const c of s.containers) {
        if (c.init) continue;
        const seen = new Set<string>();
        for (const cand of candidates(c)) {
          if (!cand.dir.startsWith('/')) continue; // URLs (s3://, hdfs://) are shared; relative paths are unknown
          const best = mountFor(c, cand.dir);
          let why: string | undefined;
          let path = cand.path;
          let key = `fs:${cand.dir}`;
          if (best === undefined) {
            why = "on no volume: the container's own filesystem, lost with the pod";
          } else {
            key = `vol:${best.index}`;
            path = [...c.path, 'volumeMounts', best.index];
            const spe = str(best.mount.subPathExpr);
            const per = perPodVolume(obj, s, best.volume);
            if (per !== undefined) why = `on volume ${best.volume}, ${per}`;
            else if (spe !== undefined && /POD_NAME|HOSTNAME|POD_UID/.test(spe)) why = `on volume ${best.volume} under the per-pod subPathExpr ${spe}`;
          }
          if (why === undefined || seen.has(key)) continue;
          seen.add(key);
          const what = cand.from === 'mount' ? `checkpoint mount ${cand.dir}` : `checkpoint directory ${cand.dir} (${cand.from})`;
          hits.push({
            message: `${what} is ${why}: ${many} sees its own copy, so a rank rescheduled elsewhere finds no checkpoint and silently starts over; mount one shared ReadWriteMany PVC at the same path in every pod (or write to object storage) and save from rank 0 only`,
            path,
          });
        }
      }
    }
    return hits;
  },
};
