/** Small helpers for end-to-end tests against the real control plane. */
import { request as httpsRequest } from 'node:https';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client/client.ts';
import { ANNOTATION, GPU_RESOURCE, SCHEDULER_NAME, LABEL } from '../api/wire.ts';
import { loadScaleNow } from '../testing/timeouts.ts';

/**
 * Polls `fn` until it returns something other than undefined/false, and returns that. A throw counts as "not
 * yet" (so `fn` may use expect(); the last error is in the timeout message). `timeoutMs` is the budget on an
 * idle machine: it is spent at the test timeout factor (src/testing/timeouts.ts) or, while the machine is busier
 * than when the run started, at the load's factor (`loadScaleNow`), so a wait on a loaded CI machine gets the
 * time the load takes from it while a failing test on an idle one still fails quickly.
 */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const start = performance.now();
  let spent = 0;
  let last: unknown;
  let at = start;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    const now = performance.now();
    spent += (now - at) / loadScaleNow();
    at = now;
    if (spent > timeoutMs)
      throw new Error(
        `timed out after ${Math.round(now - start)} ms (a budget of ${timeoutMs} ms on an idle machine) waiting for ${what}${last === undefined ? '' : ` (last error: ${(last as Error).message})`}`,
      );
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface TestPodOptions {
  readonly gpus?: number;
  readonly cpu?: string;
  readonly memory?: string;
  readonly group?: string;
  readonly annotations?: Record<string, string>;
  readonly labels?: Record<string, string>;
  readonly schedulerName?: string;
}

export function testPod(namespace: string, name: string, o: TestPodOptions = {}): V1Pod {
  const gpus = o.gpus ?? 1;
  const res = { cpu: o.cpu ?? '1', memory: o.memory ?? '1Gi', ...(gpus > 0 ? { [GPU_RESOURCE]: String(gpus) } : {}) };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { ...o.labels, ...(o.group === undefined ? {} : { [LABEL.podGroup]: o.group }) }, annotations: { ...o.annotations } },
    spec: {
      schedulerName: o.schedulerName ?? SCHEDULER_NAME,
      containers: [{ name: 'main', image: 'registry.invalid/test:1', resources: { requests: res, limits: gpus > 0 ? { [GPU_RESOURCE]: String(gpus) } : {} } }],
    },
  };
}

export async function createPods(client: KubeClient, pods: readonly V1Pod[]): Promise<void> {
  await Promise.all(pods.map((p) => client.post(`/api/v1/namespaces/${p.metadata?.namespace ?? 'default'}/pods`, p)));
}

export async function listPods(client: KubeClient, namespace: string): Promise<V1Pod[]> {
  return (await client.get<{ items: V1Pod[] }>(`/api/v1/namespaces/${namespace}/pods`)).items;
}

export async function createNs(client: KubeClient, name: string): Promise<void> {
  await client.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

export async function listEvents(client: KubeClient, namespace: string): Promise<{ reason?: string; message?: string; involvedObject?: { name?: string } }[]> {
  return (await client.get<{ items: { reason?: string; message?: string; involvedObject?: { name?: string } }[] }>(`/api/v1/namespaces/${namespace}/events`))
    .items;
}

/** GPUs used per node and per device by bound pods, from their gpu-indices annotations; throws on any over-commit. */
export function gpuUsage(pods: readonly V1Pod[], gpusPerNode: number): Map<string, number[]> {
  const used = new Map<string, number[]>();
  for (const p of pods) {
    const node = p.spec?.nodeName;
    if (node === undefined || node === '') continue;
    const idx = (p.metadata?.annotations?.[ANNOTATION.gpuIndices] ?? '')
      .split(',')
      .filter((x) => x !== '')
      .map(Number);
    const want = Number(p.spec?.containers[0]?.resources?.requests?.[GPU_RESOURCE] ?? '0');
    if (idx.length !== want) throw new Error(`pod ${p.metadata?.name}: gpu-indices "${idx.join(',')}" for ${want} GPUs`);
    const arr = used.get(node) ?? new Array<number>(gpusPerNode).fill(0);
    for (const g of idx) {
      if (g < 0 || g >= gpusPerNode) throw new Error(`pod ${p.metadata?.name}: GPU index ${g} out of range`);
      arr[g] = (arr[g] as number) + 1;
      if ((arr[g] as number) > 1) throw new Error(`node ${node}: GPU ${g} given to two pods`);
    }
    used.set(node, arr);
  }
  return used;
}

/** What `kubectl get` shows: the apiserver's server-side Table, with the CRD's printer columns. */
export interface KubeTable {
  readonly columnDefinitions: readonly { readonly name: string }[];
  readonly rows: readonly { readonly cells: readonly unknown[]; readonly object?: { readonly metadata?: { readonly name?: string } } }[];
}

/** GETs `path` as a Table, the way kubectl asks for it (the bearer token of the harness's admin). */
export function getTable(plane: { readonly server: string; readonly token: string }, path: string): Promise<KubeTable> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${plane.server}${path}`,
      { headers: { Authorization: `Bearer ${plane.token}`, Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' }, rejectUnauthorized: false },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text) as KubeTable) : reject(new Error(`${res.statusCode ?? 0}: ${text}`))));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A Table's rows as column name → cell. */
export function tableRows(t: KubeTable): Record<string, unknown>[] {
  return t.rows.map((r) => Object.fromEntries(t.columnDefinitions.map((c, i) => [c.name, r.cells[i]])));
}
