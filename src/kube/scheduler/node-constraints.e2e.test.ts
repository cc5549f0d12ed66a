import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../client/client.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, createPods, listEvents, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { devNodes, applyCrds } from '../../app/dev-cluster.ts';
import { createLiveApp, type LiveApp } from '../../app/live.ts';

// kube-scheduler's per-node plugins in the live scheduler (issue 11): 4 l4x8 nodes, one labelled
// pool=special, one cordoned; the SITS scheduler runs in-process against a real kube-apiserver.
describe('live SITS scheduler: node affinity, host ports, cordon, scheduling gates', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let app: LiveApp;
  const nodes = devNodes(4, 'l4x8', 4);
  const [special, , , cordoned] = nodes.map((n) => n.name) as [string, string, string, string];

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(
      plane.kubeConfig(),
      nodes.map((n) =>
        n.name === special ? { ...n, labels: { ...n.labels, 'example.com/pool': 'special' } } : n.name === cordoned ? { ...n, unschedulable: true } : n,
      ),
    );
    app = await createLiveApp({ kubeconfig: plane.kubeconfigPath, identity: 'e2e-node-constraints' });
  });
  afterAll(async () => {
    await app?.stop();
    client?.close();
    await plane?.stop();
  });

  const withAffinity = (pod: V1Pod, pool: string): V1Pod => ({
    ...pod,
    spec: {
      ...pod.spec,
      containers: pod.spec?.containers ?? [],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'example.com/pool', operator: 'In', values: [pool] }] }],
          },
        },
      },
    },
  });
  const condition = async (ns: string, name: string): Promise<{ reason?: string; message?: string } | undefined> =>
    (await listPods(client, ns)).find((p) => p.metadata?.name === name)?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  const nodeOf = async (ns: string, name: string): Promise<string | undefined> => {
    const n = (await listPods(client, ns)).find((p) => p.metadata?.name === name)?.spec?.nodeName;
    return n === undefined || n === '' ? undefined : n;
  };

  it('a required node affinity no node matches stays Pending with the reason; a matching one binds there', async () => {
    await createNs(client, 'affinity');
    await createPods(client, [withAffinity(testPod('affinity', 'nowhere', { gpus: 1 }), 'absent')]);
    const cond = await waitFor('PodScheduled=False on the pod', () => condition('affinity', 'nowhere'));
    expect(cond.reason).toBe('Unschedulable');
    // The cordoned node fails first on cordon (the documented order); the other three on affinity.
    // (A single pod is a gang of one to the live scheduler, hence its words.)
    expect(cond.message).toBe(
      "0/4 nodes fit gang affinity/nowhere (1×1 GPU): 3 node(s) didn't match Pod's node affinity/selector, 1 node cordoned (unschedulable)",
    );
    const ev = await waitFor('FailedScheduling event', async () =>
      (await listEvents(client, 'affinity')).find((e) => e.reason === 'FailedScheduling' && e.involvedObject?.name === 'nowhere'),
    );
    expect(ev.message).toContain("didn't match Pod's node affinity/selector");
    await createPods(client, [withAffinity(testPod('affinity', 'there', { gpus: 1 }), 'special')]);
    expect(await waitFor('pod with a matching affinity bound', () => nodeOf('affinity', 'there'))).toBe(special);
    expect(await nodeOf('affinity', 'nowhere')).toBeUndefined();
  });

  it('pods with the same hostPort land on different nodes, never the cordoned one; one too many waits for ports', async () => {
    await createNs(client, 'ports');
    const web = (name: string): V1Pod => {
      const p = testPod('ports', name, { gpus: 0, cpu: '100m', memory: '64Mi' });
      const c = p.spec?.containers[0];
      if (c !== undefined) c.ports = [{ containerPort: 80, hostPort: 8080 }];
      return p;
    };
    await createPods(client, [web('web-0'), web('web-1'), web('web-2'), web('web-3')]);
    const bound = await waitFor('three of four hostPort pods bound', async () => {
      const ps = (await listPods(client, 'ports')).filter((p) => (p.spec?.nodeName ?? '') !== '');
      return ps.length === 3 ? ps : undefined;
    });
    const used = bound.map((p) => p.spec?.nodeName as string);
    expect(new Set(used).size).toBe(3);
    expect(used).not.toContain(cordoned);
    const waiting = (await listPods(client, 'ports')).find((p) => (p.spec?.nodeName ?? '') === '')?.metadata?.name as string;
    const cond = await waitFor('PodScheduled=False on the fourth pod', () => condition('ports', waiting));
    expect(cond.message).toBe(
      `0/4 nodes fit gang ports/${waiting} (1×no GPU): 3 node(s) didn't have free ports for the requested pod ports, 1 node cordoned (unschedulable)`,
    );
  });

  it('the cordoned node takes only a pod that tolerates node.kubernetes.io/unschedulable', async () => {
    await createNs(client, 'cordon');
    const pin = (name: string, tolerate: boolean): V1Pod => {
      const p = testPod('cordon', name, { gpus: 1 });
      return {
        ...p,
        spec: {
          ...p.spec,
          containers: p.spec?.containers ?? [],
          nodeSelector: { 'kubernetes.io/hostname': cordoned },
          ...(tolerate ? { tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }] } : {}),
        },
      };
    };
    await createPods(client, [pin('refused', false), pin('tolerant', true)]);
    expect(await waitFor('tolerant pod bound on the cordoned node', () => nodeOf('cordon', 'tolerant'))).toBe(cordoned);
    const cond = await waitFor('PodScheduled=False on the refused pod', () => condition('cordon', 'refused'));
    expect(cond.message).toBe(
      "0/4 nodes fit gang cordon/refused (1×1 GPU): 3 node(s) didn't match Pod's node affinity/selector, 1 node cordoned (unschedulable)",
    );
  });

  it('a gated pod waits (SchedulingGated, not tried) until its gate is removed, then binds', async () => {
    await createNs(client, 'gates');
    const gated = testPod('gates', 'gated', { gpus: 1 });
    await createPods(client, [
      { ...gated, spec: { ...gated.spec, containers: gated.spec?.containers ?? [], schedulingGates: [{ name: 'example.com/wait' }] } },
    ]);
    // A pod created after it binds: the scheduler has run cycles with the gated pod present.
    await createPods(client, [testPod('gates', 'later', { gpus: 1 })]);
    await waitFor('the later pod bound', () => nodeOf('gates', 'later'));
    const before = (await listPods(client, 'gates')).find((p) => p.metadata?.name === 'gated');
    expect(before?.spec?.nodeName ?? '').toBe('');
    // The apiserver marks it SchedulingGated; SITS neither tries it nor calls it Unschedulable.
    expect(before?.status?.conditions?.find((c) => c.type === 'PodScheduled')).toMatchObject({ status: 'False', reason: 'SchedulingGated' });
    expect((await listEvents(client, 'gates')).filter((e) => e.involvedObject?.name === 'gated' && e.reason === 'FailedScheduling')).toEqual([]);
    await client.mergePatch('/api/v1/namespaces/gates/pods/gated', { spec: { schedulingGates: null } });
    expect(await waitFor('the ungated pod bound', () => nodeOf('gates', 'gated'))).toBeDefined();
  });
});
