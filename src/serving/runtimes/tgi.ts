/**
 * Hugging Face Text Generation Inference (text-generation-launcher; huggingface.co/docs/text-generation-inference
 * "Text-generation-launcher arguments": --model-id, --revision, --num-shard, --port, --hostname,
 * --max-total-tokens, --quantize, --dtype, --cuda-memory-fraction, --lora-adapters). Health: GET /health.
 * Adapters only at launch (tgi #2860 open): a change of spec.model.adapters needs a rolling restart.
 */
import { ArgsBuilder, huggingFaceId, pipelineParallel, tensorParallel, type RuntimeDefinition } from '../runtime.ts';

/** The spec's quantization in TGI's --quantize vocabulary. */
const QUANTIZE: Readonly<Record<string, string>> = { awq: 'awq', gptq: 'gptq', fp8: 'fp8', int8: 'bitsandbytes', int4: 'bitsandbytes-nf4' };

export const TGI: RuntimeDefinition = {
  name: 'tgi',
  displayName: 'Text Generation Inference',
  image: 'ghcr.io/huggingface/text-generation-inference:3.0.1',
  defaultPort: 8080,
  metricsPath: '/metrics',
  extraPorts: {},
  // The image's entrypoint is text-generation-launcher.
  command: [],
  args: (ctx) => {
    const { spec } = ctx;
    const b = new ArgsBuilder();
    const format = spec.model.format;
    if (format !== undefined && !['safetensors', 'pytorch'].includes(format))
      b.reject('spec.model.format', `tgi loads safetensors or pytorch weights, not ${format}`);
    if (pipelineParallel(spec) > 1)
      b.reject('spec.tensorParallelSize', 'tgi shards a model by tensor parallelism only: set tensorParallelSize to gpusPerReplica');
    const hf = huggingFaceId(spec.model.uri);
    b.push('--model-id', hf ?? ctx.modelDir, '--hostname', '0.0.0.0', '--port', String(ctx.port));
    if (hf !== undefined && spec.model.revision !== undefined) b.push('--revision', spec.model.revision);
    b.push('--num-shard', String(tensorParallel(spec)));
    if (spec.model.maxModelLen !== undefined) b.push('--max-total-tokens', String(spec.model.maxModelLen));
    if (spec.model.quantization !== undefined) b.push('--quantize', QUANTIZE[spec.model.quantization] ?? spec.model.quantization);
    if (spec.model.dtype === 'float32') b.reject('spec.model.dtype', 'tgi computes in float16 or bfloat16, not float32');
    else if (spec.model.dtype !== 'auto') b.push('--dtype', spec.model.dtype);
    if (spec.engine?.gpuMemoryUtilization !== undefined) b.push('--cuda-memory-fraction', String(spec.engine.gpuMemoryUtilization));
    if (spec.engine?.maxLoras !== undefined)
      b.reject('spec.engine.maxLoras', 'tgi has no adapter-slot setting: it loads every adapter of spec.model.adapters at launch');
    if (spec.engine?.maxLoraRank !== undefined) b.reject('spec.engine.maxLoraRank', 'tgi has no max LoRA rank setting');
    const adapters = spec.model.adapters ?? [];
    if (adapters.length > 0) b.push('--lora-adapters', adapters.map((a) => `${a.name}=${ctx.adapterDir(a.name)}`).join(','));
    return b.done();
  },
  env: () => ({}),
  readiness: { path: '/health', initialDelaySeconds: 0, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 3 },
  liveness: { path: '/health', initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 },
  startup: { path: '/health', initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 180 },
  metrics: {
    running: ['tgi_batch_current_size'],
    waiting: ['tgi_queue_size'],
    kvCacheUsage: [],
    // TGI exports no token counters; the per-request histograms' sums only grow, so they act as counters.
    generatedTokensTotal: ['tgi_request_generated_tokens_sum'],
    promptTokensTotal: ['tgi_request_input_length_sum'],
    ttftSeconds: [],
    itlSeconds: ['tgi_request_mean_time_per_token_duration'],
  },
  lora: { kind: 'launch-only' },
  // Flash-attention kernels: Ampere (8.0) or later.
  gpus: { minComputeCapability: '8.0', boundToBuildGpu: false },
};
