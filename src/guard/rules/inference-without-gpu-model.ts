import { ANNOTATION, LABEL } from '../../api/wire.ts';
import { field, inferenceEngine, isRecord, isSitsKind, kindOf, list, podGpus, podSites, str, type PodSite } from '../pod-specs.ts';
import type { FieldPath, KubeObject, Rule } from '../rule.ts';

/** Node labels that pin a GPU model (or an instance type, which implies one). */
const MODEL_LABELS = new Set<string>([
  LABEL.gfdProduct,
  LABEL.gpuModel,
  'nvidia.com/gpu.family',
  'cloud.google.com/gke-accelerator',
  'node.kubernetes.io/instance-type',
  'karpenter.k8s.aws/instance-gpu-name',
  LABEL.gfdMajor,
]);

/** True when the pod template pins a GPU model: a model label in nodeSelector or required node affinity, or SITS's gpu-models annotation. */
function pinsModel(s: PodSite): boolean {
  if (s.annotations[ANNOTATION.gpuModels] !== undefined) return true;
  const sel = field(s.spec, 'nodeSelector');
  if (isRecord(sel) && Object.keys(sel).some((k) => MODEL_LABELS.has(k))) return true;
  const terms = field(field(field(field(s.spec, 'affinity'), 'nodeAffinity'), 'requiredDuringSchedulingIgnoredDuringExecution'), 'nodeSelectorTerms');
  return list(terms).some((t) => list(field(t, 'matchExpressions')).some((e) => MODEL_LABELS.has(str(field(e, 'key')) ?? '')));
}

/** Engines whose artefacts are built for one GPU architecture (Triton, as in the seed; TensorRT and TensorRT-LLM plans). */
const ARCH_BOUND = new Set(['tritonserver', 'tensorrt-llm', 'tensorrtllm']);

/** Why a SITS serving spec is bound to one architecture: the Triton runtime, or TensorRT weights. */
function sitsArchBound(spec: unknown): string | undefined {
  if (str(field(spec, 'runtime')) === 'triton') return 'triton';
  if (str(field(field(spec, 'model'), 'format')) === 'tensorrt') return `${str(field(spec, 'runtime')) ?? 'inference'} (TensorRT weights)`;
  return undefined;
}

function message(models: readonly string[], engine: string, fix: string): string {
  return `the cluster mixes GPU models (${models.join(', ')}) and this ${engine} runtime names none: an engine built for one architecture (compiled kernels, a TensorRT plan) lands on whichever model has room and silently degrades or fails to load (seed 001 §2.4); ${fix}`;
}

export const inferenceWithoutGpuModel: Rule = {
  id: 'inference-without-gpu-model',
  severity: 'warning',
  seed: '001 §2.4',
  title: 'Architecture-bound inference engine (Triton, TensorRT) without a GPU-model constraint on a cluster with several GPU models',
  rationale:
    'Some serving engines are built for one CUDA architecture (`sm_75` T4, `sm_80` A10/A100, `sm_90` H100): Triton model repositories and ' +
    'TensorRT / TensorRT-LLM plans. On a mixed cluster a replica without a model constraint lands on any GPU and silently falls back or fails ' +
    'to load (seed 001 §2.4). Needs the cluster fact `gpuModels` (more than one model); silent without it. Flagged: an InferenceService or ' +
    'BatchInferenceJob with `runtime: triton` or `model.format: tensorrt` and no `spec.gpu.allowedModels`, and a GPU workload running ' +
    '`tritonserver` or TensorRT-LLM (by image or command; a KServe InferenceService by its predictor containers) whose pods pin no model (a `nodeSelector` or required affinity on ' +
    '`nvidia.com/gpu.product`/`ai.sits2026.dev/gpu-model`, or annotation `ai.sits2026.dev/gpu-models`). vLLM, TGI and SGLang with ordinary ' +
    'weights run on several architectures and are not flagged. A minimum compute capability alone is not enough: it admits every newer ' +
    'architecture. Name the models the engine was built for.',
  kinds: ['InferenceService', 'BatchInferenceJob', 'Deployment', 'StatefulSet', 'ReplicaSet', 'Pod', 'LeaderWorkerSet'],
  fixtures: {
    bad: `apiVersion: ai.sits2026.dev/v1
kind: InferenceService
metadata: {name: llama, namespace: ml}
spec:
  runtime: triton
  model: {uri: s3://models/llama-trt}
  gpu: {minComputeCapability: "7.5"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: trtllm, namespace: ml}
spec:
  selector: {matchLabels: {app: trtllm}}
  replicas: 2
  template:
    metadata: {labels: {app: trtllm}}
    spec:
      containers:
      - name: triton
        image: nvcr.io/nvidia/tritonserver:24.05-trtllm-python-py3
        command: [tritonserver, --model-repository=/models]
        resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: resnet, namespace: ml}
spec:
  predictor:
    containers:
    - name: kserve-container
      image: nvcr.io/nvidia/tritonserver:24.05-py3
      resources: {limits: {nvidia.com/gpu: 1}}
`,
    good: `apiVersion: ai.sits2026.dev/v1
kind: InferenceService
metadata: {name: llama, namespace: ml}
spec:
  runtime: triton
  model: {uri: s3://models/llama-trt}
  gpu: {allowedModels: [L4]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: ml}
spec:
  selector: {matchLabels: {app: vllm}}
  replicas: 2
  template:
    metadata: {labels: {app: vllm}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.0
        readinessProbe: {httpGet: {path: /health, port: 8000}}
        resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: triton, namespace: ml}
spec:
  selector: {matchLabels: {app: triton}}
  replicas: 2
  template:
    metadata:
      labels: {app: triton}
      annotations: {ai.sits2026.dev/gpu-models: L4}
    spec:
      containers:
      - name: triton
        image: nvcr.io/nvidia/tritonserver:24.05-py3
        readinessProbe: {httpGet: {path: /health, port: 8000}}
        resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: triton-a100, namespace: ml}
spec:
  selector: {matchLabels: {app: triton-a100}}
  template:
    metadata: {labels: {app: triton-a100}}
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
      containers:
      - {name: triton, image: nvcr.io/nvidia/tritonserver:24.05-py3, resources: {limits: {nvidia.com/gpu: 1}}, readinessProbe: {httpGet: {path: /health, port: 8000}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: embed-cpu, namespace: ml}
spec:
  selector: {matchLabels: {app: embed-cpu}}
  template:
    metadata: {labels: {app: embed-cpu}}
    spec:
      containers: [{name: tei, image: ghcr.io/huggingface/text-generation-inference:2.0, readinessProbe: {httpGet: {path: /health, port: 80}}}]
`,
  },
  check(obj, ctx) {
    const models = [...new Set(ctx.cluster.gpuModels ?? [])];
    if (models.length < 2) return [];
    if (isSitsKind(obj) && (kindOf(obj) === 'InferenceService' || kindOf(obj) === 'BatchInferenceJob')) {
      const spec = obj.spec;
      const gpus = field(spec, kindOf(obj) === 'InferenceService' ? 'gpusPerReplica' : 'gpusPerWorker');
      if (gpus === 0) return [];
      const gpu = field(spec, 'gpu');
      if (list(field(gpu, 'allowedModels')).length > 0) return [];
      if (podSites(obj).some((s) => !s.synthetic && pinsModel(s))) return [];
      const engine = sitsArchBound(spec);
      if (engine === undefined) return [];
      const path: FieldPath = isRecord(gpu) ? ['spec', 'gpu'] : isRecord(spec) ? ['spec'] : [];
      return [{ message: message(models, engine, `set spec.gpu.allowedModels to the model(s) it was built for, e.g. [${models[0] ?? ''}]`), path }];
    }
    return inferenceWorkloadHits(obj, models);
  },
};

function inferenceWorkloadHits(obj: KubeObject, models: readonly string[]): { message: string; path: FieldPath }[] {
  for (const s of podSites(obj)) {
    if (podGpus(s) === 0 || pinsModel(s)) continue;
    for (const c of s.containers) {
      if (c.init) continue;
      const engine = inferenceEngine(c);
      if (engine === undefined || !ARCH_BOUND.has(engine)) continue;
      return [
        {
          message: message(models, engine, `add annotation ${ANNOTATION.gpuModels}: "<model>" to the pod template (or a nodeSelector on ${LABEL.gfdProduct})`),
          path: c.container.image === undefined ? c.path : [...c.path, 'image'],
        },
      ];
    }
  }
  return [];
}
