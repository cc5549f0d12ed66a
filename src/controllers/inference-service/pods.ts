/**
 * The objects an InferenceService owns, built from its spec: one pod per replica (the serving container rendered
 * from the runtime's data by serving/pod-template.ts, plus what only the controller knows: owner, scheduler, GPU
 * constraints, the gang of a tensor-parallel replica) and the Service in front of the ready replicas. A spec the
 * runtime or the cluster cannot honour yields every issue at once and no object (nothing half-applied).
 */
import { gpuModelsValue } from '../gpu-constraints.ts';
import { ANNOTATION, API_GROUP_VERSION, KIND, LABEL, SCHEDULER_NAME } from '../../api/wire.ts';
import { renderReplica, SERVING_CONTAINER, type ReplicaTemplate } from '../../serving/pod-template.ts';
import { gpusPerPod, pipelineParallel, servedModelName, tensorParallel, type SpecIssue } from '../../serving/runtime.ts';
import type { ContainerObject, OwnerReference, PodObject, PodSpecObject, ServiceObject } from '../kube-objects.ts';
import { ADAPTERS_LOADED_CONDITION } from './engine-state.ts';
import type { ClusterFacts, InferenceServiceObject } from './model.ts';
import { groupServiceName, replicaPodName, replicaSelector, serviceName, templateHash, workerPodName, WORKER_ROLE } from './names.ts';

export interface BuildConfig {
  /** Extra names a GPU model may go by on nodes (e.g. GFD product → the scheduler's model name). */
  readonly gpuModelAliases?: (model: string) => readonly string[];
  /**
   * Something sets the adapters-loaded pod condition (the serving loop runs): replicas of a service with adapters
   * declare it as a readiness gate, so none is an endpoint before its adapters are on (ADR 0125).
   */
  readonly adapterReadinessGate?: boolean;
}

export const isvcName = (s: InferenceServiceObject): string => s.metadata.name ?? '';
export const isvcNamespace = (s: InferenceServiceObject): string => s.metadata.namespace ?? 'default';

export function ownerReference(s: InferenceServiceObject): OwnerReference {
  return {
    apiVersion: API_GROUP_VERSION,
    kind: KIND.inferenceService,
    name: isvcName(s),
    uid: s.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
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
  /** Pods of one replica (1, or a leader and its workers). */
  readonly podsPerReplica: number;
  /** Every pod of the replica in `slot`, the leader first (just `pod(slot)` for a one-pod replica). */
  readonly group: (slot: number) => PodObject[];
  /** The headless Service that gives a multi-pod replica's pods their DNS names (LWS's subdomain). */
  readonly groupService?: ServiceObject;
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
  if (gang && t.podsPerReplica > 1) {
    // The whole group or nothing. Tensor parallelism across pods needs one (multi-node) NVLink domain; pipeline
    // stages across pods take the spec's placement, by default packed into one rack (ADR 0134).
    out[ANNOTATION.minMember] = String(t.podsPerReplica);
    const required = tensorParallel(spec) > gpusPerPod(spec) ? 'nvlink-domain' : spec.replicaTopology?.requiredLevel;
    if (required !== undefined) out[ANNOTATION.topologyRequired] = required;
    if (required !== 'nvlink-domain') out[ANNOTATION.topologyPreferred] = spec.replicaTopology?.preferredLevel ?? 'rack';
  } else if (gang) {
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
  // Tensor parallelism across the pods of a replica needs a multi-node NVLink domain, which these facts do not
  // describe: the scheduler judges it (the group waits with its explanation).
  if (spec.gpusPerReplica > 0 && tp > 1 && island !== undefined && tp > island && tp <= gpusPerPod(spec)) {
    const asked = spec.tensorParallelSize === undefined ? ` (unset: every GPU of the replica, spec.gpusPerReplica=${spec.gpusPerReplica})` : '';
    issues.push({
      field: 'spec.tensorParallelSize',
      message: `tensor-parallel size ${tp}${asked} fits no NVLink domain of the cluster: the largest NVLink island has ${island} GPUs`,
    });
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
function podSpec(s: InferenceServiceObject, t: ReplicaTemplate, cfg: BuildConfig): PodSpecObject {
  const base = structuredClone((s.spec.podTemplate?.spec ?? {}) as Record<string, unknown>);
  const given = Array.isArray(base.containers) ? (base.containers as ContainerObject[]) : [];
  const own = given.find((c) => c.name === SERVING_CONTAINER);
  // The template's container adds what the runtime does not set (volume mounts, security context); ours wins on the rest.
  const server = { ...own, ...structuredClone(t.container) } as ContainerObject;
  // Only with adapters, or on an engine launched ready for them (ADR 0136: the first adapter then rolls nothing):
  // a gate without a writer would keep every replica out of its endpoints.
  const lora = t.runtime.lora;
  const gated =
    cfg.adapterReadinessGate === true && ((s.spec.model.adapters ?? []).length > 0 || (lora.kind === 'runtime' && lora.launchedForAdapters(s.spec)));
  const userGates = Array.isArray(base.readinessGates)
    ? (base.readinessGates as { conditionType?: unknown }[]).filter((g) => g.conditionType !== ADAPTERS_LOADED_CONDITION)
    : [];
  return {
    ...base,
    ...(gated ? { readinessGates: [...userGates, { conditionType: ADAPTERS_LOADED_CONDITION }] } : {}),
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
  const size = t.podsPerReplica;
  const gang = size > 1 || (s.spec.gpusPerReplica > 1 && tensorParallel(s.spec) > 1);
  const spec = podSpec(s, t, cfg);
  // Workers serve no API: the adapters gate (written by the serving loop on leaders only) stays off them.
  const { readinessGates: gates, ...ungated } = spec as PodSpecObject & { readinessGates?: { conditionType?: unknown }[] };
  const workerGates = (gates ?? []).filter((g) => g.conditionType !== ADAPTERS_LOADED_CONDITION);
  const workerSpec: PodSpecObject | undefined =
    t.worker === undefined
      ? undefined
      : {
          ...ungated,
          ...(workerGates.length > 0 ? { readinessGates: workerGates } : {}),
          containers: spec.containers.map((c) => (c.name === SERVING_CONTAINER ? (structuredClone(t.worker) as ContainerObject) : c)),
        };
  const tmplMeta = s.spec.podTemplate?.metadata;
  const annotations = { ...tmplMeta?.annotations, ...schedulingAnnotations(s, t, cfg, gang) };
  const userLabels = { ...tmplMeta?.labels, ...(s.spec.queue === undefined ? {} : { [LABEL.queue]: s.spec.queue }) };
  // The hash covers everything the pod is made of except its name: any change there rolls the replicas.
  const hash = templateHash(JSON.stringify({ labels: userLabels, annotations, spec, ...(workerSpec === undefined ? {} : { workerSpec, size }) }));
  const subdomain = groupServiceName(name);
  /** A pod of a multi-pod replica: LWS's identity (hostname, subdomain) and environment, the group as its gang. */
  const member = (slot: number, index: number): PodObject => {
    const leader = replicaPodName(name, hash, slot);
    const podName = index === 0 ? leader : workerPodName(leader, index);
    const env = [
      { name: 'LWS_LEADER_ADDRESS', value: `${leader}.${subdomain}.${ns}` },
      { name: 'LWS_GROUP_SIZE', value: String(size) },
      { name: 'LWS_WORKER_INDEX', value: String(index) },
    ];
    const base = index === 0 ? spec : (workerSpec ?? spec);
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: podName,
        namespace: ns,
        labels: {
          ...userLabels,
          ...replicaSelector(name),
          ...(index === 0 ? {} : { [LABEL.role]: WORKER_ROLE }),
          [LABEL.templateHash]: hash,
          [LABEL.podGroup]: leader,
          [LABEL.workerIndex]: String(index),
        },
        annotations,
        ownerReferences: [ownerReference(s)],
      },
      spec: {
        ...base,
        hostname: podName,
        subdomain,
        containers: base.containers.map((c) => ({ ...c, env: [...env, ...(c.env ?? []).filter((e) => !env.some((x) => x.name === e.name))] })),
      },
    };
  };
  const pod = (slot: number): PodObject => {
    if (size > 1) return member(slot, 0);
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
  const group = (slot: number): PodObject[] => (size > 1 ? Array.from({ length: size }, (_, i) => member(slot, i)) : [pod(slot)]);
  // The leader's cluster ports (Ray) are for its workers, not for clients.
  const internal = size > 1 ? (t.runtime.multiNode?.leaderPorts ?? {}) : {};
  const ports = t.container.ports
    .filter((p) => !(p.name in internal))
    .map((p) => ({ name: p.name, port: p.containerPort, targetPort: p.name, protocol: 'TCP' }));
  const service: ServiceObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: serviceName(name), namespace: ns, labels: { [LABEL.inferenceService]: name }, ownerReferences: [ownerReference(s)] },
    // Only ready pods become endpoints (no publishNotReadyAddresses): readiness is the engine's health endpoint.
    spec: { selector: replicaSelector(name), ports },
  };
  // Workers must resolve the leader before it is ready (it becomes ready only once they joined): not-ready
  // addresses are published, as LWS's headless Service does.
  const groupService: ServiceObject | undefined =
    size > 1
      ? {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: subdomain, namespace: ns, labels: { [LABEL.inferenceService]: name }, ownerReferences: [ownerReference(s)] },
          spec: { clusterIP: 'None', selector: { [LABEL.inferenceService]: name }, publishNotReadyAddresses: true },
        }
      : undefined;
  return {
    ok: true,
    value: {
      hash,
      template: t,
      pod,
      service,
      model: servedModelName(s.spec),
      url: `http://${serviceName(name)}.${ns}.svc:${t.port}`,
      gang,
      podsPerReplica: size,
      group,
      ...(groupService === undefined ? {} : { groupService }),
    },
  };
}
