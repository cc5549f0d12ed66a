/**
 * The objects an InferenceService owns, built from its spec: one pod per replica (the serving container rendered
 * from the runtime's data by serving/pod-template.ts, plus what only the controller knows: owner, scheduler, GPU
 * constraints, the gang of a tensor-parallel replica) and the Service in front of the ready replicas. A spec the
 * runtime or the cluster cannot honour yields every issue at once and no object (nothing half-applied).
 */
import { gpuModelsValue } from '../gpu-constraints.ts';
import { ANNOTATION, API_GROUP_VERSION, KIND, LABEL, SCHEDULER_NAME } from '../../api/wire.ts';
import { renderReplica, SERVING_CONTAINER, type ReplicaTemplate } from '../../serving/pod-template.ts';
import { pipelineParallel, servedModelName, tensorParallel, type SpecIssue } from '../../serving/runtime.ts';
import type { ContainerObject, OwnerReference, PodObject, PodSpecObject, ServiceObject } from '../kube-objects.ts';
import type { ClusterFacts, InferenceServiceObject } from './model.ts';
import { replicaPodName, replicaSelector, serviceName, templateHash } from './names.ts';

export interface BuildConfig {
  /** Extra names a GPU model may go by on nodes (e.g. GFD product → the scheduler's model name). */
  readonly gpuModelAliases?: (model: string) => readonly string[];
}

export const isvcName = (s: InferenceServiceObject): string => s.metadata.name ?? '';
export const isvcNamespace = (s: InferenceServiceObject): string => s.metadata.namespace ?? 'default';

export function ownerReference(s: InferenceServiceObject): OwnerReference {
  return { apiVersion: API_GROUP_VERSION, kind: KIND.inferenceService, name: isvcName(s), uid: s.metadata.uid ?? '', controller: true, blockOwnerDeletion: true };
}

/** Everything one template revision needs: its hash, a pod per slot, the Service, and what status reports. */
export interface Rendered {
  readonly hash: string;
  readonly template: ReplicaTemplate;
  readonly pod: (slot: number) => PodObject;
  readonly service: ServiceObject;
  readonly model: string;
  readonly url: string;
  /** A tensor-parallel replica is a gang that the scheduler keeps inside one NVLink island. */
  readonly gang: boolean;
}

export type RenderOutcome = { readonly ok: true; readonly value: Rendered } | { readonly ok: false; readonly issues: readonly SpecIssue[] };

/**
 * The GPU constraints of a replica, in the annotations the SITS scheduler reads for any pod (the TrainingJob's):
 * allowed models (with their aliases), the higher of the spec's and the engine's compute capability, per-device
 * memory. A tensor-parallel replica is a gang of its one pod (minMember 1) that must stay in one NVLink domain,
 * which for a pod on one node means one NVLink island; with pipeline stages only the preference remains (stages
 * talk far less than tensor-parallel ranks).
 */
export function schedulingAnnotations(s: InferenceServiceObject, t: ReplicaTemplate, cfg: BuildConfig, gang: boolean): Record<string, string> {
  const spec = s.spec;
  const out: Record<string, string> = {};
  const models = gpuModelsValue(spec.gpu?.allowedModels ?? [], cfg.gpuModelAliases);
  if (models !== undefined) out[ANNOTATION.gpuModels] = models;
  if (spec.gpusPerReplica > 0) out[ANNOTATION.minComputeCapability] = t.minComputeCapability;
  if (spec.gpu?.minMemoryGiB !== undefined) out[ANNOTATION.gpuMemory] = `${spec.gpu.minMemoryGiB}Gi`;
  if (gang) {
    out[ANNOTATION.minMember] = '1';
    out[pipelineParallel(spec) > 1 ? ANNOTATION.topologyPreferred : ANNOTATION.topologyRequired] = 'nvlink-domain';
  }
  return out;
}

/** Every reason this spec cannot be served on this cluster, beyond what the runtime itself rejects. */
function clusterIssues(s: InferenceServiceObject, t: ReplicaTemplate, facts: ClusterFacts): SpecIssue[] {
  const spec = s.spec;
  const issues: SpecIssue[] = [];
  const tp = tensorParallel(spec);
  const island = facts.largestNvlinkIslandGpus;
  if (spec.gpusPerReplica > 0 && tp > 1 && island !== undefined && tp > island) {
    const asked = spec.tensorParallelSize === undefined ? ` (unset: every GPU of the replica, spec.gpusPerReplica=${spec.gpusPerReplica})` : '';
    issues.push({ field: 'spec.tensorParallelSize', message: `tensor-parallel size ${tp}${asked} fits no NVLink domain of the cluster: the largest NVLink island has ${island} GPUs` });
  }
  const models = spec.gpu?.allowedModels ?? [];
  if (t.pinGpuModel && spec.gpusPerReplica > 0 && models.length !== 1) {
    issues.push({
      field: 'spec.gpu.allowedModels',
      message: `${t.runtime.displayName} serves an engine built for one GPU model: name exactly that model in spec.gpu.allowedModels (${models.length === 0 ? 'unset' : `${models.length} given`})`,
    });
  }
  return issues;
}

/** The pod spec of the template: the user's podTemplate, the serving container on top of its `server` container. */
function podSpec(s: InferenceServiceObject, t: ReplicaTemplate): PodSpecObject {
  const base = structuredClone((s.spec.podTemplate?.spec ?? {}) as Record<string, unknown>);
  const given = Array.isArray(base.containers) ? (base.containers as ContainerObject[]) : [];
  const own = given.find((c) => c.name === SERVING_CONTAINER);
  // The template's container adds what the runtime does not set (volume mounts, security context); ours wins on the rest.
  const server = { ...own, ...structuredClone(t.container) } as ContainerObject;
  return {
    ...base,
    containers: [server, ...given.filter((c) => c.name !== SERVING_CONTAINER)],
    schedulerName: SCHEDULER_NAME,
    restartPolicy: 'Always',
    ...(s.spec.priorityClassName === undefined ? {} : { priorityClassName: s.spec.priorityClassName }),
  };
}

export function renderService(s: InferenceServiceObject, cfg: BuildConfig, facts: ClusterFacts): RenderOutcome {
  const r = renderReplica(s.spec);
  if (!r.ok) return { ok: false, issues: r.issues };
  const t = r.template;
  const issues = clusterIssues(s, t, facts);
  if (issues.length > 0) return { ok: false, issues };
  const name = isvcName(s);
  const ns = isvcNamespace(s);
  const gang = s.spec.gpusPerReplica > 1 && tensorParallel(s.spec) > 1;
  const spec = podSpec(s, t);
  const tmplMeta = s.spec.podTemplate?.metadata;
  const annotations = { ...tmplMeta?.annotations, ...schedulingAnnotations(s, t, cfg, gang) };
  const userLabels = { ...tmplMeta?.labels, ...(s.spec.queue === undefined ? {} : { [LABEL.queue]: s.spec.queue }) };
  // The hash covers everything the pod is made of except its name: any change there rolls the replicas.
  const hash = templateHash(JSON.stringify({ labels: userLabels, annotations, spec }));
  const pod = (slot: number): PodObject => {
    const podName = replicaPodName(name, hash, slot);
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: podName,
        namespace: ns,
        labels: { ...userLabels, ...replicaSelector(name), [LABEL.templateHash]: hash, ...(gang ? { [LABEL.podGroup]: podName } : {}) },
        annotations,
        ownerReferences: [ownerReference(s)],
      },
      spec,
    };
  };
  const ports = t.container.ports.map((p) => ({ name: p.name, port: p.containerPort, targetPort: p.name, protocol: 'TCP' }));
  const service: ServiceObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: serviceName(name), namespace: ns, labels: { [LABEL.inferenceService]: name }, ownerReferences: [ownerReference(s)] },
    // Only ready pods become endpoints (no publishNotReadyAddresses): readiness is the engine's health endpoint.
    spec: { selector: replicaSelector(name), ports },
  };
  return { ok: true, value: { hash, template: t, pod, service, model: servedModelName(s.spec), url: `http://${serviceName(name)}.${ns}.svc:${t.port}`, gang } };
}
