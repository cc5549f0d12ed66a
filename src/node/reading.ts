/**
 * What the node agent derives from one reading of the node (pure): the GPUs with their health, minor numbers
 * and NUMA nodes, the in-node topology (NVLink islands, PCIe switch and NUMA groups), and the labels and
 * annotations that SITS reads (docs/kubernetes.md, src/kube/cache/labels.ts). A reading is all or nothing: any
 * inconsistency between the three sources is an error and nothing is written.
 */
import { GPU_MODELS } from '../core/model/gpu.ts';
import type { NodeGpuTopology } from '../core/model/topology.ts';
import { err, ok, type Result } from '../core/result.ts';
import { ANNOTATION, LABEL, MANAGED_NODE_ANNOTATIONS, MANAGED_NODE_LABELS } from '../api/wire.ts';
import { modelFromProduct } from '../kube/cache/labels.ts';
import { formatNics, nicPlacements } from '../formats/nccl-topology.ts';
import { formatSmiMatrix, readSmiMatrix, readSmiNics, topologyFromMatrix } from '../formats/nvidia-smi-topo.ts';
import { parseSmiQueryXml } from './smi-query.ts';

export interface GpuReading {
  readonly index: number;
  readonly uuid: string;
  readonly minorNumber: number;
  readonly pciBusId: string;
  /** NUMA node, -1 when neither nvidia-smi nor sysfs knows. */
  readonly numaNode: number;
  readonly healthy: boolean;
  readonly reasons: readonly string[];
}

export interface NodeReading {
  readonly gpus: readonly GpuReading[];
  readonly product: string;
  /** SITS's model name when SITS knows the product (GPU_MODELS), else undefined. */
  readonly model: string | undefined;
  /** Smallest framebuffer over the GPUs. */
  readonly memoryMiB: number;
  /** 90 for 9.0; undefined when neither the model nor the architecture tells. */
  readonly computeCapability: number | undefined;
  readonly topology: NodeGpuTopology;
  /** GPUs joined by NVLink or NVSwitch, one list per island (a GPU without NVLink is an island of one). */
  readonly nvlinkIslands: readonly (readonly number[])[];
  readonly numaGroups: readonly (readonly number[])[];
  readonly pcieSwitchGroups: readonly (readonly number[])[];
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface ReadingInput {
  /** Output of `nvidia-smi topo -m`. */
  readonly topo: string;
  /** Output of `nvidia-smi -q -x`. */
  readonly query: string;
  /** /sys/bus/pci/devices/<bus id>/numa_node by Linux bus id (-1 or absent: unknown). */
  readonly sysfsNuma: ReadonlyMap<string, number>;
}

/** Every label and annotation the agent owns: set when known, removed when no longer known (api/wire.ts). */
export const MANAGED_LABELS = MANAGED_NODE_LABELS;
export const MANAGED_ANNOTATIONS = MANAGED_NODE_ANNOTATIONS;

/** Architectures with a single compute capability (Ampere, Pascal, Blackwell have several: the model must tell). */
const ARCH_CC: Readonly<Record<string, number>> = { Volta: 70, Turing: 75, 'Ada Lovelace': 89, Hopper: 90 };

/** A label value as GPU Feature Discovery writes the product (`NVIDIA A100-SXM4-80GB` → `NVIDIA-A100-SXM4-80GB`). */
export function labelValue(s: string): string {
  const v = s
    .trim()
    .replace(/\s+/g, '-')
    .replace(/[^A-Za-z0-9._-]/g, '')
    .slice(0, 63);
  return v.replace(/^[^A-Za-z0-9]+/, '').replace(/[^A-Za-z0-9]+$/, '');
}

const groups = (of: readonly number[]): number[][] => {
  const by = new Map<number, number[]>();
  for (const [i, g] of of.entries()) by.set(g, [...(by.get(g) ?? []), i]);
  return [...by.values()];
};

export function deriveReading(input: ReadingInput): Result<NodeReading, string> {
  const q = parseSmiQueryXml(input.query);
  if (!q.ok) return q;
  const { gpus } = q.value;
  if (gpus.length !== q.value.attachedGpus)
    return err(`nvidia-smi -q -x: <attached_gpus> says ${q.value.attachedGpus} but ${gpus.length} <gpu> element(s) follow (truncated output?)`);
  if (gpus.length === 0) return err('nvidia-smi -q -x: no GPU attached');
  const m = readSmiMatrix(input.topo);
  if (!m.ok) return err(`nvidia-smi topo -m: ${m.error}`);
  if (m.value.gpuCount !== gpus.length) return err(`nvidia-smi topo -m shows ${m.value.gpuCount} GPUs, nvidia-smi -q -x ${gpus.length}`);
  const products = [...new Set(gpus.map((g) => g.product))];
  if (products.length > 1) return err(`the node mixes GPU models (${products.join(', ')}); SITS describes one model per node`);
  const product = products[0] as string;
  const mapped = modelFromProduct(product);
  const model = GPU_MODELS[mapped] === undefined ? undefined : mapped;
  const memoryMiB = Math.min(...gpus.map((g) => g.memoryMiB));
  const arch = gpus[0]?.architecture ?? '';
  const computeCapability = (model === undefined ? undefined : GPU_MODELS[model]?.computeCapability) ?? ARCH_CC[arch];
  // NUMA: nvidia-smi's column first, else the kernel's view of the PCI device (the column is N/A on many boards).
  const numa = gpus.map((g, i) => {
    const fromSmi = m.value.numa[i] ?? -1;
    return fromSmi >= 0 ? fromSmi : (input.sysfsNuma.get(g.pciBusId) ?? -1);
  });
  const matrix = { ...m.value, numa };
  const topology = topologyFromMatrix(matrix);
  const readings: GpuReading[] = gpus.map((g, i) => ({
    index: g.index,
    uuid: g.uuid,
    minorNumber: g.minorNumber,
    pciBusId: g.pciBusId,
    numaNode: numa[i] ?? -1,
    healthy: g.unhealthyReasons.length === 0,
    reasons: g.unhealthyReasons,
  }));
  const labels: Record<string, string> = {
    [LABEL.gfdProduct]: labelValue(product),
    [LABEL.gfdCount]: String(gpus.length),
    [LABEL.gfdMemory]: String(memoryMiB),
    ...(model === undefined ? {} : { [LABEL.gpuModel]: model }),
    ...(computeCapability === undefined
      ? {}
      : { [LABEL.gfdMajor]: String(Math.floor(computeCapability / 10)), [LABEL.gfdMinor]: String(computeCapability % 10) }),
  };
  const unhealthy = readings.filter((g) => !g.healthy).map((g) => g.index);
  const nics = nicPlacements(readSmiNics(input.topo, gpus.length), numa);
  const annotations: Record<string, string> = {
    [ANNOTATION.gpuTopology]: formatSmiMatrix(matrix),
    [ANNOTATION.gpuBusIds]: gpus.map((g) => g.pciBusId).join(','),
    ...(nics.length === 0 ? {} : { [ANNOTATION.nics]: formatNics(nics) }),
    ...(unhealthy.length === 0 ? {} : { [ANNOTATION.unhealthyGpus]: unhealthy.join(',') }),
  };
  return ok({
    gpus: readings,
    product,
    model,
    memoryMiB,
    computeCapability,
    topology,
    nvlinkIslands: groups(topology.islandOf),
    numaGroups: groups(topology.numaOf),
    pcieSwitchGroups: groups(topology.pcieSwitchOf),
    labels,
    annotations,
  });
}
