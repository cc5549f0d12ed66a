// BatchInferenceJob: offline inference over a dataset (seed 004 §2–§4): batch size, sequence length and
// KV-cache policy as first-class fields (§2.3), dynamic batching (§4.2), SLA/accuracy-driven placement
// (§2.5), weighted fair time slicing between tenants (§4.1), fault recovery (§2.5) and long-tail
// re-sharding (§4.4), with progress checkpoints so a restart resumes instead of starting over.
import { Type, type Static } from '@sinclair/typebox';
import { DATA_URI_PATTERN } from '../data-uri.ts';
import {
  Conditions,
  DNS_SUBDOMAIN_PATTERN,
  ContainerOverrides,
  DataRef,
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
  Timestamp,
  ObservedGeneration,
} from './common.ts';
import { INFERENCE_RUNTIMES } from './inference-service.ts';
import { QUEUE_TIERS } from './queue.ts';

export const KV_CACHE_POLICIES = ['recycle', 'retain', 'evict'] as const;
export type KvCachePolicy = (typeof KV_CACHE_POLICIES)[number];

export const DynamicBatching = withRules(
  Obj(
    {
      minBatchSize: Type.Integer({ description: 'Smallest batch the controller may shrink to. Default: 1.', minimum: 1, maximum: 2048, default: 1 }),
      maxBatchSize: Type.Integer({ description: 'Largest batch the controller may grow to. Default: 2048.', minimum: 1, maximum: 2048, default: 2048 }),
      targetLatencyMs: Type.Optional(Type.Integer({ description: 'Shrink batches when the p99 batch latency exceeds this.', minimum: 1, maximum: 3600000 })),
      maxGpuMemoryPercent: Type.Integer({
        description: "The share of the engine's free KV cache the start may fill, and the KV use over which batches shrink. Default: 90.",
        minimum: 1,
        maximum: 100,
        default: 90,
      }),
    },
    {
      description:
        "Dynamic batch sizing: the start from the engine's free KV memory, the prompt lengths its tokenizer counts and the prompts' shared prefix, then AIMD on the p99 latency and the KV use.",
    },
  ),
  [
    {
      rule: 'self.minBatchSize <= self.maxBatchSize',
      message: 'minBatchSize must be less than or equal to maxBatchSize',
      fieldPath: '.minBatchSize',
      check: (self) => self.minBatchSize <= self.maxBatchSize,
    },
  ],
);
export type DynamicBatching = Static<typeof DynamicBatching>;

export const BatchingSpec = withRules(
  Obj(
    {
      batchSize: Type.Integer({
        description:
          'Sequences per batch. With dynamic batching, the size until the engine is up; then the start comes from its free KV cache and the counted prompt lengths, where the engine says its cache size. Default: 32.',
        minimum: 1,
        maximum: 2048,
        default: 32,
      }),
      seqLen: Type.Integer({
        description: 'Maximum sequence length in tokens (prompt plus output). Default: 2048.',
        minimum: 1,
        maximum: 32768,
        default: 2048,
      }),
      kvCachePolicy: StringEnum(KV_CACHE_POLICIES, {
        description:
          'KV-cache lifetime between batches: recycle reuses blocks (best below ~4096 tokens), retain keeps prefixes for reuse (long contexts), evict frees them after each batch. Default: recycle.',
        default: 'recycle',
      }),
      throughputMode: StringEnum(['burst', 'steady'], {
        description: 'burst fills the GPUs as fast as possible; steady keeps a constant rate that leaves room for other tenants. Default: steady.',
        default: 'steady',
      }),
      dynamic: Type.Optional(DynamicBatching),
    },
    { description: 'How records are batched on the GPU. Default: {} (every field defaulted).', default: {} },
  ),
  [
    {
      rule: '!has(self.dynamic) || (self.dynamic.minBatchSize <= self.batchSize && self.batchSize <= self.dynamic.maxBatchSize)',
      message: 'batchSize must be within dynamic.minBatchSize and dynamic.maxBatchSize',
      fieldPath: '.batchSize',
      check: (self) => self.dynamic === undefined || (self.dynamic.minBatchSize <= self.batchSize && self.batchSize <= self.dynamic.maxBatchSize),
    },
  ],
);
export type BatchingSpec = Static<typeof BatchingSpec>;

export const TimeSlicing = Obj(
  {
    quantumMs: Type.Integer({
      description: "GPU time slice per turn in milliseconds, scaled by the queue's weight (gold 4, silver 2, bronze 1). Default: 30.",
      minimum: 1,
      maximum: 60000,
      default: 30,
    }),
  },
  { description: "Share GPUs with other tenants' jobs in weighted fair time slices at batch boundaries; unset means the job holds its GPUs." },
);

export const Sharding = Obj(
  {
    shards: Type.Optional(Type.Integer({ description: 'Number of input shards; unset means one per worker.', minimum: 1, maximum: 100000 })),
    reshardStragglers: Type.Boolean({
      description: 'Split a shard predicted to finish late and hand the parts to idle workers. Default: true.',
      default: true,
    }),
    stragglerThresholdPercent: Type.Integer({
      description: 'A shard is a straggler when its predicted time exceeds this percentage of the median shard time. Default: 130.',
      minimum: 101,
      maximum: 1000,
      default: 130,
    }),
  },
  { description: 'How the input is split between workers, and long-tail handling. Default: {} (every field defaulted).', default: {} },
);

export const FaultRecovery = Obj(
  {
    maxRetries: Type.Integer({ description: 'Retries of a failed shard before the job fails. Default: 3.', minimum: 0, maximum: 100, default: 3 }),
    retryAtReducedClock: Type.Boolean({ description: 'First retry on the same GPU model at a reduced power limit. Default: true.', default: true }),
    splitOnRetry: Type.Boolean({ description: 'Retry a failed batch as smaller token chunks. Default: true.', default: true }),
    cpuFallback: Type.Boolean({ description: 'As a last resort run the failed shard on CPU. Default: false.', default: false }),
    quarantineMinutes: Type.Integer({
      description: 'A GPU that failed a shard gets no work from this job for this long. Default: 15.',
      minimum: 0,
      maximum: 1440,
      default: 15,
    }),
  },
  { description: 'What happens when a batch or a GPU fails. Default: {} (every field defaulted).', default: {} },
);

export const ProgressCheckpoint = Obj(
  {
    intervalSeconds: Type.Integer({
      description: 'Record progress (completed shards and offsets) at least this often. Default: 300.',
      minimum: 1,
      maximum: 86400,
      default: 300,
    }),
    intervalRecords: Type.Optional(Type.Integer({ description: 'Also record progress after this many records.', minimum: 1, format: 'int64' })),
    uri: Type.Optional(
      Type.String({
        description:
          'Where progress is stored; unset means next to the output. A data URI as spec.output.uri (no . or .. segment, backslash or control character).',
        minLength: 1,
        maxLength: 2048,
        pattern: DATA_URI_PATTERN,
      }),
    ),
  },
  { description: 'Progress checkpoints, so a restarted or preempted job resumes where it stopped. Default: {} (every field defaulted).', default: {} },
);

export const SlaSpec = Obj(
  {
    class: StringEnum(['P0', 'P1', 'P2', 'P3'], { description: 'SLA class, P0 most urgent; steers GPU choice and preemption. Default: P2.', default: 'P2' }),
    deadlineSeconds: Type.Optional(
      Type.Integer({ description: 'Desired completion time after start; drives resharding and the ETA.', minimum: 1, format: 'int64' }),
    ),
    accuracyTolerance: Type.Optional(
      Type.Number({ description: 'Fraction of full-precision accuracy that is acceptable (0-1); below 1 allows quantized execution.', minimum: 0, maximum: 1 }),
    ),
  },
  { description: 'Service level and accuracy tolerance, used to choose GPUs and batching.' },
);

/** A WebAssembly strategy module (issue 13 Deliver 9, ADR 0117): from a ConfigMap key or a file, pinned by SHA-256. */
export const WasmModuleRef = withRules(
  Obj(
    {
      configMap: Type.Optional(
        Obj(
          {
            name: Type.String({ description: "ConfigMap in the job's namespace.", minLength: 1, maxLength: 253, pattern: DNS_SUBDOMAIN_PATTERN }),
            // A ConfigMap key (not "." or "..", no leading ".."), which the worker pod mounts as a file of that name.
            key: Type.String({
              description: 'Key under binaryData holding the module (letters, digits, "-", "_", "."; not starting with "..").',
              minLength: 1,
              maxLength: 253,
              pattern: '^([-_a-zA-Z0-9]|\\.[-_a-zA-Z0-9])[-._a-zA-Z0-9]*$',
            }),
          },
          {
            description:
              "The module in a ConfigMap's binaryData, in the job's namespace; the controller mounts that key into each worker pod (the ConfigMap is read by the kubelet, not by SITS).",
          },
        ),
      ),
      file: Type.Optional(
        Type.String({
          description: 'The module as a file under the SITS controller\'s plugin directory, e.g. latency-ratio.wasm (relative, no ".." or hidden segments).',
          minLength: 1,
          maxLength: 1024,
          pattern: '^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$',
        }),
      ),
      sha256: Type.String({
        description: 'Lowercase hex SHA-256 of the module; a module with another digest is refused.',
        minLength: 64,
        maxLength: 64,
        pattern: '^[0-9a-f]{64}$',
      }),
    },
    { description: 'A WebAssembly module implementing the SITS strategy ABI 1; the built-in strategy is used when it is refused or fails.' },
  ),
  [
    {
      rule: 'has(self.configMap) != has(self.file)',
      message: 'set exactly one of configMap or file',
      fieldPath: '.configMap',
      check: (self) => (self.configMap === undefined) !== (self.file === undefined),
    },
  ],
);
export type WasmModuleRef = Static<typeof WasmModuleRef>;

export const StrategySpec = Obj(
  {
    batchSize: Type.Optional(
      Obj({ wasm: WasmModuleRef }, { description: "Batch-size strategy: the module's batch_size export replaces the built-in dynamic batch size and AIMD." }),
    ),
    routing: Type.Optional(
      Obj({ wasm: WasmModuleRef }, { description: "Routing strategy: the module's route export replaces the built-in precision/SLA/fragmentation decision." }),
    ),
  },
  { description: 'Strategy plugins; unset means the built-in strategies.' },
);

export const BatchInferenceJobSpec = withRules(
  Obj(
    {
      runtime: StringEnum(INFERENCE_RUNTIMES, { description: 'Inference engine: vllm, tgi, triton or llamacpp. Default: vllm.', default: 'vllm' }),
      model: Obj(
        {
          uri: Type.String({
            description: 'Where the weights are: hf://, s3://, gs://, pvc:// or oci://; no . or .. segment, backslash or control character.',
            minLength: 1,
            maxLength: 2048,
            pattern: DATA_URI_PATTERN,
          }),
          revision: Type.Optional(Type.String({ description: 'Revision, tag or commit of the weights.', minLength: 1, maxLength: 128 })),
          quantization: Type.Optional(StringEnum(['awq', 'gptq', 'fp8', 'int8', 'int4'], { description: 'Quantization of the weights; unset means none.' })),
        },
        { description: 'The model to run.' },
      ),
      input: DataRef('Requests in the OpenAI batch format: JSONL, one {custom_id, method, url, body} per line, custom_id unique.'),
      output: DataRef(
        'Where results are written: JSONL, one {id, custom_id, response | error} per input line, plus a manifest saying whether the output is complete.',
      ),
      tier: Type.Optional(
        StringEnum(QUEUE_TIERS, {
          description:
            'Service tier when the job names no queue: gold, silver or bronze (GPU-time weights 4, 2, 1, as for a Queue). A queue carries its own tier; unset with no queue means bronze.',
        }),
      ),
      batching: BatchingSpec,
      workers: Type.Integer({ description: 'Parallel workers (pods). Default: 1.', minimum: 1, maximum: 1024, default: 1 }),
      gpusPerWorker: Type.Integer({ description: 'GPUs per worker. Default: 1.', minimum: 0, maximum: 64, default: 1 }),
      gpu: Type.Optional(GpuRequirements),
      resources: Type.Optional(ResourceList('Additional resources per worker (cpu, memory, ...); GPUs come from gpusPerWorker.')),
      sharding: Sharding,
      timeSlicing: Type.Optional(TimeSlicing),
      faultRecovery: FaultRecovery,
      checkpoint: ProgressCheckpoint,
      sla: Type.Optional(SlaSpec),
      strategy: Type.Optional(StrategySpec),
      container: Type.Optional(ContainerOverrides),
      podTemplate: Type.Optional(PodTemplate),
      queue: Type.Optional(QueueName()),
      priorityClassName: Type.Optional(PriorityClassName()),
      suspend: Type.Boolean({
        description:
          "When true the worker pods are deleted and no shard is handed out (phase Suspended); what was committed stays, the rest runs after resume, each record once. Work since a worker's last checkpoint is redone. Default: false.",
        default: false,
      }),
      activeDeadlineSeconds: Type.Optional(Type.Integer({ description: 'Wall-clock limit for the job.', minimum: 1, format: 'int64' })),
      ttlSecondsAfterFinished: Type.Optional(
        Type.Integer({ description: 'Delete the finished job after this many seconds; unset keeps it.', minimum: 0, format: 'int64' }),
      ),
      expectedRuntimeSeconds: Type.Optional(
        Type.Integer({ description: 'User estimate of the run time, for start-time predictions and backfill.', minimum: 1, format: 'int64' }),
      ),
    },
    { description: 'Desired state of a BatchInferenceJob.' },
  ),
  [
    {
      rule: '!has(self.sla) || !has(self.sla.deadlineSeconds) || !has(self.activeDeadlineSeconds) || self.sla.deadlineSeconds <= self.activeDeadlineSeconds',
      message: 'sla.deadlineSeconds must not exceed activeDeadlineSeconds',
      fieldPath: '.sla.deadlineSeconds',
      check: (self) =>
        self.sla?.deadlineSeconds === undefined || self.activeDeadlineSeconds === undefined || self.sla.deadlineSeconds <= self.activeDeadlineSeconds,
    },
    {
      // One notion of tier: the Queue's. A job in a queue takes the queue's tier; naming both would be two.
      rule: '!(has(self.tier) && has(self.queue))',
      message: 'set tier or queue, not both: a queue carries its own tier',
      fieldPath: '.tier',
      check: (self) => !(self.tier !== undefined && self.queue !== undefined),
    },
    {
      rule: "!has(self.input.format) || self.input.format == 'jsonl'",
      message: 'input.format must be jsonl: requests are read in the OpenAI batch format',
      fieldPath: '.input.format',
      check: (self) => self.input.format === undefined || self.input.format === 'jsonl',
    },
    {
      rule: "!has(self.output.format) || self.output.format == 'jsonl'",
      message: 'output.format must be jsonl: results are written in the OpenAI batch format',
      fieldPath: '.output.format',
      check: (self) => self.output.format === undefined || self.output.format === 'jsonl',
    },
    {
      rule: 'self.output.uri != self.input.uri',
      message: 'output.uri must differ from input.uri: results never overwrite the requests',
      fieldPath: '.output.uri',
      check: (self) => self.output.uri !== self.input.uri,
    },
    {
      rule: '!has(self.sharding.shards) || self.sharding.shards >= self.workers',
      message: 'sharding.shards must be at least workers, or every worker would not get a shard',
      fieldPath: '.sharding.shards',
      check: (self) => self.sharding.shards === undefined || self.sharding.shards >= self.workers,
    },
  ],
);
export type BatchInferenceJobSpec = Static<typeof BatchInferenceJobSpec>;

export const BATCH_INFERENCE_PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Suspended'] as const;

const Count64 = (description: string) => Count(description, 'int64');

export const BatchProgress = Obj(
  {
    recordsTotal: Type.Optional(Count64('Records in the input, once known.')),
    recordsProcessed: Type.Optional(Count64('Records with a result written.')),
    recordsFailed: Type.Optional(Count64('Records that failed after all retries.')),
    tokensProcessed: Type.Optional(Count64('Tokens processed (prompt plus generated).')),
    shardsTotal: Type.Optional(Count64('Shards in the job, including splits.')),
    shardsCompleted: Type.Optional(Count64('Shards finished.')),
    percent: Type.Optional(Type.Integer({ description: 'Completion percentage.', minimum: 0, maximum: 100 })),
    lastCheckpointTime: Type.Optional(Timestamp('When progress was last checkpointed.')),
  },
  { description: 'Progress, as of the last checkpoint.' },
);

/** The workload profile and route (issue 13 Deliver 8, ADR 0165), decided once from the first committed shards. */
export const BatchRouting = Obj(
  {
    route: StringEnum(['gpu-exclusive', 'gpu-shared', 'gpu-fragments', 'cpu-elastic'], {
      description: 'Where the job belongs: whole GPUs, shared whole GPUs, GPU fragments, or the CPU-elastic path.',
    }),
    quantization: Type.Optional(
      StringEnum(['fp8', 'int8'], {
        description: 'Quantised weights the accuracy tolerance allows; advisory when spec.model.quantization is unset (the model is not changed).',
      }),
    ),
    source: StringEnum(['builtin', 'plugin'], { description: 'Who decided: the built-in three-level rule or spec.strategy.routing.wasm.' }),
    reasons: Type.Array(Type.String({ maxLength: 512 }), {
      description: 'One line per level (precision, SLA class, fragmentation) and what the route changes.',
      maxItems: 8,
    }),
    fragmentation: Type.Number({
      description: "The cluster's GPU fragmentation ratio the decision saw (0 when unknown, as a reason says).",
      minimum: 0,
      maximum: 1,
    }),
    decisionTime: Timestamp('When the route was decided.'),
    profile: Obj(
      {
        shards: Type.Integer({ description: 'Committed shards profiled.', minimum: 1, format: 'int32' }),
        promptTokensPerRecord: Type.Number({ description: 'Median prompt tokens a record.', minimum: 0 }),
        outputTokensPerRecord: Type.Number({ description: 'Median generated tokens a record.', minimum: 0 }),
        msPerRecord: Type.Number({ description: 'Median wall time a record on one worker, ms.', minimum: 0 }),
        peakKvFraction: Type.Optional(
          Type.Number({
            description: "Peak KV-cache use of the workers' engines while the shards ran, 0-1; unset when the engine exports none (TGI, Triton).",
            minimum: 0,
            maximum: 1,
          }),
        ),
      },
      { description: 'The workload profile from the first committed shards.' },
    ),
  },
  { description: 'The route decided from the workload profile, spec.sla and the cluster fragmentation.' },
);
export type BatchRouting = Static<typeof BatchRouting>;

export const BatchInferenceJobStatus = Obj(
  {
    phase: Type.Optional(StringEnum(BATCH_INFERENCE_PHASES, { description: 'Pending, Running, Succeeded, Failed or Suspended.' })),
    conditions: Type.Optional(Conditions),
    observedGeneration: ObservedGeneration(),
    progress: Type.Optional(BatchProgress),
    readyWorkers: Type.Optional(Type.Integer({ description: 'Workers running.', minimum: 0, format: 'int32' })),
    currentBatchSize: Type.Optional(Type.Integer({ description: 'Batch size in use (changes with dynamic batching).', minimum: 1, maximum: 2048 })),
    tokensPerSecond: Type.Optional(Type.Number({ description: 'Observed throughput across workers.', minimum: 0 })),
    retries: Type.Optional(Type.Integer({ description: 'Shard retries used so far.', minimum: 0, format: 'int32' })),
    quarantinedGpus: Type.Optional(
      Type.Array(Type.String({ description: 'node/GPU index, e.g. node-3/2.', maxLength: 260 }), {
        description: 'GPUs currently quarantined after failures.',
        maxItems: 1024,
      }),
    ),
    startTime: Type.Optional(Timestamp('When the first worker started.')),
    completionTime: Type.Optional(Timestamp('When the job finished.')),
    estimatedCompletionTime: Type.Optional(Timestamp('Predicted completion time from the observed rate.')),
    estimatedStartTime: Type.Optional(Timestamp('Predicted start time while pending.')),
    queue: Type.Optional(Type.String({ description: 'Queue holding or running the job.', maxLength: 63 })),
    stages: Type.Optional(
      Type.Array(
        Obj(
          {
            name: StringEnum(['tokenise', 'infer', 'postprocess'], { description: 'The stage.' }),
            device: StringEnum(['cpu', 'gpu', 'npu'], { description: 'The device class it runs on.' }),
            placement: Type.String({ description: 'Where it runs and why.', maxLength: 512 }),
            records: Type.Integer({ description: 'Records it finished, over all workers.', minimum: 0, format: 'int64' }),
            busySeconds: Type.Number({ description: 'Time its slots worked, summed over workers and slots.', minimum: 0 }),
            blockedSeconds: Type.Number({ description: 'Time finished records waited on it for room in the next queue (backpressure).', minimum: 0 }),
            maxQueue: Type.Integer({ description: 'Most records ever queued in front of it on one worker.', minimum: 0, format: 'int32' }),
            queueCapacity: Type.Integer({ description: 'The bound of that queue (0: it reads the input).', minimum: 0, format: 'int32' }),
            promptTokens: Type.Optional(Type.Integer({ description: 'tokenise: prompt tokens counted.', minimum: 0, format: 'int64' })),
            tokenizer: Type.Optional(
              StringEnum(['engine', 'estimated'], { description: "tokenise: counted by the engine's tokenizer, or estimated from characters." }),
            ),
            refused: Type.Optional(
              Type.Integer({
                description: "tokenise: records refused before the engine (prompt plus max_tokens beyond the engine's context).",
                minimum: 0,
                format: 'int64',
              }),
            ),
          },
          { description: "One stage of the workers' pipeline." },
        ),
        { description: "The workers' stage pipeline (tokenise → infer → postprocess, bounded queues between), from their reports (ADR 0167).", maxItems: 3 },
      ),
    ),
    routing: Type.Optional(BatchRouting),
  },
  { description: 'Observed state of a BatchInferenceJob, written by the controller.' },
);
export type BatchInferenceJobStatus = Static<typeof BatchInferenceJobStatus>;

export const BatchInferenceJob = withRules(
  Resource(
    'BatchInferenceJob',
    BatchInferenceJobSpec,
    BatchInferenceJobStatus,
    'Offline inference over a dataset with dynamic batching, fair GPU time slicing and resumable progress.',
  ),
  [nameLengthRule(48, 'worker pods are named <name>-<index> and must stay valid DNS labels')],
);
export type BatchInferenceJob = Static<typeof BatchInferenceJob>;
