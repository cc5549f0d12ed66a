import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, GPU_RESOURCE } from '../api/wire.ts';
import { choosePod, containerDevices, gpuPod, nextGpus, type GpuPod } from './allocation.ts';

const pod = (name: string, created: string, ann: Record<string, string>, gpus: number[] = [1], phase = 'Pending'): V1Pod => ({
  metadata: { name, namespace: 'ml', uid: `uid-${name}`, creationTimestamp: new Date(created), annotations: ann },
  spec: {
    nodeName: 'n1',
    containers: gpus.map((g, i) => ({ name: `c${i}`, image: 'x', resources: { limits: g === 0 ? {} : { [GPU_RESOURCE]: String(g) } } })),
  },
  status: { phase },
});
const gp = (p: V1Pod): GpuPod => gpuPod(p) as GpuPod;

describe('gpuPod / nextGpus', () => {
  it('reads the recorded indices ascending and the GPU containers in order (containers without GPUs skipped)', () => {
    const p = gp(pod('a', '2026-01-01T00:00:00Z', { [ANNOTATION.gpuIndices]: '5,2,3' }, [2, 0, 1]));
    expect(p).toMatchObject({ key: 'ml/a', indices: [2, 3, 5], allocated: [], containerGpus: [2, 1] });
    expect(nextGpus(p)).toEqual([2, 3]);
    expect(nextGpus({ ...p, allocated: [2, 3] })).toEqual([5]);
    expect(nextGpus({ ...p, allocated: [2, 3, 5] })).toBeUndefined();
    // One GPU handed to a 2-GPU container: not a state this plugin writes, so the pod is not matched.
    expect(nextGpus({ ...p, allocated: [2] })).toBeUndefined();
  });
  it('pods without gpu-indices, finished or being deleted are not candidates', () => {
    expect(gpuPod(pod('a', '2026-01-01T00:00:00Z', {}))).toBeUndefined();
    expect(gpuPod(pod('a', '2026-01-01T00:00:00Z', { [ANNOTATION.gpuIndices]: '1' }, [1], 'Succeeded'))).toBeUndefined();
    expect(
      gpuPod({
        ...pod('a', '2026-01-01T00:00:00Z', { [ANNOTATION.gpuIndices]: '1' }),
        metadata: { ...pod('a', '2026-01-01T00:00:00Z', {}).metadata, annotations: { [ANNOTATION.gpuIndices]: '1' }, deletionTimestamp: new Date() },
      }),
    ).toBeUndefined();
  });
});

describe('choosePod', () => {
  const old = gp(pod('old', '2026-01-01T00:00:00Z', { [ANNOTATION.gpuIndices]: '3' }));
  const young = gp(pod('young', '2026-01-01T00:01:00Z', { [ANNOTATION.gpuIndices]: '0' }));
  const two = gp(pod('two', '2025-12-31T00:00:00Z', { [ANNOTATION.gpuIndices]: '4,6' }, [2]));
  const done = gp(pod('done', '2025-01-01T00:00:00Z', { [ANNOTATION.gpuIndices]: '1', [ANNOTATION.gpuAllocated]: '1' }));
  it('the count must match; the oldest pending pod wins', () => {
    expect(choosePod([young, two, old, done], 1)).toEqual({ pod: old, gpus: [3] });
    expect(choosePod([young, two, old], 2)).toEqual({ pod: two, gpus: [4, 6] });
    expect(choosePod([young, old], 3)).toBeUndefined();
  });
  it('a pod whose GPUs are exactly the kubelet’s choice wins over an older one (the kubelet followed GetPreferredAllocation)', () => {
    expect(choosePod([young, old], 1, [0])).toEqual({ pod: young, gpus: [0] });
    expect(choosePod([young, old], 1, [7])).toEqual({ pod: old, gpus: [3] });
  });
  it('the in-memory record of handed GPUs counts like the annotation (a list that lags behind the patch)', () => {
    const p = pod('x', '2026-01-01T00:00:00Z', { [ANNOTATION.gpuIndices]: '1' });
    expect(choosePod([gpuPod(p, [1]) as GpuPod], 1)).toBeUndefined();
  });
});

describe('containerDevices', () => {
  it('NVIDIA_VISIBLE_DEVICES = the host indices, CUDA_VISIBLE_DEVICES numbers them from 0, device files by minor number', () => {
    const d = containerDevices([3, 1], (i) => (i === 1 ? 0 : 1));
    expect(d.envs).toEqual({ NVIDIA_VISIBLE_DEVICES: '1,3', CUDA_VISIBLE_DEVICES: '0,1', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' });
    expect(d.devices.map((x) => x.host_path)).toEqual(['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools', '/dev/nvidia0', '/dev/nvidia1']);
  });
});
