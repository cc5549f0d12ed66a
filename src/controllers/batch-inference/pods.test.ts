import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../api/validate.ts';
import { ANNOTATION, LABEL } from '../../api/wire.ts';
import type { ContainerObject, PodObject } from '../kube-objects.ts';
import { cpuWorkerPodName, renderWorkers, type BatchJobObject } from './pods.ts';

const jobOf = (extra: Record<string, unknown> = {}): BatchJobObject =>
  withDefaults('BatchInferenceJob', {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'BatchInferenceJob',
    metadata: { name: 'j', namespace: 'ns', uid: 'uid-1' },
    spec: {
      runtime: 'llamacpp',
      model: { uri: 'pvc://models/tiny.gguf' },
      input: { uri: 'pvc://data/in.jsonl' },
      output: { uri: 'pvc://data/out/j' },
      workers: 2,
      gpusPerWorker: 1,
      gpu: { allowedModels: ['H100'] },
      faultRecovery: { cpuFallback: true },
      ...extra,
    },
  }) as BatchJobObject;

const render = (j: BatchJobObject): { gpu: PodObject; cpu: PodObject } => {
  const r = renderWorkers(j);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  if (r.value.cpuPod === undefined) throw new Error('no CPU pod');
  return { gpu: r.value.pod(0), cpu: r.value.cpuPod() };
};
const server = (p: PodObject): ContainerObject => (p.spec?.containers ?? [])[0] as ContainerObject;

describe('the CPU fallback worker pod', () => {
  it("is the GPU worker's engine and batch worker with no GPU: the CPU image, no offload, threads = its CPU request", () => {
    const { gpu, cpu } = render(jobOf({ container: { args: ['--parallel', '2', '--n-gpu-layers', '99'] } }));
    expect(cpu.metadata.name).toBe('j-cpu');
    expect(cpuWorkerPodName('j')).toBe('j-cpu');
    expect(cpu.metadata.labels).toMatchObject({ [LABEL.batchInferenceJob]: 'j', [LABEL.batchCpuFallback]: 'true' });
    expect(gpu.metadata.labels?.[LABEL.batchCpuFallback]).toBeUndefined();
    const s = server(cpu);
    expect(server(gpu).image).toBe('ghcr.io/ggml-org/llama.cpp:server-cuda');
    expect(s.image).toBe('ghcr.io/ggml-org/llama.cpp:server');
    expect(s.resources).toEqual({ requests: { cpu: '4', memory: '16Gi' }, limits: { cpu: '4', memory: '16Gi' } });
    // The spec's own flags stay; the CPU flags come last, so the spec's GPU offload cannot win.
    expect(s.args?.slice(-6)).toEqual(['--n-gpu-layers', '99', '--n-gpu-layers', '0', '--threads', '4']);
    expect(s.args).toContain('--parallel');
    // No GPU scheduling: no model, compute-capability or gang annotations (the GPU worker has them).
    expect(gpu.metadata.annotations?.[ANNOTATION.gpuModels]).toBeDefined();
    for (const k of [ANNOTATION.gpuModels, ANNOTATION.minComputeCapability, ANNOTATION.gpuMemory, ANNOTATION.minMember])
      expect(cpu.metadata.annotations?.[k]).toBeUndefined();
    expect(JSON.stringify(cpu)).not.toContain('nvidia.com/gpu');
    // The same sits batch-worker beside it, on the same volumes.
    expect((cpu.spec?.containers ?? [])[1]).toEqual((gpu.spec?.containers ?? [])[1]);
    expect(cpu.spec?.volumes).toEqual(gpu.spec?.volumes);
    expect(cpu.spec?.schedulerName).toBe(gpu.spec?.schedulerName);
  });

  it("requests spec.resources' cpu and memory, drops only the GPU, and sizes vLLM's CPU KV cache to half the memory", () => {
    const { cpu } = render(
      jobOf({ runtime: 'vllm', model: { uri: 'pvc://models/m' }, resources: { cpu: '7500m', memory: '32Gi', 'example.com/fast-disk': 1 } }),
    );
    const s = server(cpu);
    expect(s.image).toBe('public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.2');
    expect(s.resources?.requests).toEqual({ cpu: '7500m', memory: '32Gi', 'example.com/fast-disk': '1' });
    expect(s.env).toContainEqual({ name: 'VLLM_CPU_KVCACHE_SPACE', value: '16' });
    expect(s.args).toContain('--tensor-parallel-size');
    expect(s.args?.[(s.args?.indexOf('--tensor-parallel-size') ?? 0) + 1]).toBe('1');
  });

  it("keeps spec.container.image and spec.container.env over the CPU build's", () => {
    const { cpu } = render(
      jobOf({
        runtime: 'vllm',
        model: { uri: 'pvc://models/m' },
        container: { image: 'my/vllm-any:1', env: [{ name: 'VLLM_CPU_KVCACHE_SPACE', value: '3' }] },
      }),
    );
    expect(server(cpu).image).toBe('my/vllm-any:1');
    expect(server(cpu).env?.filter((e) => e.name === 'VLLM_CPU_KVCACHE_SPACE')).toEqual([{ name: 'VLLM_CPU_KVCACHE_SPACE', value: '3' }]);
  });

  it('is not rendered when cpuFallback is off', () => {
    const r = renderWorkers(jobOf({ faultRecovery: { cpuFallback: false } }));
    expect(r.ok && r.value.cpuPod).toBe(undefined);
  });

  it('refuses cpuFallback for a runtime with no CPU build, naming the field', () => {
    const r = renderWorkers(jobOf({ runtime: 'triton', model: { uri: 'pvc://models/m' }, gpu: { allowedModels: ['H100'] } }));
    expect(r.ok).toBe(false);
    expect(r.ok ? [] : r.issues).toContainEqual({
      field: 'spec.faultRecovery.cpuFallback',
      message: expect.stringMatching(/Triton.* has no CPU build to fall back to/),
    });
  });
});
