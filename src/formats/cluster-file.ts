/**
 * The cluster file (`sits schedule --cluster`): node groups made from presets or custom shapes, their place
 * in the rack/block/zone hierarchy and multi-node NVLink domains. Custom shapes may give the in-node
 * topology as NUMA/PCIe lists, or as the output of `nvidia-smi topo -m`.
 *
 * ```yaml
 * kind: Cluster
 * shapes:
 *   my-l40s: {gpu: {model: L40S, count: 4, computeCapability: sm_89}, cpuMilli: 64000, memoryMiB: 262144,
 *             topology: {numa: [0,0,1,1], pcieSwitch: [0,0,1,1]}}
 * nodes:
 *   - {namePrefix: h100-, count: 8, shape: dgx-h100, zone: z1, block: b1, rack: r1}
 *   - {name: l40s-0, shape: my-l40s, rack: r2, taints: [{key: gpu, effect: NoSchedule}]}
 *   - {namePrefix: ib-, count: 2, shape: dgx-h100, allocatable: {rdma/hca: 4, ephemeral-storage: 2Ti}}
 * ```
 */
import { Type, type Static } from '@sinclair/typebox';
import { COMPUTE_CAPABILITY_FORMS, GPU_MODELS, makeGpus, parseComputeCapability } from '../core/model/gpu.ts';
import type { NodeSpec } from '../core/model/node.ts';
import { NODE_SHAPES, type NodeShape } from '../core/model/presets.ts';
import { buildTopology, flatTopology, type LinkClass, type NodeGpuTopology } from '../core/model/topology.ts';
import { err, ok, type Result } from '../core/result.ts';
import { parseNvidiaSmiTopo } from './nvidia-smi-topo.ts';
import { readResourceQuantity } from '../api/pod-resources.ts';
import { GPU_RESOURCE } from '../api/wire.ts';
import { InputError, issueAt, parseYaml, validateYaml, type InputIssue, type YamlSource } from './yaml-source.ts';

const Name = Type.String({ minLength: 1, maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$' });
const LinkClassT = Type.Union([
  Type.Literal('nvswitch'),
  Type.Literal('nvlink'),
  Type.Literal('pcie-switch'),
  Type.Literal('numa'),
  Type.Literal('cross-socket'),
]);

const TopologyT = Type.Object(
  {
    /** NUMA node per GPU. */
    numa: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }))),
    /** PCIe switch per GPU. */
    pcieSwitch: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }))),
    /** One class for every pair (e.g. all-to-all NVSwitch). */
    allPairs: Type.Optional(LinkClassT),
    /** NVLink islands: GPUs of one list are NVLink-connected to each other. */
    nvlinkIslands: Type.Optional(Type.Array(Type.Array(Type.Integer({ minimum: 0 })))),
    nvlinkGBps: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** The matrix printed by `nvidia-smi topo -m`. */
    nvidiaSmi: Type.Optional(Type.String()),
    nvlinkGBpsPerLink: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  },
  { additionalProperties: false },
);

const ShapeT = Type.Object(
  {
    gpu: Type.Object(
      {
        model: Type.String({ minLength: 1 }),
        count: Type.Integer({ minimum: 0, maximum: 64 }),
        memoryMiB: Type.Optional(Type.Integer({ minimum: 0 })),
        computeCapability: Type.Optional(Type.Union([Type.String(), Type.Number()])),
      },
      { additionalProperties: false },
    ),
    cpuMilli: Type.Integer({ minimum: 1 }),
    memoryMiB: Type.Integer({ minimum: 1 }),
    maxPods: Type.Optional(Type.Integer({ minimum: 1 })),
    topology: Type.Optional(TopologyT),
  },
  { additionalProperties: false },
);

const TaintT = Type.Object(
  {
    key: Type.String({ minLength: 1 }),
    value: Type.Optional(Type.String()),
    effect: Type.Union([Type.Literal('NoSchedule'), Type.Literal('PreferNoSchedule'), Type.Literal('NoExecute')]),
  },
  { additionalProperties: false },
);

const NodeGroupT = Type.Object(
  {
    name: Type.Optional(Name),
    namePrefix: Type.Optional(Type.String({ minLength: 1 })),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    shape: Type.String({ minLength: 1 }),
    zone: Type.Optional(Type.String({ minLength: 1 })),
    block: Type.Optional(Type.String({ minLength: 1 })),
    rack: Type.Optional(Type.String({ minLength: 1 })),
    nvlinkDomain: Type.Optional(Type.String({ minLength: 1 })),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    taints: Type.Optional(Type.Array(TaintT)),
    unschedulable: Type.Optional(Type.Boolean()),
    unhealthyGpus: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }))),
    /** Allocatable resources beyond the shape's cpu, memory, pods and GPUs (Kubernetes names and quantities): ephemeral-storage, hugepages-2Mi, rdma/hca, … */
    allocatable: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.Union([Type.String({ minLength: 1 }), Type.Number({ minimum: 0 })]))),
  },
  { additionalProperties: false },
);

export const ClusterFileSchema = Type.Object(
  {
    apiVersion: Type.Optional(Type.String()),
    kind: Type.Optional(Type.Literal('Cluster')),
    shapes: Type.Optional(Type.Record(Type.String({ minLength: 1 }), ShapeT)),
    nodes: Type.Array(NodeGroupT, { minItems: 1 }),
  },
  { additionalProperties: false },
);
export type ClusterFile = Static<typeof ClusterFileSchema>;
type ShapeInput = Static<typeof ShapeT>;

/** Parses and validates a cluster file; all nodes or an error listing every problem. */
export function loadClusterText(file: string, text: string): Result<NodeSpec[], InputError> {
  const src = parseYaml(file, text);
  return src.ok ? loadCluster(src.value) : src;
}

/** Loads the cluster at `prefix` of a parsed document (a section of a scenario file, or the whole file). */
export function loadCluster(src: YamlSource, prefix: readonly (string | number)[] = []): Result<NodeSpec[], InputError> {
  const v = validateYaml(src, ClusterFileSchema, prefix);
  if (!v.ok) return v;
  const issues: InputIssue[] = [];
  const at = (path: (string | number)[], msg: string): void => {
    issues.push(issueAt(src, [...prefix, ...path], msg));
  };
  const custom = new Map<string, NodeShape>();
  // Shapes with an issue of their own: the node groups using them are not "unknown shape" besides.
  const broken = new Set<string>();
  for (const [id, s] of Object.entries(v.value.shapes ?? {})) {
    const shape = buildShape(id, s, (path, msg) => at(['shapes', id, ...path], msg));
    if (shape !== undefined) custom.set(id, shape);
    else broken.add(id);
  }
  const nodes: NodeSpec[] = [];
  const names = new Set<string>();
  const domainRack = new Map<string, string>();
  v.value.nodes.forEach((g, gi) => {
    const shape = custom.get(g.shape) ?? NODE_SHAPES[g.shape];
    if (shape === undefined) {
      if (broken.has(g.shape)) return;
      at(
        ['nodes', gi, 'shape'],
        `unknown shape "${g.shape}" (presets: ${Object.keys(NODE_SHAPES).join(', ')}${custom.size > 0 ? `; custom: ${[...custom.keys()].join(', ')}` : ''})`,
      );
      return;
    }
    if (g.name !== undefined && g.namePrefix !== undefined) at(['nodes', gi, 'name'], 'give either name or namePrefix, not both');
    if (g.name !== undefined && (g.count ?? 1) !== 1) at(['nodes', gi, 'count'], 'a named node has count 1; use namePrefix for a group');
    const count = g.count ?? 1;
    const rack = g.rack ?? 'rack-0';
    const location = { zone: g.zone ?? 'zone-0', block: g.block ?? 'block-0', rack, ...(g.nvlinkDomain === undefined ? {} : { nvlinkDomain: g.nvlinkDomain }) };
    if (g.nvlinkDomain !== undefined) {
      const key = `${location.zone}/${location.block}/${rack}`;
      const prev = domainRack.get(g.nvlinkDomain);
      if (prev !== undefined && prev !== key)
        at(['nodes', gi, 'nvlinkDomain'], `NVLink domain "${g.nvlinkDomain}" spans two racks (${prev} and ${key}); a domain lives inside one rack`);
      domainRack.set(g.nvlinkDomain, key);
    }
    let scalar: Record<string, number> | undefined;
    for (const key of Object.keys(g.allocatable ?? {}).sort()) {
      if (key === 'cpu' || key === 'memory' || key === 'pods' || key === GPU_RESOURCE) {
        at(['nodes', gi, 'allocatable', key], `${key} comes from the shape; allocatable lists the other resources`);
        continue;
      }
      const v = readResourceQuantity(key, (g.allocatable ?? {})[key] as string | number, key);
      if (!v.ok) at(['nodes', gi, 'allocatable', key], v.error);
      else if (v.value > 0) (scalar ??= {})[key] = v.value;
    }
    for (const u of g.unhealthyGpus ?? [])
      if (u >= shape.gpus.length) at(['nodes', gi, 'unhealthyGpus'], `GPU ${u} does not exist (shape has ${shape.gpus.length})`);
    for (let i = 0; i < count; i++) {
      const name = g.name ?? `${g.namePrefix ?? `${g.shape}-`}${i}`;
      if (names.has(name)) {
        at(['nodes', gi, g.name === undefined ? 'namePrefix' : 'name'], `duplicate node name "${name}"`);
        return;
      }
      names.add(name);
      const unhealthy = new Set(g.unhealthyGpus ?? []);
      nodes.push({
        name,
        cpuMilli: shape.cpuMilli,
        memoryMiB: shape.memoryMiB,
        maxPods: shape.maxPods,
        gpus: shape.gpus.map((d) => (unhealthy.has(d.index) ? { ...d, healthy: false } : d)),
        topology: shape.topology,
        location,
        labels: g.labels ?? {},
        taints: (g.taints ?? []).map((t) => ({ key: t.key, effect: t.effect, ...(t.value === undefined ? {} : { value: t.value }) })),
        unschedulable: g.unschedulable ?? false,
        shape: shape.id,
        ...(scalar === undefined ? {} : { scalar }),
      });
    }
  });
  return issues.length > 0 ? err(new InputError(issues)) : ok(nodes);
}

function buildShape(id: string, s: ShapeInput, at: (path: (string | number)[], msg: string) => void): NodeShape | undefined {
  let cc = GPU_MODELS[s.gpu.model]?.computeCapability ?? 0;
  if (s.gpu.computeCapability !== undefined) {
    const parsed = parseComputeCapability(s.gpu.computeCapability);
    if (parsed === undefined) {
      at(['gpu', 'computeCapability'], `"${s.gpu.computeCapability}" is not a compute capability (${COMPUTE_CAPABILITY_FORMS})`);
      return undefined;
    }
    cc = parsed;
  }
  const n = s.gpu.count;
  const gpus = makeGpus(n, s.gpu.model, { computeCapability: cc, ...(s.gpu.memoryMiB === undefined ? {} : { memoryMiB: s.gpu.memoryMiB }) });
  const topology = buildShapeTopology(n, s.topology, at);
  if (topology === undefined) return undefined;
  return { id, description: `custom shape ${id}`, cpuMilli: s.cpuMilli, memoryMiB: s.memoryMiB, maxPods: s.maxPods ?? 110, gpus, topology };
}

function buildShapeTopology(n: number, t: ShapeInput['topology'], at: (path: (string | number)[], msg: string) => void): NodeGpuTopology | undefined {
  if (t === undefined) return flatTopology(n);
  if (t.nvidiaSmi !== undefined) {
    const r = parseNvidiaSmiTopo(t.nvidiaSmi, t.nvlinkGBpsPerLink === undefined ? {} : { nvlinkGBpsPerLink: t.nvlinkGBpsPerLink });
    if (!r.ok) {
      at(['topology', 'nvidiaSmi'], r.error);
      return undefined;
    }
    if (r.value.gpuCount !== n) {
      at(['topology', 'nvidiaSmi'], `the matrix has ${r.value.gpuCount} GPUs but gpu.count is ${n}`);
      return undefined;
    }
    return r.value;
  }
  for (const key of ['numa', 'pcieSwitch'] as const) {
    const list = t[key];
    if (list !== undefined && list.length !== n) {
      at(['topology', key], `has ${list.length} entries for ${n} GPUs`);
      return undefined;
    }
  }
  const island = new Map<number, number>();
  for (const [ii, list] of (t.nvlinkIslands ?? []).entries()) {
    for (const g of list) {
      if (g >= n) {
        at(['topology', 'nvlinkIslands', ii], `GPU ${g} does not exist (count ${n})`);
        return undefined;
      }
      island.set(g, ii);
    }
  }
  const all: LinkClass | undefined = t.allPairs;
  const gbps = t.nvlinkGBps;
  return buildTopology({
    gpuCount: n,
    numaOf: t.numa ?? new Array<number>(n).fill(0),
    pcieSwitchOf: t.pcieSwitch ?? Array.from({ length: n }, (_, i) => i),
    pair: (a, b) => {
      if (all !== undefined) return { cls: all, ...(gbps === undefined || (all !== 'nvlink' && all !== 'nvswitch') ? {} : { gbps }) };
      const ia = island.get(a);
      if (ia !== undefined && ia === island.get(b)) return { cls: 'nvlink', ...(gbps === undefined ? {} : { gbps }) };
      return undefined;
    },
  });
}
