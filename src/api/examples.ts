// Example manifests of every kind and a catalogue of invalid ones with the field each must be
// rejected on. Unit tests run them through validateResource, the e2e test through a real apiserver,
// and docs/crds.md shows the valid ones: one list keeps the three in agreement.
import type { ResourceKind } from './kinds.ts';

type Manifest = Record<string, unknown>;

/** Seed 000's example, exactly as written there. */
export const SEED_TRAINING_JOB: Manifest = {
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'TrainingJob',
  metadata: { name: 'bert-large-finetune' },
  spec: {
    topology: { strategy: 'ring-allreduce' },
    replicas: 8,
    resources: { 'nvidia.com/gpu': 1, 'memory-gpu-optimized': '32Gi' },
    container: {
      image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1',
      command: ['torchrun', '--nproc_per_node=1', 'train.py'],
    },
  },
};

export const ELASTIC_TRAINING_JOB: Manifest = {
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'TrainingJob',
  metadata: { name: 'llama-elastic' },
  spec: {
    topology: { strategy: 'ring-allreduce', requiredLevel: 'rack', preferredLevel: 'node' },
    replicas: 2,
    minReplicas: 2,
    maxReplicas: 4,
    gpusPerReplica: 8,
    resources: { 'nvidia.com/gpu': 8, cpu: 32, memory: '512Gi' },
    gpu: { allowedModels: ['NVIDIA-H100-80GB-HBM3', 'NVIDIA-A800-SXM4-80GB'], minComputeCapability: '8.0' },
    restartPolicy: 'ExitCode',
    backoffLimit: 5,
    exitCodes: { retryable: [137, 143], permanent: [1, 2] },
    activeDeadlineSeconds: 86400,
    ttlSecondsAfterFinished: 3600,
    cleanPodPolicy: 'All',
    queue: 'research',
    priorityClassName: 'training-high',
    masterPort: 29400,
    nccl: { socketIfname: 'eth0', debug: 'WARN' },
    podTemplate: {
      metadata: { labels: { team: 'nlp' } },
      spec: {
        containers: [
          {
            name: 'trainer',
            image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1',
            command: ['torchrun', 'train.py'],
            env: [{ name: 'NCCL_SOCKET_TIMEOUT', value: '600' }],
            volumeMounts: [{ name: 'ckpt', mountPath: '/ckpt' }],
          },
        ],
        volumes: [{ name: 'ckpt', persistentVolumeClaim: { claimName: 'ckpt' } }],
      },
    },
  },
};

export const EXAMPLE_INFERENCE_SERVICE: Manifest = {
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'InferenceService',
  metadata: { name: 'qwen-chat' },
  spec: {
    runtime: 'vllm',
    model: {
      uri: 'hf://Qwen/Qwen2.5-7B-Instruct',
      name: 'qwen-chat',
      maxModelLen: 32768,
      adapters: [{ name: 'support-bot', uri: 's3://adapters/support-bot/' }],
    },
    replicas: 2,
    minReplicas: 1,
    maxReplicas: 8,
    gpusPerReplica: 2,
    tensorParallelSize: 2,
    gpu: { minComputeCapability: '8.0' },
    autoscaling: { tokensPerSecondPerReplica: 2500, queueDepthPerReplica: 16 },
    profile: 'low-latency',
    queue: 'serving',
  },
};

export const EXAMPLE_DATA_PIPELINE: Manifest = {
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'DataPipeline',
  metadata: { name: 'caption-images' },
  spec: {
    input: { uri: 's3://raw/images/', format: 'webdataset' },
    output: { uri: 's3://curated/captions/', format: 'parquet' },
    stages: [
      { name: 'decode', device: 'cpu', mode: 'streaming', parallelism: 8, container: { image: 'registry.sits2026.dev/data/decode:1.4' } },
      {
        name: 'caption',
        dependsOn: ['decode'],
        device: 'gpu',
        mode: 'streaming',
        parallelism: 4,
        acceleratorsPerReplica: 1,
        container: { image: 'registry.sits2026.dev/ml/captioner:0.9' },
      },
      {
        name: 'filter',
        dependsOn: ['caption'],
        device: 'npu',
        mode: 'streaming',
        container: { image: 'registry.sits2026.dev/data/filter-npu:2.1' },
      },
    ],
    queue: 'data',
  },
};

export const EXAMPLE_BATCH_INFERENCE_JOB: Manifest = {
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'BatchInferenceJob',
  metadata: { name: 'summarise-tickets' },
  spec: {
    runtime: 'vllm',
    model: { uri: 'hf://meta-llama/Llama-3.1-8B-Instruct' },
    input: { uri: 's3://tickets/2026-01/', format: 'jsonl' },
    output: { uri: 's3://summaries/2026-01/' },
    batching: { batchSize: 64, seqLen: 8192, kvCachePolicy: 'retain', dynamic: { minBatchSize: 8, maxBatchSize: 256, targetLatencyMs: 4000 } },
    workers: 4,
    gpusPerWorker: 1,
    timeSlicing: { quantumMs: 30 },
    sla: { class: 'P1', deadlineSeconds: 7200, accuracyTolerance: 0.95 },
    queue: 'analytics',
  },
};

export const EXAMPLE_QUEUE: Manifest = {
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'Queue',
  metadata: { name: 'research' },
  spec: {
    tenant: 'nlp-team',
    tier: 'gold',
    cohort: 'gpu-pool',
    resources: [
      { name: 'nvidia.com/gpu', nominal: 64, borrowingLimit: 32, lendingLimit: 16, guaranteed: 16 },
      { name: 'cpu', nominal: 1024 },
      { name: 'memory', nominal: '8Ti' },
    ],
    gpuModels: [
      { model: 'NVIDIA-H100-80GB-HBM3', nominal: 32, lendingLimit: 8 },
      { model: 'NVIDIA-A800-SXM4-80GB', nominal: 32 },
    ],
    priorityClasses: ['training-high', 'training-low'],
    defaultPriorityClassName: 'training-low',
    reserveAfterSeconds: 3600,
  },
};

/** A gang as the TrainingJob controller writes it (users may write their own). */
export const EXAMPLE_POD_GROUP: Manifest = {
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'PodGroup',
  metadata: { name: 'bert-large-finetune' },
  spec: { minMember: 8, queue: 'research', topology: { preferred: 'nvlink-domain' } },
};

/** One valid example per kind (the seed's TrainingJob for TrainingJob). */
export const EXAMPLES: Readonly<Record<ResourceKind, Manifest>> = {
  TrainingJob: SEED_TRAINING_JOB,
  InferenceService: EXAMPLE_INFERENCE_SERVICE,
  DataPipeline: EXAMPLE_DATA_PIPELINE,
  BatchInferenceJob: EXAMPLE_BATCH_INFERENCE_JOB,
  Queue: EXAMPLE_QUEUE,
  PodGroup: EXAMPLE_POD_GROUP,
};

export interface InvalidCase {
  name: string;
  kind: ResourceKind;
  manifest: Manifest;
  /** The field path the error must name, as the apiserver prints it. */
  path: string;
}

function patchSpec(base: Manifest, name: string, patch: (spec: Record<string, unknown>) => void): Manifest {
  const copy = structuredClone(base);
  copy.metadata = { name };
  patch(copy.spec as Record<string, unknown>);
  return copy;
}

function invalid(kind: ResourceKind, name: string, path: string, base: Manifest, patch: (spec: Record<string, unknown>) => void): InvalidCase {
  return { name, kind, path, manifest: patchSpec(base, `bad-${kind.toLowerCase()}-${INVALID_COUNTER.next++}`, patch) };
}
const INVALID_COUNTER = { next: 1 };

const obj = (x: unknown) => x as Record<string, unknown>;
const list = (x: unknown) => x as Record<string, unknown>[];

/** Invalid manifests; each must be rejected naming `path`. The first four are issue 5's list. */
export const INVALID_CASES: readonly InvalidCase[] = [
  invalid('TrainingJob', 'replicas 0', 'spec.replicas', SEED_TRAINING_JOB, (s) => (s.replicas = 0)),
  invalid('TrainingJob', 'minReplicas > maxReplicas', 'spec.minReplicas', SEED_TRAINING_JOB, (s) => {
    s.minReplicas = 6;
    s.maxReplicas = 4;
    s.replicas = 5;
  }),
  invalid('TrainingJob', 'unknown topology strategy', 'spec.topology.strategy', SEED_TRAINING_JOB, (s) => (s.topology = { strategy: 'butterfly-allreduce' })),
  invalid('TrainingJob', 'negative GPUs in resources', 'spec.resources', SEED_TRAINING_JOB, (s) => (obj(s.resources)['nvidia.com/gpu'] = -1)),
  invalid('TrainingJob', 'negative gpusPerReplica', 'spec.gpusPerReplica', SEED_TRAINING_JOB, (s) => {
    delete obj(s.resources)['nvidia.com/gpu'];
    s.gpusPerReplica = -1;
  }),
  invalid('TrainingJob', 'replicas above maxReplicas', 'spec.replicas', SEED_TRAINING_JOB, (s) => (s.maxReplicas = 4)),
  invalid('TrainingJob', 'fractional GPUs', 'spec.resources', SEED_TRAINING_JOB, (s) => (obj(s.resources)['nvidia.com/gpu'] = '1500m')),
  invalid('TrainingJob', 'gpusPerReplica disagrees with resources', 'spec.gpusPerReplica', SEED_TRAINING_JOB, (s) => (s.gpusPerReplica = 2)),
  invalid('TrainingJob', 'neither container nor podTemplate', 'spec.container', SEED_TRAINING_JOB, (s) => delete s.container),
  invalid('TrainingJob', 'unknown restartPolicy', 'spec.restartPolicy', SEED_TRAINING_JOB, (s) => (s.restartPolicy = 'Always')),
  invalid('TrainingJob', 'exitCodes without ExitCode policy', 'spec.exitCodes', SEED_TRAINING_JOB, (s) => (s.exitCodes = { retryable: [137] })),
  invalid('TrainingJob', 'exit code both retryable and permanent', 'spec.exitCodes.retryable', SEED_TRAINING_JOB, (s) => {
    s.restartPolicy = 'ExitCode';
    s.exitCodes = { retryable: [137, 1], permanent: [1] };
  }),
  invalid('TrainingJob', 'preferred topology wider than required', 'spec.topology.preferredLevel', SEED_TRAINING_JOB, (s) => {
    s.topology = { strategy: 'ring-allreduce', requiredLevel: 'node', preferredLevel: 'rack' };
  }),
  invalid('TrainingJob', 'unknown topology level', 'spec.topology.requiredLevel', SEED_TRAINING_JOB, (s) => {
    s.topology = { strategy: 'ring-allreduce', requiredLevel: 'datacenter' };
  }),
  invalid('TrainingJob', 'checkpoint with two volumes', 'spec.checkpoint.volume.claimName', SEED_TRAINING_JOB, (s) => {
    s.checkpoint = { volume: { claimName: 'ckpt', claimTemplate: { size: '100Gi' } }, volumeSnapshotClassName: 'csi-snapclass' };
  }),
  invalid('TrainingJob', 'checkpoint without a shared volume', 'spec.checkpoint.volume', SEED_TRAINING_JOB, (s) => {
    s.checkpoint = { volumeSnapshotClassName: 'csi-snapclass' };
  }),
  invalid('TrainingJob', 'model smaller than a million parameters', 'spec.model.parameters', SEED_TRAINING_JOB, (s) => (s.model = { parameters: 1000 })),
  invalid('TrainingJob', 'unknown model kind', 'spec.model.kind', SEED_TRAINING_JOB, (s) => (s.model = { parameters: 1.3e9, kind: 'mamba' })),
  invalid('TrainingJob', 'bad compute capability', 'spec.gpu.minComputeCapability', SEED_TRAINING_JOB, (s) => (s.gpu = { minComputeCapability: 'sm_80' })),
  invalid('TrainingJob', 'duplicate env names', 'spec.container.env[1]', SEED_TRAINING_JOB, (s) => {
    obj(s.container).env = [
      { name: 'NCCL_DEBUG', value: 'INFO' },
      { name: 'NCCL_DEBUG', value: 'WARN' },
    ];
  }),
  invalid('TrainingJob', 'master port out of range', 'spec.masterPort', SEED_TRAINING_JOB, (s) => (s.masterPort = 70000)),
  invalid('TrainingJob', 'env with value and valueFrom', 'spec.container.env[0].valueFrom', SEED_TRAINING_JOB, (s) => {
    obj(s.container).env = [{ name: 'HF_TOKEN', value: 'x', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } }];
  }),
  {
    name: 'name too long for pod hostnames',
    kind: 'TrainingJob',
    path: 'metadata',
    manifest: { ...SEED_TRAINING_JOB, metadata: { name: `bert-${'x'.repeat(44)}` } },
  },
  {
    name: 'name with a dot (the headless Service needs a DNS label)',
    kind: 'TrainingJob',
    path: 'metadata',
    manifest: { ...SEED_TRAINING_JOB, metadata: { name: 'bert.large' } },
  },
  invalid('InferenceService', 'unknown runtime', 'spec.runtime', EXAMPLE_INFERENCE_SERVICE, (s) => (s.runtime = 'sglang')),
  invalid('InferenceService', 'minReplicas > maxReplicas', 'spec.minReplicas', EXAMPLE_INFERENCE_SERVICE, (s) => {
    s.minReplicas = 9;
    s.replicas = 9;
  }),
  invalid('InferenceService', 'replicas below minReplicas', 'spec.replicas', EXAMPLE_INFERENCE_SERVICE, (s) => (s.replicas = 0)),
  invalid(
    'InferenceService',
    'autoscaling without a target',
    'spec.autoscaling.tokensPerSecondPerReplica',
    EXAMPLE_INFERENCE_SERVICE,
    (s) => (s.autoscaling = {}),
  ),
  invalid(
    'InferenceService',
    'autoscaling mode keda without a Prometheus',
    'spec.autoscaling.keda',
    EXAMPLE_INFERENCE_SERVICE,
    (s) => (s.autoscaling = { mode: 'keda' }),
  ),
  invalid('InferenceService', 'autoscaling without maxReplicas', 'spec.maxReplicas', EXAMPLE_INFERENCE_SERVICE, (s) => delete s.maxReplicas),
  invalid(
    'InferenceService',
    'tensorParallelSize does not divide GPUs',
    'spec.tensorParallelSize',
    EXAMPLE_INFERENCE_SERVICE,
    (s) => (s.tensorParallelSize = 3),
  ),
  invalid(
    'InferenceService',
    'a rollout that cannot progress',
    'spec.rollout.maxSurge',
    EXAMPLE_INFERENCE_SERVICE,
    (s) => (s.rollout = { maxSurge: 0, maxUnavailable: 0 }),
  ),
  invalid('InferenceService', 'LoRA adapters on triton', 'spec.model.adapters', EXAMPLE_INFERENCE_SERVICE, (s) => (s.runtime = 'triton')),
  invalid(
    'DataPipeline',
    'dependsOn a later stage',
    'spec.stages',
    EXAMPLE_DATA_PIPELINE,
    (s) => (list(s.stages)[0] = { ...list(s.stages)[0], dependsOn: ['filter'] }),
  ),
  invalid(
    'DataPipeline',
    'a cycle in dependsOn',
    'spec.stages',
    EXAMPLE_DATA_PIPELINE,
    (s) => (list(s.stages)[0] = { ...list(s.stages)[0], dependsOn: ['caption'] }),
  ),
  invalid(
    'DataPipeline',
    'a stage depending on itself',
    'spec.stages',
    EXAMPLE_DATA_PIPELINE,
    (s) => (list(s.stages)[1] = { ...list(s.stages)[1], dependsOn: ['caption'] }),
  ),
  invalid('DataPipeline', 'artifact with both a snapshot and a path', 'spec.stages[0].outputs.artifacts[0].volumeSnapshot', EXAMPLE_DATA_PIPELINE, (s) => {
    list(s.stages)[0] = {
      ...list(s.stages)[0],
      outputs: { artifacts: [{ name: 'shards', volumeSnapshot: { claimName: 'work' }, path: { claimName: 'work', subPath: 'x' } }] },
    };
  }),
  invalid(
    'DataPipeline',
    'dependsOn a missing stage',
    'spec.stages',
    EXAMPLE_DATA_PIPELINE,
    (s) => (list(s.stages)[1] = { ...list(s.stages)[1], dependsOn: ['nope'] }),
  ),
  invalid(
    'DataPipeline',
    'duplicate stage names',
    'spec.stages[2]',
    EXAMPLE_DATA_PIPELINE,
    (s) => (list(s.stages)[2] = { ...list(s.stages)[2], name: 'caption' }),
  ),
  invalid('DataPipeline', 'cpu stage with accelerators', 'spec.stages[0].acceleratorsPerReplica', EXAMPLE_DATA_PIPELINE, (s) => {
    list(s.stages)[0] = { ...list(s.stages)[0], acceleratorsPerReplica: 1 };
  }),
  invalid('DataPipeline', 'stage with two workloads', 'spec.stages[1].container', EXAMPLE_DATA_PIPELINE, (s) => {
    list(s.stages)[1] = { ...list(s.stages)[1], workload: { kind: 'BatchInferenceJob', spec: {} } };
  }),
  invalid('DataPipeline', 'adapter stage with a resource profile', 'spec.stages[2].adapter', EXAMPLE_DATA_PIPELINE, (s) => {
    list(s.stages)[2] = {
      name: 'filter',
      dependsOn: ['caption'],
      adapter: { inferenceService: 'chat', name: 'support', uri: 'pvc://adapters/support' },
      resourceProfile: 'auto',
    };
  }),
  invalid('DataPipeline', 'no stages', 'spec.stages', EXAMPLE_DATA_PIPELINE, (s) => (s.stages = [])),
  invalid('DataPipeline', 'gpu requirements on a cpu stage', 'spec.stages[0].gpu', EXAMPLE_DATA_PIPELINE, (s) => {
    list(s.stages)[0] = { ...list(s.stages)[0], gpu: { minComputeCapability: '8.0' } };
  }),
  { name: 'name too long for stage pods', kind: 'DataPipeline', path: 'metadata', manifest: { ...EXAMPLE_DATA_PIPELINE, metadata: { name: 'x'.repeat(37) } } },
  {
    name: 'scheduled pipeline name too long for run names',
    kind: 'DataPipeline',
    path: 'metadata',
    manifest: {
      ...EXAMPLE_DATA_PIPELINE,
      metadata: { name: 'x'.repeat(28) },
      spec: { ...(EXAMPLE_DATA_PIPELINE.spec as object), schedule: { cron: '@daily' } },
    },
  },
  invalid('BatchInferenceJob', 'batchSize above 2048', 'spec.batching.batchSize', EXAMPLE_BATCH_INFERENCE_JOB, (s) => {
    s.batching = { batchSize: 4096 };
  }),
  invalid('BatchInferenceJob', 'seqLen above 32768', 'spec.batching.seqLen', EXAMPLE_BATCH_INFERENCE_JOB, (s) => (s.batching = { seqLen: 65536 })),
  invalid(
    'BatchInferenceJob',
    'unknown kvCachePolicy',
    'spec.batching.kvCachePolicy',
    EXAMPLE_BATCH_INFERENCE_JOB,
    (s) => (s.batching = { kvCachePolicy: 'spill' }),
  ),
  invalid('BatchInferenceJob', 'batchSize outside dynamic bounds', 'spec.batching.batchSize', EXAMPLE_BATCH_INFERENCE_JOB, (s) => {
    s.batching = { batchSize: 512, dynamic: { minBatchSize: 8, maxBatchSize: 256 } };
  }),
  invalid('BatchInferenceJob', 'dynamic min > max', 'spec.batching.dynamic.minBatchSize', EXAMPLE_BATCH_INFERENCE_JOB, (s) => {
    s.batching = { batchSize: 16, dynamic: { minBatchSize: 64, maxBatchSize: 8 } };
  }),
  invalid('BatchInferenceJob', 'SLA deadline beyond activeDeadlineSeconds', 'spec.sla.deadlineSeconds', EXAMPLE_BATCH_INFERENCE_JOB, (s) => {
    s.activeDeadlineSeconds = 3600;
  }),
  invalid('BatchInferenceJob', 'tier and queue', 'spec.tier', EXAMPLE_BATCH_INFERENCE_JOB, (s) => (s.tier = 'gold')),
  invalid('BatchInferenceJob', 'unknown tier', 'spec.tier', EXAMPLE_BATCH_INFERENCE_JOB, (s) => {
    delete s.queue;
    s.tier = 'platinum';
  }),
  invalid(
    'BatchInferenceJob',
    'input not in the OpenAI batch format',
    'spec.input.format',
    EXAMPLE_BATCH_INFERENCE_JOB,
    (s) => (s.input = { uri: 's3://tickets/', format: 'parquet' }),
  ),
  invalid(
    'BatchInferenceJob',
    'output not in the OpenAI batch format',
    'spec.output.format',
    EXAMPLE_BATCH_INFERENCE_JOB,
    (s) => (s.output = { uri: 's3://out/', format: 'csv' }),
  ),
  invalid(
    'BatchInferenceJob',
    'output overwrites the input',
    'spec.output.uri',
    EXAMPLE_BATCH_INFERENCE_JOB,
    (s) => (s.output = { uri: 's3://tickets/2026-01/' }),
  ),
  invalid('BatchInferenceJob', 'fewer shards than workers', 'spec.sharding.shards', EXAMPLE_BATCH_INFERENCE_JOB, (s) => (s.sharding = { shards: 2 })),
  invalid('BatchInferenceJob', 'WASM plugin from a ConfigMap and a file', 'spec.strategy.batchSize.wasm.configMap', EXAMPLE_BATCH_INFERENCE_JOB, (s) => {
    s.strategy = { batchSize: { wasm: { configMap: { name: 'plugins', key: 'a.wasm' }, file: 'a.wasm', sha256: 'a'.repeat(64) } } };
  }),
  invalid(
    'BatchInferenceJob',
    'WASM plugin digest not lowercase hex',
    'spec.strategy.routing.wasm.sha256',
    EXAMPLE_BATCH_INFERENCE_JOB,
    (s) => (s.strategy = { routing: { wasm: { file: 'a.wasm', sha256: 'A'.repeat(64) } } }),
  ),
  invalid(
    'BatchInferenceJob',
    'WASM plugin ConfigMap key ..',
    'spec.strategy.batchSize.wasm.configMap.key',
    EXAMPLE_BATCH_INFERENCE_JOB,
    (s) => (s.strategy = { batchSize: { wasm: { configMap: { name: 'plugins', key: '..' }, sha256: 'a'.repeat(64) } } }),
  ),
  invalid(
    'BatchInferenceJob',
    'WASM plugin file outside the plugin directory',
    'spec.strategy.batchSize.wasm.file',
    EXAMPLE_BATCH_INFERENCE_JOB,
    (s) => (s.strategy = { batchSize: { wasm: { file: '../etc/a.wasm', sha256: 'a'.repeat(64) } } }),
  ),
  // Shared pieces (resource lists, env, name limits) are compiled into each CRD separately, so each kind gets a case.
  invalid('InferenceService', 'fractional GPUs', 'spec.resources', EXAMPLE_INFERENCE_SERVICE, (s) => (s.resources = { 'nvidia.com/gpu': '0.5' })),
  invalid('InferenceService', 'env with value and valueFrom', 'spec.container.env[0].valueFrom', EXAMPLE_INFERENCE_SERVICE, (s) => {
    s.container = { env: [{ name: 'HF_TOKEN', value: 'x', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } }] };
  }),
  { name: 'name too long', kind: 'InferenceService', path: 'metadata', manifest: { ...EXAMPLE_INFERENCE_SERVICE, metadata: { name: 'q'.repeat(51) } } },
  // Multi-pod replicas (ADR 0134).
  invalid('InferenceService', 'GPUs not a multiple of podsPerReplica', 'spec.podsPerReplica', EXAMPLE_INFERENCE_SERVICE, (s) => {
    s.podsPerReplica = 3;
    s.gpusPerReplica = 8;
    delete s.tensorParallelSize;
  }),
  invalid('InferenceService', 'tensor parallel neither inside a pod nor over whole pods', 'spec.tensorParallelSize', EXAMPLE_INFERENCE_SERVICE, (s) => {
    s.podsPerReplica = 2;
    // 6 GPUs a pod: TP 4 divides the replica's 12 GPUs but neither fits a pod nor spans whole pods.
    s.gpusPerReplica = 12;
    s.tensorParallelSize = 4;
  }),
  invalid('InferenceService', 'replica topology preferred wider than required', 'spec.replicaTopology.preferredLevel', EXAMPLE_INFERENCE_SERVICE, (s) => {
    s.replicaTopology = { requiredLevel: 'rack', preferredLevel: 'zone' };
  }),
  {
    name: 'multi-pod name too long',
    kind: 'InferenceService',
    path: 'metadata',
    manifest: {
      ...EXAMPLE_INFERENCE_SERVICE,
      metadata: { name: 'q'.repeat(41) },
      spec: { ...(EXAMPLE_INFERENCE_SERVICE.spec as Record<string, unknown>), podsPerReplica: 2, gpusPerReplica: 16, tensorParallelSize: 8 },
    },
  },
  invalid('DataPipeline', 'fractional GPUs', 'spec.stages[1].resources', EXAMPLE_DATA_PIPELINE, (s) => {
    list(s.stages)[1] = { ...list(s.stages)[1], resources: { 'nvidia.com/gpu': '1.5' } };
  }),
  invalid('DataPipeline', 'env with value and valueFrom', 'spec.stages[0].container.env[0].valueFrom', EXAMPLE_DATA_PIPELINE, (s) => {
    list(s.stages)[0] = {
      ...list(s.stages)[0],
      container: { image: 'x', env: [{ name: 'A', value: 'x', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] },
    };
  }),
  invalid('BatchInferenceJob', 'fractional GPUs', 'spec.resources', EXAMPLE_BATCH_INFERENCE_JOB, (s) => (s.resources = { 'nvidia.com/gpu': '250m' })),
  invalid('BatchInferenceJob', 'env with value and valueFrom', 'spec.container.env[0].valueFrom', EXAMPLE_BATCH_INFERENCE_JOB, (s) => {
    s.container = { env: [{ name: 'HF_TOKEN', value: 'x', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } }] };
  }),
  { name: 'name too long', kind: 'BatchInferenceJob', path: 'metadata', manifest: { ...EXAMPLE_BATCH_INFERENCE_JOB, metadata: { name: 'b'.repeat(49) } } },
  invalid('Queue', 'tier and weight', 'spec.weight', EXAMPLE_QUEUE, (s) => (s.weight = 3)),
  invalid('Queue', 'unknown tier', 'spec.tier', EXAMPLE_QUEUE, (s) => (s.tier = 'platinum')),
  invalid('Queue', 'lendingLimit above nominal', 'spec.resources[2].lendingLimit', EXAMPLE_QUEUE, (s) => {
    list(s.resources)[2] = { name: 'memory', nominal: '8Ti', lendingLimit: '9000Gi' };
  }),
  invalid('Queue', 'guaranteed above nominal', 'spec.resources[2].guaranteed', EXAMPLE_QUEUE, (s) => {
    list(s.resources)[2] = { name: 'memory', nominal: '8Ti', guaranteed: '8.5Ti' };
  }),
  invalid('Queue', 'lendingLimit above nominal GPUs of a model', 'spec.gpuModels[0].lendingLimit', EXAMPLE_QUEUE, (s) => {
    list(s.gpuModels)[0] = { model: 'NVIDIA-H100-80GB-HBM3', nominal: 32, lendingLimit: 33 };
  }),
  invalid('Queue', 'guaranteed above nominal GPUs of a model', 'spec.gpuModels[1].guaranteed', EXAMPLE_QUEUE, (s) => {
    list(s.gpuModels)[1] = { model: 'NVIDIA-A800-SXM4-80GB', nominal: 32, guaranteed: 40 };
  }),
  invalid('Queue', 'borrowing without a cohort', 'spec.cohort', EXAMPLE_QUEUE, (s) => delete s.cohort),
  invalid('Queue', 'default priority class not allowed', 'spec.defaultPriorityClassName', EXAMPLE_QUEUE, (s) => (s.defaultPriorityClassName = 'batch-low')),
  invalid('Queue', 'negative quota', 'spec.resources[1].nominal', EXAMPLE_QUEUE, (s) => (list(s.resources)[1] = { name: 'cpu', nominal: -4 })),
  invalid('Queue', 'negative wait before a reservation', 'spec.reserveAfterSeconds', EXAMPLE_QUEUE, (s) => (s.reserveAfterSeconds = -60)),
  invalid('PodGroup', 'minMember 0', 'spec.minMember', EXAMPLE_POD_GROUP, (s) => (s.minMember = 0)),
  invalid(
    'PodGroup',
    'preferred topology wider than required',
    'spec.topology.preferred',
    EXAMPLE_POD_GROUP,
    (s) => (s.topology = { required: 'node', preferred: 'rack' }),
  ),
];
