/**
 * The objects a DataPipeline creates, built from a stage after its parameters are substituted: pods of container
 * stages (`<pipeline>-<stage>-<index>`, restartPolicy Never: retries are the pipeline's), the workload of a
 * workload stage (`<pipeline>-<stage>`), VolumeSnapshots of output artifacts and claims restored from them.
 * All carry LABEL.dataPipeline and LABEL.pipelineStage; all but unowned snapshots (artifactGC Never) are owned by
 * the pipeline, so Kubernetes' garbage collector removes them with it.
 */
import { GPU_RESOURCE, LABEL, SCHEDULER_NAME, API_GROUP_VERSION, KIND } from '../../api/wire.ts';
import type { Container, PodTemplate } from '../../api/schema/common.ts';
import type { PipelineStage } from '../../api/schema/data-pipeline.ts';
import type { ContainerObject, OwnerReference, PodObject } from '../kube-objects.ts';
import { SNAPSHOT_API_VERSION } from '../training-job/checkpoints.ts';
import { TRAINER_CONTAINER } from '../training-job/names.ts';
import { SERVING_CONTAINER } from '../../serving/pod-template.ts';
import type { ClaimObject, DataPipelineObject, VolumeSnapshotObject, WorkloadObject, WorkloadKind } from './model.ts';

export const pipelineName = (p: DataPipelineObject): string => p.metadata.name ?? '';
export const pipelineNamespace = (p: DataPipelineObject): string => p.metadata.namespace ?? 'default';

export const podName = (pipeline: string, stage: string, index: number): string => `${pipeline}-${stage}-${index}`;
export const workloadName = (pipeline: string, stage: string): string => `${pipeline}-${stage}`;
export const snapshotName = (pipeline: string, stage: string, artifact: string): string => `${pipeline}-${stage}-${artifact}`;
export const restoredClaimName = (pipeline: string, stage: string, input: string): string => `${pipeline}-${stage}-in-${input}`;

/** The container of a container stage's pod and the one a podTemplate's first container is merged with. */
export const MAIN_CONTAINER = 'main';

export function ownerReference(p: DataPipelineObject): OwnerReference {
  return {
    apiVersion: API_GROUP_VERSION,
    kind: KIND.dataPipeline,
    name: pipelineName(p),
    uid: p.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

function labels(p: DataPipelineObject, stage: string): Record<string, string> {
  return { [LABEL.dataPipeline]: pipelineName(p), [LABEL.pipelineStage]: stage };
}

/** How a stage's pod sees an input artifact: a claim (restored, or the producer's own for a path) and a mount. */
export interface MountedInput {
  readonly name: string;
  readonly claimName: string;
  readonly subPath?: string;
  readonly readOnly: boolean;
  readonly mountPath?: string;
}

const isPodResource = (k: string): boolean => k === 'cpu' || k === 'memory' || k === 'ephemeral-storage' || k.startsWith('hugepages-') || k.includes('/');

function stageResources(stage: PipelineStage): { requests?: Record<string, string>; limits?: Record<string, string> } {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(stage.resources ?? {})) if (isPodResource(k)) out[k] = String(v);
  if (stage.device === 'gpu') out[GPU_RESOURCE] ??= String(stage.acceleratorsPerReplica ?? 1);
  return Object.keys(out).length === 0 ? {} : { requests: { ...out }, limits: { ...out } };
}

/** The volumes and mounts of the inputs that have a mountPath (`in-<input>`; a path output's claim read-only). */
function inputVolumes(inputs: readonly MountedInput[]): { mounts: Record<string, unknown>[]; volumes: Record<string, unknown>[] } {
  const m = inputs.filter((i) => i.mountPath !== undefined);
  return {
    mounts: m.map((i) => ({
      name: `in-${i.name}`,
      mountPath: i.mountPath,
      readOnly: i.readOnly,
      ...(i.subPath === undefined || i.subPath === '' ? {} : { subPath: i.subPath }),
    })),
    volumes: m.map((i) => ({ name: `in-${i.name}`, persistentVolumeClaim: { claimName: i.claimName, readOnly: i.readOnly } })),
  };
}

/**
 * A workload stage's spec with its input artifacts in the workload's podTemplate: the volumes in its pod spec, the
 * mounts on the container the workload's controller keeps the template's mounts of: `trainer` (else the first) for
 * a TrainingJob, `server` for an InferenceService or BatchInferenceJob (whose batch-worker container is the
 * controller's own). A TrainingJob given as `container` becomes the equivalent podTemplate (its controller renders
 * `container` as a pod of that one container named trainer), since only a podTemplate carries volumes.
 */
export function workloadSpecWithInputs(kind: WorkloadKind, spec: Readonly<Record<string, unknown>>, inputs: readonly MountedInput[]): Record<string, unknown> {
  const { mounts, volumes } = inputVolumes(inputs);
  if (volumes.length === 0) return { ...spec };
  const out = structuredClone(spec) as Record<string, unknown>;
  if (kind === 'TrainingJob' && out.podTemplate === undefined && out.container !== undefined) {
    out.podTemplate = { spec: { containers: [{ ...(out.container as Record<string, unknown>), name: TRAINER_CONTAINER }] } };
    delete out.container;
  }
  const tmpl = (out.podTemplate ?? {}) as { metadata?: unknown; spec?: Record<string, unknown> };
  const podSpec = tmpl.spec ?? {};
  const containers = Array.isArray(podSpec.containers) ? (podSpec.containers as ContainerObject[]) : [];
  const target =
    kind === 'TrainingJob'
      ? containers.some((c) => c.name === TRAINER_CONTAINER)
        ? TRAINER_CONTAINER
        : (containers[0]?.name ?? TRAINER_CONTAINER)
      : SERVING_CONTAINER;
  const withMounts = (c: ContainerObject): ContainerObject => ({ ...c, volumeMounts: [...((c.volumeMounts as unknown[] | undefined) ?? []), ...mounts] });
  const has = containers.some((c) => c.name === target);
  out.podTemplate = {
    ...tmpl,
    spec: {
      ...podSpec,
      containers: has ? containers.map((c) => (c.name === target ? withMounts(c) : c)) : [withMounts({ name: target }), ...containers],
      volumes: [...(Array.isArray(podSpec.volumes) ? (podSpec.volumes as unknown[]) : []), ...volumes],
    },
  };
  return out;
}

/**
 * A pod of a container or podTemplate stage. `stage` already has its parameters substituted. SITS env
 * (SITS_PIPELINE, SITS_STAGE, SITS_STAGE_INDEX, SITS_RETRY) comes first, so the user's env wins.
 */
export function stagePod(p: DataPipelineObject, stage: PipelineStage, index: number, retries: number, inputs: readonly MountedInput[]): PodObject {
  const env = [
    { name: 'SITS_PIPELINE', value: pipelineName(p) },
    { name: 'SITS_STAGE', value: stage.name },
    { name: 'SITS_STAGE_INDEX', value: String(index) },
    { name: 'SITS_RETRY', value: String(retries) },
  ];
  const { mounts, volumes } = inputVolumes(inputs);
  const tmpl: PodTemplate | undefined = stage.podTemplate;
  const merge = (c: ContainerObject): ContainerObject => {
    const userEnv = c.env ?? [];
    return {
      ...c,
      env: [...env.filter((e) => !userEnv.some((u) => u.name === e.name)), ...userEnv],
      volumeMounts: [...((c.volumeMounts as unknown[] | undefined) ?? []), ...mounts],
    };
  };
  let spec: Record<string, unknown>;
  if (tmpl !== undefined) {
    const containers = ((tmpl.spec.containers as ContainerObject[] | undefined) ?? []).map((c, i) => (i === 0 ? merge(c) : c));
    spec = {
      ...tmpl.spec,
      restartPolicy: tmpl.spec.restartPolicy ?? 'Never',
      schedulerName: tmpl.spec.schedulerName ?? SCHEDULER_NAME,
      containers,
      ...(volumes.length === 0 ? {} : { volumes: [...((tmpl.spec.volumes as unknown[] | undefined) ?? []), ...volumes] }),
    };
  } else {
    const c = stage.container as Container;
    const container: ContainerObject = {
      name: MAIN_CONTAINER,
      image: c.image,
      ...(c.command === undefined ? {} : { command: c.command }),
      ...(c.args === undefined ? {} : { args: c.args }),
      ...(c.workingDir === undefined ? {} : { workingDir: c.workingDir }),
      ...(c.imagePullPolicy === undefined ? {} : { imagePullPolicy: c.imagePullPolicy }),
      ...(c.env === undefined ? {} : { env: c.env as NonNullable<ContainerObject['env']> }),
      resources: stageResources(stage),
    };
    spec = { restartPolicy: 'Never', schedulerName: SCHEDULER_NAME, containers: [merge(container)], ...(volumes.length === 0 ? {} : { volumes }) };
  }
  const queue = p.spec.queue;
  const priority = p.spec.priorityClassName;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(pipelineName(p), stage.name, index),
      namespace: pipelineNamespace(p),
      labels: { ...(tmpl?.metadata?.labels ?? {}), ...(queue === undefined ? {} : { [LABEL.queue]: queue }), ...labels(p, stage.name) },
      ...(tmpl?.metadata?.annotations === undefined ? {} : { annotations: tmpl.metadata.annotations }),
      ownerReferences: [ownerReference(p)],
    },
    spec: { ...(priority === undefined || spec.priorityClassName !== undefined ? {} : { priorityClassName: priority }), ...spec } as PodObject['spec'] & object,
  };
}

/** The workload of a workload stage; `spec` already has its parameters substituted. */
export function stageWorkload(p: DataPipelineObject, stage: PipelineStage, kind: WorkloadKind, spec: Readonly<Record<string, unknown>>): WorkloadObject {
  return {
    apiVersion: API_GROUP_VERSION,
    kind,
    metadata: {
      name: workloadName(pipelineName(p), stage.name),
      namespace: pipelineNamespace(p),
      labels: labels(p, stage.name),
      ownerReferences: [ownerReference(p)],
    },
    spec,
  };
}

export function artifactSnapshot(
  p: DataPipelineObject,
  stage: string,
  artifact: string,
  claimName: string,
  className: string | undefined,
  owned: boolean,
): VolumeSnapshotObject {
  return {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: 'VolumeSnapshot',
    metadata: {
      name: snapshotName(pipelineName(p), stage, artifact),
      namespace: pipelineNamespace(p),
      labels: labels(p, stage),
      ...(owned ? { ownerReferences: [ownerReference(p)] } : {}),
    },
    spec: { source: { persistentVolumeClaimName: claimName }, ...(className === undefined ? {} : { volumeSnapshotClassName: className }) },
  };
}

/** A claim restored from an artifact's snapshot (the CSI provisioner fills it from the snapshot, no copy by SITS). */
export function restoredClaim(
  p: DataPipelineObject,
  stage: string,
  input: string,
  snapshot: string,
  size: string,
  storageClassName: string | undefined,
  accessMode: string,
): ClaimObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: restoredClaimName(pipelineName(p), stage, input),
      namespace: pipelineNamespace(p),
      labels: labels(p, stage),
      ownerReferences: [ownerReference(p)],
    },
    spec: {
      accessModes: [accessMode],
      ...(storageClassName === undefined ? {} : { storageClassName }),
      resources: { requests: { storage: size } },
      dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: snapshot },
    },
  };
}
