/**
 * Synthetic cluster and workload of the throughput benchmark. The cluster is `nodes` identical GPU nodes
 * (8 GPUs: the HGX A100 preset with NVSwitch; other counts: a flat node), 16 nodes per rack, 8 racks per
 * block. CPU and memory are generous (16 cores and 128 GiB per GPU) so that GPUs bind, as in
 * kube-scheduler's SchedulingBasic, where pods are sized to fit.
 *
 * The workload has `pods` pods whose GPU requests add up to about 90 % of GPU capacity:
 * - single: 1 whole GPU per pod (the fill is pods / GPUs);
 * - fractional: one shared GPU per pod, sizes spread over multiples of 100 milli around the mean that
 *   gives 90 %;
 * - gang: 8-pod gangs (PodGroups, all-or-nothing) of one whole node each (8 × gpusPerNode GPUs): the fill is
 *   pods × gpusPerNode / GPUs, 90 % with the default pod count;
 * - mixed: 8-pod × 8-GPU gangs carry a quarter of the demand; the other pods are single-GPU and
 *   fractional pods in the proportion that fills the rest (fractional only when pods are many).
 * - constrained: mixed, on nodes in 4 zones, where half of the single and fractional pods carry inter-pod
 *   constraints (issue 11, ADR 0054): a quarter required anti-affinity to their own app on
 *   kubernetes.io/hostname (8 apps), a quarter a DoNotSchedule spread over zones with maxSkew 1 (4 apps).
 * Each pod asks 8 cores and 64 GiB per GPU (pro rata for shares). Units (pods, gangs) are shuffled with the seed.
 */
import { makeGpus } from '../../core/model/gpu.ts';
import type { NodeSpec } from '../../core/model/node.ts';
import { makePod, type GangSpec, type PodSpec } from '../../core/model/pod.ts';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import { flatTopology } from '../../core/model/topology.ts';
import { seededRng, shuffle } from '../../core/ports.ts';

export const WORKLOADS = ['single', 'fractional', 'gang', 'mixed', 'constrained'] as const;
export type WorkloadKind = (typeof WORKLOADS)[number];

export const NODES_PER_RACK = 16;
export const RACKS_PER_BLOCK = 8;
export const GANG_SIZE = 8;
const FILL = 0.9;

/** Zones of the cluster: one, but for the constrained workload, whose spread constraints need several. */
export const zonesFor = (kind: WorkloadKind): number => (kind === 'constrained' ? 4 : 1);

export function benchNodes(count: number, gpusPerNode: number, zones = 1): NodeSpec[] {
  const hgx = NODE_SHAPES['hgx-a100'];
  const topology = gpusPerNode === 8 && hgx !== undefined ? hgx.topology : flatTopology(gpusPerNode);
  const gpus = makeGpus(gpusPerNode, 'A100-80G');
  const width = String(count - 1).length;
  return Array.from({ length: count }, (_, i) => {
    const rack = Math.floor(i / NODES_PER_RACK);
    return {
      name: `node-${String(i).padStart(width, '0')}`,
      cpuMilli: 16_000 * gpusPerNode,
      memoryMiB: 131_072 * gpusPerNode,
      maxPods: 256,
      gpus,
      topology,
      location: { zone: zones === 1 ? 'z0' : `z${Math.floor((i * zones) / count)}`, block: `b${Math.floor(rack / RACKS_PER_BLOCK)}`, rack: `r${rack}` },
      labels: {},
      taints: [],
      unschedulable: false,
    };
  });
}

export type Unit = { readonly kind: 'pod'; readonly pod: PodSpec } | { readonly kind: 'gang'; readonly gang: GangSpec };

export interface BenchWorkload {
  readonly units: readonly Unit[];
  readonly pods: number;
  readonly gangs: number;
  /** Σ GPU requests / GPU capacity, in %. */
  readonly fillPct: number;
}

function pod(id: string, gpuCount: number, gpuMilli: number, gang?: string): PodSpec {
  const gpus = (gpuCount * gpuMilli) / 1000;
  return makePod(id, { cpuMilli: Math.max(100, Math.round(8000 * gpus)), memoryMiB: Math.max(256, Math.round(65_536 * gpus)), gpuCount, gpuMilli }, gang === undefined ? {} : { gang });
}

function gangOf(name: string, gpus: number): GangSpec {
  const members = Array.from({ length: GANG_SIZE }, (_, i) => pod(`${name}-${i}`, gpus, 1000, name));
  return { name, minMember: GANG_SIZE, members, topology: { preferred: 'rack' }, priority: 0, queue: 'default' };
}

/** Fractional sizes: multiples of 100 spread evenly around `mean` (100..900), in a fixed rotation. */
function fractionalSizes(mean: number): number[] {
  const m = Math.min(900, Math.max(100, Math.round(mean / 100) * 100));
  const d = Math.min(200, m - 100, 900 - m);
  const sizes: number[] = [];
  for (let s = m - d; s <= m + d; s += 100) sizes.push(s);
  return sizes;
}

export function benchWorkload(kind: WorkloadKind, nodes: number, gpusPerNode: number, pods: number, seed: number): BenchWorkload {
  const capacityMilli = nodes * gpusPerNode * 1000;
  const target = FILL * capacityMilli;
  const units: Unit[] = [];
  let demand = 0;
  let gangs = 0;
  const addPod = (p: PodSpec): void => {
    units.push({ kind: 'pod', pod: p });
    demand += p.request.gpuCount * p.request.gpuMilli;
  };
  const addGang = (k: number): void => {
    const g = gangOf(`gang-${gangs++}`, k);
    units.push({ kind: 'gang', gang: g });
    demand += GANG_SIZE * k * 1000;
  };
  const fractional = (count: number, milli: number, prefix: string): void => {
    const sizes = fractionalSizes(milli);
    for (let i = 0; i < count; i++) addPod(pod(`${prefix}-${i}`, 1, sizes[i % sizes.length] as number));
  };
  switch (kind) {
    case 'single':
      for (let i = 0; i < pods; i++) addPod(pod(`single-${i}`, 1, 1000));
      break;
    case 'fractional':
      fractional(pods, target / pods, 'frac');
      break;
    case 'gang': {
      const n = Math.floor(pods / GANG_SIZE);
      for (let i = 0; i < n; i++) addGang(gpusPerNode);
      break;
    }
    case 'mixed':
    case 'constrained': {
      const k = Math.min(8, gpusPerNode);
      const n = Math.min(Math.floor(pods / (2 * GANG_SIZE)), Math.round((0.25 * target) / (GANG_SIZE * k * 1000)));
      for (let i = 0; i < n; i++) addGang(k);
      const rest = pods - n * GANG_SIZE;
      const per = (target - demand) / rest;
      // Singles (1000) and fractionals (mean 500) in the proportion that gives `per` on average.
      const singles = per >= 1000 ? rest : per <= 500 ? 0 : Math.round((rest * (per - 500)) / 500);
      for (let i = 0; i < singles; i++) addPod(pod(`single-${i}`, 1, 1000));
      fractional(rest - singles, per <= 500 ? per : 500, 'frac');
      break;
    }
  }
  if (kind === 'constrained') {
    let k = 0;
    for (let u = 0; u < units.length; u++) {
      const unit = units[u] as Unit;
      if (unit.kind === 'pod') units[u] = { kind: 'pod', pod: constrained(unit.pod, k++) };
    }
  }
  shuffle(units, seededRng(seed));
  const podCount = units.reduce((s, u) => s + (u.kind === 'pod' ? 1 : u.gang.members.length), 0);
  return { units, pods: podCount, gangs, fillPct: (100 * demand) / capacityMilli };
}

/** Every 4th pod gets hostname anti-affinity to its app, the next a zone spread; the other two stay as they are. */
function constrained(p: PodSpec, k: number): PodSpec {
  switch (k % 4) {
    case 0: {
      const app = `anti-${(k >> 2) % 8}`;
      return { ...p, labels: { app }, podAntiAffinity: { required: [{ labelSelector: { matchLabels: { app } }, topologyKey: 'kubernetes.io/hostname' }] } };
    }
    case 1: {
      const app = `spread-${(k >> 2) % 4}`;
      return { ...p, labels: { app }, topologySpread: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app } } }] };
    }
    default:
      return p;
  }
}
