// `sits dev up` as a user runs it (the real CLI, a child process): it prints where its kubeconfig is, leads with its
// scheduler, runs kube-controller-manager (so deleting a workload removes what it made, as on a real cluster), and
// serves the scheduler's metrics and dashboard on loopback, which `sits top` reads.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { get as httpsGet } from 'node:https';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts, runEnsure } from '../harness/control-plane.ts';
import { createNs, listPods, waitFor } from '../harness/e2e-kit.ts';
import { RUN_SECONDS_ANNOTATION } from '../harness/fake-kubelet.ts';
import { loadKubeConfig } from '../app/live.ts';
import { KubeClient } from '../kube/client/client.ts';
import type { ClusterView } from '../server/cluster-view.ts';
import { runSits } from '../testing/sits-cli.ts';

const execFileAsync = promisify(execFile);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const dir = mkdtempSync(join(tmpdir(), 'sits-devup-'));
const kubeconfig = join(dir, 'dev.kubeconfig');
const API = '/apis/ai.sits2026.dev/v1/namespaces/gc';
let child: ChildProcess | undefined;
let exited: Promise<number | null>;
let client: KubeClient;
let port = 0;
let out = '';
let err = '';

beforeAll(async () => {
  [port] = (await freePorts(1)) as [number];
  const proc = spawn(
    process.execPath,
    [
      join(ROOT, 'bin/sits.mjs'),
      'dev',
      'up',
      '--nodes',
      '2',
      '--shape',
      'a800x4',
      '--kubeconfig',
      kubeconfig,
      '--metrics-port',
      String(port),
      '--webhook',
      'off',
      '--pod-run-seconds',
      '5',
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child = proc;
  proc.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  proc.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
  exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  await waitFor(
    'ready',
    async () => {
      if (proc.exitCode !== null) throw new Error(`dev up exited ${proc.exitCode}: ${err}`);
      return out.includes(`ready kubeconfig=${kubeconfig}`);
    },
    120_000,
  );
  client = new KubeClient(loadKubeConfig(kubeconfig));
  await createNs(client, 'gc');
});

afterAll(async () => {
  client?.close();
  if (child !== undefined && child.exitCode === null) {
    child.kill('SIGKILL');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

const gpu = { requests: { 'nvidia.com/gpu': '1', cpu: '1', memory: '1Gi' }, limits: { 'nvidia.com/gpu': '1' } };
const KINDS = [
  {
    plural: 'trainingjobs',
    name: 'train',
    pods: 2,
    body: {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'TrainingJob',
      metadata: { name: 'train' },
      spec: {
        replicas: 2,
        resources: { 'nvidia.com/gpu': 1 },
        podTemplate: {
          metadata: { annotations: { [RUN_SECONDS_ANNOTATION]: '3600' } },
          spec: { containers: [{ name: 'trainer', image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] }] },
        },
      },
    },
  },
  {
    plural: 'inferenceservices',
    name: 'chat',
    pods: 2,
    body: {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'InferenceService',
      metadata: { name: 'chat' },
      spec: {
        runtime: 'vllm',
        model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen' },
        replicas: 2,
        gpusPerReplica: 1,
        resources: { cpu: '1', memory: '1Gi' },
      },
    },
  },
  {
    plural: 'datapipelines',
    name: 'prep',
    pods: 1,
    body: {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'DataPipeline',
      metadata: { name: 'prep' },
      spec: {
        stages: [
          {
            name: 'tokenize',
            podTemplate: {
              metadata: { annotations: { [RUN_SECONDS_ANNOTATION]: '3600' } },
              spec: { containers: [{ name: 'main', image: 'registry.sits2026.dev/tools/busybox:1.36', resources: gpu }] },
            },
          },
        ],
      },
    },
  },
] as const;

/** What in the namespace still belongs to `name` (its label or its name prefix): pods, Services, PodGroups. */
async function leftOf(name: string): Promise<string[]> {
  const [pods, svcs, pgs] = await Promise.all([
    listPods(client, 'gc'),
    client.get<{ items: { metadata: { name: string } }[] }>('/api/v1/namespaces/gc/services'),
    client.get<{ items: { metadata: { name: string } }[] }>(`${API}/podgroups`),
  ]);
  const mine = (n: string | undefined): boolean => n !== undefined && (n === name || n.startsWith(`${name}-`));
  return [
    ...pods.filter((p) => mine(p.metadata?.name)).map((p) => `pod/${p.metadata?.name ?? ''}`),
    ...svcs.items.filter((s) => mine(s.metadata.name)).map((s) => `service/${s.metadata.name}`),
    ...pgs.items.filter((g) => mine(g.metadata.name)).map((g) => `podgroup/${g.metadata.name}`),
  ];
}

/**
 * kubectl's table as rows of cells by header: kubectl aligns every cell under its header (tabwriter), so a cell is
 * the text from its header's column to the next header's; an empty cell stays empty (splitting on spaces would
 * shift the rest of the row).
 */
function tableCells(text: string): Record<string, string>[] {
  const [header = '', ...lines] = text.split('\n').filter((l) => l.trim() !== '');
  const starts = [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0], at: m.index }));
  return lines.map((l) => Object.fromEntries(starts.map((h, i) => [h.name, l.slice(h.at, starts[i + 1]?.at ?? l.length).trim()])));
}

describe('sits dev up', () => {
  it('leads with its scheduler, runs kube-controller-manager, serves metrics and the dashboard `sits top` reads', async () => {
    const ca = join(dir, 'dev.scheduler-ca.crt');
    const server = `https://127.0.0.1:${port}`;
    expect(err).toContain(
      `metrics on ${server}/metrics, dashboard on ${server}/dashboard/ (sits top --server ${server} --kubeconfig ${kubeconfig} --certificate-authority ${ca})`,
    );

    // `sits top` against it, as the line says: the kubeconfig's credentials, the scheduler's certificate checked.
    const view = await waitFor(
      'sits top sees both nodes',
      async () => {
        const r = await runSits(['top', '-o', 'json', '--server', server, '--kubeconfig', kubeconfig, '--certificate-authority', ca]);
        if (r.code !== 0) throw new Error(r.err);
        const v = JSON.parse(r.out) as ClusterView;
        return v.totals.nodes === 2 ? v : undefined;
      },
      60_000,
    );
    expect(view).toMatchObject({ source: 'live', totals: { nodes: 2, gpus: 8 } });
    // Its scheduler holds the Lease `sits run` takes, so a `sits run` against it stands by (--scheduler none: none).
    const lease = await waitFor(
      "the scheduler's Lease",
      async () =>
        (await client.get<{ spec?: { holderIdentity?: string } }>('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/sits-scheduler')).spec
          ?.holderIdentity,
      30_000,
    );
    expect(lease).toBe('sits-dev');
    // The controller manager runs: a Deployment gets its ReplicaSet (what `kubectl create deployment` relies on).
    await client.post('/apis/apps/v1/namespaces/default/deployments', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] } },
      },
    });
    await waitFor(
      "the Deployment's ReplicaSet",
      async () => (await client.get<{ items: unknown[] }>('/apis/apps/v1/namespaces/default/replicasets')).items.length === 1,
      60_000,
    );
    // The port checks who calls (TokenReview, SubjectAccessReview through the dev apiserver), like `sits run`'s.
    const token = /token: (\S+)/.exec(readFileSync(kubeconfig, 'utf8'))?.[1] ?? '';
    const get = (headers: Record<string, string>): Promise<{ status: number; body: string }> =>
      new Promise((done, fail) => {
        httpsGet(`${server}/metrics`, { ca: readFileSync(ca), headers }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (c: string) => (body += c));
          res.on('end', () => done({ status: res.statusCode ?? 0, body }));
        }).on('error', fail);
      });
    // No credentials: anonymous, which RBAC does not let read /metrics; a token the apiserver does not know: 401.
    expect((await get({})).status).toBe(403);
    expect((await get({ authorization: 'Bearer not-a-token' })).status).toBe(401);
    const metrics = await get({ authorization: `Bearer ${token}` });
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('sits_');
  });

  it('deleting a running TrainingJob, InferenceService, DataPipeline, BatchInferenceJob: their pods, Services and PodGroups are gone within 30 s, their GPUs free again', async () => {
    for (const k of KINDS) await client.post(`${API}/${k.plural}`, k.body);
    const running = async (name: string): Promise<number> =>
      (await listPods(client, 'gc')).filter((p) => p.metadata?.name?.startsWith(`${name}-`) && (p.spec?.nodeName ?? '') !== '' && p.status?.phase === 'Running')
        .length;
    for (const k of KINDS) await waitFor(`${k.plural}/${k.name} running`, async () => (await running(k.name)) >= k.pods, 60_000);
    for (const k of KINDS) expect(await leftOf(k.name), k.plural).not.toEqual([]);
    // The InferenceService's Service has endpoints (kube-controller-manager's EndpointSlice controller), at the
    // pods' IPs, which lie outside the Service CIDR (10.0.0.0/24).
    const ips = await waitFor(
      'the Service chat with both replicas as endpoints',
      async () => {
        const slices = await client.get<{ items: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] }[] }>(
          '/apis/discovery.k8s.io/v1/namespaces/gc/endpointslices',
          { labelSelector: 'kubernetes.io/service-name=chat' },
        );
        const ready = slices.items
          .flatMap((e) => e.endpoints ?? [])
          .filter((e) => e.conditions?.ready === true)
          .flatMap((e) => e.addresses);
        return ready.length === 2 ? ready : undefined;
      },
      60_000,
    );
    const podIps = (await listPods(client, 'gc')).filter((p) => p.metadata?.name?.startsWith('chat-')).map((p) => p.status?.podIP);
    expect([...ips].sort()).toEqual([...podIps].sort());
    for (const ip of ips) expect(ip.startsWith('10.0.0.'), ip).toBe(false);

    for (const k of KINDS) {
      await client.delete(`${API}/${k.plural}/${k.name}`);
      const t0 = Date.now();
      await waitFor(
        `everything of ${k.plural}/${k.name} gone`,
        async () => {
          const left = await leftOf(k.name);
          if (left.length > 0) throw new Error(`left: ${left.join(', ')}`);
          return true;
        },
        30_000,
      );
      expect(Date.now() - t0).toBeLessThan(60_000);
    }
    // A BatchInferenceJob deleted while its workers run: its pods go too (the claim and its files are the user's).
    const claims = /claims \(batch input and output\) under (\S+)\/<namespace>\/<claim>/.exec(err)?.[1] ?? '';
    await client.post('/api/v1/namespaces/gc/persistentvolumeclaims', {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data' },
      spec: { accessModes: ['ReadWriteMany'], resources: { requests: { storage: '1Gi' } } },
    });
    await waitFor('the claim linked for the batch controller', async () => existsSync(join(claims, 'gc/data')), 60_000);
    mkdirSync(join(claims, 'gc/data/in'), { recursive: true });
    writeFileSync(
      join(claims, 'gc/data/in/many.jsonl'),
      Array.from(
        { length: 5000 },
        (_, i) =>
          `${JSON.stringify({ custom_id: `r-${i}`, method: 'POST', url: '/v1/chat/completions', body: { messages: [{ role: 'user', content: `count ${i}` }], max_tokens: 64 } })}\n`,
      ).join(''),
    );
    await client.post(`${API}/batchinferencejobs`, {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'BatchInferenceJob',
      metadata: { name: 'batch' },
      spec: {
        model: { uri: 'hf://Qwen/Qwen2.5-0.5B-Instruct' },
        input: { uri: 'pvc://data/in/many.jsonl' },
        output: { uri: 'pvc://data/out/batch' },
        workers: 2,
        gpusPerWorker: 1,
      },
    });
    await waitFor('batchinferencejobs/batch running', async () => (await running('batch')) >= 2, 60_000);
    await client.delete(`${API}/batchinferencejobs/batch`);
    await waitFor(
      'everything of batchinferencejobs/batch gone',
      async () => {
        const left = await leftOf('batch');
        if (left.length > 0) throw new Error(`left: ${left.join(', ')}`);
        return true;
      },
      30_000,
    );
    // A stage that says how long it runs (dev.sits2026.dev/run-seconds) finishes, and its pipeline Succeeds.
    await client.post(`${API}/datapipelines`, {
      ...KINDS[2].body,
      metadata: { name: 'quick' },
      spec: {
        stages: [
          {
            name: 'tokenize',
            podTemplate: { metadata: { annotations: { [RUN_SECONDS_ANNOTATION]: '1' } }, spec: KINDS[2].body.spec.stages[0].podTemplate.spec },
          },
        ],
      },
    });
    await waitFor(
      'the pipeline quick Succeeded',
      async () => (await client.get<{ status?: { phase?: string } }>(`${API}/datapipelines/quick`)).status?.phase === 'Succeeded',
      60_000,
    );
    // The 8 GPUs are free: a gang of all of them runs.
    await client.post(`${API}/trainingjobs`, {
      ...KINDS[0].body,
      metadata: { name: 'all' },
      spec: { ...KINDS[0].body.spec, replicas: 2, resources: { 'nvidia.com/gpu': 4 } },
    });
    await waitFor('a gang of all 8 GPUs running', async () => (await running('all')) === 2, 60_000);
    await client.delete(`${API}/trainingjobs/all`);
    await waitFor('the gang all gone', async () => (await leftOf('all')).length === 0, 30_000);
  });

  it('runs docs/quick-start.md as written: every bash block in order, with kubectl; every kind ends as the page says and fills its columns', async () => {
    const page = readFileSync(join(ROOT, 'docs/quick-start.md'), 'utf8');
    // The page's dev up is this one's (the other flags here only pick ports, files and a smaller cluster).
    expect(page).toContain('sits dev up --pod-run-seconds 5\n');
    const claims = /claims \(batch input and output\) under (\S+)\/<namespace>\/<claim>/.exec(err)?.[1];
    expect(claims, err).toBeDefined();
    const kubectlDir = process.env.SITS_KUBECTL_BIN ?? (await runEnsure(join(ROOT, 'tools/k8s/ensure-kubectl.mjs'), () => undefined));
    const env = { ...process.env, PATH: `${kubectlDir}:${process.env.PATH ?? ''}`, KUBECONFIG: kubeconfig, CLAIMS: claims ?? '' };
    const blocks = [...page.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    expect(blocks.length).toBeGreaterThanOrEqual(6);
    for (const [i, block] of blocks.entries()) {
      // Not spawnSync: a block waits for minutes at most, and the test worker must keep answering vitest meanwhile.
      const r = await execFileAsync('bash', ['-euo', 'pipefail', '-c', block], { cwd: ROOT, env, encoding: 'utf8', timeout: 300_000 }).then(
        (o) => ({ status: 0, ...o }),
        (e: { code?: number; stdout?: string; stderr?: string }) => ({ status: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
      );
      expect(r.status, `block ${i + 1} of docs/quick-start.md:\n${block}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(0);
    }
    const kubectl = (...args: string[]): string => {
      const r = spawnSync('kubectl', args, { env, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    // What the page promised, read as a user reads it: the default columns of each kind, none left empty.
    const rows = {
      sq: tableCells(kubectl('get', 'sq', 'research', 'product')),
      tj: tableCells(kubectl('get', 'tj', 'bert-finetune')),
      infsvc: tableCells(kubectl('get', 'infsvc', 'chat')),
      bij: tableCells(kubectl('get', 'bij', 'summaries')),
      dpl: tableCells(kubectl('get', 'dpl', 'tokenize')),
    };
    for (const [kind, table] of Object.entries(rows))
      for (const row of table) for (const [col, v] of Object.entries(row)) expect(v, `${kind} ${row.NAME ?? ''} column ${col}`).not.toBe('');
    expect(rows.tj[0]).toMatchObject({ PHASE: 'Succeeded', REPLICAS: '2' });
    expect(rows.infsvc[0]).toMatchObject({ READY: '2', DESIRED: '2', PHASE: 'Ready' });
    expect(rows.bij[0]).toMatchObject({ PHASE: 'Succeeded', PROGRESS: '100' });
    expect(rows.dpl[0]).toMatchObject({ PHASE: 'Succeeded', COMPLETED: '2', STAGES: '2' });
    expect(rows.sq.map((r) => [r.NAME, r.TIER, r.WEIGHT])).toEqual([
      ['research', 'silver', '2'],
      ['product', 'bronze', '1'],
    ]);
    const output = readFileSync(join(claims ?? '', 'default/data/out/summaries/output.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(output).toHaveLength(20);
    expect(kubectl('get', 'events', '--field-selector', 'involvedObject.name=bert-finetune')).toMatch(/Succeeded\s+trainingjob\/bert-finetune/);
  });

  it('stops on SIGTERM', async () => {
    child?.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(err).toContain('SIGTERM: stopping the dev cluster');
  });
});
