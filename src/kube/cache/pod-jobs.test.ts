import { describe, expect, it } from 'vitest';
import { testPod } from '../../harness/e2e-kit.ts';
import { ClusterCache } from './cluster-cache.ts';
import { PodJobs } from './pod-jobs.ts';

describe('PodJobs: pods as jobs', () => {
  it('a gang whose PodGroup is watched but not seen yet waits for it, never placed with the members seen so far', () => {
    const cache = new ClusterCache();
    const jobs = new PodJobs(cache, 'sits-scheduler', { nowMs: () => 0 });
    jobs.podGroupsWatched = true;
    for (let i = 0; i < 2; i++) cache.upsertPod(testPod('ml', `g-${i}`, { gpus: 8, group: 'g' }));
    const state = cache.state();
    let view = jobs.view(state);
    expect(view.jobs).toEqual([]);
    expect(view.short.map((s) => s.message)).toEqual(['gang ml/g: waiting for PodGroup ml/g (its pods name it; no ai.sits2026.dev/min-member annotation)']);
    jobs.podGroups.set('ml/g', { metadata: { name: 'g', namespace: 'ml' }, spec: { minMember: 4 } });
    view = jobs.view(state);
    expect(view.short.map((s) => s.message)).toEqual(['gang ml/g: waiting for pods: 2 of minMember 4 exist']);
    for (let i = 2; i < 4; i++) cache.upsertPod(testPod('ml', `g-${i}`, { gpus: 8, group: 'g' }));
    view = jobs.view(state);
    expect(view.jobs.map((j) => [j.id, j.gang.minMember, j.gang.members.length])).toEqual([['gang:ml/g', 4, 4]]);
  });

  it('without the PodGroup CRD, or with the gang described on the pods, the pods describe the gang', () => {
    const cache = new ClusterCache();
    const jobs = new PodJobs(cache, 'sits-scheduler', { nowMs: () => 0 });
    cache.upsertPod(testPod('ml', 'a-0', { gpus: 1, group: 'a' }));
    expect(jobs.view(cache.state()).jobs.map((j) => j.id)).toEqual(['gang:ml/a']);
    jobs.podGroupsWatched = true;
    const annotated = { 'ai.sits2026.dev/min-member': '2' };
    cache.upsertPod(testPod('ml', 'b-0', { gpus: 1, group: 'b', annotations: annotated }));
    cache.upsertPod(testPod('ml', 'b-1', { gpus: 1, group: 'b', annotations: annotated }));
    expect(
      jobs
        .view(cache.state())
        .jobs.map((j) => j.id)
        .sort(),
    ).toEqual(['gang:ml/b']);
  });
});
