// The dashboard on the dev cluster (real kube-apiserver, the live SITS scheduler, a fake kubelet), opened in
// headless Chromium over the secure port as `sits run` serves it off loopback: a ServiceAccount token allowed
// the dashboard's non-resource URLs by RBAC (SubjectAccessReview), others refused. The page must show every node
// and GPU, repaint a gang's GPUs within a second of its binding, paint an unhealthy GPU as such, show a waiting
// job's explanation and expected start, and log no console error. Screenshots go to test-artefacts/dashboard/ (git-ignored).
import { mkdirSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION } from '../api/wire.ts';
import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { createNs, createPods, testPod, waitFor } from '../harness/e2e-kit.ts';
import { selfSignedServing } from '../kube/secure/certs.ts';
import { subjectAccessReviewAuthorizer, tokenReviewAuthenticator } from '../kube/secure/delegated-auth.ts';
import { launchChromium, pageErrors } from '../testing/chromium.ts';
import type { ClusterView } from './cluster-view.ts';
import { DASHBOARD_VIEWER_RULES, liveViewStream } from './dashboard.ts';
import { startServer, type SitsServer } from './server.ts';

const ARTEFACTS = join(import.meta.dirname, '../../test-artefacts/dashboard');
const NS = 'dash';
const NODES = 8;
const GPUS = 8;
const WHOLE = '#f76707';
const FREE = '#2b3a4c';
const UNHEALTHY = '#e64980';

let cluster: DevCluster;
let server: SitsServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let errors: string[];
const tokens: Record<string, string> = {};

async function saToken(name: string): Promise<string> {
  await cluster.client.post(`/api/v1/namespaces/${NS}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } });
  const tr = await cluster.client.post<{ status: { token: string } }>(`/api/v1/namespaces/${NS}/serviceaccounts/${name}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  return tr.status.token;
}

function getStatus(path: string, token?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsGet(
      `https://127.0.0.1:${server.port}${path}`,
      { rejectUnauthorized: false, headers: token === undefined ? {} : { Authorization: `Bearer ${token}` } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    // The event stream never ends: the status line is all this needs.
    req.setTimeout(10_000, () => req.destroy());
  });
}

const view = (): Promise<ClusterView> => page.evaluate(() => (window as unknown as { sitsDashboard: { view: ClusterView } }).sitsDashboard.view);
const pixel = (node: string, gpu: number): Promise<string | undefined> =>
  page.evaluate(([n, g]) => (window as unknown as { sitsDashboard: { pixel(n: string, g: number): string | undefined } }).sitsDashboard.pixel(n, g), [
    node,
    gpu,
  ] as const);
const pod = (name: string): Promise<V1Pod> => cluster.client.get<V1Pod>(`/api/v1/namespaces/${NS}/pods/${name}`);

beforeAll(async () => {
  mkdirSync(ARTEFACTS, { recursive: true });
  cluster = await startDevCluster({ nodes: NODES, shape: 'nvlink-2x4', nodesPerRack: 4, controllers: false });
  const scheduler = cluster.app?.scheduler;
  if (scheduler === undefined) throw new Error('dev cluster without scheduler');
  await createNs(cluster.client, NS);
  await cluster.client.post('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'sits-dashboard-viewer' },
    rules: DASHBOARD_VIEWER_RULES.map((r) => ({ nonResourceURLs: [...r.nonResourceURLs], verbs: [...r.verbs] })),
  });
  await cluster.client.post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'sits-dashboard-viewer' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'sits-dashboard-viewer' },
    subjects: [{ kind: 'ServiceAccount', name: 'viewer', namespace: NS }],
  });
  tokens.viewer = await saToken('viewer');
  tokens.nobody = await saToken('nobody');
  // The secure port as `sits run --metrics-host 0.0.0.0` starts it: TLS, TokenReview, SubjectAccessReview.
  const tls = await selfSignedServing(['localhost'], ['127.0.0.1']);
  server = await startServer({
    port: 0,
    host: '0.0.0.0',
    secure: { tls, authn: tokenReviewAuthenticator(cluster.client), authz: subjectAccessReviewAuthorizer(cluster.client) },
  });
  server.attach(scheduler, cluster.app?.client);
  server.attachView(liveViewStream(scheduler));
  browser = await launchChromium();
  context = await browser.newContext({
    ignoreHTTPSErrors: true,
    extraHTTPHeaders: { Authorization: `Bearer ${tokens.viewer}` },
    viewport: { width: 1400, height: 1000 },
  });
  page = await context.newPage();
  errors = pageErrors(page);
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await server?.close();
  await cluster?.stop();
});

describe('the dashboard on a live cluster', () => {
  it('is served only to callers RBAC allows its paths (SubjectAccessReview on the non-resource URLs), like /metrics', async () => {
    for (const path of ['/dashboard/', '/dashboard/dashboard.js', '/dashboard/api/v1/cluster', '/dashboard/api/v1/cluster/stream']) {
      expect(await getStatus(path), `${path} anonymous`).toBe(403);
      expect(await getStatus(path, tokens.nobody), `${path} nobody`).toBe(403);
      expect(await getStatus(path, 'not-a-token'), `${path} bad token`).toBe(401);
      expect(await getStatus(path, tokens.viewer), `${path} viewer`).toBe(200);
    }
    // The viewer may read the dashboard, nothing more.
    expect(await getStatus('/metrics', tokens.viewer)).toBe(403);
    // Allowed as a dashboard path, and still nothing outside web/.
    expect(await getStatus('/dashboard/..%2fpackage.json', tokens.viewer)).toBe(404);
    expect(await getStatus('/dashboard/..%2f..%2fpackage.json', tokens.viewer)).toBe(404);
    expect(await getStatus('/healthz')).toBe(200);
    // Not under /api/: Kubernetes' default system:discovery role lets every authenticated user get /api/* (ADR 0061).
    expect(await getStatus('/api/v1/cluster', tokens.nobody)).toBe(404);
  });

  it('shows every node and GPU, laid out and painted', async () => {
    await page.goto(`${server.url.replace('0.0.0.0', '127.0.0.1')}/dashboard/`);
    await waitFor(
      'the first paint',
      () => page.evaluate(() => (window as unknown as { sitsDashboard: { firstPaintMs?: number } }).sitsDashboard.firstPaintMs !== undefined),
      30_000,
    );
    const v = await view();
    expect(v.source).toBe('live');
    expect(v.nodes.map((n) => n.name).sort()).toEqual([...cluster.nodeNames].sort());
    expect(v.totals).toMatchObject({ nodes: NODES, gpus: NODES * GPUS, healthyGpus: NODES * GPUS });
    // Topology order: racks of 4 nodes, each GPU with its NVLink island (2 islands of 4 on this shape).
    expect(new Set(v.nodes.map((n) => n.rack))).toEqual(new Set(['rack-0', 'rack-1']));
    for (const n of v.nodes) expect(n.gpus.map((g) => g.island)).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    for (const n of v.nodes) for (let g = 0; g < GPUS; g++) expect(await pixel(n.name, g), `${n.name} GPU ${g}`).toBe(FREE);
    await page.screenshot({ path: join(ARTEFACTS, '1-empty.png'), fullPage: true });
  });

  it("repaints a gang's GPUs within a second of its binding, and hovering a GPU names its pod, job, queue and devices", async () => {
    const t0 = performance.now();
    await createPods(
      cluster.client,
      [0, 1].map((i) =>
        testPod(NS, `g1-${i}`, {
          gpus: 4,
          group: 'g1',
          labels: { 'ai.sits2026.dev/queue': 'research' },
          annotations: { [ANNOTATION.minMember]: '2', [ANNOTATION.expectedRuntimeSeconds]: '3600' },
        }),
      ),
    );
    // Both sides watched at once: when the apiserver has both bindings, and when the page shows them.
    let boundAt: number | undefined;
    let placed: { node: string; gpus: number[] }[] = [];
    let paintedAt: number | undefined;
    await waitFor(
      'the gang bound and painted',
      async () => {
        if (boundAt === undefined) {
          const ps = await Promise.all([pod('g1-0'), pod('g1-1')]);
          if (ps.every((p) => (p.spec?.nodeName ?? '') !== '' && p.metadata?.annotations?.[ANNOTATION.gpuIndices] !== undefined)) {
            boundAt = performance.now();
            placed = ps.map((p) => ({
              node: p.spec?.nodeName as string,
              gpus: (p.metadata?.annotations?.[ANNOTATION.gpuIndices] as string).split(',').map(Number),
            }));
          }
        }
        if (placed.length > 0 && paintedAt === undefined) {
          const colours = await Promise.all(placed.flatMap((p) => p.gpus.map((g) => pixel(p.node, g))));
          if (colours.every((c) => c === WHOLE)) paintedAt = performance.now();
        }
        return boundAt !== undefined && paintedAt !== undefined;
      },
      60_000,
      25,
    );
    const latency = Math.max(0, (paintedAt as number) - (boundAt as number));
    console.log(`dashboard: gang bound → GPUs repainted in ${latency.toFixed(0)} ms (created → repainted ${((paintedAt as number) - t0).toFixed(0)} ms)`);
    expect(latency).toBeLessThan(1000);
    const first = placed[0] as { node: string; gpus: number[] };
    // The page's view says who holds those GPUs.
    const v = await view();
    const node = v.nodes.find((n) => n.name === first.node);
    const gpu = node?.gpus[first.gpus[0] as number];
    expect(gpu?.status).toBe('whole');
    const holder = node?.pods.find((p) => p.pod === gpu?.pods[0]);
    expect(holder).toMatchObject({ job: `gang:${NS}/g1`, queue: 'research', gpus: first.gpus });
    expect(v.running.find((r) => r.id === `gang:${NS}/g1`)).toMatchObject({ pods: 2, gpuMilli: 8000 });
    // Hover: the tooltip over that GPU's cell.
    const at = await page.evaluate(
      ([n, g]) => {
        const d = (window as unknown as { sitsDashboard: { view: ClusterView; heatmap: { cellCentre(i: number, g: number): { x: number; y: number } } } })
          .sitsDashboard;
        const c = d.heatmap.cellCentre(
          d.view.nodes.findIndex((x) => x.name === n),
          g,
        );
        const r = document.getElementById('heatmap')?.getBoundingClientRect();
        return { x: (r?.left ?? 0) + c.x, y: (r?.top ?? 0) + c.y };
      },
      [first.node, first.gpus[0] as number] as const,
    );
    await page.mouse.move(at.x, at.y);
    const tip = await waitFor('the tooltip', async () => {
      const t = await page.locator('#tooltip').textContent();
      return (await page.locator('#tooltip').isVisible()) && t !== null && t.includes('g1-') ? t : undefined;
    });
    expect(tip).toContain(first.node);
    expect(tip).toContain(`job gang:${NS}/g1 · queue research`);
    expect(tip).toContain(`devices ${first.gpus.join(',')}`);
    await page.screenshot({ path: join(ARTEFACTS, '2-gang-bound.png'), fullPage: true });
  });

  it('paints a GPU the device plugin reports unhealthy (allocatable below capacity) as unhealthy', async () => {
    const v0 = await view();
    const victim = v0.nodes.find((n) => n.pods.length === 0);
    if (victim === undefined) throw new Error('no idle node');
    // As a device plugin does when a GPU fails: allocatable drops to 7 of 8 (the highest index is the one counted out).
    await cluster.client.request('PATCH', `/api/v1/nodes/${victim.name}/status`, {
      contentType: 'application/merge-patch+json',
      body: { status: { allocatable: { 'nvidia.com/gpu': '7' } } },
    });
    await waitFor('the GPU painted unhealthy', async () => (await pixel(victim.name, 7)) === UNHEALTHY, 30_000, 50);
    const v = await view();
    expect(v.nodes.find((n) => n.name === victim.name)?.gpus.map((g) => g.healthy)).toEqual([true, true, true, true, true, true, true, false]);
    expect(v.totals.healthyGpus).toBe(NODES * GPUS - 1);
    expect(await pixel(victim.name, 6)).toBe(FREE);
  });

  it('shows a waiting job with the explanation SITS wrote on it and its expected start', async () => {
    // Fill every other GPU for 20 minutes (the user says so), then ask for a whole node more. All in the gang's
    // queue: one queue, equal priorities, so nothing is preempted and the waiter waits for the fillers to end.
    const research = { 'ai.sits2026.dev/queue': 'research' };
    const v0 = await view();
    const fillers: V1Pod[] = [];
    for (const n of v0.nodes) {
      const free = n.gpus.filter((g) => g.usedMilli === 0 && g.healthy).length;
      if (free > 0)
        fillers.push(testPod(NS, `fill-${fillers.length}`, { gpus: free, labels: research, annotations: { [ANNOTATION.expectedRuntimeSeconds]: '1200' } }));
    }
    await createPods(cluster.client, fillers);
    await waitFor(
      'the fillers bound',
      async () => (await Promise.all(fillers.map((f) => pod(f.metadata?.name as string)))).every((p) => (p.spec?.nodeName ?? '') !== ''),
      60_000,
    );
    await createPods(cluster.client, [testPod(NS, 'waiter', { gpus: 8, labels: research, annotations: { [ANNOTATION.expectedRuntimeSeconds]: '600' } })]);
    const written = await waitFor(
      'SITS wrote why the waiter waits and when it starts',
      async () => {
        const p = await pod('waiter');
        const c = p.status?.conditions?.find((x) => x.type === 'PodScheduled' && x.status === 'False');
        const eta = p.metadata?.annotations?.[ANNOTATION.expectedStart];
        return c?.message !== undefined && eta !== undefined ? { message: c.message, eta: Date.parse(eta) } : undefined;
      },
      90_000,
      250,
    );
    const row = page.locator('#pending tbody tr[data-job="dash/waiter"]');
    const cells = await waitFor(
      'the waiter in the pending table with its explanation and start',
      async () => {
        if ((await row.count()) === 0) return undefined;
        const tds = await row.locator('td').allTextContents();
        return tds[6] !== undefined && tds[6] !== 'not tried yet' && (tds[7] ?? '').includes('in ') ? tds : undefined;
      },
      30_000,
      100,
    );
    expect(cells[0]).toBe('dash/waiter');
    expect(cells[2]).toBe('8');
    // The queue reason kind comes from the leader's scheduling queue (the wait it parked the job with).
    expect(cells[5]).toBe('capacity');
    // The explanation is the one on the pod (its first line), the ETA the annotation's. The pod carries the wait's
    // steady form (no countdown, ADR 0195); the dashboard reads the leader's queue, which may add the countdown.
    expect(cells[6]?.startsWith(written.message.split('\n')[0] as string), `${cells[6]} vs ${written.message}`).toBe(true);
    const pending = (await view()).pending.find((p) => p.id === 'dash/waiter');
    expect(pending?.etaMs).toBe(written.eta);
    expect(pending?.explanation.length).toBeGreaterThan(10);
    // About 20 minutes away, when the fillers are expected to end.
    expect(cells[7], written.message).toMatch(/in (19|20|21) min/);
    await page.locator('#pending-section').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(ARTEFACTS, '3-pending.png'), fullPage: true });
  });

  it('logged no console error or page error', () => {
    expect(errors).toEqual([]);
  });
});
