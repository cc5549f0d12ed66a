/**
 * NVIDIA Triton Inference Server with the TensorRT-LLM backend. Flags: tritonserver --model-repository,
 * --http-port, --grpc-port, --metrics-port (defaults 8000/8001/8002). Health: GET /v2/health/ready and
 * /v2/health/live (KServe v2 protocol). Metrics on the metrics port: nv_inference_pending_request_count etc.
 * The model repository holds an engine built for one GPU model (001 §2.4): dtype, quantization and context
 * length were fixed when the engine was built, so the spec may not ask for them here. No LoRA API.
 */
import { ArgsBuilder, type RuntimeDefinition } from '../runtime.ts';

const BUILT_IN = 'is fixed when the TensorRT-LLM engine is built; triton serves the engine in the model repository as it is';

export const TRITON: RuntimeDefinition = {
  name: 'triton',
  displayName: 'Triton Inference Server',
  image: 'nvcr.io/nvidia/tritonserver:24.08-trtllm-python-py3',
  defaultPort: 8000,
  metricsPort: 8002,
  metricsPath: '/metrics',
  extraPorts: { grpc: 8001, metrics: 8002 },
  command: ['tritonserver'],
  args: (ctx) => {
    const { spec } = ctx;
    const b = new ArgsBuilder();
    if (spec.model.dtype !== 'auto') b.reject('spec.model.dtype', `the compute dtype ${BUILT_IN}`);
    if (spec.model.quantization !== undefined) b.reject('spec.model.quantization', `quantization ${BUILT_IN}`);
    if (spec.model.maxModelLen !== undefined) b.reject('spec.model.maxModelLen', `the maximum sequence length ${BUILT_IN}`);
    if ((spec.model.adapters ?? []).length > 0) b.reject('spec.model.adapters', 'triton has no LoRA adapter API');
    for (const k of ['gpuMemoryUtilization', 'maxLoras', 'maxLoraRank'] as const) {
      if (spec.engine?.[k] !== undefined) b.reject(`spec.engine.${k}`, 'triton takes no engine setting from the spec');
    }
    const format = spec.model.format;
    if (format !== undefined && !['tensorrt', 'onnx', 'pytorch', 'torchscript'].includes(format))
      b.reject('spec.model.format', `triton serves tensorrt, onnx, pytorch or torchscript models, not ${format}`);
    b.push(`--model-repository=${ctx.modelDir}`, `--http-port=${ctx.port}`, '--grpc-port=8001', '--metrics-port=8002');
    return b.done();
  },
  env: () => ({}),
  readiness: { path: '/v2/health/ready', initialDelaySeconds: 0, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 3 },
  liveness: { path: '/v2/health/live', initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 },
  startup: { path: '/v2/health/live', initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 180 },
  metrics: {
    running: [],
    waiting: ['nv_inference_pending_request_count'],
    kvCacheUsage: [],
    generatedTokensTotal: [],
    promptTokensTotal: [],
    ttftSeconds: [],
    itlSeconds: [],
  },
  lora: { kind: 'none' },
  // TensorRT-LLM runs on Ampere (8.0) and later, and an engine only on the GPU model it was built for.
  gpus: { minComputeCapability: '8.0', boundToBuildGpu: true },
};
