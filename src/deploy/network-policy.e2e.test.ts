// The chart's NetworkPolicies on the real kube-apiserver (ADR 0175): accepted as rendered (defaults and narrowed
// values), and the apiserver's own label selection of each policy's podSelector picks exactly the pods made from
// its workload's pod template. Nothing enforces them here (no network plugin): what is checked is what they say.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../kube/client/client.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { plainObjects } from './bundle.ts';
import { NETWORK_POLICY_NAMES } from './network-policy-manifests.ts';
import { allOn } from './rbac-table.ts';
import { objectPath } from './testing/rest-paths.ts';
import type { Json } from './tree.ts';
import { DEFAULT_VALUES, resolveValues } from './values.ts';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
};
type Policy = Obj & { spec: { podSelector: { matchLabels: Record<string, string> } } };
type Workload = Obj & { spec: { template: { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> } } };

const apply = (client: KubeClient, o: Json, dryRun = false): Promise<Obj> =>
  client.request<Obj>('PATCH', objectPath(o as Obj), {
    body: o,
    contentType: 'application/apply-patch+yaml',
    query: { fieldManager: 'sits-np-e2e', force: true, ...(dryRun ? { dryRun: 'All' } : {}) },
  });

describe('NetworkPolicies on a real kube-apiserver', () => {
  let plane: ControlPlane;
  let admin: KubeClient;
  const all = plainObjects(allOn(DEFAULT_VALUES)) as unknown as Obj[];
  const policies = all.filter((o): o is Policy => o.kind === 'NetworkPolicy');
  const workloads = all.filter((o): o is Workload => o.kind === 'Deployment' || o.kind === 'DaemonSet');

  beforeAll(async () => {
    plane = await startControlPlane();
    admin = new KubeClient(plane.kubeConfig());
    // Their namespaces (Pod Security labels included) and ServiceAccounts, so that pods of the templates are admitted.
    for (const o of all.filter((x) => x.kind === 'Namespace')) await apply(admin, o as unknown as Json);
    for (const o of all.filter((x) => x.kind === 'ServiceAccount')) await apply(admin, o as unknown as Json);
    // The node agent's RuntimeClass (nodeAgent.runtimeClassName), which the RuntimeClass admission wants to exist.
    await admin.post('/apis/node.k8s.io/v1/runtimeclasses', {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: DEFAULT_VALUES.nodeAgent.runtimeClassName },
      handler: 'nvidia',
    });
  });
  afterAll(async () => {
    admin?.close();
    await plane?.stop();
  });

  it('accepts every policy as rendered, with every component on, and stores what was sent', async () => {
    expect(policies.map((p) => p.metadata.name)).toEqual(Object.values(NETWORK_POLICY_NAMES));
    for (const p of policies) {
      await apply(admin, p as unknown as Json);
      const stored = await admin.get<Policy & { spec: { ingress?: { from?: unknown[] }[] } }>(objectPath(p));
      // The apiserver drops an empty `from` (any source); put it back to compare.
      const ingress = (stored.spec.ingress ?? []).map((i) => ({ ...i, from: i.from ?? [] }));
      expect({ ...stored.spec, ingress }, p.metadata.name).toEqual(p.spec);
    }
  });

  it('accepts the policies with narrowed peers (namespace and pod selectors, match expressions, IP blocks)', async () => {
    const r = resolveValues({
      networkPolicy: {
        metricsFrom: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
          },
        ],
        webhookFrom: [{ ipBlock: { cidr: '10.0.0.0/24' } }, { ipBlock: { cidr: 'fd00::/64' } }],
        extenderFrom: [{ ipBlock: { cidr: '10.0.0.0/24', except: ['10.0.0.128/25'] } }],
        activatorFrom: [{ namespaceSelector: { matchExpressions: [{ key: 'ingress', operator: 'Exists' }] } }],
      },
    });
    if (!r.ok) throw new Error(r.errors.join('\n'));
    const narrowed = (plainObjects(allOn(r.value)) as unknown as Obj[]).filter((o) => o.kind === 'NetworkPolicy');
    expect(narrowed).toHaveLength(policies.length);
    for (const p of narrowed) expect((await apply(admin, p as unknown as Json, true)).metadata.name).toBe(p.metadata.name);
    // And the apiserver refuses a peer the values schema would have let through unchecked: the schema is not the only guard.
    const broken = { ...narrowed[0], spec: { ...narrowed[0]?.spec, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] }] } };
    await expect(apply(admin, broken as unknown as Json, true)).rejects.toThrow(/cidr/i);
  });

  it("each policy's podSelector selects exactly the pods of its own workload, by the apiserver's selection", async () => {
    // One pod from each workload's template, as its controller would make it (they stay Pending: no nodes).
    for (const w of workloads) {
      const ns = w.metadata.namespace ?? 'default';
      await admin.post(`/api/v1/namespaces/${ns}/pods`, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `${w.metadata.name}-probe`, namespace: ns, labels: w.spec.template.metadata.labels },
        spec: w.spec.template.spec,
      });
    }
    // A look-alike in the release namespace that is no SITS component: selected by none.
    const ns = policies[0]?.metadata.namespace ?? 'sits-system';
    await admin.post(`/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'other', labels: { 'app.kubernetes.io/name': 'sits', 'app.kubernetes.io/part-of': 'sits' } },
      spec: {
        securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [{ name: 'c', image: 'x', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
      },
    });
    for (const p of policies) {
      const selector = Object.entries(p.spec.podSelector.matchLabels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      const selected = await admin.get<{ items: V1Pod[] }>(`/api/v1/namespaces/${p.metadata.namespace ?? ''}/pods`, { labelSelector: selector });
      expect(
        selected.items.map((x) => x.metadata?.name),
        p.metadata.name,
      ).toEqual([`${p.metadata.name}-probe`]);
      // Across the cluster, the same selector matches no other workload's pods.
      const anywhere = await admin.get<{ items: V1Pod[] }>('/api/v1/pods', { labelSelector: selector });
      expect(
        anywhere.items.map((x) => `${x.metadata?.namespace ?? ''}/${x.metadata?.name ?? ''}`),
        p.metadata.name,
      ).toEqual([`${p.metadata.namespace ?? ''}/${p.metadata.name}-probe`]);
    }
  });
});
