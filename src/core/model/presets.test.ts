import { describe, expect, it } from 'vitest';
import { NODE_SHAPE_IDS, NODE_SHAPES, type NodeShape } from './presets.ts';
import { bandwidthBetween, linkBetween, type LinkClass } from './topology.ts';

function shape(id: string): NodeShape {
  const s = NODE_SHAPES[id];
  if (s === undefined) throw new Error(`no preset ${id}`);
  return s;
}

/** Link class and bandwidth of every unordered pair, as `a-b` → `class@gbps`. */
function pairs(s: NodeShape): Map<string, string> {
  const out = new Map<string, string>();
  const n = s.topology.gpuCount;
  for (let a = 0; a < n; a++) for (let b = a + 1; b < n; b++) out.set(`${a}-${b}`, `${linkBetween(s.topology, a, b)}@${bandwidthBetween(s.topology, a, b)}`);
  return out;
}

function classCounts(s: NodeShape): Partial<Record<LinkClass, number>> {
  const c: Partial<Record<LinkClass, number>> = {};
  for (const v of pairs(s).values()) {
    const cls = v.split('@')[0] as LinkClass;
    c[cls] = (c[cls] ?? 0) + 1;
  }
  return c;
}

describe('node presets', () => {
  it('has exactly the ids of the issue', () => {
    expect([...NODE_SHAPE_IDS].sort()).toEqual(['a800x4', 'dgx-h100', 'hgx-a100', 'l4x8', 'nvlink-2x4', 't4x4', 'v100-hcm']);
  });

  it.each([
    ['dgx-h100', 8, 'H100-SXM', 90, 81_920],
    ['hgx-a100', 8, 'A100-80G', 80, 81_920],
    ['a800x4', 4, 'A800', 80, 81_920],
    ['v100-hcm', 8, 'V100', 70, 32_768],
    ['nvlink-2x4', 8, 'A100-80G', 80, 81_920],
    ['l4x8', 8, 'L4', 89, 24_576],
    ['t4x4', 4, 'T4', 75, 16_384],
  ])('%s: %i × %s (sm_%i, %i MiB), healthy devices indexed 0..n-1', (id, count, model, cc, mem) => {
    const s = shape(id);
    expect(s.id).toBe(id);
    expect(s.gpus).toHaveLength(count);
    expect(s.topology.gpuCount).toBe(count);
    expect(s.topology.links).toHaveLength(count * count);
    s.gpus.forEach((g, i) => {
      expect(g).toEqual({ index: i, model, memoryMiB: mem, computeCapability: cc, healthy: true });
    });
    expect(s.cpuMilli).toBeGreaterThan(0);
    expect(s.memoryMiB).toBeGreaterThan(0);
  });

  it('dgx-h100 and hgx-a100: NVSwitch all-to-all at 450 and 300 GB/s', () => {
    expect(new Set(pairs(shape('dgx-h100')).values())).toEqual(new Set(['nvswitch@450']));
    expect(new Set(pairs(shape('hgx-a100')).values())).toEqual(new Set(['nvswitch@300']));
    expect(shape('dgx-h100').topology.numaOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(shape('dgx-h100').topology.pcieSwitchOf).toEqual([0, 0, 1, 1, 2, 2, 3, 3]);
  });

  it('a800x4: NVLink full mesh at 200 GB/s over two sockets', () => {
    expect(new Set(pairs(shape('a800x4')).values())).toEqual(new Set(['nvlink@200']));
    expect(shape('a800x4').topology.numaOf).toEqual([0, 0, 1, 1]);
  });

  it('v100-hcm: the DGX-1V hybrid cube mesh, 16 NVLink pairs (6 links of 25 GB/s per GPU), the rest cross-socket', () => {
    const s = shape('v100-hcm');
    expect(classCounts(s)).toEqual({ nvlink: 16, 'cross-socket': 12 });
    // Every V100 has six NVLink ports and the mesh uses all of them: Σ NVLink GB/s per GPU = 6 × 25.
    for (let a = 0; a < 8; a++) {
      let sum = 0;
      for (let b = 0; b < 8; b++) if (a !== b && linkBetween(s.topology, a, b) === 'nvlink') sum += bandwidthBetween(s.topology, a, b);
      expect(sum, `GPU ${a}`).toBe(150);
    }
    // Spot checks against the DGX-1V `nvidia-smi topo -m` matrix.
    const p = pairs(s);
    expect(p.get('0-1')).toBe('nvlink@25');
    expect(p.get('0-3')).toBe('nvlink@50');
    expect(p.get('0-4')).toBe('nvlink@50');
    expect(p.get('1-5')).toBe('nvlink@50');
    expect(p.get('2-6')).toBe('nvlink@25');
    expect(p.get('0-5')).toBe('cross-socket@8');
    expect(p.get('3-4')).toBe('cross-socket@8');
  });

  it('nvlink-2x4: two 4-GPU NVLink islands at 200 GB/s, one per socket, cross-socket between them', () => {
    const s = shape('nvlink-2x4');
    expect(classCounts(s)).toEqual({ nvlink: 12, 'cross-socket': 16 });
    for (const [k, v] of pairs(s)) {
      const [a, b] = k.split('-').map(Number) as [number, number];
      expect(v).toBe(Math.floor(a / 4) === Math.floor(b / 4) ? 'nvlink@200' : 'cross-socket@8');
    }
    expect(s.topology.numaOf).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
  });

  it('l4x8 and t4x4: PCIe only (no NVLink island larger than one GPU)', () => {
    expect(classCounts(shape('l4x8'))).toEqual({ 'pcie-switch': 4, numa: 8, 'cross-socket': 16 });
    expect(pairs(shape('l4x8')).get('6-7')).toBe('pcie-switch@16');
    expect(pairs(shape('l4x8')).get('4-6')).toBe('numa@12');
    // t4x4: one socket, two switches.
    expect(classCounts(shape('t4x4'))).toEqual({ 'pcie-switch': 2, numa: 4 });
    expect(shape('t4x4').topology.numaOf).toEqual([0, 0, 0, 0]);
  });
});
