/**
 * The pod template of one InferenceService replica, rendered from the spec and the runtime's data: the serving
 * container (image, command, args, ports, env, GPUs, probes). The controller adds what only it knows (owner
 * references, scheduler name, the model download); this part is pure so that it is unit-tested per runtime and
 * shared with the BatchInferenceJob (issue 13). A spec the runtime cannot honour yields every issue at once.
 */
import type { InferenceServiceSpec } from '../api/schema/inference-service.ts';
import { gpusPerPod, podsPerReplica, type HttpProbe, type RuntimeDefinition, type SpecIssue } from './runtime.ts';
import { runtimeFor } from './runtimes/index.ts';

/** Where the controller puts the weights and the adapters (KServe's storage-initializer convention). */
export const MODEL_DIR = '/mnt/models';
export const adapterDir = (name: string): string => `/mnt/adapters/${name}`;
export const SERVING_CONTAINER = 'server';

export interface ContainerPort {
  readonly name: string;
  readonly containerPort: number;
  readonly protocol: 'TCP';
}
export interface EnvVar {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: Readonly<Record<string, unknown>>;
}
export interface Probe {
  readonly httpGet: { readonly path: string; readonly port: string };
  readonly initialDelaySeconds: number;
  readonly periodSeconds: number;
  readonly timeoutSeconds: number;
  readonly failureThreshold: number;
}
export interface ServingContainer {
  readonly name: string;
  readonly image: string;
  readonly command?: readonly string[];
  readonly args: readonly string[];
  readonly ports: readonly ContainerPort[];
  readonly env: readonly EnvVar[];
  readonly resources: { readonly limits: Readonly<Record<string, string>>; readonly requests: Readonly<Record<string, string>> };
  readonly readinessProbe: Probe;
  readonly livenessProbe: Probe;
  readonly startupProbe: Probe;
  readonly imagePullPolicy?: string;
  readonly workingDir?: string;
}
/** A worker of a multi-pod replica: the engine's worker process, no API server and so no probes. */
export type WorkerContainer = Omit<ServingContainer, 'readinessProbe' | 'livenessProbe' | 'startupProbe'>;

export interface ReplicaTemplate {
  readonly runtime: RuntimeDefinition;
  readonly port: number;
  readonly metricsPort: number;
  readonly container: ServingContainer;
  /** The lowest compute capability a node's GPUs must have: the higher of the spec's and the engine's. */
  readonly minComputeCapability: string;
  /** The engine only runs on the GPU model it was built for (Triton/TensorRT-LLM): pin replicas to one model. */
  readonly pinGpuModel: boolean;
  /** Pods of one replica; above 1 the container is the leader's and `worker` every other pod's. */
  readonly podsPerReplica: number;
  readonly worker?: WorkerContainer;
}

export type RenderResult = { readonly ok: true; readonly template: ReplicaTemplate } | { readonly ok: false; readonly issues: readonly SpecIssue[] };

const probe = (p: HttpProbe, port: string): Probe => ({
  httpGet: { path: p.path, port },
  initialDelaySeconds: p.initialDelaySeconds,
  periodSeconds: p.periodSeconds,
  timeoutSeconds: p.timeoutSeconds,
  failureThreshold: p.failureThreshold,
});

/** "8.0" vs "10.0" compared as numbers (major.minor). */
export function compareComputeCapability(a: string, b: string): number {
  const [am = 0, an = 0] = a.split('.').map(Number);
  const [bm = 0, bn = 0] = b.split('.').map(Number);
  return am !== bm ? am - bm : an - bn;
}

/** Renders the replica's serving container, or returns every reason the spec does not fit the runtime. */
export function renderReplica(spec: InferenceServiceSpec): RenderResult {
  const runtime = runtimeFor(spec.runtime);
  if (runtime === undefined) return { ok: false, issues: [{ field: 'spec.runtime', message: `unknown runtime ${JSON.stringify(spec.runtime)}` }] };
  const port = spec.port ?? runtime.defaultPort;
  const pods = podsPerReplica(spec);
  const multi = runtime.multiNode;
  const multiIssue: SpecIssue[] =
    pods > 1 && multi === undefined
      ? [
          {
            field: 'spec.podsPerReplica',
            message: `${runtime.displayName} runs in one pod only: podsPerReplica ${pods} needs a runtime with multi-node serving (vllm)`,
          },
        ]
      : [];
  const args = runtime.args({ spec, port, modelDir: MODEL_DIR, adapterDir });
  if (!args.ok || multiIssue.length > 0) return { ok: false, issues: [...multiIssue, ...(args.ok ? [] : args.issues)] };
  const metricsPort = runtime.metricsPort ?? port;
  const issues: SpecIssue[] = [];
  for (const [name, p] of Object.entries(runtime.extraPorts)) {
    if (p === port) issues.push({ field: 'spec.port', message: `port ${port} is the ${runtime.displayName} ${name} port; choose another serving port` });
  }
  if (issues.length > 0) return { ok: false, issues };

  // The runtime's environment first; spec.container.env overrides an entry of the same name.
  const env = new Map<string, EnvVar>(
    Object.entries(runtime.env({ spec, port, modelDir: MODEL_DIR, adapterDir })).map(([name, value]) => [name, { name, value }]),
  );
  for (const e of spec.container?.env ?? [])
    env.set(e.name, { name: e.name, ...(e.value !== undefined ? { value: e.value } : {}), ...(e.valueFrom !== undefined ? { valueFrom: e.valueFrom } : {}) });

  const gpus = String(gpusPerPod(spec));
  const extra = Object.fromEntries(Object.entries(spec.resources ?? {}).map(([k, v]) => [k, String(v)]));
  const resources =
    spec.gpusPerReplica > 0
      ? { limits: { ...extra, 'nvidia.com/gpu': gpus }, requests: { ...extra, 'nvidia.com/gpu': gpus } }
      : { limits: extra, requests: extra };
  // The spec's args come after the runtime's: the engines' parsers let the last occurrence of a flag win.
  const engineArgs = [...args.args, ...(pods > 1 && multi !== undefined ? multi.extraArgs : []), ...(spec.container?.args ?? [])];
  // A multi-pod leader wraps the engine in the runtime's cluster start-up, unless the spec gives its own command.
  const leader = pods > 1 && multi !== undefined && spec.container?.command === undefined ? multi.leader(engineArgs) : undefined;
  const command = leader?.command ?? spec.container?.command ?? (runtime.command.length > 0 ? runtime.command : undefined);
  const extraPorts = { ...runtime.extraPorts, ...(pods > 1 ? multi?.leaderPorts : {}) };
  const container: ServingContainer = {
    name: SERVING_CONTAINER,
    image: spec.container?.image ?? runtime.image,
    ...(command !== undefined ? { command } : {}),
    args: leader?.args ?? engineArgs,
    ports: [
      { name: 'http', containerPort: port, protocol: 'TCP' },
      ...Object.entries(extraPorts).map(([name, containerPort]) => ({ name, containerPort, protocol: 'TCP' as const })),
    ],
    env: [...env.values()],
    resources,
    readinessProbe: probe(runtime.readiness, 'http'),
    livenessProbe: probe(runtime.liveness, 'http'),
    startupProbe: probe(runtime.startup, 'http'),
    ...(spec.container?.imagePullPolicy !== undefined ? { imagePullPolicy: spec.container.imagePullPolicy } : {}),
    ...(spec.container?.workingDir !== undefined ? { workingDir: spec.container.workingDir } : {}),
  };
  const asked = spec.gpu?.minComputeCapability;
  const minComputeCapability =
    asked !== undefined && compareComputeCapability(asked, runtime.gpus.minComputeCapability) > 0 ? asked : runtime.gpus.minComputeCapability;
  const workerLine = pods > 1 ? multi?.worker() : undefined;
  const worker: WorkerContainer | undefined =
    workerLine === undefined
      ? undefined
      : {
          name: SERVING_CONTAINER,
          image: container.image,
          command: workerLine.command,
          args: workerLine.args,
          ports: [],
          env: container.env,
          resources,
          ...(container.imagePullPolicy !== undefined ? { imagePullPolicy: container.imagePullPolicy } : {}),
          ...(container.workingDir !== undefined ? { workingDir: container.workingDir } : {}),
        };
  return {
    ok: true,
    template: {
      runtime,
      port,
      metricsPort,
      container,
      minComputeCapability,
      pinGpuModel: runtime.gpus.boundToBuildGpu,
      podsPerReplica: pods,
      ...(worker === undefined ? {} : { worker }),
    },
  };
}
