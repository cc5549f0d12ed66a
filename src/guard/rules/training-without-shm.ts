import { distributedSignal, field, isSitsKind, kindOf, mountsOf, podSites, str, volumesOf, type ContainerSite, type PodSite } from '../pod-specs.ts';
import type { FieldPath, KubeObject, Rule, RuleHit } from '../rule.ts';
import { dataLoaderWorkers } from './dataloader-workers-exceed-cpu.ts';

const FIX = 'add volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}] and volumeMounts: [{name: dshm, mountPath: /dev/shm}] to the container';

/** Kinds whose pods run PyTorch training: every pod template of them is a training pod. */
const isPyTorchTrainingKind = (o: KubeObject): boolean => (kindOf(o) === 'TrainingJob' && isSitsKind(o)) || kindOf(o) === 'PyTorchJob';

/** Why a container is a training process that shares tensors through /dev/shm, or undefined. */
function trainingWhy(o: KubeObject, s: PodSite, c: ContainerSite): { readonly why: string; readonly path: FieldPath } | undefined {
  const sig = distributedSignal(c);
  if (sig !== undefined) return sig;
  const dl = dataLoaderWorkers(c, false);
  if (dl !== undefined && dl.workers > 0) return { why: `starts ${dl.workers} DataLoader workers (${dl.from})`, path: dl.path };
  if (isPyTorchTrainingKind(o)) {
    const main = s.containers.filter((x) => !x.init);
    const trainer = main.find((x) => x.name === 'trainer' || x.name === 'pytorch') ?? main[0];
    if (trainer === c) return { why: `is the training container of a ${kindOf(o)}`, path: c.path };
  }
  return undefined;
}

/** The /dev/shm mount of a container and whether it is memory-backed (an emptyDir of medium Memory, the host's /dev/shm). */
function shmOf(s: PodSite, c: ContainerSite): { readonly memory: boolean; readonly path: FieldPath } | 'none' {
  if (s.spec.hostIPC === true) return { memory: true, path: [...s.path, 'hostIPC'] };
  const m = mountsOf(c).get('/dev/shm');
  if (m === undefined) return 'none';
  const vol = volumesOf(s).get(m.volume);
  const path = [...c.path, 'volumeMounts', m.index];
  if (vol === undefined) return { memory: true, path }; // a missing volume is the apiserver's error, not a shm problem
  const ed = field(vol, 'emptyDir');
  if (ed !== undefined) return { memory: str(field(ed, 'medium')) === 'Memory', path };
  return { memory: true, path }; // hostPath /dev/shm, a CSI RAM disk: the user chose
}

export const trainingWithoutShm: Rule = {
  id: 'training-without-shm',
  severity: 'warning',
  seed: '001 §1',
  title: 'A PyTorch training pod without a memory-backed /dev/shm (DataLoader workers die with "bus error")',
  rationale:
    'Container runtimes give a pod 64 MiB of `/dev/shm`. PyTorch DataLoader worker processes hand batches to the training process through ' +
    'shared memory, and NCCL uses it between local ranks: a few batches of images fill 64 MiB and the workers die with `bus error` / ' +
    '"DataLoader worker (pid N) is killed by signal: Bus error" (seed 001 §1, a hidden cause of crashes). A training pod is: every ' +
    'pod template of a TrainingJob (`spec.podTemplate`) or PyTorchJob (its `trainer`/`pytorch` container, else the first), and any ' +
    'container of any pod that runs a distributed launcher (`torchrun`, `torch.distributed`, `deepspeed`, `accelerate`, `horovodrun`), sets ' +
    '`MASTER_ADDR`/`WORLD_SIZE`, or starts DataLoader workers (`--num-workers N`, `DATALOADER_NUM_WORKERS`, `num_workers=N`, N > 0). It is ' +
    'fine with an `emptyDir: {medium: Memory}` mounted at `/dev/shm` (counted against the memory limit: size it with `sizeLimit`), another ' +
    'volume mounted there, or `hostIPC: true`; an `emptyDir` without `medium: Memory` is disk, not shared memory, and is flagged. A ' +
    'SITS TrainingJob gets a memory-backed `/dev/shm` on its trainer from the controller when it mounts nothing there, so only a ' +
    'disk-backed one is flagged in it.',
  kinds: ['Pod', 'Deployment', 'StatefulSet', 'ReplicaSet', 'Job', 'CronJob', 'TrainingJob', 'PyTorchJob', 'LeaderWorkerSet'],
  fixtures: {
    bad: `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: resnet, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3
            command: [torchrun, --nproc-per-node, "8", train.py]
---
apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers:
  - name: trainer
    image: pytorch/pytorch:2.3
    args: [python, train.py, --num-workers, "4"]
    volumeMounts: [{name: shm, mountPath: /dev/shm}]
  volumes: [{name: shm, emptyDir: {}}]
`,
    good: `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: resnet, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3
            command: [torchrun, --nproc-per-node, "8", train.py]
            volumeMounts: [{name: dshm, mountPath: /dev/shm}]
          volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}]
---
apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers:
  - name: trainer
    image: pytorch/pytorch:2.3
    args: [python, train.py, --num-workers, "0"]
`,
  },
  check(obj) {
    const hits: RuleHit[] = [];
    for (const s of podSites(obj)) {
      // A typed container (a TrainingJob without podTemplate, a TrainJob) has no volumes a user could add.
      if (s.synthetic) continue;
      for (const c of s.containers) {
        if (c.init) continue;
        const why = trainingWhy(obj, s, c);
        if (why === undefined) continue;
        const shm = shmOf(s, c);
        const name = c.name || '(unnamed)';
        // SITS's TrainingJob controller mounts a memory-backed /dev/shm on the trainer it finds nothing on.
        if (shm === 'none' && kindOf(obj) === 'TrainingJob' && isSitsKind(obj)) continue;
        if (shm === 'none')
          hits.push({
            message: `container ${name} ${why.why} but mounts nothing at /dev/shm: the runtime's default is 64 MiB and DataLoader workers die with "bus error" when it fills; ${FIX}`,
            path: c.path,
          });
        else if (!shm.memory)
          hits.push({
            message: `container ${name} ${why.why} and mounts a disk-backed emptyDir at /dev/shm: shared memory needs RAM; set medium: Memory on that emptyDir (with a sizeLimit, counted against the memory limit)`,
            path: shm.path,
          });
      }
    }
    return hits;
  },
};
