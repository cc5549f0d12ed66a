// `sits explain` on a waiting gang (issue 31): a member pod answers for its group, a gang no empty cluster holds
// says so with the numbers, and an estimate the scheduler published that has passed is called overdue.
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { testPod } from '../../harness/e2e-kit.ts';
import { resolveProfile } from '../../core/plugins/registry.ts';
import { seededRng } from '../../core/ports.ts';
import { ANNOTATION } from '../../api/wire.ts';
import { ClusterCache } from '../cache/cluster-cache.ts';
import { explainTarget } from './explain.ts';
import { nodeObjectFor } from '../cache/labels.ts';
import { PodJobs } from '../cache/pod-jobs.ts';

function node(name: string, shape: string): V1Node {
  const o = nodeObjectFor(name, shape, { zone: 'z', block: 'b', rack: 'r' });
  return { metadata: { name, labels: o.labels, annotations: o.annotations }, status: { capacity: o.capacity, allocatable: o.capacity } };
}
const NOW = Date.parse('2026-01-01T01:00:00Z');

function explain(cache: ClusterCache, target: string) {
  const profile = resolveProfile('sits', { typicalShapes: [] });
  if (!profile.ok) throw new Error('profile');
  return explainTarget(
    {
      cache,
      jobs: new PodJobs(cache, 'sits-scheduler', { nowMs: () => NOW }),
      profile: profile.value,
      schedulerName: 'sits-scheduler',
      rng: () => seededRng(1),
    },
    target,
    NOW,
  );
}

function cluster(): ClusterCache {
  const cache = new ClusterCache();
  cache.upsertNode(node('a100-0', 'hgx-a100'));
  cache.upsertNode(node('a100-1', 'hgx-a100'));
  return cache;
}

/** An 8-GPU pod running on a100-0 for `forMs`, holding all its GPUs. */
function runBlocker(cache: ClusterCache, forMs: number): void {
  const blocker = testPod('default', 'blocker', { gpus: 8 });
  cache.upsertPod({
    ...blocker,
    metadata: { ...blocker.metadata, annotations: { [ANNOTATION.gpuIndices]: '0,1,2,3,4,5,6,7' } },
    spec: { ...blocker.spec, containers: blocker.spec?.containers ?? [], nodeName: 'a100-0' },
    status: { phase: 'Running', startTime: new Date(NOW - forMs) },
  });
}

describe('sits explain: a waiting gang', () => {
  it('a member pod of a gang bigger than the cluster: its group, and "can never fit" with the numbers', () => {
    const cache = cluster();
    for (let i = 0; i < 6; i++) cache.upsertPod(testPod('default', `huge-${i}`, { gpus: 8, group: 'huge' }));
    const r = explain(cache, 'default/huge-0');
    expect(r.state, r.lines.join('\n')).toBe('waiting');
    expect(r.podGroup).toBe('default/huge');
    expect(r.lines[0]).toBe('pod default/huge-0 belongs to pod group default/huge: it starts with the whole gang');
    expect(r.neverFits).toBe(true);
    expect(r.lines.at(-1)).toBe('can never fit: needs 48 GPUs (6 pods × 8), the cluster has 16 (16 A100-80G)');
    expect(r.lines.join('\n')).not.toContain('expected start');
    // The group itself gives the same answer, without the member line.
    expect(explain(cache, 'default/huge').lines.at(-1)).toBe(r.lines.at(-1));
  });

  it('a gang that would fit an empty cluster is not "never": it gets an expected start', () => {
    const cache = cluster();
    runBlocker(cache, 7_200_000);
    // It was expected to start 30 minutes ago (the running scheduler's annotation) and still waits.
    for (let i = 0; i < 2; i++)
      cache.upsertPod(testPod('default', `pair-${i}`, { gpus: 8, group: 'pair', annotations: { [ANNOTATION.expectedStart]: '2026-01-01T00:30:00.000Z' } }));
    const r = explain(cache, 'default/pair-1');
    expect(r.neverFits, r.lines.join('\n')).toBeUndefined();
    expect(r.overdueSinceMs).toBe(Date.parse('2026-01-01T00:30:00Z'));
    const overdue = r.lines.find((l) => l.startsWith('overdue since'));
    expect(overdue).toBe(
      'overdue since 2026-01-01T00:30:00.000Z (30 min ago) for default/pair: the estimate assumed running jobs would end by their expected runtimes (given or learned); still running: default/blocker (running 120 min)',
    );
    expect(r.lines.at(-1)).toMatch(/^expected start: /);
    // Less than a minute past is the refresh's lag, not overdue.
    for (let i = 0; i < 2; i++)
      cache.upsertPod(testPod('default', `pair-${i}`, { gpus: 8, group: 'pair', annotations: { [ANNOTATION.expectedStart]: '2026-01-01T00:59:30.000Z' } }));
    expect(explain(cache, 'default/pair').overdueSinceMs).toBeUndefined();
  });

  it('a gang that fits only where it would train far slower says it waits for a better placement and what it expects (ADR 0188, 0200)', () => {
    // The NVSwitch node is busy; a 2.7B GPT over 8 one-GPU pods fits the other node, where its ring crosses the sockets.
    // Created `ageMs` ago; held since `heldMs` ago when the scheduler recorded a hold (ADR 0195).
    const withGang = (ageMs: number, heldMs?: number): ClusterCache => {
      const cache = new ClusterCache();
      cache.upsertNode(node('a100-0', 'hgx-a100'));
      cache.upsertNode(node('two-0', 'nvlink-2x4'));
      runBlocker(cache, 600_000);
      for (let i = 0; i < 8; i++) {
        const held = heldMs === undefined ? {} : { [ANNOTATION.heldSince]: new Date(NOW - heldMs).toISOString() };
        const p = testPod('default', `big-${i}`, { gpus: 1, group: 'big', annotations: { [ANNOTATION.trainingModel]: 'gpt/2652000000/ddp', ...held } });
        cache.upsertPod({ ...p, metadata: { ...p.metadata, creationTimestamp: new Date(NOW - ageMs) } });
      }
      return cache;
    };
    // Both nodes have A100s: the slowness is the links, so it holds for as long as the NVSwitch node is expected to free
    // within a day (ADR 0200): the blocker's expected end.
    const holds = (waitedS: number): string =>
      `queue default holds it (better-placement): gang default/big (8×1 GPU) waits for a better placement: the best free one now gives 1.84× its best step time; expects 46 % shorter steps; waited ${waitedS} of at most 86400 s; a better one expected free in 600 s`;
    const r = explain(withGang(120_000, 60_000), 'default/big');
    expect(r.lines[0], r.lines.join('\n')).toBe('fits now: two-0');
    // Counted from the hold the scheduler recorded, not from the pods' creation.
    expect(r.lines[1]).toBe(holds(60));
    // Not held yet: the scheduler's next cycle starts the hold, however long the gang queued before (ADR 0191).
    expect(explain(withGang(7_200_000), 'default/big').lines[1]).toBe(holds(0));
    // Waiting is bounded: held for a day, it takes the free node at the next cycle.
    expect(explain(withGang(90_000_000, 86_400_000), 'default/big').lines).toContain('queue default: admitted at the next cycle');
  });

  it('a model the cluster has too few of: counted per model', () => {
    const cache = cluster();
    cache.upsertNode(node('h100-0', 'dgx-h100'));
    for (let i = 0; i < 3; i++) cache.upsertPod(testPod('default', `h-${i}`, { gpus: 8, group: 'h', annotations: { [ANNOTATION.gpuModels]: 'H100-SXM' } }));
    const r = explain(cache, 'default/h');
    expect(r.lines.at(-1), r.lines.join('\n')).toMatch(
      /^can never fit: needs 24 GPUs of H100-SXM \(3 pods × 8\), the cluster has 8 of them \(24 GPUs in all: /,
    );
  });
});

describe('sits explain: whose pod', () => {
  it('a waiting pod of another scheduler names that scheduler', () => {
    const cache = cluster();
    cache.upsertPod(testPod('default', 'theirs', { gpus: 1, schedulerName: 'gpu-scheduler' }));
    const r = explain(cache, 'default/theirs');
    expect(r.state).toBe('unknown');
    expect(r.lines).toEqual(['default/theirs: waits for scheduler gpu-scheduler, not sits-scheduler (pass --scheduler-name gpu-scheduler)']);
  });
});
