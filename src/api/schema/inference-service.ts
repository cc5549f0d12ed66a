// InferenceService: one abstraction over vLLM, TGI, Triton and llama.cpp (seed 000 §1 "ModelMesh-Accelerator",
// seed 001 §2.4 mixed GPU models, §5 unified fine-tune/serve), autoscaled on tokens and queue depth
// rather than request counts (landscape: KServe #3561, #4028).
import { Type, type Static } from '@sinclair/typebox';
import { DATA_URI_PATTERN } from '../data-uri.ts';
import {
  Conditions,
  ContainerOverrides,
  DNS_SUBDOMAIN_PATTERN,
  DnsLabel,
  GpuRequirements,
  Obj,
  PodTemplate,
  PriorityClassName,
  QueueName,
  Resource,
  ResourceList,
  StringEnum,
  nameLengthRule,
  withRules,
  Count,
  ObservedGeneration,
  TopologyLevelEnum,
  celLevelAtMost,
  topologyRank,
} from './common.ts';

export const INFERENCE_RUNTIMES = ['vllm', 'tgi', 'triton', 'llamacpp'] as const;
export type InferenceRuntime = (typeof INFERENCE_RUNTIMES)[number];

/**
 * Default serving port of each runtime, used when spec.port is unset. The runtime definitions
 * (src/serving/runtimes/) carry the same ports; a test keeps the two equal (the api layer cannot import them).
 */
export const RUNTIME_DEFAULT_PORT: Readonly<Record<InferenceRuntime, number>> = { vllm: 8000, tgi: 8080, triton: 8000, llamacpp: 8080 };

export const ModelAdapter = Obj(
  {
    name: DnsLabel('Adapter name clients select (e.g. the LoRA adapter id).'),
    uri: Type.String({ description: 'Location of the adapter weights, a URI as spec.model.uri.', minLength: 1, maxLength: 2048, pattern: DATA_URI_PATTERN }),
  },
  { description: 'A LoRA adapter loaded on top of the base model and hot-swappable without a restart.' },
);

export const ModelSpec = Obj(
  {
    uri: Type.String({
      description:
        'Where the weights are: hf://org/model, s3://..., gs://..., pvc://claim/path or oci://...; no . or .. segment, backslash or control character.',
      minLength: 1,
      maxLength: 2048,
      pattern: DATA_URI_PATTERN,
    }),
    name: Type.Optional(Type.String({ description: 'Model name clients request; unset means the last path segment of uri.', minLength: 1, maxLength: 253 })),
    revision: Type.Optional(Type.String({ description: 'Revision, tag or commit of the weights.', minLength: 1, maxLength: 128 })),
    format: Type.Optional(
      StringEnum(['safetensors', 'gguf', 'onnx', 'tensorrt', 'pytorch', 'torchscript'], { description: 'Weight format; unset means detected by the runtime.' }),
    ),
    dtype: StringEnum(['auto', 'float16', 'bfloat16', 'float32'], { description: 'Compute dtype. Default: auto.', default: 'auto' }),
    quantization: Type.Optional(StringEnum(['awq', 'gptq', 'fp8', 'int8', 'int4'], { description: 'Quantization of the weights; unset means none.' })),
    maxModelLen: Type.Optional(Type.Integer({ description: "Maximum context length in tokens; unset means the model's own.", minimum: 1, maximum: 1048576 })),
    adapters: Type.Optional(
      Type.Array(ModelAdapter, {
        description: 'LoRA adapters served with the base model (vllm, tgi and llamacpp; not triton).',
        maxItems: 32,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
  },
  { description: 'The model to serve.' },
);
export type ModelSpec = Static<typeof ModelSpec>;

export const EngineTuning = Obj(
  {
    gpuMemoryUtilization: Type.Optional(
      Type.Number({
        description: "Fraction of each GPU's memory the engine may use for weights and KV cache (vllm). Unset means the engine default (vllm 0.9).",
        minimum: 0.05,
        maximum: 1,
      }),
    ),
    maxLoraRank: Type.Optional(
      Type.Integer({ description: 'Largest LoRA rank the engine reserves room for (vllm); unset means the engine default.', minimum: 1, maximum: 512 }),
    ),
    maxLoras: Type.Optional(
      Type.Integer({ description: 'LoRA adapters held on the GPU at once (vllm); unset means the number of adapters in the spec.', minimum: 1, maximum: 256 }),
    ),
  },
  { description: 'Engine settings the runtime turns into its own flags; a runtime without the setting rejects it.' },
);
export type EngineTuning = Static<typeof EngineTuning>;

/**
 * What a KEDA ScaledObject needs beyond the SITS policy (mode keda): where Prometheus answers and, where its pod
 * labels differ from the usual `namespace`/`pod`, the matchers that select the service's pods. Names as KEDA's
 * ScaledObject and Prometheus scaler spell them, so a KEDA user recognises them.
 */
export const KedaAutoscaling = Obj(
  {
    serverAddress: Type.String({
      description: "Prometheus base URL KEDA's Prometheus scaler queries (e.g. http://prometheus.monitoring:9090).",
      minLength: 1,
      maxLength: 2048,
      pattern: '^https?://[^\\s]+$',
    }),
    labelMatchers: Type.Optional(
      Type.String({
        description: 'PromQL label matchers selecting the service\'s pods in the query; unset means namespace="<namespace>",pod=~"<name>-.*".',
        minLength: 1,
        maxLength: 1024,
      }),
    ),
    authenticationRef: Type.Optional(
      Obj(
        {
          name: Type.String({
            description: "Name of the TriggerAuthentication (in the service's namespace) or ClusterTriggerAuthentication.",
            minLength: 1,
            maxLength: 253,
            pattern: DNS_SUBDOMAIN_PATTERN,
          }),
          kind: StringEnum(['TriggerAuthentication', 'ClusterTriggerAuthentication'], {
            description: 'Default: TriggerAuthentication.',
            default: 'TriggerAuthentication',
          }),
        },
        { description: 'KEDA authentication for a Prometheus that needs it (bearer token, basic auth, TLS); KEDA reads the secret, SITS never does.' },
      ),
    ),
    activationQuery: Type.Optional(
      Type.String({
        description:
          "With minReplicas 0: a PromQL query whose value is above 0 while requests wait for a service without replicas (e.g. the gateway's or KEDA HTTP add-on interceptor's pending requests for this service). Rendered as a second, activation-only trigger: at zero replicas no engine exports the token metric, so without it KEDA cannot scale the service from zero.",
        minLength: 1,
        maxLength: 4096,
      }),
    ),
    pollingInterval: Type.Integer({ description: "Seconds between KEDA's queries. Default: 30.", minimum: 1, maximum: 3600, default: 30 }),
    cooldownPeriod: Type.Integer({
      description: 'Seconds without demand before KEDA scales the last replica to zero (minReplicas 0). Default: 300.',
      minimum: 0,
      maximum: 86400,
      default: 300,
    }),
  },
  { description: 'The KEDA ScaledObject the controller keeps for mode keda: a Prometheus trigger on the SITS query at the calibrated threshold.' },
);
export type KedaAutoscaling = Static<typeof KedaAutoscaling>;

export const InferenceAutoscaling = withRules(
  Obj(
    {
      tokensPerSecondPerReplica: Type.Optional(
        Type.Integer({ description: 'Target generated tokens per second per replica; above it the service scales out.', minimum: 1, maximum: 10000000 }),
      ),
      queueDepthPerReplica: Type.Optional(
        Type.Integer({
          description: "Target waiting requests per replica (the runtime's queue); above it the service scales out.",
          minimum: 1,
          maximum: 100000,
        }),
      ),
      concurrencyPerReplica: Type.Optional(Type.Integer({ description: 'Target in-flight requests per replica.', minimum: 1, maximum: 100000 })),
      gpuUtilizationPercent: Type.Optional(Type.Integer({ description: 'Target GPU utilisation per replica in percent.', minimum: 1, maximum: 100 })),
      scaleUpStabilizationSeconds: Type.Integer({
        description: 'How long a higher recommendation must persist before scaling out. Default: 0.',
        minimum: 0,
        maximum: 3600,
        default: 0,
      }),
      mode: StringEnum(['sits', 'external', 'keda'], {
        description:
          "Who writes spec.replicas: sits (the SITS autoscaler, through the scale subresource), external (KEDA, an HPA or a person, through the scale subresource; SITS then never writes replicas) or keda (the controller keeps a KEDA ScaledObject with the SITS query and calibrated threshold, and KEDA's HPA writes replicas through the scale subresource; needs keda.serverAddress and KEDA installed). Default: sits.",
        default: 'sits',
      }),
      keda: Type.Optional(KedaAutoscaling),
      scaleDownStabilizationSeconds: Type.Integer({
        description: 'How long a lower recommendation must persist before scaling in. Default: 300.',
        minimum: 0,
        maximum: 3600,
        default: 300,
      }),
    },
    { description: 'Token-based autoscaling between minReplicas and maxReplicas; the most demanding target wins.' },
  ),
  [
    {
      // keda: the threshold is the calibrated one (starting from the SITS default when no target is given).
      rule: "self.mode != 'sits' || has(self.tokensPerSecondPerReplica) || has(self.queueDepthPerReplica) || has(self.concurrencyPerReplica) || has(self.gpuUtilizationPercent)",
      message:
        'autoscaling needs at least one target: tokensPerSecondPerReplica, queueDepthPerReplica, concurrencyPerReplica or gpuUtilizationPercent (or mode: external or keda)',
      reason: 'FieldValueRequired',
      fieldPath: '.tokensPerSecondPerReplica',
      check: (self) =>
        self.mode !== 'sits' ||
        self.tokensPerSecondPerReplica !== undefined ||
        self.queueDepthPerReplica !== undefined ||
        self.concurrencyPerReplica !== undefined ||
        self.gpuUtilizationPercent !== undefined,
    },
    {
      rule: "self.mode != 'keda' || has(self.keda)",
      message: 'mode keda needs keda.serverAddress: the Prometheus KEDA queries',
      reason: 'FieldValueRequired',
      fieldPath: '.keda',
      check: (self) => self.mode !== 'keda' || self.keda !== undefined,
    },
  ],
);
export type InferenceAutoscaling = Static<typeof InferenceAutoscaling>;

export const RolloutStrategy = withRules(
  Obj(
    {
      maxSurge: Type.Integer({
        description: 'Replicas created above spec.replicas while a new template rolls out. Default: 1.',
        minimum: 0,
        maximum: 1000,
        default: 1,
      }),
      maxUnavailable: Type.Integer({
        description:
          'Replicas below spec.replicas that may be not ready while a new template rolls out; the ready minimum is replicas - maxUnavailable. Default: 0.',
        minimum: 0,
        maximum: 1000,
        default: 0,
      }),
    },
    { description: "Rolling update of the replicas when the pod template changes (the semantics of a Deployment's RollingUpdate)." },
  ),
  [
    {
      rule: 'self.maxSurge + self.maxUnavailable >= 1',
      message: 'maxSurge and maxUnavailable cannot both be 0: the rollout could never make progress',
      fieldPath: '.maxSurge',
      check: (self) => self.maxSurge + self.maxUnavailable >= 1,
    },
  ],
);
export type RolloutStrategy = Static<typeof RolloutStrategy>;

/** Where the pods of one multi-pod replica may go (the gang's topology, as a TrainingJob's). */
export const ReplicaTopology = withRules(
  Obj(
    {
      requiredLevel: Type.Optional(
        TopologyLevelEnum(
          'The pods of one replica must share one domain of this level (nvlink-domain, node, rack, block or zone); unset means none, unless tensor parallelism spans the pods (then nvlink-domain).',
        ),
      ),
      preferredLevel: Type.Optional(TopologyLevelEnum('The scheduler prefers to pack the pods of one replica into one domain of this level. Default: rack.')),
    },
    { description: 'Placement of the pods of one replica (podsPerReplica > 1).' },
  ),
  [
    {
      rule: `!has(self.requiredLevel) || !has(self.preferredLevel) || ${celLevelAtMost('self.preferredLevel', 'self.requiredLevel')}`,
      message: 'preferredLevel must be the same as or narrower than requiredLevel (nvlink-domain < node < rack < block < zone)',
      fieldPath: '.preferredLevel',
      check: (self) =>
        self.requiredLevel === undefined || self.preferredLevel === undefined || topologyRank(self.preferredLevel) <= topologyRank(self.requiredLevel),
    },
  ],
);
export type ReplicaTopology = Static<typeof ReplicaTopology>;

export const InferenceServiceSpec = withRules(
  Obj(
    {
      runtime: StringEnum(INFERENCE_RUNTIMES, { description: 'Serving engine: vllm, tgi (Text Generation Inference), triton or llamacpp (llama.cpp server).' }),
      model: ModelSpec,
      replicas: Type.Integer({
        description: 'Desired replicas; the autoscaler and the scale subresource change it. Default: 1.',
        minimum: 0,
        maximum: 1000,
        default: 1,
      }),
      minReplicas: Type.Integer({ description: 'Lower bound for replicas; 0 allows scale to zero. Default: 1.', minimum: 0, maximum: 1000, default: 1 }),
      maxReplicas: Type.Optional(Type.Integer({ description: 'Upper bound for replicas; required with autoscaling.', minimum: 1, maximum: 1000 })),
      gpusPerReplica: Type.Integer({ description: 'GPUs per replica. Default: 1.', minimum: 0, maximum: 64, default: 1 }),
      tensorParallelSize: Type.Optional(
        Type.Integer({
          description:
            'Tensor-parallel degree inside a replica; must divide gpusPerReplica. Unset means gpusPerReplica (with podsPerReplica > 1: the GPUs of one pod; the pods are then pipeline stages).',
          minimum: 1,
          maximum: 64,
        }),
      ),
      podsPerReplica: Type.Integer({
        description:
          "Pods of one replica (multi-node serving, LeaderWorkerSet's size): a leader that runs the engine's API server and podsPerReplica - 1 workers, each with gpusPerReplica / podsPerReplica GPUs, scheduled as one gang, created, restarted and rolled as a unit. Default: 1.",
        minimum: 1,
        maximum: 16,
        default: 1,
      }),
      replicaTopology: Type.Optional(ReplicaTopology),
      engine: Type.Optional(EngineTuning),
      gpu: Type.Optional(GpuRequirements),
      resources: Type.Optional(ResourceList('Additional resources per replica (cpu, memory, ...); GPUs come from gpusPerReplica.')),
      autoscaling: Type.Optional(InferenceAutoscaling),
      rollout: Type.Optional(RolloutStrategy),
      progressDeadlineSeconds: Type.Integer({
        description:
          'How long a replica may take from its start to ready before the service reports it by name (condition ReplicaNotReady); the other replicas keep serving. Default: 1800 (weights take minutes to load).',
        minimum: 1,
        maximum: 86400,
        default: 1800,
      }),
      profile: StringEnum(['auto', 'low-latency', 'batch-throughput'], {
        description: 'Resource profile: low-latency favours small batches and fast GPUs, batch-throughput large batches; auto lets SITS choose. Default: auto.',
        default: 'auto',
      }),
      port: Type.Optional(
        Type.Integer({
          description: 'Serving port; unset means the runtime default (vllm 8000, tgi 8080, triton 8000, llamacpp 8080).',
          minimum: 1,
          maximum: 65535,
        }),
      ),
      container: Type.Optional(ContainerOverrides),
      podTemplate: Type.Optional(PodTemplate),
      queue: Type.Optional(QueueName()),
      priorityClassName: Type.Optional(PriorityClassName()),
    },
    { description: 'Desired state of an InferenceService.' },
  ),
  [
    {
      rule: 'self.minReplicas <= self.replicas',
      message: 'replicas must be greater than or equal to minReplicas',
      fieldPath: '.replicas',
      check: (self) => self.minReplicas <= self.replicas,
    },
    {
      rule: '!has(self.maxReplicas) || self.replicas <= self.maxReplicas',
      message: 'replicas must be less than or equal to maxReplicas',
      fieldPath: '.replicas',
      check: (self) => self.maxReplicas === undefined || self.replicas <= self.maxReplicas,
    },
    {
      rule: '!has(self.maxReplicas) || self.minReplicas <= self.maxReplicas',
      message: 'minReplicas must be less than or equal to maxReplicas',
      fieldPath: '.minReplicas',
      check: (self) => self.maxReplicas === undefined || self.minReplicas <= self.maxReplicas,
    },
    {
      rule: '!has(self.autoscaling) || has(self.maxReplicas)',
      message: 'maxReplicas is required when autoscaling is set',
      fieldPath: '.maxReplicas',
      reason: 'FieldValueRequired',
      check: (self) => self.autoscaling === undefined || self.maxReplicas !== undefined,
    },
    {
      rule: '!has(self.tensorParallelSize) || (self.tensorParallelSize <= self.gpusPerReplica && self.gpusPerReplica % self.tensorParallelSize == 0)',
      message: 'tensorParallelSize must divide gpusPerReplica',
      fieldPath: '.tensorParallelSize',
      check: (self) =>
        self.tensorParallelSize === undefined || (self.tensorParallelSize <= self.gpusPerReplica && self.gpusPerReplica % self.tensorParallelSize === 0),
    },
    {
      rule: 'self.podsPerReplica == 1 || (self.gpusPerReplica >= self.podsPerReplica && self.gpusPerReplica % self.podsPerReplica == 0)',
      message: 'gpusPerReplica must be a positive multiple of podsPerReplica: every pod of a replica gets gpusPerReplica / podsPerReplica GPUs',
      fieldPath: '.podsPerReplica',
      check: (self) => self.podsPerReplica === 1 || (self.gpusPerReplica >= self.podsPerReplica && self.gpusPerReplica % self.podsPerReplica === 0),
    },
    {
      // Tensor-parallel ranks either stay inside one pod (the pods are pipeline stages) or span whole pods.
      rule: '!has(self.tensorParallelSize) || self.podsPerReplica == 1 || self.gpusPerReplica < self.podsPerReplica || (self.gpusPerReplica / self.podsPerReplica) % self.tensorParallelSize == 0 || self.tensorParallelSize % (self.gpusPerReplica / self.podsPerReplica) == 0',
      message: 'with podsPerReplica > 1, tensorParallelSize must divide the GPUs of one pod (gpusPerReplica / podsPerReplica) or be a multiple of them',
      fieldPath: '.tensorParallelSize',
      check: (self) => {
        if (self.tensorParallelSize === undefined || self.podsPerReplica === 1 || self.gpusPerReplica < self.podsPerReplica) return true;
        const perPod = Math.floor(self.gpusPerReplica / self.podsPerReplica);
        return perPod % self.tensorParallelSize === 0 || self.tensorParallelSize % perPod === 0;
      },
    },
    {
      rule: "self.runtime != 'triton' || !has(self.model.adapters) || size(self.model.adapters) == 0",
      message: 'LoRA adapters are supported by the vllm, tgi and llamacpp runtimes, not triton',
      fieldPath: '.model.adapters',
      check: (self) => self.runtime !== 'triton' || (self.model.adapters ?? []).length === 0,
    },
  ],
);
export type InferenceServiceSpec = Static<typeof InferenceServiceSpec>;

export const INFERENCE_SERVICE_PHASES = ['Pending', 'Loading', 'Ready', 'Scaling', 'Degraded', 'Failed'] as const;
export type InferenceServicePhase = (typeof INFERENCE_SERVICE_PHASES)[number];

export const ADAPTER_STATES = ['Desired', 'Loading', 'Loaded', 'Failed'] as const;

export const ReplicaAdapterStatus = Obj(
  {
    name: DnsLabel('Adapter name (spec.model.adapters[].name).'),
    state: StringEnum(ADAPTER_STATES, { description: 'Desired (listed in the spec, not yet confirmed on the replica), Loading, Loaded or Failed.' }),
    message: Type.Optional(Type.String({ description: 'Why the last load failed.', maxLength: 1024 })),
  },
  { description: 'One LoRA adapter on one replica.' },
);

export const ReplicaStatus = Obj(
  {
    name: Type.String({ description: "The replica's pod.", minLength: 1, maxLength: 253 }),
    ready: Type.Boolean({ description: "The engine's health endpoint answers (the pod is Ready)." }),
    updated: Type.Boolean({ description: 'The replica runs the current pod template.' }),
    node: Type.Optional(Type.String({ description: 'Node the replica is bound to.', maxLength: 253 })),
    adapters: Type.Optional(
      Type.Array(ReplicaAdapterStatus, {
        description: 'The adapters on this replica.',
        maxItems: 32,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
  },
  { description: 'The observed state of one replica.' },
);
export type ReplicaStatus = Static<typeof ReplicaStatus>;

export const InferenceServiceStatus = Obj(
  {
    phase: Type.Optional(
      StringEnum(INFERENCE_SERVICE_PHASES, { description: 'Pending, Loading (weights), Ready, Scaling, Degraded (some replicas down) or Failed.' }),
    ),
    conditions: Type.Optional(Conditions),
    observedGeneration: ObservedGeneration(),
    replicas: Type.Optional(Count('Replicas (pods) that currently exist; the scale subresource reads it.')),
    readyReplicas: Type.Optional(Count('Replicas serving traffic.')),
    updatedReplicas: Type.Optional(Count('Replicas running the current pod template.')),
    model: Type.Optional(Type.String({ description: 'Name under which the model is served (what clients request).', maxLength: 253 })),
    replicaStatuses: Type.Optional(
      Type.Array(ReplicaStatus, {
        description: 'One entry per replica: readiness, template and the LoRA adapters on it.',
        maxItems: 2000,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    desiredReplicas: Type.Optional(Count("The autoscaler's latest recommendation.")),
    selector: Type.Optional(Type.String({ description: 'Label selector of the pods, for the scale subresource.', maxLength: 1024 })),
    url: Type.Optional(Type.String({ description: 'In-cluster URL of the service endpoint.', maxLength: 2048 })),
    runtimeVersion: Type.Optional(Type.String({ description: 'Version of the serving engine in use.', maxLength: 128 })),
    tokensPerSecond: Type.Optional(Type.Number({ description: 'Observed generated tokens per second across replicas.', minimum: 0 })),
    queueDepth: Type.Optional(Count('Observed waiting requests across replicas.')),
    lastScaleTime: Type.Optional(Type.String({ description: 'When replicas last changed.', format: 'date-time' })),
  },
  { description: 'Observed state of an InferenceService, written by the controller.' },
);
export type InferenceServiceStatus = Static<typeof InferenceServiceStatus>;

export const InferenceService = withRules(
  Resource(
    'InferenceService',
    InferenceServiceSpec,
    InferenceServiceStatus,
    'A model served by vLLM, TGI, Triton or llama.cpp, autoscaled on tokens and queue depth.',
  ),
  [
    nameLengthRule(50, 'the name is used for the Service and pod names, which must stay valid DNS labels'),
    {
      rule: 'self.spec.podsPerReplica == 1 || self.metadata.name.size() <= 40',
      message: "metadata.name must be at most 40 characters with podsPerReplica > 1: the pods' hostnames (<name>-<hash>-<slot>-<worker>) must stay DNS labels",
      fieldPath: '.metadata',
      check: (self) => self.spec.podsPerReplica === 1 || (self.metadata.name ?? '').length <= 40,
    },
  ],
);
export type InferenceService = Static<typeof InferenceService>;
