import { describe, expect, it } from 'vitest';
import { loadClusterText } from './cluster-file.ts';
import { formatIssue, type InputError, type InputIssue } from './yaml-source.ts';
import type { NodeSpec } from '../core/model/node.ts';
import { bandwidthBetween, linkBetween } from '../core/model/topology.ts';
import { NODE_SHAPES } from '../core/model/presets.ts';

/** Joins lines so that line and column numbers in the tests can be read off the array index. */
const yaml = (...lines: string[]): string => `${lines.join('\n')}\n`;

function nodes(text: string): NodeSpec[] {
  const r = loadClusterText('cluster.yaml', text);
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
}

function issues(text: string): readonly InputIssue[] {
  const r = loadClusterText('cluster.yaml', text);
  if (r.ok) throw new Error('expected an input error');
  const e: InputError = r.error;
  expect(e.code).toBe('InvalidInput');
  expect(e.message).toBe(e.issues.map(formatIssue).join('\n'));
  return e.issues;
}

const byName = (list: readonly NodeSpec[], name: string): NodeSpec => {
  const n = list.find((x) => x.name === name);
  if (n === undefined) throw new Error(`no node ${name}`);
  return n;
};

describe('loadClusterText: valid files', () => {
  const text = yaml(
    'kind: Cluster',
    'shapes:',
    '  my-l40s:',
    '    gpu: {model: L40S, count: 4, computeCapability: sm_89, memoryMiB: 49152}',
    '    cpuMilli: 64000',
    '    memoryMiB: 262144',
    '    topology: {numa: [0, 0, 1, 1], pcieSwitch: [0, 0, 1, 1]}',
    '  islands:',
    '    gpu: {model: A100-80G, count: 4}',
    '    cpuMilli: 1000',
    '    memoryMiB: 2000',
    '    maxPods: 7',
    '    topology: {nvlinkIslands: [[0, 1], [2, 3]], nvlinkGBps: 150}',
    '  smi:',
    '    gpu: {model: V100, count: 2}',
    '    cpuMilli: 1000',
    '    memoryMiB: 1000',
    '    topology:',
    '      nvidiaSmi: |',
    '        \tGPU0\tGPU1\tCPU Affinity',
    '        GPU0\t X \tNV2\t0-19',
    '        GPU1\tNV2\t X \t0-19',
    'nodes:',
    '  - {namePrefix: h100-, count: 2, shape: dgx-h100, zone: z1, block: b1, rack: r1, nvlinkDomain: nvl}',
    '  - name: l40s-0',
    '    shape: my-l40s',
    '    rack: r2',
    '    taints: [{key: gpu, effect: NoSchedule}, {key: team, value: a, effect: NoExecute}]',
    '    labels: {pool: infer}',
    '    unhealthyGpus: [3]',
    '  - {shape: islands}',
    '  - {name: v, shape: smi}',
    '  - {name: cordoned, shape: l4x8, unschedulable: true}',
  );

  it('expands groups in file order with preset and default names', () => {
    const list = nodes(text);
    expect(list.map((n) => n.name)).toEqual(['h100-0', 'h100-1', 'l40s-0', 'islands-0', 'v', 'cordoned']);
  });

  it('takes preset shapes as they are, with location and NVLink domain', () => {
    const h = byName(nodes(text), 'h100-1');
    const preset = NODE_SHAPES['dgx-h100'];
    expect(h.shape).toBe('dgx-h100');
    expect(h.gpus).toEqual(preset?.gpus);
    expect(h.topology).toBe(preset?.topology);
    expect(h.cpuMilli).toBe(preset?.cpuMilli);
    expect(h.location).toEqual({ zone: 'z1', block: 'b1', rack: 'r1', nvlinkDomain: 'nvl' });
    expect(h.unschedulable).toBe(false);
  });

  it('builds custom shapes: model, capability, memory, NUMA/PCIe lists, taints, labels, unhealthy GPUs', () => {
    const l = byName(nodes(text), 'l40s-0');
    expect(l.gpus.map((g) => [g.model, g.computeCapability, g.memoryMiB, g.healthy])).toEqual([
      ['L40S', 89, 49_152, true],
      ['L40S', 89, 49_152, true],
      ['L40S', 89, 49_152, true],
      ['L40S', 89, 49_152, false],
    ]);
    expect(l.location).toEqual({ zone: 'zone-0', block: 'block-0', rack: 'r2' });
    expect(l.taints).toEqual([
      { key: 'gpu', effect: 'NoSchedule' },
      { key: 'team', value: 'a', effect: 'NoExecute' },
    ]);
    expect(l.labels).toEqual({ pool: 'infer' });
    expect(l.maxPods).toBe(110);
    expect(linkBetween(l.topology, 0, 1)).toBe('pcie-switch');
    expect(linkBetween(l.topology, 1, 2)).toBe('cross-socket');
  });

  it('NVLink islands with their own bandwidth; pairs outside an island fall back to PCIe placement', () => {
    const n = byName(nodes(text), 'islands-0');
    expect(n.maxPods).toBe(7);
    expect(n.topology.islandOf).toEqual([0, 0, 1, 1]);
    expect([linkBetween(n.topology, 2, 3), bandwidthBetween(n.topology, 2, 3)]).toEqual(['nvlink', 150]);
    expect(linkBetween(n.topology, 1, 2)).toBe('numa');
  });

  it('imports an nvidia-smi matrix', () => {
    const v = byName(nodes(text), 'v');
    expect([linkBetween(v.topology, 0, 1), bandwidthBetween(v.topology, 0, 1)]).toEqual(['nvlink', 50]);
  });

  it('cordons nodes marked unschedulable', () => {
    expect(byName(nodes(text), 'cordoned').unschedulable).toBe(true);
  });

  it("reads allocatable resources beyond the shape (Kubernetes names and quantities), and refuses the shape's own", () => {
    const list = nodes(
      yaml('nodes:', '  - {name: ib, shape: t4x4, allocatable: {rdma/hca: 4, ephemeral-storage: 1Ti, hugepages-2Mi: "0"}}', '  - {name: plain, shape: t4x4}'),
    );
    expect(byName(list, 'ib').scalar).toEqual({ 'ephemeral-storage': 2 ** 40, 'rdma/hca': 4 });
    expect(byName(list, 'plain').scalar).toBeUndefined();
    const bad = issues(yaml('nodes:', '  - {name: ib, shape: t4x4, allocatable: {cpu: 4, rdma/hca: half}}'));
    expect(bad.map((i) => [i.field, i.message])).toEqual([
      ['nodes[0].allocatable.cpu', 'cpu comes from the shape; allocatable lists the other resources'],
      ['nodes[0].allocatable.rdma/hca', 'rdma/hca: "half" is not a quantity (e.g. 500m, 1.5, 32Gi)'],
    ]);
  });

  it('allPairs applies one class to every pair, with the NVLink figure only for NVLink classes', () => {
    const list = nodes(
      yaml(
        'shapes:',
        '  sw: {gpu: {model: H100-SXM, count: 3}, cpuMilli: 1, memoryMiB: 1, topology: {allPairs: nvswitch, nvlinkGBps: 900}}',
        '  pc: {gpu: {model: L4, count: 2}, cpuMilli: 1, memoryMiB: 1, topology: {allPairs: pcie-switch, nvlinkGBps: 900}}',
        'nodes: [{name: a, shape: sw}, {name: b, shape: pc}]',
      ),
    );
    const a = byName(list, 'a').topology;
    expect([linkBetween(a, 0, 2), bandwidthBetween(a, 0, 2)]).toEqual(['nvswitch', 900]);
    const b = byName(list, 'b').topology;
    expect([linkBetween(b, 0, 1), bandwidthBetween(b, 0, 1)]).toEqual(['pcie-switch', 16]);
  });
});

describe('loadClusterText: errors name file, line, column and field', () => {
  it('an unknown field and a wrong type', () => {
    expect(
      issues(yaml('kind: Cluster', 'nodes:', '  - name: a', '    shape: dgx-h100', '    colour: red', '  - name: b', '    shape: l4x8', '    count: three')),
    ).toEqual([
      { file: 'cluster.yaml', line: 5, column: 13, field: 'nodes[0].colour', message: 'unknown field' },
      { file: 'cluster.yaml', line: 8, column: 12, field: 'nodes[1].count', message: 'Expected integer (got "three")' },
    ]);
  });

  it('a value outside an enumeration lists the allowed values', () => {
    const [i] = issues(yaml('nodes:', '  - name: a', '    shape: l4x8', '    taints: [{key: k, effect: Sometimes}]'));
    expect(i).toEqual({
      file: 'cluster.yaml',
      line: 4,
      column: 31,
      field: 'nodes[0].taints[0].effect',
      message: '"Sometimes" is not one of "NoSchedule", "PreferNoSchedule", "NoExecute"',
    });
  });

  it('a missing required field points at its parent', () => {
    const found = issues(yaml('kind: Cluster', 'nodes:', '  - {name: a}'));
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ line: 3, column: 5, field: 'nodes[0].shape' });
  });

  it('a wrong type at the top level', () => {
    expect(issues(yaml('nodes: 5'))[0]).toMatchObject({ line: 1, column: 8, field: 'nodes' });
  });

  it('an unknown shape, naming the presets', () => {
    const [i] = issues(yaml('nodes:', '  - name: a', '    shape: dgx-h101'));
    expect(i).toMatchObject({ file: 'cluster.yaml', line: 3, column: 12, field: 'nodes[0].shape' });
    expect(i?.message).toBe('unknown shape "dgx-h101" (presets: dgx-h100, hgx-a100, a800x4, v100-hcm, nvlink-2x4, l4x8, t4x4)');
  });

  it('duplicate node names, from a prefix group or a named node', () => {
    const found = issues(
      yaml(
        'nodes:',
        '  - {name: gpu-a, shape: l4x8}',
        '  - {namePrefix: gpu-, count: 2, shape: t4x4}',
        '  - {namePrefix: gpu-, count: 3, shape: t4x4}',
        '  - {name: gpu-a, shape: l4x8}',
      ),
    );
    expect(found).toEqual([
      { file: 'cluster.yaml', line: 4, column: 18, field: 'nodes[2].namePrefix', message: 'duplicate node name "gpu-0"' },
      { file: 'cluster.yaml', line: 5, column: 12, field: 'nodes[3].name', message: 'duplicate node name "gpu-a"' },
    ]);
  });

  it('a bad compute capability in a custom shape', () => {
    const found = issues(
      yaml(
        'shapes:',
        '  my:',
        '    gpu: {model: L40S, count: 4, computeCapability: sm_x}',
        '    cpuMilli: 1000',
        '    memoryMiB: 1000',
        'nodes:',
        '  - {name: a, shape: my}',
      ),
    );
    expect(found[0]).toEqual({
      file: 'cluster.yaml',
      line: 3,
      column: 53,
      field: 'shapes.my.gpu.computeCapability',
      message: '"sm_x" is not a compute capability (use sm_90, 9.0, 9 or 90; 10 to 19 alone are ambiguous: write 12.0 or sm_120)',
    });
  });

  it('malformed YAML', () => {
    const found = issues('nodes: [ {name: a');
    expect(found.length).toBeGreaterThan(0);
    expect(found[0]).toMatchObject({ file: 'cluster.yaml', line: 1, column: 18, field: '' });
    expect(found[0]?.message).toMatch(/^YAML: /);
  });

  it('a duplicate key', () => {
    const [i] = issues(yaml('nodes:', '  - name: a', '    shape: dgx-h100', '    shape: l4x8'));
    expect(i).toMatchObject({ line: 4, column: 5 });
    expect(i?.message).toBe('YAML: Map keys must be unique');
  });

  it('cross-field rules: name with namePrefix, a named group of several, GPUs that do not exist, an NVLink domain in two racks', () => {
    const found = issues(
      yaml(
        'nodes:',
        '  - {name: a, namePrefix: b-, shape: l4x8}',
        '  - {name: c, count: 2, shape: l4x8}',
        '  - {name: d, shape: t4x4, unhealthyGpus: [1, 4]}',
        '  - {name: e, shape: l4x8, rack: r1, nvlinkDomain: nvl}',
        '  - {name: f, shape: l4x8, rack: r2, nvlinkDomain: nvl}',
      ),
    );
    expect(found.map((i) => [i.field, i.line, i.column, i.message])).toEqual([
      ['nodes[0].name', 2, 12, 'give either name or namePrefix, not both'],
      ['nodes[1].count', 3, 22, 'a named node has count 1; use namePrefix for a group'],
      ['nodes[1].name', 3, 12, 'duplicate node name "c"'],
      ['nodes[2].unhealthyGpus', 4, 43, 'GPU 4 does not exist (shape has 4)'],
      ['nodes[4].nvlinkDomain', 6, 52, 'NVLink domain "nvl" spans two racks (zone-0/block-0/r1 and zone-0/block-0/r2); a domain lives inside one rack'],
    ]);
  });

  it('custom topology lists that do not match the GPU count', () => {
    const found = issues(
      yaml(
        'shapes:',
        '  a: {gpu: {model: L4, count: 4}, cpuMilli: 1, memoryMiB: 1, topology: {numa: [0, 1]}}',
        '  b: {gpu: {model: L4, count: 2}, cpuMilli: 1, memoryMiB: 1, topology: {nvlinkIslands: [[0, 5]]}}',
        '  c:',
        '    gpu: {model: V100, count: 4}',
        '    cpuMilli: 1',
        '    memoryMiB: 1',
        '    topology:',
        '      nvidiaSmi: |',
        '        \tGPU0\tGPU1',
        '        GPU0\t X \tNV2',
        '        GPU1\tNV2\t X ',
        'nodes: [{name: x, shape: l4x8}]',
      ),
    );
    expect(found.map((i) => [i.field, i.line, i.column, i.message])).toEqual([
      ['shapes.a.topology.numa', 2, 79, 'has 2 entries for 4 GPUs'],
      ['shapes.b.topology.nvlinkIslands[0]', 3, 89, 'GPU 5 does not exist (count 2)'],
      ['shapes.c.topology.nvidiaSmi', 9, 18, 'the matrix has 2 GPUs but gpu.count is 4'],
    ]);
  });

  it('an nvidia-smi matrix that does not parse reports the parser error at the field', () => {
    const [i] = issues(
      yaml(
        'shapes:',
        '  c: {gpu: {model: V100, count: 2}, cpuMilli: 1, memoryMiB: 1, topology: {nvidiaSmi: "not a matrix"}}',
        'nodes: [{name: x, shape: l4x8}]',
      ),
    );
    expect(i).toMatchObject({ line: 2, column: 86, field: 'shapes.c.topology.nvidiaSmi' });
    expect(i?.message).toMatch(/^no header line with GPU0 found/);
  });

  it('formats an issue as file:line:column: field: message', () => {
    expect(formatIssue({ file: 'c.yaml', line: 5, column: 13, field: 'nodes[0].colour', message: 'unknown field' })).toBe(
      'c.yaml:5:13: nodes[0].colour: unknown field',
    );
    expect(formatIssue({ file: 'c.yaml', line: 1, column: 18, field: '', message: 'YAML: oops' })).toBe('c.yaml:1:18: YAML: oops');
  });
});
