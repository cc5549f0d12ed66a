import { describe, expect, it } from 'vitest';
import {
  bandwidthBetween,
  buildTopology,
  DEFAULT_LINK_GBPS,
  flatTopology,
  linkBetween,
  ringBottleneckGBps,
  type LinkClass,
  type NodeGpuTopology,
} from './topology.ts';
import { NODE_SHAPES } from './presets.ts';

function topo(id: string): NodeGpuTopology {
  const s = NODE_SHAPES[id];
  if (s === undefined) throw new Error(`no preset ${id}`);
  return s.topology;
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

describe('ringBottleneckGBps', () => {
  it('is Infinity for zero or one GPU and the link itself for two', () => {
    const t = topo('l4x8');
    expect(ringBottleneckGBps(t, [])).toBe(Number.POSITIVE_INFINITY);
    expect(ringBottleneckGBps(t, [3])).toBe(Number.POSITIVE_INFINITY);
    expect(ringBottleneckGBps(t, [0, 1])).toBe(16); // same PCIe switch
    expect(ringBottleneckGBps(t, [0, 2])).toBe(12); // same socket
    expect(ringBottleneckGBps(t, [0, 4])).toBe(8); // across sockets
  });

  it('v100-hcm: a 4-GPU quad rings at NV1 (25), not at its NV2 links; the 8-GPU ring of NV2 links reaches 50', () => {
    const t = topo('v100-hcm');
    // Quad {0,1,2,3}: NV2 on 0-3, 1-2, 2-3 only (a path, not a cycle), so every ring uses an NV1 link.
    expect(ringBottleneckGBps(t, [0, 1, 2, 3])).toBe(25);
    // {0,1,4,5}: ring 0-1-5-4-0 is all NVLink (NV1, NV2, NV1, NV2); a min-over-pairs rule would give 8 (0-5 is SYS).
    expect(ringBottleneckGBps(t, [0, 1, 4, 5])).toBe(25);
    // {0,1,2,4}: GPU4 has one NVLink neighbour in the set, so the ring must cross sockets.
    expect(ringBottleneckGBps(t, [0, 1, 2, 4])).toBe(8);
    // The NV2 links form one 8-cycle 0-3-2-1-5-6-7-4-0.
    expect(ringBottleneckGBps(t, range(8))).toBe(50);
    expect(ringBottleneckGBps(t, [0, 3])).toBe(50);
    expect(ringBottleneckGBps(t, [0, 1])).toBe(25);
    expect(ringBottleneckGBps(t, [0, 5])).toBe(8);
    expect(ringBottleneckGBps(t, [0, 2, 3])).toBe(25);
    expect(ringBottleneckGBps(t, [0, 3, 4])).toBe(8); // 3-4 is SYS
  });

  it('does not depend on the order the GPUs are listed in', () => {
    const t = topo('v100-hcm');
    expect(ringBottleneckGBps(t, [5, 0, 4, 1])).toBe(25);
    expect(ringBottleneckGBps(t, [7, 6, 5, 4, 3, 2, 1, 0])).toBe(50);
    expect(ringBottleneckGBps(t, [4, 2, 1, 0])).toBe(8);
  });

  it('nvlink-2x4: inside one island 200, across islands the ring drops to cross-socket bandwidth', () => {
    const t = topo('nvlink-2x4');
    expect(ringBottleneckGBps(t, [0, 1, 2, 3])).toBe(200);
    expect(ringBottleneckGBps(t, [4, 5, 6, 7])).toBe(200);
    expect(ringBottleneckGBps(t, [0, 1, 4, 5])).toBe(DEFAULT_LINK_GBPS['cross-socket']);
    expect(ringBottleneckGBps(t, [3, 4])).toBe(8);
    expect(ringBottleneckGBps(t, range(8))).toBe(8);
  });

  it('dgx-h100: every subset rings at 450', () => {
    const t = topo('dgx-h100');
    expect(ringBottleneckGBps(t, range(8))).toBe(450);
    expect(ringBottleneckGBps(t, [0, 7])).toBe(450);
    expect(ringBottleneckGBps(t, [1, 4, 6])).toBe(450);
  });

  it('hgx-a100 300 and a800x4 200 everywhere', () => {
    expect(ringBottleneckGBps(topo('hgx-a100'), range(8))).toBe(300);
    expect(ringBottleneckGBps(topo('hgx-a100'), [2, 5])).toBe(300);
    expect(ringBottleneckGBps(topo('a800x4'), range(4))).toBe(200);
    expect(ringBottleneckGBps(topo('a800x4'), [0, 3])).toBe(200);
  });

  it('PCIe-only: l4x8 rings at the NUMA link inside a socket, cross-socket across; t4x4 never crosses sockets', () => {
    const l4 = topo('l4x8');
    // ring 0-1-2-3-0: 16, 12, 16, 12
    expect(ringBottleneckGBps(l4, [0, 1, 2, 3])).toBe(12);
    expect(ringBottleneckGBps(l4, [0, 1, 4, 5])).toBe(8);
    expect(ringBottleneckGBps(l4, range(8))).toBe(8);
    const t4 = topo('t4x4');
    expect(ringBottleneckGBps(t4, range(4))).toBe(12);
    expect(ringBottleneckGBps(t4, [2, 3])).toBe(16);
  });

  it('finds a ring that avoids a slow pair when one exists (threshold search, not min over pairs)', () => {
    // 4 GPUs: square 0-1-2-3-0 at 100, diagonals 0-2 and 1-3 at 1.
    const fast = new Set(['0-1', '1-2', '2-3', '0-3']);
    const t = buildTopology({
      gpuCount: 4,
      numaOf: [0, 0, 0, 0],
      pcieSwitchOf: [0, 1, 2, 3],
      pair: (a, b) => (fast.has(`${Math.min(a, b)}-${Math.max(a, b)}`) ? { cls: 'nvlink', gbps: 100 } : { cls: 'numa', gbps: 1 }),
    });
    expect(ringBottleneckGBps(t, [0, 1, 2, 3])).toBe(100);
    expect(ringBottleneckGBps(t, [0, 2, 1, 3])).toBe(100);
    // A triangle must use a diagonal.
    expect(ringBottleneckGBps(t, [0, 1, 2])).toBe(1);
  });
});

describe('islandOf', () => {
  it('matches the presets: one island for NVSwitch and the hybrid cube mesh, two for nvlink-2x4, one per GPU for PCIe-only', () => {
    expect(topo('dgx-h100').islandOf).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(topo('hgx-a100').islandOf).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(topo('v100-hcm').islandOf).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(topo('a800x4').islandOf).toEqual([0, 0, 0, 0]);
    expect(topo('nvlink-2x4').islandOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(topo('l4x8').islandOf).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(topo('t4x4').islandOf).toEqual([0, 1, 2, 3]);
  });

  it('joins GPUs through chains of NVLink or NVSwitch links, but not through PCIe', () => {
    // 0-1 nvlink, 1-2 nvswitch, 3-4 nvlink, 5 alone; 2 and 3 share a PCIe switch.
    const links: Record<string, LinkClass> = { '0-1': 'nvlink', '1-2': 'nvswitch', '3-4': 'nvlink' };
    const t = buildTopology({
      gpuCount: 6,
      numaOf: [0, 0, 0, 0, 1, 1],
      pcieSwitchOf: [0, 1, 2, 2, 3, 4],
      pair: (a, b) => {
        const cls = links[`${a}-${b}`];
        return cls === undefined ? undefined : { cls };
      },
    });
    expect(t.islandOf).toEqual([0, 0, 0, 1, 1, 2]);
    expect(linkBetween(t, 0, 2)).toBe('numa'); // same island, but no direct link
    expect(linkBetween(t, 2, 3)).toBe('pcie-switch');
  });
});

describe('buildTopology', () => {
  const t = buildTopology({ gpuCount: 4, numaOf: [0, 0, 0, 1], pcieSwitchOf: [0, 0, 1, 2] });

  it('falls back to same PCIe switch, then same NUMA node, else cross-socket, with the default bandwidths', () => {
    expect(linkBetween(t, 0, 1)).toBe('pcie-switch');
    expect(bandwidthBetween(t, 0, 1)).toBe(16);
    expect(linkBetween(t, 0, 2)).toBe('numa');
    expect(bandwidthBetween(t, 0, 2)).toBe(12);
    expect(linkBetween(t, 2, 3)).toBe('cross-socket');
    expect(bandwidthBetween(t, 2, 3)).toBe(8);
  });

  it('is symmetric and copies the NUMA and PCIe placement', () => {
    for (let a = 0; a < 4; a++) {
      for (let b = 0; b < 4; b++) {
        if (a === b) continue;
        expect(linkBetween(t, a, b)).toBe(linkBetween(t, b, a));
        expect(bandwidthBetween(t, a, b)).toBe(bandwidthBetween(t, b, a));
      }
    }
    expect(t.numaOf).toEqual([0, 0, 0, 1]);
    expect(t.pcieSwitchOf).toEqual([0, 0, 1, 2]);
    expect(t.gpuCount).toBe(4);
  });

  it('same PCIe switch wins over different NUMA nodes', () => {
    const odd = buildTopology({ gpuCount: 2, numaOf: [0, 1], pcieSwitchOf: [5, 5] });
    expect(linkBetween(odd, 0, 1)).toBe('pcie-switch');
  });

  it('applies bandwidth overrides per class, and explicit pairs given one way round to both directions', () => {
    const custom = buildTopology({
      gpuCount: 3,
      numaOf: [0, 0, 1],
      pcieSwitchOf: [0, 1, 2],
      gbps: { numa: 20, nvlink: 70 },
      pair: (a, b) => (a === 0 && b === 2 ? { cls: 'nvlink' } : a === 1 && b === 2 ? { cls: 'nvlink', gbps: 33 } : undefined),
    });
    expect(linkBetween(custom, 0, 1)).toBe('numa');
    expect(bandwidthBetween(custom, 0, 1)).toBe(20);
    expect(linkBetween(custom, 2, 0)).toBe('nvlink');
    expect(bandwidthBetween(custom, 2, 0)).toBe(70); // class default, overridden
    expect(bandwidthBetween(custom, 2, 1)).toBe(33); // the pair's own figure
    expect(custom.islandOf).toEqual([0, 0, 0]);
  });

  it('flatTopology puts every pair on one NUMA node under separate switches', () => {
    const f = flatTopology(3);
    expect(f.links.filter((_, i) => i % 4 !== 0)).toEqual(['numa', 'numa', 'numa', 'numa', 'numa', 'numa']);
    expect(f.islandOf).toEqual([0, 1, 2]);
    expect(flatTopology(0).gpuCount).toBe(0);
  });
});
