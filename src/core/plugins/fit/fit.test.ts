import { describe, expect, it } from 'vitest';
import { fitFilter, fitPlugin, gpusWithFree, tolerates } from './fit.ts';
import { Reason, REASONS } from '../../framework/reasons.ts';
import type { CycleContext } from '../../framework/types.ts';
import { ClusterState, type NodeState } from '../../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../../model/presets.ts';
import { makeGpus } from '../../model/gpu.ts';
import type { NodeSpec, Taint } from '../../model/node.ts';
import { makePod } from '../../model/pod.ts';
import { seededRng } from '../../ports.ts';

function spec(shapeId: string, extra: Partial<NodeSpec> = {}): NodeSpec {
  const s = NODE_SHAPES[shapeId];
  if (s === undefined) throw new Error(`no preset ${shapeId}`);
  return {
    name: 'n',
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack: 'r' },
    labels: {},
    taints: [],
    unschedulable: false,
    ...extra,
  };
}

/** A node state, with GPUs already holding the given milli (index → used). */
function node(shapeId: string, extra: Partial<NodeSpec> = {}, used: Readonly<Record<number, number>> = {}): NodeState {
  const st = new ClusterState([spec(shapeId, extra)]);
  let k = 0;
  for (const [g, milli] of Object.entries(used))
    st.allocate({ podId: `u${k++}`, node: 'n', gpus: [Number(g)], gpuMilli: milli, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
  return st.nodes[0] as NodeState;
}

const gpu = (n: number, extra: Parameters<typeof makePod>[2] = {}, milli = 1000) =>
  makePod('p', { gpuCount: n, gpuMilli: milli, cpuMilli: 1000, memoryMiB: 1024 }, extra);
const noSchedule: Taint = { key: 'dedicated', value: 'ml', effect: 'NoSchedule' };

describe('tolerates', () => {
  it('Exists with the taint key tolerates any value; Equal needs the same value', () => {
    expect(tolerates([{ key: 'dedicated', operator: 'Exists' }], noSchedule)).toBe(true);
    expect(tolerates([{ key: 'dedicated', operator: 'Equal', value: 'ml' }], noSchedule)).toBe(true);
    expect(tolerates([{ key: 'dedicated', value: 'ml' }], noSchedule)).toBe(true); // operator defaults to Equal
    expect(tolerates([{ key: 'dedicated', operator: 'Equal', value: 'web' }], noSchedule)).toBe(false);
    expect(tolerates([{ key: 'other', operator: 'Exists' }], noSchedule)).toBe(false);
  });

  it('an empty key with Exists tolerates every taint; an empty key without Exists tolerates none', () => {
    expect(tolerates([{ operator: 'Exists' }], noSchedule)).toBe(true);
    expect(tolerates([{ value: 'ml' }], noSchedule)).toBe(false);
  });

  it('a toleration with an effect matches only that effect; without one it matches all', () => {
    expect(tolerates([{ key: 'dedicated', operator: 'Exists', effect: 'NoExecute' }], noSchedule)).toBe(false);
    expect(tolerates([{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }], noSchedule)).toBe(true);
    expect(tolerates([], noSchedule)).toBe(false);
  });

  it('a taint without a value equals a toleration without a value', () => {
    expect(tolerates([{ key: 'gpu' }], { key: 'gpu', effect: 'NoSchedule' })).toBe(true);
  });
});

describe('fitFilter, one reason at a time', () => {
  it('fits an ordinary pod on an ordinary node', () => {
    expect(fitFilter(gpu(2), node('l4x8'))).toBe(Reason.Fits);
    expect(fitFilter(makePod('cpu', {}), node('l4x8'))).toBe(Reason.Fits);
  });

  it('cordoned', () => {
    expect(fitFilter(gpu(1), node('l4x8', { unschedulable: true }))).toBe(Reason.Unschedulable);
  });

  it('taint not tolerated vs tolerated; PreferNoSchedule never blocks; NoExecute does', () => {
    const tainted = node('l4x8', { taints: [noSchedule] });
    expect(fitFilter(gpu(1), tainted)).toBe(Reason.Taint);
    expect(fitFilter(gpu(1, { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }), tainted)).toBe(Reason.Fits);
    expect(fitFilter(gpu(1), node('l4x8', { taints: [{ key: 'soft', effect: 'PreferNoSchedule' }] }))).toBe(Reason.Fits);
    expect(fitFilter(gpu(1), node('l4x8', { taints: [{ key: 'evict', effect: 'NoExecute' }] }))).toBe(Reason.Taint);
    // Every taint must be tolerated, not just one.
    const two = node('l4x8', { taints: [noSchedule, { key: 'evict', effect: 'NoExecute' }] });
    expect(fitFilter(gpu(1, { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }), two)).toBe(Reason.Taint);
  });

  it('node selector: every label must match', () => {
    const labelled = node('l4x8', { labels: { pool: 'infer', tier: 'a' } });
    expect(fitFilter(gpu(1, { nodeSelector: { pool: 'train' } }), labelled)).toBe(Reason.NodeSelector);
    expect(fitFilter(gpu(1, { nodeSelector: { pool: 'infer', zone: 'x' } }), labelled)).toBe(Reason.NodeSelector);
    expect(fitFilter(gpu(1, { nodeSelector: { pool: 'infer', tier: 'a' } }), labelled)).toBe(Reason.Fits);
  });

  it('no GPUs on the node, for GPU pods only', () => {
    const cpuNode = node('l4x8', { gpus: [] });
    expect(fitFilter(gpu(1), cpuNode)).toBe(Reason.NoGpus);
    expect(fitFilter(makePod('cpu', {}), cpuNode)).toBe(Reason.Fits);
  });

  it('GPU model not in the allowed list', () => {
    expect(fitFilter(gpu(1, { gpuModels: ['H100-SXM', 'A100-80G'] }), node('l4x8'))).toBe(Reason.GpuModel);
    expect(fitFilter(gpu(1, { gpuModels: ['H100-SXM', 'A100-80G'] }), node('hgx-a100'))).toBe(Reason.Fits);
    // A CPU-only pod is not held to GPU constraints.
    expect(fitFilter(makePod('cpu', {}, { gpuModels: ['H100-SXM'] }), node('l4x8'))).toBe(Reason.Fits);
  });

  it('compute capability below the minimum (equal is enough)', () => {
    expect(fitFilter(gpu(1, { minComputeCapability: 90 }), node('hgx-a100'))).toBe(Reason.ComputeCapability);
    expect(fitFilter(gpu(1, { minComputeCapability: 90 }), node('dgx-h100'))).toBe(Reason.Fits);
    expect(fitFilter(gpu(1, { minComputeCapability: 80 }), node('hgx-a100'))).toBe(Reason.Fits);
    expect(REASONS[Reason.ComputeCapability]?.text(gpu(1, { minComputeCapability: 90 }))).toBe('GPU model not allowed (needs sm_90)');
  });

  it('GPU memory per device too small (unknown device memory is not held against the pod)', () => {
    const wants = (mib: number) => makePod('p', { gpuCount: 1, gpuMilli: 500, gpuMemoryMiB: mib });
    expect(fitFilter(wants(30_000), node('l4x8'))).toBe(Reason.GpuMemory);
    expect(fitFilter(wants(24_576), node('l4x8'))).toBe(Reason.Fits);
    expect(fitFilter(wants(0), node('l4x8'))).toBe(Reason.Fits);
    expect(fitFilter(wants(30_000), node('l4x8', { gpus: makeGpus(8, 'G1') }))).toBe(Reason.Fits);
  });

  it('too many pods', () => {
    const full = node('l4x8', { maxPods: 2 }, { 0: 1000, 1: 1000 });
    expect(fitFilter(gpu(1), full)).toBe(Reason.TooManyPods);
    expect(fitFilter(gpu(1), node('l4x8', { maxPods: 2 }, { 0: 1000 }))).toBe(Reason.Fits);
  });

  it('cpu and memory, with an exact fit allowed', () => {
    expect(fitFilter(makePod('p', { cpuMilli: 96_001 }), node('l4x8'))).toBe(Reason.Cpu);
    expect(fitFilter(makePod('p', { cpuMilli: 96_000 }), node('l4x8'))).toBe(Reason.Fits);
    expect(fitFilter(makePod('p', { memoryMiB: 393_217 }), node('l4x8'))).toBe(Reason.Memory);
    expect(fitFilter(makePod('p', { memoryMiB: 393_216 }), node('l4x8'))).toBe(Reason.Fits);
    const st = new ClusterState([spec('l4x8')]);
    st.allocate({ podId: 'big', node: 'n', gpus: [], gpuMilli: 0, cpuMilli: 90_000, memoryMiB: 390_000, priority: 0, queue: 'q' });
    expect(fitFilter(makePod('p', { cpuMilli: 6001 }), st.nodes[0] as NodeState)).toBe(Reason.Cpu);
    expect(fitFilter(makePod('p', { cpuMilli: 6000, memoryMiB: 3217 }), st.nodes[0] as NodeState)).toBe(Reason.Memory);
    expect(fitFilter(makePod('p', { cpuMilli: 6000, memoryMiB: 3216 }), st.nodes[0] as NodeState)).toBe(Reason.Fits);
  });

  it('insufficient GPUs: too few fully free devices, or more devices than the node has', () => {
    const busy = node('t4x4', {}, { 0: 1000, 1: 1 });
    expect(fitFilter(gpu(3), busy)).toBe(Reason.Gpu); // only 2, 3 are whole
    expect(fitFilter(gpu(2), busy)).toBe(Reason.Fits);
    expect(fitFilter(gpu(5), node('t4x4'))).toBe(Reason.TooFewGpus);
  });

  it('fractional: fits on a partly used GPU with enough left; a whole GPU does not', () => {
    const partly = node('t4x4', {}, { 0: 600, 1: 600, 2: 600, 3: 700 });
    expect(fitFilter(gpu(1, {}, 400), partly)).toBe(Reason.Fits);
    expect(fitFilter(gpu(1, {}, 401), partly)).toBe(Reason.Gpu);
    expect(fitFilter(gpu(1), partly)).toBe(Reason.Gpu);
    expect(gpusWithFree(partly, 400)).toBe(3);
    expect(gpusWithFree(partly, 300)).toBe(4);
  });

  it('unhealthy GPUs: fewer usable devices than requested on a node that has enough devices', () => {
    const sick = node('t4x4', { gpus: makeGpus(4, 'T4').map((g) => (g.index < 2 ? { ...g, healthy: false } : g)) });
    expect(fitFilter(gpu(3), sick)).toBe(Reason.GpuUnhealthy);
    expect(fitFilter(gpu(2), sick)).toBe(Reason.Fits);
    expect(gpusWithFree(sick, 1000)).toBe(2);
    const dead = node('t4x4', { gpus: makeGpus(4, 'T4', { healthy: false }) });
    expect(fitFilter(gpu(1, {}, 100), dead)).toBe(Reason.GpuUnhealthy);
    expect(fitFilter(makePod('cpu', {}), dead)).toBe(Reason.Fits);
  });
});

describe('fitFilter, precedence when several reasons apply', () => {
  const everything = { unschedulable: true, taints: [noSchedule], labels: {} };
  const pickyPod = gpu(8, { nodeSelector: { pool: 'x' }, gpuModels: ['H100-SXM'], minComputeCapability: 90 });

  it('follows the documented order: cordoned → taint → selector → no GPUs → model → capability → GPU memory → unhealthy → pods → cpu → memory → GPUs', () => {
    expect(fitFilter(pickyPod, node('l4x8', everything))).toBe(Reason.Unschedulable);
    expect(fitFilter(pickyPod, node('l4x8', { ...everything, unschedulable: false }))).toBe(Reason.Taint);
    expect(fitFilter(pickyPod, node('l4x8'))).toBe(Reason.NodeSelector);
    expect(fitFilter(gpu(1, { gpuModels: ['H100-SXM'] }), node('l4x8', { gpus: [] }))).toBe(Reason.NoGpus);
    expect(fitFilter(gpu(1, { gpuModels: ['H100-SXM'], minComputeCapability: 90 }), node('l4x8'))).toBe(Reason.GpuModel);
    const bigMem = makePod('m', { gpuCount: 1, gpuMemoryMiB: 100_000 }, { minComputeCapability: 90 });
    expect(fitFilter(bigMem, node('l4x8'))).toBe(Reason.ComputeCapability);
    const sickL4 = { gpus: makeGpus(8, 'L4', { healthy: false }) };
    expect(fitFilter(makePod('m', { gpuCount: 1, gpuMemoryMiB: 100_000 }), node('l4x8', sickL4))).toBe(Reason.GpuMemory);
    // Unhealthy devices before pod count: a node that cannot offer the devices says so.
    expect(fitFilter(gpu(1), node('l4x8', { ...sickL4, maxPods: 0 }))).toBe(Reason.GpuUnhealthy);
    expect(fitFilter(makePod('p', { gpuCount: 1, cpuMilli: 200_000 }), node('l4x8', { maxPods: 0 }))).toBe(Reason.TooManyPods);
    expect(fitFilter(makePod('p', { gpuCount: 1, cpuMilli: 200_000, memoryMiB: 900_000 }), node('l4x8'))).toBe(Reason.Cpu);
    const allBusy = { 0: 1000, 1: 1000, 2: 1000, 3: 1000, 4: 1000, 5: 1000, 6: 1000, 7: 1000 };
    expect(fitFilter(makePod('p', { gpuCount: 1, memoryMiB: 900_000 }), node('l4x8', {}, allBusy))).toBe(Reason.Memory);
    expect(fitFilter(makePod('p', { gpuCount: 1 }), node('l4x8', {}, allBusy))).toBe(Reason.Gpu);
  });
});

describe('fitFilter, kube-scheduler per-node plugins', () => {
  const affinity = (zone: string) => ({ nodeAffinity: { required: [{ matchExpressions: [{ key: 'zone', operator: 'In' as const, values: [zone] }] }] } });

  it('NodeUnschedulable: a cordoned node takes a pod that tolerates node.kubernetes.io/unschedulable:NoSchedule', () => {
    const cordoned = node('l4x8', { unschedulable: true });
    expect(
      fitFilter(makePod('p', {}, { tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }] }), cordoned),
    ).toBe(Reason.Fits);
    expect(fitFilter(makePod('p', {}, { tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoExecute' }] }), cordoned)).toBe(
      Reason.Unschedulable,
    );
    expect(fitFilter(makePod('p', {}, { tolerations: [{ operator: 'Exists' }] }), cordoned)).toBe(Reason.Fits);
  });

  it('NoExecute taints filter like NoSchedule; PreferNoSchedule ones do not', () => {
    expect(fitFilter(makePod('p', {}), node('l4x8', { taints: [{ key: 'm', effect: 'NoExecute' }] }))).toBe(Reason.Taint);
    expect(fitFilter(makePod('p', {}), node('l4x8', { taints: [{ key: 'm', effect: 'PreferNoSchedule' }] }))).toBe(Reason.Fits);
  });

  it('nodeSelector and required node affinity both apply', () => {
    const n = node('l4x8', { labels: { zone: 'a', pool: 'x' } });
    expect(fitFilter(makePod('p', {}, affinity('a')), n)).toBe(Reason.Fits);
    expect(fitFilter(makePod('p', {}, affinity('b')), n)).toBe(Reason.NodeAffinity);
    expect(fitFilter(makePod('p', {}, { ...affinity('a'), nodeSelector: { pool: 'y' } }), n)).toBe(Reason.NodeSelector);
    expect(fitFilter(makePod('p', {}, { ...affinity('b'), nodeSelector: { pool: 'x' } }), n)).toBe(Reason.NodeAffinity);
  });

  it('NodePorts: a host port used on the node (same protocol, overlapping address) refuses the pod', () => {
    const st = new ClusterState([spec('l4x8')]);
    st.allocate({
      podId: 'web',
      node: 'n',
      gpus: [],
      gpuMilli: 0,
      cpuMilli: 0,
      memoryMiB: 0,
      priority: 0,
      queue: 'q',
      hostPorts: [{ port: 80, protocol: 'TCP', ip: '0.0.0.0' }],
    });
    const n = st.nodes[0] as NodeState;
    expect(fitFilter(makePod('p', {}, { hostPorts: [{ port: 80, protocol: 'TCP', ip: '10.0.0.1' }] }), n)).toBe(Reason.NodePorts);
    expect(fitFilter(makePod('p', {}, { hostPorts: [{ port: 80, protocol: 'UDP', ip: '0.0.0.0' }] }), n)).toBe(Reason.Fits);
    const v = n.version;
    st.release('web');
    expect(n.version).toBe(v + 1); // score indices re-evaluate the node
    expect(fitFilter(makePod('p', {}, { hostPorts: [{ port: 80, protocol: 'TCP', ip: '10.0.0.1' }] }), n)).toBe(Reason.Fits);
  });

  it('NodeResourcesFit for every resource: extended, hugepages and ephemeral-storage against allocatable minus used', () => {
    const st = new ClusterState([spec('l4x8', { scalar: { 'ephemeral-storage': 100, 'rdma/hca': 2 } })]);
    const n = st.nodes[0] as NodeState;
    const want = (scalar: Record<string, number>) => makePod('p', { scalar });
    expect(fitFilter(want({ 'rdma/hca': 2, 'ephemeral-storage': 100 }), n)).toBe(Reason.Fits);
    expect(fitFilter(want({ 'rdma/hca': 3 }), n)).toBe(Reason.InsufficientResource);
    expect(fitFilter(want({ 'hugepages-2Mi': 1 }), n)).toBe(Reason.InsufficientResource); // not on the node at all
    expect(REASONS[Reason.InsufficientResource]?.detail?.(want({ 'hugepages-2Mi': 1 }), n)).toBe('Insufficient hugepages-2Mi');
    expect(fitFilter(want({ 'hugepages-2Mi': 0 }), n)).toBe(Reason.Fits); // zero requests are dropped
    st.allocate({ podId: 'x', node: 'n', gpus: [], gpuMilli: 0, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q', scalar: { 'rdma/hca': 1 } });
    expect(fitFilter(want({ 'rdma/hca': 2 }), n)).toBe(Reason.InsufficientResource);
    expect(REASONS[Reason.InsufficientResource]?.detail?.(want({ 'rdma/hca': 2 }), n)).toBe('Insufficient rdma/hca');
    st.release('x');
    expect(fitFilter(want({ 'rdma/hca': 2 }), n)).toBe(Reason.Fits);
    // Which one the explanation names when several are short: ephemeral-storage first, as kube checks it.
    expect(REASONS[Reason.InsufficientResource]?.detail?.(want({ 'amd.com/gpu': 1, 'ephemeral-storage': 101 }), n)).toBe('Insufficient ephemeral-storage');
  });

  it('order: selector → affinity → GPU static checks → ports → pods → cpu → memory → other resources → GPUs', () => {
    const st = new ClusterState([spec('l4x8', { labels: { zone: 'a' } })]);
    st.allocate({
      podId: 'web',
      node: 'n',
      gpus: [],
      gpuMilli: 0,
      cpuMilli: 0,
      memoryMiB: 0,
      priority: 0,
      queue: 'q',
      hostPorts: [{ port: 80, protocol: 'TCP', ip: '0.0.0.0' }],
    });
    const n = st.nodes[0] as NodeState;
    const all = { hostPorts: [{ port: 80, protocol: 'TCP' as const, ip: '0.0.0.0' }] };
    expect(fitFilter(makePod('p', { gpuCount: 1, cpuMilli: 10_000_000, scalar: { x: 1 } }, { ...affinity('b'), ...all, gpuModels: ['H100-SXM'] }), n)).toBe(
      Reason.NodeAffinity,
    );
    expect(fitFilter(makePod('p', { gpuCount: 1, cpuMilli: 10_000_000, scalar: { x: 1 } }, { ...all, gpuModels: ['H100-SXM'] }), n)).toBe(Reason.GpuModel);
    expect(fitFilter(makePod('p', { cpuMilli: 10_000_000, scalar: { x: 1 } }, all), n)).toBe(Reason.NodePorts);
    expect(fitFilter(makePod('p', { cpuMilli: 10_000_000, scalar: { x: 1 } }), n)).toBe(Reason.Cpu);
    expect(fitFilter(makePod('p', { memoryMiB: 10_000_000, scalar: { x: 1 } }), n)).toBe(Reason.Memory);
    expect(fitFilter(makePod('p', { gpuCount: 9, scalar: { x: 1 } }), n)).toBe(Reason.TooFewGpus);
  });
});

describe('fit preFilter', () => {
  const ctx: CycleContext = { state: new ClusterState([]), rng: seededRng(1) };
  const preFilter = fitPlugin().preFilter;
  if (preFilter === undefined) throw new Error('fit has a preFilter');

  it('accepts whole and single fractional GPU requests', () => {
    expect(preFilter(gpu(4), ctx)).toEqual({ code: 'Success' });
    expect(preFilter(gpu(1, {}, 250), ctx)).toEqual({ code: 'Success' });
    expect(preFilter(makePod('cpu', {}), ctx)).toEqual({ code: 'Success' });
  });

  it('rejects a fractional share of several devices', () => {
    expect(preFilter(gpu(2, {}, 500), ctx)).toEqual({
      code: 'UnschedulableAndUnresolvable',
      plugin: 'fit',
      reasons: ['a fractional GPU request (500 milli) is only allowed for one device, not 2'],
    });
  });

  it('rejects more than one device worth of milli, and negative requests, listing every problem', () => {
    expect(preFilter(gpu(1, {}, 1500), ctx).reasons).toEqual(['gpuMilli 1500 exceeds one device (1000)']);
    expect(preFilter(makePod('n', { cpuMilli: -1 }), ctx).reasons).toEqual(['negative request']);
    expect(preFilter(makePod('n', { memoryMiB: -1 }), ctx).reasons).toEqual(['negative request']);
    const r = preFilter(makePod('n', { gpuCount: 2, gpuMilli: 1500, cpuMilli: -5 }), ctx);
    expect(r.code).toBe('UnschedulableAndUnresolvable');
    expect(r.reasons).toEqual(['gpuMilli 1500 exceeds one device (1000)', 'negative request']);
  });
});
