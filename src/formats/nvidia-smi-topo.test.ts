import { describe, expect, it } from 'vitest';
import { parseNvidiaSmiTopo } from './nvidia-smi-topo.ts';
import { NODE_SHAPES } from '../core/model/presets.ts';
import { bandwidthBetween, linkBetween, ringBottleneckGBps, type NodeGpuTopology } from '../core/model/topology.ts';

/** `nvidia-smi topo -m` output is tab separated with the self cell printed as " X ". */
const tsv = (rows: readonly string[]): string => rows.map((r) => r.replace(/ {2,}/g, '\t')).join('\n');

const LEGEND = `
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
`;

// DGX-1V (8×V100 hybrid cube mesh) with its four InfiniBand NICs, as printed by a recent driver.
const DGX1V = `${tsv([
  '  GPU0  GPU1  GPU2  GPU3  GPU4  GPU5  GPU6  GPU7  mlx5_0  mlx5_1  mlx5_2  mlx5_3  CPU Affinity  NUMA Affinity',
  'GPU0   X   NV1  NV1  NV2  NV2  SYS  SYS  SYS  PIX  SYS  PHB  SYS  0-19,40-59  0',
  'GPU1  NV1   X   NV2  NV1  SYS  NV2  SYS  SYS  PIX  SYS  PHB  SYS  0-19,40-59  0',
  'GPU2  NV1  NV2   X   NV2  SYS  SYS  NV1  SYS  PHB  SYS  PIX  SYS  0-19,40-59  0',
  'GPU3  NV2  NV1  NV2   X   SYS  SYS  SYS  NV1  PHB  SYS  PIX  SYS  0-19,40-59  0',
  'GPU4  NV2  SYS  SYS  SYS   X   NV1  NV1  NV2  SYS  PIX  SYS  PHB  20-39,60-79  1',
  'GPU5  SYS  NV2  SYS  SYS  NV1   X   NV2  NV1  SYS  PIX  SYS  PHB  20-39,60-79  1',
  'GPU6  SYS  SYS  NV1  SYS  NV1  NV2   X   NV2  SYS  PHB  SYS  PIX  20-39,60-79  1',
  'GPU7  SYS  SYS  SYS  NV1  NV2  NV1  NV2   X   SYS  PHB  SYS  PIX  20-39,60-79  1',
  'mlx5_0  PIX  PIX  PHB  PHB  SYS  SYS  SYS  SYS   X   SYS  PHB  SYS',
])}\n${LEGEND}`;

// The same machine on an older driver: no NUMA Affinity column, so NUMA comes from the SYS cells.
const DGX1V_LEGACY = tsv([
  '  GPU0  GPU1  GPU2  GPU3  GPU4  GPU5  GPU6  GPU7  CPU Affinity',
  'GPU0   X   NV1  NV1  NV2  NV2  SYS  SYS  SYS  0-19,40-59',
  'GPU1  NV1   X   NV2  NV1  SYS  NV2  SYS  SYS  0-19,40-59',
  'GPU2  NV1  NV2   X   NV2  SYS  SYS  NV1  SYS  0-19,40-59',
  'GPU3  NV2  NV1  NV2   X   SYS  SYS  SYS  NV1  0-19,40-59',
  'GPU4  NV2  SYS  SYS  SYS   X   NV1  NV1  NV2  20-39,60-79',
  'GPU5  SYS  NV2  SYS  SYS  NV1   X   NV2  NV1  20-39,60-79',
  'GPU6  SYS  SYS  NV1  SYS  NV1  NV2   X   NV2  20-39,60-79',
  'GPU7  SYS  SYS  SYS  NV1  NV2  NV1  NV2   X   20-39,60-79',
]);

// DGX A100: NV12 everywhere, NUMA nodes 3/1/7/5 (NPS4 on two EPYC sockets).
const DGXA100 = `${tsv([
  '  GPU0  GPU1  GPU2  GPU3  GPU4  GPU5  GPU6  GPU7  mlx5_0  mlx5_1  CPU Affinity  NUMA Affinity',
  'GPU0   X   NV12  NV12  NV12  NV12  NV12  NV12  NV12  PXB  SYS  48-63,176-191  3',
  'GPU1  NV12   X   NV12  NV12  NV12  NV12  NV12  NV12  PXB  SYS  48-63,176-191  3',
  'GPU2  NV12  NV12   X   NV12  NV12  NV12  NV12  NV12  SYS  SYS  16-31,144-159  1',
  'GPU3  NV12  NV12  NV12   X   NV12  NV12  NV12  NV12  SYS  SYS  16-31,144-159  1',
  'GPU4  NV12  NV12  NV12  NV12   X   NV12  NV12  NV12  SYS  PXB  112-127,240-255  7',
  'GPU5  NV12  NV12  NV12  NV12  NV12   X   NV12  NV12  SYS  PXB  112-127,240-255  7',
  'GPU6  NV12  NV12  NV12  NV12  NV12  NV12   X   NV12  SYS  SYS  80-95,208-223  5',
  'GPU7  NV12  NV12  NV12  NV12  NV12  NV12  NV12   X   SYS  SYS  80-95,208-223  5',
  'mlx5_0  PXB  PXB  SYS  SYS  SYS  SYS  SYS  SYS   X   SYS',
  'mlx5_1  SYS  SYS  SYS  SYS  PXB  PXB  SYS  SYS  SYS   X ',
])}\n${LEGEND}`;

// DGX H100: NV18 everywhere; newer drivers add NIC columns and a GPU NUMA ID column of N/A.
const DGXH100 = `${tsv([
  '  GPU0  GPU1  GPU2  GPU3  GPU4  GPU5  GPU6  GPU7  NIC0  NIC1  CPU Affinity  NUMA Affinity  GPU NUMA ID',
  'GPU0   X   NV18  NV18  NV18  NV18  NV18  NV18  NV18  PXB  SYS  0-55,112-167  0    N/A',
  'GPU1  NV18   X   NV18  NV18  NV18  NV18  NV18  NV18  NODE  SYS  0-55,112-167  0    N/A',
  'GPU2  NV18  NV18   X   NV18  NV18  NV18  NV18  NV18  NODE  SYS  0-55,112-167  0    N/A',
  'GPU3  NV18  NV18  NV18   X   NV18  NV18  NV18  NV18  NODE  SYS  0-55,112-167  0    N/A',
  'GPU4  NV18  NV18  NV18  NV18   X   NV18  NV18  NV18  SYS  PXB  56-111,168-223  1    N/A',
  'GPU5  NV18  NV18  NV18  NV18  NV18   X   NV18  NV18  SYS  NODE  56-111,168-223  1    N/A',
  'GPU6  NV18  NV18  NV18  NV18  NV18  NV18   X   NV18  SYS  NODE  56-111,168-223  1    N/A',
  'GPU7  NV18  NV18  NV18  NV18  NV18  NV18  NV18   X   SYS  NODE  56-111,168-223  1    N/A',
  'NIC0  PXB  NODE  NODE  NODE  SYS  SYS  SYS  SYS   X   SYS',
  'NIC1  SYS  SYS  SYS  SYS  PXB  NODE  NODE  NODE  SYS   X ',
])}\n${LEGEND}\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n`;

// 8×L4 on PCIe: pairs under one switch (PIX), same socket otherwise (NODE), across sockets (SYS); no NUMA column.
const PCIE8 = tsv([
  '  GPU0  GPU1  GPU2  GPU3  GPU4  GPU5  GPU6  GPU7  CPU Affinity',
  'GPU0   X   PIX  NODE  NODE  SYS  SYS  SYS  SYS  0-23',
  'GPU1  PIX   X   NODE  NODE  SYS  SYS  SYS  SYS  0-23',
  'GPU2  NODE  NODE   X   PIX  SYS  SYS  SYS  SYS  0-23',
  'GPU3  NODE  NODE  PIX   X   SYS  SYS  SYS  SYS  0-23',
  'GPU4  SYS  SYS  SYS  SYS   X   PIX  NODE  NODE  24-47',
  'GPU5  SYS  SYS  SYS  SYS  PIX   X   NODE  NODE  24-47',
  'GPU6  SYS  SYS  SYS  SYS  NODE  NODE   X   PIX  24-47',
  'GPU7  SYS  SYS  SYS  SYS  NODE  NODE  PIX   X   24-47',
]);

function parsed(text: string, perLink?: number): NodeGpuTopology {
  const r = parseNvidiaSmiTopo(text, perLink === undefined ? {} : { nvlinkGBpsPerLink: perLink });
  if (!r.ok) throw new Error(`unexpected parse error: ${r.error}`);
  return r.value;
}

function preset(id: string): NodeGpuTopology {
  const s = NODE_SHAPES[id];
  if (s === undefined) throw new Error(`no preset ${id}`);
  return s.topology;
}

describe('parseNvidiaSmiTopo', () => {
  it('DGX-1V: NV1/NV2 become NVLink at 25/50 GB/s, SYS cross-socket; the result equals the v100-hcm preset', () => {
    const t = parsed(DGX1V);
    expect(t.gpuCount).toBe(8);
    expect(linkBetween(t, 0, 1)).toBe('nvlink');
    expect(bandwidthBetween(t, 0, 1)).toBe(25);
    expect(bandwidthBetween(t, 0, 3)).toBe(50);
    expect(linkBetween(t, 0, 5)).toBe('cross-socket');
    expect(bandwidthBetween(t, 0, 5)).toBe(8);
    expect(t.numaOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(t.islandOf).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    const hcm = preset('v100-hcm');
    expect(t.links).toEqual(hcm.links);
    expect(t.bandwidthGBps).toEqual(hcm.bandwidthGBps);
    expect(ringBottleneckGBps(t, [0, 1, 2, 3, 4, 5, 6, 7])).toBe(50);
  });

  it('DGX-1V without a NUMA Affinity column: sockets from the SYS cells, an NVLink to the other socket does not merge them', () => {
    const t = parsed(DGX1V_LEGACY);
    // GPU4 is NV2 to GPU0 but SYS to GPUs 1-3: it belongs to the second socket.
    expect(t.numaOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(t.links).toEqual(preset('v100-hcm').links);
  });

  it('DGX A100: NV12 on every pair means NVSwitch at 12 × 25 = 300 GB/s, NUMA from the NUMA Affinity column', () => {
    const t = parsed(DGXA100);
    expect(new Set(t.links.filter((_, i) => i % 9 !== 0))).toEqual(new Set(['nvswitch']));
    expect(bandwidthBetween(t, 2, 7)).toBe(300);
    expect(t.numaOf).toEqual([3, 3, 1, 1, 7, 7, 5, 5]);
    expect(t.links).toEqual(preset('hgx-a100').links);
    expect(t.bandwidthGBps).toEqual(preset('hgx-a100').bandwidthGBps);
  });

  it('DGX H100: NV18 → NVSwitch at 450 GB/s; NIC columns and a trailing GPU NUMA ID of N/A are ignored', () => {
    const t = parsed(DGXH100);
    expect(t.gpuCount).toBe(8);
    expect(new Set(t.links.filter((_, i) => i % 9 !== 0))).toEqual(new Set(['nvswitch']));
    expect(bandwidthBetween(t, 0, 7)).toBe(450);
    expect(t.numaOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(t.bandwidthGBps).toEqual(preset('dgx-h100').bandwidthGBps);
  });

  it('scales NVLink bandwidth by the per-link figure', () => {
    expect(bandwidthBetween(parsed(DGX1V, 20), 0, 3)).toBe(40);
    expect(bandwidthBetween(parsed(DGXH100, 50), 0, 1)).toBe(900);
  });

  it('PCIe only: PIX pairs share a switch, NODE is the same socket, SYS across; sockets and switches are inferred', () => {
    const t = parsed(PCIE8);
    expect(t.numaOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(t.pcieSwitchOf).toEqual([0, 0, 2, 2, 4, 4, 6, 6]);
    expect(t.islandOf).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect([linkBetween(t, 0, 1), bandwidthBetween(t, 0, 1)]).toEqual(['pcie-switch', 16]);
    expect([linkBetween(t, 1, 3), bandwidthBetween(t, 1, 3)]).toEqual(['numa', 12]);
    expect([linkBetween(t, 3, 4), bandwidthBetween(t, 3, 4)]).toEqual(['cross-socket', 8]);
    // Same pair classes as the l4x8 preset.
    expect(t.links).toEqual(preset('l4x8').links);
  });

  it('PXB is a PCIe-switch path at 12 GB/s and PHB a same-socket path; a 2-GPU all-NVLink node is NVLink, not NVSwitch', () => {
    const t = parsed(tsv(['  GPU0  GPU1  GPU2  CPU Affinity', 'GPU0   X   PXB  PHB  0-7', 'GPU1  PXB   X   PHB  0-7', 'GPU2  PHB  PHB   X   0-7']));
    expect([linkBetween(t, 0, 1), bandwidthBetween(t, 0, 1)]).toEqual(['pcie-switch', 12]);
    expect(linkBetween(t, 0, 2)).toBe('numa');
    expect(t.numaOf).toEqual([0, 0, 0]);
    const two = parsed(tsv(['  GPU0  GPU1  CPU Affinity', 'GPU0   X   NV4  0-7', 'GPU1  NV4   X   0-7']));
    expect([linkBetween(two, 0, 1), bandwidthBetween(two, 0, 1)]).toEqual(['nvlink', 100]);
  });

  it('accepts space-aligned output (tabs expanded) and Windows line ends', () => {
    const spaced = DGX1V_LEGACY.replace(/\t/g, '    ').replace(/\n/g, '\r\n');
    const t = parsed(spaced);
    expect(t.links).toEqual(preset('v100-hcm').links);
    expect(t.numaOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
  });

  describe('malformed input names the problem', () => {
    const errorOf = (text: string): string => {
      const r = parseNvidiaSmiTopo(text);
      if (r.ok) throw new Error('expected an error');
      return r.error;
    };

    it('no header', () => {
      expect(errorOf('GPU0 X NV1\nGPU1 NV1 X')).toMatch(/^no header line with GPU0 found/);
      expect(errorOf('')).toMatch(/^no header line with GPU0 found/);
    });

    it('missing rows', () => {
      expect(errorOf(tsv(['  GPU0  GPU1  GPU2  CPU Affinity', 'GPU0   X   PIX  SYS  0-7', 'GPU1  PIX   X   SYS  0-7']))).toBe(
        'header lists 3 GPUs but 2 GPU rows follow',
      );
    });

    it('an unknown cell, with its row and column', () => {
      expect(errorOf(tsv(['  GPU0  GPU1  GPU2  CPU Affinity', 'GPU0   X   PIX  SYS  0-7', 'GPU1  PIX   X   NVX  0-7', 'GPU2  SYS  NVX   X   0-7']))).toBe(
        'row GPU1, column GPU2: unknown cell "NVX"',
      );
    });

    it('a diagonal cell that is not X', () => {
      expect(errorOf(tsv(['  GPU0  GPU1  CPU Affinity', 'GPU0  NV1  NV1  0-7', 'GPU1  NV1   X   0-7']))).toBe('row GPU0, column GPU0: unknown cell "NV1"');
    });

    it('rows out of order', () => {
      expect(errorOf(tsv(['  GPU0  GPU1  CPU Affinity', 'GPU1  NV1   X   0-7', 'GPU0   X   NV1  0-7']))).toBe('row 1 should start with GPU0, found GPU1');
    });

    it('a short row', () => {
      expect(errorOf(tsv(['  GPU0  GPU1  GPU2', 'GPU0   X   PIX  SYS', 'GPU1  PIX   X', 'GPU2  SYS  SYS   X ']))).toBe('row GPU1 has 2 cells, expected 3');
    });
  });
});
