import { describe, expect, it } from 'vitest';
import { INFERENCE_RUNTIMES, RUNTIME_DEFAULT_PORT, type InferenceServiceSpec } from '../api/schema/inference-service.ts';
import { API_GROUP_VERSION } from '../api/wire.ts';
import { validateResource } from '../api/validate.ts';
import { compareComputeCapability, renderReplica } from './pod-template.ts';
import { RUNTIMES, runtimeFor } from './runtimes/index.ts';

/** A spec as the apiserver stores it (defaults applied, CEL rules checked), so the tests render what users send. */
function spec(s: Record<string, unknown>): InferenceServiceSpec {
  const r = validateResource('InferenceService', {
    apiVersion: API_GROUP_VERSION,
    kind: 'InferenceService',
    metadata: { name: 'llm', namespace: 'ml' },
    spec: s,
  });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value.spec;
}
function args(s: Record<string, unknown>): readonly string[] {
  const r = renderReplica(spec(s));
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.template.container.args;
}
function issues(s: Record<string, unknown>): string[] {
  const r = renderReplica(spec(s));
  return r.ok ? [] : r.issues.map((i) => `${i.field}: ${i.message}`);
}

describe('the runtime registry', () => {
  it('has one runtime per name of the CRD, each with the default port the CRD documents', () => {
    expect(Object.keys(RUNTIMES).sort()).toEqual([...INFERENCE_RUNTIMES].sort());
    for (const name of INFERENCE_RUNTIMES) expect(RUNTIMES[name].defaultPort).toBe(RUNTIME_DEFAULT_PORT[name]);
  });
  it('answers undefined for a name it does not know, also for an inherited property', () => {
    expect(runtimeFor('sglang')).toBeUndefined();
    expect(runtimeFor('constructor')).toBeUndefined();
    expect(runtimeFor('vllm')?.displayName).toBe('vLLM');
  });
});

describe('vLLM', () => {
  it('turns every spec field into its engine argument', () => {
    expect(
      args({
        runtime: 'vllm',
        model: {
          uri: 'hf://meta-llama/Llama-3.1-8B-Instruct',
          name: 'llama',
          revision: 'main',
          dtype: 'bfloat16',
          quantization: 'fp8',
          maxModelLen: 8192,
          adapters: [{ name: 'sql', uri: 's3://a/sql' }],
        },
        gpusPerReplica: 4,
        tensorParallelSize: 2,
        engine: { gpuMemoryUtilization: 0.85, maxLoraRank: 64, maxLoras: 4 },
      }),
    ).toEqual([
      '--model',
      'meta-llama/Llama-3.1-8B-Instruct',
      '--served-model-name',
      'llama',
      '--port',
      '8000',
      '--revision',
      'main',
      '--tensor-parallel-size',
      '2',
      '--pipeline-parallel-size',
      '2',
      '--max-model-len',
      '8192',
      '--gpu-memory-utilization',
      '0.85',
      '--dtype',
      'bfloat16',
      '--quantization',
      'fp8',
      '--enable-lora',
      '--max-loras',
      '4',
      '--max-lora-rank',
      '64',
    ]);
  });
  it('launches LoRA-ready when the spec reserves adapter slots, with or without adapters: the same container either way (ADR 0136)', () => {
    const c = (adapters: { name: string; uri: string }[]) => {
      const r = renderReplica(spec({ runtime: 'vllm', model: { uri: 'hf://m/m', adapters }, engine: { maxLoras: 2 } }));
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      return r.template.container;
    };
    expect(c([]).args).toEqual(expect.arrayContaining(['--enable-lora', '--max-loras', '2']));
    expect(c([]).env).toEqual([{ name: 'VLLM_ALLOW_RUNTIME_LORA_UPDATING', value: 'True' }]);
    expect(c([{ name: 'a', uri: 's3://a' }])).toEqual(c([]));
    // Without reserved slots nothing changes: no LoRA, no switch.
    const plain = renderReplica(spec({ runtime: 'vllm', model: { uri: 'hf://m/m' } }));
    expect(plain.ok && plain.template.container.env).toEqual([]);
  });
  it('serves weights from the model directory for a non-Hugging-Face URI and names the model after its last segment', () => {
    expect(args({ runtime: 'vllm', model: { uri: 's3://bucket/models/mistral-7b/' } })).toEqual([
      '--model',
      '/mnt/models',
      '--served-model-name',
      'mistral-7b',
      '--port',
      '8000',
      '--tensor-parallel-size',
      '1',
    ]);
  });
  it('renders the container: image, ports, GPU limits, /health probes, the runtime-LoRA switch, and spec overrides last', () => {
    const r = renderReplica(
      spec({
        runtime: 'vllm',
        model: { uri: 'hf://m/m', adapters: [{ name: 'a', uri: 's3://x' }] },
        gpusPerReplica: 2,
        port: 9000,
        resources: { cpu: '8', memory: '64Gi' },
        container: { args: ['--max-num-seqs', '128'], env: [{ name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } }] },
      }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const c = r.template.container;
    expect(c.image).toBe('vllm/vllm-openai:v0.10.2');
    expect(c.command).toBeUndefined();
    expect(c.args.slice(-2)).toEqual(['--max-num-seqs', '128']);
    expect(c.ports).toEqual([{ name: 'http', containerPort: 9000, protocol: 'TCP' }]);
    expect(c.env).toEqual([
      { name: 'VLLM_ALLOW_RUNTIME_LORA_UPDATING', value: 'True' },
      { name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } },
    ]);
    expect(c.resources.limits).toEqual({ cpu: '8', memory: '64Gi', 'nvidia.com/gpu': '2' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(r.template.metricsPort).toBe(9000);
    expect(r.template.minComputeCapability).toBe('7.0');
  });
  it('rejects weights it cannot load, naming the field', () => {
    expect(issues({ runtime: 'vllm', model: { uri: 's3://m', format: 'tensorrt' } })).toEqual([
      'spec.model.format: vllm loads safetensors, pytorch or gguf weights, not tensorrt',
    ]);
  });
});

describe('TGI', () => {
  it('turns the spec into launcher arguments, adapters at launch', () => {
    expect(
      args({
        runtime: 'tgi',
        model: {
          uri: 'hf://mistralai/Mistral-7B-v0.3',
          dtype: 'float16',
          quantization: 'int4',
          maxModelLen: 4096,
          adapters: [
            { name: 'a', uri: 's3://a' },
            { name: 'b', uri: 's3://b' },
          ],
        },
        gpusPerReplica: 2,
        engine: { gpuMemoryUtilization: 0.9 },
      }),
    ).toEqual([
      '--model-id',
      'mistralai/Mistral-7B-v0.3',
      '--hostname',
      '0.0.0.0',
      '--port',
      '8080',
      '--num-shard',
      '2',
      '--max-total-tokens',
      '4096',
      '--quantize',
      'bitsandbytes-nf4',
      '--dtype',
      'float16',
      '--cuda-memory-fraction',
      '0.9',
      '--lora-adapters',
      'a=/mnt/adapters/a,b=/mnt/adapters/b',
    ]);
    expect(RUNTIMES.tgi.lora.kind).toBe('launch-only');
  });
  it('rejects pipeline parallelism, float32 and LoRA slot settings together', () => {
    expect(issues({ runtime: 'tgi', model: { uri: 'hf://m/m', dtype: 'float32' }, gpusPerReplica: 4, tensorParallelSize: 2, engine: { maxLoras: 2 } })).toEqual(
      [
        'spec.tensorParallelSize: tgi shards a model by tensor parallelism only: set tensorParallelSize to gpusPerReplica',
        'spec.model.dtype: tgi computes in float16 or bfloat16, not float32',
        'spec.engine.maxLoras: tgi has no adapter-slot setting: it loads every adapter of spec.model.adapters at launch',
      ],
    );
  });
});

describe('Triton', () => {
  it('serves the model repository on the three Triton ports with the v2 health endpoints', () => {
    const r = renderReplica(spec({ runtime: 'triton', model: { uri: 'pvc://engines/llama-trtllm', format: 'tensorrt' }, gpusPerReplica: 1 }));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const c = r.template.container;
    expect(c.command).toEqual(['tritonserver']);
    expect(c.args).toEqual(['--model-repository=/mnt/models', '--http-port=8000', '--grpc-port=8001', '--metrics-port=8002']);
    expect(c.ports.map((p) => `${p.name}:${p.containerPort}`)).toEqual(['http:8000', 'grpc:8001', 'metrics:8002']);
    expect(c.readinessProbe.httpGet.path).toBe('/v2/health/ready');
    expect(c.livenessProbe.httpGet.path).toBe('/v2/health/live');
    expect(r.template.metricsPort).toBe(8002);
    expect(r.template.pinGpuModel).toBe(true);
  });
  it('rejects what the built engine fixes, and a serving port that collides with the metrics port', () => {
    expect(issues({ runtime: 'triton', model: { uri: 'pvc://e', dtype: 'float16', maxModelLen: 4096 } })).toEqual([
      'spec.model.dtype: the compute dtype is fixed when the TensorRT-LLM engine is built; triton serves the engine in the model repository as it is',
      'spec.model.maxModelLen: the maximum sequence length is fixed when the TensorRT-LLM engine is built; triton serves the engine in the model repository as it is',
    ]);
    expect(issues({ runtime: 'triton', model: { uri: 'pvc://e' }, port: 8002 })).toEqual([
      'spec.port: port 8002 is the Triton Inference Server metrics port; choose another serving port',
    ]);
  });
  it('is refused LoRA adapters by the CRD itself', () => {
    expect(() => spec({ runtime: 'triton', model: { uri: 'pvc://e', adapters: [{ name: 'a', uri: 's3://a' }] } })).toThrow(/not triton/);
  });
});

describe('llama.cpp', () => {
  it('serves a GGUF with metrics on, every layer on the GPU, adapters loaded at scale 0', () => {
    expect(
      args({
        runtime: 'llamacpp',
        model: { uri: 'pvc://models/qwen.gguf', name: 'qwen', format: 'gguf', maxModelLen: 4096, adapters: [{ name: 'x', uri: 's3://x' }] },
        gpusPerReplica: 2,
        tensorParallelSize: 2,
      }),
    ).toEqual([
      '--model',
      '/mnt/models',
      '--alias',
      'qwen',
      '--host',
      '0.0.0.0',
      '--port',
      '8080',
      '--metrics',
      '--ctx-size',
      '4096',
      '--n-gpu-layers',
      '999',
      '--split-mode',
      'row',
      '--lora',
      '/mnt/adapters/x',
      '--lora-init-without-apply',
    ]);
  });
  it('runs on CPU without GPU flags or limits, and fetches Hugging Face models itself', () => {
    const r = renderReplica(spec({ runtime: 'llamacpp', model: { uri: 'hf://ggml-org/tiny-GGUF' }, gpusPerReplica: 0, minReplicas: 0, replicas: 0 }));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.template.container.args).toEqual(['-hf', 'ggml-org/tiny-GGUF', '--alias', 'tiny-GGUF', '--host', '0.0.0.0', '--port', '8080', '--metrics']);
    expect(r.template.container.resources).toEqual({ limits: {}, requests: {} });
    expect(r.template.container.readinessProbe.httpGet.path).toBe('/health');
  });
  it('rejects a quantization or dtype the GGUF file already fixes', () => {
    expect(issues({ runtime: 'llamacpp', model: { uri: 'pvc://m', quantization: 'int4', dtype: 'bfloat16' } })).toEqual([
      'spec.model.quantization: llama.cpp reads the quantization from the GGUF file; remove it',
      'spec.model.dtype: llama.cpp computes in the types of the GGUF file; leave dtype at auto',
    ]);
  });
  it('switches adapters with POST /lora-adapters [{id, scale}]', () => {
    const lora = RUNTIMES.llamacpp.lora;
    expect(lora.kind).toBe('launch-scale');
    if (lora.kind !== 'launch-scale') return;
    expect(lora.scale.path).toBe('/lora-adapters');
    expect(lora.scale.body([{ id: 0, scale: 1 }])).toEqual([{ id: 0, scale: 1 }]);
  });
});

describe('GPU support', () => {
  it("takes the higher of the spec's and the engine's minimum compute capability", () => {
    const r = renderReplica(spec({ runtime: 'vllm', model: { uri: 'hf://m/m' }, gpu: { minComputeCapability: '9.0' } }));
    expect(r.ok && r.template.minComputeCapability).toBe('9.0');
    const t = renderReplica(spec({ runtime: 'tgi', model: { uri: 'hf://m/m' }, gpu: { minComputeCapability: '7.5' } }));
    expect(t.ok && t.template.minComputeCapability).toBe('8.0');
    expect(compareComputeCapability('10.0', '9.0')).toBeGreaterThan(0);
    expect(compareComputeCapability('8.6', '8.9')).toBeLessThan(0);
  });
  it('names the LoRA API of vLLM with the request bodies it takes', () => {
    const lora = RUNTIMES.vllm.lora;
    if (lora.kind !== 'runtime') throw new Error('vllm loads adapters at runtime');
    expect(lora.load.path).toBe('/v1/load_lora_adapter');
    expect(lora.load.body('sql', '/mnt/adapters/sql')).toEqual({ lora_name: 'sql', lora_path: '/mnt/adapters/sql' });
    expect(lora.unload.body('sql')).toEqual({ lora_name: 'sql' });
    expect(RUNTIMES.triton.lora.kind).toBe('none');
  });
});
