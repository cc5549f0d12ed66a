// Lives in cli/: it runs `sits extender` (kube) under the chart's generated extender RBAC (deploy), and only the
// cli layer may import both. The extender's ServiceAccount token, the real kube-scheduler in front (ADR 0078).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { applyCrds, devNodes } from '../app/dev-cluster.ts';
import { loadKubeConfig } from '../app/live.ts';
import { plainObjects } from '../deploy/bundle.ts';
import { EXTENDER_NAMES } from '../deploy/extender-manifests.ts';
import type { Json } from '../deploy/tree.ts';
import { resolveValues } from '../deploy/values.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createNs, createPods, gpuUsage, listPods, testPod, waitFor } from '../harness/e2e-kit.ts';
import { issueCerts, schedulerConfig } from '../harness/extender-kit.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { KubeClient } from '../kube/client/client.ts';
import { KUBE_SCHEDULER_NAME, startExtender, type RunningExtender } from '../kube/extender/extender-server.ts';

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
const PLURAL: Record<string, string> = {
  Namespace: 'namespaces',
  ServiceAccount: 'serviceaccounts',
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
  Role: 'roles',
  RoleBinding: 'rolebindings',
};
const NAMESPACED = new Set(['ServiceAccount', 'Role', 'RoleBinding']);

describe("sits extender under the chart's extender RBAC", () => {
  let plane: ControlPlane;
  let admin: KubeClient;
  let sa: KubeClient;
  let ext: RunningExtender;
  const tmp = mkdtempSync(join(tmpdir(), 'sits-extender-rbac-'));
  const logs: string[] = [];

  beforeAll(async () => {
    plane = await startControlPlane();
    admin = new KubeClient(plane.kubeConfig());
    await applyCrds(admin);
    await createFakeGpuNodes(plane.kubeConfig(), devNodes(2, 'a800x4'));
    const values = resolveValues({ extender: { enabled: true } });
    if (!values.ok) throw new Error(values.errors.join('\n'));
    // The namespace and the extender's RBAC objects exactly as the chart renders them.
    const objs = plainObjects(values.value).filter(
      (o) => ((o as Obj).kind === 'Namespace' || (o as Obj).metadata.name.startsWith('sits-extender')) && PLURAL[(o as Obj).kind] !== undefined,
    );
    for (const o of objs as (Json & Obj)[]) {
      const base = o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`;
      const ns = NAMESPACED.has(o.kind) ? `/namespaces/${o.metadata.namespace ?? ''}` : '';
      await admin.post(`${base}${ns}/${PLURAL[o.kind] ?? ''}`, o);
    }
    const tr = await admin.post<{ status: { token: string } }>(`/api/v1/namespaces/sits-system/serviceaccounts/${EXTENDER_NAMES.serviceAccount}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600 },
    });
    const kubeconfig = join(tmp, 'sa.kubeconfig');
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: plane.server, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'x', user: { token: tr.status.token } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'x' } }],
        'current-context': 'c',
      }),
      { mode: 0o600 },
    );
    sa = new KubeClient(loadKubeConfig(kubeconfig));
    // kube-scheduler's client certificate (CN sits:kube-scheduler) is let in by the chart's own caller RBAC.
    const certs = await issueCerts();
    ext = await startExtender({
      client: sa,
      port: 0,
      host: '127.0.0.1',
      tls: certs.serving,
      clientCa: certs.ca,
      leaderElection: { namespace: 'sits-system', name: EXTENDER_NAMES.lease, identity: 'rbac-e2e', leaseDurationSec: 5 },
      log: (m) => logs.push(m),
    });
    await waitFor('the extender leads through its Lease', async () => (ext.serving() ? true : undefined));
    await plane.startScheduler(schedulerConfig(ext.port, certs));
  }, 180_000);

  afterAll(async () => {
    await ext?.close();
    sa?.close();
    admin?.close();
    await plane?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('leads, binds through kube-scheduler with GPU indices, and nothing it needs was refused', async () => {
    await createNs(admin, 'rbac');
    await createPods(
      admin,
      Array.from({ length: 4 }, (_, i) => testPod('rbac', `p-${i}`, { gpus: 2, schedulerName: KUBE_SCHEDULER_NAME })),
    );
    const ps = await waitFor(
      '4 pods bound',
      async () => {
        const l = await listPods(admin, 'rbac');
        return l.filter((p) => (p.spec?.nodeName ?? '') !== '').length === 4 ? l : undefined;
      },
      60_000,
    );
    gpuUsage(ps, 4);
    const lease = await admin.get<{ spec: { holderIdentity?: string } }>('/apis/coordination.k8s.io/v1/namespaces/sits-system/leases/sits-extender');
    expect(lease.spec.holderIdentity).toBe('rbac-e2e');
    // Every informer started (a 403 would be logged as "not readable") and no call was forbidden.
    expect(logs.filter((l) => /forbidden|not readable|403/i.test(l))).toEqual([]);
  });

  it("the chart's extender Service and Deployment pass the apiserver's validation (server-side dry run)", async () => {
    const values = resolveValues({ extender: { enabled: true } });
    if (!values.ok) throw new Error(values.errors.join('\n'));
    const objs = plainObjects(values.value).filter(
      (o) => ['Service', 'Deployment'].includes((o as Obj).kind) && (o as Obj).metadata.name === 'sits-extender',
    ) as (Json & Obj)[];
    expect(objs.map((o) => o.kind).sort()).toEqual(['Deployment', 'Service']);
    for (const o of objs) {
      const path = o.kind === 'Service' ? '/api/v1/namespaces/sits-system/services' : '/apis/apps/v1/namespaces/sits-system/deployments';
      const got = await admin.request<Obj>('POST', path, { body: o, query: { dryRun: 'All' } });
      expect(got.metadata.name).toBe('sits-extender');
    }
  });

  it('may not read Secrets nor write events', async () => {
    const can = async (attrs: Record<string, string>): Promise<boolean> =>
      (
        await sa.post<{ status: { allowed: boolean } }>('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SelfSubjectAccessReview',
          spec: { resourceAttributes: attrs },
        })
      ).status.allowed;
    expect(await can({ verb: 'get', resource: 'secrets', namespace: 'sits-system' })).toBe(false);
    expect(await can({ verb: 'create', resource: 'events', namespace: 'rbac' })).toBe(false);
    expect(await can({ verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: 'sits-system', name: 'other-lease' })).toBe(false);
    expect(await can({ verb: 'create', resource: 'pods/binding', namespace: 'rbac' })).toBe(true);
  });
});
