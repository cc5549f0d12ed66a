// What each route does to the workers (ADR 0161): the share size, who cannot be moved and why, the names.
import { describe, expect, it } from 'vitest';
import { ANNOTATION, LABEL } from '../../api/wire.ts';
import type { PodObject } from '../kube-objects.ts';
import {
  elasticWorkerPodName,
  elasticWorkers,
  fractionFor,
  fractionalServer,
  LARGEST_DEVICE_GIB,
  misplaced,
  placementFor,
  shapeOf,
  workersLine,
} from './route-placement.ts';

const profile = (peakKvFraction?: number) => ({
  shards: 3,
  promptTokensPerRecord: 10,
  outputTokensPerRecord: 2,
  msPerRecord: 50,
  ...(peakKvFraction === undefined ? {} : { peakKvFraction }),
});
const job = (gpusPerWorker = 1, extra: { runtime?: string; minMemoryGiB?: number } = {}) => ({
  spec: { runtime: extra.runtime ?? 'llamacpp', gpusPerWorker, ...(extra.minMemoryGiB === undefined ? {} : { gpu: { minMemoryGiB: extra.minMemoryGiB } }) },
});
const caps = { gang: false, cpuBuild: true as const };

describe('the share of one device for gpu-fragments', () => {
  it('is the peak KV use with headroom, rounded up to a quarter, at least a quarter; half a device when unmeasured', () => {
    expect(fractionFor(0.05, undefined).fraction).toBe(0.25);
    expect(fractionFor(0.2, undefined).fraction).toBe(0.25);
    expect(fractionFor(0.3, undefined).fraction).toBe(0.5);
    expect(fractionFor(0.5, undefined)).toEqual({ fraction: 0.75, why: 'peak KV use 0.500 × 1.25 headroom, rounded up to 0.25' });
    expect(fractionFor(0.85, undefined).fraction).toBe(1);
    expect(fractionFor(undefined, undefined)).toEqual({ fraction: 0.5, why: 'no KV use measured: 0.5 of a device' });
  });

  it('never leaves the model less than spec.gpu.minMemoryGiB: the device must hold it in the share, raised when no GPU is that big', () => {
    expect(LARGEST_DEVICE_GIB).toBe(140);
    // 0.25 of a device of ≥ 80 GiB holds 20 GiB.
    expect(fractionFor(0.1, 20)).toMatchObject({ fraction: 0.25, deviceMemoryGiB: 80 });
    // 40 GiB in a quarter would need a 160 GiB device: raised to a half of an 80 GiB one.
    const f = fractionFor(0.1, 40);
    expect(f).toMatchObject({ fraction: 0.5, deviceMemoryGiB: 80 });
    expect(f.why).toMatch(/spec\.gpu\.minMemoryGiB 40: on a device of at least 80 GiB \(raised from 0\.25: no GPU has 160 GiB\)/);
    expect(fractionFor(0.1, 130).fraction).toBe(1);
  });
});

describe('placement by route', () => {
  it('gpu-fragments: a share when the job allows it, whole GPUs with the reason when not', () => {
    const p = placementFor(job(), { route: 'gpu-fragments', profile: profile(0.3) }, caps);
    expect(p).toMatchObject({ shape: 'fraction', fraction: 0.5 });
    expect(p.reason).toBe(
      `route gpu-fragments: new workers take 0.5 of one GPU (${ANNOTATION.gpuFraction}, no whole-GPU request; peak KV use 0.300 × 1.25 headroom, rounded up to 0.25); whole-GPU workers drained at shard boundaries`,
    );
    expect(placementFor(job(2), { route: 'gpu-fragments', profile: profile(0.3) }, { ...caps, gang: true })).toEqual({
      shape: 'whole',
      reason: 'route gpu-fragments not acted on: a worker needs 2 whole GPUs as a gang (gpusPerWorker 2); a share is one device',
    });
    expect(placementFor(job(4), { route: 'gpu-fragments', profile: profile(0.3) }, caps).reason).toMatch(/needs 4 whole GPUs \(gpusPerWorker 4\)/);
    expect(placementFor(job(), { route: 'gpu-fragments', profile: profile(0.9) }, caps)).toMatchObject({
      shape: 'whole',
      reason: expect.stringMatching(/the share would be a whole device/) as unknown,
    });
    expect(placementFor(job(1, { minMemoryGiB: 20 }), { route: 'gpu-fragments', profile: profile(0.1) }, caps)).toMatchObject({
      shape: 'fraction',
      fraction: 0.25,
      deviceMemoryGiB: 80,
    });
  });

  it('cpu-elastic: CPU workers when the runtime has a CPU build, GPUs with the reason when not', () => {
    expect(placementFor(job(), { route: 'cpu-elastic', profile: profile(0.3) }, caps)).toMatchObject({
      shape: 'cpu',
      reason: expect.stringMatching(
        /^route cpu-elastic: GPU workers drained at shard boundaries and replaced by CPU workers \(the llamacpp CPU build, no GPU\)/,
      ) as unknown,
    });
    expect(
      placementFor(
        job(1, { runtime: 'triton' }),
        { route: 'cpu-elastic', profile: profile() },
        { gang: false, cpuBuild: 'Triton Inference Server has no CPU build' },
      ),
    ).toEqual({ shape: 'whole', reason: 'route cpu-elastic not acted on: Triton Inference Server has no CPU build; the workers stay on GPUs' });
    expect(placementFor(job(0), { route: 'cpu-elastic', profile: profile() }, caps)).toMatchObject({
      shape: 'whole',
      reason: expect.stringMatching(/already hold no GPU/) as unknown,
    });
  });

  it('gpu-exclusive and gpu-shared keep whole GPUs', () => {
    for (const route of ['gpu-exclusive', 'gpu-shared'] as const)
      expect(placementFor(job(), { route, profile: profile(0.1) }, caps)).toEqual({
        shape: 'whole',
        reason: `route ${route}: whole GPUs, as the spec makes the workers`,
      });
  });
});

const pod = (name: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): PodObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels, annotations },
  status: { phase: 'Running' },
});

describe('worker shapes and names', () => {
  it("reads a pod's shape and finds the ones to drain", () => {
    const whole = pod('j-0');
    const half = pod('j-1', { [LABEL.batchRoute]: 'gpu-fragments' }, { [ANNOTATION.gpuFraction]: '0.5' });
    const cpu = pod('j-cpu0', { [LABEL.batchRoute]: 'cpu-elastic' });
    expect([whole, half, cpu].map(shapeOf)).toEqual(['whole', 'fraction', 'cpu']);
    const frac = { shape: 'fraction' as const, fraction: 0.5, reason: '' };
    expect(misplaced(whole, frac)).toBe(true);
    expect(misplaced(half, frac)).toBe(false);
    expect(misplaced(half, { ...frac, fraction: 0.25 })).toBe(true);
    expect(misplaced(whole, undefined)).toBe(false);
    expect(workersLine([whole, half, cpu, pod('j-cpu', { [LABEL.batchCpuFallback]: 'true' }), { ...pod('j-2'), status: { phase: 'Failed' } }], frac)).toBe(
      'workers now: 1 on a whole GPU (draining), 1 on 0.5 of a GPU, 1 CPU-elastic, 1 CPU fallback',
    );
    expect(workersLine([], undefined)).toBe('workers now: none');
  });

  it('names CPU-elastic workers <job>-cpu<n>: never a GPU worker (<job>-<n>) nor the fallback (<job>-cpu) of any job', () => {
    expect(elasticWorkerPodName('j', 0)).toBe('j-cpu0');
    // The fallback of j is j-cpu; worker 0 of a job named j-cpu is j-cpu-0; neither is j-cpu0.
    expect(elasticWorkerPodName('j', 0)).not.toMatch(/-\d+$|-cpu$/);
  });

  it('wants spec.workers CPU workers, fewer as the shards run out', () => {
    expect(elasticWorkers(4, 10, 0)).toBe(4);
    expect(elasticWorkers(4, 1, 2)).toBe(3);
    expect(elasticWorkers(4, 0, 0)).toBe(0);
  });

  it('drops the whole-GPU request from a fractional engine and tells vLLM its share of the memory', () => {
    const c = { name: 'server', args: ['--model', 'm'], resources: { requests: { cpu: '2', 'nvidia.com/gpu': '1' }, limits: { 'nvidia.com/gpu': '1' } } };
    expect(fractionalServer(c, 'vllm', 0.5, 'nvidia.com/gpu')).toEqual({
      name: 'server',
      args: ['--model', 'm', '--gpu-memory-utilization', '0.45'],
      resources: { requests: { cpu: '2' }, limits: {} },
    });
    expect(fractionalServer(c, 'llamacpp', 0.5, 'nvidia.com/gpu').args).toEqual(['--model', 'm']);
  });
});
