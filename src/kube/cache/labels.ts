/**
 * How SITS reads GPU nodes and pods from Kubernetes objects (documented in docs/kubernetes.md; the label and
 * annotation names are in api/wire.ts).
 *
 * Nodes — GPU model and count come from the NVIDIA GPU Feature Discovery labels when present
 * (`LABEL.gfdProduct`, `gfdCount`, `gfdMemory`, `gfdMajor`, `gfdMinor`, `gfdClique` for multi-node NVLink), with
 * our `LABEL.gpuModel` overriding; the GPU count that can be allocated is `status.allocatable["nvidia.com/gpu"]`.
 * Place in the cluster: `LABEL.zone`, `block`, `rack`, `nvlinkDomain`. In-node GPU links: `ANNOTATION.nodeShape`
 * (a preset id) or `ANNOTATION.gpuTopology` (the text of `nvidia-smi topo -m`); unhealthy devices:
 * `ANNOTATION.unhealthyGpus: "3,5"`; quarantined devices (their reason shown by `sits explain`):
 * `ANNOTATION.gpuQuarantine` (core/health/quarantine.ts).
 *
 * Pods — requests are summed as kube-scheduler sums them (containers and sidecars, init containers, overhead:
 * api/pod-resources.ts): cpu, memory, `nvidia.com/gpu` and every other resource (ephemeral-storage, hugepages,
 * extended), read with the exact quantity parser of api/quantity.ts (rounded up as Kubernetes does; a
 * fractional `nvidia.com/gpu` is an error, as the apiserver rejects it). Node affinity, host ports
 * (containers and sidecars), scheduling gates and `preemptionPolicy: Never` are carried as they are; nodes carry every allocatable
 * resource besides cpu, memory, pods and GPUs, and `spec.unschedulable`. A fractional GPU is
 * `ANNOTATION.gpuFraction: "0.5"` (one shared device, no `nvidia.com/gpu` request). Constraints:
 * `ANNOTATION.gpuModels: "H100-SXM,A100-80G"`, `minComputeCapability: sm_90`, `gpuMemory: 40Gi` (memory each
 * GPU device must have; nodes without a known GPU memory are not filtered). Gang: `LABEL.podGroup` naming a
 * PodGroup in the pod's namespace. Queue: `LABEL.queue`. Priority: `spec.priority`.
 * SITS writes `ANNOTATION.gpuIndices: "0,1"` on each pod it binds (through the Binding object).
 */
import type {
  V1Container,
  V1LabelSelector,
  V1Node,
  V1NodeSelectorRequirement,
  V1NodeSelectorTerm,
  V1Pod,
  V1PodAffinity,
  V1PodAffinityTerm,
  V1PodAntiAffinity,
  V1TopologySpreadConstraint,
} from '@kubernetes/client-node';
import { COMPUTE_CAPABILITY_FORMS, GPU_MODELS, makeGpus, parseComputeCapability } from '../../core/model/gpu.ts';
import type { NodeSpec, Taint } from '../../core/model/node.ts';
import {
  makePod,
  type HostPort,
  type LabelSelector,
  type NodeAffinity,
  type NodeSelectorRequirement,
  type NodeSelectorTerm,
  type PodAffinityRules,
  type PodAffinityTerm,
  type PodSpec,
  type TopologySpreadConstraint,
} from '../../core/model/pod.ts';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import { flatTopology, type NodeGpuTopology, type NodePci } from '../../core/model/topology.ts';
import { err, ok, type Result } from '../../core/result.ts';
import { modelFromHint, parseModelHint } from '../../core/estimate/model-hint.ts';
import { parseBusIds, parseNics } from '../../formats/nccl-topology.ts';
import { parseQuarantine, quarantineText } from '../../core/health/quarantine.ts';
import { parseNvidiaSmiTopo } from '../../formats/nvidia-smi-topo.ts';
import { quantityToMiB, readQuantity, type QuantityUnit } from '../../api/quantity.ts';
import { readPodResources, readResourceQuantity } from '../../api/pod-resources.ts';
import { podClaims, podInlineDisks } from '../../api/storage.ts';
import { ANNOTATION, GPU_RESOURCE, LABEL } from '../../api/wire.ts';

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
  // Not L40/L40S (another GPU): L4 only where no digit follows.
  if (/L4(?!\d)/.test(p)) return 'L4';
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
  const field = n.status?.allocatable === undefined ? 'status.capacity' : 'status.allocatable';
  const read = (key: string, unit: QuantityUnit, absent: string): Result<number, string> =>
    readQuantity(alloc[key] ?? absent, unit, `node ${name}: ${field}[${key}]`);
  const cpu = read('cpu', 'milli', '0');
  const memory = read('memory', 'MiB', '0');
  const pods = read('pods', 'count', '110');
  const gpu = read(GPU_RESOURCE, 'count', '0');
  if (!cpu.ok) return cpu;
  if (!memory.ok) return memory;
  if (!pods.ok) return pods;
  if (!gpu.ok) return gpu;
  const [cpuMilli, memoryMiB, maxPods, gpuCount] = [cpu.value, memory.value, pods.value, gpu.value];
  const shapeId = ann[ANNOTATION.nodeShape];
  const shape = shapeId === undefined ? undefined : NODE_SHAPES[shapeId];
  if (shapeId !== undefined && shape === undefined) return err(`node ${name}: annotation ${ANNOTATION.nodeShape}: unknown preset "${shapeId}"`);
  const product = labels[LABEL.gfdProduct];
  const model =
    labels[LABEL.gpuModel] ?? (product === undefined ? undefined : modelFromProduct(product)) ?? shape?.gpus[0]?.model ?? (gpuCount > 0 ? 'unknown' : '');
  const info = GPU_MODELS[model];
  let cc = info?.computeCapability ?? 0;
  const major = labels[LABEL.gfdMajor];
  if (major !== undefined) cc = parseComputeCapability(`${major}.${labels[LABEL.gfdMinor] ?? '0'}`) ?? cc;
  const memLabel = labels[LABEL.gfdMemory];
  const gpuMem = memLabel === undefined ? (info?.memoryMiB ?? 0) : Number(memLabel);
  // A device plugin that reports a GPU unhealthy lowers allocatable below capacity: the node still has its
  // capacity's GPUs (and their topology), some of them not usable.
  let deviceCount = gpuCount;
  const capGpu = n.status?.capacity?.[GPU_RESOURCE];
  if (capGpu !== undefined && n.status?.allocatable !== undefined) {
    const c = readQuantity(capGpu, 'count', `node ${name}: status.capacity[${GPU_RESOURCE}]`);
    if (!c.ok) return c;
    if (c.value > gpuCount) deviceCount = c.value;
  }
  const described = (k: number): boolean => k === deviceCount || k === gpuCount;
  let topology: NodeGpuTopology | undefined = shape !== undefined && described(shape.gpus.length) ? shape.topology : undefined;
  const smi = ann[ANNOTATION.gpuTopology];
  if (smi !== undefined) {
    const t = parseNvidiaSmiTopo(smi);
    if (!t.ok) return err(`node ${name}: annotation ${ANNOTATION.gpuTopology}: ${t.error}`);
    if (!described(t.value.gpuCount))
      return err(
        `node ${name}: annotation ${ANNOTATION.gpuTopology} has ${t.value.gpuCount} GPUs, allocatable ${gpuCount}${deviceCount === gpuCount ? '' : `, capacity ${deviceCount}`}`,
      );
    topology = t.value;
  }
  // Without a description of all the devices, only the allocatable ones are known (flat).
  if (topology === undefined || topology.gpuCount !== deviceCount) deviceCount = topology?.gpuCount ?? gpuCount;
  topology ??= flatTopology(deviceCount);
  const unhealthy = new Set(
    (ann[ANNOTATION.unhealthyGpus] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
      .map(Number),
  );
  // Quarantined GPUs (core/health/quarantine.ts) are unhealthy with their reason, whoever wrote them.
  const why = new Map<number, string>();
  const quarantine = ann[ANNOTATION.gpuQuarantine];
  if (quarantine !== undefined) {
    const q = parseQuarantine(name, quarantine);
    if (!q.ok) return err(`node ${name}: annotation ${ANNOTATION.gpuQuarantine}: ${q.error}`);
    for (const e of q.value) {
      if (e.gpu >= deviceCount) return err(`node ${name}: annotation ${ANNOTATION.gpuQuarantine}: GPU ${e.gpu} does not exist (the node has ${deviceCount})`);
      unhealthy.add(e.gpu);
      why.set(e.gpu, quarantineText(e));
    }
  }
  // Never more usable GPUs than the kubelet allows: devices beyond allocatable that no annotation names are
  // taken out from the highest index down.
  for (let i = deviceCount - 1, usable = deviceCount - [...unhealthy].filter((u) => u < deviceCount).length; i >= 0 && usable > gpuCount; i--) {
    if (unhealthy.has(i)) continue;
    unhealthy.add(i);
    usable--;
  }
  const gpus = makeGpus(deviceCount, model, { computeCapability: cc, memoryMiB: Number.isFinite(gpuMem) ? gpuMem : 0 }).map((g) => {
    if (!unhealthy.has(g.index)) return g;
    const reason = why.get(g.index);
    return reason === undefined ? { ...g, healthy: false } : { ...g, healthy: false, unhealthyReason: reason };
  });
  let scalar: Record<string, number> | undefined;
  for (const key of Object.keys(alloc).sort()) {
    if (key === 'cpu' || key === 'memory' || key === 'pods' || key === GPU_RESOURCE) continue;
    const v = readResourceQuantity(key, alloc[key] as string, `node ${name}: ${field}[${key}]`);
    if (!v.ok) return v;
    if (v.value > 0) (scalar ??= {})[key] = v.value;
  }
  const taints: Taint[] = (n.spec?.taints ?? []).map((t) => ({
    key: t.key,
    effect: t.effect as Taint['effect'],
    ...(t.value === undefined ? {} : { value: t.value }),
  }));
  const clique = labels[LABEL.nvlinkDomain] ?? labels[LABEL.gfdClique];
  let pci: NodePci | undefined;
  const busText = ann[ANNOTATION.gpuBusIds];
  if (busText !== undefined) {
    const busIds = parseBusIds(busText, deviceCount);
    if (!busIds.ok) return err(`node ${name}: annotation ${ANNOTATION.gpuBusIds}: ${busIds.error}`);
    const nics = parseNics(ann[ANNOTATION.nics] ?? '', deviceCount);
    if (!nics.ok) return err(`node ${name}: annotation ${ANNOTATION.nics}: ${nics.error}`);
    pci = { busIds: busIds.value, nics: nics.value };
  }
  return ok({
    name,
    cpuMilli,
    memoryMiB,
    maxPods,
    gpus,
    topology,
    location: {
      zone: labels[LABEL.zone] ?? 'zone-0',
      block: labels[LABEL.block] ?? 'block-0',
      rack: labels[LABEL.rack] ?? 'rack-0',
      ...(clique === undefined ? {} : { nvlinkDomain: clique }),
    },
    labels,
    taints,
    unschedulable: n.spec?.unschedulable === true,
    ...(shapeId === undefined ? {} : { shape: shapeId }),
    ...(scalar === undefined ? {} : { scalar }),
    ...(pci === undefined ? {} : { pci }),
  });
}

export const podKey = (p: V1Pod): string => `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`;

/** The pod as the core sees it, or why it cannot be read. */
/**
 * Parsed pods by object: a watch delivers a new object for every change and nothing mutates one, so a pod
 * seen again (every cycle lists the running ones) is not parsed again.
 */
const parsedPods = new WeakMap<V1Pod, Result<PodSpec, string>>();

export function podFromK8s(p: V1Pod): Result<PodSpec, string> {
  let r = parsedPods.get(p);
  if (r === undefined) {
    r = parsePod(p);
    parsedPods.set(p, r);
  }
  return r;
}

function parsePod(p: V1Pod): Result<PodSpec, string> {
  const key = podKey(p);
  const ann = p.metadata?.annotations ?? {};
  const labels = p.metadata?.labels ?? {};
  // Summed as kube-scheduler sums them: containers, sidecars, init containers, overhead (api/pod-resources.ts).
  const res = readPodResources(p.spec ?? {}, `pod ${key}: spec`);
  if (!res.ok) return res;
  const { cpuMilli, memoryMiB, scalar } = res.value;
  let gpuCount = res.value.gpuCount;
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
    if (parsed === undefined)
      return err(`pod ${key}: annotation ${ANNOTATION.minComputeCapability}: "${ccText}" is not a compute capability (${COMPUTE_CAPABILITY_FORMS})`);
    cc = parsed;
  }
  const memText = ann[ANNOTATION.gpuMemory];
  const gpuMemoryMiB = memText === undefined ? undefined : quantityToMiB(memText);
  if (gpuMemoryMiB !== undefined && !(gpuMemoryMiB > 0))
    return err(`pod ${key}: annotation ${ANNOTATION.gpuMemory}: "${memText}" is not a positive memory quantity (e.g. 40Gi)`);
  if (memText !== undefined && gpuMemoryMiB === undefined)
    return err(`pod ${key}: annotation ${ANNOTATION.gpuMemory}: "${memText}" is not a memory quantity (e.g. 40Gi)`);
  const modelText = ann[ANNOTATION.trainingModel];
  const hint = modelText === undefined ? undefined : parseModelHint(modelText);
  if (hint !== undefined && !hint.ok) return err(`pod ${key}: annotation ${ANNOTATION.trainingModel}: ${hint.error}`);
  const group = labels[LABEL.podGroup];
  const na = p.spec?.affinity?.nodeAffinity;
  const nodeAffinity: NodeAffinity | undefined =
    na?.requiredDuringSchedulingIgnoredDuringExecution === undefined && na?.preferredDuringSchedulingIgnoredDuringExecution === undefined
      ? undefined
      : {
          ...(na.requiredDuringSchedulingIgnoredDuringExecution === undefined
            ? {}
            : { required: (na.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms ?? []).map(termFromK8s) }),
          ...(na.preferredDuringSchedulingIgnoredDuringExecution === undefined
            ? {}
            : { preferred: na.preferredDuringSchedulingIgnoredDuringExecution.map((t) => ({ weight: t.weight, preference: termFromK8s(t.preference) })) }),
        };
  const gates = (p.spec?.schedulingGates ?? []).map((g) => g.name);
  return ok(
    makePod(
      key,
      { cpuMilli, memoryMiB, gpuCount, gpuMilli, ...(gpuMemoryMiB === undefined ? {} : { gpuMemoryMiB }), ...(scalar === undefined ? {} : { scalar }) },
      {
        // Product names (NVIDIA-A800-SXM4-80GB) are mapped like node labels are, so both sides compare equal.
        gpuModels: [
          ...new Set(
            (ann[ANNOTATION.gpuModels] ?? '')
              .split(',')
              .map((s) => s.trim())
              .filter((s) => s !== '')
              .map(modelFromProduct),
          ),
        ],
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
        ...(nodeAffinity === undefined ? {} : { nodeAffinity }),
        hostPorts: hostPortsOf(p),
        schedulingGates: gates,
        ...(p.spec?.preemptionPolicy === 'Never' ? { preemptionPolicy: 'Never' as const } : {}),
        namespace: p.metadata?.namespace ?? 'default',
        labels,
        ...interPodFields(p),
        // Volume claims (ADR 0070): resolved against the cache's PVCs, PVs and StorageClasses at scheduling time.
        claims: podClaims(p.spec?.volumes, p.metadata?.name ?? ''),
        inlineDisks: podInlineDisks(p.spec?.volumes),
        ...(hint === undefined ? {} : { trainingModel: modelFromHint(hint.value) }),
      },
    ),
  );
}

/** Pod affinity, anti-affinity and spread constraints as the apiserver admitted them (ADR 0054). */
function interPodFields(p: V1Pod): Pick<PodSpec, 'podAffinity' | 'podAntiAffinity' | 'topologySpread'> {
  const a = p.spec?.affinity;
  const aff = rulesFromK8s(a?.podAffinity);
  const anti = rulesFromK8s(a?.podAntiAffinity);
  const spread = (p.spec?.topologySpreadConstraints ?? []).map(spreadFromK8s);
  return {
    ...(aff === undefined ? {} : { podAffinity: aff }),
    ...(anti === undefined ? {} : { podAntiAffinity: anti }),
    ...(spread.length === 0 ? {} : { topologySpread: spread }),
  };
}

function rulesFromK8s(r: V1PodAffinity | V1PodAntiAffinity | undefined): PodAffinityRules | undefined {
  const required = (r?.requiredDuringSchedulingIgnoredDuringExecution ?? []).map(affinityTermFromK8s);
  const preferred = (r?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((w) => ({ weight: w.weight, term: affinityTermFromK8s(w.podAffinityTerm) }));
  if (required.length === 0 && preferred.length === 0) return undefined;
  return { ...(required.length === 0 ? {} : { required }), ...(preferred.length === 0 ? {} : { preferred }) };
}

function selectorFromK8s(s: V1LabelSelector): LabelSelector {
  return {
    ...(s.matchLabels === undefined ? {} : { matchLabels: s.matchLabels }),
    ...(s.matchExpressions === undefined
      ? {}
      : {
          matchExpressions: s.matchExpressions.map((r) => ({
            key: r.key,
            operator: r.operator as 'In',
            ...(r.values === undefined ? {} : { values: r.values }),
          })),
        }),
  };
}

function affinityTermFromK8s(t: V1PodAffinityTerm): PodAffinityTerm {
  return {
    topologyKey: t.topologyKey,
    ...(t.labelSelector === undefined ? {} : { labelSelector: selectorFromK8s(t.labelSelector) }),
    ...(t.namespaces === undefined ? {} : { namespaces: t.namespaces }),
    ...(t.namespaceSelector === undefined ? {} : { namespaceSelector: selectorFromK8s(t.namespaceSelector) }),
    ...(t.matchLabelKeys === undefined ? {} : { matchLabelKeys: t.matchLabelKeys }),
    ...(t.mismatchLabelKeys === undefined ? {} : { mismatchLabelKeys: t.mismatchLabelKeys }),
  };
}

function spreadFromK8s(c: V1TopologySpreadConstraint): TopologySpreadConstraint {
  return {
    maxSkew: c.maxSkew,
    topologyKey: c.topologyKey,
    whenUnsatisfiable: c.whenUnsatisfiable === 'ScheduleAnyway' ? 'ScheduleAnyway' : 'DoNotSchedule',
    ...(c.labelSelector === undefined ? {} : { labelSelector: selectorFromK8s(c.labelSelector) }),
    ...(c.minDomains === undefined ? {} : { minDomains: c.minDomains }),
    ...(c.nodeAffinityPolicy === undefined ? {} : { nodeAffinityPolicy: c.nodeAffinityPolicy as 'Honor' }),
    ...(c.nodeTaintsPolicy === undefined ? {} : { nodeTaintsPolicy: c.nodeTaintsPolicy as 'Honor' }),
    ...(c.matchLabelKeys === undefined ? {} : { matchLabelKeys: c.matchLabelKeys }),
  };
}

function requirementFromK8s(r: V1NodeSelectorRequirement): NodeSelectorRequirement {
  // The apiserver admits only the six operators; another one makes its term match nothing, as in kube.
  return { key: r.key, operator: r.operator as NodeSelectorRequirement['operator'], ...(r.values === undefined ? {} : { values: r.values }) };
}

function termFromK8s(t: V1NodeSelectorTerm | undefined): NodeSelectorTerm {
  return {
    ...(t?.matchExpressions === undefined ? {} : { matchExpressions: t.matchExpressions.map(requirementFromK8s) }),
    ...(t?.matchFields === undefined ? {} : { matchFields: t.matchFields.map(requirementFromK8s) }),
  };
}

/** Host ports of the containers and sidecars (kube's GetHostPorts): hostPort > 0, TCP and 0.0.0.0 by default. */
export function hostPortsOf(p: { spec?: { containers?: readonly V1Container[]; initContainers?: readonly V1Container[] } }): HostPort[] {
  const out: HostPort[] = [];
  const add = (c: V1Container): void => {
    for (const port of c.ports ?? []) {
      if ((port.hostPort ?? 0) <= 0) continue;
      out.push({
        port: port.hostPort as number,
        protocol: (port.protocol ?? 'TCP') as HostPort['protocol'],
        ip: port.hostIP === undefined || port.hostIP === '' ? '0.0.0.0' : port.hostIP,
      });
    }
  };
  for (const c of p.spec?.containers ?? []) add(c);
  for (const c of p.spec?.initContainers ?? []) if (c.restartPolicy === 'Always') add(c);
  return out;
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
export function nodeObjectFor(
  name: string,
  shapeId: string,
  location: { zone: string; block: string; rack: string; nvlinkDomain?: string },
): { name: string; labels: Record<string, string>; annotations: Record<string, string>; capacity: Record<string, string> } {
  const shape = NODE_SHAPES[shapeId];
  if (shape === undefined) throw new Error(`unknown preset ${shapeId}`);
  const gpu = shape.gpus[0];
  const labels: Record<string, string> = {
    [LABEL.hostname]: name,
    [LABEL.zone]: location.zone,
    [LABEL.block]: location.block,
    [LABEL.rack]: location.rack,
    [LABEL.gpuModel]: gpu?.model ?? '',
    [LABEL.gfdCount]: String(shape.gpus.length),
    ...(gpu === undefined
      ? {}
      : {
          [LABEL.gfdMajor]: String(Math.floor(gpu.computeCapability / 10)),
          [LABEL.gfdMinor]: String(gpu.computeCapability % 10),
          [LABEL.gfdMemory]: String(gpu.memoryMiB),
        }),
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
