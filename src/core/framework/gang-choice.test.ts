import { describe, expect, it } from 'vitest';
import { BestStepCache, chooseCandidate, delayFor, describeDelay, GANG_CHOICE, linkDelayFor } from './gang-choice.ts';
import { Scheduler } from './scheduler.ts';
import { PROFILES, buildProfile } from '../plugins/registry.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { makePod, type GangSpec } from '../model/pod.ts';
import { DEFAULT_NETWORK, ddpJob, type TrainingModel } from '../estimate/step-time.ts';
import { seededRng } from '../ports.ts';
import { nvswitchAndPcieNodes } from './gang-choice-testing.ts';
import { NODE_SHAPES, nodeOfShape } from '../model/presets.ts';
import { makeGpus } from '../model/gpu.ts';
import { buildTopology, fastGroupsOf, flatTopology, widestFastGroup } from '../model/topology.ts';
import { sharesOf, stepTime } from '../estimate/step-time.ts';

describe('chooseCandidate', () => {
  it('among equally fast candidates takes the one breaking the least NVLink island, then best fit', () => {
    const c = (order: number, slowdown: number, islandLoss: number) => ({ order, slowdown, islandLoss, splits: 0, linkSlowdown: slowdown });
    // 0: fastest but breaks a whole NVSwitch island; 1: as fast within tolerance, a PCIe pair; 2: far slower.
    expect(chooseCandidate([c(0, 1.0, 48), c(1, 1.01, 2), c(2, 1.5, 0)])).toBe(1);
    // Same island loss: best-fit order decides.
    expect(chooseCandidate([c(3, 1.0, 2), c(1, 1.0, 2)])).toBe(1);
    // Out of tolerance the faster one wins whatever it breaks.
    expect(chooseCandidate([c(0, 1.0, 48), c(1, 1.2, 2)])).toBe(0);
    expect(chooseCandidate([])).toBe(-1);
  });
});

describe('linkDelayFor (ADR 0200)', () => {
  it('holds a gang slowed by its links for up to linkHoldMs; not one slowed by its GPU model', () => {
    const d = linkDelayFor(1.8, 1.6, 0);
    expect(d).toEqual({ slowdown: 1.8, waitedMs: 0, capMs: GANG_CHOICE.linkHoldMs, expectedGain: 1 - 1 / 1.8, linkBound: true });
    expect(linkDelayFor(1.8, 1.6, GANG_CHOICE.linkHoldMs - 1)?.linkBound).toBe(true);
    expect(linkDelayFor(1.8, 1.6, GANG_CHOICE.linkHoldMs)).toBeUndefined();
    // 1.8× its best anywhere, but its own GPU models do no better than 1.1×: the model is the slowness.
    expect(linkDelayFor(1.8, 1.1, 0)).toBeUndefined();
  });
});

describe('BestStepCache: the best its own GPU models could give (ADR 0200)', () => {
  const net = DEFAULT_NETWORK;
  const gpt = ddpJob('gpt-1b', 2048, 8);
  const hgx = NODE_SHAPES['hgx-a100'] as NonNullable<(typeof NODE_SHAPES)['hgx-a100']>;
  const t4 = NODE_SHAPES.t4x4 as NonNullable<(typeof NODE_SHAPES)['t4x4']>;
  const racks = (perRack: number, count: number) =>
    Array.from({ length: count }, (_, i) => ({ spec: nodeOfShape(`n${i}`, hgx, { zone: 'z', block: 'b', rack: `r${Math.floor(i / perRack)}` }) }));

  it('only as many nodes in one rack as the cluster has in one: four nodes in one rack beat two racks of two', () => {
    const inOne = new BestStepCache().bestStepOnModels(racks(4, 4), gpt, 32, net, ['A100-80G']);
    const inTwo = new BestStepCache().bestStepOnModels(racks(2, 4), gpt, 32, net, ['A100-80G']);
    expect(inTwo).toBeGreaterThan(inOne);
    // The best anywhere assumes one rack of any size: it is the four-in-one figure on both clusters.
    expect(new BestStepCache().bestStepSec(racks(2, 4), gpt, 32, net)).toBeCloseTo(inOne, 9);
  });

  it('a gang over several GPU models runs at the pace of the slowest: its best is that model’s', () => {
    const nodes = [...racks(4, 4), { spec: nodeOfShape('t', t4, { zone: 'z', block: 'b', rack: 'rt' }) }];
    const cache = new BestStepCache();
    const both = cache.bestStepOnModels(nodes, gpt, 4, net, ['A100-80G', 'T4']);
    expect(both).toBeCloseTo(cache.bestStepOnModels(nodes, gpt, 4, net, ['T4']), 9);
    expect(both).toBeGreaterThan(cache.bestStepOnModels(nodes, gpt, 4, net, ['A100-80G']));
  });
});

describe('delayFor', () => {
  it('waits only where it pays, at most the step-time saving over the expected run, never past the cap', () => {
    expect(delayFor(1 + GANG_CHOICE.delayMinGain / 2, 0)).toBeUndefined();
    const d = delayFor(1.5, 0, 30 * 60_000);
    // 1 − 1/1.5 = a third of the step saved; a third of a 30-minute run is 10 minutes.
    expect(d?.capMs).toBe(10 * 60_000);
    expect(d?.expectedGain).toBeCloseTo(1 / 3, 9);
    expect(delayFor(1.5, 10 * 60_000, 30 * 60_000)).toBeUndefined();
    expect(delayFor(4, 0, 100 * 60 * 60_000)?.capMs).toBe(GANG_CHOICE.maxDelayMs);
    // The default run is an hour: at 4× its best step, three quarters of it (ADR 0197; 20 min before).
    expect(delayFor(4, 0)?.capMs).toBe(45 * 60_000);
    expect(GANG_CHOICE.maxDelayMs).toBe(60 * 60_000);
    expect(describeDelay(d as NonNullable<typeof d>)).toBe(
      'waits for a better placement: the best free one now gives 1.50× its best step time; expects 33 % shorter steps; waited 0 of at most 600 s',
    );
  });
});

/** One NVSwitch A100 node and one PCIe-only A100 node (pairs under a switch), same rack. */
function scheduler(models: Readonly<Record<string, TrainingModel>>): Scheduler {
  const p = buildProfile(PROFILES.sits as NonNullable<(typeof PROFILES)['sits']>, { typicalShapes: [] });
  if (!p.ok) throw new Error('profile');
  const profile = { ...p.value, stepTimeArgs: { modelOf: (g: GangSpec) => models[g.name] } };
  return new Scheduler(profile, new ClusterState(nvswitchAndPcieNodes()), seededRng(1));
}

const gangOf = (name: string, gpus: number): GangSpec => ({
  name,
  minMember: gpus,
  members: Array.from({ length: gpus }, (_, k) => makePod(`${name}-${k}`, { gpuCount: 1 }, { gang: name })),
  topology: {},
  priority: 0,
  queue: 'q',
});

describe('sits gang choice (ADR 0188)', () => {
  it('a job that barely communicates fills the PCIe pair; a communication-heavy one gets the NVSwitch node', () => {
    const s = scheduler({ bert: ddpJob('bert-large', 512, 32), gpt: ddpJob('gpt-3b', 2048, 4) });
    const light = s.scheduleGang(gangOf('bert', 2));
    const heavy = s.scheduleGang(gangOf('gpt', 4));
    expect(light.ok && heavy.ok).toBe(true);
    if (!light.ok || !heavy.ok) return;
    expect(new Set(light.placements.map((p) => p.node))).toEqual(new Set(['b-pcie']));
    expect(new Set(heavy.placements.map((p) => p.node))).toEqual(new Set(['a-nvswitch']));
  });

  it('takes a best-fit domain it fills exactly at its best speed without trying the others (one trial)', () => {
    const s = scheduler({});
    // Half of the NVSwitch node is busy: a 4-GPU default job fills the other half, as fast as anywhere.
    s.state.allocate({ podId: 'busy', node: 'a-nvswitch', gpus: [0, 1, 2, 3], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    const before = s.counters.domainTrials;
    const r = s.scheduleGang(gangOf('fill', 4));
    expect(r.ok && new Set(r.placements.map((p) => p.node))).toEqual(new Set(['a-nvswitch']));
    expect(s.counters.domainTrials - before).toBe(1);
  });

  it('reads the model a TrainingJob states from its pods when the host knows none', () => {
    // The default 1.3B job loses nothing on a PCIe pair: it fills it. A stated 2.7B job loses 18 % there: NVSwitch.
    const unstated = scheduler({}).scheduleGang(gangOf('unstated', 2));
    expect(unstated.ok && new Set(unstated.placements.map((p) => p.node))).toEqual(new Set(['b-pcie']));
    const g = gangOf('stated', 2);
    const big = ddpJob('gpt-3b', 2048, 4);
    const stated = scheduler({}).scheduleGang({ ...g, members: g.members.map((m) => ({ ...m, trainingModel: big })) });
    expect(stated.ok && new Set(stated.placements.map((p) => p.node))).toEqual(new Set(['a-nvswitch']));
  });

  it('a heavy gang offered only the PCIe node waits for a better placement while it pays, then takes it', () => {
    const s = scheduler({ gpt: ddpJob('gpt-3b', 2048, 4) });
    s.state.allocate({ podId: 'busy', node: 'a-nvswitch', gpus: [0, 1, 2, 3, 4, 5, 6, 7], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    const g = gangOf('gpt', 8);
    const first = s.scheduleGang(g, { waitedMs: 0 });
    expect(first.ok).toBe(false);
    if (first.ok) return;
    expect(first.delay?.slowdown).toBeGreaterThan(1 + GANG_CHOICE.delayMinGain);
    expect(first.explanation.message).toContain('waits for a better placement');
    // Both nodes have A100s: the slowness is the links, so it may hold until the NVSwitch node frees (ADR 0200).
    expect(first.delay?.linkBound).toBe(true);
    expect(first.delay?.capMs).toBe(GANG_CHOICE.linkHoldMs);
    // Nothing was taken while it waits.
    expect(s.state.node('b-pcie')?.gpuFree.every((f) => f === 1000)).toBe(true);
    // Past its cap it takes the PCIe node: no job starves for a better placement.
    const later = s.scheduleGang(g, { waitedMs: first.delay?.capMs ?? 0 });
    expect(later.ok).toBe(true);
    // A trial attempt (no waited time) never waits.
    s.state.release('gpt-0');
    expect(scheduler({ gpt: ddpJob('gpt-3b', 2048, 4) }).scheduleGang(g).ok).toBe(true);
  });

  describe('on PCIe-only nodes: one fast group per node (ADR 0202)', () => {
    // Four 4-GPU PCIe nodes in one rack, two GPUs under each switch, one switch per socket (L40S servers).
    const l40s = {
      id: 'l40s-pcie',
      cpuMilli: 96_000,
      memoryMiB: 524_288,
      maxPods: 110,
      gpus: makeGpus(4, 'L40S'),
      topology: buildTopology({ gpuCount: 4, numaOf: [0, 0, 1, 1], pcieSwitchOf: [0, 0, 1, 1] }),
    };
    const pcieCluster = (): Scheduler => {
      const at = { zone: 'z', block: 'b', rack: 'r' };
      const p = buildProfile(PROFILES.sits as NonNullable<(typeof PROFILES)['sits']>, { typicalShapes: [] });
      if (!p.ok) throw new Error('profile');
      const profile = { ...p.value, stepTimeArgs: { modelOf: () => ddpJob('gpt-3b', 2048, 4) } };
      return new Scheduler(profile, new ClusterState(Array.from({ length: 4 }, (_, i) => nodeOfShape(`l40s-${i}`, l40s, at))), seededRng(1));
    };
    const step = (s: Scheduler, placements: readonly { node: string; gpus: readonly number[]; podId: string }[]): number =>
      stepTime(
        ddpJob('gpt-3b', 2048, 4),
        sharesOf(placements, (n) => s.state.node(n)?.spec),
        DEFAULT_NETWORK,
      ).stepSec;

    it('groups GPUs by NVLink island, else by PCIe switch', () => {
      expect(fastGroupsOf(l40s.topology)).toEqual({ of: [4, 4, 5, 5], count: 2 });
      const dgx = NODE_SHAPES['dgx-h100'] as NonNullable<(typeof NODE_SHAPES)['dgx-h100']>;
      expect(fastGroupsOf(dgx.topology).count).toBe(1);
      const twoIslands = NODE_SHAPES['nvlink-2x4'] as NonNullable<(typeof NODE_SHAPES)['nvlink-2x4']>;
      expect(fastGroupsOf(twoIslands.topology).count).toBe(2);
      // A node without pair information (its GPUs each on their own switch): nothing to keep together, one group.
      expect(fastGroupsOf(flatTopology(4)).count).toBe(1);
    });

    it('finds the widest group among the GPUs asked about, the lowest group on a tie', () => {
      expect(widestFastGroup(l40s.topology)).toEqual({ group: 4, size: 2 });
      // GPU 0 busy: the other switch is the only whole pair.
      expect(widestFastGroup(l40s.topology, (g) => g !== 0)).toEqual({ group: 5, size: 2 });
      expect(widestFastGroup(l40s.topology, (g) => g === 0 || g === 2)).toEqual({ group: 4, size: 1 });
      expect(widestFastGroup(l40s.topology, () => false)).toEqual({ group: -1, size: 0 });
    });

    it('spreads an 8-GPU heavy job two GPUs per node under one switch, faster than packing two nodes across sockets', () => {
      const s = pcieCluster();
      const r = s.scheduleGang(gangOf('gpt', 8));
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      const byNode = new Map<string, number[]>();
      for (const p of r.placements) byNode.set(p.node, [...(byNode.get(p.node) ?? []), ...p.gpus]);
      expect(byNode.size).toBe(4);
      for (const gpus of byNode.values()) {
        expect(gpus).toHaveLength(2);
        expect(new Set(gpus.map((g) => l40s.topology.pcieSwitchOf[g])).size).toBe(1);
      }
      // The packed layout it did not take: two whole nodes, each ring across the sockets.
      const packed = ['l40s-0', 'l40s-1'].flatMap((node) => [0, 1, 2, 3].map((g) => ({ podId: `${node}-${g}`, node, gpus: [g] })));
      expect(step(s, r.placements)).toBeLessThan(step(s, packed));
    });
  });

  describe('on GPUs of different speeds (ADR 0196)', () => {
    // Sixteen 4-GPU T4 nodes fill the first best-fit trials of a 4-GPU gang; the one H100 node comes after them.
    const mixed = () => {
      const at = { zone: 'z', block: 'b', rack: 'r' };
      const t4 = Array.from({ length: 16 }, (_, i) =>
        nodeOfShape(`t4-${String(i).padStart(2, '0')}`, NODE_SHAPES.t4x4 as NonNullable<(typeof NODE_SHAPES)['t4x4']>, at),
      );
      const h100 = nodeOfShape('z-h100', NODE_SHAPES['dgx-h100'] as NonNullable<(typeof NODE_SHAPES)['dgx-h100']>, at);
      const p = buildProfile(PROFILES.sits as NonNullable<(typeof PROFILES)['sits']>, { typicalShapes: [] });
      if (!p.ok) throw new Error('profile');
      const profile = { ...p.value, stepTimeArgs: { modelOf: () => ddpJob('gpt-350m', 2048, 8) } };
      return new Scheduler(profile, new ClusterState([...t4, h100]), seededRng(1));
    };

    it('takes the free fast node that best fit would not have offered, instead of waiting for it', () => {
      const s = mixed();
      const r = s.scheduleGang(gangOf('job', 4), { waitedMs: 0 });
      expect(r.ok && new Set(r.placements.map((p) => p.node))).toEqual(new Set(['z-h100']));
    });

    it('waits a bounded time for the fast GPUs when only slow ones are free, then takes the slow ones', () => {
      const s = mixed();
      s.state.allocate({ podId: 'busy', node: 'z-h100', gpus: [0, 1, 2, 3, 4, 5, 6, 7], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
      const g = gangOf('job', 4);
      const first = s.scheduleGang(g, { waitedMs: 0 });
      expect(first.ok).toBe(false);
      if (first.ok) return;
      // The T4s are several times slower than the H100 node: it may wait most of its expected run (ADR 0197), not past it.
      // Their slowness is the GPU model, not the links: no hold until a layout frees (ADR 0200).
      expect(first.delay?.slowdown).toBeGreaterThan(3);
      expect(first.delay?.linkBound).toBeUndefined();
      const cap = first.delay?.capMs ?? 0;
      expect(cap).toBe(1000 * Math.round(((1 - 1 / (first.delay?.slowdown ?? 1)) * GANG_CHOICE.expectedRunMs) / 1000));
      expect(s.scheduleGang(g, { waitedMs: cap - 1 }).ok).toBe(false);
      const later = s.scheduleGang(g, { waitedMs: cap });
      expect(later.ok && later.placements.every((p) => p.node.startsWith('t4-'))).toBe(true);
    });
  });
});
