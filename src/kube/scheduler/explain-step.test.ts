// `sits explain` on running work (issue 19): the expected step on the GPUs the pods hold vs on an ideal
// placement, through explainTarget — the function LiveScheduler.explain (and so the CLI) calls.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { testPod } from '../../harness/e2e-kit.ts';
import { resolveProfile } from '../../core/plugins/registry.ts';
import { seededRng } from '../../core/ports.ts';
import { ClusterCache } from '../cache/cluster-cache.ts';
import { explainTarget } from './explain.ts';
import { nodeObjectFor } from '../cache/labels.ts';
import { PodJobs } from '../cache/pod-jobs.ts';

function node(name: string, shape: string, zone: string): V1Node {
  const o = nodeObjectFor(name, shape, { zone, block: 'b', rack: 'r' });
  return { metadata: { name, labels: o.labels, annotations: o.annotations }, status: { capacity: o.capacity, allocatable: o.capacity } };
}
const bound = (p: V1Pod, nodeName: string, gpus: string): V1Pod => ({
  ...p,
  metadata: { ...p.metadata, annotations: { ...p.metadata?.annotations, 'ai.sits2026.dev/gpu-indices': gpus } },
  spec: { ...p.spec, containers: p.spec?.containers ?? [], nodeName },
  status: { phase: 'Running' },
});

function explain(cache: ClusterCache, target: string) {
  const profile = resolveProfile('sits', { typicalShapes: [] });
  if (!profile.ok) throw new Error('profile');
  return explainTarget(
    { cache, jobs: new PodJobs(cache, 'sits-scheduler', { nowMs: () => 0 }), profile: profile.value, schedulerName: 'sits-scheduler', rng: () => seededRng(1) },
    target,
    0,
  );
}

describe('sits explain: expected step time of running work', () => {
  const cache = new ClusterCache();
  cache.upsertNode(node('a100-0', 'hgx-a100', 'z0'));
  cache.upsertNode(node('a100-1', 'hgx-a100', 'z1'));
  // A 4-GPU gang split 2 + 2 over two zones; another packed on one node; a single 1-GPU pod.
  cache.upsertPod(bound(testPod('ml', 'split-0', { gpus: 2, group: 'split' }), 'a100-0', '0,1'));
  cache.upsertPod(bound(testPod('ml', 'split-1', { gpus: 2, group: 'split' }), 'a100-1', '0,1'));
  cache.upsertPod(bound(testPod('ml', 'packed-0', { gpus: 2, group: 'packed' }), 'a100-0', '4,5'));
  cache.upsertPod(bound(testPod('ml', 'packed-1', { gpus: 2, group: 'packed' }), 'a100-0', '6,7'));
  cache.upsertPod(bound(testPod('ml', 'one', { gpus: 1 }), 'a100-1', '7'));

  it('a gang spread over two zones: its step on these GPUs, slower than on one node', () => {
    const r = explain(cache, 'ml/split');
    expect(r.state).toBe('bound');
    expect(r.lines[0]).toBe('gang ml/split is running: 2 pods on a100-0, a100-1');
    expect(r.lines[1]).toMatch(
      /^expected step of a gpt-1b DDP job \(ADR 0103\) on these 4 GPUs on 2 node\(s\): \d+\.\d{3} s = compute \d+\.\d{3} s \+ (ring|tree) all-reduce .* limited by cluster at \d+ GB\/s; \d+ tokens\/s, GPU utilisation \d+\.\d %$/,
    );
    const ratio = Number(/×(\d+\.\d+) the ideal step$/.exec(r.lines[2] ?? '')?.[1]);
    expect(r.lines[2]).toMatch(/^on an ideal placement \(1 A100-80G node\(s\) like a100-0, one rack\): /);
    expect(ratio).toBeGreaterThan(1);
  });

  it('a gang packed on one NVSwitch node is its own ideal', () => {
    const r = explain(cache, 'ml/packed');
    expect(r.lines[0]).toBe('gang ml/packed is running: 2 pods on a100-0');
    expect(r.lines[1]).toContain('limited by nvswitch at 240 GB/s');
    expect(r.lines[2]).toMatch(/×1\.00 the ideal step$/);
  });

  it('a bound pod keeps its line and gains the step; an unknown name stays unknown', () => {
    const r = explain(cache, 'ml/one');
    expect(r.lines[0]).toBe('ml/one is bound to a100-1 (GPUs 7)');
    expect(r.lines[1]).toContain('on these 1 GPUs on 1 node(s)');
    expect(r.lines[1]).toContain('no all-reduce (one GPU)');
    expect(explain(cache, 'ml/nothing').state).toBe('unknown');
  });
});
