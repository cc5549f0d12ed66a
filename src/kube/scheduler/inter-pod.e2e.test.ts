import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../client/client.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, createPods, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { devNodes, applyCrds } from '../../app/dev-cluster.ts';
import { createLiveApp, type LiveApp } from '../../app/live.ts';

// InterPodAffinity and PodTopologySpread in the live scheduler (issue 11, ADR 0054): 3 l4x8 nodes, two in
// zone-a and one in zone-b; the SITS scheduler runs in-process against a real kube-apiserver.
describe('live SITS scheduler: pod anti-affinity and topology spread', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let app: LiveApp;
  const nodes = devNodes(3, 'l4x8', 4).map((n, i) => ({ ...n, labels: { ...n.labels, 'topology.kubernetes.io/zone': i < 2 ? 'zone-a' : 'zone-b' } }));

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(plane.kubeConfig(), nodes);
    app = await createLiveApp({ kubeconfig: plane.kubeconfigPath, identity: 'e2e-inter-pod' });
  });
  afterAll(async () => {
    await app?.stop();
    client?.close();
    await plane?.stop();
  });

  const small = (ns: string, name: string, app: string, spec: Partial<NonNullable<V1Pod['spec']>>): V1Pod => {
    const p = testPod(ns, name, { gpus: 0, cpu: '100m', memory: '64Mi' });
    return { ...p, metadata: { ...p.metadata, labels: { ...p.metadata?.labels, app } }, spec: { ...p.spec, containers: p.spec?.containers ?? [], ...spec } };
  };
  const bound = async (ns: string): Promise<V1Pod[]> => (await listPods(client, ns)).filter((p) => (p.spec?.nodeName ?? '') !== '');

  it('three pods with required anti-affinity on kubernetes.io/hostname take three nodes; a fourth stays Pending with the reason', async () => {
    await createNs(client, 'anti');
    const anti = {
      affinity: {
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'kubernetes.io/hostname' }],
        },
      },
    };
    await createPods(
      client,
      [0, 1, 2, 3].map((i) => small('anti', `web-${i}`, 'web', anti)),
    );
    const placed = await waitFor('three of four anti-affinity pods bound', async () => {
      const ps = await bound('anti');
      return ps.length === 3 ? ps : undefined;
    });
    expect(new Set(placed.map((p) => p.spec?.nodeName)).size).toBe(3);
    const waiting = (await listPods(client, 'anti')).find((p) => (p.spec?.nodeName ?? '') === '')?.metadata?.name as string;
    // The condition may first carry an attempt made while the others were still binding (fewer nodes taken by
    // them); the scheduler retries on their binding events and rewrites it: wait for the settled reason.
    // Once the cycle counts the three it placed as running (before the watch confirms them, ADR 0179), the waiting
    // pod also holds a reservation for when the first of them ends (their default runtime), as in the simulator; the
    // condition says so without the countdown (ADR 0195).
    const expected = `0/3 nodes fit gang anti/${waiting} (1×no GPU): 3 node(s) didn't match pod anti-affinity rules`;
    const settled = new RegExp(`^${expected.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(; reserved 1 nodes)?$`);
    let last: string | undefined;
    await waitFor(`PodScheduled=False on the fourth pod saying "${expected}"`, async () => {
      const cond = (await listPods(client, 'anti'))
        .find((p) => p.metadata?.name === waiting)
        ?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
      last = cond?.message;
      return last !== undefined && settled.test(last) ? true : undefined;
    }).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}; last seen: ${last ?? 'no condition'}`);
    });
    expect((await bound('anti')).length).toBe(3);
  });

  it('a DoNotSchedule spread over zones is respected where least-allocated alone would fill zone-a; past the skew a pod waits with the reason', async () => {
    await createNs(client, 'spread');
    const zoneB = nodes[2]?.name as string;
    const withCpu = (p: V1Pod, cpu: string): V1Pod => {
      const c = p.spec?.containers[0];
      if (c !== undefined) c.resources = { requests: { cpu, memory: '64Mi' } };
      return p;
    };
    // 80 of zone-b's 96 cores taken: without the constraint, least-allocated sends the small pods to zone-a.
    await createPods(client, [withCpu(small('spread', 'heavy', 'other', { nodeSelector: { 'kubernetes.io/hostname': zoneB } }), '80')]);
    await waitFor('heavy pod bound', async () => ((await bound('spread')).length === 1 ? true : undefined));
    const spread = {
      topologySpreadConstraints: [
        { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'sp' } } },
      ],
    };
    await createPods(
      client,
      [0, 1, 2, 3].map((i) => small('spread', `sp-${i}`, 'sp', spread)),
    );
    const placed = await waitFor('four spread pods bound', async () => {
      const ps = (await bound('spread')).filter((p) => p.metadata?.labels?.['app'] === 'sp');
      return ps.length === 4 ? ps : undefined;
    });
    const zoneOf = new Map(nodes.map((n) => [n.name, n.labels['topology.kubernetes.io/zone'] as string]));
    const perZone = (ps: V1Pod[]): Record<string, number> => {
      const m: Record<string, number> = {};
      for (const p of ps) {
        const z = zoneOf.get(p.spec?.nodeName as string) as string;
        m[z] = (m[z] ?? 0) + 1;
      }
      return m;
    };
    expect(perZone(placed)).toEqual({ 'zone-a': 2, 'zone-b': 2 });
    // 20 cores each: zone-b has no room left; zone-a takes one (3 − 2 ≤ 1), the other would make the skew 2.
    await createPods(client, [withCpu(small('spread', 'sp-big-0', 'sp', spread), '20'), withCpu(small('spread', 'sp-big-1', 'sp', spread), '20')]);
    const five = await waitFor('one big spread pod bound', async () => {
      const ps = (await bound('spread')).filter((p) => p.metadata?.labels?.['app'] === 'sp');
      return ps.length === 5 ? ps : undefined;
    });
    expect(perZone(five)).toEqual({ 'zone-a': 3, 'zone-b': 2 });
    const waiting = (await listPods(client, 'spread')).find((p) => (p.spec?.nodeName ?? '') === '')?.metadata?.name as string;
    const cond = await waitFor('PodScheduled=False on the pod past the skew', async () =>
      (await listPods(client, 'spread'))
        .find((p) => p.metadata?.name === waiting)
        ?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False'),
    );
    expect(cond.message).toBe(`0/3 nodes fit gang spread/${waiting} (1×no GPU): 2 node(s) didn't match pod topology spread constraints, 1 insufficient cpu`);
  });

  it('namespaceSelector reads the labels of namespaces: anti-affinity to app=db in namespaces labelled team=red keeps a pod off that node only', async () => {
    await client.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'red-db', labels: { team: 'red' } } });
    await createNs(client, 'blue-db');
    await createNs(client, 'app');
    const [n0, n1] = nodes.map((n) => n.name) as [string, string];
    await createPods(client, [
      small('red-db', 'db', 'db', { nodeSelector: { 'kubernetes.io/hostname': n0 } }),
      small('blue-db', 'db', 'db', { nodeSelector: { 'kubernetes.io/hostname': n1 } }),
    ]);
    await waitFor('both db pods bound', async () => ((await bound('red-db')).length === 1 && (await bound('blue-db')).length === 1 ? true : undefined));
    const term = { labelSelector: { matchLabels: { app: 'db' } }, namespaceSelector: { matchLabels: { team: 'red' } }, topologyKey: 'kubernetes.io/hostname' };
    // Required affinity to the red db's node, anti-affinity to it: the first binds on n0, the second never does.
    await createPods(client, [
      small('app', 'with-red', 'x', { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] } } }),
      small('app', 'away-from-red', 'y', { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] } } }),
    ]);
    const placed = await waitFor('both app pods bound', async () => {
      const ps = await bound('app');
      return ps.length === 2 ? ps : undefined;
    });
    const at = new Map(placed.map((p) => [p.metadata?.name, p.spec?.nodeName]));
    expect(at.get('with-red')).toBe(n0);
    expect(at.get('away-from-red')).not.toBe(n0);
  });
  it("existing pods' preferred terms score the incoming pod (ADR 0077): their anti-affinity keeps matching pods off their nodes, their affinity draws them into their zone", async () => {
    await createNs(client, 'toward');
    const [n0, n1, n2] = nodes.map((n) => n.name) as [string, string, string];
    const pref = (kind: 'podAffinity' | 'podAntiAffinity', app: string, key: string): Partial<NonNullable<V1Pod['spec']>> => ({
      affinity: {
        [kind]: {
          preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { labelSelector: { matchLabels: { app } }, topologyKey: key } }],
        },
      },
    });
    // Two pods on zone-a's nodes that prefer no batch pod beside them, one on zone-b's node that prefers clients in its zone.
    await createPods(client, [
      small('toward', 'keep-off-0', 'keeper', {
        nodeSelector: { 'kubernetes.io/hostname': n0 },
        ...pref('podAntiAffinity', 'batch', 'kubernetes.io/hostname'),
      }),
      small('toward', 'keep-off-1', 'keeper', {
        nodeSelector: { 'kubernetes.io/hostname': n1 },
        ...pref('podAntiAffinity', 'batch', 'kubernetes.io/hostname'),
      }),
      small('toward', 'db', 'db', { nodeSelector: { 'kubernetes.io/hostname': n2 }, ...pref('podAffinity', 'client', 'topology.kubernetes.io/zone') }),
    ]);
    await waitFor('the three existing pods bound', async () => ((await bound('toward')).length === 3 ? true : undefined));
    // The incoming pods carry no terms of their own: only the existing pods' terms tell where they should go.
    await createPods(
      client,
      [0, 1, 2].map((i) => small('toward', `batch-${i}`, 'batch', {})),
    );
    await createPods(
      client,
      [0, 1].map((i) => small('toward', `client-${i}`, 'client', {})),
    );
    const placed = await waitFor('the five incoming pods bound', async () => {
      const ps = await bound('toward');
      return ps.length === 8 ? ps : undefined;
    });
    for (const p of placed) if (/^(batch|client)-/.test(p.metadata?.name ?? '')) expect([p.metadata?.name, p.spec?.nodeName]).toEqual([p.metadata?.name, n2]);
  });
  it("cluster default spread constraints (kube's System defaults, ADR 0077): pods a Service or a ReplicaSet selects spread over hostnames; the same pods without them are packed", async () => {
    await createNs(client, 'defaults');
    await client.post('/api/v1/namespaces/defaults/services', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'defaults' },
      spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
    });
    const rs = await client.post<{ metadata: { uid: string } }>('/apis/apps/v1/namespaces/defaults/replicasets', {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'worker', namespace: 'defaults' },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'worker' } },
        template: { metadata: { labels: { app: 'worker' } }, spec: { containers: [{ name: 'main', image: 'registry.invalid/test:1' }] } },
      },
    });
    const gpuPod = (name: string, app: string, owned: boolean): V1Pod => {
      const p = testPod('defaults', name, { gpus: 1, cpu: '100m', memory: '64Mi', labels: { app } });
      return owned
        ? {
            ...p,
            metadata: {
              ...p.metadata,
              ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'worker', uid: rs.metadata.uid, controller: true }],
            },
          }
        : p;
    };
    // The sits profile packs single-GPU pods onto one node; the hostname default (maxSkew 3, ScheduleAnyway) spreads the selected ones.
    const nodesOf = async (prefix: string, n: number): Promise<Set<string>> =>
      waitFor(`${n} ${prefix} pods bound`, async () => {
        const ps = (await bound('defaults')).filter((p) => p.metadata?.name?.startsWith(prefix) === true);
        return ps.length === n ? new Set(ps.map((p) => p.spec?.nodeName as string)) : undefined;
      });
    // Three of each, one at a time: the plain ones share a node (5 GPUs left there), the selected ones do not.
    const placeThree = async (prefix: string, app: string, owned: boolean): Promise<Set<string>> => {
      for (let i = 0; i < 3; i++) {
        await createPods(client, [gpuPod(`${prefix}${i}`, app, owned)]);
        await nodesOf(prefix, i + 1);
      }
      return nodesOf(prefix, 3);
    };
    expect((await placeThree('plain-', 'plain', false)).size).toBe(1);
    expect((await placeThree('web-', 'web', false)).size).toBeGreaterThan(1);
    expect((await placeThree('worker-', 'worker', true)).size).toBeGreaterThan(1);
  });
});
