// TrainingJob: distributed (PyTorch DDP / torchrun) training as one gang (seed 000 §1, seed 001 §1 and §3,
// issue 5). Field names follow what PyTorchJob / TrainJob / Volcano Job users expect.
import { Type, type Static } from '@sinclair/typebox';
import { GPU_RESOURCE } from '../wire.ts';
import {
  Conditions,
  Container,
  GpuRequirements,
  Obj,
  PodTemplate,
  PriorityClassName,
  QueueName,
  Resource,
  ResourceList,
  StringEnum,
  celLevelAtMost,
  TopologyLevelEnum,
  gpusIn,
  nameLengthRule,
  dnsLabelNameRule,
  topologyRank,
  withRules,
  Count,
  Timestamp,
  ObservedGeneration,
} from './common.ts';

export const TRAINING_STRATEGIES = ['ring-allreduce', 'tree-allreduce', 'hierarchical-allreduce', 'parameter-server', 'none'] as const;
export type TrainingStrategy = (typeof TRAINING_STRATEGIES)[number];

export const TrainingTopology = withRules(
  Obj(
    {
      strategy: StringEnum(TRAINING_STRATEGIES, {
        description:
          'Communication pattern the placement optimises for; ring-allreduce asks for the placement with the best ring bandwidth (fewest nodes, NVLink first). Default: ring-allreduce.',
        default: 'ring-allreduce',
      }),
      requiredLevel: Type.Optional(
        TopologyLevelEnum('All replicas must share one domain of this level (nvlink-domain, node, rack, block or zone); unset means no requirement.'),
      ),
      preferredLevel: Type.Optional(
        TopologyLevelEnum('The scheduler prefers to pack all replicas into one domain of this level; must not be wider than requiredLevel.'),
      ),
    },
    { description: 'Topology the gang needs: communication strategy and required/preferred topology domain. Default: {} (strategy ring-allreduce).', default: {} },
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
export type TrainingTopology = Static<typeof TrainingTopology>;

const ExitCode = Type.Integer({ description: 'A container exit code.', minimum: 1, maximum: 255 });

export const ExitCodePolicy = withRules(
  Obj(
    {
      retryable: Type.Optional(
        Type.Array(ExitCode, {
          description: 'Exit codes that restart the gang (counted against backoffLimit).',
          maxItems: 64,
          'x-kubernetes-list-type': 'set',
        }),
      ),
      permanent: Type.Optional(
        Type.Array(ExitCode, {
          description: 'Exit codes that fail the job at once without a retry.',
          maxItems: 64,
          'x-kubernetes-list-type': 'set',
        }),
      ),
    },
    {
      description:
        'With restartPolicy ExitCode: which exit codes are retried and which are permanent; codes in neither list follow the Kubeflow convention (1-127 permanent, 128-255 retryable).',
    },
  ),
  [
    {
      rule: '!has(self.retryable) || !has(self.permanent) || self.retryable.all(c, !(c in self.permanent))',
      message: 'an exit code cannot be both retryable and permanent',
      fieldPath: '.retryable',
      check: (self) => !self.retryable || !self.permanent || self.retryable.every((c) => !self.permanent?.includes(c)),
    },
  ],
);
export type ExitCodePolicy = Static<typeof ExitCodePolicy>;

export const NcclSettings = Obj(
  {
    ibDisable: Type.Boolean({ description: 'Sets NCCL_IB_DISABLE; false keeps InfiniBand/RoCE enabled (NCCL_IB_DISABLE=0). Default: false.', default: false }),
    socketTimeout: Type.Integer({
      description: 'Value of NCCL_SOCKET_TIMEOUT injected into every replica (seed 000 uses 1200). Default: 1200.',
      minimum: 1,
      maximum: 86400,
      default: 1200,
    }),
    asyncErrorHandling: Type.Boolean({
      description: 'Sets NCCL_ASYNC_ERROR_HANDLING / TORCH_NCCL_ASYNC_ERROR_HANDLING so a hung collective fails instead of blocking. Default: true.',
      default: true,
    }),
    timeoutSeconds: Type.Integer({
      description: 'Collective timeout in seconds (NCCL_TIMEOUT and the process-group timeout). Default: 1800.',
      minimum: 1,
      maximum: 86400,
      default: 1800,
    }),
    netGdrLevel: Type.Optional(Type.Integer({ description: 'NCCL_NET_GDR_LEVEL (GPUDirect RDMA level, 0-5); unset leaves NCCL\'s default.', minimum: 0, maximum: 5 })),
    socketIfname: Type.Optional(Type.String({ description: 'NCCL_SOCKET_IFNAME, e.g. "eth0" or "^lo,docker".', minLength: 1, maxLength: 256 })),
    debug: Type.Optional(StringEnum(['VERSION', 'WARN', 'INFO', 'TRACE'], { description: 'NCCL_DEBUG level; unset leaves it off.' })),
    topologyFile: Type.Boolean({
      description: "Give every GPU replica NCCL's topology file (XML) for the GPUs and NICs SITS placed it on, mounted at /etc/sits/nccl/topo.xml with NCCL_TOPO_FILE set. Default: true.",
      default: true,
    }),
  },
  {
    description: 'NCCL environment injected into every replica; a container env entry with the same name overrides it. Default: {} (every field defaulted).',
    default: {},
  },
);
export type NcclSettings = Static<typeof NcclSettings>;

export const TrainingJobSpec = withRules(
  Obj(
    {
      topology: TrainingTopology,
      replicas: Type.Integer({
        description: 'Number of replicas (pods), each one torchrun node; with minReplicas/maxReplicas it is the current size of an elastic job. Default: 1.',
        minimum: 1,
        maximum: 10000,
        default: 1,
      }),
      minReplicas: Type.Optional(
        Type.Integer({ description: 'Elastic: the job never runs with fewer replicas; the gang minimum when set.', minimum: 1, maximum: 10000 }),
      ),
      maxReplicas: Type.Optional(
        Type.Integer({ description: 'Elastic: the job grows up to this many replicas when capacity frees.', minimum: 1, maximum: 10000 }),
      ),
      gpusPerReplica: Type.Optional(
        Type.Integer({
          description: `GPUs per replica; when unset it is resources["${GPU_RESOURCE}"] (or 0); when both are set they must agree.`,
          minimum: 0,
          maximum: 64,
        }),
      ),
      nprocPerNode: Type.Optional(
        Type.Integer({ description: 'Processes per replica (torchrun --nproc_per_node, PET_NPROC_PER_NODE); unset means GPUs per replica, at least 1.', minimum: 1, maximum: 64 }),
      ),
      resources: Type.Optional(
        ResourceList(
          `Resources per replica, e.g. {"${GPU_RESOURCE}": 1, "memory": "32Gi"}. Keys with a domain and cpu/memory/ephemeral-storage go to the pod; other plain names are SITS scheduling hints (memory-gpu-optimized: GPU memory per replica).`,
        ),
      ),
      container: Type.Optional(Container),
      podTemplate: Type.Optional(PodTemplate),
      gpu: Type.Optional(GpuRequirements),
      restartPolicy: StringEnum(['OnFailure', 'ExitCode', 'Never'], {
        description:
          'What a failed or evicted replica does: OnFailure restarts the whole gang with exponential backoff, ExitCode decides by exitCodes, Never fails the job. Default: OnFailure.',
        default: 'OnFailure',
      }),
      backoffLimit: Type.Integer({ description: 'Gang restarts allowed before the job fails. Default: 3.', minimum: 0, maximum: 1000, default: 3 }),
      exitCodes: Type.Optional(ExitCodePolicy),
      activeDeadlineSeconds: Type.Optional(
        Type.Integer({ description: 'Wall-clock limit for the job from its start; exceeded jobs fail with reason DeadlineExceeded.', minimum: 1, format: 'int64' }),
      ),
      ttlSecondsAfterFinished: Type.Optional(
        Type.Integer({ description: 'Delete the finished job (and its pods) this many seconds after it succeeds or fails; unset keeps it.', minimum: 0, format: 'int64' }),
      ),
      cleanPodPolicy: StringEnum(['All', 'Running', 'None'], {
        description: 'Which pods are deleted when the job finishes: All, Running (still-running ones; finished pods stay for logs) or None. Default: Running.',
        default: 'Running',
      }),
      gangSchedulingTimeoutSeconds: Type.Integer({
        description: 'A gang not fully placed within this time releases what it holds and is requeued, so a stuck replica never pins GPUs. Default: 300.',
        minimum: 1,
        maximum: 86400,
        default: 300,
      }),
      queue: Type.Optional(QueueName()),
      priorityClassName: Type.Optional(PriorityClassName()),
      suspend: Type.Boolean({ description: 'When true no pods run (running ones are deleted); resuming restarts the gang. Default: false.', default: false }),
      masterPort: Type.Integer({ description: 'Rendezvous port on rank 0 (MASTER_PORT, PET_MASTER_PORT). Default: 29500.', minimum: 1, maximum: 65535, default: 29500 }),
      nccl: NcclSettings,
      expectedRuntimeSeconds: Type.Optional(
        Type.Integer({ description: 'User estimate of the run time, used for start-time predictions and backfill.', minimum: 1, format: 'int64' }),
      ),
    },
    { description: 'Desired state of a TrainingJob.' },
  ),
  [
    {
      rule: 'has(self.container) || has(self.podTemplate)',
      message: 'set container or podTemplate',
      fieldPath: '.container',
      reason: 'FieldValueRequired',
      check: (self) => self.container !== undefined || self.podTemplate !== undefined,
    },
    {
      rule: '!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas',
      message: 'minReplicas must be less than or equal to maxReplicas',
      fieldPath: '.minReplicas',
      check: (self) => self.minReplicas === undefined || self.maxReplicas === undefined || self.minReplicas <= self.maxReplicas,
    },
    {
      rule: '!has(self.minReplicas) || self.minReplicas <= self.replicas',
      message: 'replicas must be greater than or equal to minReplicas',
      fieldPath: '.replicas',
      check: (self) => self.minReplicas === undefined || self.minReplicas <= self.replicas,
    },
    {
      rule: '!has(self.maxReplicas) || self.replicas <= self.maxReplicas',
      message: 'replicas must be less than or equal to maxReplicas',
      fieldPath: '.replicas',
      check: (self) => self.maxReplicas === undefined || self.replicas <= self.maxReplicas,
    },
    {
      rule: `!has(self.gpusPerReplica) || !has(self.resources) || !('${GPU_RESOURCE}' in self.resources) || string(self.resources['${GPU_RESOURCE}']) == string(self.gpusPerReplica)`,
      message: `gpusPerReplica must equal resources["${GPU_RESOURCE}"] when both are set`,
      fieldPath: '.gpusPerReplica',
      check: (self) => {
        const fromResources = self.resources?.[GPU_RESOURCE];
        return self.gpusPerReplica === undefined || fromResources === undefined || String(fromResources) === String(self.gpusPerReplica);
      },
    },
    {
      rule: "!has(self.exitCodes) || self.restartPolicy == 'ExitCode'",
      message: 'exitCodes is only used with restartPolicy ExitCode',
      fieldPath: '.exitCodes',
      check: (self) => self.exitCodes === undefined || self.restartPolicy === 'ExitCode',
    },
  ],
);
export type TrainingJobSpec = Static<typeof TrainingJobSpec>;

export const TRAINING_JOB_PHASES = ['Pending', 'Scheduling', 'Running', 'Restarting', 'Succeeded', 'Failed'] as const;
export type TrainingJobPhase = (typeof TRAINING_JOB_PHASES)[number];

export const TrainingJobStatus = Obj(
  {
    phase: Type.Optional(StringEnum(TRAINING_JOB_PHASES, { description: 'Lifecycle phase: Pending, Scheduling, Running, Restarting, Succeeded or Failed.' })),
    conditions: Type.Optional(Conditions),
    observedGeneration: ObservedGeneration(),
    replicas: Type.Optional(Count('Replicas (pods) that currently exist; the scale subresource reads it.')),
    readyReplicas: Type.Optional(Count('Replicas whose pod is Running and ready.')),
    succeededReplicas: Type.Optional(Count('Replicas whose pod succeeded.')),
    failedReplicas: Type.Optional(Count('Replicas whose pod failed in the current attempt.')),
    selector: Type.Optional(Type.String({ description: 'Label selector of the pods, for the scale subresource.', maxLength: 1024 })),
    worldSize: Type.Optional(Count('WORLD_SIZE of the current gang (replicas × processes per replica).')),
    gpus: Type.Optional(Count('GPUs held by the bound replicas.')),
    restartCount: Type.Optional(Count('Gang restarts so far, compared with backoffLimit.')),
    attempt: Type.Optional(Count('Gang generation: bumped on every restart and every elastic resize; the pods carry it in label ai.sits2026.dev/attempt.')),
    currentReplicas: Type.Optional(Count('Replicas of the current gang (elastic jobs: between minReplicas and replicas, what fitted).')),
    nextAttemptTime: Type.Optional(Timestamp('While Restarting: when the next gang is created (after the backoff).')),
    startTime: Type.Optional(Timestamp('When the job was first admitted and its pods created.')),
    completionTime: Type.Optional(Timestamp('When the job succeeded or failed.')),
    lastRestartTime: Type.Optional(Timestamp('When the gang last restarted; backoff is measured from it.')),
    nodes: Type.Optional(
      Type.Array(Type.String({ description: 'A node name.', maxLength: 253 }), {
        description: 'Nodes the replicas are bound to, in rank order.',
        maxItems: 10000,
      }),
    ),
    queue: Type.Optional(Type.String({ description: 'Queue holding or running the job.', maxLength: 63 })),
    estimatedStartTime: Type.Optional(Timestamp('Predicted start time while pending, from a forward simulation of the queue.')),
    lastCheckpointTime: Type.Optional(Timestamp('Last checkpoint the job reported; preemption prefers recently checkpointed victims.')),
  },
  { description: 'Observed state of a TrainingJob, written by the controller.' },
);
export type TrainingJobStatus = Static<typeof TrainingJobStatus>;

export const TrainingJob = withRules(
  Resource('TrainingJob', TrainingJobSpec, TrainingJobStatus, 'A distributed training job run as one gang of replicas.'),
  [nameLengthRule(48, 'pod hostnames <name>-<rank> and the headless Service must stay valid DNS labels'), dnsLabelNameRule('the headless Service for rendezvous takes the job name')],
);
export type TrainingJob = Static<typeof TrainingJob>;

/** GPUs per replica as the controller and scheduler count them. */
export function trainingJobGpusPerReplica(spec: TrainingJobSpec): number {
  return spec.gpusPerReplica ?? gpusIn(spec.resources);
}
