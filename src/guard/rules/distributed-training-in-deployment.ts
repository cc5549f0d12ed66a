import { objectRef, int, field, kindOf, objectDistributedSignal } from '../pod-specs.ts';
import type { Rule } from '../rule.ts';

export const distributedTrainingInDeployment: Rule = {
  id: 'distributed-training-in-deployment',
  severity: 'warning',
  seed: '001 §4.3, §3.1',
  title: 'Stateful distributed training (torchrun, MASTER_ADDR, WORLD_SIZE) run as a Deployment or ReplicaSet',
  rationale:
    'DDP needs a fixed world: static ranks, one rank 0 that writes the checkpoint while the others wait at a barrier, and all ranks started ' +
    'together. A Deployment or ReplicaSet treats its pods as interchangeable: rolling updates and evictions replace them one at a time under new ' +
    'names, nothing starts them as a gang, and no pod is rank 0 for good (seed 001 §4.3, anti-pattern three; §3.1). Flagged when such an object ' +
    'has more than one replica and a container runs torchrun / `torch.distributed` / deepspeed / horovodrun / accelerate or sets MASTER_ADDR, ' +
    'WORLD_SIZE or NODE_RANK (NCCL_* alone is not taken for training: multi-GPU inference sets it too; nor are inference engines). Run it as a TrainingJob (gang placement, stable ranks, headless rendezvous, whole-gang restarts), ' +
    'or a PyTorchJob.',
  kinds: ['Deployment', 'ReplicaSet', 'ReplicationController'],
  fixtures: {
    bad: `apiVersion: apps/v1
kind: Deployment
metadata: {name: ddp, namespace: ml}
spec:
  replicas: 4
  selector: {matchLabels: {app: ddp}}
  template:
    metadata: {labels: {app: ddp}}
    spec:
      containers:
      - name: trainer
        image: pytorch/pytorch:2.3
        command: [torchrun, --nnodes=4, --nproc-per-node=8, train.py]
`,
    good: `apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: ml}
spec:
  selector: {matchLabels: {app: api}}
  replicas: 4
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: registry.example/api:1.0, command: [python, serve.py]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: single, namespace: ml}
spec:
  selector: {matchLabels: {app: single}}
  replicas: 1
  template:
    metadata: {labels: {app: single}}
    spec:
      containers: [{name: t, image: pytorch/pytorch:2.3, command: [torchrun, --nproc-per-node=8, train.py], volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
      volumes: [{name: dshm, emptyDir: {medium: Memory}}]
`,
  },
  check(obj) {
    const replicas = int(field(obj.spec, 'replicas')) ?? 1;
    if (replicas <= 1) return [];
    const sig = objectDistributedSignal(obj);
    if (sig === undefined) return [];
    return [
      {
        message: `${objectRef(obj)} has ${replicas} replicas and ${sig.why}: a ${kindOf(obj)} replaces its pods one at a time with no stable rank and no gang start, which breaks a DDP world and its checkpoint coordination; run it as a TrainingJob (or PyTorchJob) instead`,
        path: sig.path,
      },
    ];
  },
};
