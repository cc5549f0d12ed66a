// `sits node-agent` as the chart runs it: with only the RBAC and the admission policy the chart generates (a
// ServiceAccount token bound to its pod on the node, as the kubelet projects it), against a real kube-apiserver,
// a kubelet stand-in and a stand-in nvidia-smi printing captured outputs.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, GPU_RESOURCE, LABEL } from '../api/wire.ts';
import { POLICY_NAMES } from '../deploy/admission-policies.ts';
import { plainObjects } from '../deploy/bundle.ts';
import { resolveValues } from '../deploy/values.ts';
import { KubeApiError, KubeClient } from '../kube/client/client.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { createNs, createPods, testPod, waitFor } from '../harness/e2e-kit.ts';
import { writeFakeNvidiaSmi } from '../node/testing/fake-nvidia-smi.ts';
import { KubeletStandIn } from '../node/testing/kubelet-stand-in.ts';
import { loadKubeConfig } from './live.ts';
import { startNodeSide } from './node-side.ts';
import { writeTokenKubeconfig } from '../kits/service-account-testing.ts';
import { collectionPath, IDENTITY_KINDS } from '../deploy/testing/rest-paths.ts';

const data = (f: string): string => readFileSync(new URL(`../node/testdata/${f}`, import.meta.url), 'utf8');
const A5000 = data('smi-q-x-dual-rtx-a5000.xml');

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };

let plane: ControlPlane;
let admin: KubeClient;
let dir: string;

beforeAll(async () => {
  plane = await startControlPlane();
  admin = new KubeClient(plane.kubeConfig());
  dir = mkdtempSync(join(tmpdir(), 'sits-node-side-'));
});
afterAll(async () => {
  admin?.close();
  await plane?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('sits node-agent with exactly the chart’s RBAC and admission policy', () => {
  let kubeconfig: string;
  let sa: KubeClient;

  const tokenKubeconfig = (name: string, token: string): string => writeTokenKubeconfig(dir, plane.server, name, name, token);

  beforeAll(async () => {
    const values = resolveValues({ nodeAgent: { enabled: true } });
    if (!values.ok) throw new Error(values.errors.join('\n'));
    const objects = (plainObjects(values.value) as unknown as Obj[]).filter(
      (o) =>
        IDENTITY_KINDS.has(o.kind) && (o.metadata.name === 'sits-node-agent' || o.metadata.name === 'sits-node' || o.metadata.name === POLICY_NAMES.nodeAgent),
    );
    expect(objects.map((o) => o.kind)).toEqual([
      'Namespace',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
    for (const o of objects) await admin.post(collectionPath(o), o);
    await createFakeGpuNodes(plane.kubeConfig(), [{ name: 'gpu-a', capacity: { [GPU_RESOURCE]: '2' } }]);
    // The DaemonSet's pod on gpu-a; its token is bound to it, so the apiserver knows the agent's node (ADR 0174).
    const own = testPod('sits-node', 'sits-node-agent-a', { gpus: 0 });
    const pod = await admin.post<V1Pod>('/api/v1/namespaces/sits-node/pods', {
      ...own,
      spec: { ...own.spec, containers: own.spec?.containers ?? [], nodeName: 'gpu-a', serviceAccountName: 'sits-node-agent' },
    });
    const tr = await admin.post<{ status: { token: string } }>('/api/v1/namespaces/sits-node/serviceaccounts/sits-node-agent/token', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid } },
    });
    kubeconfig = tokenKubeconfig('agent', tr.status.token);
    sa = new KubeClient(loadKubeConfig(kubeconfig));
    // The policy is live once it refuses a token bound to no node (a write the agent could make otherwise).
    const unbound = await admin.post<{ status: { token: string } }>('/api/v1/namespaces/sits-node/serviceaccounts/sits-node-agent/token', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 600 },
    });
    const probe = new KubeClient(loadKubeConfig(tokenKubeconfig('unbound', unbound.status.token)));
    try {
      await waitFor('the node agent policy live', async () => {
        try {
          await probe.mergePatch('/api/v1/nodes/gpu-a', { metadata: { labels: { [LABEL.gfdCount]: '0' } } });
          return false;
        } catch (e) {
          if (e instanceof KubeApiError && e.status === 403) return true;
          throw e;
        }
      });
    } finally {
      probe.close();
    }
    await createNs(admin, 'work');
  });
  afterAll(() => sa?.close());

  it('labels its node, registers the device plugin, allocates a SITS pod its GPUs and marks it, follows a GPU failing; nothing more is allowed', async () => {
    await createPods(admin, [testPod('work', 'train', { gpus: 2 })]);
    await admin.post('/api/v1/namespaces/work/pods/train/binding', {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'train', namespace: 'work', annotations: { [ANNOTATION.gpuIndices]: '0,1' } },
      target: { apiVersion: 'v1', kind: 'Node', name: 'gpu-a' },
    });
    const pluginDir = join(dir, 'device-plugins');
    mkdirSync(pluginDir, { recursive: true });
    const kubelet = new KubeletStandIn(pluginDir);
    await kubelet.start();
    const logs: string[] = [];
    const side = await startNodeSide({
      kubeconfig,
      nodeName: 'gpu-a',
      intervalMs: 200,
      nvidiaSmi: writeFakeNvidiaSmi(join(dir, 'smi'), data('topo-2x-rtx5090-phb.txt'), A5000),
      sysfsRoot: join(dir, 'no-sysfs'),
      labels: true,
      pluginDir,
      log: (m) => void logs.push(m),
    });
    try {
      expect(side.first, logs.join('\n')).toMatchObject({ kind: 'patched' });
      const node = await admin.get<V1Node>('/api/v1/nodes/gpu-a');
      expect(node.metadata?.labels?.[LABEL.gfdProduct]).toBe('NVIDIA-RTX-A5000');
      await waitFor('registration and devices', async () => kubelet.registrations.length === 1 && kubelet.devices.length === 2);
      const ids = kubelet.devices.map((d) => d.ID);
      const r = await kubelet.allocate(ids);
      expect(r.container_responses[0]?.envs).toMatchObject({ NVIDIA_VISIBLE_DEVICES: '0,1', CUDA_VISIBLE_DEVICES: '0,1' });
      expect((await admin.get<V1Pod>('/api/v1/namespaces/work/pods/train')).metadata?.annotations?.[ANNOTATION.gpuAllocated]).toBe('0,1');
      // The loop re-reads: a GPU that starts failing reaches the node's annotation and the kubelet's device list.
      writeFakeNvidiaSmi(
        join(dir, 'smi'),
        data('topo-2x-rtx5090-phb.txt'),
        A5000.replace('<remapped_row_failure>No</remapped_row_failure>', '<remapped_row_failure>Yes</remapped_row_failure>'),
      );
      await waitFor(
        'the unhealthy GPU on the node',
        async () => (await admin.get<V1Node>('/api/v1/nodes/gpu-a')).metadata?.annotations?.[ANNOTATION.unhealthyGpus] === '0',
      );
      await waitFor('the unhealthy GPU at the kubelet', async () => kubelet.devices[0]?.health === 'Unhealthy' && kubelet.devices[1]?.health === 'Healthy');
      // A quarantine another process writes on the Node (the health monitor, the fault ladder) reaches the kubelet
      // through the agent's watch of its own Node, with the chart's RBAC; the release brings the GPU back.
      const since = new Date().toISOString();
      const until = new Date(Date.now() + 900_000).toISOString();
      await admin.mergePatch('/api/v1/nodes/gpu-a', {
        metadata: {
          annotations: { [ANNOTATION.gpuQuarantine]: JSON.stringify({ '1': { reason: 'XID 63 (row remap recorded)', since, until, source: 'gpu-health' } }) },
        },
      });
      await waitFor('the quarantined GPU Unhealthy at the kubelet', async () => kubelet.devices[1]?.health === 'Unhealthy', 30_000);
      await admin.mergePatch('/api/v1/nodes/gpu-a', { metadata: { annotations: { [ANNOTATION.gpuQuarantine]: null } } });
      await waitFor('the released GPU Healthy again at the kubelet', async () => kubelet.devices[1]?.health === 'Healthy', 30_000);
      expect(logs.filter((l) => /forbidden/i.test(l))).toEqual([]);
    } finally {
      await side.stop();
      await kubelet.stop();
    }
    expect(existsSync(join(pluginDir, 'sits-gpu.sock'))).toBe(false);
    // Least privilege, checked by the apiserver: no secrets, no deleting pods or nodes, no binding.
    await expect(sa.get('/api/v1/namespaces/work/secrets')).rejects.toMatchObject({ status: 403 });
    await expect(sa.delete('/api/v1/namespaces/work/pods/train')).rejects.toMatchObject({ status: 403 });
    await expect(sa.delete('/api/v1/nodes/gpu-a')).rejects.toMatchObject({ status: 403 });
    await expect(sa.post('/api/v1/namespaces/work/pods', testPod('work', 'sneaky'))).rejects.toMatchObject({ status: 403 });
    // What RBAC allows but the policy does not: its own node's spec, another key, the pod's spec.
    await expect(sa.mergePatch('/api/v1/nodes/gpu-a', { spec: { unschedulable: true } })).rejects.toMatchObject({ status: 403 });
    await expect(sa.mergePatch('/api/v1/nodes/gpu-a', { metadata: { labels: { [LABEL.rack]: 'r1' } } })).rejects.toMatchObject({ status: 403 });
    await expect(sa.mergePatch('/api/v1/namespaces/work/pods/train', { metadata: { labels: { [LABEL.queue]: 'vip' } } })).rejects.toMatchObject({
      status: 403,
    });
  });
});
