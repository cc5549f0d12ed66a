/**
 * vLLM's OpenAI-compatible server. Flags: vLLM engine arguments (docs.vllm.ai "Engine Arguments", v0.8.x and
 * later: --model, --served-model-name, --revision, --port, --tensor-parallel-size, --pipeline-parallel-size,
 * --max-model-len, --gpu-memory-utilization, --dtype, --quantization, --enable-lora, --max-loras,
 * --max-lora-rank). Health: GET /health. LoRA: POST /v1/load_lora_adapter {lora_name, lora_path} and
 * /v1/unload_lora_adapter {lora_name}, enabled by VLLM_ALLOW_RUNTIME_LORA_UPDATING=True (vllm PR #6566).
 * A spec that reserves adapter slots (spec.engine.maxLoras) gets --enable-lora and the runtime-updating switch even
 * with no adapter listed, so adapters are added and removed through the API on the same pods (ADR 0136); without
 * it, --max-loras follows the number of adapters and a change of that number rolls the replicas.
 * Multi-node (ADR 0134): a Ray cluster per replica, as vLLM's examples/online_serving/multi-node-serving.sh and the
 * LeaderWorkerSet vLLM example start it — the leader runs `multi-node-serving.sh leader --ray_cluster_size=N`
 * (Ray head, waits for N nodes) and then the API server with --distributed-executor-backend ray; each worker runs
 * `multi-node-serving.sh worker --ray_address=$LWS_LEADER_ADDRESS`.
 */
import type { InferenceServiceSpec } from '../../api/schema/inference-service.ts';
import { ArgsBuilder, huggingFaceId, pipelineParallel, servedModelName, shellWord, tensorParallel, type RuntimeDefinition } from '../runtime.ts';

/** Where the vLLM image keeps the multi-node helper (the path of the LWS vLLM example). */
export const VLLM_MULTI_NODE_SCRIPT = '/vllm-workspace/examples/online_serving/multi-node-serving.sh';

/** LoRA is enabled at launch: adapters listed, or adapter slots or rank asked for. */
const loraOn = (spec: InferenceServiceSpec): boolean =>
  (spec.model.adapters ?? []).length > 0 || spec.engine?.maxLoras !== undefined || spec.engine?.maxLoraRank !== undefined;

/** The spec's quantization in vLLM's --quantization vocabulary (int8/int4 weights load through bitsandbytes). */
const QUANTIZATION: Readonly<Record<string, string>> = { awq: 'awq', gptq: 'gptq', fp8: 'fp8', int8: 'bitsandbytes', int4: 'bitsandbytes' };

export const VLLM: RuntimeDefinition = {
  name: 'vllm',
  displayName: 'vLLM',
  image: 'vllm/vllm-openai:v0.10.2',
  defaultPort: 8000,
  metricsPath: '/metrics',
  extraPorts: {},
  // The image's entrypoint is the OpenAI API server; only arguments are passed.
  command: [],
  args: (ctx) => {
    const { spec } = ctx;
    const b = new ArgsBuilder();
    const format = spec.model.format;
    if (format !== undefined && !['safetensors', 'pytorch', 'gguf'].includes(format)) {
      b.reject('spec.model.format', `vllm loads safetensors, pytorch or gguf weights, not ${format}`);
    }
    const hf = huggingFaceId(spec.model.uri);
    b.push('--model', hf ?? ctx.modelDir, '--served-model-name', servedModelName(spec), '--port', String(ctx.port));
    if (hf !== undefined && spec.model.revision !== undefined) b.push('--revision', spec.model.revision);
    b.push('--tensor-parallel-size', String(tensorParallel(spec)));
    const pp = pipelineParallel(spec);
    if (pp > 1) b.push('--pipeline-parallel-size', String(pp));
    if (spec.model.maxModelLen !== undefined) b.push('--max-model-len', String(spec.model.maxModelLen));
    if (spec.engine?.gpuMemoryUtilization !== undefined) b.push('--gpu-memory-utilization', String(spec.engine.gpuMemoryUtilization));
    if (spec.model.dtype !== 'auto') b.push('--dtype', spec.model.dtype);
    if (spec.model.quantization !== undefined) b.push('--quantization', QUANTIZATION[spec.model.quantization] ?? spec.model.quantization);
    const adapters = spec.model.adapters ?? [];
    if (loraOn(spec)) {
      // Adapters are loaded through the runtime API (ready only once loaded), so the slots must exist from the start.
      b.push('--enable-lora', '--max-loras', String(spec.engine?.maxLoras ?? Math.max(1, adapters.length)));
      if (spec.engine?.maxLoraRank !== undefined) b.push('--max-lora-rank', String(spec.engine.maxLoraRank));
    }
    return b.done();
  },
  // Whenever LoRA is on: a spec that reserved slots keeps the same env when its first adapter comes (no roll).
  env: (ctx) => (loraOn(ctx.spec) ? { VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True' } : {}),
  readiness: { path: '/health', initialDelaySeconds: 0, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 3 },
  liveness: { path: '/health', initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 },
  // Up to 30 minutes to download and load weights before the liveness probe may restart the pod.
  startup: { path: '/health', initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 180 },
  metrics: {
    running: ['vllm:num_requests_running'],
    waiting: ['vllm:num_requests_waiting'],
    kvCacheUsage: ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'],
    kvCacheCapacity: { info: 'vllm:cache_config_info', blocksLabel: 'num_gpu_blocks', blockSizeLabel: 'block_size' },
    generatedTokensTotal: ['vllm:generation_tokens_total'],
    promptTokensTotal: ['vllm:prompt_tokens_total'],
    ttftSeconds: ['vllm:time_to_first_token_seconds'],
    itlSeconds: ['vllm:inter_token_latency_seconds', 'vllm:time_per_output_token_seconds'],
  },
  sharesPrefixKv: true,
  lora: {
    kind: 'runtime',
    load: { method: 'POST', path: '/v1/load_lora_adapter', body: (name, path) => ({ lora_name: name, lora_path: path }) },
    unload: { method: 'POST', path: '/v1/unload_lora_adapter', body: (name) => ({ lora_name: name }) },
    env: { VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True' },
    launchedForAdapters: (spec) => spec.engine?.maxLoras !== undefined,
  },
  // vLLM's CUDA kernels need compute capability 7.0 (Volta) or later.
  gpus: { minComputeCapability: '7.0', boundToBuildGpu: false },
  // vLLM's x86 CPU build (docs.vllm.ai, installation/cpu: the release images on public ECR); the platform is the
  // build's, so no flag selects it. Its KV cache is VLLM_CPU_KVCACHE_SPACE GiB: half the pod's memory, the rest for
  // the weights.
  cpu: {
    image: 'public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.2',
    args: () => [],
    env: (memoryMiB) => ({ VLLM_CPU_KVCACHE_SPACE: String(Math.max(1, Math.floor(memoryMiB / 1024 / 2))) }),
  },
  multiNode: {
    leader: (engineArgs) => ({
      command: ['/bin/sh', '-c'],
      args: [
        `bash ${VLLM_MULTI_NODE_SCRIPT} leader --ray_cluster_size=$LWS_GROUP_SIZE && exec python3 -m vllm.entrypoints.openai.api_server ${engineArgs.map(shellWord).join(' ')}`,
      ],
    }),
    worker: () => ({ command: ['/bin/sh', '-c'], args: [`exec bash ${VLLM_MULTI_NODE_SCRIPT} worker --ray_address=$LWS_LEADER_ADDRESS`] }),
    extraArgs: ['--distributed-executor-backend', 'ray'],
    leaderPorts: { ray: 6379 },
  },
};
