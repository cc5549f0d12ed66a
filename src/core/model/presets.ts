/**
 * Node shapes that come up again and again, by id. Each preset fixes the GPU model, the in-node links and
 * the host resources a node of that kind typically offers to pods.
 */
import { makeGpus, type GpuDevice } from './gpu.ts';
import type { NodeSpec } from './node.ts';
import { buildTopology, type LinkClass, type NodeGpuTopology, type NodeLocation } from './topology.ts';

export interface NodeShape {
  readonly id: string;
  readonly description: string;
  readonly cpuMilli: number;
  readonly memoryMiB: number;
  readonly maxPods: number;
  readonly gpus: readonly GpuDevice[];
  readonly topology: NodeGpuTopology;
}

const half = (n: number): number[] => Array.from({ length: n }, (_, i) => (i < n / 2 ? 0 : 1));
const pairs = (n: number): number[] => Array.from({ length: n }, (_, i) => Math.floor(i / 2));

function allToAll(n: number, cls: LinkClass, gbps: number) {
  return (): { cls: LinkClass; gbps: number } => ({ cls, gbps });
}

/** DGX-1V hybrid cube mesh: two fully linked quads plus i↔i+4; NV2 pairs carry two 25 GB/s links. */
const HCM_LINKS: Readonly<Record<string, number>> = {
  '0-1': 1,
  '0-2': 1,
  '0-3': 2,
  '0-4': 2,
  '1-2': 2,
  '1-3': 1,
  '1-5': 2,
  '2-3': 2,
  '2-6': 1,
  '3-7': 1,
  '4-5': 1,
  '4-6': 1,
  '4-7': 2,
  '5-6': 2,
  '5-7': 1,
  '6-7': 2,
};

export const NODE_SHAPES: Readonly<Record<string, NodeShape>> = {
  'dgx-h100': {
    id: 'dgx-h100',
    description: '8×H100-SXM, NVSwitch all-to-all (450 GB/s), 2 sockets, 4 PCIe switches',
    cpuMilli: 224_000,
    memoryMiB: 2_097_152,
    maxPods: 110,
    gpus: makeGpus(8, 'H100-SXM'),
    topology: buildTopology({ gpuCount: 8, numaOf: half(8), pcieSwitchOf: pairs(8), pair: allToAll(8, 'nvswitch', 450) }),
  },
  'hgx-a100': {
    id: 'hgx-a100',
    description: '8×A100-80G, NVSwitch all-to-all (300 GB/s), 2 sockets, 4 PCIe switches',
    cpuMilli: 256_000,
    memoryMiB: 1_048_576,
    maxPods: 110,
    gpus: makeGpus(8, 'A100-80G'),
    topology: buildTopology({ gpuCount: 8, numaOf: half(8), pcieSwitchOf: pairs(8), pair: allToAll(8, 'nvswitch', 300) }),
  },
  a800x4: {
    id: 'a800x4',
    description: '4×A800, NVLink full mesh (200 GB/s), 2 sockets',
    cpuMilli: 128_000,
    memoryMiB: 524_288,
    maxPods: 110,
    gpus: makeGpus(4, 'A800'),
    topology: buildTopology({ gpuCount: 4, numaOf: half(4), pcieSwitchOf: pairs(4), pair: allToAll(4, 'nvlink', 200) }),
  },
  'v100-hcm': {
    id: 'v100-hcm',
    description: '8×V100 hybrid cube mesh (DGX-1V): NVLink 25/50 GB/s on 16 pairs, the rest across sockets',
    cpuMilli: 80_000,
    memoryMiB: 524_288,
    maxPods: 110,
    gpus: makeGpus(8, 'V100'),
    topology: buildTopology({
      gpuCount: 8,
      numaOf: half(8),
      pcieSwitchOf: pairs(8),
      pair: (a, b) => {
        const count = HCM_LINKS[`${Math.min(a, b)}-${Math.max(a, b)}`];
        return count === undefined ? undefined : { cls: 'nvlink', gbps: 25 * count };
      },
    }),
  },
  'nvlink-2x4': {
    id: 'nvlink-2x4',
    description: '8×A100-80G as two 4-GPU NVLink islands (200 GB/s), one per socket',
    cpuMilli: 128_000,
    memoryMiB: 1_048_576,
    maxPods: 110,
    gpus: makeGpus(8, 'A100-80G'),
    topology: buildTopology({
      gpuCount: 8,
      numaOf: half(8),
      pcieSwitchOf: pairs(8),
      pair: (a, b) => (Math.floor(a / 4) === Math.floor(b / 4) ? { cls: 'nvlink', gbps: 200 } : undefined),
    }),
  },
  l4x8: {
    id: 'l4x8',
    description: '8×L4 on PCIe only: pairs under one switch, 2 sockets',
    cpuMilli: 96_000,
    memoryMiB: 393_216,
    maxPods: 110,
    gpus: makeGpus(8, 'L4'),
    topology: buildTopology({ gpuCount: 8, numaOf: half(8), pcieSwitchOf: pairs(8) }),
  },
  t4x4: {
    id: 't4x4',
    description: '4×T4 on PCIe only, one socket, pairs under one switch',
    cpuMilli: 32_000,
    memoryMiB: 131_072,
    maxPods: 110,
    gpus: makeGpus(4, 'T4'),
    topology: buildTopology({ gpuCount: 4, numaOf: [0, 0, 0, 0], pcieSwitchOf: pairs(4) }),
  },
};

export const NODE_SHAPE_IDS = Object.keys(NODE_SHAPES);

/** A schedulable node of a shape: its resources, GPUs and links, no labels or taints. */
export function nodeOfShape(
  name: string,
  shape: Pick<NodeShape, 'id' | 'cpuMilli' | 'memoryMiB' | 'maxPods' | 'gpus' | 'topology'>,
  location: NodeLocation,
): NodeSpec {
  return {
    name,
    cpuMilli: shape.cpuMilli,
    memoryMiB: shape.memoryMiB,
    maxPods: shape.maxPods,
    gpus: shape.gpus,
    topology: shape.topology,
    location,
    labels: {},
    taints: [],
    unschedulable: false,
    shape: shape.id,
  };
}
