// Issue 17 items 1–2 on a real control plane: the dev cluster (apiserver, SITS scheduler, fake kubelet), the
// DataPipeline controller through startControllers, the real snapshot-controller, csi-snapshotter and
// csi-provisioner over the stand-in CSI driver, and kube-controller-manager's garbage collector (ownerReferences),
// PV binder and PVC protection. Container stages are podTemplate pods the fake kubelet ends with the exit code and
// termination message their annotations name.

import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { startControllers, type Controllers } from '../app/controllers.ts';
import { EXIT_CODE_ANNOTATION, TERMINATION_MESSAGE_ANNOTATION } from '../harness/fake-kubelet.ts';
import { createNs, listEvents, listPods, waitFor, getTable as getTableAt, type KubeTable } from '../harness/e2e-kit.ts';
import {
  createStaticVolume,
  ensureCsiProvisioner,
  ensureSnapshotComponents,
  SNAPSHOT_API,
  startSnapshotStack,
  storageClass,
  volumeSnapshotClass,
  type SnapshotStack,
  type VolumeSnapshotObject,
} from '../harness/snapshot-stack.ts';
import type { DataPipelineObject } from './data-pipeline/model.ts';

const API = '/apis/ai.sits2026.dev/v1';
const pipelines = (ns: string): string => `${API}/namespaces/${ns}/datapipelines`;

let cluster: DevCluster;
let client: DevCluster['client'];
let stack: SnapshotStack;
let controllers: Controllers;
const logs: string[] = [];

beforeAll(async () => {
  await Promise.all([ensureSnapshotComponents(), ensureCsiProvisioner()]);
  cluster = await startDevCluster({ nodes: 2, shape: 'a800x4', log: (m) => logs.push(m), controllers: false });
  client = cluster.client;
  await cluster.plane.startControllerManager({
    controllers: ['garbage-collector-controller', 'persistentvolume-binder-controller', 'persistentvolumeclaim-protection-controller'],
  });
  stack = await startSnapshotStack(cluster.plane, { client, withProvisioner: true });
  await client.post(`${SNAPSHOT_API}/volumesnapshotclasses`, volumeSnapshotClass('stand-in', stack.driver.name, 'Delete'));
  await client.post('/apis/storage.k8s.io/v1/storageclasses', storageClass('stand-in', stack.driver.name));
  controllers = await startControllers(client, { log: (m) => logs.push(`controller: ${m}`) });
}, 300_000);

afterAll(async () => {
  await controllers?.stop();
  await stack?.stop();
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

/** A stage the fake kubelet ends with `exitCode`, its termination message `message`. */
function podStage(name: string, exitCode: number, extra: Record<string, unknown> = {}, message?: string, args: string[] = []): Record<string, unknown> {
  return {
    name,
    podTemplate: {
      metadata: { annotations: { [EXIT_CODE_ANNOTATION]: String(exitCode), ...(message === undefined ? {} : { [TERMINATION_MESSAGE_ANNOTATION]: message }) } },
      spec: {
        containers: [{ name: 'main', image: 'registry.sits2026.dev/tools/busybox:1.36', args, resources: { requests: { cpu: '100m', memory: '64Mi' } } }],
      },
    },
    ...extra,
  };
}

const pipeline = (name: string, spec: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'DataPipeline',
  metadata: { name },
  spec,
});

const getTable = (path: string): Promise<KubeTable> => getTableAt(cluster.plane, path);

async function rejection(ns: string, body: Record<string, unknown>): Promise<{ code: number; message: string }> {
  try {
    await client.post(pipelines(ns), body);
  } catch (e) {
    // KubeApiError (kube/ is off limits to controller tests): status and message are all we read.
    if (e instanceof Error && 'status' in e && typeof e.status === 'number') return { code: e.status, message: e.message };
    throw e;
  }
  throw new Error('the apiserver accepted it');
}

describe('DataPipeline controller on a real apiserver', () => {
  it('runs a 3-stage DAG in order, passing parameters from termination messages into later stages', async () => {
    const ns = 'dp-dag';
    await createNs(client, ns);
    await client.post(
      pipelines(ns),
      pipeline('ft', {
        stages: [
          podStage('train', 0, { outputs: { parameters: [{ name: 'adapter' }] } }, '{"adapter":"adapters/run-42"}'),
          podStage('export', 0, { dependsOn: ['train'] }, '{"exported":"{{steps.train.outputs.parameters.adapter}}.gguf"}', [
            '--in={{steps.train.outputs.parameters.adapter}}',
          ]),
          podStage('serve', 0, { dependsOn: ['export'] }, undefined, ['--lora={{steps.export.outputs.parameters.exported}}', '--from={{pipeline.name}}']),
        ],
      }),
    );
    const done = await waitFor(
      'pipeline ft Succeeded',
      async () => {
        const p = await getPipeline(ns, 'ft');
        return p.status?.phase === 'Succeeded' ? p : undefined;
      },
      120_000,
    ).catch(async (e: unknown) => {
      throw new Error(`${String(e)}\n${await dump(ns, 'ft')}`);
    });
    expect(done.status).toMatchObject({ completedStages: 3, totalStages: 3, message: '3 of 3 stages succeeded' });
    expect(stageOf(done, 'train')?.outputs?.parameters).toEqual({ adapter: 'adapters/run-42' });
    expect(stageOf(done, 'export')?.outputs?.parameters).toEqual({ exported: 'adapters/run-42.gguf' });
    // In order: each stage started no earlier than its dependency finished.
    const t = (s: string, k: 'startTime' | 'completionTime'): number => Date.parse(stageOf(done, s)?.[k] ?? '');
    expect(t('export', 'startTime')).toBeGreaterThanOrEqual(t('train', 'completionTime'));
    expect(t('serve', 'startTime')).toBeGreaterThanOrEqual(t('export', 'completionTime'));
    const pods = await podsOf(ns, 'ft');
    expect(pods.map((p) => p.metadata?.name).sort()).toEqual(['ft-export-0', 'ft-serve-0', 'ft-train-0']);
    const serve = pods.find((p) => p.metadata?.name === 'ft-serve-0');
    expect(serve?.spec?.containers[0]?.args).toEqual(['--lora=adapters/run-42.gguf', '--from=ft']);
    expect(serve?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'DataPipeline', name: 'ft', uid: done.metadata.uid, controller: true });
    const table = await getTable(pipelines(ns));
    const cols = table.columnDefinitions.map((c) => c.name);
    expect(table.rows[0]?.cells.slice(0, 4)).toEqual(['ft', 'Succeeded', 3, 3]);
    expect(cols.slice(0, 4)).toEqual(['Name', 'Phase', 'Completed', 'Stages']);
  });

  it('retries a failing stage with backoff, then fails the run with the reason; its dependants never start', async () => {
    const ns = 'dp-retry';
    await createNs(client, ns);
    await client.post(
      pipelines(ns),
      pipeline('flaky', {
        stages: [
          podStage('train', 7, { retryStrategy: { limit: 2, retryPolicy: 'OnFailure', backoff: { duration: '1s', factor: 2 } } }),
          podStage('serve', 0, { dependsOn: ['train'] }),
        ],
      }),
    );
    // Watch the stage's pods come and go: three attempts, never a serve pod.
    const seen = new Set<string>();
    let servePods = 0;
    const failed = await waitFor(
      'pipeline flaky Failed',
      async () => {
        for (const p of await podsOf(ns, 'flaky')) {
          seen.add(p.metadata?.uid ?? '');
          if (p.metadata?.labels?.['ai.sits2026.dev/pipeline-stage'] === 'serve') servePods++;
        }
        const p = await getPipeline(ns, 'flaky');
        return p.status?.phase === 'Failed' ? p : undefined;
      },
      120_000,
      200,
    ).catch(async (e: unknown) => {
      throw new Error(`${String(e)}\n${await dump(ns, 'flaky')}`);
    });
    const train = stageOf(failed, 'train');
    expect(train).toMatchObject({ phase: 'Failed', retries: 2, message: 'pod flaky-train-0: exit code 7 (Error); retry limit 2 reached after 2 retries' });
    // Backoff 1 s then 2 s: the stage's timestamps (whole seconds) are at least 2 s apart.
    expect(Date.parse(train?.completionTime ?? '') - Date.parse(train?.startTime ?? '')).toBeGreaterThanOrEqual(2000);
    expect(stageOf(failed, 'serve')).toMatchObject({ phase: 'Skipped', message: 'not run: dependency train failed' });
    expect(failed.status?.message).toBe('stage train failed: pod flaky-train-0: exit code 7 (Error); retry limit 2 reached after 2 retries');
    expect(servePods).toBe(0);
    expect(seen.size).toBeGreaterThanOrEqual(2);
    // Events follow the status write: wait for them.
    await waitFor(
      'StageRetry ×2 and PipelineFailed events',
      async () => {
        const events = await listEvents(client, ns);
        return events.filter((e) => e.reason === 'StageRetry').length >= 2 && events.some((e) => e.reason === 'PipelineFailed');
      },
      30_000,
    );
  });

  it('rejects a cycle, a self-reference, an unknown dependsOn and duplicate stage names at the apiserver, naming the field', async () => {
    const ns = 'dp-invalid';
    await createNs(client, ns);
    const cycle = await rejection(ns, pipeline('cyc', { stages: [podStage('a', 0, { dependsOn: ['b'] }), podStage('b', 0, { dependsOn: ['a'] })] }));
    expect(cycle.code).toBe(422);
    expect(cycle.message).toContain('spec.stages: Invalid value');
    expect(cycle.message).toContain(
      'spec.stages: Invalid value: dependsOn must name a stage listed earlier in stages: a later stage or the stage itself would make a cycle',
    );
    const self = await rejection(ns, pipeline('self', { stages: [podStage('a', 0, { dependsOn: ['a'] })] }));
    expect(self.message).toContain('spec.stages: Invalid value: dependsOn must name a stage listed earlier in stages');
    const unknown = await rejection(ns, pipeline('unk', { stages: [podStage('a', 0), podStage('b', 0, { dependsOn: ['a', 'nope'] })] }));
    expect(unknown.code).toBe(422);
    expect(unknown.message).toContain('spec.stages: Invalid value: dependsOn names a stage that does not exist in stages');
    expect(unknown.message).not.toContain('listed earlier');
    const dup = await rejection(ns, pipeline('dup', { stages: [podStage('a', 0), podStage('a', 0)] }));
    expect(dup.message).toContain('spec.stages[1]: Duplicate value');
  });

  it('fine-tune → export → serve: a TrainingJob stage, a container stage reporting the adapter, an InferenceService stage serving it', async () => {
    const ns = 'dp-serve';
    await createNs(client, ns);
    await client.post(
      pipelines(ns),
      pipeline('lora', {
        stages: [
          {
            name: 'finetune',
            workload: {
              kind: 'TrainingJob',
              spec: {
                replicas: 1,
                gpusPerReplica: 1,
                container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'lora.py', '--out=/work/{{pipeline.name}}'] },
                podTemplate: {
                  metadata: { annotations: { [EXIT_CODE_ANNOTATION]: '0' } },
                  spec: { containers: [{ name: 'trainer', image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1' }] },
                },
              },
            },
          },
          podStage(
            'export',
            0,
            { dependsOn: ['finetune'], outputs: { parameters: [{ name: 'adapter' }] } },
            '{"adapter":"pvc://lora-work/{{pipeline.name}}/lora.gguf"}',
          ),
          {
            name: 'serve',
            dependsOn: ['export'],
            workload: {
              kind: 'InferenceService',
              spec: {
                runtime: 'vllm',
                model: {
                  uri: 'hf://Qwen/Qwen2.5-7B-Instruct',
                  name: 'qwen',
                  adapters: [{ name: 'support-bot', uri: '{{steps.export.outputs.parameters.adapter}}' }],
                },
                replicas: 2,
                gpusPerReplica: 1,
                resources: { cpu: '4', memory: '16Gi' },
              },
            },
          },
        ],
      }),
    );
    const done = await waitFor(
      'pipeline lora Succeeded',
      async () => {
        const p = await getPipeline(ns, 'lora');
        return p.status?.phase === 'Succeeded' ? p : undefined;
      },
      180_000,
    ).catch(async (e: unknown) => {
      throw new Error(`${String(e)}\n${await dump(ns, 'lora')}`);
    });
    expect(stageOf(done, 'finetune')).toMatchObject({ phase: 'Succeeded' });
    expect(stageOf(done, 'serve')).toMatchObject({ phase: 'Succeeded', message: 'InferenceService lora-serve is Ready and keeps serving' });
    const tj = await client.get<{ metadata: { ownerReferences: { uid: string }[] }; status: { phase: string } }>(
      `${API}/namespaces/${ns}/trainingjobs/lora-finetune`,
    );
    expect(tj.status.phase).toBe('Succeeded');
    expect(tj.metadata.ownerReferences[0]?.uid).toBe(done.metadata.uid);
    const isvc = await client.get<{ spec: { model: { adapters: { name: string; uri: string }[] } }; status: { phase: string; readyReplicas: number } }>(
      `${API}/namespaces/${ns}/inferenceservices/lora-serve`,
    );
    expect(isvc.spec.model.adapters).toEqual([{ name: 'support-bot', uri: 'pvc://lora-work/lora/lora.gguf' }]);
    expect(isvc.status).toMatchObject({ phase: 'Ready', readyReplicas: 2 });
    // The service keeps serving after the pipeline is done; deleting the pipeline takes it (and the job) away.
    await client.delete(`${pipelines(ns)}/lora`);
    await waitFor(
      'lora children gone',
      async () => {
        const [svcs, jobs] = await Promise.all([
          client.get<{ items: unknown[] }>(`${API}/namespaces/${ns}/inferenceservices`),
          client.get<{ items: unknown[] }>(`${API}/namespaces/${ns}/trainingjobs`),
        ]);
        return svcs.items.length === 0 && jobs.items.length === 0;
      },
      120_000,
    );
  });

  it('hands an artifact over by volume snapshot; deleting the pipeline removes its pods, claims and snapshots (OnPipelineDeletion), OnPipelineCompletion keeps only keepLast', async () => {
    const ns = 'dp-artifacts';
    await createNs(client, ns);
    await createStaticVolume(stack, { namespace: ns, pvcName: 'work' });
    await waitFor(
      `claim ${ns}/work Bound`,
      async () => (await client.get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/work`)).status?.phase === 'Bound',
      120_000,
    );
    const stages = [
      podStage('train', 0, { outputs: { artifacts: [{ name: 'adapter', volumeSnapshot: { claimName: 'work', volumeSnapshotClassName: 'stand-in' } }] } }),
      podStage('export', 0, {
        dependsOn: ['train'],
        inputs: {
          artifacts: [
            { name: 'adapter', from: { stage: 'train', artifact: 'adapter' }, mountPath: '/in', storageClassName: 'stand-in', accessMode: 'ReadWriteMany' },
          ],
        },
        outputs: {
          artifacts: [{ name: 'gguf', volumeSnapshot: { claimName: '{{inputs.artifacts.adapter.claimName}}', volumeSnapshotClassName: 'stand-in' } }],
        },
      }),
    ];
    await client.post(pipelines(ns), pipeline('keep', { stages }));
    await client.post(pipelines(ns), pipeline('gc', { stages, artifactGC: { strategy: 'OnPipelineCompletion', keepLast: 1 } }));
    const snaps = async (p: string): Promise<VolumeSnapshotObject[]> =>
      (
        await client.get<{ items: VolumeSnapshotObject[] }>(
          `${SNAPSHOT_API}/namespaces/${ns}/volumesnapshots?labelSelector=${encodeURIComponent(`ai.sits2026.dev/data-pipeline=${p}`)}`,
        )
      ).items;
    const claims = async (p: string): Promise<{ metadata: { name: string }; spec: { dataSource?: { name: string } } }[]> =>
      (
        await client.get<{ items: { metadata: { name: string }; spec: { dataSource?: { name: string } } }[] }>(
          `/api/v1/namespaces/${ns}/persistentvolumeclaims?labelSelector=${encodeURIComponent(`ai.sits2026.dev/data-pipeline=${p}`)}`,
        )
      ).items;
    for (const name of ['keep', 'gc']) {
      await waitFor(`pipeline ${name} Succeeded`, async () => (await getPipeline(ns, name)).status?.phase === 'Succeeded', 180_000).catch(
        async (e: unknown) => {
          throw new Error(`${String(e)}\n${await dump(ns, name)}`);
        },
      );
    }
    const keep = await getPipeline(ns, 'keep');
    expect(stageOf(keep, 'train')?.outputs?.artifacts).toEqual([{ name: 'adapter', volumeSnapshotName: 'keep-train-adapter', readyToUse: true }]);
    // The export stage mounted a claim restored from the train stage's snapshot (no copy by SITS).
    expect((await claims('keep')).map((c) => [c.metadata.name, c.spec.dataSource?.name])).toEqual([['keep-export-in-adapter', 'keep-train-adapter']]);
    const exportPod = (await podsOf(ns, 'keep')).find((p) => p.metadata?.name === 'keep-export-0');
    expect(exportPod?.spec?.volumes?.find((v) => v.name === 'in-adapter')?.persistentVolumeClaim?.claimName).toBe('keep-export-in-adapter');
    expect((await snaps('keep')).map((s) => s.metadata.name).sort()).toEqual(['keep-export-gguf', 'keep-train-adapter']);
    // OnPipelineCompletion with keepLast 1: only the last artifact is left once the pipeline is done.
    await waitFor(
      'gc pipeline keeps only its last snapshot',
      async () => (await snaps('gc')).map((s) => s.metadata.name).join(',') === 'gc-export-gguf',
      60_000,
    );
    const gc = await getPipeline(ns, 'gc');
    expect(stageOf(gc, 'train')?.outputs?.artifacts?.[0]).toMatchObject({ volumeSnapshotName: 'gc-train-adapter', deleted: true });
    // OnPipelineDeletion: the garbage collector removes everything the pipeline owns.
    await client.delete(`${pipelines(ns)}/keep`);
    await waitFor(
      'keep pipeline children gone',
      async () => (await podsOf(ns, 'keep')).length === 0 && (await snaps('keep')).length === 0 && (await claims('keep')).length === 0,
      120_000,
    );
    expect((await podsOf(ns, 'gc')).length).toBe(2);
  });

  it("mounts input artifacts into workload stages: the TrainingJob's trainer and the InferenceService's server container get a claim restored from the snapshot", async () => {
    const ns = 'dp-wl-inputs';
    await createNs(client, ns);
    await createStaticVolume(stack, { namespace: ns, pvcName: 'work' });
    await waitFor(
      `claim ${ns}/work Bound`,
      async () => (await client.get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/work`)).status?.phase === 'Bound',
      120_000,
    );
    const input = (mountPath: string) => ({
      artifacts: [{ name: 'base', from: { stage: 'prep', artifact: 'base' }, mountPath, storageClassName: 'stand-in', accessMode: 'ReadWriteMany' }],
    });
    await client.post(
      pipelines(ns),
      pipeline('wl', {
        stages: [
          podStage('prep', 0, { outputs: { artifacts: [{ name: 'base', volumeSnapshot: { claimName: 'work', volumeSnapshotClassName: 'stand-in' } }] } }),
          {
            name: 'ft',
            dependsOn: ['prep'],
            inputs: input('/base'),
            workload: {
              kind: 'TrainingJob',
              spec: {
                replicas: 1,
                gpusPerReplica: 1,
                container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'lora.py', '--base=/base'] },
              },
            },
          },
          {
            name: 'serve',
            dependsOn: ['prep'],
            inputs: input('/models'),
            workload: {
              kind: 'InferenceService',
              spec: {
                runtime: 'vllm',
                model: { uri: 'pvc://wl-serve-in-base/model', name: 'base' },
                replicas: 1,
                gpusPerReplica: 1,
                resources: { cpu: '4', memory: '16Gi' },
              },
            },
          },
        ],
      }),
    );
    const podOf = async (label: string, name: string): Promise<V1Pod> =>
      waitFor(
        `pod of ${name}`,
        async () =>
          (await listPods(client, ns)).find((p) => p.metadata?.labels?.[label] === name && p.spec?.volumes?.some((v) => v.name === 'in-base') === true),
        180_000,
      ).catch(async (e: unknown) => {
        throw new Error(`${String(e)}\n${await dump(ns, 'wl')}`);
      });
    const [trainer, server] = await Promise.all([podOf('ai.sits2026.dev/training-job', 'wl-ft'), podOf('ai.sits2026.dev/inference-service', 'wl-serve')]);
    for (const [pod, claim, container, mountPath] of [
      [trainer, 'wl-ft-in-base', 'trainer', '/base'],
      [server, 'wl-serve-in-base', 'server', '/models'],
    ] as const) {
      expect(pod.spec?.volumes?.find((v) => v.name === 'in-base')?.persistentVolumeClaim?.claimName).toBe(claim);
      expect(pod.spec?.containers.find((c) => c.name === container)?.volumeMounts?.find((m) => m.name === 'in-base')?.mountPath).toBe(mountPath);
      expect(
        (await client.get<{ spec: { dataSource?: { name: string } } }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/${claim}`)).spec.dataSource?.name,
      ).toBe('wl-prep-base');
    }
    // The TrainingJob was given as container: it became the equivalent podTemplate (the trainer keeps its command).
    expect(trainer.spec?.containers.find((c) => c.name === 'trainer')?.command).toEqual(['torchrun', 'lora.py', '--base=/base']);
  });
});
