import { describe, expect, it } from 'vitest';
import {
  buildProfile,
  formatProfileError,
  PLUGIN_NAMES,
  priorityFifo,
  PROFILE_ALIASES,
  PROFILE_NAMES,
  resolveProfile,
  type ProfileConfig,
  type ProfileError,
} from './registry.ts';
import type { QueuedUnit } from '../framework/types.ts';

const env = { typicalShapes: [{ cpuMilli: 1000, gpuMilli: 1000, gpuCount: 1, gpuModels: [], weight: 1 }] };

const base: ProfileConfig = {
  name: 'mine',
  description: 'test',
  queueSort: 'priority-fifo',
  filters: ['fit'],
  scorers: [{ name: 'least-allocated', weight: 1 }],
  devicePicker: 'gpu-first-fit',
  selector: 'best',
  gangSearch: 'flat',
};

function errorOf(r: ReturnType<typeof buildProfile>): ProfileError {
  if (r.ok) throw new Error('expected an error');
  return r.error;
}

describe('buildProfile', () => {
  it('resolves a valid configuration into plugin instances, one per name', () => {
    const r = buildProfile({ ...base, scorers: [{ name: 'sits-frag', weight: 2 }], devicePicker: 'sits-frag' }, env);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const p = r.value;
    expect(p.name).toBe('mine');
    expect(p.queueSort.name).toBe('priority-fifo');
    expect(p.filters.map((f) => f.name)).toEqual(['fit']);
    expect(p.scorers.map((s) => [s.plugin.name, s.weight])).toEqual([['sits-frag', 2]]);
    expect(p.devicePicker).toBe(p.scorers[0]?.plugin);
    // fit carries the preFilter, so it is collected without being named for that point.
    expect(p.preFilters.map((x) => x.name)).toEqual(['fit']);
  });

  it.each([
    ['queueSort', { queueSort: 'fifo' }, 'fifo'],
    ['filters', { filters: ['fit', 'fitt'] }, 'fitt'],
    ['scorers', { scorers: [{ name: 'most-allocated', weight: 1 }] }, 'most-allocated'],
    ['devicePicker', { devicePicker: 'gpu-magic' }, 'gpu-magic'],
  ] as const)('an unknown plugin in %s is a typed error naming the profile and field', (field, patch, name) => {
    const e = errorOf(buildProfile({ ...base, ...patch }, env));
    expect(e).toEqual({ code: 'UnknownPlugin', name, profile: 'mine', field });
    expect(formatProfileError(e)).toBe(`profile mine: ${field}: unknown plugin "${name}" (known: ${PLUGIN_NAMES.join(', ')})`);
  });

  it.each([
    ['fit', 'pickGpus', { devicePicker: 'fit' }],
    ['fit', 'score', { scorers: [{ name: 'fit', weight: 1 }] }],
    ['least-allocated', 'filter', { filters: ['least-allocated'] }],
    ['fit', 'queueSort', { queueSort: 'fit' }],
    ['inter-pod-affinity', 'filter', { filters: ['inter-pod-affinity'] }],
  ] as const)('%s named where it does not implement %s is a MissingExtensionPoint error', (name, point, patch) => {
    const e = errorOf(buildProfile({ ...base, ...patch }, env));
    expect(e).toEqual({ code: 'MissingExtensionPoint', name, profile: 'mine', point });
    expect(formatProfileError(e)).toBe(`profile mine: plugin "${name}" does not implement ${point}`);
  });
});

describe('resolveProfile', () => {
  it('every built-in profile resolves', () => {
    for (const name of PROFILE_NAMES) {
      const r = resolveProfile(name, env);
      expect(r.ok, name).toBe(true);
      if (r.ok) expect(r.value.name).toBe(name);
    }
    expect(PROFILE_NAMES).toEqual(
      expect.arrayContaining(['sits', 'kube-default', 'random', 'round-robin', 'dotprod', 'gpu-clustering', 'gpu-packing', 'best-fit', 'fgd']),
    );
  });

  it('accepts the FGD benchmark aliases', () => {
    for (const [alias, name] of Object.entries(PROFILE_ALIASES)) {
      const r = resolveProfile(alias, env);
      expect(r.ok && r.value.name).toBe(name);
    }
  });

  it('an unknown profile is a typed error listing the known ones', () => {
    const r = resolveProfile('fastest', env);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toEqual({ code: 'UnknownProfile', profile: 'fastest' });
    expect(formatProfileError(r.error)).toBe(`unknown profile "fastest" (known: ${PROFILE_NAMES.join(', ')})`);
  });

  it('the sits profile uses topology-aware gang search and kube-default the flat one', () => {
    const sits = resolveProfile('sits', env);
    const kube = resolveProfile('kube-default', env);
    expect(sits.ok && sits.value.gangSearch).toBe('topology');
    expect(kube.ok && kube.value.gangSearch).toBe('flat');
    // kube-scheduler's soft per-node preferences with its default weights follow the profile's own scorers.
    expect(kube.ok && kube.value.scorers.map((s) => `${s.plugin.name}×${s.weight}`)).toEqual([
      'least-allocated×1',
      'balanced-allocation×1',
      'node-affinity×2',
      'taint-toleration×3',
      'pod-topology-spread×2',
      'inter-pod-affinity×2',
    ]);
  });
});

describe('the inter-pod scorers', () => {
  it('have no per-node score: each names the overlay score the score index weighs; every other scorer scores per node', () => {
    const kube = resolveProfile('kube-default', env);
    if (!kube.ok) throw new Error('kube-default');
    const byName = new Map(kube.value.scorers.map((s) => [s.plugin.name, s.plugin]));
    expect(byName.get('pod-topology-spread')).toEqual({ name: 'pod-topology-spread', interPodScore: 'spread' });
    expect(byName.get('inter-pod-affinity')).toEqual({ name: 'inter-pod-affinity', interPodScore: 'affinity' });
    for (const s of kube.value.scorers) if (s.plugin.interPodScore === undefined) expect(typeof s.plugin.score, s.plugin.name).toBe('function');
    // Alone in a profile they are valid scorers.
    expect(buildProfile({ ...base, scorers: [{ name: 'inter-pod-affinity', weight: 1 }] }, env).ok).toBe(true);
  });
});

describe('registry names', () => {
  it('plugin names are unique', () => {
    expect(new Set(PLUGIN_NAMES).size).toBe(PLUGIN_NAMES.length);
  });
});

describe('priorityFifo', () => {
  const u = (key: string, priority: number, arrivalMs: number, seq: number): QueuedUnit => ({ key, priority, queue: 'q', arrivalMs, seq });

  it('orders by priority (high first), then arrival, then submission sequence', () => {
    const units = [u('late-low', 0, 50, 0), u('early-low-2', 0, 10, 2), u('high', 5, 99, 9), u('early-low-1', 0, 10, 1)];
    expect([...units].sort(priorityFifo).map((x) => x.key)).toEqual(['high', 'early-low-1', 'early-low-2', 'late-low']);
  });
});
