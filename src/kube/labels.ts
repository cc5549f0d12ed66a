/**
 * How SITS reads GPU nodes and pods from Kubernetes objects (documented in docs/kubernetes.md).
 *
 * Nodes — GPU model and count come from the NVIDIA GPU Feature Discovery labels when present
 * (`nvidia.com/gpu.product`, `nvidia.com/gpu.count`, `nvidia.com/gpu.memory`, `nvidia.com/gpu.compute.major`
 * and `.minor`, `nvidia.com/gpu.clique` for multi-node NVLink), with `ai.sits2026.dev/*` labels overriding;
 * the GPU count that can be allocated is `status.allocatable["nvidia.com/gpu"]`. Place in the cluster:
 * `topology.kubernetes.io/zone`, `ai.sits2026.dev/block`, `ai.sits2026.dev/rack`, `ai.sits2026.dev/nvlink-domain`.
 * In-node GPU links: annotation `ai.sits2026.dev/node-shape` (a preset id) or `ai.sits2026.dev/gpu-topology`
 * (the text of `nvidia-smi topo -m`); unhealthy devices: annotation `ai.sits2026.dev/unhealthy-gpus: "3,5"`.
 *
 * Pods — requests are summed over containers (max with init containers, as kube-scheduler does):
 * cpu, memory and `nvidia.com/gpu`. A fractional GPU is annotation `ai.sits2026.dev/gpu-fraction: "0.5"`
 * (one shared device, no `nvidia.com/gpu` request). Constraints: `ai.sits2026.dev/gpu-models: "H100-SXM,A100-80G"`,
 * `ai.sits2026.dev/min-compute-capability: sm_90`, `ai.sits2026.dev/gpu-memory: 40Gi` (memory each GPU device must
 * have; nodes without a known GPU memory are not filtered). Gang: label `ai.sits2026.dev/pod-group` naming a PodGroup
 * in the pod's namespace. Queue: label `ai.sits2026.dev/queue`. Priority: `spec.priority`.
 * SITS writes `ai.sits2026.dev/gpu-indices: "0,1"` on each pod it binds (through the Binding object).
 */
import type { V1Node, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { GPU_MODELS, makeGpus, parseComputeCapability } from '../core/model/gpu.ts';
import type { NodeSpec, Taint } from '../core/model/node.ts';
import { makePod, type PodSpec } from '../core/model/pod.ts';
import { NODE_SHAPES } from '../core/model/presets.ts';
import { flatTopology, type NodeGpuTopology } from '../core/model/topology.ts';
import { err, ok, type Result } from '../core/result.ts';
import { parseNvidiaSmiTopo } from '../spec/nvidia-smi-topo.ts';

const P = 'ai.sits2026.dev';
export const LABEL = {
  gpuModel: `${P}/gpu-model`,
  rack: `${P}/rack`,
  block: `${P}/block`,
  nvlinkDomain: `${P}/nvlink-domain`,
  zone: 'topology.kubernetes.io/zone',
  podGroup: `${P}/pod-group`,
  queue: `${P}/queue`,
  gfdProduct: 'nvidia.com/gpu.product',
  gfdCount: 'nvidia.com/gpu.count',
  gfdMemory: 'nvidia.com/gpu.memory',
  gfdMajor: 'nvidia.com/gpu.compute.major',
  gfdMinor: 'nvidia.com/gpu.compute.minor',
  gfdClique: 'nvidia.com/gpu.clique',
} as const;
export const ANNOTATION = {
  nodeShape: `${P}/node-shape`,
  gpuTopology: `${P}/gpu-topology`,
  unhealthyGpus: `${P}/unhealthy-gpus`,
  gpuFraction: `${P}/gpu-fraction`,
  gpuModels: `${P}/gpu-models`,
  minComputeCapability: `${P}/min-compute-capability`,
  gpuMemory: `${P}/gpu-memory`,
  gpuIndices: `${P}/gpu-indices`,
  /** Set on a pod that SITS has placed as part of a gang plan, before its binding (see gang-binder.ts). */
  assignedNode: `${P}/assigned-node`,
  planId: `${P}/plan-id`,
  /** Members of the gang plan, written with it: recovery completes a plan only when all of them exist. */
  planSize: `${P}/plan-size`,
  /** Gang description on the pods when there is no PodGroup object. */
  minMember: `${P}/min-member`,
  topologyRequired: `${P}/topology-required`,
  topologyPreferred: `${P}/topology-preferred`,
} as const;
export const GPU_RESOURCE = 'nvidia.com/gpu';
export const SCHEDULER_NAME = 'sits-scheduler';

/** Kubernetes quantity → integer in the unit asked for (milli-units for CPU, MiB for memory). */
export function parseQuantity(q: string | number | undefined, unit: 'milli' | 'MiB' | 'count'): number | undefined {
  if (q === undefined) return 0;
  const s = String(q).trim();
  const m = /^([+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/.exec(s);
  if (m === null) return undefined;
  const n = Number(m[1]);
  const suffix = m[2] ?? '';
  const factor: Record<string, number> = { '': 1, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, Pi: 1024 ** 5, Ei: 1024 ** 6 };
  const base = n * (factor[suffix] as number);
  switch (unit) {
    case 'milli':
      return Math.ceil(base * 1000 - 1e-9);
    case 'MiB':
      return Math.ceil(base / 1024 ** 2 - 1e-9);
    case 'count':
      return Math.floor(base + 1e-9);
  }
}

/** GFD product strings (`NVIDIA-H100-80GB-HBM3`) mapped onto our model names where we know them. */
export function modelFromProduct(product: string): string {
  const p = product.toUpperCase();
  if (GPU_MODELS[product] !== undefined) return product;
  if (p.includes('H200')) return 'H200';
  if (p.includes('H100')) return 'H100-SXM';
  if (p.includes('A800')) return 'A800';
  if (p.includes('A100') && p.includes('40')) return 'A100-40G';
  if (p.includes('A100')) return 'A100-80G';
  if (p.includes('A10')) return 'A10';
  if (p.includes('L4')) return 'L4';
  if (p.includes('T4')) return 'T4';
  if (p.includes('V100')) return 'V100';
  if (p.includes('P100')) return 'P100';
  return product;
}

export function nodeFromK8s(n: V1Node): Result<NodeSpec, string> {
  const name = n.metadata?.name ?? '';
  const labels = n.metadata?.labels ?? {};
  const ann = n.metadata?.annotations ?? {};
  const alloc = n.status?.allocatable ?? n.status?.capacity ?? {};
  const cpuMilli = parseQuantity(alloc.cpu, 'milli');
  const memoryMiB = parseQuantity(alloc.memory, 'MiB');
  const maxPods = parseQuantity(alloc.pods ?? '110', 'count');
  const gpuCount = parseQuantity(alloc[GPU_RESOURCE], 'count');
  if (cpuMilli === undefined || memoryMiB === undefined || maxPods === undefined || gpuCount === undefined) return err(`node ${name}: unreadable allocatable ${JSON.stringify(alloc)}`);
  const shapeId = ann[ANNOTATION.nodeShape];
  const shape = shapeId === undefined ? undefined : NODE_SHAPES[shapeId];
  if (shapeId !== undefined && shape === undefined) return err(`node ${name}: annotation ${ANNOTATION.nodeShape}: unknown preset "${shapeId}"`);
  const product = labels[LABEL.gfdProduct];
  const model = labels[LABEL.gpuModel] ?? (product === undefined ? undefined : modelFromProduct(product)) ?? shape?.gpus[0]?.model ?? (gpuCount > 0 ? 'unknown' : '');
  const info = GPU_MODELS[model];
  let cc = info?.computeCapability ?? 0;
  const major = labels[LABEL.gfdMajor];
  if (major !== undefined) cc = (parseComputeCapability(`${major}.${labels[LABEL.gfdMinor] ?? '0'}`) ?? cc);
  const memLabel = labels[LABEL.gfdMemory];
  const gpuMem = memLabel === undefined ? (info?.memoryMiB ?? 0) : Number(memLabel);
  let topology: NodeGpuTopology = shape !== undefined && shape.gpus.length === gpuCount ? shape.topology : flatTopology(gpuCount);
  const smi = ann[ANNOTATION.gpuTopology];
  if (smi !== undefined) {
    const t = parseNvidiaSmiTopo(smi);
    if (!t.ok) return err(`node ${name}: annotation ${ANNOTATION.gpuTopology}: ${t.error}`);
    if (t.value.gpuCount !== gpuCount) return err(`node ${name}: annotation ${ANNOTATION.gpuTopology} has ${t.value.gpuCount} GPUs, allocatable ${gpuCount}`);
    topology = t.value;
  }
  const unhealthy = new Set((ann[ANNOTATION.unhealthyGpus] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number));
  const gpus = makeGpus(gpuCount, model, { computeCapability: cc, memoryMiB: Number.isFinite(gpuMem) ? gpuMem : 0 }).map((g) => (unhealthy.has(g.index) ? { ...g, healthy: false } : g));
  const taints: Taint[] = (n.spec?.taints ?? []).map((t) => ({ key: t.key, effect: t.effect as Taint['effect'], ...(t.value === undefined ? {} : { value: t.value }) }));
  const clique = labels[LABEL.nvlinkDomain] ?? labels[LABEL.gfdClique];
  return ok({
    name,
    cpuMilli,
    memoryMiB,
    maxPods,
    gpus,
    topology,
    location: { zone: labels[LABEL.zone] ?? 'zone-0', block: labels[LABEL.block] ?? 'block-0', rack: labels[LABEL.rack] ?? 'rack-0', ...(clique === undefined ? {} : { nvlinkDomain: clique }) },
    labels,
    taints,
    unschedulable: n.spec?.unschedulable === true,
    ...(shapeId === undefined ? {} : { shape: shapeId }),
  });
}

function sumRequests(containers: readonly { resources?: V1ResourceRequirements }[] | undefined, key: string, unit: 'milli' | 'MiB' | 'count', pick: 'sum' | 'max'): number | undefined {
  let acc = 0;
  for (const c of containers ?? []) {
    const v = parseQuantity(c.resources?.requests?.[key] ?? c.resources?.limits?.[key], unit);
    if (v === undefined) return undefined;
    acc = pick === 'sum' ? acc + v : Math.max(acc, v);
  }
  return acc;
}

export const podKey = (p: V1Pod): string => `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`;

/** The pod as the core sees it, or why it cannot be read. */
export function podFromK8s(p: V1Pod): Result<PodSpec, string> {
  const key = podKey(p);
  const ann = p.metadata?.annotations ?? {};
  const labels = p.metadata?.labels ?? {};
  const req = (k: string, unit: 'milli' | 'MiB' | 'count'): number | undefined => {
    const main = sumRequests(p.spec?.containers, k, unit, 'sum');
    const init = sumRequests(p.spec?.initContainers, k, unit, 'max');
    return main === undefined || init === undefined ? undefined : Math.max(main, init);
  };
  const cpuMilli = req('cpu', 'milli');
  const memoryMiB = req('memory', 'MiB');
  let gpuCount = req(GPU_RESOURCE, 'count');
  if (cpuMilli === undefined || memoryMiB === undefined || gpuCount === undefined) return err(`pod ${key}: unreadable resource requests`);
  let gpuMilli = gpuCount > 0 ? 1000 : 0;
  const frac = ann[ANNOTATION.gpuFraction];
  if (frac !== undefined) {
    const f = Number(frac);
    if (!(f > 0 && f <= 1)) return err(`pod ${key}: annotation ${ANNOTATION.gpuFraction}: "${frac}" must be a number in (0, 1]`);
    if (gpuCount > 1) return err(`pod ${key}: annotation ${ANNOTATION.gpuFraction} shares one device, but the pod requests ${gpuCount} ${GPU_RESOURCE}`);
    gpuCount = 1;
    gpuMilli = Math.round(f * 1000);
  }
  let cc = 0;
  const ccText = ann[ANNOTATION.minComputeCapability];
  if (ccText !== undefined) {
    const parsed = parseComputeCapability(ccText);
    if (parsed === undefined) return err(`pod ${key}: annotation ${ANNOTATION.minComputeCapability}: "${ccText}" is not a compute capability (sm_90, 9.0 or 90)`);
    cc = parsed;
  }
  const memText = ann[ANNOTATION.gpuMemory];
  const gpuMemoryMiB = memText === undefined ? undefined : parseQuantity(memText, 'MiB');
  if (gpuMemoryMiB !== undefined && !(gpuMemoryMiB > 0)) return err(`pod ${key}: annotation ${ANNOTATION.gpuMemory}: "${memText}" is not a positive memory quantity (e.g. 40Gi)`);
  if (memText !== undefined && gpuMemoryMiB === undefined) return err(`pod ${key}: annotation ${ANNOTATION.gpuMemory}: "${memText}" is not a memory quantity (e.g. 40Gi)`);
  const group = labels[LABEL.podGroup];
  return ok(
    makePod(
      key,
      { cpuMilli, memoryMiB, gpuCount, gpuMilli, ...(gpuMemoryMiB === undefined ? {} : { gpuMemoryMiB }) },
      {
        // Product names (NVIDIA-A800-SXM4-80GB) are mapped like node labels are, so both sides compare equal.
        gpuModels: [...new Set((ann[ANNOTATION.gpuModels] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '').map(modelFromProduct))],
        minComputeCapability: cc,
        priority: p.spec?.priority ?? 0,
        queue: labels[LABEL.queue] ?? 'default',
        nodeSelector: p.spec?.nodeSelector ?? {},
        tolerations: (p.spec?.tolerations ?? []).map((t) => ({
          ...(t.key === undefined ? {} : { key: t.key }),
          ...(t.operator === undefined ? {} : { operator: t.operator as 'Exists' | 'Equal' }),
          ...(t.value === undefined ? {} : { value: t.value }),
          ...(t.effect === undefined ? {} : { effect: t.effect as Taint['effect'] }),
        })),
        ...(group === undefined ? {} : { gang: `${p.metadata?.namespace ?? 'default'}/${group}` }),
      },
    ),
  );
}

/** A pod holds node resources from binding until it terminates. */
export function podHoldsResources(p: V1Pod): boolean {
  const phase = p.status?.phase;
  return (p.spec?.nodeName ?? '') !== '' && phase !== 'Succeeded' && phase !== 'Failed';
}

export function parseGpuIndices(text: string | undefined): number[] | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const out = text.split(',').map((s) => Number(s.trim()));
  return out.every((x) => Number.isInteger(x) && x >= 0) ? out : undefined;
}

/** Labels, annotations and capacity that describe a node of a preset shape in the documented format. */
export function nodeObjectFor(name: string, shapeId: string, location: { zone: string; block: string; rack: string; nvlinkDomain?: string }): { name: string; labels: Record<string, string>; annotations: Record<string, string>; capacity: Record<string, string> } {
  const shape = NODE_SHAPES[shapeId];
  if (shape === undefined) throw new Error(`unknown preset ${shapeId}`);
  const gpu = shape.gpus[0];
  const labels: Record<string, string> = {
    'kubernetes.io/hostname': name,
    [LABEL.zone]: location.zone,
    [LABEL.block]: location.block,
    [LABEL.rack]: location.rack,
    [LABEL.gpuModel]: gpu?.model ?? '',
    [LABEL.gfdCount]: String(shape.gpus.length),
    ...(gpu === undefined ? {} : { [LABEL.gfdMajor]: String(Math.floor(gpu.computeCapability / 10)), [LABEL.gfdMinor]: String(gpu.computeCapability % 10), [LABEL.gfdMemory]: String(gpu.memoryMiB) }),
    ...(location.nvlinkDomain === undefined ? {} : { [LABEL.nvlinkDomain]: location.nvlinkDomain }),
  };
  return {
    name,
    labels,
    annotations: { [ANNOTATION.nodeShape]: shapeId },
    capacity: { cpu: formatCpu(shape.cpuMilli), memory: formatMemory(shape.memoryMiB), pods: String(shape.maxPods), [GPU_RESOURCE]: String(shape.gpus.length) },
  };
}

/** CPU quantity in the API server's canonical form (`128`, `1500m`). */
export function formatCpu(milli: number): string {
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

/** Memory quantity in canonical binary-suffix form (`512Gi`, `1536Mi`). */
export function formatMemory(mib: number): string {
  if (mib % (1024 * 1024) === 0) return `${mib / (1024 * 1024)}Ti`;
  if (mib % 1024 === 0) return `${mib / 1024}Gi`;
  return `${mib}Mi`;
}
