/**
 * The wire format SITS shares between its components and with users: API group, labels, annotations,
 * finalizers, resource names, the scheduler name and the event/condition reasons one component writes and
 * another reads. Every component imports these values from here, so the scheduler, the controllers, the
 * deploy bundle, the dev tools and the tests cannot drift apart. Documented for users in docs/kubernetes.md.
 *
 * This module is a leaf: plain values, no imports, so every layer (core excepted) may depend on it.
 */

export const API_GROUP = 'ai.sits2026.dev';
export const API_VERSION = 'v1';
export const API_GROUP_VERSION = `${API_GROUP}/${API_VERSION}`;
/** REST prefix of the SITS resources (`/apis/ai.sits2026.dev/v1`). */
export const API_PATH = `/apis/${API_GROUP_VERSION}`;

export const KIND = {
  trainingJob: 'TrainingJob',
  inferenceService: 'InferenceService',
  batchInferenceJob: 'BatchInferenceJob',
  dataPipeline: 'DataPipeline',
  podGroup: 'PodGroup',
  queue: 'Queue',
} as const;

/** spec.schedulerName of the pods SITS schedules (also its event source and default lease name). */
export const SCHEDULER_NAME = 'sits-scheduler';

/** The device-plugin resource of an NVIDIA GPU (an extended resource: whole numbers only). */
export const GPU_RESOURCE = 'nvidia.com/gpu';

const P = API_GROUP;

export const LABEL = {
  // Nodes: place in the cluster and GPU model.
  gpuModel: `${P}/gpu-model`,
  rack: `${P}/rack`,
  block: `${P}/block`,
  nvlinkDomain: `${P}/nvlink-domain`,
  zone: 'topology.kubernetes.io/zone',
  hostname: 'kubernetes.io/hostname',
  // NVIDIA GPU Feature Discovery labels, read when present.
  gfdProduct: 'nvidia.com/gpu.product',
  gfdCount: 'nvidia.com/gpu.count',
  gfdMemory: 'nvidia.com/gpu.memory',
  gfdMajor: 'nvidia.com/gpu.compute.major',
  gfdMinor: 'nvidia.com/gpu.compute.minor',
  gfdClique: 'nvidia.com/gpu.clique',
  // Pods: gang and queue, read by the scheduler.
  podGroup: `${P}/pod-group`,
  queue: `${P}/queue`,
  // Objects the TrainingJob controller creates.
  /** Every object the controller creates for a job carries the job's name here. */
  trainingJob: `${P}/training-job`,
  /** `replica` (a torchrun node) or `probe` (a placeholder that asks the scheduler whether more would fit). */
  role: `${P}/role`,
  rank: `${P}/rank`,
  /** Gang generation, bumped on every restart and elastic resize. */
  attempt: `${P}/attempt`,
  // Objects the InferenceService controller creates.
  /** Every object the controller creates for a service carries the service's name here. */
  inferenceService: `${P}/inference-service`,
  /** Hash of the replica's rendered pod template: a rolling update replaces the pods whose hash differs. */
  templateHash: `${P}/template-hash`,
  // Objects the DataPipeline controller creates (pods, workloads, VolumeSnapshots, restored claims).
  /** Every object the controller creates for a pipeline carries the pipeline's name here. */
  dataPipeline: `${P}/data-pipeline`,
  pipelineStage: `${P}/pipeline-stage`,
  /** A multi-pod replica (podsPerReplica > 1): 0 on its leader, 1.. on its workers (LWS's worker-index). */
  workerIndex: `${P}/worker-index`,
  /** Every worker pod of a BatchInferenceJob carries the job's name here. */
  batchInferenceJob: `${P}/batch-inference-job`,
  /** `"true"` on a BatchInferenceJob's CPU fallback worker (the fault ladder's rung 3): it holds no GPU. */
  batchCpuFallback: `${P}/batch-cpu-fallback`,
  /** The route a BatchInferenceJob worker was built for when the route changed its shape (ADR 0161): gpu-fragments or cpu-elastic. */
  batchRoute: `${P}/batch-route`,
} as const;

export const ANNOTATION = {
  // Nodes.
  nodeShape: `${P}/node-shape`,
  gpuTopology: `${P}/gpu-topology`,
  unhealthyGpus: `${P}/unhealthy-gpus`,
  /** GPU PCI bus ids by index ("0000:07:00.0,0000:08:00.0"), from nvidia-smi -q -x. */
  gpuBusIds: `${P}/gpu-bus-ids`,
  /** NICs and where they sit ("mlx5_0@0/1,mlx5_1@1": name @ NUMA node / GPU sharing its PCIe switch). */
  nics: `${P}/nics`,
  /** Quarantined GPUs (core/health/quarantine.ts: JSON by GPU index with reason, since, until, source). */
  gpuQuarantine: `${P}/gpu-quarantine`,
  // Pods: what they ask for.
  /** "generate": write the NCCL topology file of the pod's GPUs into `ncclTopology` at binding. */
  ncclTopologyFile: `${P}/nccl-topology-file`,
  gpuFraction: `${P}/gpu-fraction`,
  gpuModels: `${P}/gpu-models`,
  minComputeCapability: `${P}/min-compute-capability`,
  gpuMemory: `${P}/gpu-memory`,
  /** Gang parameters for a pod-group label without a PodGroup object. */
  topologyRequired: `${P}/topology-required`,
  topologyPreferred: `${P}/topology-preferred`,
  minMember: `${P}/min-member`,
  expectedRuntimeSeconds: `${P}/expected-runtime-seconds`,
  /** A training job's model, `<kind>/<parameters>/<parallelism>` (TrainingJob spec.model; core/estimate/model-hint.ts). */
  trainingModel: `${P}/training-model`,
  /** Set by a training job while it checkpoints or is in an all-reduce window (RFC 3339 end time). */
  criticalUntil: `${P}/critical-until`,
  lastCheckpoint: `${P}/last-checkpoint`,
  /** Set by SITS on a victim's pods and TrainingJob: a checkpoint is asked for before preemption or a move (RFC 3339 time of the request; ADR 0093). */
  checkpointRequested: `${P}/checkpoint-requested`,
  /**
   * Set by the TrainingJob controller on every replica when the cycle answering a preemption's request failed (a
   * full volume, no commit, no snapshot): the request's value, `Preemption/<RFC 3339 time>`. The scheduler then
   * evicts at once instead of waiting out the grace for a checkpoint that will not come (ADR 0093).
   */
  checkpointFailed: `${P}/checkpoint-failed`,
  /** Set on the pods of a job that checkpoints when asked (a TrainingJob with a checkpoint policy): preemption asks first. */
  checkpointable: `${P}/checkpointable`,
  preemptible: `${P}/preemptible`,
  // Pods: what the scheduler writes.
  /** The devices a bound pod holds ("0,1"), written through the Binding object. */
  gpuIndices: `${P}/gpu-indices`,
  /** NCCL's topology XML for the GPUs and NICs the pod got (written through the Binding; the pod mounts it). */
  ncclTopology: `${P}/nccl-topology`,
  /** Written by the SITS device plugin: the recorded indices it has handed to the pod's containers so far ("0,1"). */
  gpuAllocated: `${P}/gpu-allocated`,
  /** Set on a pod that SITS has placed as part of a gang plan, before its binding (ADR 0006). */
  assignedNode: `${P}/assigned-node`,
  planId: `${P}/plan-id`,
  planSize: `${P}/plan-size`,
  /** Written on waiting pods: when the queue cycle run forward expects them to start (RFC 3339). */
  expectedStart: `${P}/expected-start`,
  /**
   * Written on a gang's waiting pods when it is first held for a better placement (RFC 3339): the hold's clock
   * (ADR 0191), read back by a scheduler that takes over and by `sits explain` (ADR 0195).
   */
  heldSince: `${P}/held-since`,
  // Pods: what the TrainingJob controller writes.
  worldSize: `${P}/world-size`,
  // Checkpoints (docs/checkpoints.md, ADR 0090).
  /** On rank 0's pod, written by the controller: the checkpoint cycle (seq) the training side is asked to save. */
  checkpointRequest: `${P}/checkpoint-request`,
  /** On rank 0's pod, written by the training side: `{"seq":N,"step":S,"ranks":R}` once every writer's shards are saved. */
  checkpointCommit: `${P}/checkpoint-commit`,
  /** On a TrainingJob, written by whoever wants a checkpoint now (preemption, migration, a user): `<Trigger>[/<id>]`. */
  requestCheckpoint: `${P}/request-checkpoint`,
  /**
   * On a TrainingJob, written by SITS just before it evicts the gang to move it (the health migrator, ADR 0129):
   * `{"attempt":N,"reason":R,"message":M}`. The controller restarts that attempt's gang at once, not counted as a failure.
   */
  gangEvicted: `${P}/gang-evicted`,
  /** On a committed VolumeSnapshot: when it was seen readyToUse (RFC 3339). */
  checkpointReadyTime: `${P}/checkpoint-ready-time`,
  // DataPipeline stages (docs/data-pipeline.md).
  /** On a stage's pod or workload, written by the stage: its output parameters as a JSON object of strings. */
  outputs: `${P}/outputs`,
  // Batch workers (docs/adr/0102-batch-worker-protocol.md).
  /** On a batch worker's pod, written by the controller: the shard it runs (`{"attempt":…,"start":…,"end":…,"part":…}` or idle). */
  batchAssignment: `${P}/batch-assignment`,
  /** On a batch worker's pod, written by the worker at a bounded rate: `{"attempt":…,"done":…,"tokens":…,"state":…}`. */
  batchReport: `${P}/batch-report`,
} as const;

/**
 * The Node labels and annotations `sits node-agent`'s topology loop owns (set when known, removed when not): here
 * because the chart's admission policy holds the agent to exactly these (ADR 0174).
 */
export const MANAGED_NODE_LABELS = [LABEL.gpuModel, LABEL.gfdProduct, LABEL.gfdCount, LABEL.gfdMemory, LABEL.gfdMajor, LABEL.gfdMinor] as const;
export const MANAGED_NODE_ANNOTATIONS = [ANNOTATION.gpuTopology, ANNOTATION.unhealthyGpus, ANNOTATION.gpuBusIds, ANNOTATION.nics] as const;

/** Labels of the VolumeSnapshots of a job's checkpoints (besides LABEL.trainingJob). */
export const CHECKPOINT_LABEL = {
  seq: `${P}/checkpoint-seq`,
  step: `${P}/checkpoint-step`,
  /** "true" once the snapshot is readyToUse and recorded: a restore point. */
  committed: `${P}/checkpoint-committed`,
} as const;

/** Namespaces: opting into the SITS defaults of the mutating webhook, and those defaults. */
export const NAMESPACE_OPT_IN = { label: `${P}/scheduling`, value: 'enabled' } as const;
export const NAMESPACE_ANNOTATION = {
  defaultQueue: `${P}/default-queue`,
  defaultPreferredLevel: `${P}/default-preferred-level`,
} as const;

export const FINALIZER = {
  trainingJobCleanup: `${P}/training-job-cleanup`,
  /** On a DataPipeline whose adapter stages added LoRA adapters to users' InferenceServices (removed on deletion). */
  dataPipelineAdapters: `${P}/datapipeline-adapters`,
} as const;

/** Reasons one component writes and another (or a user's tooling) reads. */
export const REASON = {
  /** Event: a pod was bound. */
  scheduled: 'Scheduled',
  /** Event: no node fits (Warning). */
  failedScheduling: 'FailedScheduling',
  /** Event: a gang still waits for its members (Normal). */
  waitingForGang: 'WaitingForGang',
  /** Event: the pod's gang was evicted to make room. */
  preempted: 'Preempted',
  /** PodScheduled=False condition reason, as kube-scheduler writes it; the controllers read it. */
  unschedulable: 'Unschedulable',
} as const;
