/**
 * llama.cpp's llama-server (tools/server/README.md): -m/--model (or -hf <repo>), --host, --port, -c/--ctx-size,
 * -ngl/--n-gpu-layers, -sm/--split-mode, -a/--alias, --metrics (the /metrics endpoint is off without it),
 * --lora FNAME with --lora-init-without-apply. Health: GET /health (503 while loading, 200 when ready).
 * Adapters are loaded at launch and switched by POST /lora-adapters [{id, scale}]: a new adapter needs a restart.
 * POST (and a request's `lora` field) sets every adapter's scale, ids not named to 0 (server parse_lora_request), so
 * the body carries the whole vector; GET /lora-adapters lists [{id, path, scale}]. /metrics names checked against
 * llama-server's handle_metrics (docs/adr/0087): no histograms, hence no TTFT/ITL signal.
 * GGUF weights carry their own quantization, so the spec may not ask for one.
 */
import { ArgsBuilder, huggingFaceId, servedModelName, tensorParallel, type RuntimeDefinition } from '../runtime.ts';

export const LLAMACPP: RuntimeDefinition = {
  name: 'llamacpp',
  displayName: 'llama.cpp server',
  image: 'ghcr.io/ggml-org/llama.cpp:server-cuda',
  defaultPort: 8080,
  metricsPath: '/metrics',
  extraPorts: {},
  // The image's entrypoint is llama-server.
  command: [],
  args: (ctx) => {
    const { spec } = ctx;
    const b = new ArgsBuilder();
    if (spec.model.format !== undefined && spec.model.format !== 'gguf')
      b.reject('spec.model.format', `llama.cpp loads gguf weights, not ${spec.model.format}`);
    if (spec.model.quantization !== undefined) b.reject('spec.model.quantization', 'llama.cpp reads the quantization from the GGUF file; remove it');
    if (spec.model.dtype !== 'auto') b.reject('spec.model.dtype', 'llama.cpp computes in the types of the GGUF file; leave dtype at auto');
    for (const k of ['gpuMemoryUtilization', 'maxLoras', 'maxLoraRank'] as const) {
      if (spec.engine?.[k] !== undefined) b.reject(`spec.engine.${k}`, 'llama.cpp has no such setting');
    }
    const hf = huggingFaceId(spec.model.uri);
    if (hf !== undefined) b.push('-hf', hf);
    else b.push('--model', ctx.modelDir);
    b.push('--alias', servedModelName(spec), '--host', '0.0.0.0', '--port', String(ctx.port), '--metrics');
    if (spec.model.maxModelLen !== undefined) b.push('--ctx-size', String(spec.model.maxModelLen));
    if (spec.gpusPerReplica > 0) {
      // Every layer on the GPUs; several GPUs split each tensor by rows when asked for tensor parallelism.
      b.push('--n-gpu-layers', '999');
      if (spec.gpusPerReplica > 1) b.push('--split-mode', tensorParallel(spec) > 1 ? 'row' : 'layer');
    }
    const adapters = spec.model.adapters ?? [];
    for (const a of adapters) b.push('--lora', ctx.adapterDir(a.name));
    // Loaded but at scale 0 until the controller switches them on, so every replica starts the same.
    if (adapters.length > 0) b.push('--lora-init-without-apply');
    return b.done();
  },
  env: () => ({}),
  readiness: { path: '/health', initialDelaySeconds: 0, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 3 },
  liveness: { path: '/health', initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 },
  startup: { path: '/health', initialDelaySeconds: 5, periodSeconds: 5, timeoutSeconds: 5, failureThreshold: 360 },
  metrics: {
    running: ['llamacpp:requests_processing'],
    waiting: ['llamacpp:requests_deferred'],
    // Removed from llama.cpp's /metrics in 2025 (llama.cpp PR #13660); older servers still export it.
    kvCacheUsage: ['llamacpp:kv_cache_usage_ratio'],
    kvCacheCapacity: { tokensInUse: 'llamacpp:kv_cache_tokens' },
    generatedTokensTotal: ['llamacpp:tokens_predicted_total'],
    promptTokensTotal: ['llamacpp:prompt_tokens_total'],
    ttftSeconds: [],
    itlSeconds: [],
  },
  lora: { kind: 'launch-scale', scale: { method: 'POST', path: '/lora-adapters', body: (scales) => scales.map((s) => ({ id: s.id, scale: s.scale })) } },
  // ggml's CUDA backend builds for Maxwell (5.0) and later; it also runs on CPU (gpusPerReplica 0).
  gpus: { minComputeCapability: '5.0', boundToBuildGpu: false },
  // The CPU image (`:server`, no CUDA). No layer offloaded; llama.cpp sizes its thread pool by the host's cores, not
  // the container's CPU limit, so the threads follow the pod's CPU request.
  cpu: { image: 'ghcr.io/ggml-org/llama.cpp:server', args: (cpus) => ['--n-gpu-layers', '0', '--threads', String(cpus)], env: () => ({}) },
};
