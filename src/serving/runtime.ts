/**
 * A serving runtime as data (issue 12, Deliver 2): everything SITS needs to know about one engine — its image,
 * how the InferenceService spec becomes its command-line flags, its port, health endpoints, Prometheus metric
 * names, LoRA API and the GPUs it supports. The controller, the pod renderer, the metrics reader and the
 * simulator read these objects; none of them branches on the runtime's name. A new runtime is one file in
 * runtimes/ plus one line in runtimes/index.ts. Flag names are the engines' documented ones (docs/adr/0079).
 */
import type { InferenceRuntime, InferenceServiceSpec } from '../api/schema/inference-service.ts';

/** A bad spec for this runtime: the field (a JSON path under spec) and why. Rendering never half-applies. */
export interface SpecIssue {
  readonly field: string;
  readonly message: string;
}

/** What the runtime's flags are built from: the spec plus what the controller resolved. */
export interface RenderContext {
  readonly spec: InferenceServiceSpec;
  /** The port the engine listens on (spec.port or the runtime default). */
  readonly port: number;
  /** Where the weights are inside the container when they are not fetched by the engine itself. */
  readonly modelDir: string;
  /** Where adapter `name` is inside the container (the controller downloads adapters there). */
  readonly adapterDir: (name: string) => string;
}

/** The engine's command line, or what in the spec it cannot honour. */
export type ArgsResult = { readonly ok: true; readonly args: readonly string[] } | { readonly ok: false; readonly issues: readonly SpecIssue[] };

export interface HttpProbe {
  readonly path: string;
  readonly initialDelaySeconds: number;
  readonly periodSeconds: number;
  readonly timeoutSeconds: number;
  readonly failureThreshold: number;
}

/**
 * The engine's Prometheus names for each engine-neutral signal (metrics.ts). Each lists alternatives, first found
 * wins (vLLM renamed gpu_cache_usage_perc to kv_cache_usage_perc); a signal the engine does not export is empty.
 * Series of one family are summed (Triton reports one pending count per model).
 */
export interface EngineMetricNames {
  /** Requests being decoded now (gauge). */
  readonly running: readonly string[];
  /** Requests queued, not yet scheduled (gauge). */
  readonly waiting: readonly string[];
  /** KV-cache use in [0, 1] (gauge). */
  readonly kvCacheUsage: readonly string[];
  /**
   * The KV cache's size in tokens, where the engine says it: an info gauge whose labels give blocks × tokens a block
   * (vLLM's cache_config_info), or a gauge of the tokens held now, which with the usage ratio gives the size
   * (llama.cpp's kv_cache_tokens). Unset: the engine does not report its capacity.
   */
  readonly kvCacheCapacity?: { readonly info: string; readonly blocksLabel: string; readonly blockSizeLabel: string } | { readonly tokensInUse: string };
  /** Generated tokens so far (a counter, or a histogram's _sum, which only grows). */
  readonly generatedTokensTotal: readonly string[];
  /** Prompt tokens so far (same). */
  readonly promptTokensTotal: readonly string[];
  /** Time-to-first-token histogram base names (seconds). */
  readonly ttftSeconds: readonly string[];
  /** Inter-token latency histogram base names (seconds). */
  readonly itlSeconds: readonly string[];
}

/** How adapters reach a running replica. */
export type LoraApi =
  /** Loaded and unloaded while the engine runs (vLLM). */
  | {
      readonly kind: 'runtime';
      readonly load: { readonly method: 'POST'; readonly path: string; readonly body: (name: string, path: string) => Readonly<Record<string, unknown>> };
      readonly unload: { readonly method: 'POST'; readonly path: string; readonly body: (name: string) => Readonly<Record<string, unknown>> };
      /** Environment the engine needs before it accepts runtime loads. */
      readonly env: Readonly<Record<string, string>>;
      /**
       * The spec has the engine launched ready for runtime adapters even when it lists none (it reserved adapter
       * slots): adapters come and go with the same pod template (no roll), ADR 0136.
       */
      readonly launchedForAdapters: (spec: InferenceServiceSpec) => boolean;
    }
  /**
   * Loaded at launch from the command line; the running engine only switches them on and off (llama.cpp:
   * POST /lora-adapters with [{id, scale}]). A new adapter needs a rolling restart.
   */
  | {
      readonly kind: 'launch-scale';
      readonly scale: { readonly method: 'POST'; readonly path: string; readonly body: (scales: readonly { id: number; scale: number }[]) => unknown };
    }
  /** Loaded at launch only (TGI --lora-adapters); a change needs a rolling restart. */
  | { readonly kind: 'launch-only' }
  /** No LoRA (Triton). */
  | { readonly kind: 'none' };

/** GPUs the engine's kernels support (001 §2.4): the controller matches them against the node's labels. */
export interface GpuSupport {
  /** Lowest CUDA compute capability, e.g. "7.0". */
  readonly minComputeCapability: string;
  /** Whether the engine (or its built artefact) is bound to the exact GPU model it was built on (TensorRT engines). */
  readonly boundToBuildGpu: boolean;
}

/**
 * How the engine runs with no GPU at all: a BatchInferenceJob's CPU fallback worker (the fault ladder's rung 3,
 * ADR 0162). The spec is rendered with gpusPerReplica 0, then these flags are appended (last wins, so a GPU flag in
 * spec.container.args cannot put the fallback back on a GPU). Unset: the engine has no CPU build.
 */
export interface CpuSupport {
  /** The engine's CPU build (the GPU image's kernels need a GPU); spec.container.image still wins. */
  readonly image: string;
  /** Flags that keep the engine off any GPU and size it to the pod's `cpus` (whole cores, at least 1). */
  readonly args: (cpus: number) => readonly string[];
  /** Environment of the CPU build, e.g. its KV-cache size; the spec's env still wins. */
  readonly env: (memoryMiB: number) => Readonly<Record<string, string>>;
}

/** A process of a multi-pod replica: the container's command and args. */
export interface ProcessLine {
  readonly command: readonly string[];
  readonly args: readonly string[];
}

/**
 * How the engine runs as one replica over several pods (LeaderWorkerSet style). The pods get LWS's environment:
 * LWS_LEADER_ADDRESS (the leader's DNS name), LWS_GROUP_SIZE, LWS_WORKER_INDEX (0 on the leader).
 */
export interface MultiNodeSupport {
  /** The leader's process: joins the workers and serves the API with `engineArgs` (the runtime's args plus `extraArgs`). */
  readonly leader: (engineArgs: readonly string[]) => ProcessLine;
  /** A worker's process: joins the leader at $LWS_LEADER_ADDRESS. */
  readonly worker: () => ProcessLine;
  /** Engine flags only a multi-pod replica needs (vLLM: the Ray executor). */
  readonly extraArgs: readonly string[];
  /** Ports the workers reach on the leader (vLLM: Ray's GCS on 6379). */
  readonly leaderPorts: Readonly<Record<string, number>>;
}

/** A word for `sh -c`: single-quoted unless it is plainly safe. */
export const shellWord = (w: string): string => (/^[A-Za-z0-9_./:=,@%+-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`);

export interface RuntimeDefinition {
  readonly name: InferenceRuntime;
  readonly displayName: string;
  /** Default image; spec.container.image overrides it. */
  readonly image: string;
  readonly defaultPort: number;
  /** Where /metrics is served, when not on the serving port (Triton: 8002). */
  readonly metricsPort?: number;
  readonly metricsPath: string;
  /** Extra container ports besides the serving one (name → port). */
  readonly extraPorts: Readonly<Record<string, number>>;
  readonly command: readonly string[];
  readonly args: (ctx: RenderContext) => ArgsResult;
  readonly env: (ctx: RenderContext) => Readonly<Record<string, string>>;
  readonly readiness: HttpProbe;
  readonly liveness: HttpProbe;
  /** Loading weights takes minutes: the startup probe holds the liveness probe off until then. */
  readonly startup: HttpProbe;
  readonly metrics: EngineMetricNames;
  /**
   * The engine caches prompt prefixes across requests (vLLM V1's automatic prefix caching, on by default): a prefix
   * shared by many requests is held in its KV cache once, so more sequences fit. Unset: each holds its own.
   */
  readonly sharesPrefixKv?: boolean;
  readonly lora: LoraApi;
  readonly gpus: GpuSupport;
  readonly cpu?: CpuSupport;
  /** Unset: the engine runs in one pod only, and podsPerReplica > 1 is refused. */
  readonly multiNode?: MultiNodeSupport;
}

/** The served model name: spec.model.name, else the last path segment of the URI. */
export function servedModelName(spec: InferenceServiceSpec): string {
  if (spec.model.name !== undefined) return spec.model.name;
  const parts = spec.model.uri.replace(/\/+$/, '').split('/');
  return parts[parts.length - 1] ?? spec.model.uri;
}

/** An `hf://org/model` URI as the engine's Hugging Face id, or undefined for any other scheme. */
export function huggingFaceId(uri: string): string | undefined {
  const m = /^hf:\/\/(.+)$/.exec(uri);
  return m?.[1]?.replace(/\/+$/, '');
}

/** Pods of one replica (1 unless multi-node: a leader and its workers). */
export const podsPerReplica = (spec: InferenceServiceSpec): number => Math.max(1, spec.podsPerReplica ?? 1);

/** GPUs of each pod of a replica. */
export const gpusPerPod = (spec: InferenceServiceSpec): number => Math.floor(spec.gpusPerReplica / podsPerReplica(spec));

/**
 * Tensor-parallel degree inside a replica (the spec default: every GPU of the replica; with several pods, the GPUs
 * of one pod — vLLM's multi-node guidance: TP = GPUs per node, PP = nodes).
 */
export function tensorParallel(spec: InferenceServiceSpec): number {
  return spec.tensorParallelSize ?? Math.max(1, podsPerReplica(spec) > 1 ? gpusPerPod(spec) : spec.gpusPerReplica);
}

/** Pipeline-parallel degree: the GPUs of a replica not used by tensor parallelism are pipeline stages. */
export function pipelineParallel(spec: InferenceServiceSpec): number {
  return Math.max(1, Math.floor(Math.max(1, spec.gpusPerReplica) / tensorParallel(spec)));
}

/** Collects issues; `done` returns the args or every issue at once (nothing half-applied). */
export class ArgsBuilder {
  private readonly out: string[] = [];
  private readonly issues: SpecIssue[] = [];
  push(...xs: string[]): this {
    this.out.push(...xs);
    return this;
  }
  reject(field: string, message: string): this {
    this.issues.push({ field, message });
    return this;
  }
  done(): ArgsResult {
    return this.issues.length > 0 ? { ok: false, issues: this.issues } : { ok: true, args: this.out };
  }
}
