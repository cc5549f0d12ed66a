// Fake GPU nodes and small test helpers for a control plane without kubelets
// (see control-plane.ts and docs/control-plane.md).
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import type { KubeConfig, V1Namespace, V1Node, V1NodeStatus, V1Taint } from '@kubernetes/client-node';
import { KubeClient } from '../kube/client/client.ts';

export interface FakeNodeSpec {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /**
   * Node capacity, e.g. `{ 'nvidia.com/gpu': '8' }`. Missing `cpu`, `memory` and `pods` get
   * defaults (64, 512Gi, 110). Allocatable is set to the same values unless `allocatable` is given.
   */
  capacity: Record<string, string>;
  allocatable?: Record<string, string>;
  taints?: V1Taint[];
  unschedulable?: boolean;
}

export const DEFAULT_NODE_CAPACITY: Readonly<Record<string, string>> = { cpu: '64', memory: '512Gi', pods: '110' };

export function fakeNodeStatus(spec: FakeNodeSpec): V1NodeStatus {
  const capacity = { ...DEFAULT_NODE_CAPACITY, ...spec.capacity };
  const now = new Date();
  return {
    capacity,
    allocatable: { ...capacity, ...spec.allocatable },
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'FakeNodeReady',
        message: 'fake node created by sits tests (no kubelet)',
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      },
    ],
    addresses: [{ type: 'Hostname', address: spec.name }],
    nodeInfo: {
      architecture: 'amd64',
      bootID: '',
      containerRuntimeVersion: 'fake://0',
      kernelVersion: '',
      kubeProxyVersion: '',
      kubeletVersion: 'fake',
      machineID: '',
      operatingSystem: 'linux',
      osImage: 'fake',
      systemUUID: '',
    },
  };
}

function sameResources(want: Record<string, string>, got: Record<string, string> | undefined): boolean {
  return Object.entries(want).every(([k, v]) => got?.[k] === v);
}

/**
 * Creates Node objects with status capacity/allocatable (incl. `pods`) and a Ready condition.
 * Status is normally kept on create; if the server dropped it, it is written through the
 * `nodes/status` subresource. Resolves to the nodes as stored by the server.
 */
export async function createFakeGpuNodes(kc: KubeConfig, nodes: readonly FakeNodeSpec[]): Promise<V1Node[]> {
  // Our client, not client-node's generated one: that one's node-fetch calls url.parse, which Node 24 warns about on
  // every `sits dev up` (DEP0169).
  const client = new KubeClient(kc, { userAgent: 'sits-fake-nodes/0.1' });
  try {
    return await createNodes(client, nodes);
  } finally {
    client.close();
  }
}

async function createNodes(client: KubeClient, nodes: readonly FakeNodeSpec[]): Promise<V1Node[]> {
  const created: V1Node[] = [];
  for (const spec of nodes) {
    const status = fakeNodeStatus(spec);
    const body: V1Node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: spec.name,
        labels: { 'kubernetes.io/hostname': spec.name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', ...spec.labels },
        ...(spec.annotations ? { annotations: spec.annotations } : {}),
      },
      spec: {
        ...(spec.taints ? { taints: spec.taints } : {}),
        ...(spec.unschedulable !== undefined ? { unschedulable: spec.unschedulable } : {}),
      },
      status,
    };
    let node = await client.post<V1Node>('/api/v1/nodes', body);
    const wantCap = status.capacity ?? {};
    const wantAlloc = status.allocatable ?? {};
    if (!sameResources(wantCap, node.status?.capacity) || !sameResources(wantAlloc, node.status?.allocatable)) {
      node = await client.request<V1Node>('PATCH', `/api/v1/nodes/${spec.name}/status`, { contentType: 'application/merge-patch+json', body: { status } });
      if (!sameResources(wantCap, node.status?.capacity) || !sameResources(wantAlloc, node.status?.allocatable)) {
        throw new Error(`node ${spec.name}: status capacity/allocatable did not stick: ${JSON.stringify(node.status)}`);
      }
    }
    created.push(node);
  }
  return created;
}

/** Creates a namespace (optionally labelled). With `ifExists: 'ignore'` an existing one is returned. */
export async function createNamespace(
  kc: KubeConfig,
  name: string,
  opts: { labels?: Record<string, string>; ifExists?: 'fail' | 'ignore' } = {},
): Promise<V1Namespace> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    return await core.createNamespace({
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, ...(opts.labels ? { labels: opts.labels } : {}) } },
    });
  } catch (e) {
    if (opts.ifExists === 'ignore' && e instanceof ApiException && e.code === 409) {
      return core.readNamespace({ name });
    }
    throw e;
  }
}

/**
 * Deletes a pod immediately (gracePeriodSeconds 0; without a kubelet a graceful delete of a bound
 * pod would never finish). Resolves to false if the pod did not exist.
 */
export async function deletePodNow(kc: KubeConfig, namespace: string, name: string): Promise<boolean> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
    return true;
  } catch (e) {
    if (e instanceof ApiException && e.code === 404) return false;
    throw e;
  }
}
