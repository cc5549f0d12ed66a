// Issue 17 items 4–5 on a real control plane: the dev cluster (apiserver, SITS scheduler, fake kubelet),
// kube-controller-manager's garbage collector, and the DataPipeline controller through startControllers with the
// cluster's nodes. The controller's clock is the wall clock plus an offset the test moves, so an hourly schedule
// comes due at once (the runner reads time only through the clock; pods and the apiserver run in real time).
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { startControllers, type Controllers } from '../app/controllers.ts';
import { EXIT_CODE_ANNOTATION, TERMINATION_MESSAGE_ANNOTATION } from '../harness/fake-kubelet.ts';
import { createNs, listPods, waitFor } from '../harness/e2e-kit.ts';
import type { DataPipelineObject } from './data-pipeline/model.ts';
import { rerunName } from './data-pipeline/runs.ts';
import { scheduledRunName } from './data-pipeline/schedule.ts';

const API = '/apis/ai.sits2026.dev/v1';
const pipelines = (ns: string): string => `${API}/namespaces/${ns}/datapipelines`;

let cluster: DevCluster;
let client: DevCluster['client'];
let controllers: Controllers;
let offsetMs = 0;
const logs: string[] = [];

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 2, shape: 'a800x4', log: (m) => logs.push(m), controllers: false });
  client = cluster.client;
  await cluster.plane.startControllerManager({ controllers: ['garbage-collector-controller'] });
  controllers = await startControllers(client, { log: (m) => logs.push(`controller: ${m}`), clock: { nowMs: () => Date.now() + offsetMs } });
}, 300_000);

afterAll(async () => {
  await controllers?.stop();
  await cluster?.stop();
});

const getPipeline = (ns: string, name: string): Promise<DataPipelineObject> => client.get<DataPipelineObject>(`${pipelines(ns)}/${name}`);
const stageOf = (p: DataPipelineObject, stage: string) => p.status?.stages?.find((s) => s.name === stage);
const podsOf = async (ns: string, pipeline: string): Promise<V1Pod[]> =>
  (await listPods(client, ns)).filter((p) => p.metadata?.labels?.['ai.sits2026.dev/data-pipeline'] === pipeline);
const dump = async (ns: string, name: string): Promise<string> =>
  `${JSON.stringify((await getPipeline(ns, name).catch(() => undefined))?.status, null, 1)}\n${logs
    .filter((l) => l.startsWith('controller'))
    .slice(-30)
    .join('\n')}`;
const or =
  <T>(ns: string, name: string) =>
  async (e: unknown): Promise<T> => {
    throw new Error(`${String(e)}\n${await dump(ns, name)}`);
  };

function podStage(name: string, message: string | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    podTemplate: {
      metadata: { annotations: { [EXIT_CODE_ANNOTATION]: '0', ...(message === undefined ? {} : { [TERMINATION_MESSAGE_ANNOTATION]: message }) } },
      spec: { containers: [{ name: 'main', image: 'registry.sits2026.dev/tools/busybox:1.36', resources: { requests: { cpu: '100m', memory: '64Mi' } } }] },
    },
    ...extra,
  };
}

/** Moves the controller's clock just past the template's next schedule time and wakes the template. */
async function advanceToNextSchedule(ns: string, name: string): Promise<Date> {
  const t = await waitFor(
    `${name} has a next schedule time`,
    async () => {
      const p = await getPipeline(ns, name);
      return p.status?.nextScheduleTime === undefined ? undefined : p;
    },
    60_000,
  ).catch(or<DataPipelineObject>(ns, name));
  const next = new Date(t.status?.nextScheduleTime ?? '');
  offsetMs = next.getTime() + 1000 - Date.now();
  // Any change enqueues the template; the annotation is the test's only way in besides the requeue timer.
  await client.mergePatch(`${pipelines(ns)}/${name}`, { metadata: { annotations: { 'e2e.sits2026.dev/tick': String(next.getTime()) } } });
  return next;
}

async function runSucceeded(ns: string, run: string): Promise<DataPipelineObject> {
  return waitFor(
    `run ${run} Succeeded`,
    async () => {
      const p = await getPipeline(ns, run).catch(() => undefined);
      return p?.status?.phase === 'Succeeded' ? p : undefined;
    },
    120_000,
  ).catch(or<DataPipelineObject>(ns, run));
}

describe('DataPipeline schedules, re-runs, step caching and resource profiles on a real apiserver', () => {
  it('creates runs on the schedule, reuses a cached stage without its pod, applies the auto profile, prunes history', async () => {
    const ns = 'dp-sched';
    await createNs(client, ns);
    await client.post(pipelines(ns), {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'DataPipeline',
      metadata: { name: 'nightly' },
      spec: {
        schedule: { cron: '0 * * * *', successfulRunsHistoryLimit: 2 },
        stages: [
          podStage('prep', '{"rows":"1000"}', { outputs: { parameters: [{ name: 'rows' }] } }),
          podStage('train', undefined, { dependsOn: ['prep'], device: 'gpu', resourceProfile: 'auto', model: { params: 1e9 }, cache: false }),
        ],
      },
    });

    // Run 1: every stage runs; the auto profile chose the GPU model and says why.
    const at1 = await advanceToNextSchedule(ns, 'nightly');
    const run1 = scheduledRunName('nightly', at1);
    const r1 = await runSucceeded(ns, run1);
    expect(r1.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'DataPipeline', name: 'nightly', controller: true });
    const train1 = stageOf(r1, 'train');
    expect(train1?.reasons?.[0]).toMatch(/^auto chose batch-throughput for a container step/);
    const trainPod = (await podsOf(ns, run1)).find((p) => p.metadata?.name === `${run1}-train-0`);
    const chosen = trainPod?.metadata?.annotations?.['ai.sits2026.dev/gpu-models'];
    expect(chosen).toMatch(/A800/);
    expect(train1?.reasons?.[0]).toContain(chosen?.split(',')[0]);
    expect(trainPod?.spec?.nodeName).toBeDefined();
    expect(stageOf(r1, 'prep')?.cachedFrom).toBeUndefined();
    expect((await podsOf(ns, run1)).map((p) => p.metadata?.name).sort()).toEqual([`${run1}-prep-0`, `${run1}-train-0`]);
    await waitFor(
      'template records run 1 and its step cache',
      async () => {
        const t = await getPipeline(ns, 'nightly');
        return (t.status?.stepCache ?? []).some((e) => e.run === run1 && e.stage === 'prep') ? t : undefined;
      },
      60_000,
    ).catch(or(ns, 'nightly'));

    // Run 2: prep is reused from run 1 (no pod), train (cache: false) runs again.
    const at2 = await advanceToNextSchedule(ns, 'nightly');
    const run2 = scheduledRunName('nightly', at2);
    const r2 = await runSucceeded(ns, run2);
    const prep2 = stageOf(r2, 'prep');
    expect(prep2).toMatchObject({ phase: 'Succeeded', cachedFrom: run1, outputs: { parameters: { rows: '1000' } } });
    expect(prep2?.message).toMatch(new RegExp(`^cached from run ${run1}`));
    expect(prep2?.cacheKey).toBe(stageOf(r1, 'prep')?.cacheKey);
    expect((await podsOf(ns, run2)).map((p) => p.metadata?.name)).toEqual([`${run2}-train-0`]);

    // A manual re-run: a new run object from the template, also reusing prep.
    await client.mergePatch(`${pipelines(ns)}/nightly`, { metadata: { annotations: { 'ai.sits2026.dev/rerun': 'by-hand-1' } } });
    const rerun = rerunName('nightly', 'by-hand-1');
    const r3 = await runSucceeded(ns, rerun);
    expect(stageOf(r3, 'prep')?.cachedFrom).toBe(run1);

    // History: 3 successful runs, the limit is 2 → the oldest (run 1) is deleted, with its pods (ownerReferences).
    const t = await waitFor(
      'history pruned to 2',
      async () => {
        const p = await getPipeline(ns, 'nightly');
        const gone = await getPipeline(ns, run1).then(
          () => false,
          () => true,
        );
        return gone && (p.status?.runs ?? []).length === 2 ? p : undefined;
      },
      90_000,
    ).catch(or<DataPipelineObject>(ns, 'nightly'));
    expect((t.status?.runs ?? []).map((r) => r.name).sort()).toEqual([run2, rerun].sort());
    expect(t.status?.lastRerunToken).toBe('by-hand-1');
    await waitFor('run 1 pods collected', async () => ((await podsOf(ns, run1)).length === 0 ? true : undefined), 90_000);
    // The parameter-only cache entry outlives its run.
    expect((t.status?.stepCache ?? []).some((e) => e.run === run1 && e.stage === 'prep')).toBe(true);
  });

  it("a TrainingJob stage with resourceProfile auto gets the training rule's GPU model, count, replicas and topology", async () => {
    const ns = 'dp-tj';
    await createNs(client, ns);
    await client.post(pipelines(ns), {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'DataPipeline',
      metadata: { name: 'ftp' },
      spec: {
        stages: [
          {
            name: 'ft',
            resourceProfile: 'auto',
            model: { params: 7e9, trainingMethod: 'full' },
            workload: {
              kind: 'TrainingJob',
              spec: {
                replicas: 1,
                container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
                podTemplate: {
                  metadata: { annotations: { [EXIT_CODE_ANNOTATION]: '0' } },
                  spec: { containers: [{ name: 'trainer', image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1' }] },
                },
              },
            },
          },
        ],
      },
    });
    const tj = await waitFor(
      'TrainingJob ftp-ft created',
      () => client.get<{ spec: Record<string, unknown> }>(`${API}/namespaces/${ns}/trainingjobs/ftp-ft`).catch(() => undefined),
      60_000,
    ).catch(or<{ spec: Record<string, unknown> }>(ns, 'ftp'));
    const p = await waitFor(
      'stage ft has reasons',
      async () => {
        const x = await getPipeline(ns, 'ftp');
        return (stageOf(x, 'ft')?.reasons ?? []).length > 0 ? x : undefined;
      },
      60_000,
    ).catch(or<DataPipelineObject>(ns, 'ftp'));
    const reasons = stageOf(p, 'ft')?.reasons ?? [];
    expect(reasons[0]).toMatch(/^auto chose training for a training step \(7B params\)/);
    const gpu = tj.spec.gpu as { allowedModels?: string[]; minMemoryGiB?: number };
    expect(gpu.allowedModels?.[0]).toMatch(/A800/);
    expect(reasons[0]).toContain(gpu.allowedModels?.[0]);
    // 7B full training (16 bytes a parameter, ~104 GiB) does not fit one 80 GB A800: more than one GPU a replica.
    expect(tj.spec.gpusPerReplica).toBeGreaterThan(1);
    expect(gpu.minMemoryGiB).toBeGreaterThan(0);
    expect(tj.spec.replicas).toBeGreaterThanOrEqual(1);
    // The a800x4 nodes have 4-GPU NVLink islands, which hold it: one replica in one island, required.
    expect(reasons[0]).toContain('in one NVLink island');
    expect(tj.spec.topology).toMatchObject({ requiredLevel: 'nvlink-domain' });
  });

  it('the apiserver refuses a scheduled pipeline whose name leaves no room for run names', async () => {
    const ns = 'dp-long';
    await createNs(client, ns);
    const body = {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'DataPipeline',
      metadata: { name: 'a'.repeat(28) },
      spec: { schedule: { cron: '@daily' }, stages: [podStage('prep', undefined)] },
    };
    const e = await client.post(pipelines(ns), body).then(
      () => undefined,
      (x: unknown) => x as Error & { status?: number },
    );
    expect(e?.status).toBe(422);
    expect(e?.message).toContain('metadata.name must be at most 27 characters with spec.schedule');
    // Without a schedule the same name is fine (pipelines may have 36).
    await client.post(pipelines(ns), { ...body, spec: { stages: body.spec.stages } });
  });

  it('fails a stage whose resource profile cannot be resolved, naming the field', async () => {
    const ns = 'dp-prof';
    await createNs(client, ns);
    await client.post(pipelines(ns), {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'DataPipeline',
      metadata: { name: 'noprof' },
      spec: { stages: [podStage('serve', undefined, { device: 'gpu', resourceProfile: 'low-latency' })] },
    });
    const p = await waitFor(
      'noprof Failed',
      async () => {
        const x = await getPipeline(ns, 'noprof');
        return x.status?.phase === 'Failed' ? x : undefined;
      },
      60_000,
    ).catch(or<DataPipelineObject>(ns, 'noprof'));
    expect(stageOf(p, 'serve')?.message).toMatch(/^spec\.stages\[0\]\.model\.params: /);
    expect(await podsOf(ns, 'noprof')).toEqual([]);
  });
});
