/**
 * The dev cluster the BatchInferenceJob e2e files and `sits bench batch --control-plane` (batch-control-plane.ts)
 * share: kube-apiserver + etcd, the PV binder of
 * kube-controller-manager, the SITS scheduler, the fake kubelet running each worker pod's engine (the llama-server
 * stand-in on the tiny generated model) and its `sits batch-worker` container as processes, and one RWX claim
 * `data` over a local folder (`root`/data) that the jobs read and write; the controllers started with the claims
 * mounted under `root`. Helpers to write inputs, create jobs and read outputs.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { BatchInferenceJob } from '../api/schema/batch-inference-job.ts';
import { LABEL } from '../api/wire.ts';
import type { Manifest } from '../controllers/batch-inference/coordinator.ts';
import { createNs, listPods, waitFor } from '../harness/e2e-kit.ts';
import type { EnginePodsOptions } from '../harness/llm/engine-pods.ts';
import { schedulerFragmentation } from '../live/batch/batch-routing.ts';
import { ensureTinyModel } from '../harness/llm/tiny-model.ts';
import { MODEL_DIR } from '../serving/pod-template.ts';
import { claimsUnder } from '../live/batch/batch-jobs.ts';
import { startControllers, type ControllerOptions, type Controllers } from '../app/controllers.ts';
import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';

export interface OutputLine {
  readonly custom_id: string;
  readonly response: { readonly status_code: number; readonly body: { readonly choices?: unknown[] } } | null;
  readonly error: unknown;
}

export interface BatchE2e {
  readonly cluster: DevCluster;
  readonly root: string;
  /** The controller's claims folder: `<claimsDir>/<ns>/data` is `root`/data. */
  readonly claimsDir: string;
  readonly ns: string;
  readonly jobsPath: string;
  readonly logs: string[];
  controllers: Controllers | undefined;
  startControllers(extra?: Partial<ControllerOptions>): Promise<Controllers>;
  /** Writes `n` chat requests `prefix-0..n-1` to data/in/`file`; returns the custom_ids. */
  writeInput(file: string, n: number, prefix: string): string[];
  createJob(name: string, input: string, workers: number, spec?: Record<string, unknown>): Promise<unknown>;
  job(name: string): Promise<BatchInferenceJob>;
  workerPods(name: string): Promise<V1Pod[]>;
  finished(name: string, timeoutMs: number): Promise<BatchInferenceJob>;
  outputOf(name: string): { ids: string[]; lines: OutputLine[] };
  manifestOf(name: string): Manifest;
  stop(): Promise<void>;
}

export async function startBatchE2e(o: {
  ns: string;
  nodes?: number;
  engines?: Partial<EnginePodsOptions>;
  controllers?: Partial<ControllerOptions>;
}): Promise<BatchE2e> {
  const { model } = ensureTinyModel();
  const logs: string[] = [];
  const root = mkdtempSync(join(tmpdir(), 'sits-batch-e2e-'));
  mkdirSync(join(root, 'data', 'in'), { recursive: true });
  const ns = o.ns;
  // The controller sees claims as <claims>/<namespace>/<claim> (issue 36); the claim `data` of `ns` is root/data.
  const claimsDir = join(root, 'claims');
  mkdirSync(join(claimsDir, ns), { recursive: true });
  symlinkSync(join(root, 'data'), join(claimsDir, ns, 'data'));
  const cluster = await startDevCluster({
    nodes: o.nodes ?? 1,
    shape: 'dgx-h100',
    log: (m) => logs.push(m),
    engines: { paths: { [MODEL_DIR]: model, '/mnt/batch': root }, probeEveryMs: 200, log: (l) => logs.push(l), ...o.engines },
    controllers: false,
  }).catch((e: unknown) => {
    rmSync(root, { recursive: true, force: true });
    throw e;
  });
  try {
    await setUpClaim(cluster, root, ns);
  } catch (e) {
    await cluster.kubelet.stopAndWait();
    await cluster.stop();
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
  const jobsPath = `/apis/ai.sits2026.dev/v1/namespaces/${ns}/batchinferencejobs`;
  const job = (name: string): Promise<BatchInferenceJob> => cluster.client.get<BatchInferenceJob>(`${jobsPath}/${name}`);
  const e: BatchE2e = {
    cluster,
    root,
    claimsDir,
    ns,
    jobsPath,
    logs,
    controllers: undefined,
    async startControllers(extra = {}) {
      // The routing's fragmentation from the dev cluster's scheduler, as `sits run` wires it (ADR 0165).
      const fragmentation = cluster.app === undefined ? {} : { fragmentation: schedulerFragmentation(cluster.app.scheduler) };
      e.controllers = await startControllers(cluster.client, {
        log: (m) => logs.push(`controller: ${m}`),
        batch: { volumes: claimsUnder(claimsDir), tickMs: 500, ...fragmentation },
        ...o.controllers,
        ...extra,
      });
      return e.controllers;
    },
    writeInput(file, n, prefix) {
      const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
      const lines = ids.map((id, i) =>
        JSON.stringify({
          custom_id: id,
          method: 'POST',
          url: '/v1/chat/completions',
          body: { messages: [{ role: 'user', content: `count ${i}` }], max_tokens: 2 },
        }),
      );
      writeFileSync(join(root, 'data', 'in', file), `${lines.join('\n')}\n`);
      return ids;
    },
    createJob(name, input, workers, spec = {}) {
      return cluster.client.post(jobsPath, {
        apiVersion: 'ai.sits2026.dev/v1',
        kind: 'BatchInferenceJob',
        metadata: { name },
        spec: {
          runtime: 'llamacpp',
          model: { uri: 'pvc://models/tiny.gguf' },
          input: { uri: `pvc://data/in/${input}` },
          output: { uri: `pvc://data/out/${name}` },
          workers,
          gpusPerWorker: 1,
          container: { args: ['--parallel', '2'] },
          ...spec,
        },
      });
    },
    job,
    async workerPods(name) {
      return (await listPods(cluster.client, ns)).filter((p) => p.metadata?.labels?.[LABEL.batchInferenceJob] === name);
    },
    finished(name, timeoutMs) {
      return waitFor(
        `${name} finished`,
        async () => {
          const j = await job(name);
          return j.status?.phase === 'Succeeded' || j.status?.phase === 'Failed' ? j : undefined;
        },
        timeoutMs,
        500,
      ).catch(async (err: unknown) => {
        throw new Error(
          `${(err as Error).message}\n${JSON.stringify((await job(name)).status)}\n${logs
            .filter((l) => !/^\[(kube-|etcd)/.test(l))
            .slice(-60)
            .join('\n')}`,
        );
      });
    },
    outputOf(name) {
      const text = readFileSync(join(root, 'data', 'out', name, 'output.jsonl'), 'utf8');
      const lines = text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as OutputLine);
      return { ids: lines.map((l) => l.custom_id), lines };
    },
    manifestOf(name) {
      return JSON.parse(readFileSync(join(root, 'data', 'out', name, 'manifest.json'), 'utf8')) as Manifest;
    },
    async stop() {
      if (process.env.SITS_BATCH_E2E_LOG !== undefined) writeFileSync(process.env.SITS_BATCH_E2E_LOG, logs.join('\n'));
      await e.controllers?.stop();
      await cluster.kubelet.stopAndWait();
      await cluster.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
  return e;
}

/** The PV binder and the claim `data` the jobs read and write: a static RWX volume over `root`/data. */
async function setUpClaim(cluster: DevCluster, root: string, ns: string): Promise<void> {
  await cluster.plane.startControllerManager({ controllers: ['persistentvolume-binder-controller'] });
  await createNs(cluster.client, ns);
  await cluster.client.post('/api/v1/persistentvolumes', {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: `batch-data-${ns}` },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteMany'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: '',
      hostPath: { path: join(root, 'data') },
      claimRef: { namespace: ns, name: 'data' },
    },
  });
  await cluster.client.post(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'data' },
    spec: { accessModes: ['ReadWriteMany'], storageClassName: '', volumeName: `batch-data-${ns}`, resources: { requests: { storage: '1Gi' } } },
  });
  await waitFor(
    'the claim bound',
    async () =>
      (await cluster.client.get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/data`)).status?.phase === 'Bound'
        ? true
        : undefined,
    60_000,
    200,
  );
}
