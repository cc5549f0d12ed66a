/** Builders shared by the fragmentation plugins' tests: small nodes in a given state. */
import { makeGpus } from '../../model/gpu.ts';
import type { NodeSpec } from '../../model/node.ts';
import { flatTopology } from '../../model/topology.ts';
import { ClusterState, type NodeState } from '../../snapshot/cluster-state.ts';

export function nodeSpec(name: string, gpus: number, model: string, cpuMilli: number, memoryMiB = 1 << 20): NodeSpec {
  return {
    name,
    cpuMilli,
    memoryMiB,
    maxPods: 110,
    gpus: makeGpus(gpus, model),
    topology: flatTopology(gpus),
    location: { zone: 'z', block: 'b', rack: 'r' },
    labels: {},
    taints: [],
    unschedulable: false,
  };
}

/** A node whose GPUs have the given free milli and whose CPU has `cpuLeft` free, built by real allocations. */
export function nodeInState(state: ClusterState, name: string, free: readonly number[], cpuLeft: number): NodeState {
  const n = state.node(name);
  if (n === undefined) throw new Error(`no node ${name}`);
  let k = 0;
  free.forEach((f, g) => {
    if (f < 1000)
      state.allocate({ podId: `${name}-g${g}-${k++}`, node: name, gpus: [g], gpuMilli: 1000 - f, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
  });
  const cpuUsed = n.spec.cpuMilli - cpuLeft;
  if (cpuUsed > 0) state.allocate({ podId: `${name}-cpu-${k++}`, node: name, gpus: [], gpuMilli: 0, cpuMilli: cpuUsed, memoryMiB: 0, priority: 0, queue: 'q' });
  return n;
}

export function oneNode(gpus: number, model: string, cpuMilli: number, free: readonly number[], cpuLeft: number): { state: ClusterState; node: NodeState } {
  const state = new ClusterState([nodeSpec('n0', gpus, model, cpuMilli)]);
  return { state, node: nodeInState(state, 'n0', free, cpuLeft) };
}
