/**
 * The objects a TrainingJob owns, built from its spec: one pod per replica, the placeholder pods that probe for
 * room to grow, the headless Service for rendezvous and the PodGroups the scheduler places as gangs.
 */
import { formatModelHint } from '../../core/estimate/model-hint.ts';
import { gpuModelsValue } from '../gpu-constraints.ts';
import { quantityToMiB, quantityToMilli } from '../../api/quantity.ts';
import { trainingJobGpusPerReplica, type TrainingJob, type TrainingJobSpec } from '../../api/schema/training-job.ts';
import type { TopologyLevel } from '../../api/schema/common.ts';
import { topologyRank } from '../../api/schema/common.ts';
import type { ContainerObject, EnvVarObject, OwnerReference, PodGroupObject, PodObject, PodSpecObject, ServiceObject } from '../kube-objects.ts';
import { injectedEnv, mergeEnv, nprocPerNode } from './env.ts';
import { ANNOTATION, API_GROUP_VERSION, GPU_RESOURCE, KIND, LABEL, SCHEDULER_NAME } from '../../api/wire.ts';
import { CHECKPOINT_DIR_ENV, CHECKPOINT_VOLUME_NAME } from '../../api/checkpoint-paths.ts';
import type { BuildConfig } from './model.ts';
import { TRAINER_CONTAINER, checkpointClaimName, podGroupName, probeGroupName, probePodName, replicaPodName, replicaSelector, serviceName } from './names.ts';

export const jobName = (job: TrainingJob): string => job.metadata.name ?? '';
export const jobNamespace = (job: TrainingJob): string => job.metadata.namespace ?? 'default';

export function ownerReference(job: TrainingJob): OwnerReference {
  return { apiVersion: API_GROUP_VERSION, kind: KIND.trainingJob, name: jobName(job), uid: job.metadata.uid ?? '', controller: true, blockOwnerDeletion: true };
}

/** Resource keys that go on the pod: cpu, memory, ephemeral-storage, hugepages-*, and any name with a domain. */
export function isPodResource(key: string): boolean {
  return key === 'cpu' || key === 'memory' || key === 'ephemeral-storage' || key.startsWith('hugepages-') || key.includes('/');
}

/** Requests and limits of the trainer container: the spec's pod resources (requests = limits) plus the GPUs. */
export function podResources(spec: TrainingJobSpec): { requests: Record<string, string>; limits: Record<string, string> } {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.resources ?? {})) if (isPodResource(k) && k !== GPU_RESOURCE) out[k] = String(v);
  const gpus = trainingJobGpusPerReplica(spec);
  if (gpus > 0) out[GPU_RESOURCE] = String(gpus);
  return { requests: { ...out }, limits: { ...out } };
}

/**
 * The topology constraint of the gang. ring-, tree- and hierarchical-allreduce prefer one rack unless the user says
 * otherwise: the scheduler then searches every node, NVLink domain and rack exhaustively before spanning wider, and
 * inside a domain packs members onto the nodes the gang already uses (fewest nodes and NVLink islands, so the best
 * ring bandwidth). parameter-server and none ask for nothing.
 */
export function gangTopology(spec: TrainingJobSpec): { required?: TopologyLevel; preferred?: TopologyLevel } {
  const t = spec.topology;
  let preferred: TopologyLevel | undefined = t.preferredLevel;
  if (preferred === undefined && (t.strategy === 'ring-allreduce' || t.strategy === 'tree-allreduce' || t.strategy === 'hierarchical-allreduce')) {
    preferred = t.requiredLevel !== undefined && topologyRank(t.requiredLevel) < topologyRank('rack') ? t.requiredLevel : 'rack';
  }
  return { ...(t.requiredLevel === undefined ? {} : { required: t.requiredLevel }), ...(preferred === undefined ? {} : { preferred }) };
}

function schedulingAnnotations(spec: TrainingJobSpec, cfg: BuildConfig): Record<string, string> {
  const out: Record<string, string> = {};
  const models = gpuModelsValue(spec.gpu?.allowedModels ?? [], cfg.gpuModelAliases);
  if (models !== undefined) out[ANNOTATION.gpuModels] = models;
  if (spec.gpu?.minComputeCapability !== undefined) out[ANNOTATION.minComputeCapability] = spec.gpu.minComputeCapability;
  const memMiB = gpuMemoryPerDeviceMiB(spec);
  if (memMiB > 0) out[ANNOTATION.gpuMemory] = `${memMiB}Mi`;
  // The user's runtime estimate reaches the scheduler (backfill, ETA, the defragmenter's gain) as on a plain pod.
  if (spec.expectedRuntimeSeconds !== undefined) out[ANNOTATION.expectedRuntimeSeconds] = String(spec.expectedRuntimeSeconds);
  // The model it states sharpens the scheduler's step-time estimates of its placements (ADR 0188).
  if (spec.model !== undefined) out[ANNOTATION.trainingModel] = formatModelHint(spec.model);
  return out;
}

/**
 * Memory each GPU device must have: gpu.minMemoryGiB, or the replica's `memory-gpu-optimized` hint spread over
 * its GPUs (32Gi on 2 GPUs needs 16Gi devices), whichever is larger; 0 when neither is given.
 */
export function gpuMemoryPerDeviceMiB(spec: TrainingJobSpec): number {
  const fromMin = (spec.gpu?.minMemoryGiB ?? 0) * 1024;
  const hint = spec.resources?.['memory-gpu-optimized'];
  const gpus = trainingJobGpusPerReplica(spec);
  const total = hint === undefined ? undefined : quantityToMiB(hint);
  const fromHint = total === undefined || gpus <= 0 ? 0 : Math.ceil(total / gpus);
  return Math.max(fromMin, fromHint);
}

function templateSpec(spec: TrainingJobSpec): PodSpecObject {
  if (spec.podTemplate !== undefined) {
    const s = structuredClone(spec.podTemplate.spec) as Record<string, unknown>;
    const containers = Array.isArray(s.containers) ? (s.containers as ContainerObject[]) : [];
    return { ...s, containers } as PodSpecObject;
  }
  const c = spec.container;
  const container: ContainerObject = {
    name: TRAINER_CONTAINER,
    image: c?.image ?? '',
    ...(c?.command === undefined ? {} : { command: [...c.command] }),
    ...(c?.args === undefined ? {} : { args: [...c.args] }),
    ...(c?.workingDir === undefined ? {} : { workingDir: c.workingDir }),
    ...(c?.imagePullPolicy === undefined ? {} : { imagePullPolicy: c.imagePullPolicy }),
    ...(c?.env === undefined ? {} : { env: c.env.map((e) => ({ ...e })) }),
  };
  return { containers: [container] };
}

/** Index of the container SITS configures: the one named "trainer", else the first. */
export function trainerIndex(containers: readonly ContainerObject[]): number {
  const i = containers.findIndex((c) => c.name === TRAINER_CONTAINER);
  return i >= 0 ? i : 0;
}

function withResources(c: ContainerObject, res: { requests: Record<string, string>; limits: Record<string, string> }): ContainerObject {
  // The template's own values win; the spec fills what it leaves out.
  return { ...c, resources: { requests: { ...res.requests, ...c.resources?.requests }, limits: { ...res.limits, ...c.resources?.limits } } };
}

function cpuLimitMilli(c: ContainerObject): number | undefined {
  const q = c.resources?.limits?.cpu ?? c.resources?.requests?.cpu;
  return q === undefined ? undefined : quantityToMilli(q);
}

export const NCCL_TOPO_VOLUME = 'sits-nccl-topology';
export const NCCL_TOPO_DIR = '/etc/sits/nccl';
export const NCCL_TOPO_FILE = `${NCCL_TOPO_DIR}/topo.xml`;

/**
 * PyTorch's DataLoader workers hand batches over through /dev/shm, which a container gets at 64 MiB: past that they
 * die with a bus error. The trainer gets a memory-backed /dev/shm unless the template mounts its own there or shares
 * the host's IPC (the lint rule training-without-shm says the same of hand-written pods). It counts against the
 * container's memory limit, as any tmpfs does.
 */
export const SHM_VOLUME = 'sits-dshm';

function needsShm(base: PodSpecObject, c: ContainerObject): boolean {
  if ((base as { hostIPC?: unknown }).hostIPC === true) return false;
  const mounts = Array.isArray(c.volumeMounts) ? (c.volumeMounts as { mountPath?: unknown }[]) : [];
  return !mounts.some((m) => typeof m.mountPath === 'string' && m.mountPath.replace(/\/+$/, '') === '/dev/shm');
}

function ncclTopologyVolume(): Record<string, unknown> {
  return {
    name: NCCL_TOPO_VOLUME,
    downwardAPI: { items: [{ path: 'topo.xml', fieldRef: { fieldPath: `metadata.annotations['${ANNOTATION.ncclTopology}']` } }] },
  };
}

export interface ReplicaParams {
  readonly rank: number;
  readonly replicas: number;
  readonly attempt: number;
  /** The checkpoint this gang starts from (spec.checkpoint): SITS_RESTORE_STEP and SITS_RESTORE_SNAPSHOT in every rank. */
  readonly restore?: { readonly snapshotName: string; readonly step: number };
}

/** The claim every rank mounts at spec.checkpoint.mountPath. */
export function checkpointClaim(job: TrainingJob): string | undefined {
  const c = job.spec.checkpoint;
  if (c === undefined) return undefined;
  return c.volume.claimName ?? checkpointClaimName(jobName(job));
}

/**
 * What spec.checkpoint adds to a rank: the environment of the training-side contract (docs/checkpoints.md) — where
 * the shared directory is, who writes, the pod's own name and namespace (to patch its commit annotation) and the
 * checkpoint to restore.
 */
function checkpointEnv(job: TrainingJob, p: ReplicaParams): EnvVarObject[] {
  const c = job.spec.checkpoint;
  if (c === undefined) return [];
  return [
    { name: CHECKPOINT_DIR_ENV, value: c.mountPath },
    { name: 'SITS_CHECKPOINT_WRITERS', value: c.writers },
    { name: 'SITS_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'SITS_POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ...(p.restore === undefined
      ? []
      : [
          { name: 'SITS_RESTORE_STEP', value: String(p.restore.step) },
          { name: 'SITS_RESTORE_SNAPSHOT', value: p.restore.snapshotName },
        ]),
  ];
}

/** The pod of one replica (rank) of the given gang. */
export function replicaPod(job: TrainingJob, p: ReplicaParams, cfg: BuildConfig): PodObject {
  const spec = job.spec;
  const name = jobName(job);
  const ns = jobNamespace(job);
  const base = templateSpec(spec);
  const res = podResources(spec);
  const ti = trainerIndex(base.containers);
  const nproc = nprocPerNode(spec, trainingJobGpusPerReplica(spec));
  const topo = spec.nccl.topologyFile !== false && trainingJobGpusPerReplica(spec) > 0;
  const trainer = base.containers[ti];
  const shm = trainer !== undefined && needsShm(base, trainer);
  const containers = base.containers.map((c, i) => {
    if (i !== ti) return c;
    const withRes = withResources(c, res);
    const cpu = cpuLimitMilli(withRes);
    const env: EnvVarObject[] = mergeEnv(
      [
        ...injectedEnv(spec, {
          job: name,
          namespace: ns,
          replicas: p.replicas,
          rank: p.rank,
          nprocPerNode: nproc,
          attempt: p.attempt,
          ...(cpu === undefined ? {} : { cpuLimitMilli: cpu }),
          ...(topo ? { ncclTopoFile: NCCL_TOPO_FILE } : {}),
        }),
        ...checkpointEnv(job, p),
      ],
      c.env,
    );
    const ports = c.ports ?? [];
    const withPort = ports.some((x) => x.containerPort === spec.masterPort)
      ? ports
      : [...ports, { name: 'rendezvous', containerPort: spec.masterPort, protocol: 'TCP' }];
    const own = Array.isArray(withRes.volumeMounts) ? (withRes.volumeMounts as unknown[]) : [];
    const mounts = [
      ...own,
      ...(spec.checkpoint === undefined ? [] : [{ name: CHECKPOINT_VOLUME_NAME, mountPath: spec.checkpoint.mountPath }]),
      ...(topo ? [{ name: NCCL_TOPO_VOLUME, mountPath: NCCL_TOPO_DIR, readOnly: true }] : []),
      ...(shm ? [{ name: SHM_VOLUME, mountPath: '/dev/shm' }] : []),
    ];
    return { ...withRes, env, ports: withPort, ...(mounts.length === own.length ? {} : { volumeMounts: mounts }) };
  });
  const claim = checkpointClaim(job);
  const baseVolumes = Array.isArray(base.volumes) ? (base.volumes as unknown[]) : [];
  // The scheduler writes the NCCL file's XML into the pod's annotations through the Binding
  // (kube/adapters/nccl-topology-binding.ts); the kubelet starts the pod after that and projects the annotation as the file.
  const extraVolumes = [
    ...(claim === undefined ? [] : [{ name: CHECKPOINT_VOLUME_NAME, persistentVolumeClaim: { claimName: claim } }]),
    ...(topo ? [ncclTopologyVolume()] : []),
    ...(shm ? [{ name: SHM_VOLUME, emptyDir: { medium: 'Memory' } }] : []),
  ];
  const volumes = extraVolumes.length === 0 ? {} : { volumes: [...baseVolumes, ...extraVolumes] };
  const tmplMeta = spec.podTemplate?.metadata;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: replicaPodName(name, p.rank),
      namespace: ns,
      labels: {
        ...tmplMeta?.labels,
        [LABEL.trainingJob]: name,
        [LABEL.role]: 'replica',
        [LABEL.rank]: String(p.rank),
        [LABEL.attempt]: String(p.attempt),
        [LABEL.podGroup]: podGroupName(name),
        ...(spec.queue === undefined ? {} : { [LABEL.queue]: spec.queue }),
      },
      annotations: {
        ...tmplMeta?.annotations,
        ...schedulingAnnotations(spec, cfg),
        [ANNOTATION.worldSize]: String(p.replicas * nproc),
        ...(topo ? { [ANNOTATION.ncclTopologyFile]: 'generate' } : {}),
        ...(spec.checkpoint === undefined ? {} : { [ANNOTATION.checkpointable]: 'true' }),
      },
      ownerReferences: [ownerReference(job)],
    },
    spec: {
      ...base,
      ...volumes,
      containers,
      schedulerName: SCHEDULER_NAME,
      hostname: replicaPodName(name, p.rank),
      subdomain: serviceName(name),
      // Restarts are the controller's: the whole gang, never one container in place (DDP tolerates no lone replica).
      restartPolicy: 'Never',
      ...(spec.priorityClassName === undefined ? {} : { priorityClassName: spec.priorityClassName }),
    },
  };
}

/**
 * A placeholder with the replica's resources and placement constraints and nothing else: if the scheduler binds it,
 * one more replica would fit now.
 */
export function probePod(job: TrainingJob, index: number, attempt: number, cfg: BuildConfig): PodObject {
  const spec = job.spec;
  const name = jobName(job);
  const base = templateSpec(spec);
  const pick = (k: string): Record<string, unknown> => (base[k] === undefined ? {} : { [k]: structuredClone(base[k]) });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: probePodName(name, index),
      namespace: jobNamespace(job),
      labels: {
        [LABEL.trainingJob]: name,
        [LABEL.role]: 'probe',
        [LABEL.attempt]: String(attempt),
        [LABEL.podGroup]: probeGroupName(name),
        ...(spec.queue === undefined ? {} : { [LABEL.queue]: spec.queue }),
      },
      annotations: schedulingAnnotations(spec, cfg),
      ownerReferences: [ownerReference(job)],
    },
    spec: {
      ...pick('nodeSelector'),
      ...pick('tolerations'),
      ...pick('affinity'),
      containers: [{ name: 'placeholder', image: cfg.placeholderImage, resources: podResources(spec) }],
      schedulerName: SCHEDULER_NAME,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 0,
      ...(spec.priorityClassName === undefined ? {} : { priorityClassName: spec.priorityClassName }),
    },
  };
}

/** Headless, and publishing not-ready addresses: rank 0's DNS name resolves before any readiness (seed 001 §1). */
export function headlessService(job: TrainingJob): ServiceObject {
  const name = jobName(job);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: serviceName(name), namespace: jobNamespace(job), labels: { [LABEL.trainingJob]: name }, ownerReferences: [ownerReference(job)] },
    spec: {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: replicaSelector(name),
      ports: [{ name: 'rendezvous', port: job.spec.masterPort, targetPort: job.spec.masterPort, protocol: 'TCP' }],
    },
  };
}

export function replicaPodGroup(job: TrainingJob, minMember: number): PodGroupObject {
  const name = jobName(job);
  const topology = gangTopology(job.spec);
  return {
    apiVersion: API_GROUP_VERSION,
    kind: 'PodGroup',
    metadata: { name: podGroupName(name), namespace: jobNamespace(job), labels: { [LABEL.trainingJob]: name }, ownerReferences: [ownerReference(job)] },
    spec: {
      minMember,
      ...(job.spec.queue === undefined ? {} : { queue: job.spec.queue }),
      ...(job.spec.priorityClassName === undefined ? {} : { priorityClassName: job.spec.priorityClassName }),
      ...(Object.keys(topology).length === 0 ? {} : { topology }),
    },
  };
}

/** Probes are placed one by one (minMember 1): each one bound is one more replica that fits. */
export function probePodGroup(job: TrainingJob): PodGroupObject {
  const name = jobName(job);
  return {
    apiVersion: API_GROUP_VERSION,
    kind: 'PodGroup',
    metadata: {
      name: probeGroupName(name),
      namespace: jobNamespace(job),
      labels: { [LABEL.trainingJob]: name, [LABEL.role]: 'probe' },
      ownerReferences: [ownerReference(job)],
    },
    spec: {
      minMember: 1,
      ...(job.spec.queue === undefined ? {} : { queue: job.spec.queue }),
      ...(job.spec.priorityClassName === undefined ? {} : { priorityClassName: job.spec.priorityClassName }),
    },
  };
}
