// The chart's ValidatingAdmissionPolicies (ADR 0174) on a real kube-apiserver with RBAC, installed exactly as
// the generated manifests hold them (helm.test.ts checks `helm template` renders the same): the attacks of
// docs/security.md findings 3, 4a (the webhook's Secret) and 4b are performed and must be refused; what SITS itself does must pass.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { buildCrds } from '../api/crd.ts';
import { EXAMPLES } from '../api/examples.ts';
import { KINDS } from '../api/kinds.ts';
import { ANNOTATION, API_GROUP, API_VERSION, GPU_RESOURCE, LABEL } from '../api/wire.ts';
import { loadKubeConfig } from '../app/live.ts';
import { serviceAccountClient, writeTokenKubeconfig } from '../kits/service-account-testing.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { createNs, testPod } from '../harness/e2e-kit.ts';
import { applyCrdObjects } from '../harness/upstream-crds.ts';
import { KubeApiError, KubeClient } from '../kube/client/client.ts';
import { CONTROLLER_RULES, SCHEDULER_RULES, WEBHOOK_SECRET_CREATE_RULE, WEBHOOK_SECRET_GET_UPDATE_RULE, type PolicyRule } from './rbac.ts';
import { WEBHOOK_NAMES } from './webhook-manifests.ts';
import { NODE_AGENT_ANNOTATIONS, NODE_AGENT_LABELS, NODE_NAME_EXTRA, POLICY_NAMES } from './admission-policies.ts';
import { plainObjects } from './bundle.ts';
import { resolveValues } from './values.ts';
import { collectionPath, IDENTITY_KINDS } from './testing/rest-paths.ts';

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };

let plane: ControlPlane;
let admin: KubeClient;
let dir: string;
const clients: KubeClient[] = [];

beforeAll(async () => {
  plane = await startControlPlane();
  admin = new KubeClient(plane.kubeConfig());
  dir = mkdtempSync(join(tmpdir(), 'sits-vap-'));
});
afterAll(async () => {
  for (const c of clients) c.close();
  admin?.close();
  await plane?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** The chart's objects of these kinds (and names, when given) for `over`, created as they are. */
async function installFromChart(over: Record<string, unknown>, keep: (o: Obj) => boolean): Promise<Obj[]> {
  const values = resolveValues(over);
  if (!values.ok) throw new Error(values.errors.join('\n'));
  const objects = (plainObjects(values.value) as unknown as Obj[]).filter((o) => IDENTITY_KINDS.has(o.kind) && keep(o));
  for (const o of objects) await admin.post(collectionPath(o), o);
  return objects;
}

function tokenClient(name: string, token: string): KubeClient {
  const path = writeTokenKubeconfig(dir, plane.server, name, name, token);
  const c = new KubeClient(loadKubeConfig(path));
  clients.push(c);
  return c;
}

/** The apiserver's refusal of `p` (a KubeApiError with this status), or a failure naming what went through. */
async function refused(p: Promise<unknown>, status = 403): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof KubeApiError && e.status === status) return e.message;
    throw e;
  }
  throw new Error('the request was allowed');
}

/**
 * Waits until the policy refuses `probe`: a new policy reaches the apiserver's admission a moment after it is
 * created. The probes change nothing that matters if they pass before (a dry run, or a key the agent may write).
 */
async function untilLive(probe: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await probe();
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 403 && e.message.includes('ValidatingAdmissionPolicy')) return;
      throw e;
    }
    if (Date.now() > deadline) throw new Error('the policy never refused the probe');
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('finding 3: the node agent writes only its own Node, its own keys, and its node’s pods’ device annotation', () => {
  const NS = 'sits-node';
  let agent: KubeClient;
  let unbound: KubeClient;
  const nodePath = (n: string): string => `/api/v1/nodes/${n}`;
  const podPath = (name: string): string => `/api/v1/namespaces/work/pods/${name}`;

  beforeAll(async () => {
    const objects = await installFromChart(
      { nodeAgent: { enabled: true } },
      (o) => o.metadata.name === 'sits-node-agent' || o.metadata.name === NS || o.metadata.name === POLICY_NAMES.nodeAgent,
    );
    expect(objects.map((o) => o.kind)).toEqual([
      'Namespace',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
    await createFakeGpuNodes(plane.kubeConfig(), [
      { name: 'gpu-a', capacity: { [GPU_RESOURCE]: '1' } },
      { name: 'gpu-b', capacity: { [GPU_RESOURCE]: '1' } },
    ]);
    // A taint the agent must not lift, and a label of the operator's it must not touch.
    await admin.mergePatch(nodePath('gpu-a'), {
      metadata: { labels: { [LABEL.rack]: 'r1' } },
      spec: { taints: [{ key: 'gpu-maintenance', effect: 'NoSchedule' }] },
    });
    await createNs(admin, 'work');
    const onNode = (p: V1Pod, node: string, serviceAccountName?: string): V1Pod => ({
      ...p,
      spec: { ...p.spec, containers: p.spec?.containers ?? [], nodeName: node, ...(serviceAccountName === undefined ? {} : { serviceAccountName }) },
    });
    await admin.post('/api/v1/namespaces/work/pods', onNode(testPod('work', 'train-a', { annotations: { [ANNOTATION.gpuIndices]: '0' } }), 'gpu-a'));
    await admin.post('/api/v1/namespaces/work/pods', onNode(testPod('work', 'train-b', { annotations: { [ANNOTATION.gpuIndices]: '0' } }), 'gpu-b'));
    // The agent's own pod on gpu-a, as the DaemonSet puts it there; its token is bound to it (the kubelet's projected token).
    const agentPod = await admin.post<V1Pod>(
      `/api/v1/namespaces/${NS}/pods`,
      onNode(testPod(NS, 'sits-node-agent-x', { gpus: 0 }), 'gpu-a', 'sits-node-agent'),
    );
    const tr = await admin.post<{ status: { token: string } }>(`/api/v1/namespaces/${NS}/serviceaccounts/sits-node-agent/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: agentPod.metadata?.name, uid: agentPod.metadata?.uid } },
    });
    agent = tokenClient('agent', tr.status.token);
    const plain = await admin.post<{ status: { token: string } }>(`/api/v1/namespaces/${NS}/serviceaccounts/sits-node-agent/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600 },
    });
    unbound = tokenClient('unbound', plain.status.token);
    await untilLive(() => unbound.mergePatch(nodePath('gpu-a'), { metadata: { labels: { [LABEL.gfdCount]: '1' } } }));
  });

  it('the pod-bound token carries its node, as the apiserver authenticates it', async () => {
    const review = await agent.post<{ status: { userInfo: { username: string; extra?: Record<string, string[]> } } }>(
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    );
    expect(review.status.userInfo.username).toBe(`system:serviceaccount:${NS}:sits-node-agent`);
    expect(review.status.userInfo.extra?.[NODE_NAME_EXTRA]).toEqual(['gpu-a']);
  });

  it('refuses: another node’s labels, its own node’s taints and spec, a label or annotation outside its set', async () => {
    expect(await refused(agent.mergePatch(nodePath('gpu-b'), { metadata: { labels: { [LABEL.gfdProduct]: 'H100' } } }))).toContain(
      'the node agent of node gpu-a may not change node gpu-b',
    );
    expect(await refused(agent.mergePatch(nodePath('gpu-a'), { spec: { taints: null } }))).toContain('spec (taints, unschedulable...)');
    expect(await refused(agent.mergePatch(nodePath('gpu-a'), { spec: { unschedulable: true } }))).toContain('may not change node gpu-a');
    expect(await refused(agent.mergePatch(nodePath('gpu-a'), { metadata: { labels: { [LABEL.rack]: 'r9' } } }))).toContain(`not ${LABEL.rack}`);
    expect(await refused(agent.mergePatch(nodePath('gpu-a'), { metadata: { labels: { 'node-role.kubernetes.io/control-plane': '' } } }))).toContain(
      'not node-role.kubernetes.io/control-plane',
    );
    expect(await refused(agent.mergePatch(nodePath('gpu-a'), { metadata: { labels: { [LABEL.rack]: null } } }))).toContain(`not ${LABEL.rack}`);
    expect(await refused(agent.mergePatch(nodePath('gpu-a'), { metadata: { annotations: { 'node.alpha.kubernetes.io/ttl': '0' } } }))).toContain(
      'not node.alpha.kubernetes.io/ttl',
    );
    // The node's status and other subresources are not its to write either (RBAC refuses these first; the policy too).
    await refused(agent.mergePatch(`${nodePath('gpu-a')}/status`, { status: { capacity: { 'nvidia.com/gpu': '8' } } }));
    const a = await admin.get<V1Node>(nodePath('gpu-a'));
    expect(a.spec?.taints).toEqual([{ key: 'gpu-maintenance', effect: 'NoSchedule' }]);
    expect(a.spec?.unschedulable).toBeUndefined();
    expect(a.metadata?.labels?.[LABEL.rack]).toBe('r1');
    expect((await admin.get<V1Node>(nodePath('gpu-b'))).metadata?.labels?.[LABEL.gfdProduct]).toBeUndefined();
  });

  it('refuses: a pod on another node, a pod’s image, labels or other annotations on its own node', async () => {
    expect(await refused(agent.mergePatch(podPath('train-b'), { metadata: { annotations: { [ANNOTATION.gpuAllocated]: '0' } } }))).toContain(
      'may not change pod work/train-b: it is not bound to that node',
    );
    const pod = await admin.get<V1Pod>(podPath('train-a'));
    const containers = (pod.spec?.containers ?? []).map((c) => ({ ...c, image: 'registry.invalid/evil:1' }));
    expect(await refused(agent.mergePatch(podPath('train-a'), { spec: { containers } }))).toContain('not its spec');
    expect(await refused(agent.mergePatch(podPath('train-a'), { metadata: { labels: { [LABEL.queue]: 'vip' } } }))).toContain(`not ${LABEL.queue}`);
    expect(await refused(agent.mergePatch(podPath('train-a'), { metadata: { annotations: { [ANNOTATION.gpuIndices]: '0,1,2,3' } } }))).toContain(
      `not ${ANNOTATION.gpuIndices}`,
    );
    const after = await admin.get<V1Pod>(podPath('train-a'));
    expect(after.spec?.containers[0]?.image).toBe('registry.invalid/test:1');
    expect(after.metadata?.annotations?.[ANNOTATION.gpuIndices]).toBe('0');
    expect((await admin.get<V1Pod>(podPath('train-b'))).metadata?.annotations?.[ANNOTATION.gpuAllocated]).toBeUndefined();
  });

  it('a token not bound to a pod on a node may write nothing, not even its “own” keys', async () => {
    expect(await refused(unbound.mergePatch(nodePath('gpu-a'), { metadata: { labels: { [LABEL.gfdCount]: '1' } } }))).toContain(
      `the node agent's token names no node (no ${NODE_NAME_EXTRA})`,
    );
  });

  it('allows what the agent does: every one of its labels and annotations on its own Node (set and removed), the device annotation on a pod bound to it', async () => {
    const labels = Object.fromEntries(NODE_AGENT_LABELS.map((k) => [k, '1']));
    const annotations = Object.fromEntries(NODE_AGENT_ANNOTATIONS.map((k) => [k, 'x']));
    await agent.mergePatch(nodePath('gpu-a'), { metadata: { labels, annotations } });
    let a = await admin.get<V1Node>(nodePath('gpu-a'));
    expect(a.metadata?.labels).toMatchObject(labels);
    expect(a.metadata?.annotations).toMatchObject(annotations);
    // The GPU health watcher's write: a precondition on the resourceVersion, as gpu-health.ts sends it.
    await agent.mergePatch(nodePath('gpu-a'), {
      metadata: { resourceVersion: a.metadata?.resourceVersion, annotations: { [ANNOTATION.gpuQuarantine]: null } },
    });
    await agent.mergePatch(nodePath('gpu-a'), { metadata: { labels: { [LABEL.gpuModel]: null }, annotations: { [ANNOTATION.nics]: null } } });
    a = await admin.get<V1Node>(nodePath('gpu-a'));
    expect(a.metadata?.labels?.[LABEL.gpuModel]).toBeUndefined();
    expect(a.metadata?.annotations?.[ANNOTATION.gpuQuarantine]).toBeUndefined();
    expect(a.metadata?.labels?.[LABEL.rack]).toBe('r1');
    await agent.mergePatch(podPath('train-a'), { metadata: { annotations: { [ANNOTATION.gpuAllocated]: '0' } } });
    expect((await admin.get<V1Pod>(podPath('train-a'))).metadata?.annotations?.[ANNOTATION.gpuAllocated]).toBe('0');
  });
});

describe('finding 4b: a SITS kind that makes pods needs the requester’s own right to create pods', () => {
  const NS = 'team';
  const KIND_NAMES = ['TrainingJob', 'InferenceService', 'DataPipeline', 'BatchInferenceJob'] as const;
  const plural = (k: (typeof KIND_NAMES)[number]): string => KINDS[k].plural;
  const base = (k: (typeof KIND_NAMES)[number]): string => `/apis/${API_GROUP}/${API_VERSION}/namespaces/${NS}/${plural(k)}`;
  const manifest = (k: (typeof KIND_NAMES)[number], name: string): Record<string, unknown> => ({
    ...structuredClone(EXAMPLES[k]),
    metadata: { name, namespace: NS },
  });
  const workloadRule: PolicyRule = {
    apiGroups: [API_GROUP],
    resources: KIND_NAMES.map(plural),
    verbs: ['get', 'create', 'update', 'patch'],
    why: 'the test user creates the workload kinds',
  };
  let noPods: KubeClient;
  let withPods: KubeClient;
  let controllers: KubeClient;
  let scheduler: KubeClient;
  let noPodsUser: string;

  beforeAll(async () => {
    await applyCrdObjects(admin, buildCrds());
    const objects = await installFromChart({}, (o) => o.metadata.name === POLICY_NAMES.workloads);
    expect(objects.map((o) => o.kind)).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    await createNs(admin, NS);
    const a = await serviceAccountClient(admin, plane, { namespace: NS, name: 'no-pods', rules: [workloadRule], namespaced: true });
    const b = await serviceAccountClient(admin, plane, {
      namespace: NS,
      name: 'with-pods',
      rules: [workloadRule, { apiGroups: [''], resources: ['pods'], verbs: ['create'], why: 'the test user may create pods' }],
      namespaced: true,
    });
    const c = await serviceAccountClient(admin, plane, { namespace: 'default', name: 'sits-controllers', rules: CONTROLLER_RULES });
    const d = await serviceAccountClient(admin, plane, { namespace: 'default', name: 'sits-scheduler', rules: SCHEDULER_RULES });
    [noPods, withPods, controllers, scheduler] = [a.client, b.client, c.client, d.client];
    clients.push(noPods, withPods, controllers, scheduler);
    noPodsUser = a.user;
    await untilLive(() => noPods.post(base('DataPipeline'), manifest('DataPipeline', 'probe'), { dryRun: 'All' }));
  });

  it('refuses creating each kind to a user who may create it but not pods, naming the missing right', async () => {
    for (const k of KIND_NAMES) {
      const msg = await refused(noPods.post(base(k), manifest(k, 'sneaky')));
      expect(msg).toContain(`${noPodsUser} may not create pods in namespace ${NS}, and the SITS controllers make pods from a ${k} spec`);
      expect(msg).toContain('RBAC: create on pods');
      await refused(admin.get(`${base(k)}/sneaky`), 404);
    }
  });

  it('allows each kind to a user who may create pods there', async () => {
    for (const k of KIND_NAMES) await withPods.post(base(k), manifest(k, 'mine'));
    for (const k of KIND_NAMES) expect((await admin.get<{ metadata: { name: string } }>(`${base(k)}/mine`)).metadata.name).toBe('mine');
  });

  it('refuses a spec change to the user without pod rights; an annotation alone still passes', async () => {
    const path = `${base('TrainingJob')}/mine`;
    const msg = await refused(noPods.mergePatch(path, { spec: { container: { image: 'registry.invalid/evil:1' } } }));
    expect(msg).toContain('may not create pods in namespace team');
    await noPods.mergePatch(path, { metadata: { annotations: { note: 'hi' } } });
    await withPods.mergePatch(path, { spec: { container: { image: 'registry.invalid/other:1' } } });
  });

  it('the SITS controllers (status, children, spec) and the scheduler (annotations, no pod rights) keep working', async () => {
    await controllers.mergePatch(`${base('DataPipeline')}/mine/status`, { status: { phase: 'Running' } });
    await controllers.mergePatch(`${base('TrainingJob')}/mine/status`, { status: { phase: 'Running' } });
    await controllers.post(base('TrainingJob'), manifest('TrainingJob', 'child'));
    await controllers.mergePatch(`${base('TrainingJob')}/mine`, { spec: { replicas: 2 } });
    await scheduler.mergePatch(`${base('TrainingJob')}/mine`, { metadata: { annotations: { [ANNOTATION.requestCheckpoint]: 'Preemption/1' } } });
    expect((await admin.get<{ spec: { replicas: number } }>(`${base('TrainingJob')}/mine`)).spec.replicas).toBe(2);
  });
});

describe('finding 4a: the webhook may create only its own serving-certificate Secret (RBAC cannot limit create by name)', () => {
  const NS = 'sits-system';
  let webhook: KubeClient;
  const secret = (name: string, type: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, ...extra },
    type,
  });
  const tls = { data: { 'tls.crt': Buffer.from('crt').toString('base64'), 'tls.key': Buffer.from('key').toString('base64') } };

  beforeAll(async () => {
    await createNs(admin, NS).catch(() => undefined);
    const objects = await installFromChart({}, (o) => o.metadata.name === POLICY_NAMES.webhookSecret);
    expect(objects.map((o) => o.kind)).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    // The webhook's own account with exactly its Secret rules (the Role the chart gives it in its namespace).
    const a = await serviceAccountClient(admin, plane, {
      namespace: NS,
      name: WEBHOOK_NAMES.serviceAccount,
      rules: [WEBHOOK_SECRET_CREATE_RULE, { ...WEBHOOK_SECRET_GET_UPDATE_RULE, resourceNames: [WEBHOOK_NAMES.secret] }],
      namespaced: true,
    });
    webhook = a.client;
    clients.push(webhook);
    await untilLive(() => webhook.post(`/api/v1/namespaces/${NS}/secrets`, secret('probe', 'Opaque'), { dryRun: 'All' }));
  });

  it('refuses another name, and a service-account-token Secret under its own name; allows its TLS Secret', async () => {
    const path = `/api/v1/namespaces/${NS}/secrets`;
    // A token Secret for the controllers' account would hand the webhook their rights.
    const steal = secret('stolen', 'kubernetes.io/service-account-token', { annotations: { 'kubernetes.io/service-account.name': 'sits-controllers' } });
    expect(await refused(webhook.post(path, steal))).toContain('may write only its serving-certificate Secret sits-webhook-tls');
    expect(
      await refused(
        webhook.post(
          path,
          secret(WEBHOOK_NAMES.secret, 'kubernetes.io/service-account-token', { annotations: { 'kubernetes.io/service-account.name': 'sits-controllers' } }),
        ),
      ),
    ).toContain('of type kubernetes.io/service-account-token');
    expect(await refused(webhook.post(path, { ...secret('other-tls', 'kubernetes.io/tls'), ...tls }))).toContain('not other-tls');
    expect((await admin.get<{ items: { metadata: { name: string } }[] }>(path)).items.map((s) => s.metadata.name)).not.toEqual(
      expect.arrayContaining(['stolen', 'other-tls']),
    );
    // What the webhook does (src/webhook/cert-rotation.ts): its own TLS Secret, created and renewed.
    await webhook.post(path, { ...secret(WEBHOOK_NAMES.secret, 'kubernetes.io/tls'), ...tls });
    const mine = await webhook.get<Record<string, unknown>>(`${path}/${WEBHOOK_NAMES.secret}`);
    await webhook.request('PUT', `${path}/${WEBHOOK_NAMES.secret}`, {
      body: { ...mine, data: { 'tls.crt': Buffer.from('crt2').toString('base64'), 'tls.key': Buffer.from('key2').toString('base64') } },
    });
  });
});
