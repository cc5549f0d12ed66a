import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { testPod } from '../../harness/e2e-kit.ts';
import { ClusterCache } from './cluster-cache.ts';
import { nodeObjectFor } from './labels.ts';

function node(name: string): V1Node {
  const o = nodeObjectFor(name, 'dgx-h100', { zone: 'z', block: 'b', rack: 'r' });
  return { metadata: { name, labels: o.labels, annotations: o.annotations }, status: { capacity: o.capacity, allocatable: o.capacity } };
}
const bound = (p: V1Pod, nodeName: string, gpus: string): V1Pod => ({
  ...p,
  metadata: { ...p.metadata, annotations: { ...p.metadata?.annotations, 'ai.sits2026.dev/gpu-indices': gpus } },
  spec: { ...p.spec, containers: p.spec?.containers ?? [], nodeName },
  status: { phase: 'Running' },
});

describe('ClusterCache: the snapshot changes only when a cycle takes it', () => {
  it('watch events are applied at the next snapshot, not before; releases say so once', () => {
    const cache = new ClusterCache();
    cache.upsertNode(node('n-0'));
    const first = cache.snapshot();
    expect(first.state.size).toBe(1);
    const pod = testPod('ns', 'a', { gpus: 2 });
    cache.upsertPod(bound(pod, 'n-0', '3,4'));
    // Between snapshots the state a cycle works on does not move.
    expect(first.state.allocation('ns/a')).toBeUndefined();
    const s2 = cache.snapshot();
    expect(s2.state).toBe(first.state);
    expect(s2.state.allocation('ns/a')?.gpus).toEqual([3, 4]);
    expect(s2.freed).toBe(false);
    cache.deletePod(bound(pod, 'n-0', '3,4'));
    expect(s2.state.allocation('ns/a')).toBeDefined();
    // Metrics may read the state in between: the release is applied, and the next cycle still hears of it.
    expect(cache.state().allocation('ns/a')).toBeUndefined();
    expect(cache.snapshot().freed).toBe(true);
    expect(cache.snapshot().freed).toBe(false);
  });

  it('a pod bound by another replica onto the GPUs of a pod that ended is counted on its own GPUs, whatever order the events came in (bench chaos seed 1)', () => {
    // A new leader's first snapshot after a failover carries both: `q`, created before `p` ended, then bound by the
    // old leader onto p's GPUs 4,5. Reconciled in the order they became dirty, q was counted while p still held 4,5:
    // on the lowest free GPUs instead (0,1), and 4,5 looked free to the next gang.
    const cache = new ClusterCache();
    cache.upsertNode(node('n-0'));
    const p = bound(testPod('ns', 'p', { gpus: 2 }), 'n-0', '4,5');
    cache.upsertPod(p);
    cache.snapshot();
    const q = testPod('ns', 'q', { gpus: 2 });
    cache.upsertPod(q);
    cache.upsertPod({ ...p, status: { phase: 'Succeeded' } });
    cache.upsertPod(bound(q, 'n-0', '4,5'));
    const { state } = cache.snapshot();
    expect(state.allocation('ns/p')).toBeUndefined();
    expect(state.allocation('ns/q')?.gpus).toEqual([4, 5]);
    expect(Array.from(state.node('n-0')?.gpuFree ?? []).flatMap((m, g) => (m === 0 ? [g] : []))).toEqual([4, 5]);
  });

  it('a pod counted on other GPUs than its annotation says (they were taken) moves to its own once they are free', () => {
    const logs: string[] = [];
    const cache = new ClusterCache(undefined, (m) => logs.push(m));
    cache.upsertNode(node('n-0'));
    const p = bound(testPod('ns', 'p', { gpus: 2 }), 'n-0', '4,5');
    const q = bound(testPod('ns', 'q', { gpus: 2 }), 'n-0', '4,5');
    cache.upsertPod(p);
    cache.upsertPod(q); // two live pods say they hold 4,5: one is counted elsewhere, and a line says so
    expect(cache.snapshot().state.allocation('ns/q')?.gpus).toEqual([0, 1]);
    expect(logs).toEqual(['pod ns/q on n-0: its GPUs 4,5 are held by another pod here; counted on 0,1 until they are free']);
    expect(cache.snapshot().state.allocation('ns/q')?.gpus).toEqual([0, 1]);
    expect(logs).toHaveLength(1); // said once
    cache.deletePod(p); // q itself has no new event
    expect(cache.snapshot().state.allocation('ns/q')?.gpus).toEqual([4, 5]);
  });

  it('a pod on a node with no GPU left is counted without devices, said once however many snapshots retry it', () => {
    const logs: string[] = [];
    const cache = new ClusterCache(undefined, (m) => logs.push(m));
    cache.upsertNode(node('n-0'));
    for (const i of [0, 1, 2, 3]) cache.upsertPod(bound(testPod('ns', `f${i}`, { gpus: 2 }), 'n-0', `${2 * i},${2 * i + 1}`));
    cache.upsertPod(bound(testPod('ns', 'x', { gpus: 2 }), 'n-0', '0,1'));
    expect(cache.snapshot().state.allocation('ns/x')?.gpuMilli).toBe(0);
    cache.snapshot();
    cache.snapshot();
    expect(logs).toEqual(['pod ns/x on n-0: GPUs over-committed; counting it without devices']);
  });

  it("an assumed allocation survives the pod's unbound updates until the watch confirms it; forget releases it", () => {
    const cache = new ClusterCache();
    cache.upsertNode(node('n-0'));
    const pod = testPod('ns', 'b', { gpus: 1 });
    cache.upsertPod(pod);
    const { state } = cache.snapshot();
    expect(cache.pending.has('ns/b')).toBe(true);
    state.allocate({ podId: 'ns/b', node: 'n-0', gpus: [5], gpuMilli: 1000, cpuMilli: 1000, memoryMiB: 1024, priority: 0, queue: 'default' });
    expect(cache.assumePlaced('ns/b')).toBe(true);
    expect(cache.pending.has('ns/b')).toBe(false);
    cache.upsertPod({ ...pod, metadata: { ...pod.metadata, annotations: { note: 'x' } } });
    expect(cache.snapshot().state.allocation('ns/b')?.gpus).toEqual([5]);
    expect(cache.isAssumed('ns/b')).toBe(true);
    cache.upsertPod(bound(pod, 'n-0', '5'));
    cache.snapshot();
    expect(cache.isAssumed('ns/b')).toBe(false);
    expect(state.allocation('ns/b')?.gpus).toEqual([5]);

    const c = testPod('ns', 'c', { gpus: 1 });
    cache.upsertPod(c);
    cache.snapshot();
    state.allocate({ podId: 'ns/c', node: 'n-0', gpus: [6], gpuMilli: 1000, cpuMilli: 1000, memoryMiB: 1024, priority: 0, queue: 'default' });
    cache.assumePlaced('ns/c');
    // The binding failed: the pod waits again and its GPUs are released at the next snapshot.
    cache.forget('ns/c');
    expect(cache.pending.has('ns/c')).toBe(true);
    const after = cache.snapshot();
    expect(after.state.allocation('ns/c')).toBeUndefined();
    expect(after.freed).toBe(true);
  });

  it('a gated pod is not pending until its last gate is removed; a pod with spec.nodeName never is; bound host ports are held', () => {
    const cache = new ClusterCache();
    cache.upsertNode(node('n-0'));
    const pod = testPod('ns', 'g', { gpus: 1 });
    const gated: V1Pod = { ...pod, spec: { ...pod.spec, containers: pod.spec?.containers ?? [], schedulingGates: [{ name: 'a' }, { name: 'b' }] } };
    cache.upsertPod(gated);
    expect(cache.pending.has('ns/g')).toBe(false);
    cache.upsertPod({ ...gated, spec: { ...gated.spec, containers: gated.spec?.containers ?? [], schedulingGates: [{ name: 'b' }] } });
    expect(cache.pending.has('ns/g')).toBe(false);
    cache.upsertPod({ ...gated, spec: { ...gated.spec, containers: gated.spec?.containers ?? [], schedulingGates: [] } });
    expect(cache.pending.has('ns/g')).toBe(true);
    const web = testPod('ns', 'web', { gpus: 0 });
    (web.spec?.containers[0] as { ports?: unknown }).ports = [{ containerPort: 80, hostPort: 8080 }];
    cache.upsertPod({ ...web, spec: { ...web.spec, containers: web.spec?.containers ?? [], nodeName: 'n-0' }, status: { phase: 'Running' } });
    expect(cache.pending.has('ns/web')).toBe(false);
    expect(cache.snapshot().state.node('n-0')?.hostPorts?.get('TCP/8080')).toBe(1);
  });
});

describe('ClusterCache: the pods SITS is evicting', () => {
  it('leave when marked, until deleted or the eviction fails; a pod recreated under the same name is not leaving', () => {
    const cache = new ClusterCache();
    cache.upsertNode(node('n-0'));
    const victim = (uid: string): V1Pod => {
      const p = bound(testPod('ns', 'v-0', { gpus: 1 }), 'n-0', '0');
      return { ...p, metadata: { ...p.metadata, uid } };
    };
    cache.upsertPod(victim('u1'));
    cache.markLeaving(['ns/v-0', 'ns/unknown']);
    expect([cache.isLeaving('ns/v-0'), cache.isLeaving('ns/unknown')]).toEqual([true, false]);
    cache.stayed('ns/v-0');
    expect(cache.isLeaving('ns/v-0')).toBe(false);
    cache.markLeaving(['ns/v-0']);
    // The watch missed the delete (a relist), and the controller recreated the replica under its name.
    cache.upsertPod(victim('u2'));
    expect(cache.isLeaving('ns/v-0')).toBe(false);
    cache.markLeaving(['ns/v-0']);
    cache.deletePod(victim('u2'));
    cache.upsertPod(victim('u3'));
    expect(cache.isLeaving('ns/v-0')).toBe(false);
  });
});
