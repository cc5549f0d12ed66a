import { ANNOTATION } from '../../api/wire.ts';
import { WORKLOAD_KINDS, containerGpus, envOf, field, kindOf, list, podSites, type ContainerSite } from '../pod-specs.ts';
import type { KubeObject } from '../rule.ts';
import type { Rule, RuleHit } from '../rule.ts';

/** Node agents (device plugin, DCGM exporter, topology agent) run as DaemonSets and see every GPU of their node on purpose. */
const isNodeAgent = (o: KubeObject): boolean =>
  kindOf(o) === 'DaemonSet' || list(field(o.metadata, 'ownerReferences')).some((r) => field(r, 'kind') === 'DaemonSet');

/** Values that hide GPUs rather than pick them: a sidecar of a GPU pod may set them on purpose. */
const HIDING: Readonly<Record<string, readonly string[]>> = {
  CUDA_VISIBLE_DEVICES: ['', '-1', 'none'],
  NVIDIA_VISIBLE_DEVICES: ['', 'void', 'none'],
  NVIDIA_MEMORY_LIMIT: [],
};

const FIX: Readonly<Record<string, string>> = {
  CUDA_VISIBLE_DEVICES:
    'remove it: the device plugin exposes exactly the GPUs allocated to the container (SITS records them in annotation ai.sits2026.dev/gpu-indices), numbered from 0 inside the container; request nvidia.com/gpu: N instead',
  NVIDIA_VISIBLE_DEVICES:
    'remove it: it bypasses the device plugin, so the container sees GPUs the scheduler gave to other pods; request nvidia.com/gpu: N (a share: annotation ai.sits2026.dev/gpu-fraction)',
  NVIDIA_MEMORY_LIMIT: `remove it: it limits nothing under cgroups v2 (seed 001 §2.2 measured 1.82 GiB used against a 1 GiB limit); ask for GPU memory with annotation ${ANNOTATION.gpuMemory}, a share with ${ANNOTATION.gpuFraction}, or a MIG profile`,
};

/**
 * Whether a literal CUDA_VISIBLE_DEVICES reaches outside the container's allocation: device UUIDs or MIG ids name
 * physical devices; an index at or above the number of GPUs the container was given names a device it does not
 * have (or, without a GPU request, one of the node's that the runtime may expose). Picking some of 0..n-1 stays
 * inside the allocation and is left alone.
 */
function cudaOutsideAllocation(c: ContainerSite, value: string): boolean {
  const ids = value
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  const n = containerGpus(c);
  return ids.some((id) => !/^\d+$/.test(id) || Number(id) >= n);
}

export const handSetVisibleDevices: Rule = {
  id: 'hand-set-visible-devices',
  severity: 'error',
  seed: '001 §2.2, 000 §2.3',
  title: 'Hand-set CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES / NVIDIA_MEMORY_LIMIT that bypass the GPU allocation',
  rationale:
    'The device plugin decides which GPUs a container gets and sets the visible devices itself; CUDA numbers them from 0 inside the container ' +
    '(seed 000 §2.3: the device ids must agree with what kubelet allocated). A literal `NVIDIA_VISIBLE_DEVICES` hands the container GPUs the ' +
    "scheduler gave to someone else, a literal `CUDA_VISIBLE_DEVICES` with device UUIDs or an index at or above the container's GPU count " +
    'picks devices outside the allocation (choosing some of `0..n-1` stays inside it and is not flagged), and ' +
    '`NVIDIA_MEMORY_LIMIT` enforces nothing under cgroups v2 (seed 001 §2.2: two containers "limited" to 1 GiB used 1.82 and 1.67 GiB). ' +
    'Values that only hide GPUs (`""`, `void`, `none`, `-1`), `valueFrom` (unknown until the pod runs) and node agents (DaemonSets and their ' +
    'pods: device plugin, DCGM exporter) are not flagged. Request ' +
    '`nvidia.com/gpu: N`, a share with `ai.sits2026.dev/gpu-fraction`, GPU memory with `ai.sits2026.dev/gpu-memory`, or a MIG profile.',
  kinds: WORKLOAD_KINDS,
  fixtures: {
    bad: `apiVersion: v1
kind: Pod
metadata: {name: bench, namespace: ml}
spec:
  containers:
  - name: cuda
    image: nvidia/cuda:12.2-base
    command: [nvidia-smi, -l, "1"]
    env:
    - {name: NVIDIA_VISIBLE_DEVICES, value: "0"}
    - {name: NVIDIA_MEMORY_LIMIT, value: "1073741824"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: ml}
spec:
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      containers:
      - name: s
        image: vllm/vllm-openai:v0.6.0
        env: [{name: CUDA_VISIBLE_DEVICES, value: "2,3"}]
        resources: {limits: {nvidia.com/gpu: 2}}
`,
    good: `apiVersion: v1
kind: Pod
metadata: {name: bench, namespace: ml}
spec:
  containers:
  - name: cuda
    image: nvidia/cuda:12.2-base
    resources: {limits: {nvidia.com/gpu: 2}}
    env: [{name: CUDA_VISIBLE_DEVICES, value: "0,1"}]
  - name: log-shipper
    image: fluent/fluent-bit
    env:
    - {name: NVIDIA_VISIBLE_DEVICES, value: void}
    - name: CUDA_VISIBLE_DEVICES
      valueFrom: {configMapKeyRef: {name: gpu-map, key: devices}}
`,
  },
  check(obj) {
    if (isNodeAgent(obj)) return [];
    const hits: RuleHit[] = [];
    for (const s of podSites(obj)) {
      for (const c of s.containers) {
        const env = envOf(c);
        for (const [name, hiding] of Object.entries(HIDING)) {
          const e = env.get(name);
          if (e?.value === undefined || hiding.includes(e.value.trim().toLowerCase())) continue;
          if (name === 'CUDA_VISIBLE_DEVICES' && !cudaOutsideAllocation(c, e.value)) continue;
          hits.push({
            message: `${name}=${JSON.stringify(e.value)} set by hand in container ${c.name || '(unnamed)'}: ${FIX[name] ?? 'remove it'}`,
            path: e.valuePath,
          });
        }
      }
    }
    return hits;
  },
};
