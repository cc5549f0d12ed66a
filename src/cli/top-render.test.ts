// `sits top`'s terminal rendering of the cluster view (the dashboard's view model): cells by allocation,
// islands apart, one line per node group wrapped to the width, the queues and pending tables; and the command
// itself in a real pseudo-terminal (node-pty) on the simulated demo cluster, with `-o json` parsed back.
import { describe, expect, it } from 'vitest';
import type { NodeSpec } from '../core/model/node.ts';
import { NODE_SHAPES } from '../core/model/presets.ts';
import type { NodeLocation } from '../core/model/topology.ts';
import { makeQueue } from '../core/queue/model.ts';
import { ClusterState, type Allocation } from '../core/snapshot/cluster-state.ts';
import { buildClusterView, type ClusterView } from '../server/cluster-view.ts';
import { sitsInPty } from '../testing/pty.ts';
import { runSits } from '../testing/sits-cli.ts';
import { renderTop, shortDuration } from './top-render.ts';
import { asClusterView } from './top-source.ts';

const ESC = String.fromCharCode(27);
const strip = (s: string): string => s.replace(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '').replace(/\r/g, '');

function node(name: string, shape: string, location: Partial<NodeLocation> = {}): NodeSpec {
  const s = NODE_SHAPES[shape];
  if (s === undefined) throw new Error(`no preset ${shape}`);
  return {
    name,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z0', block: 'b0', rack: 'r0', ...location },
    labels: {},
    taints: [],
    unschedulable: false,
  };
}

const alloc = (podId: string, n: string, gpus: readonly number[], gpuMilli = 1000, extra: Partial<Allocation> = {}): Allocation => ({
  podId,
  node: n,
  gpus,
  gpuMilli,
  cpuMilli: 1000,
  memoryMiB: 1024,
  priority: 0,
  queue: 'team-a',
  ...extra,
});

function view(): ClusterView {
  const s = new ClusterState([node('n-a', 'nvlink-2x4'), node('n-b', 'nvlink-2x4'), node('n-c', 'l4x8', { rack: 'r1' })]);
  s.allocate(alloc('ns/whole', 'n-a', [0, 1]));
  s.allocate(alloc('ns/frac', 'n-a', [4], 300));
  s.setGpuHealth('n-a', 7, false);
  s.allocate(alloc('g-0', 'n-c', [0, 1, 2, 3, 4, 5, 6, 7], 1000, { gang: 'ns/g' }));
  return buildClusterView({
    source: 'sim',
    seq: 1,
    atMs: 600_000,
    state: s,
    queues: new Map([['team-a', makeQueue('team-a', { cohort: 'all', weight: 2, nominal: { gpuMilli: 16_000, cpuMilli: Infinity, memoryMiB: Infinity } })]]),
    pending: [
      {
        id: 'gang:ns/big',
        queue: 'team-a',
        priority: 0,
        pods: 4,
        gpuMilli: 32_000,
        arrivalMs: 0,
        explanation: '0/3 nodes fit gang ns/big (4×8 GPU): 3 with fewer free GPUs than the 8 requested',
        queueReason: 'capacity',
        etaMs: 4_200_000,
      },
    ],
  });
}

describe('renderTop', () => {
  it('draws one heatmap line per node group: █ whole, ▒ shared, · free, x unhealthy, NVLink islands apart', () => {
    const out = renderTop(view(), { colorLevel: 0, width: 200, section: 'nodes' });
    const lines = out.split('\n');
    expect(lines[0]).toMatch(/^NODE GROUP\s+NODES\s+GPUS\s+USED\s+GPU HEATMAP$/);
    // n-a: GPUs 0,1 whole, 4 shared, 7 unhealthy; islands 0-3 | 4-7. n-b empty. Rack r1: the L4 node, no NVLink (no gaps).
    expect(lines[1]).toMatch(/^z0\/b0\/r0\s+2\s+15\/16\s+15%\s+██··╎▒··x ····╎····$/);
    expect(lines[2]).toMatch(/^z0\/b0\/r1\s+1\s+8\s+100%\s+████████$/);
    expect(out).not.toContain(ESC);
  });

  it('wraps a long group without splitting a node, and colours cells when asked', () => {
    const out = renderTop(view(), { colorLevel: 1, width: 48, section: 'nodes' });
    const lines = strip(out).split('\n');
    expect(lines[1]?.endsWith('██··╎▒··x')).toBe(true);
    expect(lines[2]?.trim()).toBe('····╎····');
    expect(lines[2]?.indexOf('·')).toBe(lines[1]?.indexOf('█'));
    expect(out).toContain(`${ESC}[32m█`); // whole: green
    expect(out).toContain(`${ESC}[31mx`); // unhealthy: red
  });

  it('prints the totals, the queues and the pending jobs with reason, wait, ETA and explanation cut to the width', () => {
    const out = renderTop(view(), { colorLevel: 0, width: 100, section: 'all' });
    expect(out.split('\n')[0]).toBe('simulated cluster: 3 nodes, 24 GPUs (23 healthy), 45% allocated, 3 running, 1 pending');
    expect(out).toMatch(/^team-a\s+all\s+2\s+16\s+10\.3\s+0\s+\S+\s+1 \(32\)\s+3$/m);
    const row = out.split('\n').find((l) => l.startsWith('gang:ns/big'));
    expect(row).toMatch(/^gang:ns\/big\s+team-a\s+4\s+32\s+10m\s+capacity\s+1h00m\s+0\/3 nodes fit gang ns\/big/);
    expect(row?.length).toBeLessThanOrEqual(100);
    expect(row?.endsWith('…')).toBe(true);
    expect(renderTop(view(), { colorLevel: 0, width: 100, section: 'jobs' })).toMatch(/^gang:ns\/g\s+team-a\s+1\s+8\s+1\s+node\s+-$/m);
  });

  it('reads durations as kubectl does and refuses a body that is not a cluster view', () => {
    expect([45_000, 12 * 60_000, 3 * 3_600_000 + 5 * 60_000, 50 * 3_600_000].map(shortDuration)).toEqual(['45s', '12m', '3h05m', '2d2h']);
    expect(() => asClusterView({ version: 2 }, 'https://x/api/v1/cluster')).toThrow(
      'https://x/api/v1/cluster: cluster view version 2; this sits top reads version 1',
    );
    expect(() => asClusterView({ version: 1, nodes: {} }, 'u')).toThrow('u: cluster view field "nodes" is not a list');
    expect(asClusterView(JSON.parse(JSON.stringify(view())), 'u').totals.nodes).toBe(3);
  });
});

describe('sits top --sim', () => {
  it('in a pseudo-terminal: coloured heatmap of the demo cluster, queues and pending jobs', async () => {
    const { code, out } = await sitsInPty(['top', '--sim', '--at', '120'], { cols: 120 });
    expect(code, out).toBe(0);
    expect(out).toMatch(new RegExp(`${ESC}\\[\\d+m`));
    const screen = strip(out);
    expect(screen).toMatch(/^simulated cluster: 32 nodes, 256 GPUs \(256 healthy\), \d+% allocated, \d+ running, \d+ pending$/m);
    expect(screen.split('\n').filter((l) => /^zone-0\/block-\d\/rack-\d\s/.test(l))).toHaveLength(4);
    for (const l of screen.split('\n')) expect(l.length).toBeLessThanOrEqual(120);
    expect(screen).toMatch(/^QUEUE\s+COHORT/m);
    for (const q of ['training', 'inference', 'notebooks']) expect(screen).toMatch(new RegExp(`^${q}\\s+demo\\s`, 'm'));
  });

  it('-o json prints the view, and the same view gives the same screen', async () => {
    const r = await runSits(['top', '--sim', '--at', '120', '-o', 'json']);
    expect(r.code, r.err).toBe(0);
    const v = asClusterView(JSON.parse(r.out), 'stdout');
    expect(v.source).toBe('sim');
    expect(v.nodes).toHaveLength(32);
    expect(v.totals.usedGpuMilli).toBe(v.nodes.reduce((s, n) => s + n.gpus.reduce((t, g) => t + g.usedMilli, 0), 0));
    const table = await runSits(['top', '--sim', '--at', '120']);
    expect(table.code, table.err).toBe(0);
    expect(table.out).toBe(renderTop(v, { colorLevel: 0, width: 120, section: 'all', nowMs: v.atMs }));
  });
});
