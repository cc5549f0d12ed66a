/**
 * Which pod a kubelet Allocate call is for (pure). The kubelet sends device IDs only, never the pod, so the
 * plugin looks at the pods bound to its node that carry SITS's `gpu-indices` and still have GPUs to hand
 * out (docs/adr/0047-device-plugin-finds-the-pod.md):
 *
 * - a pod's GPU containers are allocated in spec order; the next one asks for a count, and its GPUs are the
 *   next ones of the pod's recorded indices (ascending) not yet handed out (`gpu-allocated`);
 * - a candidate asks for exactly the requested count;
 * - among candidates, the oldest whose next GPUs are exactly the devices the kubelet chose wins (it followed
 *   GetPreferredAllocation), else the oldest (the kubelet admits pods oldest first); ties by namespace/name.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, GPU_RESOURCE } from '../api/wire.ts';
import { parseGpuIndices } from '../kube/cache/labels.ts';

export interface GpuPod {
  readonly key: string;
  readonly uid: string;
  readonly createdMs: number;
  /** SITS's recorded indices, ascending. */
  readonly indices: readonly number[];
  /** Indices already handed to earlier containers. */
  readonly allocated: readonly number[];
  /** `nvidia.com/gpu` of each container that asks for GPUs, in spec order. */
  readonly containerGpus: readonly number[];
}

/** The pod as the allocator sees it, or undefined when it is not waiting for SITS-chosen GPUs on this node. */
export function gpuPod(p: V1Pod, extraAllocated: readonly number[] = []): GpuPod | undefined {
  const ann = p.metadata?.annotations ?? {};
  const indices = parseGpuIndices(ann[ANNOTATION.gpuIndices]);
  if (indices === undefined || p.metadata?.deletionTimestamp !== undefined) return undefined;
  const phase = p.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return undefined;
  const allocated = [...new Set([...(parseGpuIndices(ann[ANNOTATION.gpuAllocated]) ?? []), ...extraAllocated])];
  const containerGpus = (p.spec?.containers ?? [])
    .map((c) => Number(c.resources?.limits?.[GPU_RESOURCE] ?? c.resources?.requests?.[GPU_RESOURCE] ?? 0))
    .filter((n) => Number.isInteger(n) && n > 0);
  const created = Date.parse(String(p.metadata?.creationTimestamp ?? ''));
  return {
    key: `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`,
    uid: p.metadata?.uid ?? '',
    createdMs: Number.isFinite(created) ? created : 0,
    indices: [...indices].sort((a, b) => a - b),
    allocated,
    containerGpus,
  };
}

/** The GPUs the pod's next GPU container gets, or undefined when every container has its GPUs (or the record is inconsistent). */
export function nextGpus(p: GpuPod): number[] | undefined {
  const left = p.indices.filter((i) => !p.allocated.includes(i));
  let handed = p.allocated.length;
  for (const n of p.containerGpus) {
    if (handed === 0) return left.length >= n ? left.slice(0, n) : undefined;
    if (handed < n) return undefined;
    handed -= n;
  }
  return undefined;
}

const byAge = (a: GpuPod, b: GpuPod): number => a.createdMs - b.createdMs || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** The pod a request for `count` GPUs (the kubelet chose `chosen`, when known) is for, with the GPUs it gets. */
export function choosePod(pods: readonly GpuPod[], count: number, chosen?: readonly number[]): { pod: GpuPod; gpus: number[] } | undefined {
  const fits = pods
    .map((pod) => ({ pod, gpus: nextGpus(pod) }))
    .filter((c): c is { pod: GpuPod; gpus: number[] } => c.gpus !== undefined && c.gpus.length === count)
    .sort((a, b) => byAge(a.pod, b.pod));
  if (chosen !== undefined) {
    const want = [...chosen].sort((a, b) => a - b).join(',');
    const exact = fits.find((c) => c.gpus.join(',') === want);
    if (exact !== undefined) return exact;
  }
  return fits[0];
}

/** What the container gets for these host GPU indices: visible devices and the device files. */
export function containerDevices(
  gpus: readonly number[],
  minorOf: (index: number) => number,
  devRoot = '/dev',
): { envs: Record<string, string>; devices: { container_path: string; host_path: string; permissions: string }[] } {
  const sorted = [...gpus].sort((a, b) => a - b);
  const dev = (name: string): { container_path: string; host_path: string; permissions: string } => ({
    container_path: `/dev/${name}`,
    host_path: `${devRoot}/${name}`,
    permissions: 'rw',
  });
  return {
    envs: {
      // The host indices SITS recorded: the NVIDIA container runtime exposes exactly these.
      NVIDIA_VISIBLE_DEVICES: sorted.join(','),
      // Inside the container the visible GPUs are numbered from 0 in PCI bus order, the order of the host indices.
      CUDA_VISIBLE_DEVICES: sorted.map((_, i) => i).join(','),
      CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
    },
    devices: [dev('nvidiactl'), dev('nvidia-uvm'), dev('nvidia-uvm-tools'), ...sorted.map((i) => dev(`nvidia${minorOf(i)}`))],
  };
}
