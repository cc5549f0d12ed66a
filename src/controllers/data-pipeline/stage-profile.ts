/**
 * A stage's resourceProfile applied to what it creates (issue 17, Deliver 4): the stage becomes a ProfileStep,
 * resolveProfile (profiles.ts, ADR 0123) chooses against the cluster the controller watches, and the choice is
 * written onto the child — pod annotations and GPU count for container stages, spec.gpu / gpusPerReplica /
 * replicas / topology / queue for workload stages. The reasons go to the stage status.
 */
import { ANNOTATION, GPU_RESOURCE, LABEL } from '../../api/wire.ts';
import type { PipelineStage } from '../../api/schema/data-pipeline.ts';
import type { Result } from '../../core/result.ts';
import type { PodObject } from '../kube-objects.ts';
import { quantityToMiB } from '../../api/quantity.ts';

const HOSTNAME_KEY = 'kubernetes.io/hostname';
import type { ClusterSummary } from './model.ts';
import { resolveProfile, type ProfileOverrides, type ProfileStep, type ResolvedProfile, type StepKind } from './profiles.ts';
import type { FieldError } from './step-cache.ts';

const KIND_OF: Record<string, StepKind> = { TrainingJob: 'training', InferenceService: 'serving', BatchInferenceJob: 'batch-inference' };

/** The profile chosen for `stage` (spec.stages[index]), or the field that is wrong; undefined without a resourceProfile. */
export function stageProfile(stage: PipelineStage, index: number, cluster: ClusterSummary): Result<ResolvedProfile, FieldError> | undefined {
  if (stage.resourceProfile === undefined) return undefined;
  const kind = stage.workload === undefined ? 'container' : (KIND_OF[stage.workload.kind] ?? 'container');
  const wspec = stage.workload?.spec ?? {};
  const replicas = typeof wspec.replicas === 'number' ? wspec.replicas : undefined;
  const m = stage.model;
  const step: ProfileStep = {
    name: stage.name,
    kind,
    field: `spec.stages[${index}]`,
    ...(m === undefined
      ? {}
      : {
          model: {
            params: m.params,
            ...(m.dtype === undefined ? {} : { dtype: m.dtype }),
            ...(m.kvBytesPerToken === undefined ? {} : { kvBytesPerToken: m.kvBytesPerToken }),
          },
        }),
    ...(m?.trainingMethod === undefined ? {} : { training: { method: m.trainingMethod } }),
    ...(kind === 'serving' && replicas !== undefined ? { serving: { replicas } } : {}),
    ...(kind === 'container' && stage.device === 'gpu' ? { gpus: stage.acceleratorsPerReplica ?? 1 } : {}),
  };
  const ov = stage.profileOverrides;
  const overrides: ProfileOverrides = {
    ...(ov?.gpuModels === undefined ? {} : { gpuModels: ov.gpuModels }),
    ...(ov?.gpusPerPod === undefined ? {} : { gpusPerPod: ov.gpusPerPod }),
    ...(ov?.pods === undefined ? {} : { pods: ov.pods }),
    ...(ov?.topology === undefined ? {} : { topology: ov.topology }),
    ...(ov?.queue === undefined ? {} : { queue: ov.queue }),
  };
  const r = resolveProfile(step, stage.resourceProfile, cluster, overrides);
  // profiles.ts names overrides `.overrides.*`; the CRD field is profileOverrides.
  return r.ok ? r : { ok: false, error: { ...r.error, field: r.error.field.replace(/\.overrides\./, '.profileOverrides.') } };
}

/**
 * A container stage's pod with the profile's GPU models, topology, queue and GPU count; the memory each GPU must
 * have as the gpu-memory annotation (a floor per device, as a TrainingJob's gpu.minMemoryGiB becomes; the pod's
 * own higher value stays); and where the profile spreads replicas (low-latency), a topology spread over nodes of
 * the stage's pods — ScheduleAnyway, because the profile prefers separate nodes, it does not require them.
 */
export function profiledPod(pod: PodObject, r: ResolvedProfile): PodObject {
  const ann: Record<string, string> = { ...(pod.metadata.annotations ?? {}) };
  if (r.gpuModels.length > 0) ann[ANNOTATION.gpuModels] = r.gpuModels.join(',');
  if (r.topology.required !== undefined) ann[ANNOTATION.topologyRequired] = r.topology.required;
  if (r.topology.preferred !== undefined) ann[ANNOTATION.topologyPreferred] = r.topology.preferred;
  if (r.minMemoryGiB !== undefined && r.gpusPerPod > 0) {
    const mib = Math.max(1, Math.ceil(r.minMemoryGiB)) * 1024;
    const asked = ann[ANNOTATION.gpuMemory];
    const own = asked === undefined ? undefined : quantityToMiB(asked);
    if (own === undefined || own < mib) ann[ANNOTATION.gpuMemory] = `${mib}Mi`;
  }
  const labels = { ...(pod.metadata.labels ?? {}), ...(r.queue === undefined ? {} : { [LABEL.queue]: r.queue }) };
  const spec = pod.spec as NonNullable<PodObject['spec']>;
  const containers = (spec.containers ?? []).map((c, i) => {
    if (i !== 0 || r.gpusPerPod === 0) return c;
    const res = (c.resources ?? {}) as { requests?: Record<string, string>; limits?: Record<string, string> };
    const g = String(r.gpusPerPod);
    return { ...c, resources: { ...res, requests: { ...(res.requests ?? {}), [GPU_RESOURCE]: g }, limits: { ...(res.limits ?? {}), [GPU_RESOURCE]: g } } };
  });
  const own = pod.metadata.labels ?? {};
  const selector = { [LABEL.dataPipeline]: own[LABEL.dataPipeline] ?? '', [LABEL.pipelineStage]: own[LABEL.pipelineStage] ?? '' };
  const given = (spec.topologySpreadConstraints as readonly Record<string, unknown>[] | undefined) ?? [];
  const spread =
    r.topology.spread && !given.some((t) => t.topologyKey === HOSTNAME_KEY)
      ? {
          topologySpreadConstraints: [
            ...given,
            { maxSkew: 1, topologyKey: HOSTNAME_KEY, whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: selector } },
          ],
        }
      : {};
  return { ...pod, metadata: { ...pod.metadata, labels, annotations: ann }, spec: { ...spec, containers, ...spread } };
}

/** A workload stage's spec with the profile's choice (the stage's own spec fields the profile decides are replaced). */
export function profiledWorkloadSpec(kind: string, spec: Readonly<Record<string, unknown>>, r: ResolvedProfile): Record<string, unknown> {
  const gpu = {
    ...((spec.gpu as Record<string, unknown> | undefined) ?? {}),
    ...(r.gpuModels.length === 0 ? {} : { allowedModels: r.gpuModels }),
    ...(r.minMemoryGiB === undefined ? {} : { minMemoryGiB: Math.max(1, Math.ceil(r.minMemoryGiB)) }),
  };
  const out: Record<string, unknown> = { ...spec, gpu, ...(r.queue === undefined ? {} : { queue: r.queue }) };
  // BatchInferenceJob sizes itself by workers and its own engine; only its GPU models and queue are the profile's.
  if (kind !== 'BatchInferenceJob') Object.assign(out, { gpusPerReplica: r.gpusPerPod, replicas: r.pods });
  if (kind === 'TrainingJob') {
    const topo = { ...((spec.topology as Record<string, unknown> | undefined) ?? {}) };
    delete topo.requiredLevel;
    delete topo.preferredLevel;
    out.topology = {
      ...topo,
      ...(r.topology.required === undefined ? {} : { requiredLevel: r.topology.required }),
      ...(r.topology.preferred === undefined ? {} : { preferredLevel: r.topology.preferred }),
    };
  }
  return out;
}
