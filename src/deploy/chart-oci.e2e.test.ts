// The chart as an OCI artifact, installed and upgraded on a real kube-apiserver (issue 30). One local registry
// (distribution, tools/oci) for the file and a fresh control plane for each test:
//   1. the image (`scripts/image.mjs`) is pushed with crane, the working tree's chart is packaged, pushed with
//      `helm push` and installed from oci://… as a user would, its workloads referencing the image by digest;
//   2. the previous release (src/deploy/testing/fixtures/sits-0.1.0.tgz) is installed, workloads run under it, then
//      the CRDs are upgraded the documented way (server-side apply of what `sits crds` prints) and the release is
//      upgraded to the OCI chart and rolled back, without restarting the workloads.
// No kubelet runs here, so the SITS pods of the chart never start: the scheduler and controllers run in this process
// (as src/cli/deploy.e2e.test.ts does), and the guard-rail webhook, whose pods cannot answer, is told to leave the
// workloads' namespace alone (a value of the chart, `webhook.excludeNamespaces`).
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { V1Pod } from '@kubernetes/client-node';
import { crdYaml, buildCrds } from '../api/crd.ts';
import { createLiveApp, type LiveApp } from '../app/live.ts';
import { devNodes } from '../app/dev-cluster.ts';
import { KubeClient } from '../kube/client/client.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createNs, listPods, waitFor } from '../harness/e2e-kit.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { FakeKubelet } from '../harness/fake-kubelet.ts';
import { ensureOciTools, startOciRegistry, type OciRegistry } from '../harness/oci-registry.ts';
import { ensureHelm, helmTemplate, parseManifests, removeHelmScratch, runHelm, valuesFile, writeChart, type HelmRun } from './testing/helm.ts';
import { buildImage } from './testing/image.ts';
import { objectPath } from './testing/rest-paths.ts';

const FIXTURE = join(import.meta.dirname, 'testing/fixtures/sits-0.1.0.tgz');
const NS = 'sits-system';
const WORKLOADS = 'ml';
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const API = '/apis/ai.sits2026.dev/v1';
const CRD_MANAGER = 'sits-crds';

type Meta = {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  annotations?: Record<string, string>;
  managedFields?: { manager: string; operation: string }[];
};
type Obj = { apiVersion: string; kind: string; metadata: Meta; spec?: Record<string, unknown> };
type CrdLike = {
  kind: string;
  metadata: Meta;
  spec: { versions: readonly { name: string; served: boolean; storage: boolean; schema?: unknown }[] };
  status?: { conditions?: { type: string; status: string }[] };
};

const pathOf = (o: Obj): string => objectPath(o, NS);

function ok(r: HelmRun, what: string): string {
  expect(r.code, `${what}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

const sha256 = (file: string): string => `sha256:${createHash('sha256').update(readFileSync(file)).digest('hex')}`;

describe('the chart as an OCI artifact on a real kube-apiserver and registry', () => {
  let plane: ControlPlane;
  let admin: KubeClient;
  let registry: OciRegistry;
  let crane: string;
  let helm: string;
  let tmp: string;
  let chartDir: string;
  let version: string;
  let packaged: string;
  let repo: string;
  let kc: string[];
  /** Values of the working tree's chart, and of the 0.1.0 release (whose schema had namespace/createNamespace). */
  let values: string;
  let oldValues: string;
  let ociBin: string;
  let imageLayout: string;
  let imageDigest: Promise<string>;

  beforeAll(async () => {
    helm = await ensureHelm();
    ociBin = await ensureOciTools();
    crane = join(ociBin, 'crane');
    tmp = mkdtempSync(join(tmpdir(), 'sits-chart-oci-'));
    // The image builds while the control plane starts.
    imageLayout = join(tmp, 'image');
    imageDigest = buildImage(ociBin, imageLayout, join(tmp, 'sits-image.oci.tar'));
    imageDigest.catch(() => undefined);
    [, registry] = await Promise.all([usePlane(), startOciRegistry()]);
    chartDir = writeChart();
    version = String((parseYaml(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as { version: string }).version);
    repo = `oci://${registry.host}/charts`;
    // The guard-rail webhook's pods never answer here: the workloads' namespace is left out of its reviews. The
    // release namespace is Helm's (--create-namespace); 0.1.0 made its own unless told not to.
    values = valuesFile({ webhook: { excludeNamespaces: ['kube-system', 'kube-node-lease', WORKLOADS] } });
    oldValues = valuesFile({ createNamespace: false, webhook: { excludeNamespaces: ['kube-system', 'kube-node-lease', NS, WORKLOADS] } });
  });
  /**
   * Stops the current control plane, if any, and starts a fresh one. The upgrade test needs an apiserver without the
   * first test's CRDs; deleting them instead waits on the apiserver's CRD finalizer, whose exponential back-off while
   * a new CRD's watch cache is "(re)initializing" once took over 3 minutes in CI (operator-framework/operator-controller#1437).
   */
  async function usePlane(): Promise<void> {
    admin?.close();
    await plane?.stop();
    plane = await startControlPlane();
    admin = new KubeClient(plane.kubeConfig());
    kc = ['--kubeconfig', plane.kubeconfigPath, '--namespace', NS];
  }
  afterAll(async () => {
    admin?.close();
    await Promise.all([plane?.stop(), registry?.stop()]);
    if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true });
    removeHelmScratch();
  });

  it('image and chart pushed to the registry, helm install from oci:// creates every object, workloads use the image by digest', async () => {
    // The image: the OCI layout pushed as is; the registry serves the very manifest scripts/image.mjs wrote.
    const digest = await imageDigest;
    const imageRepo = `${registry.host}/sits/sits`;
    const push = spawnSync(crane, ['push', '--insecure', imageLayout, `${imageRepo}:${version}`], { encoding: 'utf8' });
    expect(push.status, push.stderr).toBe(0);
    expect(push.stdout.trim()).toBe(`${imageRepo}@${digest}`);
    const remote = spawnSync(crane, ['digest', '--insecure', `${imageRepo}:${version}`], { encoding: 'utf8' });
    expect(remote.stdout.trim()).toBe(digest);
    const config = JSON.parse(spawnSync(crane, ['config', '--insecure', `${imageRepo}@${digest}`], { encoding: 'utf8' }).stdout) as {
      config: { User: string; Entrypoint: string[] };
    };
    expect(config.config).toMatchObject({ User: '65532:65532', Entrypoint: ['/usr/local/bin/node', '/app/bin/sits.mjs'] });

    ok(runHelm(helm, ['package', chartDir, '-d', tmp]), 'helm package');
    packaged = join(tmp, `sits-${version}.tgz`);
    const pushed = runHelm(helm, ['push', packaged, repo, '--plain-http']);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(`${pushed.stdout}${pushed.stderr}`).toContain(`Pushed: ${registry.host}/charts/sits:${version}`);
    // What the registry holds, read by another client (crane): Helm's config and one layer, the very .tgz.
    const manifest = spawnSync(crane, ['manifest', '--insecure', `${registry.host}/charts/sits:${version}`], { encoding: 'utf8' });
    expect(manifest.status, manifest.stderr).toBe(0);
    const m = JSON.parse(manifest.stdout) as { config: { mediaType: string }; layers: { mediaType: string; digest: string }[] };
    expect(m.config.mediaType).toBe('application/vnd.cncf.helm.config.v1+json');
    expect(m.layers).toEqual([expect.objectContaining({ mediaType: 'application/vnd.cncf.helm.chart.content.v1.tar+gzip', digest: sha256(packaged) })]);

    const byDigest = ['--set', `image.repository=${imageRepo}`, '--set', `image.digest=${digest}`];
    const out = ok(
      runHelm(helm, ['install', 'sits', `${repo}/sits`, '--version', version, '--plain-http', '--create-namespace', '-f', values, ...byDigest, ...kc]),
      'helm install',
    );
    expect(out).toContain('STATUS: deployed');
    const status = JSON.parse(ok(runHelm(helm, ['status', 'sits', '-o', 'json', ...kc]), 'helm status')) as { info: { status: string }; version: number };
    expect(status).toMatchObject({ info: { status: 'deployed' }, version: 1 });
    expect(JSON.parse(ok(runHelm(helm, ['list', '-o', 'json', ...kc]), 'helm list'))).toMatchObject([
      { name: 'sits', namespace: NS, status: 'deployed', chart: `sits-${version}` },
    ]);

    try {
      await everyObjectInstalled();
      // Every SITS workload runs exactly the pushed image: repository@digest, never a tag that could move.
      const workloads = (
        await admin.get<{ items: { metadata: { name: string }; spec: { template: { spec: { containers: { image: string }[] } } } }[] }>(
          `/apis/apps/v1/namespaces/${NS}/deployments`,
        )
      ).items;
      expect(workloads.map((d) => d.metadata.name).sort()).toEqual(['sits-controllers', 'sits-scheduler', 'sits-webhook']);
      for (const d of workloads) for (const c of d.spec.template.spec.containers) expect(c.image, d.metadata.name).toBe(`${imageRepo}@${digest}`);
    } finally {
      ok(runHelm(helm, ['uninstall', 'sits', ...kc]), 'helm uninstall');
    }
    await expect(admin.get(`/apis/apps/v1/namespaces/${NS}/deployments/sits-scheduler`)).rejects.toMatchObject({ status: 404 });
    // Helm never deletes what crds/ installed (the custom resources would go with them): the CRDs stay.
    const left = (await admin.get<{ items: Obj[] }>(CRDS)).items.map((c) => c.metadata.name).filter((n) => n.endsWith('.ai.sits2026.dev'));
    expect(left.sort()).toEqual(
      buildCrds()
        .map((c) => c.metadata.name)
        .sort(),
    );
  });

  /** Every object Helm renders for these values is on the apiserver, the CRDs from crds/ included. */
  async function everyObjectInstalled(): Promise<void> {
    const rendered = helmTemplate(helm, chartDir, ['-f', values, '--namespace', NS]) as Obj[];
    const kinds = new Set(rendered.map((o) => o.kind));
    for (const k of ['CustomResourceDefinition', 'Deployment', 'ServiceAccount', 'ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration'])
      expect(kinds, k).toContain(k);
    for (const o of rendered) {
      const live = await admin.get<Obj>(pathOf(o));
      if (o.kind !== 'CustomResourceDefinition') expect(live.metadata.annotations?.['meta.helm.sh/release-name'], pathOf(o)).toBe('sits');
    }
    expect(
      rendered
        .filter((o) => o.kind === 'CustomResourceDefinition')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(
      buildCrds()
        .map((c) => c.metadata.name)
        .sort(),
    );
  }

  it('upgrade from the 0.1.0 release: CRDs by server-side apply, helm upgrade from oci://, rollback; workloads keep running', async () => {
    // The upgrade target must be in the registry (the first test pushed it; pushed again when run alone).
    if (packaged === undefined) {
      ok(runHelm(helm, ['package', chartDir, '-d', tmp]), 'helm package');
      packaged = join(tmp, `sits-${version}.tgz`);
      ok(runHelm(helm, ['push', packaged, repo, '--plain-http']), 'helm push');
    }
    // A control plane without the first test's release and CRDs: the 0.1.0 chart installs its own.
    if ((await admin.get<{ items: Obj[] }>(CRDS)).items.some((c) => c.metadata.name.endsWith('.ai.sits2026.dev'))) await usePlane();
    // Deployments → ReplicaSets → Pods, so "SITS's own pods were (not) replaced" is visible.
    await plane.startControllerManager({ controllers: ['deployment-controller', 'replicaset-controller'] });

    // 1. The previous release, as installed in the field: its chart, its CRDs (crds/ on first install).
    const inst = ok(runHelm(helm, ['install', 'sits', FIXTURE, '--create-namespace', '-f', oldValues, ...kc]), 'helm install 0.1.0');
    expect(inst).toContain('STATUS: deployed');
    // The CRDs on the apiserver are the 0.1.0 chart's crds/.
    const schemaOf = (c: CrdLike): unknown[] => c.spec.versions.map((v) => ({ name: v.name, served: v.served, storage: v.storage, schema: v.schema }));
    const fixtureCrds = (helmTemplate(helm, FIXTURE, ['--include-crds', '-f', oldValues, '--namespace', NS]) as unknown as CrdLike[]).filter(
      (o) => o.kind === 'CustomResourceDefinition',
    );
    expect(fixtureCrds.length).toBeGreaterThan(0);
    for (const c of fixtureCrds) expect(schemaOf(await admin.get<CrdLike>(`${CRDS}/${c.metadata.name}`)), c.metadata.name).toEqual(schemaOf(c));

    // 2. Workloads under it: a TrainingJob (2 replicas) and an InferenceService (1 replica), placed by SITS.
    const nodes = devNodes(2, 'nvlink-2x4');
    await createFakeGpuNodes(plane.kubeConfig(), nodes);
    const names = new Set(nodes.map((n) => n.name));
    const kubelet = new FakeKubelet(admin, (n) => names.has(n));
    await kubelet.start();
    const logs: string[] = [];
    const startSits = (): Promise<LiveApp> =>
      createLiveApp({ kubeconfig: plane.kubeconfigPath, identity: 'chart-oci-e2e', controllers: true, log: (l) => logs.push(l) });
    let app: LiveApp | undefined = await startSits();
    try {
      await createNs(admin, WORKLOADS);
      await admin.post(`${API}/namespaces/${WORKLOADS}/trainingjobs`, {
        apiVersion: 'ai.sits2026.dev/v1',
        kind: 'TrainingJob',
        metadata: { name: 'bert' },
        spec: {
          replicas: 2,
          resources: { 'nvidia.com/gpu': 1 },
          container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
        },
      });
      await admin.post(`${API}/namespaces/${WORKLOADS}/inferenceservices`, {
        apiVersion: 'ai.sits2026.dev/v1',
        kind: 'InferenceService',
        metadata: { name: 'chat' },
        spec: {
          runtime: 'vllm',
          model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen' },
          replicas: 1,
          gpusPerReplica: 1,
          resources: { cpu: '4', memory: '16Gi' },
        },
      });
      const running = (ps: V1Pod[]): boolean => ps.length === 3 && ps.every((p) => (p.spec?.nodeName ?? '') !== '' && p.status?.phase === 'Running');
      const workloadUids = async (): Promise<string[]> => (await listPods(admin, WORKLOADS)).map((p) => p.metadata?.uid ?? '').sort();
      const before = await waitFor(
        '3 workload pods bound and Running',
        async () => {
          const ps = await listPods(admin, WORKLOADS);
          return running(ps) ? ps.map((p) => p.metadata?.uid ?? '').sort() : undefined;
        },
        30_000,
      );
      const deployments = ['sits-scheduler', 'sits-webhook'];
      const deployment = (name: string): Promise<Obj & { spec: { template: unknown } }> => admin.get(`/apis/apps/v1/namespaces/${NS}/deployments/${name}`);
      const ownPods = async (): Promise<string[]> => (await listPods(admin, NS)).map((p) => `${p.metadata?.name ?? ''}/${p.metadata?.uid ?? ''}`).sort();
      // Both Deployments have their pods (Pending for ever: no kubelet for them) before the upgrade.
      const ownBefore = await waitFor(
        "the Deployments' pods created",
        async () => {
          const ps = await ownPods();
          return ps.length === 4 ? ps : undefined;
        },
        30_000,
      );
      const templatesBefore = await Promise.all(deployments.map(async (d) => (await deployment(d)).spec.template));

      // 3. The new SITS starts (as the Deployment's rollout would replace the pods): the old one stops first.
      await app.stop();
      app = undefined;

      // 4. CRDs first, the documented way: `sits crds | kubectl apply --server-side --force-conflicts` (Helm never upgrades crds/).
      const crds = parseManifests(crdYaml()) as Obj[];
      expect(crds.map((c) => c.metadata.name).sort()).toEqual(
        buildCrds()
          .map((c) => c.metadata.name)
          .sort(),
      );
      for (const c of crds) {
        await admin.request('PATCH', `${CRDS}/${c.metadata.name}`, {
          body: c,
          contentType: 'application/apply-patch+yaml',
          query: { fieldManager: CRD_MANAGER, force: true },
        });
      }
      const newSchemas = async (): Promise<void> => {
        for (const c of buildCrds()) {
          const live = await admin.get<CrdLike>(`${CRDS}/${c.metadata.name}`);
          expect(live.status?.conditions?.find((x) => x.type === 'Established')?.status, c.metadata.name).toBe('True');
          expect(schemaOf(live), c.metadata.name).toEqual(schemaOf(c));
          expect(
            live.metadata.managedFields?.some((f) => f.manager === CRD_MANAGER && f.operation === 'Apply'),
            c.metadata.name,
          ).toBe(true);
        }
      };
      await waitFor('the CRDs Established with the schema src/api generates', async () => (await newSchemas(), true), 30_000);

      // 5. helm upgrade to the working tree's chart, pulled from the registry.
      const up = ok(runHelm(helm, ['upgrade', 'sits', `${repo}/sits`, '--version', version, '--plain-http', '-f', values, ...kc]), 'helm upgrade');
      expect(up).toContain('STATUS: deployed');
      expect(up).toContain('REVISION: 2');
      app = await startSits();

      // Revision 2 deployed, 1 superseded.
      type Rev = { revision: number; status: string; chart: string };
      const history = (): Rev[] => JSON.parse(ok(runHelm(helm, ['history', 'sits', '-o', 'json', ...kc]), 'helm history')) as Rev[];
      expect(history().map((r) => [r.revision, r.status, r.chart])).toEqual([
        [1, 'superseded', 'sits-0.1.0'],
        [2, 'deployed', `sits-${version}`],
      ]);
      await newSchemas(); // helm upgrade left the CRDs alone

      // SITS's own pod templates changed exactly where the chart changed them.
      const rendered = (chart: string, valuesOf: string): unknown[] => {
        const objects = helmTemplate(helm, chart, ['-f', valuesOf, '--namespace', NS]) as Obj[];
        return deployments.map((d) => objects.find((o) => o.kind === 'Deployment' && o.metadata.name === d)?.spec?.['template']);
      };
      const [oldRendered, newRendered] = [rendered(FIXTURE, oldValues), rendered(chartDir, values)];
      const templatesAfter = await Promise.all(deployments.map(async (d) => (await deployment(d)).spec.template));
      for (const [i, d] of deployments.entries()) {
        const chartChanged = JSON.stringify(oldRendered[i]) !== JSON.stringify(newRendered[i]);
        expect(JSON.stringify(templatesAfter[i]) !== JSON.stringify(templatesBefore[i]), `${d}: pod template changed iff the chart changed it`).toBe(
          chartChanged,
        );
      }
      // A changed template starts a rollout (a second ReplicaSet); an unchanged one keeps its pods (names and UIDs).
      const replicaSets = async (d: string): Promise<string[]> =>
        (await admin.get<{ items: Obj[] }>(`/apis/apps/v1/namespaces/${NS}/replicasets`)).items
          .filter((r) => r.metadata.name.startsWith(`${d}-`))
          .map((r) => r.metadata.name);
      for (const [i, d] of deployments.entries()) {
        const chartChanged = JSON.stringify(oldRendered[i]) !== JSON.stringify(newRendered[i]);
        await waitFor(`${d}: ${chartChanged ? 2 : 1} ReplicaSet(s)`, async () => (await replicaSets(d)).length === (chartChanged ? 2 : 1), 30_000);
        if (!chartChanged)
          expect(
            (await ownPods()).filter((p) => p.startsWith(`${d}-`)),
            d,
          ).toEqual(ownBefore.filter((p) => p.startsWith(`${d}-`)));
      }

      // The workloads: same pods (UIDs) after the restarted controllers re-listed everything, and still for a while.
      await waitFor(
        'the InferenceService ready again under the new controllers',
        async () => {
          const s = await admin.get<{ status?: { readyReplicas?: number } }>(`${API}/namespaces/${WORKLOADS}/inferenceservices/chat`);
          return s.status?.readyReplicas === 1;
        },
        30_000,
      );
      for (let i = 0; i < 10; i++) {
        expect(await workloadUids()).toEqual(before);
        await new Promise((r) => setTimeout(r, 300));
      }

      // 6. Rollback to revision 1: revision 3 deployed with the 0.1.0 chart; the CRDs stay new (Helm never touches
      // them), the workloads stay.
      ok(runHelm(helm, ['rollback', 'sits', '1', ...kc]), 'helm rollback');
      expect(history().map((r) => [r.revision, r.status, r.chart])).toEqual([
        [1, 'superseded', 'sits-0.1.0'],
        [2, 'superseded', `sits-${version}`],
        [3, 'deployed', 'sits-0.1.0'],
      ]);
      const templatesRolledBack = await Promise.all(deployments.map(async (d) => (await deployment(d)).spec.template));
      expect(templatesRolledBack).toEqual(templatesBefore);
      await newSchemas();
      expect(await workloadUids()).toEqual(before);
    } catch (e) {
      console.error(logs.slice(-40).join('\n'));
      throw e;
    } finally {
      await app?.stop();
      kubelet.stop();
    }
  });
});
