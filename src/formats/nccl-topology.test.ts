import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE_SHAPES } from '../core/model/presets.ts';
import type { NicPlacement, NodeGpuTopology } from '../core/model/topology.ts';
import {
  formatNics,
  ncclTopologyXml,
  nicPlacements,
  parseBusIds,
  parseNics,
  readNcclTopology,
  relationInFile,
  sameRelation,
  type NcclTopology,
} from './nccl-topology.ts';
import { readSmiMatrix, readSmiNics, topologyFromMatrix, type SmiNic } from './nvidia-smi-topo.ts';

const data = (f: string): string => readFileSync(new URL(`../node/testdata/${f}`, import.meta.url), 'utf8');
const busIds = (n: number): string[] => Array.from({ length: n }, (_, i) => `0000:${(0x07 + 0x10 * i).toString(16).padStart(2, '0')}:00.0`);

/** Every subset of 0..n-1 with at least one member (n ≤ 8: 255 subsets). */
const subsets = (n: number): number[][] =>
  Array.from({ length: 2 ** n - 1 }, (_, m) => Array.from({ length: n }, (_, i) => i).filter((i) => ((m + 1) >> i) & 1));

function parsed(xml: string): NcclTopology {
  const r = readNcclTopology(xml);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** The file for `gpus` against the matrix: the same GPUs (by bus id), and every pair related as nvidia-smi says. */
function checkAgainstSmi(
  cells: readonly (readonly string[])[],
  t: NodeGpuTopology,
  gpus: number[],
  nics: readonly NicPlacement[] = [],
  smiNics: readonly SmiNic[] = [],
): NcclTopology {
  const ids = busIds(t.gpuCount);
  const r = ncclTopologyXml({ topology: t, busIds: ids, gpus, sm: 90, nics });
  if (!r.ok) throw new Error(r.error);
  const file = parsed(r.value);
  expect(file.gpus.map((g) => g.busId).sort()).toEqual(gpus.map((g) => ids[g]).sort());
  const byBus = new Map(file.gpus.map((g) => [g.busId, g]));
  for (const a of gpus) {
    for (const b of gpus) {
      if (a === b) continue;
      const rel = relationInFile(byBus.get(ids[a] as string) as never, byBus.get(ids[b] as string) as never);
      const smi = cells[a]?.[b] as string;
      expect(sameRelation(rel, smi), `GPU${a}–GPU${b} of {${gpus.join(',')}}: file ${rel}, nvidia-smi ${smi}`).toBe(true);
    }
  }
  for (const nic of file.nics) {
    const row = smiNics.find((n) => n.name === nic.name);
    expect(row, nic.name).toBeDefined();
    for (const g of gpus) {
      const rel = relationInFile(nic, byBus.get(ids[g] as string) as never);
      const smi = row?.toGpu[g] as string;
      // The one thing a file cannot say: two devices the NUMA column puts on one socket that nvidia-smi still calls
      // SYS (the HGX H100 capture: each GPU+NIC pair on its own root complex). The file then says NODE; NCCL still
      // picks the PIX NIC first, so only the ranking of the remote NICs differs.
      if (rel === 'NODE' && smi === 'SYS') expect(nic.numa, `${nic.name}–GPU${g}`).toBe(t.numaOf[g]);
      else expect(sameRelation(rel, smi), `${nic.name}–GPU${g}: file ${rel}, nvidia-smi ${smi}`).toBe(true);
    }
  }
  return file;
}

describe('NCCL topology file, checked against real `nvidia-smi topo -m` outputs', () => {
  for (const f of ['topo-hgx-h100.txt', 'topo-4x-l40s-pcie.txt', 'topo-2x-rtx5090-phb.txt', 'topo-2x-rtx3090-sys-numa-na.txt', 'topo-5x-rtx4090-mixed.txt']) {
    it(`${f}: every subset of GPUs a pod could get`, () => {
      const text = data(f);
      const m = readSmiMatrix(text);
      if (!m.ok) throw new Error(m.error);
      const t = topologyFromMatrix(m.value);
      const smiNics = readSmiNics(text, t.gpuCount);
      const nics = nicPlacements(smiNics, t.numaOf);
      for (const gpus of subsets(t.gpuCount)) checkAgainstSmi(m.value.cells, t, gpus, nics, smiNics);
    });
  }

  it('the NVSwitch board: one fabric link per GPU with NVLink count 18 (NV18), no PCIe bridges needed', () => {
    const m = readSmiMatrix(data('topo-hgx-h100.txt'));
    if (!m.ok) throw new Error(m.error);
    const t = topologyFromMatrix(m.value);
    const file = checkAgainstSmi(m.value.cells, t, [0, 1, 4, 5]);
    for (const g of file.gpus) expect(g.nvlinks).toEqual([{ target: 'fffe:ff:00.0', count: 18, tclass: '0x068000' }]);
    expect(file.gpus.map((g) => g.numa)).toEqual([0, 0, 1, 1]);
  });

  it('the L40S server: its two named NICs sit on socket 1; GPUs there get them, GPUs on socket 0 none', () => {
    const text = data('topo-4x-l40s-pcie.txt');
    const m = readSmiMatrix(text);
    if (!m.ok) throw new Error(m.error);
    const t = topologyFromMatrix(m.value);
    const smiNics = readSmiNics(text, 4);
    expect(smiNics.map((n) => n.name)).toEqual(['mlx5_0', 'mlx5_1']);
    const nics = nicPlacements(smiNics, t.numaOf);
    expect(formatNics(nics)).toBe('mlx5_0@1,mlx5_1@1');
    expect(checkAgainstSmi(m.value.cells, t, [2, 3], nics, smiNics).nics.map((n) => n.name)).toEqual(['mlx5_0', 'mlx5_1']);
    expect(checkAgainstSmi(m.value.cells, t, [0, 1], nics, smiNics).nics).toEqual([]);
  });

  it('a NIC under a GPU’s PCIe switch shares its bridge (PIX) and is preferred over NUMA-local ones', () => {
    // The HGX capture lost its NIC legend; the names are given here, the rows are as captured (NIC0 PIX to GPU0).
    const text = `${data('topo-hgx-h100.txt')}\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n  NIC2: mlx5_2\n`;
    const m = readSmiMatrix(text);
    if (!m.ok) throw new Error(m.error);
    const t = topologyFromMatrix(m.value);
    const smiNics = readSmiNics(text, 8);
    const nics = nicPlacements(smiNics, t.numaOf);
    expect(nics).toEqual([
      { name: 'mlx5_0', numa: 0, nearGpu: 0 },
      { name: 'mlx5_1', numa: 0, nearGpu: 1 },
      { name: 'mlx5_2', numa: 0, nearGpu: 2 },
    ]);
    const file = checkAgainstSmi(m.value.cells, t, [0, 1], nics, smiNics);
    expect(file.nics.map((n) => n.name)).toEqual(['mlx5_0', 'mlx5_1']);
    expect(file.nics.every((n) => n.bridge !== undefined)).toBe(true);
  });
});

describe('NCCL topology file for preset shapes', () => {
  const cell = (t: NodeGpuTopology, a: number, b: number): string => {
    const cls = t.links[a * t.gpuCount + b];
    if (cls === 'nvswitch' || cls === 'nvlink') return `NV${Math.round((t.bandwidthGBps[a * t.gpuCount + b] ?? 0) / 25)}`;
    return cls === 'pcie-switch' ? 'PIX' : cls === 'numa' ? 'NODE' : 'SYS';
  };
  for (const [id, shape] of Object.entries(NODE_SHAPES).filter(([, s]) => s.gpus.length > 0 && s.gpus.length <= 8)) {
    it(`${id}: every subset relates as the shape's links say`, () => {
      const t = shape.topology;
      const cells = Array.from({ length: t.gpuCount }, (_, a) => Array.from({ length: t.gpuCount }, (_, b) => (a === b ? 'X' : cell(t, a, b))));
      for (const gpus of subsets(t.gpuCount)) checkAgainstSmi(cells, t, gpus);
    });
  }
});

describe('NCCL topology file: the XML itself and bad input', () => {
  const t = NODE_SHAPES['a800x4']?.topology as NodeGpuTopology;

  it('is the NCCL element tree: <system version="1"> → <cpu numaid> → <pci class=0x030200 busid> → <gpu sm> → <nvlink>', () => {
    const r = ncclTopologyXml({ topology: t, busIds: busIds(4), gpus: [0, 1], sm: 80 });
    if (!r.ok) throw new Error(r.error);
    expect(r.value).toMatch(/^<!-- NCCL topology written by SITS for GPUs 0,1; read with NCCL_TOPO_FILE -->\n<system version="1">/);
    expect(r.value).toContain('<cpu numaid="0">');
    expect(r.value).toContain('<pci busid="ffff:ff:01.0" class="0x060400" link_speed="16 GT/s" link_width="16">');
    expect(r.value).toContain('<pci busid="0000:07:00.0" class="0x030200" link_speed="16 GT/s" link_width="16">');
    expect(r.value).toContain('<gpu sm="80">');
    expect(r.value).toContain('<nvlink target="0000:17:00.0" count="8" tclass="0x030200"/>');
  });

  it('refuses GPUs it cannot describe, naming them', () => {
    expect(ncclTopologyXml({ topology: t, busIds: busIds(4), gpus: [], sm: 80 })).toEqual({ ok: false, error: 'no GPUs given' });
    expect(ncclTopologyXml({ topology: t, busIds: busIds(4), gpus: [4], sm: 80 })).toEqual({ ok: false, error: 'GPU 4 is not on the node (it has 4)' });
    expect(ncclTopologyXml({ topology: t, busIds: ['0000:07:00.0', 'x', '0000:27:00.0', '0000:37:00.0'], gpus: [1], sm: 80 })).toEqual({
      ok: false,
      error: 'GPU 1 has no PCI bus id ("x" is not of the form 0000:07:00.0)',
    });
    expect(ncclTopologyXml({ topology: t, busIds: busIds(3), gpus: [0], sm: 80 })).toEqual({ ok: false, error: '3 PCI bus ids for 4 GPUs' });
  });

  it('reads the node annotations and says what is wrong with them', () => {
    expect(parseBusIds('0000:07:00.0,0000:0F:00.0', 2)).toEqual({ ok: true, value: ['0000:07:00.0', '0000:0f:00.0'] });
    expect(parseBusIds('0000:07:00.0', 2)).toEqual({ ok: false, error: '1 bus ids for 2 GPUs' });
    expect(parseBusIds('0000:07:00.0,07:00.0', 2)).toEqual({ ok: false, error: '"07:00.0" is not a PCI bus id of the form 0000:07:00.0' });
    expect(parseNics('mlx5_0@0/1, mlx5_1@1', 4)).toEqual({
      ok: true,
      value: [
        { name: 'mlx5_0', numa: 0, nearGpu: 1 },
        { name: 'mlx5_1', numa: 1 },
      ],
    });
    expect(parseNics('mlx5_0@0/9', 4)).toEqual({ ok: false, error: '"mlx5_0@0/9": GPU 9 is not on the node (it has 4)' });
    expect(parseNics('mlx5_0', 4)).toEqual({ ok: false, error: '"mlx5_0" is not name@numa or name@numa/gpu (e.g. mlx5_0@1/3)' });
    expect(parseNics('', 4)).toEqual({ ok: true, value: [] });
  });

  it('the reader refuses what is not a topology file', () => {
    expect(readNcclTopology('<system><cpu>')).toMatchObject({ ok: false });
    expect(readNcclTopology('<other/>')).toEqual({ ok: false, error: 'no <system> element' });
    expect(readNcclTopology('<system version="1"><cpu numaid="x"/></system>')).toEqual({ ok: false, error: '<cpu> without a numeric numaid' });
    expect(readNcclTopology('<system version="1"></system>\n')).toEqual({ ok: true, value: { gpus: [], nics: [] } });
  });
});
