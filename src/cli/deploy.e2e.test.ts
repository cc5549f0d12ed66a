// Lives in cli/: it runs the whole product (live scheduler, controllers, HTTP server, `sits run`) under the generated RBAC,
// and only the cli layer may import all of them.
import { spawn, spawnSync } from 'node:child_process';
import { get as httpsGet } from 'node:https';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parse as parseYaml } from 'yaml';
import { createControllersApp, createLiveApp, loadKubeConfig, type LiveApp } from '../app/live.ts';
import { applyCrds, devNodes } from '../app/dev-cluster.ts';
import { KubeApiError, KubeClient } from '../kube/client/client.ts';
import { freePorts, startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createNs, createPods, listEvents, listPods, testPod, waitFor } from '../harness/e2e-kit.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { METRIC } from '../server/metrics.ts';
import { startServer, type SitsServer } from '../server/server.ts';
import { parsePromText, sampleValue } from '../harness/prom-text.ts';
import { chartObjects, plainObjects } from '../deploy/bundle.ts';
import { NAMES } from '../deploy/manifests.ts';
import { WEBHOOK_NAMES } from '../deploy/webhook-manifests.ts';
import { ensureHelm, helmTemplate, removeHelmScratch, runHelm, valuesFile, writeChart } from '../deploy/testing/helm.ts';
import type { Json } from '../deploy/tree.ts';
import { resolveValues, type DeployValues } from '../deploy/values.ts';
import { objectPath } from '../deploy/testing/rest-paths.ts';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { template?: { metadata?: unknown; spec?: Record<string, unknown> } };
};

/** The Prometheus Operator's ServiceMonitor CRD, the real one (tools/prometheus-operator/ensure-crd.mjs prints its path). */
function serviceMonitorCrd(): Json {
  const r = spawnSync(process.execPath, [join(import.meta.dirname, '../../tools/prometheus-operator/ensure-crd.mjs')], { encoding: 'utf8', timeout: 600_000 });
  const path = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || path === '') throw new Error(`ensure-crd.mjs failed: ${r.stderr}`);
  return parseYaml(readFileSync(path, 'utf8')) as Json;
}

/** A kubeconfig holding only a token of this ServiceAccount (TokenRequest API). */
async function tokenKubeconfig(admin: KubeClient, server: string, dir: string, ns: string, sa: string): Promise<string> {
  const tr = await admin.post<{ status: { token: string } }>(`/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  const path = join(dir, `${sa}.kubeconfig`);
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: sa, user: { token: tr.status.token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: sa } }],
      'current-context': 'c',
    }),
    { mode: 0o600 },
  );
  return path;
}

/** GET https://127.0.0.1:PORT/PATH (any certificate: the servers' own, generated at start), with a bearer token. */
function httpsText(port: number, path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsGet(
      `https://127.0.0.1:${port}${path}`,
      { rejectUnauthorized: false, headers: token === undefined ? {} : { Authorization: `Bearer ${token}` } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
  });
}

/** Server-side apply, as `kubectl apply --server-side [--dry-run=server]`. */
function apply(client: KubeClient, o: Json, dryRun: boolean): Promise<Obj> {
  return client.request<Obj>('PATCH', objectPath(o as Obj), {
    body: o,
    contentType: 'application/apply-patch+yaml',
    query: { fieldManager: 'sits-deploy-e2e', force: true, ...(dryRun ? { dryRun: 'All' } : {}) },
  });
}

const kindOf = (o: Json): string => (o as Obj).kind;
const label = (o: Json): string => `${kindOf(o)} ${(o as Obj).metadata.namespace ?? ''}/${(o as Obj).metadata.name}`;

/** Namespaces first (they must exist, for real, before namespaced objects can be dry-run in them), then the rest. */
async function dryRunAll(client: KubeClient, objects: readonly Json[]): Promise<string[]> {
  const accepted: string[] = [];
  for (const o of objects.filter((x) => kindOf(x) === 'Namespace')) {
    const dry = await apply(client, o, true);
    expect(dry.metadata.name).toBe((o as Obj).metadata.name);
    await apply(client, o, false);
    accepted.push(label(o));
  }
  for (const o of objects.filter((x) => kindOf(x) !== 'Namespace')) {
    const got = await apply(client, o, true).catch((e: unknown) => {
      throw new Error(`${label(o)} rejected: ${(e as Error).message}`);
    });
    expect(got.kind).toBe(kindOf(o));
    expect(got.metadata.name).toBe((o as Obj).metadata.name);
    accepted.push(label(o));
  }
  return accepted;
}

function resolved(over: Record<string, unknown>): DeployValues {
  const r = resolveValues(over);
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.value;
}

describe('deploy manifests on a real kube-apiserver', () => {
  let plane: ControlPlane;
  let admin: KubeClient;
  let tmp: string;
  let helm: string;
  let chart: string;

  beforeAll(async () => {
    helm = await ensureHelm();
    chart = writeChart();
    plane = await startControlPlane();
    admin = new KubeClient(plane.kubeConfig());
    tmp = mkdtempSync(join(tmpdir(), 'sits-deploy-e2e-'));
    await applyCrds(admin);
  });
  afterAll(async () => {
    admin?.close();
    await plane?.stop();
    if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true });
    removeHelmScratch();
  });

  it('server-side dry run accepts every object of deploy/sits.yaml and nothing is stored', async () => {
    const objects = plainObjects();
    const accepted = await dryRunAll(admin, objects);
    expect(accepted).toHaveLength(objects.length);
    // Dry run only: the Deployment was not created.
    await expect(admin.get(objectPath(objects.find((o) => kindOf(o) === 'Deployment') as Obj))).rejects.toMatchObject({ status: 404 });
  });

  it('server-side dry run accepts what `helm template` renders, with the defaults and with other values', async () => {
    const variants: (Record<string, unknown> | undefined)[] = [
      undefined,
      { replicas: 1, leaderElection: { enabled: false }, podDisruptionBudget: { enabled: false }, controllers: { enabled: false } },
      {
        image: { repository: 'example.org:5000/team/sits', tag: 'v2.0.0-rc.1', digest: `sha256:${'0f'.repeat(32)}`, pullPolicy: 'Always' },
        imagePullSecrets: [{ name: 'regcred' }],
        podAnnotations: { 'example.com/a': 'b' },
        podLabels: { team: 'ml' },
        controllers: { replicas: 1, quarantineGpus: true, nodeSelector: { 'kubernetes.io/os': 'linux' } },
        webhook: { mode: 'enforce', failurePolicy: 'Fail', affinity: {} },
        metrics: { port: 9464 },
        replicas: 3,
        priorityClassName: 'system-cluster-critical',
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
        leaderElection: { leaseNames: ['sits-scheduler', 'sits-controllers'] },
      },
      { nodeAgent: { enabled: true } },
      { nodeAgent: { enabled: true, devicePlugin: false, runtimeClassName: '' } },
    ];
    for (const [i, v] of variants.entries()) {
      // The third in its own namespace (helm -n), which must exist: the chart has no Namespace.
      const ns = i === 2 ? 'sched' : 'sits-system';
      await apply(admin, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } as Json, false);
      const objects = helmTemplate(helm, chart, ['-n', ns, ...(v === undefined ? [] : ['-f', valuesFile(v)])]);
      // Helm rendered what the builder gives for the same values (helm.test.ts checks this field for field).
      expect(objects.length).toBe(chartObjects(v === undefined ? undefined : resolved(v), ns).length);
      expect(await dryRunAll(admin, objects)).toHaveLength(objects.length);
    }
  });

  it("the ServiceMonitor is accepted by the Prometheus Operator's real CRD (server-side apply), and the CRD has teeth", async () => {
    const crd = serviceMonitorCrd();
    await apply(admin, crd, false);
    await waitFor('the ServiceMonitor CRD established', async () => {
      const got = await admin.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
        '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/servicemonitors.monitoring.coreos.com',
      );
      return got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true;
    });
    await apply(admin, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'monitored' } } as Json, false);
    const objects = helmTemplate(helm, chart, [
      '-n',
      'monitored',
      '--set',
      'serviceMonitor.enabled=true',
      '--set',
      'serviceMonitor.interval=15s',
      '--set',
      'serviceMonitor.labels.release=kube-prometheus-stack',
    ]);
    const sm = objects.find((o) => kindOf(o) === 'ServiceMonitor');
    if (sm === undefined) throw new Error('no ServiceMonitor rendered');
    // Not dry run: stored as the CRD's structural schema prunes it, so what comes back is what Prometheus reads.
    const stored = (await apply(admin, sm, false)) as unknown as {
      metadata: { namespace: string };
      spec: { endpoints: Record<string, unknown>[]; selector: unknown; namespaceSelector: unknown };
    };
    expect(stored.metadata.namespace).toBe('monitored');
    expect(stored.spec.endpoints[0]).toEqual({
      port: 'metrics',
      scheme: 'https',
      path: '/metrics',
      interval: '15s',
      bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
      tlsConfig: { insecureSkipVerify: true },
    });
    expect(stored.spec.namespaceSelector).toEqual({ matchNames: ['monitored'] });
    // It selects the metrics Service the chart renders, whose port is named metrics.
    const svc = objects.find((o) => kindOf(o) === 'Service' && (o as Obj).metadata.name === NAMES.metricsService) as unknown as {
      metadata: { labels: Record<string, string> };
      spec: { ports: { name: string }[] };
    };
    for (const [k, v] of Object.entries((stored.spec.selector as { matchLabels: Record<string, string> }).matchLabels)) expect(svc.metadata.labels[k]).toBe(v);
    expect(svc.spec.ports.map((p) => p.name)).toContain('metrics');
    // The CRD has teeth: a bad interval is refused by its schema.
    const bad = structuredClone(sm) as unknown as { spec: { endpoints: { interval: string }[] } };
    (bad.spec.endpoints[0] as { interval: string }).interval = 'often';
    await expect(apply(admin, bad as unknown as Json, true)).rejects.toMatchObject({ status: 422 });
  });

  it('the pod template meets Pod Security "restricted", which the namespace enforces', async () => {
    const objects = plainObjects();
    await apply(admin, objects.find((o) => kindOf(o) === 'Namespace') as Json, false);
    const dep = objects.find((o) => kindOf(o) === 'Deployment') as Obj;
    const podOf = (spec: Record<string, unknown>): Json =>
      ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'pss-check', namespace: 'sits-system' }, spec }) as Json;
    const spec = dep.spec?.template?.spec as Record<string, unknown>;
    const created = await admin.post<Obj>('/api/v1/namespaces/sits-system/pods', podOf(spec), { dryRun: 'All', fieldManager: 'sits-deploy-e2e' });
    expect(created.metadata.name).toBe('pss-check');
    // The check has teeth: the same pod with its capabilities kept is refused.
    const containers = (spec.containers as Record<string, unknown>[]).map((c) => ({
      ...c,
      securityContext: { ...(c.securityContext as object), capabilities: {} },
    }));
    const refused = await admin.post('/api/v1/namespaces/sits-system/pods', podOf({ ...spec, containers }), { dryRun: 'All' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(KubeApiError);
    expect((refused as KubeApiError).status).toBe(403);
    expect((refused as KubeApiError).message).toContain('violates PodSecurity "restricted:latest"');
  });

  it('helm install creates the release on the apiserver (NOTES with the values), helm uninstall removes it', async () => {
    // As docs/deploy.md says: helm install -n NS --create-namespace (the chart has no Namespace of its own).
    const kc = ['--kubeconfig', plane.kubeconfigPath, '--namespace', 'helm-e2e'];
    const inst = runHelm(helm, ['install', 'sits', chart, ...kc, '--create-namespace', '--set', 'replicas=3']);
    expect(inst.code, inst.stderr).toBe(0);
    expect(inst.stdout).toContain('STATUS: deployed');
    expect(inst.stdout).toContain(
      'SITS 0.2.0 is installed in namespace helm-e2e: the scheduler (3 replicas), the controllers (2 replicas), the admission webhook (mode audit, failurePolicy Ignore).',
    );
    expect(inst.stdout).toContain('kubectl -n helm-e2e port-forward svc/sits-scheduler-metrics 8080:8080 &');
    const ctlBinding = await admin.get<{ subjects: unknown[] }>('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/sits-controllers');
    expect(ctlBinding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'sits-controllers', namespace: 'helm-e2e' }]);
    const dep = await admin.get<{
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
      spec: { replicas: number; template: { spec: { containers: { args: string[] }[] } } };
    }>('/apis/apps/v1/namespaces/helm-e2e/deployments/sits-scheduler');
    expect(dep.metadata.annotations['meta.helm.sh/release-name']).toBe('sits');
    expect(dep.spec.replicas).toBe(3);
    expect(dep.spec.template.spec.containers[0]?.args).toContain('--lease-namespace=helm-e2e');
    const binding = await admin.get<{ subjects: unknown[] }>('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/sits-scheduler');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'sits-scheduler', namespace: 'helm-e2e' }]);
    const list = runHelm(helm, ['list', ...kc, '-o', 'json']);
    expect(JSON.parse(list.stdout)).toMatchObject([{ name: 'sits', namespace: 'helm-e2e', status: 'deployed', chart: 'sits-0.2.0' }]);

    const un = runHelm(helm, ['uninstall', 'sits', ...kc]);
    expect(un.code, un.stderr).toBe(0);
    for (const path of [
      '/apis/apps/v1/namespaces/helm-e2e/deployments/sits-scheduler',
      '/apis/rbac.authorization.k8s.io/v1/clusterroles/sits-scheduler',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/sits-scheduler',
    ])
      await expect(admin.get(path), path).rejects.toMatchObject({ status: 404 });
    // Helm never deletes crds/: the CRDs stay.
    await admin.get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.ai.sits2026.dev');
  });

  describe('with exactly the generated RBAC', () => {
    let sa: KubeClient;
    let saKubeconfig: string;
    let ctl: KubeClient;
    let ctlKubeconfig: string;
    let app: LiveApp | undefined;
    let server: SitsServer | undefined;
    const logs: string[] = [];

    beforeAll(async () => {
      const objects = plainObjects().filter((o) =>
        ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(kindOf(o)),
      );
      for (const o of objects) await apply(admin, o, false);
      // A token for the ServiceAccount from the TokenRequest API (the apiserver signs it with its service-account key).
      const tr = await admin.post<{ status: { token: string } }>(`/api/v1/namespaces/sits-system/serviceaccounts/${NAMES.serviceAccount}/token`, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 3600 },
      });
      saKubeconfig = join(tmp, 'sa.kubeconfig');
      writeFileSync(
        saKubeconfig,
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'c', cluster: { server: plane.server, 'insecure-skip-tls-verify': true } }],
          users: [{ name: 'sits', user: { token: tr.status.token } }],
          contexts: [{ name: 'c', context: { cluster: 'c', user: 'sits' } }],
          'current-context': 'c',
        }),
        { mode: 0o600 },
      );
      sa = new KubeClient(loadKubeConfig(saKubeconfig));
      // The controllers' own ServiceAccount (the chart's sits-controllers Deployment).
      ctlKubeconfig = await tokenKubeconfig(admin, plane.server, tmp, 'sits-system', NAMES.controllersServiceAccount);
      ctl = new KubeClient(loadKubeConfig(ctlKubeconfig));
      // The live scheduler with only that token, and its HTTP server.
      await createFakeGpuNodes(plane.kubeConfig(), devNodes(2, 'dgx-h100', 2));
      server = await startServer({ port: 0, host: '127.0.0.1' });
      app = await createLiveApp({
        kubeconfig: saKubeconfig,
        identity: 'rbac-e2e',
        leaseNamespace: 'sits-system',
        leaseDurationSec: 5,
        log: (m) => logs.push(m),
      });
      server.attach(app.scheduler, app.client);
    });
    afterAll(async () => {
      await server?.close();
      await app?.stop();
      sa?.close();
      ctl?.close();
    });

    it('the token authenticates as the ServiceAccount', async () => {
      const review = await sa.post<{ status: { userInfo: { username: string; groups: string[] } } }>('/apis/authentication.k8s.io/v1/selfsubjectreviews', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'SelfSubjectReview',
      });
      expect(review.status.userInfo.username).toBe(`system:serviceaccount:sits-system:${NAMES.serviceAccount}`);
    });

    it('SelfSubjectAccessReview: what the scheduler and the controllers may do, each under its own ServiceAccount, and what they may not', async () => {
      type Attr = { verb: string; resource: string; group?: string; subresource?: string; namespace?: string; name?: string };
      const can = async (client: KubeClient, a: Attr): Promise<boolean> =>
        (
          await client.post<{ status: { allowed: boolean } }>('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SelfSubjectAccessReview',
            spec: { resourceAttributes: a },
          })
        ).status.allowed;
      const scheduler: { allowed: Attr[]; denied: Attr[] } = {
        allowed: [
          { verb: 'watch', resource: 'nodes' },
          { verb: 'list', resource: 'pods' },
          { verb: 'create', resource: 'pods', subresource: 'binding', namespace: 'team-a' },
          { verb: 'patch', resource: 'pods', subresource: 'status', namespace: 'team-a' },
          // Preemption victims and a half-bound gang's pods (as kube-scheduler's own role).
          { verb: 'delete', resource: 'pods', namespace: 'team-a' },
          { verb: 'create', resource: 'events', namespace: 'team-a' },
          { verb: 'watch', resource: 'podgroups', group: 'ai.sits2026.dev' },
          { verb: 'get', resource: 'leases', group: 'coordination.k8s.io', namespace: 'sits-system', name: 'sits-scheduler' },
          { verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: 'sits-system', name: 'sits-scheduler' },
          { verb: 'create', resource: 'leases', group: 'coordination.k8s.io', namespace: 'sits-system' },
          // Checkpoint-aware preemption asks a victim's TrainingJob for a checkpoint.
          { verb: 'patch', resource: 'trainingjobs', group: 'ai.sits2026.dev', namespace: 'team-a' },
          // the secure metrics port's delegated authn/authz
          { verb: 'create', resource: 'tokenreviews', group: 'authentication.k8s.io' },
          { verb: 'create', resource: 'subjectaccessreviews', group: 'authorization.k8s.io' },
        ],
        denied: [
          // No pod patch or update (ADR 0175): what it records goes through pods/binding and pods/status, as kube-scheduler.
          { verb: 'patch', resource: 'pods', namespace: 'team-a' },
          { verb: 'update', resource: 'pods', namespace: 'team-a' },
          // What only the controllers do: the point of the split.
          { verb: 'create', resource: 'pods', namespace: 'team-a' },
          { verb: 'create', resource: 'services', namespace: 'team-a' },
          { verb: 'create', resource: 'podgroups', group: 'ai.sits2026.dev', namespace: 'team-a' },
          { verb: 'patch', resource: 'trainingjobs', group: 'ai.sits2026.dev', subresource: 'status', namespace: 'team-a' },
          { verb: 'create', resource: 'trainingjobs', group: 'ai.sits2026.dev', namespace: 'team-a' },
          { verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: 'sits-system', name: 'sits-controllers' },
          { verb: 'get', resource: 'secrets', namespace: 'sits-system' },
          { verb: 'list', resource: 'secrets' },
          { verb: 'get', resource: 'configmaps', namespace: 'sits-system' },
          { verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: 'sits-system', name: NAMES.serviceAccount },
          { verb: 'patch', resource: 'nodes' },
          { verb: 'update', resource: 'nodes' },
          { verb: 'delete', resource: 'nodes' },
          { verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: 'sits-system', name: 'someone-else' },
          { verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: 'kube-system', name: 'sits-scheduler' },
          { verb: 'create', resource: 'clusterrolebindings', group: 'rbac.authorization.k8s.io' },
          { verb: 'escalate', resource: 'clusterroles', group: 'rbac.authorization.k8s.io' },
          { verb: 'impersonate', resource: 'users' },
          { verb: 'create', resource: 'customresourcedefinitions', group: 'apiextensions.k8s.io' },
          { verb: 'deletecollection', resource: 'pods', namespace: 'team-a' },
          { verb: 'create', resource: 'pods', subresource: 'exec', namespace: 'team-a' },
        ],
      };
      const controllers: { allowed: Attr[]; denied: Attr[] } = {
        allowed: [
          { verb: 'patch', resource: 'trainingjobs', group: 'ai.sits2026.dev', subresource: 'status', namespace: 'team-a' },
          { verb: 'delete', resource: 'trainingjobs', group: 'ai.sits2026.dev', namespace: 'team-a' },
          { verb: 'update', resource: 'trainingjobs', group: 'ai.sits2026.dev', subresource: 'finalizers', namespace: 'team-a' },
          { verb: 'create', resource: 'podgroups', group: 'ai.sits2026.dev', namespace: 'team-a' },
          { verb: 'create', resource: 'services', namespace: 'team-a' },
          { verb: 'create', resource: 'pods', namespace: 'team-a' },
          { verb: 'delete', resource: 'pods', namespace: 'team-a' },
          // the DataPipeline controller's workload stages
          { verb: 'create', resource: 'trainingjobs', group: 'ai.sits2026.dev', namespace: 'team-a' },
          { verb: 'create', resource: 'inferenceservices', group: 'ai.sits2026.dev', namespace: 'team-a' },
          // the InferenceService controller
          { verb: 'watch', resource: 'inferenceservices', group: 'ai.sits2026.dev' },
          { verb: 'patch', resource: 'inferenceservices', group: 'ai.sits2026.dev', subresource: 'status', namespace: 'team-a' },
          { verb: 'patch', resource: 'inferenceservices', group: 'ai.sits2026.dev', subresource: 'scale', namespace: 'team-a' },
          { verb: 'patch', resource: 'services', namespace: 'team-a' },
          // A DataPipeline's adapter stage server-side-applies its one adapter entry into a user's InferenceService
          // under its own field manager, and the pipeline holds a finalizer to take it out again (ADR 0137).
          { verb: 'patch', resource: 'inferenceservices', group: 'ai.sits2026.dev', namespace: 'team-a' },
          { verb: 'patch', resource: 'datapipelines', group: 'ai.sits2026.dev', namespace: 'team-a' },
          { verb: 'watch', resource: 'nodes' },
          // /metrics on their health port checks its callers by delegation.
          { verb: 'create', resource: 'tokenreviews', group: 'authentication.k8s.io' },
          { verb: 'create', resource: 'subjectaccessreviews', group: 'authorization.k8s.io' },
          // Their own Lease.
          { verb: 'create', resource: 'leases', group: 'coordination.k8s.io', namespace: 'sits-system' },
          { verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: 'sits-system', name: 'sits-controllers' },
        ],
        denied: [
          // What only the scheduler does.
          { verb: 'create', resource: 'pods', subresource: 'binding', namespace: 'team-a' },
          { verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: 'sits-system', name: 'sits-scheduler' },
          // nodes patch only with controllers.quarantineGpus (off by default).
          { verb: 'patch', resource: 'nodes' },
          { verb: 'get', resource: 'secrets', namespace: 'sits-system' },
          { verb: 'get', resource: 'configmaps', namespace: 'sits-system' },
          // The controller follows spec.replicas; it never replaces an InferenceService's spec (patch: above).
          { verb: 'update', resource: 'inferenceservices', group: 'ai.sits2026.dev', namespace: 'team-a' },
          // The controllers create TrainingJobs only as a DataPipeline's stages, and never rewrite what users own.
          { verb: 'update', resource: 'trainingjobs', group: 'ai.sits2026.dev', namespace: 'team-a' },
          { verb: 'update', resource: 'datapipelines', group: 'ai.sits2026.dev', namespace: 'team-a' },
          { verb: 'create', resource: 'queues', group: 'ai.sits2026.dev' },
          { verb: 'deletecollection', resource: 'pods', namespace: 'team-a' },
          { verb: 'create', resource: 'pods', subresource: 'exec', namespace: 'team-a' },
          { verb: 'create', resource: 'clusterrolebindings', group: 'rbac.authorization.k8s.io' },
          { verb: 'impersonate', resource: 'users' },
        ],
      };
      const wrong: string[] = [];
      for (const [who, client, want] of [
        ['scheduler', sa, scheduler],
        ['controllers', ctl, controllers],
      ] as const) {
        for (const a of want.allowed) if (!(await can(client, a))) wrong.push(`${who} should be allowed: ${JSON.stringify(a)}`);
        for (const a of want.denied) if (await can(client, a)) wrong.push(`${who} should be denied: ${JSON.stringify(a)}`);
      }
      expect(wrong).toEqual([]);
      // And for real: the scheduler's token cannot create a pod.
      await createNs(admin, 'rbac-split');
      const refused = await sa.post('/api/v1/namespaces/rbac-split/pods', testPod('rbac-split', 'not-by-the-scheduler')).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(KubeApiError);
      expect((refused as KubeApiError).status).toBe(403);
      // Nor change a pod's spec or labels (an image, a toleration, a label a Service or NetworkPolicy selects):
      // a pod patch is refused; a pods/status patch cannot reach the spec (status-writer.e2e.test.ts).
      // (Another scheduler's pod: the live scheduler running beside this test must not bind it and skew its metrics.)
      await createPods(admin, [testPod('rbac-split', 'victim', { schedulerName: 'default-scheduler' })]);
      const patched = await sa
        .mergePatch('/api/v1/namespaces/rbac-split/pods/victim', { metadata: { labels: { role: 'db' } }, spec: { activeDeadlineSeconds: 1 } })
        .catch((e: unknown) => e);
      expect(patched).toBeInstanceOf(KubeApiError);
      expect((patched as KubeApiError).status).toBe(403);
    });

    it('runs the live scheduler: leads through the Lease, binds pods and a gang, writes events and status; reading secrets is forbidden', async () => {
      if (app === undefined || server === undefined) throw new Error('not started');
      await createNs(admin, 'rbac');
      await admin.post('/api/v1/namespaces/rbac/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'hidden' }, stringData: { k: 'v' } });

      await admin.post('/apis/ai.sits2026.dev/v1/namespaces/rbac/podgroups', {
        apiVersion: 'ai.sits2026.dev/v1',
        kind: 'PodGroup',
        metadata: { name: 'g', namespace: 'rbac' },
        spec: { minMember: 2 },
      });
      await createPods(admin, [
        testPod('rbac', 'gang-0', { gpus: 4, group: 'g' }),
        testPod('rbac', 'gang-1', { gpus: 4, group: 'g' }),
        testPod('rbac', 'single-0', { gpus: 1 }),
        testPod('rbac', 'single-1', { gpus: 2 }),
        testPod('rbac', 'too-big', { gpus: 16 }),
      ]);
      const pods = await waitFor('4 pods bound, too-big marked unschedulable', async () => {
        const ps = await listPods(admin, 'rbac');
        const bound = ps.filter((p) => (p.spec?.nodeName ?? '') !== '');
        const big = ps.find((p) => p.metadata?.name === 'too-big');
        const cond = big?.status?.conditions?.find((c) => c.type === 'PodScheduled');
        return bound.length === 4 && cond?.status === 'False' ? ps : undefined;
      });
      expect(pods.find((p) => p.metadata?.name === 'too-big')?.spec?.nodeName ?? '').toBe('');
      for (const p of pods.filter((x) => x.metadata?.name !== 'too-big'))
        expect(p.metadata?.annotations?.['ai.sits2026.dev/gpu-indices'], p.metadata?.name).toMatch(/^\d+(,\d+)*$/);

      const events = await waitFor('Scheduled and FailedScheduling events', async () => {
        const ev = await listEvents(admin, 'rbac');
        return ev.some((e) => e.reason === 'FailedScheduling') && ev.filter((e) => e.reason === 'Scheduled').length >= 4 ? ev : undefined;
      });
      expect(events.find((e) => e.reason === 'FailedScheduling')?.involvedObject?.name).toBe('too-big');

      const lease = await admin.get<{ spec: { holderIdentity?: string } }>('/apis/coordination.k8s.io/v1/namespaces/sits-system/leases/sits-scheduler');
      expect(lease.spec.holderIdentity).toBe('rbac-e2e');
      expect(app.scheduler.isLeader()).toBe(true);
      // The gang's Scheduled events (waited for above) are written after it is counted.
      expect(app.scheduler.stats.gangsBound).toBe(1);

      // Nothing the scheduler did was refused.
      expect(logs.filter((l) => /forbidden|\b403\b/i.test(l))).toEqual([]);
      // The one failed request allowed: the first GET of the Lease (404, then it is created).
      expect(app.client.stats.errors).toBeLessThanOrEqual(1);

      // Secrets stay out of reach.
      for (const path of [
        '/api/v1/namespaces/rbac/secrets/hidden',
        '/api/v1/namespaces/rbac/secrets',
        '/api/v1/secrets',
        '/api/v1/namespaces/sits-system/configmaps',
      ]) {
        const e = await sa.get(path).catch((x: unknown) => x);
        expect(e, path).toBeInstanceOf(KubeApiError);
        expect((e as KubeApiError).status, path).toBe(403);
      }

      // And the metrics say the same. They are read from the scheduler's watch-fed cache at scrape time: wait until it
      // has caught up with what the API showed above (waitFor retries while an expectation throws, reports the last).
      const url = server.url;
      await waitFor('the metrics to match the cluster', async () => {
        const families = parsePromText(await (await fetch(`${url}/metrics`)).text());
        expect(sampleValue(families, METRIC.bindings)).toBe(4);
        expect(sampleValue(families, METRIC.gangsBound)).toBe(1);
        expect(sampleValue(families, METRIC.leader)).toBe(1);
        expect(sampleValue(families, METRIC.pendingPods)).toBe(1);
        expect(sampleValue(families, METRIC.gpus)).toBe(16);
        expect(sampleValue(families, METRIC.gpusAllocated)).toBe(11);
        expect(sampleValue(families, METRIC.attempts, { result: 'scheduled' })).toBeGreaterThanOrEqual(3);
        expect(sampleValue(families, METRIC.attempts, { result: 'unschedulable' })).toBeGreaterThanOrEqual(1);
        expect(sampleValue(families, METRIC.apiRequests)).toBeGreaterThan(0);
        return true;
      });
      const ready = await fetch(`${server.url}/readyz`);
      expect(await ready.text()).toContain('role: leader');
    });

    it('runs the TrainingJob controller: pods, Service and PodGroup created, status and finalizer written, all deleted with the job', async () => {
      const jobs = '/apis/ai.sits2026.dev/v1/namespaces/rbac-tj/trainingjobs';
      await createNs(admin, 'rbac-tj');
      const controllers = await createControllersApp({
        kubeconfig: ctlKubeconfig,
        identity: 'ctl-e2e',
        leaseNamespace: 'sits-system',
        leaseDurationSec: 5,
        log: (m) => logs.push(`controller: ${m}`),
      });
      try {
        await admin.post(jobs, {
          apiVersion: 'ai.sits2026.dev/v1',
          kind: 'TrainingJob',
          metadata: { name: 'tj' },
          spec: {
            replicas: 2,
            resources: { 'nvidia.com/gpu': 1 },
            container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
          },
        });
        await waitFor("the job's pods created and bound, its status and finalizer written", async () => {
          const job = await admin.get<{ metadata: { finalizers?: string[] }; status?: { phase?: string } }>(`${jobs}/tj`);
          const pods = (await listPods(admin, 'rbac-tj')).filter((p) => p.metadata?.ownerReferences?.some((o) => o.kind === 'TrainingJob') === true);
          return (
            (job.metadata.finalizers ?? []).length > 0 &&
            job.status?.phase !== undefined &&
            pods.length === 2 &&
            pods.every((p) => (p.spec?.nodeName ?? '') !== '')
          );
        });
        const owned = (list: { metadata?: { ownerReferences?: { kind: string }[] } }[]): number =>
          list.filter((o) => o.metadata?.ownerReferences?.some((r) => r.kind === 'TrainingJob') === true).length;
        expect(
          owned((await admin.get<{ items: { metadata?: { ownerReferences?: { kind: string }[] } }[] }>('/api/v1/namespaces/rbac-tj/services')).items),
        ).toBeGreaterThanOrEqual(1);
        expect(
          owned(
            (await admin.get<{ items: { metadata?: { ownerReferences?: { kind: string }[] } }[] }>('/apis/ai.sits2026.dev/v1/namespaces/rbac-tj/podgroups'))
              .items,
          ),
        ).toBeGreaterThanOrEqual(1);

        await admin.delete(`${jobs}/tj`);
        const ownedPods = async (): Promise<V1Pod[]> =>
          (await listPods(admin, 'rbac-tj')).filter((p) => p.metadata?.ownerReferences?.some((o) => o.kind === 'TrainingJob') === true);
        const deleting = await waitFor('the controller deletes the pods', async () => {
          const pods = await ownedPods();
          return pods.every((p) => p.metadata?.deletionTimestamp !== undefined) ? pods : undefined;
        });
        // No kubelet here to finish the graceful deletion: do its part.
        for (const p of deleting)
          await admin.delete(`/api/v1/namespaces/rbac-tj/pods/${p.metadata?.name ?? ''}`, { gracePeriodSeconds: 0 }).catch(() => undefined);
        await waitFor('the controller removes its finalizer: the job is gone', async () => {
          const job = await admin.get(`${jobs}/tj`).catch((e: unknown) => (e instanceof KubeApiError && e.status === 404 ? undefined : Promise.reject(e)));
          return job === undefined && (await ownedPods()).length === 0;
        });
        expect(logs.filter((l) => /forbidden|\b403\b/i.test(l))).toEqual([]);
      } finally {
        await controllers.stop();
      }
    });

    it('runs the DataPipeline controller: stage pods created and bound, status written, a parameter handed on, nothing refused', async () => {
      const dpl = '/apis/ai.sits2026.dev/v1/namespaces/rbac-dpl/datapipelines';
      await createNs(admin, 'rbac-dpl');
      const controllers = await createControllersApp({
        kubeconfig: ctlKubeconfig,
        identity: 'ctl-e2e',
        leaseNamespace: 'sits-system',
        leaseDurationSec: 5,
        log: (m) => logs.push(`controller: ${m}`),
      });
      const stage = (name: string, extra: Record<string, unknown>) => ({ name, container: { image: 'registry.sits2026.dev/tools/busybox:1.36' }, ...extra });
      try {
        await admin.post(dpl, {
          apiVersion: 'ai.sits2026.dev/v1',
          kind: 'DataPipeline',
          metadata: { name: 'p' },
          spec: {
            stages: [
              stage('a', {}),
              stage('b', { dependsOn: ['a'], container: { image: 'registry.sits2026.dev/tools/busybox:1.36', args: ['{{steps.a.outputs.parameters.x}}'] } }),
            ],
          },
        });
        const pod = async (name: string): Promise<V1Pod | undefined> =>
          (await listPods(admin, 'rbac-dpl')).find((p) => p.metadata?.name === name && (p.spec?.nodeName ?? '') !== '');
        await waitFor(
          'stage a pod created and bound, status written',
          async () => (await admin.get<{ status?: { phase?: string } }>(`${dpl}/p`)).status?.phase === 'Running' && (await pod('p-a-0')) !== undefined,
        );
        // No kubelet here: play its part and end the pod with a termination message.
        await admin.request('PATCH', '/api/v1/namespaces/rbac-dpl/pods/p-a-0/status', {
          contentType: 'application/merge-patch+json',
          body: {
            status: {
              phase: 'Succeeded',
              containerStatuses: [
                { name: 'main', image: 'busybox', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 0, message: '{"x":"42"}' } } },
              ],
            },
          },
        });
        const b = await waitFor('stage b pod created with the parameter', async () => {
          const p = await pod('p-b-0');
          return p?.spec?.containers[0]?.args?.[0] === '42' ? p : undefined;
        });
        expect(b.metadata?.ownerReferences?.[0]?.kind).toBe('DataPipeline');
        expect(logs.filter((l) => /forbidden|\b403\b/i.test(l))).toEqual([]);
      } finally {
        await controllers.stop();
        await admin.delete(`${dpl}/p`).catch(() => undefined);
        for (const p of await listPods(admin, 'rbac-dpl'))
          await admin.delete(`/api/v1/namespaces/rbac-dpl/pods/${p.metadata?.name ?? ''}`, { gracePeriodSeconds: 0 }).catch(() => undefined);
      }
    });

    it('runs the InferenceService controller: replica pods created and bound, its Service and status written, /scale followed, nothing refused', async () => {
      const svcs = '/apis/ai.sits2026.dev/v1/namespaces/rbac-isvc/inferenceservices';
      await createNs(admin, 'rbac-isvc');
      const controllers = await createControllersApp({
        kubeconfig: ctlKubeconfig,
        identity: 'ctl-e2e',
        leaseNamespace: 'sits-system',
        leaseDurationSec: 5,
        log: (m) => logs.push(`controller: ${m}`),
      });
      try {
        await admin.post(svcs, {
          apiVersion: 'ai.sits2026.dev/v1',
          kind: 'InferenceService',
          metadata: { name: 'chat' },
          spec: { runtime: 'vllm', model: { uri: 'hf://Qwen/Qwen2.5-0.5B-Instruct' }, replicas: 1 },
        });
        const bound = async (n: number): Promise<boolean> => {
          const pods = (await listPods(admin, 'rbac-isvc')).filter((p) => p.metadata?.ownerReferences?.some((o) => o.kind === 'InferenceService') === true);
          return pods.length === n && pods.every((p) => (p.spec?.nodeName ?? '') !== '');
        };
        await waitFor('the replica created and bound, the Service and the status written', async () => {
          const s = await admin.get<{ status?: { replicas?: number; selector?: string } }>(`${svcs}/chat`);
          const services = (await admin.get<{ items: unknown[] }>('/api/v1/namespaces/rbac-isvc/services')).items;
          return s.status?.replicas === 1 && s.status.selector !== undefined && services.length === 1 && (await bound(1));
        });
        await admin.mergePatch(`${svcs}/chat/scale`, { spec: { replicas: 2 } });
        await waitFor('the controller follows /scale', () => bound(2));
        expect(logs.filter((l) => /forbidden|\b403\b/i.test(l))).toEqual([]);
      } finally {
        await controllers.stop();
        await admin.delete(`${svcs}/chat`).catch(() => undefined);
        for (const p of await listPods(admin, 'rbac-isvc'))
          await admin.delete(`/api/v1/namespaces/rbac-isvc/pods/${p.metadata?.name ?? ''}`, { gracePeriodSeconds: 0 }).catch(() => undefined);
      }
    });

    it("the webhook Deployment's command line runs `sits webhook` with its own token: Secret created, caBundle published, HTTPS probes answer, nothing refused", async () => {
      const tr = await admin.post<{ status: { token: string } }>(`/api/v1/namespaces/sits-system/serviceaccounts/${WEBHOOK_NAMES.serviceAccount}/token`, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 3600 },
      });
      const kubeconfig = join(tmp, 'webhook-sa.kubeconfig');
      writeFileSync(
        kubeconfig,
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'c', cluster: { server: plane.server, 'insecure-skip-tls-verify': true } }],
          users: [{ name: 'w', user: { token: tr.status.token } }],
          contexts: [{ name: 'c', context: { cluster: 'c', user: 'w' } }],
          'current-context': 'c',
        }),
        { mode: 0o600 },
      );
      // The configurations as the chart has them, but matching no namespace: the apiserver never calls a webhook
      // that is not reachable from here, and the scheduler tests above and below are not reviewed.
      const configs = plainObjects().filter((o) => ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration'].includes(kindOf(o)));
      for (const c of configs) {
        const quiet = structuredClone(c) as unknown as { webhooks: { namespaceSelector: unknown }[] };
        for (const w of quiet.webhooks) w.namespaceSelector = { matchLabels: { 'sits-e2e/never': 'x' } };
        await apply(admin, quiet as unknown as Json, false);
      }
      const dep = plainObjects().find((o) => kindOf(o) === 'Deployment' && (o as Obj).metadata.name === WEBHOOK_NAMES.deployment) as unknown as {
        spec: { template: { spec: { containers: { args: string[] }[] } } };
      };
      const port = (await freePorts(1))[0] ?? 0;
      const args = (dep.spec.template.spec.containers[0]?.args ?? []).map((a) => a.replace(/^--port=\d+$/, `--port=${port}`));
      const child = spawn(process.execPath, [join(import.meta.dirname, '../../bin/sits.mjs'), ...args, '--host=127.0.0.1', `--kubeconfig=${kubeconfig}`], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const exited = new Promise<number | string | null>((resolve) => child.on('close', (code, signal) => resolve(code ?? signal)));
      try {
        await waitFor(
          'the webhook to publish its caBundle into both configurations',
          async () => {
            for (const c of configs) {
              const got = await admin.get<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(objectPath(c as Obj));
              if ((got.webhooks[0]?.clientConfig.caBundle ?? '') === '') return false;
            }
            return true;
          },
          60_000,
          200,
        );
        const secret = await admin.get<{ type: string }>(`/api/v1/namespaces/sits-system/secrets/${WEBHOOK_NAMES.secret}`);
        expect(secret.type).toBe('kubernetes.io/tls');
        // The caBundle is published before the HTTPS port listens (the Secret comes first); wait for the port.
        await waitFor('the webhook to serve', async () => stderr.includes('sits-webhook serving on https://127.0.0.1:'), 60_000, 100);
        const health = await new Promise<number>((resolve, reject) => {
          const req = httpsGet(`https://127.0.0.1:${port}/readyz`, { rejectUnauthorized: false }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
        });
        expect(health).toBe(200);
        expect(stderr).toContain('sits-webhook serving on https://127.0.0.1:');
        expect(stderr).not.toMatch(/forbidden|\b403\b/i);
      } finally {
        child.kill('SIGTERM');
        expect(await exited, `sits webhook's exit on SIGTERM; its stderr ends:\n${stderr.slice(-2000)}`).toBe(0);
        for (const c of configs) await admin.delete(objectPath(c as Obj)).catch(() => undefined);
      }
    });

    it("the Deployment's command line runs `sits run` with that token: secure port (probes open, /metrics only for who may get it), standby behind the leader, stops on SIGTERM", async () => {
      const dep = plainObjects().find((o) => kindOf(o) === 'Deployment') as unknown as { spec: { template: { spec: { containers: { args: string[] }[] } } } };
      const port = (await freePorts(1))[0] ?? 0;
      const args = (dep.spec.template.spec.containers[0]?.args ?? []).map((a) =>
        a.replace('$(POD_NAME)', 'sits-scheduler-pod-1').replace(/^--metrics-port=\d+$/, `--metrics-port=${port}`),
      );
      // The scheduler alone: the controllers run in their own Deployment (below).
      expect(args).not.toContain('--controllers');
      // As in the pod: all interfaces, so TLS with a self-signed certificate and delegated authn/authz.
      const child = spawn(process.execPath, [join(import.meta.dirname, '../../bin/sits.mjs'), ...args, `--kubeconfig=${saKubeconfig}`], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      // 'close', not 'exit': only then has all of stderr been read (it is checked below).
      const exited = new Promise<number | string | null>((resolve) => child.on('close', (code, signal) => resolve(code ?? signal)));
      const get = (path: string, token?: string): Promise<{ status: number; body: string }> => httpsText(port, path, token);
      try {
        const body = await waitFor(
          '/readyz of the spawned replica',
          async () => {
            const r = await get('/readyz');
            return r.status === 200 ? r.body : undefined;
          },
          60_000,
          200,
        );
        // The in-process scheduler above holds the Lease: this one stands by.
        expect(body).toContain('role: standby');
        expect((await get('/metrics')).status).toBe(403);
        expect((await get('/metrics', 'not-a-token')).status).toBe(401);
        // Its own ServiceAccount is not a metrics reader; the admin is.
        const saToken = (loadKubeConfig(saKubeconfig).getCurrentUser()?.token ?? '') as string;
        const asSa = await get('/metrics', saToken);
        expect(asSa.status).toBe(403);
        expect(asSa.body).toContain('cannot get path "/metrics"');
        const families = parsePromText((await get('/metrics', plane.token)).body);
        expect(sampleValue(families, METRIC.leader)).toBe(0);
        expect(sampleValue(families, METRIC.nodes)).toBe(2);
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).toBe(0);
      expect(stderr.split('\n').filter((l) => /forbidden|\b403\b/i.test(l))).toEqual([]);
    });

    it("the controllers Deployment's command line runs `sits controllers` with their token: takes their own Lease, HTTPS probes, /metrics for readers only, nothing refused, stops on SIGTERM", async () => {
      const dep = plainObjects().find((o) => kindOf(o) === 'Deployment' && (o as Obj).metadata.name === NAMES.controllersDeployment) as unknown as {
        spec: { template: { spec: { serviceAccountName: string; containers: { args: string[] }[] } } };
      };
      expect(dep.spec.template.spec.serviceAccountName).toBe(NAMES.controllersServiceAccount);
      const port = (await freePorts(1))[0] ?? 0;
      const args = (dep.spec.template.spec.containers[0]?.args ?? []).map((a) =>
        a.replace('$(POD_NAME)', 'sits-controllers-pod-1').replace(/^--health-port=\d+$/, `--health-port=${port}`),
      );
      const child = spawn(process.execPath, [join(import.meta.dirname, '../../bin/sits.mjs'), ...args, `--kubeconfig=${ctlKubeconfig}`], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const exited = new Promise<number | string | null>((resolve) => child.on('close', (code, signal) => resolve(code ?? signal)));
      const get = (path: string, token?: string): Promise<{ status: number; body: string }> => httpsText(port, path, token);
      try {
        const body = await waitFor(
          '/readyz of the spawned controllers, leading',
          async () => {
            const r = await get('/readyz').catch(() => undefined);
            return r?.status === 200 && r.body.includes('role: leader') ? r.body : undefined;
          },
          60_000,
          200,
        );
        expect(body).toContain('controllers: synced');
        expect((await get('/healthz')).status).toBe(200);
        // The probes are open; /metrics only for callers the apiserver authenticates and authorizes (TokenReview and
        // SubjectAccessReview by the controllers' own ServiceAccount): anonymous and bad tokens are refused, the
        // admin reads the process and controller-runtime metrics.
        expect((await get('/metrics')).status).toBe(403);
        expect((await get('/metrics', 'not-a-token')).status).toBe(401);
        const families = parsePromText((await get('/metrics', plane.token)).body);
        expect(families.get('process_resident_memory_bytes')).toBeDefined();
        expect(families.get('controller_runtime_reconcile_total')).toBeDefined();
        expect(families.get('workqueue_depth')).toBeDefined();
        expect((await get('/dashboard/', plane.token)).status).toBe(404);
        const lease = await admin.get<{ spec: { holderIdentity?: string } }>(
          `/apis/coordination.k8s.io/v1/namespaces/sits-system/leases/${NAMES.controllersLease}`,
        );
        expect(lease.spec.holderIdentity).toBe('sits-controllers-pod-1');
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).toBe(0);
      expect(stderr).toContain('sits-controllers running (Lease sits-system/sits-controllers');
      expect(stderr.split('\n').filter((l) => /forbidden|\b403\b/i.test(l))).toEqual([]);
    });
  });
});
