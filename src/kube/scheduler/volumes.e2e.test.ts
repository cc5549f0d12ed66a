import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../client/client.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, createPods, listEvents, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { devNodes, applyCrds } from '../../app/dev-cluster.ts';
import { createLiveApp, type LiveApp } from '../../app/live.ts';
import { API_PATH } from '../../api/wire.ts';
import { scaled } from '../../testing/timeouts.ts';

// VolumeBinding, VolumeZone, VolumeRestrictions in the live scheduler (issue 11, ADR 0070), with the real
// kube-controller-manager's PV controller doing the binding, as in a cluster: 3 l4x8 nodes, SITS in-process.
describe('live SITS scheduler: persistent volumes with the real PV controller', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let app: LiveApp;
  const nodes = devNodes(3, 'l4x8', 4).map((n) => n.name) as [string, string, string];
  const [n0, n1] = nodes;
  // waitFor scales its budget itself.
  const WAIT = 60_000;

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    // A short claim resync: an Immediate claim whose PV appears later is bound within seconds, not 15 s.
    await plane.startControllerManager({ controllers: ['persistentvolume-binder-controller'], args: ['--pvclaimbinder-sync-period=1s'] });
    await createFakeGpuNodes(plane.kubeConfig(), devNodes(3, 'l4x8', 4));
    await client.post('/apis/storage.k8s.io/v1/storageclasses', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'local' },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    app = await createLiveApp({
      kubeconfig: plane.kubeconfigPath,
      identity: 'e2e-volumes',
      ...(process.env['SITS_E2E_LOG'] === undefined ? {} : { log: (m: string) => process.stderr.write(`sits: ${m}\n`) }),
    });
  }, scaled(300_000));
  afterAll(async () => {
    await app?.stop();
    client?.close();
    await plane?.stop();
  });

  const localPv = async (name: string, node: string, storageClassName: string): Promise<void> => {
    await client.post('/api/v1/persistentvolumes', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name },
      spec: {
        capacity: { storage: '10Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName,
        persistentVolumeReclaimPolicy: 'Retain',
        local: { path: `/mnt/disks/${name}` },
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }] } },
      },
    });
  };
  const claim = async (ns: string, name: string, storageClassName: string): Promise<void> => {
    await client.post(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName, resources: { requests: { storage: '1Gi' } } },
    });
  };
  const getClaim = (ns: string, name: string): Promise<V1PersistentVolumeClaim> =>
    client.get<V1PersistentVolumeClaim>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}`);
  const withClaim = (pod: V1Pod, claimName: string): V1Pod => ({
    ...pod,
    spec: { ...pod.spec, containers: pod.spec?.containers ?? [], volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }] },
  });
  const nodeOf = async (ns: string, name: string): Promise<string | undefined> => {
    const n = (await listPods(client, ns)).find((p) => p.metadata?.name === name)?.spec?.nodeName;
    return n === undefined || n === '' ? undefined : n;
  };
  const condition = async (ns: string, name: string): Promise<{ message?: string } | undefined> =>
    (await listPods(client, ns)).find((p) => p.metadata?.name === name)?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');

  it('an Immediate claim without a PV keeps its pod waiting with the reason; once the PV controller binds it to a PV with node affinity, the pod lands on that node', async () => {
    await createNs(client, 'vol-imm');
    // Class "manual" does not exist: the claim is Immediate (kube's IsDelayBindingMode), bound by the PV controller.
    await claim('vol-imm', 'data', 'manual');
    await createPods(client, [withClaim(testPod('vol-imm', 'app', { gpus: 1 }), 'data')]);
    const cond = await waitFor('PodScheduled=False with the reason', () => condition('vol-imm', 'app'), WAIT);
    expect(cond.message).toBe('0/3 nodes fit gang vol-imm/app (1×1 GPU): pod has unbound immediate PersistentVolumeClaims');
    await localPv('pv-manual-n1', n1, 'manual');
    await waitFor('the PV controller binds the claim', async () => (await getClaim('vol-imm', 'data')).status?.phase === 'Bound', WAIT);
    expect(await waitFor('the pod bound', () => nodeOf('vol-imm', 'app'), WAIT)).toBe(n1);
  });

  it('WaitForFirstConsumer with static PVs on two nodes: SITS picks a node, pre-binds its PV, the PV controller binds the claim, then the pod is bound there', async () => {
    await createNs(client, 'vol-wffc');
    await localPv('pv-local-n0', n0, 'local');
    await localPv('pv-local-n1', n1, 'local');
    await claim('vol-wffc', 'data', 'local');
    await createPods(client, [withClaim(testPod('vol-wffc', 'app', { gpus: 1 }), 'data')]);
    const node = await waitFor('the pod bound', () => nodeOf('vol-wffc', 'app'), WAIT);
    expect([n0, n1]).toContain(node);
    const c = await getClaim('vol-wffc', 'data');
    expect(c.status?.phase).toBe('Bound');
    // The claim is bound to the PV on the pod's node (pre-bound by SITS: the PV controller marks it bound-by-controller).
    expect(c.spec?.volumeName).toBe(node === n0 ? 'pv-local-n0' : 'pv-local-n1');
    const pv = await client.get<{ spec?: { claimRef?: { name?: string; uid?: string } }; metadata?: { annotations?: Record<string, string> } }>(
      `/api/v1/persistentvolumes/${c.spec?.volumeName ?? ''}`,
    );
    expect(pv.spec?.claimRef).toMatchObject({ name: 'data', uid: c.metadata?.uid });
    expect(pv.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller']).toBe('yes');
  });

  it('WaitForFirstConsumer with a provisioner: SITS writes selected-node on the claim; once a provisioner (played by the test) creates the PV there and the PV controller binds it, the pod is bound on that node', async () => {
    await createNs(client, 'vol-dyn');
    await client.post('/apis/storage.k8s.io/v1/storageclasses', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'dyn' },
      provisioner: 'fake.example.com',
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    await claim('vol-dyn', 'data', 'dyn');
    await createPods(client, [withClaim(testPod('vol-dyn', 'app', { gpus: 1 }), 'data')]);
    // What an external provisioner does: on selected-node, create a PV there, pre-bound to the claim.
    const selected = await waitFor(
      'selected-node on the claim',
      async () => (await getClaim('vol-dyn', 'data')).metadata?.annotations?.['volume.kubernetes.io/selected-node'],
      WAIT,
    );
    expect(nodes).toContain(selected);
    expect(await nodeOf('vol-dyn', 'app')).toBeUndefined();
    const c = await getClaim('vol-dyn', 'data');
    await client.post('/api/v1/persistentvolumes', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv-dyn', annotations: { 'pv.kubernetes.io/provisioned-by': 'fake.example.com' } },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'dyn',
        persistentVolumeReclaimPolicy: 'Delete',
        claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'vol-dyn', name: 'data', uid: c.metadata?.uid },
        csi: { driver: 'fake.example.com', volumeHandle: 'vol-1' },
        nodeAffinity: {
          required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [selected as string] }] }] },
        },
      },
    });
    expect(await waitFor('the pod bound', () => nodeOf('vol-dyn', 'app'), WAIT)).toBe(selected);
    expect((await getClaim('vol-dyn', 'data')).spec?.volumeName).toBe('pv-dyn');
  });

  it('a missing claim is named in the pod condition; the scheduler goes on placing other pods', async () => {
    await createNs(client, 'vol-missing');
    await createPods(client, [withClaim(testPod('vol-missing', 'ghost', { gpus: 1 }), 'nope')]);
    const cond = await waitFor('PodScheduled=False on the pod', () => condition('vol-missing', 'ghost'), WAIT);
    expect(cond.message).toBe('0/3 nodes fit gang vol-missing/ghost (1×1 GPU): persistentvolumeclaim "nope" not found');
    const ev = await waitFor(
      'FailedScheduling event',
      async () => (await listEvents(client, 'vol-missing')).find((e) => e.reason === 'FailedScheduling' && e.involvedObject?.name === 'ghost'),
      WAIT,
    );
    expect(ev.message).toContain('persistentvolumeclaim "nope" not found');
    await createPods(client, [testPod('vol-missing', 'plain', { gpus: 1 })]);
    expect(await waitFor('a pod without volumes bound', () => nodeOf('vol-missing', 'plain'), WAIT)).toBeDefined();
    expect(await nodeOf('vol-missing', 'ghost')).toBeUndefined();
  });

  it('a gang of two with WaitForFirstConsumer claims takes two distinct PVs (on two nodes, though one node could hold both pods)', async () => {
    await createNs(client, 'vol-gang');
    await client.post('/apis/storage.k8s.io/v1/storageclasses', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'gang-local' },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    await localPv('gpv-n0', n0, 'gang-local');
    await localPv('gpv-n1', n1, 'gang-local');
    await claim('vol-gang', 'data-0', 'gang-local');
    await claim('vol-gang', 'data-1', 'gang-local');
    await client.post(`${API_PATH}/namespaces/vol-gang/podgroups`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'PodGroup',
      metadata: { name: 'pair', namespace: 'vol-gang' },
      spec: { minMember: 2 },
    });
    await createPods(
      client,
      [0, 1].map((i) => withClaim(testPod('vol-gang', `pair-${i}`, { gpus: 1, group: 'pair' }), `data-${i}`)),
    );
    const placed = await waitFor(
      'both members bound',
      async () => {
        const ps = (await listPods(client, 'vol-gang')).filter((p) => (p.spec?.nodeName ?? '') !== '');
        return ps.length === 2 ? ps : undefined;
      },
      WAIT,
    );
    const claims = await Promise.all([0, 1].map((i) => getClaim('vol-gang', `data-${i}`)));
    const pvs = claims.map((c) => c.spec?.volumeName);
    expect(new Set(pvs)).toEqual(new Set(['gpv-n0', 'gpv-n1']));
    for (const [i, c] of claims.entries()) {
      const pod = placed.find((p) => p.metadata?.name === `pair-${i}`);
      expect(pod?.spec?.nodeName).toBe(c.spec?.volumeName === 'gpv-n0' ? n0 : n1);
    }
  });
});
