import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { V1Node } from '@kubernetes/client-node';
import { linkBetween, bandwidthBetween } from '../core/model/topology.ts';
import { ANNOTATION, GPU_RESOURCE, LABEL } from '../api/wire.ts';
import { nodeFromK8s } from '../kube/cache/labels.ts';
import { formatSmiMatrix, parseNvidiaSmiTopo, readSmiMatrix, topologyFromMatrix } from '../formats/nvidia-smi-topo.ts';
import { nodePatch } from './agent.ts';
import { deriveReading, labelValue, type NodeReading } from './reading.ts';
import { parseSmiQueryXml } from './smi-query.ts';

/** Real captured outputs; where each comes from: testdata/README.md. */
const data = (f: string): string => readFileSync(new URL(`./testdata/${f}`, import.meta.url), 'utf8');
const A5000 = data('smi-q-x-dual-rtx-a5000.xml');
const T4 = data('smi-q-x-tesla-t4.xml');
const A100_MIG = data('smi-q-x-a100-sxm4-mig.xml');

const matrix = (f: string) => {
  const m = readSmiMatrix(data(f));
  if (!m.ok) throw new Error(m.error);
  return m.value;
};
const groupsOf = (of: readonly number[]): number[][] => [...new Map(of.map((g) => [g, of.flatMap((x, i) => (x === g ? [i] : []))])).values()];

describe('nvidia-smi topo -m, real captures of several machine types', () => {
  it('HGX H100 (NVSwitch, NV18 on every pair, 10 NICs): one NVLink island of 8 at 450 GB/s, NUMA 0-3 / 4-7 from the column', () => {
    const t = topologyFromMatrix(matrix('topo-hgx-h100.txt'));
    expect(t.gpuCount).toBe(8);
    expect(groupsOf(t.islandOf)).toEqual([[0, 1, 2, 3, 4, 5, 6, 7]]);
    expect(groupsOf(t.numaOf)).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
    ]);
    expect(linkBetween(t, 0, 7)).toBe('nvswitch');
    expect(bandwidthBetween(t, 0, 7)).toBe(450);
  });

  it('4×L40S on PCIe with two NICs: no NVLink, pairs on the same socket (NODE), SYS across; NUMA 0 and 1', () => {
    const t = topologyFromMatrix(matrix('topo-4x-l40s-pcie.txt'));
    expect(groupsOf(t.islandOf)).toEqual([[0], [1], [2], [3]]);
    expect(groupsOf(t.numaOf)).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(groupsOf(t.pcieSwitchOf)).toEqual([[0], [1], [2], [3]]);
    expect([linkBetween(t, 0, 1), linkBetween(t, 2, 3), linkBetween(t, 1, 2)]).toEqual(['numa', 'numa', 'cross-socket']);
  });

  it('a 2-GPU consumer box (2×RTX 5090 behind one host bridge, PHB)', () => {
    const t = topologyFromMatrix(matrix('topo-2x-rtx5090-phb.txt'));
    expect(t.gpuCount).toBe(2);
    expect(linkBetween(t, 0, 1)).toBe('numa');
    expect(t.numaOf).toEqual([0, 0]);
  });

  it('2×RTX 3090 on two sockets where nvidia-smi prints NUMA Affinity N/A for GPU0: sockets from the SYS cell', () => {
    const m = matrix('topo-2x-rtx3090-sys-numa-na.txt');
    expect(m.numa).toEqual([-1, 1]);
    const t = topologyFromMatrix(m);
    expect(linkBetween(t, 0, 1)).toBe('cross-socket');
    expect(groupsOf(t.numaOf)).toEqual([[0], [1]]);
  });

  it('5×RTX 4090 across two sockets, pairs under host bridges (PHB) and NODE between them', () => {
    const t = topologyFromMatrix(matrix('topo-5x-rtx4090-mixed.txt'));
    expect(t.numaOf).toEqual([1, 0, 0, 0, 0]);
    expect([linkBetween(t, 1, 2), linkBetween(t, 1, 3), linkBetween(t, 0, 4)]).toEqual(['numa', 'numa', 'cross-socket']);
  });

  it('a single Tesla P4 with NUMA Affinity N/A', () => {
    const m = matrix('topo-1x-tesla-p4-numa-na.txt');
    expect(m.gpuCount).toBe(1);
    expect(m.numa).toEqual([-1]);
    expect(m.cpuAffinity).toEqual(['0-7']);
  });

  it('a DGX A100 capture cut off after GPU4 is rejected with the reason', () => {
    expect(readSmiMatrix(data('topo-dgx-a100-truncated.txt'))).toEqual({ ok: false, error: 'header lists 8 GPUs but 5 GPU rows follow' });
  });

  it('the matrix the agent writes reads back as the same topology (for every capture)', () => {
    for (const f of [
      'topo-hgx-h100.txt',
      'topo-4x-l40s-pcie.txt',
      'topo-2x-rtx5090-phb.txt',
      'topo-2x-rtx3090-sys-numa-na.txt',
      'topo-5x-rtx4090-mixed.txt',
      'topo-1x-tesla-p4-numa-na.txt',
    ]) {
      const m = matrix(f);
      const back = parseNvidiaSmiTopo(formatSmiMatrix(m));
      expect(back, f).toEqual({ ok: true, value: topologyFromMatrix(m) });
    }
  });
});

describe('nvidia-smi -q -x, real captures', () => {
  it('2×RTX A5000 (driver 590, DTD v13): minor numbers are not the indices; bus ids in sysfs form', () => {
    const q = parseSmiQueryXml(A5000);
    if (!q.ok) throw new Error(q.error);
    expect(q.value.attachedGpus).toBe(2);
    expect(q.value.gpus.map((g) => [g.index, g.minorNumber, g.pciBusId, g.memoryMiB, g.architecture, g.migEnabled, g.unhealthyReasons.length])).toEqual([
      [0, 1, '0000:81:00.0', 24564, 'Ampere', false, 0],
      [1, 0, '0000:c1:00.0', 24564, 'Ampere', false, 0],
    ]);
    expect(q.value.gpus[0]?.uuid).toBe('GPU-12345678-aaaa-bbbb-cccc-0123456789ab');
  });

  it('Tesla T4 (driver 515, DTD v11, an AWS pass-through device)', () => {
    const q = parseSmiQueryXml(T4);
    if (!q.ok) throw new Error(q.error);
    expect(q.value.gpus.map((g) => [g.product, g.minorNumber, g.pciBusId, g.memoryMiB, g.unhealthyReasons])).toEqual([
      ['Tesla T4', 0, '0000:00:1e.0', 15360, []],
    ]);
  });

  it('A100-SXM4-80GB in MIG mode (4 instances): reported, and not handed out whole', () => {
    const q = parseSmiQueryXml(A100_MIG);
    if (!q.ok) throw new Error(q.error);
    expect(q.value.gpus[0]?.migEnabled).toBe(true);
    expect(q.value.gpus[0]?.unhealthyReasons).toEqual(['MIG mode is enabled (MIG devices are not whole GPUs)']);
  });

  it('uncorrectable ECC errors and a pending row remap make a device unhealthy (the A5000 capture with counters raised)', () => {
    const second = A5000.indexOf('<gpu id="00000000:C1:00.0">');
    const broken =
      A5000.slice(0, second) +
      A5000.slice(second)
        .replace('<dram_uncorrectable>N/A</dram_uncorrectable>', '<dram_uncorrectable>3</dram_uncorrectable>')
        .replace('<remapped_row_pending>No</remapped_row_pending>', '<remapped_row_pending>Yes</remapped_row_pending>');
    const q = parseSmiQueryXml(broken);
    if (!q.ok) throw new Error(q.error);
    expect(q.value.gpus.map((g) => g.unhealthyReasons)).toEqual([[], ['3 volatile uncorrectable ECC error(s)', 'row remapping pending (needs a reset)']]);
  });

  it('garbage, truncated output and the wrong document are errors naming the place', () => {
    expect(parseSmiQueryXml('NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.')).toEqual({
      ok: false,
      error: expect.stringMatching(/not well-formed XML at line 1, column 1/),
    });
    expect(parseSmiQueryXml(A5000.slice(0, 5000))).toEqual({ ok: false, error: expect.stringMatching(/line \d+, column \d+: .*\(truncated output\?\)/) });
    expect(parseSmiQueryXml('<?xml version="1.0"?><html><body/></html>')).toEqual({ ok: false, error: expect.stringMatching(/no <nvidia_smi_log>/) });
    expect(parseSmiQueryXml('')).toEqual({ ok: false, error: 'nvidia-smi -q -x printed nothing' });
  });
});

describe('deriveReading: the labels and annotations of a node', () => {
  const read = (query: string, topo: string, numa: Record<string, number> = {}): NodeReading => {
    const r = deriveReading({ query, topo: data(topo), sysfsNuma: new Map(Object.entries(numa)) });
    if (!r.ok) throw new Error(r.error);
    return r.value;
  };

  it('a 2-GPU workstation (the A5000 -q capture with a 2-GPU PHB topo capture): GFD-style product, count and memory; no guessed compute capability for Ampere', () => {
    const r = read(A5000, 'topo-2x-rtx5090-phb.txt');
    expect(r.labels).toEqual({ [LABEL.gfdProduct]: 'NVIDIA-RTX-A5000', [LABEL.gfdCount]: '2', [LABEL.gfdMemory]: '24564' });
    expect(r.annotations[ANNOTATION.gpuTopology]).toBe('\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPHB\t0-63\t0\nGPU1\tPHB\t X \t0-63\t0\n');
    expect(r.annotations[ANNOTATION.unhealthyGpus]).toBeUndefined();
    expect(r.gpus.map((g) => [g.index, g.minorNumber, g.numaNode, g.healthy])).toEqual([
      [0, 1, 0, true],
      [1, 0, 0, true],
    ]);
  });

  it('sysfs fills the NUMA node nvidia-smi prints as N/A', () => {
    const r = read(A5000, 'topo-2x-rtx3090-sys-numa-na.txt', { '0000:81:00.0': 0, '0000:c1:00.0': 1 });
    expect(r.gpus.map((g) => g.numaNode)).toEqual([0, 1]);
    expect(r.annotations[ANNOTATION.gpuTopology]).toContain('GPU0\t X \tSYS\t0-7,16-23\t0\n');
  });

  it('Tesla T4: SITS model T4 with compute capability 7.5; the NUMA node from sysfs', () => {
    const r = read(T4, 'topo-1x-tesla-p4-numa-na.txt', { '0000:00:1e.0': 0 });
    expect(r.labels).toEqual({
      [LABEL.gfdProduct]: 'Tesla-T4',
      [LABEL.gfdCount]: '1',
      [LABEL.gfdMemory]: '15360',
      [LABEL.gpuModel]: 'T4',
      [LABEL.gfdMajor]: '7',
      [LABEL.gfdMinor]: '5',
    });
    expect(r.gpus[0]?.numaNode).toBe(0);
  });

  it('inconsistent or cut sources are errors: nothing is derived', () => {
    expect(deriveReading({ query: A100_MIG, topo: data('topo-1x-tesla-p4-numa-na.txt'), sysfsNuma: new Map() })).toEqual({
      ok: false,
      error: 'nvidia-smi -q -x: <attached_gpus> says 4 but 1 <gpu> element(s) follow (truncated output?)',
    });
    expect(deriveReading({ query: A5000, topo: data('topo-hgx-h100.txt'), sysfsNuma: new Map() })).toEqual({
      ok: false,
      error: 'nvidia-smi topo -m shows 8 GPUs, nvidia-smi -q -x 2',
    });
    expect(deriveReading({ query: A5000, topo: 'No devices were found', sysfsNuma: new Map() })).toEqual({
      ok: false,
      error: expect.stringMatching(/^nvidia-smi topo -m: no header line/),
    });
  });

  it('SITS reads back what the agent writes: model, memory, topology and unhealthy devices', () => {
    const second = A5000.indexOf('<gpu id="00000000:C1:00.0">');
    const broken =
      A5000.slice(0, second) +
      A5000.slice(second).replace('<remapped_row_failure>No</remapped_row_failure>', '<remapped_row_failure>Yes</remapped_row_failure>');
    const r = read(broken, 'topo-2x-rtx3090-sys-numa-na.txt', { '0000:81:00.0': 0 });
    const node: V1Node = {
      metadata: { name: 'ws-1', labels: { ...r.labels }, annotations: { ...r.annotations } },
      status: { allocatable: { cpu: '32', memory: '128Gi', [GPU_RESOURCE]: '2' } },
    };
    const spec = nodeFromK8s(node);
    if (!spec.ok) throw new Error(spec.error);
    expect(spec.value.topology).toEqual(r.topology);
    expect(spec.value.gpus.map((g) => [g.memoryMiB, g.healthy])).toEqual([
      [24564, true],
      [24564, false],
    ]);
    expect(r.annotations[ANNOTATION.unhealthyGpus]).toBe('1');
  });

  it('labelValue turns product names into valid label values', () => {
    expect(labelValue('NVIDIA A100-SXM4-80GB')).toBe('NVIDIA-A100-SXM4-80GB');
    expect(labelValue(' (weird) name! ')).toBe('weird-name');
    expect(labelValue('x'.repeat(80))).toHaveLength(63);
  });
});

describe('nodePatch: only what changed, and removal of keys no longer known', () => {
  const r = (): NodeReading => {
    const x = deriveReading({ query: T4, topo: data('topo-1x-tesla-p4-numa-na.txt'), sysfsNuma: new Map() });
    if (!x.ok) throw new Error(x.error);
    return x.value;
  };
  it('a node without labels gets all of them; the same node afterwards gets no patch', () => {
    const reading = r();
    const p = nodePatch({ metadata: { name: 'n' } }, reading);
    expect(p?.metadata.labels).toEqual(reading.labels);
    expect(p?.metadata.annotations).toEqual(reading.annotations);
    expect(
      nodePatch({ metadata: { name: 'n', labels: { ...reading.labels, other: 'kept' }, annotations: { ...reading.annotations } } }, reading),
    ).toBeUndefined();
  });
  it('a stale unhealthy-gpus annotation is removed with null; keys the agent does not own are never touched', () => {
    const reading = r();
    const p = nodePatch(
      {
        metadata: {
          name: 'n',
          labels: { ...reading.labels, [LABEL.gfdCount]: '2', team: 'a' },
          annotations: { ...reading.annotations, [ANNOTATION.unhealthyGpus]: '0', [ANNOTATION.nodeShape]: 't4x4' },
        },
      },
      reading,
    );
    expect(p).toEqual({ metadata: { labels: { [LABEL.gfdCount]: '1' }, annotations: { [ANNOTATION.unhealthyGpus]: null } } });
  });
});
