import { describe, expect, it } from 'vitest';
import type { V1Node } from '@kubernetes/client-node';
import { ANNOTATION } from '../../api/wire.ts';
import { largestNvlinkIsland } from './cluster-facts.ts';
import { devNodes } from '../../app/dev-cluster.ts';

const asNodes = (shape: string, n = 2, unhealthy?: string): V1Node[] =>
  devNodes(n, shape).map((x) => ({
    metadata: {
      name: x.name,
      labels: x.labels,
      annotations: { ...x.annotations, ...(unhealthy === undefined ? {} : { [ANNOTATION.unhealthyGpus]: unhealthy }) },
    },
    status: { capacity: { cpu: '64', memory: '512Gi', pods: '110', ...x.capacity }, allocatable: { cpu: '64', memory: '512Gi', pods: '110', ...x.capacity } },
  }));

describe('largestNvlinkIsland (what a tensor-parallel replica can get on one node)', () => {
  it('is the largest NVLink/NVSwitch island over the nodes', () => {
    expect(largestNvlinkIsland(asNodes('dgx-h100'))).toBe(8);
    expect(largestNvlinkIsland(asNodes('nvlink-2x4'))).toBe(4);
    expect(largestNvlinkIsland(asNodes('a800x4'))).toBe(4);
    // PCIe only: every GPU is its own island.
    expect(largestNvlinkIsland(asNodes('l4x8'))).toBe(1);
    expect(largestNvlinkIsland([...asNodes('l4x8'), ...asNodes('nvlink-2x4', 1)])).toBe(4);
  });

  it('counts healthy GPUs only, and knows nothing without nodes', () => {
    expect(largestNvlinkIsland(asNodes('nvlink-2x4', 1, '0,1'))).toBe(4);
    expect(largestNvlinkIsland(asNodes('a800x4', 1, '0'))).toBe(3);
    expect(largestNvlinkIsland([])).toBeUndefined();
  });
});
