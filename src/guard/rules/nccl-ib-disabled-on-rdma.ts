import { WORKLOAD_KINDS, envOf, field, isSitsKind, kindOf, podSites } from '../pod-specs.ts';
import type { Rule, RuleHit } from '../rule.ts';

export const ncclIbDisabledOnRdma: Rule = {
  id: 'nccl-ib-disabled-on-rdma',
  severity: 'warning',
  seed: '001 §3.2',
  title: 'NCCL_IB_DISABLE=1 on a cluster with RDMA (InfiniBand/RoCE) nodes',
  rationale:
    '`NCCL_IB_DISABLE=1` makes NCCL fall back from InfiniBand/RoCE to TCP sockets: all-reduce gets many times slower and collectives run into ' +
    'their timeout on every link hiccup, which with fail-fast error handling restarts or evicts the pods (seed 001 §3.2, whose configuration ' +
    'keeps `NCCL_IB_DISABLE=0`). Needs the cluster fact `rdma` (the webhook knows it from the nodes; `sits lint` from a flag); without it the ' +
    'rule is silent. Remove the variable (a TrainingJob: `spec.nccl.ibDisable: false`, the default) and let NCCL use the RDMA devices.',
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
            env: [{name: NCCL_IB_DISABLE, value: "1"}]
---
apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 4
  nccl: {ibDisable: true}
  container: {image: pytorch/pytorch:2.3}
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
            env: [{name: NCCL_IB_DISABLE, value: "0"}]
            volumeMounts: [{name: dshm, mountPath: /dev/shm}]
          volumes: [{name: dshm, emptyDir: {medium: Memory}}]
---
apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 4
  nccl: {ibDisable: true}
  container:
    image: pytorch/pytorch:2.3
    env: [{name: NCCL_IB_DISABLE, value: "0"}]
`,
  },
  check(obj, ctx) {
    if (ctx.cluster.rdma !== true) return [];
    const hits: RuleHit[] = [];
    const msg = (what: string): string =>
      `${what} on a cluster with RDMA (InfiniBand/RoCE) nodes: NCCL falls back to TCP sockets, all-reduce slows many times over and collectives time out on link hiccups; remove it and let NCCL use the RDMA devices`;
    for (const s of podSites(obj)) {
      for (const c of s.containers) {
        const e = envOf(c).get('NCCL_IB_DISABLE');
        if (e !== undefined) {
          if (e.value?.trim() === '1') hits.push({ message: msg('NCCL_IB_DISABLE=1'), path: e.valuePath });
        } else if (c.implied !== undefined && kindOf(obj) === 'TrainingJob' && isSitsKind(obj) && field(field(obj.spec, 'nccl'), 'ibDisable') === true) {
          hits.push({ message: msg('spec.nccl.ibDisable: true (NCCL_IB_DISABLE=1)'), path: ['spec', 'nccl', 'ibDisable'] });
        }
      }
    }
    return hits;
  },
};
