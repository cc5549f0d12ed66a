import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { InterPodState } from './inter-pod-state.ts';
import { compileSelector, defaultNamespaceLabels, resolveTerm, selectorMatches, termMatchesPod } from '../../model/terms.ts';
import { ScoreIndex } from '../score-index.ts';
import { Scheduler } from '../scheduler.ts';
import { buildProfile, resolveProfile } from '../../plugins/registry.ts';
import { allocationFor, ClusterState } from '../../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../../model/presets.ts';
import type { NodeSpec } from '../../model/node.ts';
import { makePod, type PodAffinityTerm, type PodSpec } from '../../model/pod.ts';
import { seededRng } from '../../ports.ts';

function nodeSpec(name: string, zone: string, rack: string): NodeSpec {
  const s = NODE_SHAPES['l4x8'];
  if (s === undefined) throw new Error('no preset');
  return {
    name,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone, block: 'b', rack },
    labels: {},
    taints: [],
    unschedulable: false,
  };
}

const cluster = (): ClusterState =>
  new ClusterState(
    ['a0', 'a1', 'a2', 'b0', 'b1', 'b2'].map((n) => nodeSpec(n, `zone-${n[0] as string}`, `rack-${n[0] as string}${Number(n[1]) < 2 ? 'x' : 'y'}`)),
  );

function profile() {
  const p = resolveProfile('kube-default', { typicalShapes: [] });
  if (!p.ok) throw new Error('profile');
  return p.value;
}

const anti = (app: string, topologyKey = 'kubernetes.io/hostname'): Partial<PodSpec> => ({
  podAntiAffinity: { required: [{ labelSelector: { matchLabels: { app } }, topologyKey }] },
});

describe('label selectors and terms (kube semantics)', () => {
  it('matches as labels.Selector: nil = nothing, {} = everything, NotIn/DoesNotExist match a missing label', () => {
    expect(selectorMatches(compileSelector(undefined), { a: '1' })).toBe(false);
    expect(selectorMatches(compileSelector({}), undefined)).toBe(true);
    const s = compileSelector({
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'NotIn', values: ['db'] },
        { key: 'old', operator: 'DoesNotExist' },
      ],
    });
    expect(selectorMatches(s, { app: 'web' })).toBe(true);
    expect(selectorMatches(s, { app: 'web', tier: 'db' })).toBe(false);
    expect(selectorMatches(s, { app: 'web', old: '' })).toBe(false);
    expect(selectorMatches(s, { app: 'api' })).toBe(false);
    expect(selectorMatches(compileSelector({ matchExpressions: [{ key: 'x', operator: 'Exists' }] }), { x: '' })).toBe(true);
  });

  it("resolves namespaces: none given = the pod's own, an empty namespaceSelector = all, a selector reads namespace labels", () => {
    const owner = makePod('o', {}, { namespace: 'team', labels: { app: 'web', version: 'v2' } });
    const other = { namespace: 'else', labels: { app: 'web' } };
    const same = { namespace: 'team', labels: { app: 'web' } };
    const t = (x: Partial<PodAffinityTerm>) => resolveTerm({ labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'k', ...x }, owner);
    expect(termMatchesPod(t({}), same, defaultNamespaceLabels)).toBe(true);
    expect(termMatchesPod(t({}), other, defaultNamespaceLabels)).toBe(false);
    expect(termMatchesPod(t({ namespaceSelector: {} }), other, defaultNamespaceLabels)).toBe(true);
    expect(termMatchesPod(t({ namespaces: ['else'] }), other, defaultNamespaceLabels)).toBe(true);
    expect(termMatchesPod(t({ namespaces: ['else'] }), same, defaultNamespaceLabels)).toBe(false);
    expect(termMatchesPod(t({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'else' } } }), other, defaultNamespaceLabels)).toBe(true);
    expect(termMatchesPod(t({ namespaceSelector: { matchLabels: { team: 'x' } } }), other, () => ({ team: 'x' }))).toBe(true);
  });

  it('merges matchLabelKeys (In) and mismatchLabelKeys (NotIn) with the owner’s values, only for labels it has', () => {
    const owner = makePod('o', {}, { labels: { app: 'web', version: 'v2' } });
    const m = resolveTerm({ labelSelector: { matchLabels: { app: 'web' } }, matchLabelKeys: ['version', 'absent'], topologyKey: 'k' }, owner);
    expect(termMatchesPod(m, { namespace: 'default', labels: { app: 'web', version: 'v2' } }, defaultNamespaceLabels)).toBe(true);
    expect(termMatchesPod(m, { namespace: 'default', labels: { app: 'web', version: 'v1' } }, defaultNamespaceLabels)).toBe(false);
    const x = resolveTerm({ labelSelector: { matchLabels: { app: 'web' } }, mismatchLabelKeys: ['version'], topologyKey: 'k' }, owner);
    expect(termMatchesPod(x, { namespace: 'default', labels: { app: 'web', version: 'v2' } }, defaultNamespaceLabels)).toBe(false);
    expect(termMatchesPod(x, { namespace: 'default', labels: { app: 'web' } }, defaultNamespaceLabels)).toBe(true);
  });
});

describe('preferred pod affinity (score)', () => {
  it('is 50 without matches, rises with matching pods of an affinity term and falls with anti-affinity ones, never past 0..100', () => {
    const state = cluster();
    const pod = makePod(
      'x',
      {},
      {
        podAffinity: { preferred: [{ weight: 50, term: { labelSelector: { matchLabels: { app: 'a' } }, topologyKey: 'kubernetes.io/hostname' } }] },
        podAntiAffinity: { preferred: [{ weight: 50, term: { labelSelector: { matchLabels: { app: 'b' } }, topologyKey: 'kubernetes.io/hostname' } }] },
      },
    );
    const at = (name: string): number => {
      const st = new InterPodState(state, pod);
      return st.preferredScore((state.node(name) as { idx: number }).idx);
    };
    expect(at('a0')).toBe(50);
    for (let i = 0; i < 3; i++) state.allocate(allocationFor(makePod(`a${i}`, { cpuMilli: 10 }, { labels: { app: 'a' } }), 'a0', []));
    state.allocate(allocationFor(makePod('b', { cpuMilli: 10 }, { labels: { app: 'b' } }), 'a1', []));
    expect(at('a0')).toBeGreaterThan(50);
    expect(at('a0')).toBeLessThan(100);
    expect(at('a1')).toBeLessThan(50);
    expect(at('a1')).toBeGreaterThan(0);
    expect(at('b0')).toBe(50);
  });
});

describe('the inter-pod scorers in the score index', () => {
  it('add the overlay score times their profile weight, and nothing when the profile does not name them', () => {
    const state = cluster();
    for (let i = 0; i < 3; i++) state.allocate(allocationFor(makePod(`a${i}`, { cpuMilli: 10 }, { labels: { app: 'a' } }), 'a0', []));
    state.allocate(allocationFor(makePod('z', { cpuMilli: 10 }, { labels: { app: 'z' } }), 'b1', []));
    const pod = makePod(
      'x',
      { cpuMilli: 100 },
      {
        podAffinity: { preferred: [{ weight: 50, term: { labelSelector: { matchLabels: { app: 'a' } }, topologyKey: 'kubernetes.io/hostname' } }] },
        topologySpread: [
          { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { app: 'z' } } },
        ],
      },
    );
    const scores = (scorers: { name: string; weight: number }[]): number[] => {
      const p = buildProfile(
        {
          name: 't',
          description: 't',
          queueSort: 'priority-fifo',
          filters: ['fit'],
          scorers,
          devicePicker: 'gpu-first-fit',
          selector: 'best',
          gangSearch: 'flat',
        },
        { typicalShapes: [] },
      );
      if (!p.ok) throw new Error('profile');
      const index = new ScoreIndex(state, p.value, pod);
      index.refresh();
      return [...index.score];
    };
    const inter = new InterPodState(state, pod);
    const affinity = state.nodes.map((n) => inter.preferredScore(n.idx));
    const spread = state.nodes.map((n) => inter.spreadScore(n.idx));
    // The state is not flat: both scores tell nodes apart.
    expect(new Set(affinity).size).toBeGreaterThan(1);
    expect(new Set(spread).size).toBeGreaterThan(1);
    expect(scores([{ name: 'inter-pod-affinity', weight: 3 }])).toEqual(affinity.map((a) => 3 * a));
    expect(scores([{ name: 'pod-topology-spread', weight: 2 }])).toEqual(spread.map((s) => 2 * s));
    expect(scores([])).toEqual(state.nodes.map(() => 0));
  });
});

describe('PodTopologySpread in the scheduler', () => {
  it('DoNotSchedule over zones keeps the skew within maxSkew as pods arrive; ScheduleAnyway only prefers', () => {
    const s = new Scheduler(profile(), cluster(), seededRng(1));
    const zones = new Map<string, number>();
    for (let i = 0; i < 8; i++) {
      const r = s.schedulePod(
        makePod(
          `p-${i}`,
          { cpuMilli: 1000 },
          {
            labels: { app: 'sp' },
            topologySpread: [
              { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'sp' } } },
            ],
          },
        ),
      );
      expect(r.ok).toBe(true);
      if (r.ok) {
        const z = s.state.node(r.placement.node)?.spec.location.zone ?? '';
        zones.set(z, (zones.get(z) ?? 0) + 1);
      }
      const c = [...zones.values()];
      expect(Math.max(...c) - (c.length < 2 ? 0 : Math.min(...c))).toBeLessThanOrEqual(1);
    }
  });
});

describe('InterPodAffinity in the scheduler', () => {
  it('a gang with anti-affinity on hostname spreads its members, one per node', () => {
    const s = new Scheduler(profile(), cluster(), seededRng(1));
    const members = [0, 1, 2, 3].map((i) => makePod(`g-${i}`, { gpuCount: 1 }, { gang: 'g', labels: { app: 'g' }, ...anti('g') }));
    const r = s.scheduleGang({ name: 'g', minMember: 4, members, topology: {}, priority: 0, queue: 'default' });
    expect(r.ok).toBe(true);
    if (r.ok) expect(new Set(r.placements.map((p) => p.node)).size).toBe(4);
  });

  it('a gang that cannot spread enough waits, all or nothing', () => {
    const s = new Scheduler(profile(), cluster(), seededRng(1));
    const members = [0, 1, 2].map((i) => makePod(`g-${i}`, { gpuCount: 1 }, { gang: 'g', labels: { app: 'g' }, ...anti('g', 'topology.kubernetes.io/zone') }));
    const r = s.scheduleGang({ name: 'g', minMember: 3, members, topology: {}, priority: 0, queue: 'default' });
    expect(r.ok).toBe(false);
    expect(s.state.antiPodCount).toBe(0);
  });

  it('the symmetric check: a bound pod’s anti-affinity keeps out the pods it matches, and only those (others keep their plain index)', () => {
    const s = new Scheduler(profile(), cluster(), seededRng(1));
    const plain = makePod('plain-0', { cpuMilli: 1000 }, { labels: { app: 'y' } });
    expect(s.schedulePod(plain).ok).toBe(true);
    const toA0 = { nodeAffinity: { required: [{ matchFields: [{ key: 'metadata.name', operator: 'In' as const, values: ['a0'] }] }] } };
    expect(s.schedulePod(makePod('guard', { cpuMilli: 1000 }, { labels: { app: 'guard' }, ...anti('x'), ...toA0 })).ok).toBe(true);
    const builds = s.counters.builds;
    expect(s.schedulePod({ ...plain, id: 'plain-1' }).ok).toBe(true);
    expect(s.counters.builds).toBe(builds);
    const r = s.schedulePod(makePod('x-0', { cpuMilli: 1000 }, { labels: { app: 'x' }, ...toA0 }));
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.explanation.message).toBe(
        "0/6 nodes fit pod x-0: 5 node(s) didn't match Pod's node affinity/selector, 1 node(s) didn't satisfy existing pods anti-affinity rules",
      );
    expect(s.schedulePod(makePod('x-other-ns', { cpuMilli: 1000 }, { labels: { app: 'x' }, namespace: 'other', ...toA0 })).ok).toBe(true);
  });

  it('a self-matching group follows its first member into one rack', () => {
    const s = new Scheduler(profile(), cluster(), seededRng(1));
    const racks = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const r = s.schedulePod(
        makePod(
          `p-${i}`,
          { cpuMilli: 1000 },
          { labels: { app: 'grp' }, podAffinity: { required: [{ labelSelector: { matchLabels: { app: 'grp' } }, topologyKey: 'ai.sits2026.dev/rack' }] } },
        ),
      );
      expect(r.ok).toBe(true);
      if (r.ok) racks.add(s.state.node(r.placement.node)?.spec.location.rack ?? '');
    }
    expect(racks.size).toBe(1);
  });

  it('kept incrementally, an index agrees with one built from scratch after any placements and removals', () => {
    const shapes: PodSpec[] = [
      makePod('x', { cpuMilli: 1000 }, { labels: { app: 'a' }, ...anti('a') }),
      makePod('x', { cpuMilli: 1000 }, { labels: { app: 'b' }, ...anti('a', 'topology.kubernetes.io/zone') }),
      makePod(
        'x',
        { cpuMilli: 1000 },
        { labels: { app: 'a' }, podAffinity: { required: [{ labelSelector: { matchLabels: { app: 'b' } }, topologyKey: 'ai.sits2026.dev/rack' }] } },
      ),
      makePod('x', { cpuMilli: 1000 }, { labels: { app: 'b' } }),
      makePod('x', { cpuMilli: 1000 }, { labels: { app: 'c' }, namespace: 'other', ...anti('b', 'topology.kubernetes.io/zone') }),
      makePod(
        'x',
        { cpuMilli: 1000 },
        {
          labels: { app: 'a' },
          topologySpread: [
            { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'a' } } },
          ],
        },
      ),
      makePod(
        'x',
        { cpuMilli: 1000 },
        {
          labels: { app: 'b' },
          topologySpread: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'DoNotSchedule',
              minDomains: 7,
              labelSelector: { matchLabels: { app: 'b' } },
            },
            { maxSkew: 2, topologyKey: 'ai.sits2026.dev/rack', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: {} },
          ],
        },
      ),
      makePod(
        'x',
        { cpuMilli: 1000 },
        {
          labels: { app: 'b' },
          topologySpread: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'DoNotSchedule',
              labelSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['a', 'b'] }] },
            },
          ],
        },
      ),
      makePod(
        'x',
        { cpuMilli: 1000 },
        {
          labels: { app: 'c' },
          podAffinity: { preferred: [{ weight: 30, term: { labelSelector: { matchLabels: { app: 'a' } }, topologyKey: 'topology.kubernetes.io/zone' } }] },
          podAntiAffinity: { preferred: [{ weight: 70, term: { labelSelector: { matchLabels: { app: 'b' } }, topologyKey: 'kubernetes.io/hostname' } }] },
        },
      ),
    ];
    const prof = profile();
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 5 }), fc.boolean()), { maxLength: 40 }), (ops) => {
        const state = cluster();
        // symmetric: the indexes the scheduler keys by namespace and labels once existing pods' terms match them (ADR 0077).
        const kept = shapes.map((p) => new ScoreIndex(state, prof, p, undefined, true));
        kept.forEach((k) => k.refresh());
        const placed: string[] = [];
        ops.forEach(([shape, node, remove], i) => {
          if (remove && placed.length > 0) state.release(placed.shift() as string);
          else state.allocate(allocationFor({ ...(shapes[shape] as PodSpec), id: `p${i}` }, (state.nodes[node] as { name: string }).name, []));
          if (!remove) placed.push(`p${i}`);
          kept.forEach((k) => k.refresh());
        });
        shapes.forEach((p, k) => {
          const fresh = new ScoreIndex(state, prof, p, undefined, true);
          fresh.refresh();
          expect(Array.from((kept[k] as ScoreIndex).reason)).toEqual(Array.from(fresh.reason));
          // Scores of feasible nodes only: an infeasible node's score slot is never read.
          const feasibleScores = (x: ScoreIndex): number[] => Array.from(x.score).map((v, i) => (x.reason[i] === 0 ? v : 0));
          expect(feasibleScores(kept[k] as ScoreIndex)).toEqual(feasibleScores(fresh));
          expect((kept[k] as ScoreIndex).best()).toBe(fresh.best());
        });
      }),
      { numRuns: 150 },
    );
  });
});
