/**
 * The worker pods of a BatchInferenceJob: the engine container rendered by the serving runtimes
 * (serving/pod-template.ts, the same code as an InferenceService replica: shared, not copied), a `sits
 * batch-worker` container beside it that feeds the engine its shard over localhost (docs/adr/0102), and the
 * claims of the input and output mounted into the worker. A worker needing several GPUs for tensor parallelism is a
 * gang of its pod kept inside one NVLink island, as a tensor-parallel replica is. Pure.
 */
import { SITS_IMAGE } from '../../api/version.ts';
import { quantityToMiB, quantityToMilli } from '../../api/quantity.ts';
import { withDefaults } from '../../api/validate.ts';
import { ANNOTATION, API_GROUP_VERSION, GPU_RESOURCE, KIND, LABEL, SCHEDULER_NAME } from '../../api/wire.ts';
import type { BatchInferenceJob } from '../../api/schema/batch-inference-job.ts';
import { renderReplica, SERVING_CONTAINER, type EnvVar, type ServingContainer } from '../../serving/pod-template.ts';
import { servedModelName, tensorParallel, type SpecIssue } from '../../serving/runtime.ts';
import { runtimeFor } from '../../serving/runtimes/index.ts';
import type { ContainerObject, OwnerReference, PodObject } from '../kube-objects.ts';
import { schedulingAnnotations, type BuildConfig } from '../inference-service/pods.ts';
import type { InferenceServiceObject } from '../inference-service/model.ts';
import { batchPolicyOf } from './live-batch.ts';
import type { PluginLimits } from './wasm-plugin.ts';
import { elasticWorkerPodName, fractionalServer } from './route-placement.ts';
import { BATCH_PLUGIN_MOUNT, BATCH_PLUGIN_VOLUME, batchMountPath, formatAssignment, WORKER_CONTAINER } from './worker-protocol.ts';
import { parsePvcUri } from '../../api/data-uri.ts';

export type BatchJobObject = BatchInferenceJob;

/** The image holding the `sits` CLI (the chart's image). */
export const DEFAULT_WORKER_IMAGE = SITS_IMAGE;

export const workerPodName = (job: string, index: number): string => `${job}-${index}`;
/**
 * The CPU fallback worker (the fault ladder's rung 3, ADR 0162). `-cpu`, not `-cpu-0`: a worker name ends in digits,
 * so this one is no other job's worker (`<job>-cpu-0` is worker 0 of a job named `<job>-cpu`).
 */
export const cpuWorkerPodName = (job: string): string => `${job}-cpu`;

/** What the CPU fallback worker requests when spec.resources says nothing of cpu or memory. */
export const DEFAULT_CPU_WORKER_RESOURCES: Readonly<Record<'cpu' | 'memory', string>> = { cpu: '4', memory: '16Gi' };

export function ownerReference(j: BatchJobObject): OwnerReference {
  return {
    apiVersion: API_GROUP_VERSION,
    kind: KIND.batchInferenceJob,
    name: j.metadata.name ?? '',
    uid: j.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The job seen as one InferenceService replica: what the serving runtimes render the engine container from. */
export function asInferenceService(j: BatchJobObject): InferenceServiceObject {
  const s = j.spec;
  return withDefaults('InferenceService', {
    apiVersion: API_GROUP_VERSION,
    kind: KIND.inferenceService,
    metadata: { name: j.metadata.name, namespace: j.metadata.namespace },
    spec: {
      runtime: s.runtime,
      model: {
        uri: s.model.uri,
        name: j.metadata.name,
        ...(s.model.revision === undefined ? {} : { revision: s.model.revision }),
        ...(s.model.quantization === undefined ? {} : { quantization: s.model.quantization }),
      },
      gpusPerReplica: s.gpusPerWorker,
      ...(s.gpu === undefined ? {} : { gpu: s.gpu }),
      ...(s.resources === undefined ? {} : { resources: s.resources }),
      ...(s.container === undefined ? {} : { container: s.container }),
      ...(s.priorityClassName === undefined ? {} : { priorityClassName: s.priorityClassName }),
    },
  }) as InferenceServiceObject;
}

export interface WorkerTemplate {
  readonly pod: (index: number) => PodObject;
  /** The CPU fallback worker: no GPU, CPU and memory requested, the engine's CPU build; set when spec.faultRecovery.cpuFallback is. */
  readonly cpuPod?: () => PodObject;
  /** GPU worker `index` on a share of one device (route gpu-fragments, ADR 0161). */
  readonly fractionPod: (index: number, fraction: number, deviceMemoryGiB?: number) => PodObject;
  /** CPU-elastic worker `n` (route cpu-elastic, ADR 0161): the fallback worker's pod, taking all work; unset: why not. */
  readonly elasticPod: ((n: number) => PodObject) | string;
  readonly model: string;
  readonly gang: boolean;
}

export type WorkerRender = { readonly ok: true; readonly value: WorkerTemplate } | { readonly ok: false; readonly issues: readonly SpecIssue[] };

export interface WorkerBuildConfig extends BuildConfig {
  readonly workerImage?: string;
  /** The operator's limits for the workers' strategy plugins (ADR 0117: the host's, never the job's); unset: the defaults. */
  readonly pluginLimits?: Partial<PluginLimits>;
}

/** Every reason the job's pods cannot be built, or the builder of worker pod `index`. */
export function renderWorkers(j: BatchJobObject, cfg: WorkerBuildConfig = {}): WorkerRender {
  const isvc = asInferenceService(j);
  const r = renderReplica(isvc.spec);
  if (!r.ok) return { ok: false, issues: r.issues.map((i) => ({ ...i, field: i.field.replace(/^spec\.gpusPerReplica/, 'spec.gpusPerWorker') })) };
  // The CPU build serves the fallback worker and the CPU-elastic workers (a refusal matters only to cpuFallback).
  const cpu = renderCpuServer(isvc);
  const input = parsePvcUri(j.spec.input.uri);
  const output = parsePvcUri(j.spec.output.uri);
  const issues: SpecIssue[] = j.spec.faultRecovery.cpuFallback && !cpu.ok ? [...cpu.issues] : [];
  if (!input.ok) issues.push({ field: 'spec.input.uri', message: `${input.reason}, got ${JSON.stringify(j.spec.input.uri)}` });
  if (!output.ok) issues.push({ field: 'spec.output.uri', message: `${output.reason}, got ${JSON.stringify(j.spec.output.uri)}` });
  if (!input.ok || !output.ok || issues.length > 0) return { ok: false, issues };
  const t = r.template;
  const name = j.metadata.name ?? '';
  const ns = j.metadata.namespace ?? 'default';
  const gang = j.spec.gpusPerWorker > 1 && tensorParallel(isvc.spec) > 1;
  const model = servedModelName(isvc.spec);
  const claims = [...new Set([input.claim, output.claim])];
  const batching = batchPolicyOf(j.spec);
  // A batch-size plugin in a ConfigMap is mounted into the worker as a file, as any pod reads a ConfigMap: the kubelet
  // fetches it, the worker needs no RBAC on ConfigMaps (ADR 0156). Optional, so a missing ConfigMap or key does not
  // hold the pod in ContainerCreating: the worker then refuses the plugin with that reason and the built-in decides.
  const pluginCm = batching?.plugin?.configMap;
  const pluginVolume =
    pluginCm === undefined
      ? []
      : [{ name: BATCH_PLUGIN_VOLUME, configMap: { name: pluginCm.name, items: [{ key: pluginCm.key, path: pluginCm.key }], optional: true } }];
  const worker: ContainerObject = {
    name: WORKER_CONTAINER,
    image: cfg.workerImage ?? DEFAULT_WORKER_IMAGE,
    command: ['sits', 'batch-worker'],
    args: [
      '--input',
      `${batchMountPath(input.claim)}/${input.path}`,
      '--output',
      `${batchMountPath(output.claim)}/${output.path}`,
      // The pod's own address: the engine binds every interface of the pod's network namespace.
      '--engine',
      `http://$(POD_IP):${t.port}`,
      '--model',
      model,
      '--job-uid',
      j.metadata.uid ?? '',
      // Which /metrics names carry the engine's KV-cache use (ADR 0164), and its tokenizer for the tokenise stage (ADR 0167).
      '--runtime',
      j.spec.runtime,
      // The finished prefix of a shard is committed at the job's checkpoint interval (ADR 0159).
      '--checkpoint-interval',
      String(j.spec.checkpoint.intervalSeconds),
      ...(j.spec.checkpoint.intervalRecords === undefined ? [] : ['--checkpoint-records', String(j.spec.checkpoint.intervalRecords)]),
      // Dynamic batching or a batch-size plugin: the worker drives its in-flight requests by it (live-batch.ts).
      ...(batching === undefined ? [] : ['--batching', JSON.stringify(batching)]),
      ...(pluginCm === undefined ? [] : ['--plugin-configmap-dir', BATCH_PLUGIN_MOUNT]),
      ...(batching?.plugin === undefined || cfg.pluginLimits === undefined ? [] : ['--plugin-limits', JSON.stringify(cfg.pluginLimits)]),
    ],
    env: [
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ],
    volumeMounts: [
      ...claims.map((c) => ({ name: `batch-${c}`, mountPath: batchMountPath(c) })),
      ...(pluginCm === undefined ? [] : [{ name: BATCH_PLUGIN_VOLUME, mountPath: BATCH_PLUGIN_MOUNT, readOnly: true }]),
    ],
  };
  const base = structuredClone((j.spec.podTemplate?.spec ?? {}) as Record<string, unknown>);
  const given = Array.isArray(base.containers) ? (base.containers as ContainerObject[]) : [];
  // The template's `server` container adds what the runtime does not set (mounts, security context); ours wins on the rest.
  const server = { ...given.find((c) => c.name === SERVING_CONTAINER), ...structuredClone(t.container) } as ContainerObject;
  const annotations = { ...j.spec.podTemplate?.metadata?.annotations, ...schedulingAnnotations(isvc, t, cfg, gang) };
  const build = (podName: string, engine: ContainerObject, podAnnotations: Record<string, string>, extraLabels: Record<string, string>): PodObject => {
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: podName,
        namespace: ns,
        labels: {
          ...j.spec.podTemplate?.metadata?.labels,
          [LABEL.batchInferenceJob]: name,
          ...(j.spec.queue === undefined ? {} : { [LABEL.queue]: j.spec.queue }),
          ...extraLabels,
        },
        annotations: { ...podAnnotations, [ANNOTATION.batchAssignment]: formatAssignment(undefined) },
        ownerReferences: [ownerReference(j)],
      },
      spec: {
        // The user's podTemplate (service account, tolerations, ...) underneath; ours wins on what we set.
        ...base,
        containers: [engine, worker, ...given.filter((c) => c.name !== SERVING_CONTAINER && c.name !== WORKER_CONTAINER)],
        volumes: [
          ...(Array.isArray(base.volumes) ? (base.volumes as unknown[]) : []),
          ...claims.map((c) => ({ name: `batch-${c}`, persistentVolumeClaim: { claimName: c } })),
          ...pluginVolume,
        ],
        schedulerName: SCHEDULER_NAME,
        // A worker that dies is replaced by the controller (its shard goes back to the coordinator), not restarted in place.
        restartPolicy: 'Never',
        ...(j.spec.priorityClassName === undefined ? {} : { priorityClassName: j.spec.priorityClassName }),
      },
    };
  };
  const pod = (index: number): PodObject => {
    const podName = workerPodName(name, index);
    return build(podName, server, annotations, gang ? { [LABEL.podGroup]: podName } : {});
  };
  // No GPU scheduling annotations (GPU models, compute capability, memory): the pod holds no GPU, any node with the
  // CPUs and memory takes it. Never a gang.
  const cpuServer = cpu.ok ? ({ ...given.find((c) => c.name === SERVING_CONTAINER), ...structuredClone(cpu.container) } as ContainerObject) : undefined;
  const cpuPod =
    cpuServer === undefined || !j.spec.faultRecovery.cpuFallback
      ? undefined
      : (): PodObject => build(cpuWorkerPodName(name), cpuServer, { ...j.spec.podTemplate?.metadata?.annotations }, { [LABEL.batchCpuFallback]: 'true' });
  // A share of one device: the engine without its whole-GPU request, the gpu-fraction annotation, and the device
  // memory that leaves the share spec.gpu.minMemoryGiB (route-placement.ts). gpusPerWorker is 1 here, never a gang.
  const fractionPod = (index: number, fraction: number, deviceMemoryGiB?: number): PodObject =>
    build(
      workerPodName(name, index),
      fractionalServer(server, j.spec.runtime, fraction, GPU_RESOURCE),
      {
        ...annotations,
        [ANNOTATION.gpuFraction]: String(fraction),
        ...(deviceMemoryGiB === undefined ? {} : { [ANNOTATION.gpuMemory]: `${deviceMemoryGiB}Gi` }),
      },
      { [LABEL.batchRoute]: 'gpu-fragments' },
    );
  const elasticPod =
    cpuServer === undefined
      ? runtimeFor(j.spec.runtime)?.cpu === undefined
        ? `${runtimeFor(j.spec.runtime)?.displayName ?? j.spec.runtime} has no CPU build`
        : `its CPU build cannot be rendered: ${cpu.ok ? '' : cpu.issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`
      : (n: number): PodObject =>
          build(elasticWorkerPodName(name, n), cpuServer, { ...j.spec.podTemplate?.metadata?.annotations }, { [LABEL.batchRoute]: 'cpu-elastic' });
  return { ok: true, value: { pod, model, gang, fractionPod, elasticPod, ...(cpuPod === undefined ? {} : { cpuPod }) } };
}

/**
 * The engine container of the CPU fallback worker: the job rendered by its serving runtime with no GPU, then the
 * runtime's CPU build (image, flags, env; serving/runtime.ts CpuSupport). It requests spec.resources' cpu and memory
 * (DEFAULT_CPU_WORKER_RESOURCES where unset) as requests and limits, and no GPU; other resources stay as given.
 */
function renderCpuServer(
  isvc: InferenceServiceObject,
): { readonly ok: true; readonly container: ServingContainer } | { readonly ok: false; readonly issues: readonly SpecIssue[] } {
  const { gpu: _gpu, ...spec } = isvc.spec;
  const runtime = runtimeFor(spec.runtime);
  const support = runtime?.cpu;
  if (support === undefined)
    return {
      ok: false,
      issues: [
        {
          field: 'spec.faultRecovery.cpuFallback',
          message: `${runtime?.displayName ?? spec.runtime} has no CPU build to fall back to: set it false, or use the llamacpp or vllm runtime`,
        },
      ],
    };
  const given = Object.fromEntries(Object.entries(spec.resources ?? {}).filter(([k]) => k !== GPU_RESOURCE));
  const resources = { ...given, cpu: given.cpu ?? DEFAULT_CPU_WORKER_RESOURCES.cpu, memory: given.memory ?? DEFAULT_CPU_WORKER_RESOURCES.memory };
  const r = renderReplica({ ...spec, gpusPerReplica: 0, resources });
  if (!r.ok) return { ok: false, issues: r.issues };
  const cores = Math.max(1, Math.ceil((quantityToMilli(resources.cpu) ?? 1000) / 1000));
  const memoryMiB = quantityToMiB(resources.memory) ?? 16 * 1024;
  // The CPU build's env over the runtime's, under the spec's own (spec.container.env wins, as on the GPU workers).
  const own = new Set((spec.container?.env ?? []).map((e) => e.name));
  const cpuEnv = Object.entries(support.env(memoryMiB)).filter(([k]) => !own.has(k));
  const env: EnvVar[] = [...r.template.container.env.filter((e) => !cpuEnv.some(([k]) => k === e.name)), ...cpuEnv.map(([n, value]) => ({ name: n, value }))];
  const c = r.template.container;
  return { ok: true, container: { ...c, image: spec.container?.image ?? support.image, args: [...c.args, ...support.args(cores)], env } };
}
