// End-to-end check of the test control plane: real etcd + kube-apiserver + kube-scheduler.
// The first run may build the binaries (many minutes); see docs/control-plane.md.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:https';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, VersionApi } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';

import { ensureK8sBinaries, startControlPlane } from './control-plane.ts';
import type { ControlPlane } from './control-plane.ts';
import { createFakeGpuNodes, createNamespace, deletePodNow } from './fake-nodes.ts';
import { scaled } from '../testing/timeouts.ts';

const BUILD_TIMEOUT_MS = 60 * 60_000; // first build of the binaries on 2 cores
const START_TIMEOUT_MS = scaled(180_000);

function getJson(url: string, token: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 10_000 }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (data += d));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(data) as unknown });
        } catch {
          resolve({ status: res.statusCode ?? 0, body: data });
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** PIDs of live processes whose process group is one of `pgids` (zombies excluded). */
function membersOfGroups(pgids: readonly number[]): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,pgid=,stat='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length === 3 && pgids.includes(Number(f[1])) && !f[2]?.startsWith('Z'))
    .map((f) => Number(f[0]));
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + scaled(timeoutMs); // the budget on an idle machine, scaled for this one
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      lastErr = e;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
}

function gpuPod(name: string, namespace: string, schedulerName: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      schedulerName,
      containers: [
        {
          name: 'main',
          image: 'example.invalid/none:0',
          resources: { limits: { 'nvidia.com/gpu': '2' }, requests: { 'nvidia.com/gpu': '2', cpu: '1' } },
        },
      ],
    },
  };
}

describe('test control plane (etcd + kube-apiserver + kube-scheduler)', () => {
  let cp: ControlPlane | undefined;
  const logs: string[] = [];

  beforeAll(async () => {
    const binDir = await ensureK8sBinaries();
    const t0 = Date.now();
    cp = await startControlPlane({ binDir, log: (l) => logs.push(l) });
    process.stderr.write(`control plane started in ${Date.now() - t0} ms\n`);
  }, BUILD_TIMEOUT_MS + START_TIMEOUT_MS);

  afterAll(async () => {
    await cp?.stop();
  }, scaled(60_000));

  function plane(): ControlPlane {
    if (!cp) throw new Error('control plane not started');
    return cp;
  }

  it('serves /version v1.36.x', async () => {
    const { status, body } = await getJson(`${plane().server}/version`, plane().token);
    expect(status).toBe(200);
    expect((body as { gitVersion?: string }).gitVersion).toMatch(/^v1\.36\.\d+$/);
    const info = await plane().kubeConfig().makeApiClient(VersionApi).getCode();
    expect(info.major).toBe('1');
    expect(info.minor).toBe('36');
  });

  it('creates a namespace, a fake GPU node and a pod, and binds the pod', async () => {
    const kc = plane().kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await createNamespace(kc, 'bind-test');

    const [node] = await createFakeGpuNodes(kc, [
      { name: 'gpu-node-1', labels: { 'sits.test/pool': 'a' }, annotations: { 'sits.test/note': 'fake' }, capacity: { 'nvidia.com/gpu': '8' } },
    ]);
    expect(node?.status?.capacity?.['nvidia.com/gpu']).toBe('8');
    expect(node?.status?.allocatable?.['nvidia.com/gpu']).toBe('8');
    expect(node?.status?.allocatable?.['pods']).toBe('110');
    const stored = await core.readNode({ name: 'gpu-node-1' });
    expect(stored.status?.allocatable?.['nvidia.com/gpu']).toBe('8');
    expect(stored.spec?.taints ?? []).toEqual([]); // TaintNodesByCondition is disabled
    expect(stored.metadata?.annotations?.['sits.test/note']).toBe('fake');

    // A scheduler name nobody serves: the pod stays unbound until we bind it.
    const pod = await core.createNamespacedPod({ namespace: 'bind-test', body: gpuPod('p1', 'bind-test', 'sits-test-none') });
    expect(pod.spec?.nodeName).toBeUndefined();
    await core.createNamespacedPodBinding({
      name: 'p1',
      namespace: 'bind-test',
      body: {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: 'p1', namespace: 'bind-test', ...(pod.metadata?.uid ? { uid: pod.metadata.uid } : {}) },
        target: { apiVersion: 'v1', kind: 'Node', name: 'gpu-node-1' },
      },
    });
    const bound = await core.readNamespacedPod({ name: 'p1', namespace: 'bind-test' });
    expect(bound.spec?.nodeName).toBe('gpu-node-1');

    expect(await deletePodNow(kc, 'bind-test', 'p1')).toBe(true);
    await waitFor('pod p1 to be gone', async () => {
      const pods = await core.listNamespacedPod({ namespace: 'bind-test' });
      return pods.items.length === 0 ? true : undefined;
    });
    expect(await deletePodNow(kc, 'bind-test', 'p1')).toBe(false);
  });

  it('runs kube-scheduler, which keeps scheduling across an apiserver restart', async () => {
    const kc = plane().kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await createNamespace(kc, 'sched-test');
    const sched = await plane().startScheduler();
    expect(isAlive(sched.pid)).toBe(true);

    await core.createNamespacedPod({ namespace: 'sched-test', body: gpuPod('before', 'sched-test', 'default-scheduler') });
    const before = await waitFor('pod "before" to be scheduled', async () => {
      const p = await core.readNamespacedPod({ name: 'before', namespace: 'sched-test' });
      return p.spec?.nodeName;
    });
    expect(before).toBe('gpu-node-1');

    const apiPidsBefore = plane().childPids();
    await plane().restartApiServer();
    expect(plane().childPids()).not.toEqual(apiPidsBefore); // a new kube-apiserver process
    const { status } = await getJson(`${plane().server}/readyz`, plane().token);
    expect(status).toBe(200);
    const nss = await core.listNamespace();
    expect(nss.items.map((n) => n.metadata?.name)).toContain('sched-test'); // same etcd, same data

    // The scheduler survived the restart and still schedules (its watches reconnect).
    expect(isAlive(sched.pid)).toBe(true);
    await core.createNamespacedPod({ namespace: 'sched-test', body: gpuPod('after', 'sched-test', 'default-scheduler') });
    const after = await waitFor(
      'pod "after" to be scheduled after the apiserver restart',
      async () => {
        const p = await core.readNamespacedPod({ name: 'after', namespace: 'sched-test' });
        return p.spec?.nodeName;
      },
      90_000,
    );
    expect(after).toBe('gpu-node-1');

    // 8 GPUs, 2 per pod: a 5th pod must stay pending (the fake capacity is respected).
    for (const name of ['c', 'd', 'e']) {
      await core.createNamespacedPod({ namespace: 'sched-test', body: gpuPod(name, 'sched-test', 'default-scheduler') });
    }
    const unschedulable = await waitFor('one pod to be marked unschedulable', async () => {
      const pods = await core.listNamespacedPod({ namespace: 'sched-test' });
      const bound = pods.items.filter((p) => p.spec?.nodeName).length;
      const pending = pods.items.filter((p) => p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable'));
      return bound === 4 && pending.length === 1 ? pending : undefined;
    });
    expect(unschedulable).toHaveLength(1);

    await plane().stopScheduler();
    expect(isAlive(sched.pid)).toBe(false);
  });

  it(
    'runs kube-controller-manager, whose PV controller binds a static PV to a claim (no kubelet needed)',
    async () => {
      const kcm = await plane().startControllerManager({ controllers: ['persistentvolume-binder-controller'] });
      const core = plane().kubeConfig().makeApiClient(CoreV1Api);
      await createNamespace(plane().kubeConfig(), 'pv-test');
      await core.createPersistentVolume({
        body: {
          metadata: { name: 'pv-1' },
          spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'manual', hostPath: { path: '/tmp/pv-1' } },
        },
      });
      await core.createNamespacedPersistentVolumeClaim({
        namespace: 'pv-test',
        body: {
          metadata: { name: 'claim' },
          spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } },
        },
      });
      const claim = await waitFor('claim Bound', async () => {
        const c = await core.readNamespacedPersistentVolumeClaim({ namespace: 'pv-test', name: 'claim' });
        return c.status?.phase === 'Bound' ? c : undefined;
      });
      expect(claim.spec?.volumeName).toBe('pv-1');
      await kcm.stop();
      expect(isAlive(kcm.pid)).toBe(false);
    },
    BUILD_TIMEOUT_MS,
  );

  it('stop() leaves no child process and removes its temp dir', async () => {
    const p = plane();
    const pids = p.childPids();
    expect(pids.length).toBeGreaterThanOrEqual(3); // etcd, kube-apiserver, watchdog
    await p.stop();
    expect(pids.filter(isAlive)).toEqual([]);
    expect(membersOfGroups(pids)).toEqual([]);
    expect(p.childPids()).toEqual([]);
    expect(existsSync(p.dir)).toBe(false);
    await p.stop(); // idempotent
  });
});
