import { LABEL } from '../../api/wire.ts';
import { WORKLOAD_KINDS, field, gangOf, isMultiRankTraining, isRecord, kindOf, list, podSites, schedulerOf, str } from '../pod-specs.ts';
import type { FieldPath, KubeObject, Rule, RuleHit } from '../rule.ts';

type Level = 'zone' | 'block' | 'rack' | 'node' | 'nvlink-domain';

const LEVEL_OF: Readonly<Record<string, Level>> = {
  [LABEL.zone]: 'zone',
  'topology.kubernetes.io/region': 'zone',
  'failure-domain.beta.kubernetes.io/zone': 'zone',
  'failure-domain.beta.kubernetes.io/region': 'zone',
  [LABEL.block]: 'block',
  [LABEL.rack]: 'rack',
  [LABEL.nvlinkDomain]: 'nvlink-domain',
  [LABEL.gfdClique]: 'nvlink-domain',
  [LABEL.hostname]: 'node',
};

const HARDWARE = new Set<string>([
  LABEL.gfdProduct,
  'nvidia.com/gpu.family',
  'nvidia.com/gpu.machine',
  LABEL.gpuModel,
  'cloud.google.com/gke-accelerator',
  'node.kubernetes.io/instance-type',
  'beta.kubernetes.io/instance-type',
  'karpenter.k8s.aws/instance-gpu-name',
]);

/** The topology level a placement label stands for (well-known keys, then any `…/zone|region|rack|block` key). */
function levelOf(key: string): Level | undefined {
  const known = LEVEL_OF[key];
  if (known !== undefined) return known;
  const last = key.slice(key.lastIndexOf('/') + 1);
  if (last === 'zone' || last === 'region') return 'zone';
  if (last === 'rack' || last === 'block') return last;
  return undefined;
}

/**
 * What to write instead of the label, or undefined when it is fine. A GPU-product pin is only flagged where SITS places
 * the pods (a TrainingJob, or templates naming one of its schedulers): for kube-scheduler a node selector is the only way.
 */
function advice(obj: KubeObject, key: string, bySits: boolean): string | undefined {
  const sits = kindOf(obj) === 'TrainingJob';
  const level = levelOf(key);
  if (level !== undefined) {
    return sits
      ? `set spec.topology.requiredLevel: ${level} (or preferredLevel: ${level}) and drop the label`
      : `run it as a TrainingJob with spec.topology.requiredLevel: ${level}, or put its pods in a PodGroup (label ${LABEL.podGroup}) with spec.topology.required: ${level}`;
  }
  if (HARDWARE.has(key) && (sits || bySits)) {
    return sits
      ? 'set spec.gpu.allowedModels (or minComputeCapability) and drop the label'
      : 'name the GPU models in annotation ai.sits2026.dev/gpu-models (a TrainingJob: spec.gpu.allowedModels), which the scheduler matches under every product alias';
  }
  return undefined;
}

const WHY =
  'pins the gang by label: any node carrying it will do, so ranks still spread across racks and NVLink domains, and the pin does not follow the cluster when that domain fails or fills';

export const topologyByNodeLabels: Rule = {
  id: 'topology-by-node-labels',
  severity: 'warning',
  seed: '001 §4.1',
  title: 'Training gang placed by zone/rack/hardware node labels instead of topology constraints',
  rationale:
    'A `nodeSelector` or required node affinity on `topology.kubernetes.io/zone`, `ai.sits2026.dev/rack|block|nvlink-domain` or a GPU product label ' +
    'fakes topology for a multi-pod training gang: the label is matched node by node, so the ranks are not kept close to each other, and the pin ' +
    'is static (seed 001 §4.1, anti-pattern one). Say what the gang needs instead: a TrainingJob with `spec.topology.requiredLevel`/`preferredLevel` ' +
    '(or a PodGroup with `spec.topology.required`/`preferred`), which the scheduler places as one unit in one domain, and `spec.gpu.allowedModels` ' +
    '(annotation `ai.sits2026.dev/gpu-models` on plain pods) for the GPU model. Single pods and non-training workloads are not flagged, nor ' +
    'GPU-product labels on pods that kube-scheduler places (for it a node selector is the only way to pick a model).',
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
          schedulerName: sits-scheduler
          nodeSelector:
            topology.kubernetes.io/zone: cn-hangzhou-b
            nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3
            command: [torchrun, --nnodes=4, train.py]
---
apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 8
  podTemplate:
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: ai.sits2026.dev/rack, operator: In, values: [rack-3]}
      containers:
      - {name: trainer, image: pytorch/pytorch:2.3}
`,
    good: `apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 8
  topology: {requiredLevel: rack}
  gpu: {allowedModels: [H100-SXM]}
  container: {image: pytorch/pytorch:2.3}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml}
spec:
  selector: {matchLabels: {app: web}}
  replicas: 3
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {topology.kubernetes.io/zone: cn-hangzhou-b}
      containers: [{name: web, image: nginx}]
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bert, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
          containers: [{name: pytorch, image: pytorch/pytorch:2.3, command: [torchrun, train.py], volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
          volumes: [{name: dshm, emptyDir: {medium: Memory}}]
`,
  },
  check(obj, ctx) {
    const sites = podSites(obj);
    const gang = isMultiRankTraining(obj) || sites.some((s) => gangOf(s) !== undefined);
    if (!gang) return [];
    const hits: RuleHit[] = [];
    const hit = (key: string, what: string, path: FieldPath, bySits: boolean): void => {
      const fix = advice(obj, key, bySits);
      if (fix !== undefined) hits.push({ message: `${what} ${WHY}; ${fix}`, path });
    };
    for (const s of sites) {
      const bySits = ctx.cluster.schedulerNames.includes(schedulerOf(obj, s).name);
      const sel = field(s.spec, 'nodeSelector');
      if (isRecord(sel)) for (const [k, v] of Object.entries(sel)) hit(k, `nodeSelector ${k}=${String(v)}`, [...s.path, 'nodeSelector', k], bySits);
      const termsPath = [...s.path, 'affinity', 'nodeAffinity', 'requiredDuringSchedulingIgnoredDuringExecution', 'nodeSelectorTerms'];
      const terms = field(field(field(field(s.spec, 'affinity'), 'nodeAffinity'), 'requiredDuringSchedulingIgnoredDuringExecution'), 'nodeSelectorTerms');
      list(terms).forEach((t, i) =>
        list(field(t, 'matchExpressions')).forEach((e, j) => {
          const key = str(field(e, 'key'));
          if (key === undefined || str(field(e, 'operator')) !== 'In') return;
          hit(key, `required node affinity ${key} In [${list(field(e, 'values')).map(String).join(', ')}]`, [...termsPath, i, 'matchExpressions', j], bySits);
        }),
      );
    }
    return hits;
  },
};
