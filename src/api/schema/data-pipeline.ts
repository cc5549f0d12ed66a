// DataPipeline: a graph of stages on heterogeneous devices — CPU pre-processing, GPU inference, NPU
// post-processing running as a streaming pipeline (seed 004 §2.5), or fine-tune → export → serve steps
// (seed 001 §5). Stages are listed in dependency order, which makes cycles impossible to express.
import { Type, type Static } from '@sinclair/typebox';
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
} from './common.ts';

/** Stage names are short because pods are named <pipeline>-<stage>-<index>. */
const STAGE_NAME_MAX = 20;

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
        description: 'batch runs to completion before dependants start; streaming runs alongside them and hands records on as they are produced. Default: batch.',
        default: 'batch',
      }),
      parallelism: Type.Integer({ description: 'Replicas of the stage working in parallel. Default: 1.', minimum: 1, maximum: 1024, default: 1 }),
      acceleratorsPerReplica: Type.Optional(
        Type.Integer({ description: 'GPUs or NPUs per replica for gpu/npu stages; unset means 1. Must be 0 or unset for cpu stages.', minimum: 0, maximum: 64 }),
      ),
      resources: Type.Optional(ResourceList('Resources per replica (cpu, memory, ...).')),
      gpu: Type.Optional(GpuRequirements),
      container: Type.Optional(Container),
      podTemplate: Type.Optional(PodTemplate),
      workload: Type.Optional(StageWorkload),
      maxRetries: Type.Integer({ description: 'Retries of a failed stage replica before the stage fails. Default: 3.', minimum: 0, maximum: 100, default: 3 }),
    },
    { description: 'One stage of the pipeline.' },
  ),
  [
    {
      rule: '(has(self.container) ? 1 : 0) + (has(self.podTemplate) ? 1 : 0) + (has(self.workload) ? 1 : 0) == 1',
      message: 'set exactly one of container, podTemplate or workload',
      fieldPath: '.container',
      check: (self) => [self.container, self.podTemplate, self.workload].filter((x) => x !== undefined).length === 1,
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
// earlier" directly; indexOf() over a map() result is priced as unbounded by the cost estimator.
const STAGE_ORDER_RULE =
  'self.stages.all(i, s, !has(s.dependsOn) || s.dependsOn.all(d, self.stages.exists(j, t, j < i && t.name == d)))';

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
      input: Type.Optional(DataRef('Data the first stages read.')),
      output: Type.Optional(DataRef('Where the last stages write.')),
      failurePolicy: StringEnum(['StopPipeline', 'ContinueIndependent'], {
        description: 'When a stage fails: StopPipeline stops everything, ContinueIndependent lets stages that do not depend on it finish. Default: StopPipeline.',
        default: 'StopPipeline',
      }),
      queue: Type.Optional(QueueName()),
      priorityClassName: Type.Optional(PriorityClassName()),
      suspend: Type.Boolean({ description: 'When true no new stage pods start; running ones are deleted. Default: false.', default: false }),
      activeDeadlineSeconds: Type.Optional(Type.Integer({ description: 'Wall-clock limit for the whole pipeline.', minimum: 1, format: 'int64' })),
      ttlSecondsAfterFinished: Type.Optional(Type.Integer({ description: 'Delete the finished pipeline after this many seconds; unset keeps it.', minimum: 0, format: 'int64' })),
    },
    { description: 'Desired state of a DataPipeline.' },
  ),
  [
    {
      rule: STAGE_ORDER_RULE,
      message: 'dependsOn must name stages listed earlier in stages (so the graph has no cycles)',
      fieldPath: '.stages',
      check: (self) => self.stages.every((s, i) => (s.dependsOn ?? []).every((d) => self.stages.some((t, j) => j < i && t.name === d))),
    },
  ],
);
export type DataPipelineSpec = Static<typeof DataPipelineSpec>;

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
  },
  { description: 'Progress of one stage.' },
);

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
  },
  { description: 'Observed state of a DataPipeline, written by the controller.' },
);
export type DataPipelineStatus = Static<typeof DataPipelineStatus>;

export const DataPipeline = withRules(
  Resource('DataPipeline', DataPipelineSpec, DataPipelineStatus, 'A pipeline of CPU, GPU and NPU stages, batch or streaming.'),
  [nameLengthRule(36, 'pods are named <pipeline>-<stage>-<index> and must stay valid DNS labels')],
);
export type DataPipeline = Static<typeof DataPipeline>;
