// TrainingJob: distributed (PyTorch DDP / torchrun) training as one gang (seed 000 §1, seed 001 §1 and §3,
// issue 5). Field names follow what PyTorchJob / TrainJob / Volcano Job users expect.
import { Type, type Static } from '@sinclair/typebox';
import { MOUNT_PATH_PATTERN } from '../data-uri.ts';
import { MAX_PARAMETERS, MIN_PARAMETERS, MODEL_KINDS, PARALLELISMS } from '../../core/estimate/model-hint.ts';
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
  DNS_SUBDOMAIN_PATTERN,
  Quantity,
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
    {
      description: 'Topology the gang needs: communication strategy and required/preferred topology domain. Default: {} (strategy ring-allreduce).',
      default: {},
    },
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
    netGdrLevel: Type.Optional(
      Type.Integer({ description: "NCCL_NET_GDR_LEVEL (GPUDirect RDMA level, 0-5); unset leaves NCCL's default.", minimum: 0, maximum: 5 }),
    ),
    socketIfname: Type.Optional(Type.String({ description: 'NCCL_SOCKET_IFNAME, e.g. "eth0" or "^lo,docker".', minLength: 1, maxLength: 256 })),
    debug: Type.Optional(StringEnum(['VERSION', 'WARN', 'INFO', 'TRACE'], { description: 'NCCL_DEBUG level; unset leaves it off.' })),
    topologyFile: Type.Boolean({
      description:
        "Give every GPU replica NCCL's topology file (XML) for the GPUs and NICs SITS placed it on, mounted at /etc/sits/nccl/topo.xml with NCCL_TOPO_FILE set. Default: true.",
      default: true,
    }),
  },
  {
    description: 'NCCL environment injected into every replica; a container env entry with the same name overrides it. Default: {} (every field defaulted).',
    default: {},
  },
);
export type NcclSettings = Static<typeof NcclSettings>;

/** What the job trains (ADR 0188): the scheduler predicts its step time on each placement from it. */
export const TrainingModelHint = Obj(
  {
    parameters: Type.Number({
      description: `Trainable parameters of the model, e.g. 1300000000 for a 1.3B GPT (${MIN_PARAMETERS} to ${MAX_PARAMETERS}).`,
      minimum: MIN_PARAMETERS,
      maximum: MAX_PARAMETERS,
    }),
    kind: StringEnum(MODEL_KINDS, {
      description: 'gpt: a decoder (2048-token sequences, 8 per GPU); bert: an encoder (512-token sequences, 32 per GPU). Default: gpt.',
      default: 'gpt',
    }),
    parallelism: StringEnum(PARALLELISMS, {
      description: 'ddp: gradients all-reduced (PyTorch DDP); fsdp: sharded (1.5× the bytes, hidden behind the whole step). Default: ddp.',
      default: 'ddp',
    }),
  },
  {
    description:
      'The model the job trains. The scheduler weighs how communication-bound it is on each candidate placement; unset, it assumes a 1.3B GPT in DDP.',
  },
);
export type TrainingModelHint = Static<typeof TrainingModelHint>;

export const CHECKPOINT_WRITERS = ['all-ranks', 'rank0'] as const;
export const CHECKPOINT_RETENTION_POLICIES = ['Retain', 'Delete'] as const;

/** The one shared checkpoint volume of a job (issue 14, 001 §3.3): an existing claim, or a claim the controller creates. */
export const CheckpointVolume = withRules(
  Obj(
    {
      claimName: Type.Optional(
        Type.String({
          description: 'An existing PersistentVolumeClaim (ReadWriteMany when the job has more than one replica), mounted in every rank.',
          minLength: 1,
          maxLength: 253,
          pattern: DNS_SUBDOMAIN_PATTERN,
        }),
      ),
      claimTemplate: Type.Optional(
        Obj(
          {
            storageClassName: Type.Optional(
              Type.String({ description: 'StorageClass of the claim; unset uses the cluster default.', minLength: 1, maxLength: 253 }),
            ),
            size: Quantity('Requested size of the claim, e.g. "100Gi".'),
          },
          {
            description:
              'The controller creates one ReadWriteMany claim <job>-checkpoint for the whole job (restored from the newest Ready checkpoint when it is missing).',
          },
        ),
      ),
    },
    { description: 'Exactly one of claimName or claimTemplate: one volume for the whole job, so every rank sees the same checkpoint path.' },
  ),
  [
    {
      rule: 'has(self.claimName) != has(self.claimTemplate)',
      message: 'set exactly one of claimName or claimTemplate: one shared volume per job',
      fieldPath: '.claimName',
      reason: 'FieldValueRequired',
      check: (self) => (self.claimName !== undefined) !== (self.claimTemplate !== undefined),
    },
  ],
);
export type CheckpointVolume = Static<typeof CheckpointVolume>;

/** The TrainingJob checkpoint policy (ADR 0083): the volume, the snapshot class, writers, trigger, retention, deadlines. */
export const CheckpointPolicy = Obj(
  {
    volume: CheckpointVolume,
    mountPath: Type.String({
      description:
        'Where the checkpoint volume is mounted in every rank (SITS_CHECKPOINT_DIR): absolute, no . or .. segment, empty segment, %, backslash or control character (the overlap check compares paths as text). Default: /checkpoints.',
      pattern: MOUNT_PATH_PATTERN,
      minLength: 2,
      maxLength: 1024,
      default: '/checkpoints',
    }),
    volumeSnapshotClassName: Type.String({
      description: 'VolumeSnapshotClass (snapshot.storage.k8s.io/v1) of the snapshots taken of the checkpoint volume.',
      minLength: 1,
      maxLength: 253,
      pattern: DNS_SUBDOMAIN_PATTERN,
    }),
    writers: StringEnum(CHECKPOINT_WRITERS, {
      description:
        'all-ranks (torch.distributed.checkpoint: every rank writes its shards, rank 0 commits once all have) or rank0 (DDP: rank 0 writes alone). Default: all-ranks.',
      default: 'all-ranks',
    }),
    intervalSeconds: Type.Optional(
      Type.Integer({
        description: 'Ask for a checkpoint this long after the previous one started; unset: only on request (annotation ai.sits2026.dev/request-checkpoint).',
        minimum: 10,
        maximum: 604800,
      }),
    ),
    retention: Obj(
      {
        keep: Type.Integer({ description: 'Committed snapshots kept (the newest one is always kept). Default: 3.', minimum: 1, maximum: 1000, default: 3 }),
        ttlSeconds: Type.Optional(
          Type.Integer({
            description: 'Committed snapshots older than this are deleted (never the newest one); upstream has no snapshot TTL.',
            minimum: 1,
            format: 'int64',
          }),
        ),
        policy: StringEnum(CHECKPOINT_RETENTION_POLICIES, {
          description:
            "What happens to the job's snapshots when the job is deleted: Delete removes them, Retain keeps them (a new job of the same name restores from them). Default: Delete.",
          default: 'Delete',
        }),
      },
      { description: 'Retention by count and by TTL. Default: {} (keep 3, Delete).', default: {} },
    ),
    commitTimeoutSeconds: Type.Integer({
      description: 'A cycle fails (NeverCommitted) when the training side has not committed this long after the request. Default: 600.',
      minimum: 1,
      maximum: 86400,
      default: 600,
    }),
    snapshotTimeoutSeconds: Type.Integer({
      description: 'A cycle fails when its VolumeSnapshot is not readyToUse this long after the commit. Default: 300.',
      minimum: 1,
      maximum: 86400,
      default: 300,
    }),
  },
  {
    description:
      'Checkpoints linked to CSI VolumeSnapshots (docs/checkpoints.md): every rank mounts one shared volume at mountPath; a committed checkpoint is snapshotted at once.',
  },
);
export type CheckpointPolicy = Static<typeof CheckpointPolicy>;

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
        Type.Integer({
          description: 'Processes per replica (torchrun --nproc_per_node, PET_NPROC_PER_NODE); unset means GPUs per replica, at least 1.',
          minimum: 1,
          maximum: 64,
        }),
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
        Type.Integer({
          description: 'Wall-clock limit for the job from its start; exceeded jobs fail with reason DeadlineExceeded.',
          minimum: 1,
          format: 'int64',
        }),
      ),
      ttlSecondsAfterFinished: Type.Optional(
        Type.Integer({
          description: 'Delete the finished job (and its pods) this many seconds after it succeeds or fails; unset keeps it.',
          minimum: 0,
          format: 'int64',
        }),
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
      masterPort: Type.Integer({
        description: 'Rendezvous port on rank 0 (MASTER_PORT, PET_MASTER_PORT). Default: 29500.',
        minimum: 1,
        maximum: 65535,
        default: 29500,
      }),
      nccl: NcclSettings,
      expectedRuntimeSeconds: Type.Optional(
        Type.Integer({ description: 'User estimate of the run time, used for start-time predictions and backfill.', minimum: 1, format: 'int64' }),
      ),
      checkpoint: Type.Optional(CheckpointPolicy),
      model: Type.Optional(TrainingModelHint),
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

const CheckpointRef = Obj(
  {
    snapshotName: Type.String({ description: 'The VolumeSnapshot.', maxLength: 253 }),
    step: Count('The training step the checkpoint holds.', 'int64'),
    readyTime: Timestamp("When the snapshot was seen readyToUse (the checkpoint's time)."),
  },
  { description: 'A committed, readyToUse checkpoint.' },
);

export const CheckpointStatus = Obj(
  {
    seq: Type.Optional(Count('The last checkpoint cycle started (1, 2, …); the training side echoes it in its commit.', 'int64')),
    cycle: Type.Optional(
      Obj(
        {
          seq: Count('Cycle number.', 'int64'),
          trigger: StringEnum(['Periodic', 'Preemption', 'Migration', 'Manual'], { description: 'Why the cycle started.' }),
          phase: StringEnum(['Pre', 'SnapshotTrigger', 'PostCommit', 'Ready', 'Failed'], {
            description: 'Pre → SnapshotTrigger → PostCommit → Ready, or Failed.',
          }),
          snapshotName: Type.String({ description: 'The VolumeSnapshot this cycle creates.', maxLength: 253 }),
          startTime: Timestamp('When the cycle was requested.'),
          step: Type.Optional(Count('The committed step.', 'int64')),
          commitTime: Type.Optional(Timestamp('When the commit was seen.')),
          snapshotReadyTime: Type.Optional(Timestamp('When the VolumeSnapshot was seen readyToUse.')),
          request: Type.Optional(Type.String({ description: 'The request-checkpoint annotation value this cycle answers.', maxLength: 256 })),
          failureReason: Type.Optional(
            Type.String({
              description: 'NeverCommitted, IncompleteCommit, VolumeFull, WriteFailed, SnapshotFailed, SnapshotNotReady or SnapshotLost.',
              maxLength: 64,
            }),
          ),
          failureMessage: Type.Optional(Type.String({ description: 'Why the cycle failed.', maxLength: 4096 })),
        },
        { description: 'The newest cycle (in flight, or the last one finished).' },
      ),
    ),
    lastReady: Type.Optional(CheckpointRef),
    restoredFrom: Type.Optional(
      Obj(
        {
          snapshotName: Type.String({ description: 'The VolumeSnapshot the current gang restores from.', maxLength: 253 }),
          step: Count('Its step (SITS_RESTORE_STEP in every rank).', 'int64'),
          attempt: Count('The gang attempt that restores from it.'),
        },
        { description: 'The checkpoint the current gang started from.' },
      ),
    ),
    handledRequest: Type.Optional(Type.String({ description: 'The last request-checkpoint annotation value a cycle was started for.', maxLength: 256 })),
    lastSnapshotLatencyMs: Type.Optional(Count('Commit seen → VolumeSnapshot readyToUse of the last Ready cycle, in ms.', 'int64')),
  },
  { description: 'Checkpoints: the cycle in flight and the newest Ready checkpoint (the restore point).' },
);
export type CheckpointStatus = Static<typeof CheckpointStatus>;

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
    startTime: Type.Optional(Timestamp('When the gang first ran (phase Running); activeDeadlineSeconds counts from it.')),
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
    checkpoint: Type.Optional(CheckpointStatus),
  },
  { description: 'Observed state of a TrainingJob, written by the controller.' },
);
export type TrainingJobStatus = Static<typeof TrainingJobStatus>;

export const TrainingJob = withRules(Resource('TrainingJob', TrainingJobSpec, TrainingJobStatus, 'A distributed training job run as one gang of replicas.'), [
  nameLengthRule(48, 'pod hostnames <name>-<rank> and the headless Service must stay valid DNS labels'),
  dnsLabelNameRule('the headless Service for rendezvous takes the job name'),
]);
export type TrainingJob = Static<typeof TrainingJob>;

/** GPUs per replica as the controller and scheduler count them. */
export function trainingJobGpusPerReplica(spec: TrainingJobSpec): number {
  return spec.gpusPerReplica ?? gpusIn(spec.resources);
}
