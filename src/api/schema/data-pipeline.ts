// DataPipeline: a graph of stages on heterogeneous devices — CPU pre-processing, GPU inference, NPU
// post-processing running as a streaming pipeline (seed 004 §2.5), or fine-tune → export → serve steps
// (seed 001 §5). Stages are listed in dependency order, which makes cycles impossible to express (ADR 0119).
// Argo-like on top: `when` conditions on outcomes, parameters and volume artifacts handed between stages,
// `retryStrategy`, artifact GC.
import { Type, type Static } from '@sinclair/typebox';
import { MOUNT_PATH_PATTERN, SUB_PATH_PATTERN } from '../data-uri.ts';
import {
  Conditions,
  Container,
  DataRef,
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
  Timestamp,
  ObservedGeneration,
  TOPOLOGY_LEVELS,
} from './common.ts';

/** Stage names are short because pods are named <pipeline>-<stage>-<index>. */
const STAGE_NAME_MAX = 20;

export const RESOURCE_PROFILE_NAMES = ['auto', 'low-latency', 'batch-throughput'] as const;

export const PIPELINE_WORKLOAD_KINDS = ['TrainingJob', 'BatchInferenceJob', 'InferenceService'] as const;

export const StageWorkload = Obj(
  {
    kind: StringEnum(PIPELINE_WORKLOAD_KINDS, { description: 'SITS kind the stage creates: TrainingJob, BatchInferenceJob or InferenceService.' }),
    spec: Type.Record(Type.String(), Type.Unknown(), {
      description: 'Spec of that kind; validated against its schema when the stage creates the object.',
      'x-kubernetes-preserve-unknown-fields': true,
    }),
  },
  { description: 'Run a SITS workload as the stage (e.g. fine-tune, then batch-evaluate, then serve).' },
);
export type StageWorkload = Static<typeof StageWorkload>;

export const ADAPTER_DELETION_POLICIES = ['Remove', 'Keep'] as const;

export const StageAdapter = Obj(
  {
    inferenceService: DnsLabel(
      "An InferenceService in the pipeline's namespace that the user runs; the pipeline adds the adapter to it and never creates, owns or deletes it.",
    ),
    name: Type.String({ description: 'Adapter name clients request (a DNS label once {{...}} parameters are substituted).', minLength: 1, maxLength: 253 }),
    uri: Type.String({
      description: 'Where the adapter weights are, e.g. {{steps.export.outputs.parameters.uri}}; as spec.model.adapters[].uri.',
      minLength: 1,
      maxLength: 2048,
    }),
    onPipelineDeletion: StringEnum(ADAPTER_DELETION_POLICIES, {
      description:
        "Remove: deleting the pipeline takes the adapter off the service (only what the pipeline added: the user's own fields stay); Keep: it stays listed. Default: Remove.",
      default: 'Remove',
    }),
  },
  {
    description:
      "Hot-swap a LoRA adapter into a running InferenceService without a restart (ADR 0137): added to its spec.model.adapters by server-side apply under the pipeline's own field manager; the stage succeeds once every ready replica reports it Loaded, fails naming the replica when one reports Failed.",
  },
);
export type StageAdapter = Static<typeof StageAdapter>;

/** Argo-style durations: "30s", "1m30s", "500ms", or a plain number of seconds. */
export const DURATION_PATTERN = '^([0-9]+(ms|s|m|h))+$|^[0-9]+$';
const Duration = (description: string) => Type.String({ description, pattern: DURATION_PATTERN, maxLength: 32 });

export const RETRY_POLICIES = ['Always', 'OnFailure', 'OnError'] as const;
export type RetryPolicy = (typeof RETRY_POLICIES)[number];

export const RetryStrategy = Obj(
  {
    limit: Type.Integer({ description: 'Retries after the first attempt. Default: 0.', minimum: 0, maximum: 100, default: 0 }),
    retryPolicy: StringEnum(RETRY_POLICIES, {
      description:
        'OnFailure retries a stage whose container exited non-zero (or whose workload failed); OnError one whose pod or workload was lost (evicted, deleted, never ran to an exit code); Always both. Default: OnFailure.',
      default: 'OnFailure',
    }),
    backoff: Type.Optional(
      Obj(
        {
          duration: Duration('Wait before the first retry, e.g. "10s". Default: 0 (retry at once).'),
          factor: Type.Integer({ description: 'Each further retry waits factor times longer. Default: 2.', minimum: 1, maximum: 10, default: 2 }),
          maxDuration: Type.Optional(Duration('No retry starts later than this after the stage first started; the stage fails instead.')),
        },
        { description: 'Exponential backoff between attempts.' },
      ),
    ),
  },
  { description: 'Argo-like retries of a failed stage; when set it replaces maxRetries.' },
);
export type RetryStrategy = Static<typeof RetryStrategy>;

const ARTIFACT_NAME_MAX = 20;

export const OutputArtifact = withRules(
  Obj(
    {
      name: DnsLabel('Artifact name, unique in the stage.', ARTIFACT_NAME_MAX),
      volumeSnapshot: Type.Optional(
        Obj(
          {
            claimName: Type.String({
              description: 'PVC the stage wrote; snapshotted once the stage succeeds. May use {{...}} parameters.',
              minLength: 1,
              maxLength: 253,
            }),
            volumeSnapshotClassName: Type.Optional(Type.String({ description: 'VolumeSnapshotClass; unset means the cluster default.', maxLength: 253 })),
          },
          { description: 'Record the output as a VolumeSnapshot of a claim (handed over by volume, never copied).' },
        ),
      ),
      path: Type.Optional(
        Obj(
          {
            claimName: Type.String({ description: 'PVC holding the output. May use {{...}} parameters.', minLength: 1, maxLength: 253 }),
            subPath: Type.String({
              description:
                "Path inside the claim, e.g. adapters/run-1: relative, no . or .. segment, empty segment, %, backslash or control character. Default: the claim's root.",
              maxLength: 1024,
              default: '',
              pattern: SUB_PATH_PATTERN,
            }),
          },
          { description: 'Record the output as a path on a shared claim; consumers mount the same claim.' },
        ),
      ),
    },
    { description: 'An output recorded as an artifact.' },
  ),
  [
    {
      rule: 'has(self.volumeSnapshot) != has(self.path)',
      message: 'set exactly one of volumeSnapshot or path',
      fieldPath: '.volumeSnapshot',
      check: (self) => (self.volumeSnapshot === undefined) !== (self.path === undefined),
    },
  ],
);
export type OutputArtifact = Static<typeof OutputArtifact>;

export const InputArtifact = Obj(
  {
    name: DnsLabel('Name under which the stage refers to it ({{inputs.artifacts.NAME.claimName}}).', ARTIFACT_NAME_MAX),
    from: Obj(
      {
        stage: DnsLabel('Stage that produced it; must be in dependsOn.', STAGE_NAME_MAX),
        artifact: DnsLabel('Its output artifact name.', ARTIFACT_NAME_MAX),
      },
      { description: 'Which output artifact.' },
    ),
    mountPath: Type.Optional(
      Type.String({
        description:
          "Where the stage mounts it (read-only for path artifacts): in a container stage's pod, or in the pods of a workload stage (its trainer or server container). Absolute, no . or .. segment, empty segment, %, backslash or control character.",
        minLength: 1,
        maxLength: 4096,
        pattern: MOUNT_PATH_PATTERN,
      }),
    ),
    storageClassName: Type.Optional(
      Type.String({ description: 'StorageClass of the claim restored from a snapshot; unset means the cluster default.', maxLength: 253 }),
    ),
    size: Type.Optional(Type.String({ description: "Size of the restored claim; unset means the snapshot's restoreSize.", maxLength: 64 })),
    accessMode: StringEnum(['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany'], {
      description:
        'Access mode of the claim restored from a snapshot (ReadOnlyMany or ReadWriteMany when replicas on several nodes mount it). Default: ReadWriteOnce.',
      default: 'ReadWriteOnce',
    }),
  },
  { description: 'An artifact of an earlier stage, mounted by volume: a claim restored from its snapshot, or its claim and path.' },
);
export type InputArtifact = Static<typeof InputArtifact>;

export const PipelineStage = withRules(
  Obj(
    {
      name: DnsLabel('Stage name, unique in the pipeline.', STAGE_NAME_MAX),
      dependsOn: Type.Optional(
        Type.Array(Type.String({ description: 'Name of an earlier stage.', minLength: 1, maxLength: STAGE_NAME_MAX }), {
          description: 'Stages whose output this stage consumes; each must be listed earlier in stages.',
          maxItems: 16,
          'x-kubernetes-list-type': 'set',
        }),
      ),
      device: StringEnum(['cpu', 'gpu', 'npu'], { description: 'Device class the stage runs on. Default: cpu.', default: 'cpu' }),
      mode: StringEnum(['batch', 'streaming'], {
        description:
          'batch runs to completion before dependants start; streaming runs alongside them and hands records on as they are produced. Default: batch.',
        default: 'batch',
      }),
      parallelism: Type.Integer({ description: 'Replicas of the stage working in parallel. Default: 1.', minimum: 1, maximum: 1024, default: 1 }),
      acceleratorsPerReplica: Type.Optional(
        Type.Integer({
          description: 'GPUs or NPUs per replica for gpu/npu stages; unset means 1. Must be 0 or unset for cpu stages.',
          minimum: 0,
          maximum: 64,
        }),
      ),
      resources: Type.Optional(ResourceList('Resources per replica (cpu, memory, ...).')),
      gpu: Type.Optional(GpuRequirements),
      container: Type.Optional(Container),
      podTemplate: Type.Optional(PodTemplate),
      workload: Type.Optional(StageWorkload),
      adapter: Type.Optional(StageAdapter),
      maxRetries: Type.Integer({ description: 'Retries of a failed stage replica before the stage fails. Default: 3.', minimum: 0, maximum: 100, default: 3 }),
      retryStrategy: Type.Optional(RetryStrategy),
      resourceProfile: Type.Optional(
        StringEnum(RESOURCE_PROFILE_NAMES, {
          description:
            'Choose GPU model, GPUs per replica, replicas, topology and queue from the cluster: low-latency (the smallest GPUs holding weights + KV), batch-throughput (most tokens/s per GPU-hour), auto (training for TrainingJob stages, low-latency for InferenceService, batch-throughput otherwise). The reasons go to the stage status (ADR 0123).',
        }),
      ),
      model: Type.Optional(
        Obj(
          {
            params: Type.Number({ description: 'Parameters of the model the stage trains or serves, e.g. 8.03e9.', exclusiveMinimum: 0 }),
            dtype: Type.Optional(StringEnum(['bf16', 'fp16', 'fp8', 'int8', 'int4'], { description: 'Weight precision. Default: bf16.' })),
            kvBytesPerToken: Type.Optional(Type.Integer({ description: 'KV-cache bytes per token; unset: estimated from params.', minimum: 1 })),
            trainingMethod: Type.Optional(StringEnum(['full', 'lora'], { description: 'TrainingJob stages: full or lora. Default: full.' })),
          },
          { description: 'The model the stage works on, for resourceProfile sizing.' },
        ),
      ),
      profileOverrides: Type.Optional(
        Obj(
          {
            gpuModels: Type.Optional(
              Type.Array(Type.String({ description: 'A GPU model, e.g. A800-SXM4-80GB.', minLength: 1, maxLength: 128 }), {
                description: 'GPU models allowed (the profile picks among them).',
                maxItems: 16,
              }),
            ),
            gpusPerPod: Type.Optional(Type.Integer({ description: 'GPUs per replica.', minimum: 1, maximum: 64 })),
            pods: Type.Optional(Type.Integer({ description: 'Replicas.', minimum: 1, maximum: 1024 })),
            topology: Type.Optional(
              StringEnum([...TOPOLOGY_LEVELS, 'none'], { description: 'Required topology level (nvlink-domain, node, rack, block, zone), or none.' }),
            ),
            queue: Type.Optional(QueueName()),
          },
          { description: "Per-stage choices that win over the resourceProfile's." },
        ),
      ),
      cache: Type.Boolean({
        description:
          "In runs of a scheduled pipeline, reuse this stage's result from an earlier run with the same cache key (resolved spec and inputs). Default: true.",
        default: true,
      }),
      cacheMaxAgeSeconds: Type.Optional(Type.Integer({ description: 'Reuse only results younger than this; unset: any age.', minimum: 1, format: 'int64' })),
      when: Type.Optional(
        Type.String({
          description:
            'Run only if this holds once the stages it names have finished, e.g. "train.Succeeded && !eval.Failed" (names: stages in dependsOn; outcomes Succeeded, Failed, Skipped, Completed = Succeeded or Failed; && || ! and parentheses). False: the stage is Skipped. Unset: every dependency must succeed.',
          minLength: 1,
          maxLength: 1024,
        }),
      ),
      inputs: Type.Optional(
        Obj(
          {
            artifacts: Type.Optional(
              Type.Array(InputArtifact, {
                description: 'Artifacts mounted into the stage.',
                maxItems: 8,
                'x-kubernetes-list-type': 'map',
                'x-kubernetes-list-map-keys': ['name'],
              }),
            ),
          },
          { description: 'What the stage takes from earlier stages besides {{steps.NAME.outputs.parameters.X}} substitutions.' },
        ),
      ),
      outputs: Type.Optional(
        Obj(
          {
            parameters: Type.Optional(
              Type.Array(
                Obj(
                  {
                    name: Type.String({ description: 'Parameter name.', minLength: 1, maxLength: 63, pattern: '^[A-Za-z0-9_-]+$' }),
                    default: Type.Optional(Type.String({ description: 'Value when the stage does not report one; unset makes it required.', maxLength: 4096 })),
                  },
                  { description: 'A declared output parameter.' },
                ),
                {
                  description:
                    "Parameters the stage reports: a JSON object in the container's termination message, or in the ai.sits2026.dev/outputs annotation of its pod or workload.",
                  maxItems: 16,
                  'x-kubernetes-list-type': 'map',
                  'x-kubernetes-list-map-keys': ['name'],
                },
              ),
            ),
            artifacts: Type.Optional(
              Type.Array(OutputArtifact, {
                description: 'Outputs recorded as artifacts once the stage succeeds.',
                maxItems: 8,
                'x-kubernetes-list-type': 'map',
                'x-kubernetes-list-map-keys': ['name'],
              }),
            ),
          },
          { description: 'What the stage hands on.' },
        ),
      ),
    },
    { description: 'One stage of the pipeline.' },
  ),
  [
    {
      rule: '(has(self.container) ? 1 : 0) + (has(self.podTemplate) ? 1 : 0) + (has(self.workload) ? 1 : 0) + (has(self.adapter) ? 1 : 0) == 1',
      message: 'set exactly one of container, podTemplate, workload or adapter',
      fieldPath: '.container',
      check: (self) => [self.container, self.podTemplate, self.workload, self.adapter].filter((x) => x !== undefined).length === 1,
    },
    {
      rule: '!has(self.adapter) || (!has(self.resourceProfile) && !has(self.outputs) && !has(self.inputs))',
      message: 'an adapter stage runs nothing: it takes no resourceProfile, inputs or outputs (name the upstream artifact in adapter.uri)',
      fieldPath: '.adapter',
      check: (self) => self.adapter === undefined || (self.resourceProfile === undefined && self.outputs === undefined && self.inputs === undefined),
    },
    {
      rule: "self.device != 'cpu' || !has(self.acceleratorsPerReplica) || self.acceleratorsPerReplica == 0",
      message: 'cpu stages cannot request accelerators',
      fieldPath: '.acceleratorsPerReplica',
      check: (self) => self.device !== 'cpu' || self.acceleratorsPerReplica === undefined || self.acceleratorsPerReplica === 0,
    },
    {
      rule: "!has(self.gpu) || self.device == 'gpu'",
      message: 'gpu requirements apply to gpu stages only',
      fieldPath: '.gpu',
      check: (self) => self.gpu === undefined || self.device === 'gpu',
    },
  ],
);
export type PipelineStage = Static<typeof PipelineStage>;

// An index-aware comprehension (CEL two-variable all/exists, Kubernetes >= 1.33) expresses "listed
// earlier" directly; indexOf() over a map() result is priced as unbounded by the cost estimator. Two rules so
// that an unknown name and a backward edge (every cycle has one) get their own message (ADR 0119). No
// messageExpression naming the stage: its estimated cost over 32 stages × 16 names exceeds the apiserver's budget.
const known = (d: string) => `self.stages.exists(t, t.name == ${d})`;
const STAGE_KNOWN_RULE = `self.stages.all(s, !has(s.dependsOn) || s.dependsOn.all(d, ${known('d')}))`;
const STAGE_ORDER_RULE = `self.stages.all(i, s, !has(s.dependsOn) || s.dependsOn.all(d, !${known('d')} || self.stages.exists(j, t, j < i && t.name == d)))`;

export const PipelineSchedule = Obj(
  {
    cron: Type.String({ description: 'Standard 5-field cron or a macro such as @hourly, read in timeZone.', minLength: 1, maxLength: 256 }),
    timeZone: Type.Optional(Type.String({ description: 'IANA time zone. Default: UTC.', minLength: 1, maxLength: 64 })),
    concurrencyPolicy: StringEnum(['Allow', 'Forbid', 'Replace'], { description: 'As CronJob: Allow, Forbid or Replace. Default: Allow.', default: 'Allow' }),
    startingDeadlineSeconds: Type.Optional(Type.Integer({ description: 'A scheduled time missed by more than this is skipped.', minimum: 0, format: 'int64' })),
    suspend: Type.Boolean({ description: 'No scheduled runs (manual re-runs still start). Default: false.', default: false }),
    successfulRunsHistoryLimit: Type.Integer({ description: 'Finished successful runs kept. Default: 3.', minimum: 0, maximum: 100, default: 3 }),
    failedRunsHistoryLimit: Type.Integer({ description: 'Finished failed runs kept. Default: 1.', minimum: 0, maximum: 100, default: 1 }),
  },
  {
    description:
      'Makes the pipeline a template: each run is a child DataPipeline <name>-<minute> (a manual re-run: the ai.sits2026.dev/rerun annotation, <name>-r<hash>) with the stages; history pruned by the limits (ADR 0121).',
  },
);

export const ARTIFACT_GC_STRATEGIES = ['OnPipelineCompletion', 'OnPipelineDeletion', 'Never'] as const;

export const DataPipelineSpec = withRules(
  Obj(
    {
      stages: Type.Array(PipelineStage, {
        description: 'Stages in dependency order: a stage may depend only on stages listed before it.',
        minItems: 1,
        maxItems: 32,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
      schedule: Type.Optional(PipelineSchedule),
      input: Type.Optional(DataRef('Data the first stages read.')),
      output: Type.Optional(DataRef('Where the last stages write.')),
      failurePolicy: StringEnum(['StopPipeline', 'ContinueIndependent'], {
        description:
          'When a stage fails: StopPipeline stops everything, ContinueIndependent lets stages that do not depend on it finish. Default: StopPipeline.',
        default: 'StopPipeline',
      }),
      queue: Type.Optional(QueueName()),
      priorityClassName: Type.Optional(PriorityClassName()),
      suspend: Type.Boolean({ description: 'When true no new stage pods start; running ones are deleted. Default: false.', default: false }),
      activeDeadlineSeconds: Type.Optional(Type.Integer({ description: 'Wall-clock limit for the whole pipeline.', minimum: 1, format: 'int64' })),
      ttlSecondsAfterFinished: Type.Optional(
        Type.Integer({ description: 'Delete the finished pipeline after this many seconds; unset keeps it.', minimum: 0, format: 'int64' }),
      ),
      artifactGC: Type.Optional(
        Obj(
          {
            strategy: StringEnum(ARTIFACT_GC_STRATEGIES, {
              description:
                'OnPipelineCompletion deletes the artifact snapshots once the pipeline finishes; OnPipelineDeletion when it is deleted (they are owned by it); Never leaves them (no owner). Default: OnPipelineDeletion.',
              default: 'OnPipelineDeletion',
            }),
            keepLast: Type.Optional(
              Type.Integer({
                description: 'With OnPipelineCompletion: keep the last N artifacts produced (e.g. the final model), delete the earlier ones.',
                minimum: 0,
                maximum: 64,
              }),
            ),
          },
          { description: "When the pipeline's artifact snapshots are deleted. Restored claims are owned by the pipeline and go with it." },
        ),
      ),
    },
    { description: 'Desired state of a DataPipeline.' },
  ),
  [
    {
      rule: STAGE_KNOWN_RULE,
      message: 'dependsOn names a stage that does not exist in stages',
      fieldPath: '.stages',
      check: (self) => self.stages.every((s) => (s.dependsOn ?? []).every((d) => self.stages.some((t) => t.name === d))),
    },
    {
      rule: STAGE_ORDER_RULE,
      message: 'dependsOn must name a stage listed earlier in stages: a later stage or the stage itself would make a cycle',
      fieldPath: '.stages',
      check: (self) =>
        self.stages.every((s, i) =>
          (s.dependsOn ?? []).every((d) => !self.stages.some((t) => t.name === d) || self.stages.some((t, j) => j < i && t.name === d)),
        ),
    },
  ],
);
export type DataPipelineSpec = Static<typeof DataPipelineSpec>;

/** A run is named <template>-<unix minute (8 digits)> and pipeline names are at most 36 characters. */
export const TEMPLATE_NAME_MAX = 27;

/** Bound on a template's step-cache history (newest kept). */
export const STEP_CACHE_MAX = 32;

export const STAGE_PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Skipped'] as const;
export const DATA_PIPELINE_PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Suspended'] as const;

export const StageStatus = Obj(
  {
    name: Type.String({ description: 'Stage name.', maxLength: STAGE_NAME_MAX }),
    phase: StringEnum(STAGE_PHASES, { description: 'Pending, Running, Succeeded, Failed or Skipped.' }),
    readyReplicas: Type.Optional(Count('Replicas running.')),
    retries: Type.Optional(Count('Retries used so far.')),
    startTime: Type.Optional(Timestamp('When the stage started.')),
    completionTime: Type.Optional(Timestamp('When the stage finished.')),
    message: Type.Optional(Type.String({ description: 'Why the stage is in its phase.', maxLength: 4096 })),
    nextRetryTime: Type.Optional(Timestamp('When the next attempt starts (backoff).')),
    reasons: Type.Optional(
      Type.Array(Type.String({ maxLength: 1024 }), { description: 'Why the resourceProfile chose what it chose, one line each.', maxItems: 16 }),
    ),
    cacheKey: Type.Optional(Type.String({ description: 'sha256 of the resolved stage and its inputs (step caching).', maxLength: 80 })),
    cachedFrom: Type.Optional(Type.String({ description: 'The earlier run whose result this stage reused.', maxLength: 253 })),
    outputs: Type.Optional(
      Obj(
        {
          parameters: Type.Optional(
            Type.Record(Type.String(), Type.String({ maxLength: 4096 }), { description: 'Output parameters by name.', maxProperties: 32 }),
          ),
          artifacts: Type.Optional(
            Type.Array(
              Obj(
                {
                  name: Type.String({ description: 'Artifact name.', maxLength: ARTIFACT_NAME_MAX }),
                  volumeSnapshotName: Type.Optional(Type.String({ description: 'The VolumeSnapshot holding it.', maxLength: 253 })),
                  claimName: Type.Optional(Type.String({ description: 'The claim holding it (path artifacts).', maxLength: 253 })),
                  subPath: Type.Optional(Type.String({ description: 'Path inside the claim.', maxLength: 1024 })),
                  readyToUse: Type.Boolean({ description: 'True once it can be restored or mounted.' }),
                  deleted: Type.Optional(Type.Boolean({ description: 'True once garbage-collected by artifactGC.' })),
                },
                { description: 'A recorded artifact.' },
              ),
              { description: 'Output artifacts.', maxItems: 8 },
            ),
          ),
        },
        { description: 'What the stage handed on.' },
      ),
    ),
  },
  { description: 'Progress of one stage.' },
);

export type StageStatus = Static<typeof StageStatus>;

export const DataPipelineStatus = Obj(
  {
    phase: Type.Optional(StringEnum(DATA_PIPELINE_PHASES, { description: 'Pending, Running, Succeeded, Failed or Suspended.' })),
    conditions: Type.Optional(Conditions),
    observedGeneration: ObservedGeneration(),
    stages: Type.Optional(
      Type.Array(StageStatus, {
        description: 'Per-stage progress.',
        maxItems: 32,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    completedStages: Type.Optional(Count('Stages that succeeded.')),
    totalStages: Type.Optional(Count('Stages in the pipeline.')),
    startTime: Type.Optional(Timestamp('When the first stage started.')),
    completionTime: Type.Optional(Timestamp('When the pipeline finished.')),
    message: Type.Optional(Type.String({ description: 'Why the pipeline is in its phase (the failed stage and its reason).', maxLength: 4096 })),
    lastScheduleTime: Type.Optional(Timestamp('Templates: the last scheduled time a run was started for.')),
    nextScheduleTime: Type.Optional(Timestamp('Templates: the next scheduled time.')),
    lastRerunToken: Type.Optional(Type.String({ description: 'Templates: the ai.sits2026.dev/rerun token last acted on.', maxLength: 253 })),
    runs: Type.Optional(
      Type.Array(
        Obj(
          {
            name: Type.String({ description: 'The run (a DataPipeline).', maxLength: 253 }),
            phase: Type.String({ description: 'Its phase: Pending, Running, Succeeded or Failed.', maxLength: 32 }),
            startTime: Type.Optional(Timestamp('When the run started.')),
          },
          { description: 'A run.' },
        ),
        { description: 'Templates: the runs kept, oldest first.', maxItems: 256 },
      ),
    ),
    stepCache: Type.Optional(
      Type.Array(
        Obj(
          {
            key: Type.String({ description: 'The cache key.', maxLength: 80 }),
            run: Type.String({ description: 'The run that produced it.', maxLength: 253 }),
            stage: Type.String({ description: 'The stage.', maxLength: STAGE_NAME_MAX }),
            finishedAt: Timestamp('When the stage succeeded.'),
            outputs: Type.Record(Type.String(), Type.Unknown(), { 'x-kubernetes-preserve-unknown-fields': true, description: 'The stage outputs.' }),
          },
          { description: 'A reusable stage result.' },
        ),
        {
          description: 'Templates: the newest successful stage results of its runs (bounded), handed to each new run for step caching.',
          maxItems: STEP_CACHE_MAX,
        },
      ),
    ),
  },
  { description: 'Observed state of a DataPipeline, written by the controller.' },
);
export type DataPipelineStatus = Static<typeof DataPipelineStatus>;

export const DataPipeline = withRules(
  Resource('DataPipeline', DataPipelineSpec, DataPipelineStatus, 'A pipeline of CPU, GPU and NPU stages, batch or streaming.'),
  [
    nameLengthRule(36, 'pods are named <pipeline>-<stage>-<index> and must stay valid DNS labels'),
    {
      rule: `!has(self.spec.schedule) || self.metadata.name.size() <= ${TEMPLATE_NAME_MAX}`,
      message: `metadata.name must be at most ${TEMPLATE_NAME_MAX} characters with spec.schedule: its runs are named <name>-<unix minute> (ADR 0121)`,
      fieldPath: '.metadata',
      check: (self) => self.spec.schedule === undefined || (self.metadata.name ?? '').length <= TEMPLATE_NAME_MAX,
    },
  ],
);
export type DataPipeline = Static<typeof DataPipeline>;
