/** Test fixture for the step-aware gang choice (ADR 0188, 0191): shared by its tests and the spine's. */
import type { NodeSpec } from '../model/node.ts';
import { NODE_SHAPES } from '../model/presets.ts';

/** One NVSwitch A100 node `a-nvswitch` and one PCIe-only node `b-pcie` (A100 GPUs in pairs under a switch), one rack. */
export function nvswitchAndPcieNodes(): NodeSpec[] {
  const nv = NODE_SHAPES['hgx-a100'] as NonNullable<(typeof NODE_SHAPES)['hgx-a100']>;
  const pcie = NODE_SHAPES.l4x8 as NonNullable<(typeof NODE_SHAPES)['l4x8']>;
  const node = (name: string, topology: NodeSpec['topology']): NodeSpec => ({
    name,
    cpuMilli: 256_000,
    memoryMiB: 1_048_576,
    maxPods: 110,
    gpus: nv.gpus,
    topology,
    location: { zone: 'z', block: 'b', rack: 'r' },
    labels: {},
    taints: [],
    unschedulable: false,
  });
  return [node('a-nvswitch', nv.topology), node('b-pcie', pcie.topology)];
}
