// Adapter stages (issue 17 item 3, ADR 0137) against a real apiserver: the DataPipeline controller alone (no
// InferenceService controller, no engines), so the test plays the serving loop by writing the service's
// replicaStatuses through its status subresource. What is checked is the apiserver's part: server-side apply under
// the pipeline's field manager next to the user's own fields, a conflict refused without force, the finalizer, and
// on deletion only the pipeline's entry removed. The real hot swap on real engines: data-pipeline-serve.e2e.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startDevCluster, type DevCluster } from './dev-cluster.ts';
import { runController, type RunningController } from '../kube/controllers/controller-runner.ts';
import { createNs, waitFor } from '../harness/e2e-kit.ts';
import { EXIT_CODE_ANNOTATION, TERMINATION_MESSAGE_ANNOTATION } from '../harness/fake-kubelet.ts';
import { dataPipelineController } from '../controllers/data-pipeline/controller.ts';
import type { DataPipelineObject, TargetService } from '../controllers/data-pipeline/model.ts';

const API = '/apis/ai.sits2026.dev/v1';
const pipelines = (ns: string): string => `${API}/namespaces/${ns}/datapipelines`;
const services = (ns: string): string => `${API}/namespaces/${ns}/inferenceservices`;

let cluster: DevCluster;
let client: DevCluster['client'];
let controller: RunningController;
const logs: string[] = [];

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 1, shape: 'a800x4', log: (m) => logs.push(m), controllers: false });
  client = cluster.client;
  controller = await runController(client, dataPipelineController(), { log: (m) => logs.push(`controller: ${m}`) });
}, 300_000);

afterAll(async () => {
  await controller?.stop();
  await cluster?.stop();
});

type Svc = TargetService & { readonly metadata: { readonly managedFields?: readonly { manager?: string }[]; readonly uid?: string } };
const getSvc = (ns: string, name: string): Promise<Svc> => client.get<Svc>(`${services(ns)}/${name}`);
const getPipeline = (ns: string, name: string): Promise<DataPipelineObject> => client.get<DataPipelineObject>(`${pipelines(ns)}/${name}`);
const stageOf = (p: DataPipelineObject, stage: string) => p.status?.stages?.find((s) => s.name === stage);
const dump = async (ns: string, name: string): Promise<string> =>
  `${JSON.stringify((await getPipeline(ns, name).catch(() => undefined))?.status, null, 1)}\n${logs
    .filter((l) => l.startsWith('controller'))
    .slice(-20)
    .join('\n')}`;

/** The user's service, created with the user's own field manager and one adapter of the user's. */
async function userService(ns: string, name: string): Promise<void> {
  await client.request('POST', services(ns), {
    query: { fieldManager: 'the-user' },
    body: {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'InferenceService',
      metadata: { name },
      spec: { runtime: 'vllm', replicas: 2, model: { uri: 'pvc://models/base', adapters: [{ name: 'users-own', uri: 'pvc://models/users-own' }] } },
    },
  });
}

/** What the serving loop would write: the replicas and each one's adapter states. */
async function replicaStatus(ns: string, name: string, states: Record<string, Record<string, string>>): Promise<void> {
  const replicaStatuses = Object.entries(states).map(([pod, adapters]) => ({
    name: pod,
    ready: true,
    updated: true,
    adapters: Object.entries(adapters).map(([a, state]) => ({
      name: a,
      state,
      ...(state === 'Failed' ? { message: 'adapter_config.json: no such file' } : {}),
    })),
  }));
  await client.mergePatch(`${services(ns)}/${name}/status`, { status: { replicaStatuses } });
}

const exportStage = {
  name: 'export',
  podTemplate: {
    metadata: { annotations: { [EXIT_CODE_ANNOTATION]: '0', [TERMINATION_MESSAGE_ANNOTATION]: '{"uri":"pvc://adapters/support-v2"}' } },
    spec: { containers: [{ name: 'main', image: 'registry.sits2026.dev/tools/busybox:1.36', resources: { requests: { cpu: '100m', memory: '64Mi' } } }] },
  },
  outputs: { parameters: [{ name: 'uri' }] },
};

describe('DataPipeline adapter stages on a real apiserver', () => {
  it("server-side-applies the adapter next to the user's, succeeds when both ready replicas load it, and on deletion removes only its own entry", async () => {
    const ns = 'dp-adapter';
    await createNs(client, ns);
    await userService(ns, 'chat');
    const before = await getSvc(ns, 'chat');
    await client.post(pipelines(ns), {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'DataPipeline',
      metadata: { name: 'swap' },
      spec: {
        stages: [
          exportStage,
          {
            name: 'serve',
            dependsOn: ['export'],
            adapter: { inferenceService: 'chat', name: 'support-{{pipeline.name}}', uri: '{{steps.export.outputs.parameters.uri}}' },
          },
        ],
      },
    });
    const applied = await waitFor(
      'adapter applied',
      async () => {
        const s = await getSvc(ns, 'chat');
        return (s.spec?.model?.adapters ?? []).length === 2 ? s : undefined;
      },
      120_000,
    ).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}\n${await dump(ns, 'swap')}`);
    });
    expect(applied.spec?.model?.adapters).toEqual([
      { name: 'users-own', uri: 'pvc://models/users-own' },
      { name: 'support-swap', uri: 'pvc://adapters/support-v2' },
    ]);
    expect((applied.metadata.managedFields ?? []).map((m) => m.manager).sort()).toEqual(['sits-datapipeline/swap/serve', 'the-user']);
    expect(applied.metadata.uid).toBe(before.metadata.uid);
    expect((await getPipeline(ns, 'swap')).metadata.finalizers).toEqual(['ai.sits2026.dev/datapipeline-adapters']);

    await replicaStatus(ns, 'chat', {
      'chat-a': { 'users-own': 'Loaded', 'support-swap': 'Loaded' },
      'chat-b': { 'users-own': 'Loaded', 'support-swap': 'Loading' },
    });
    const waiting = await waitFor(
      'waiting for chat-b',
      async () => {
        const p = await getPipeline(ns, 'swap');
        return (stageOf(p, 'serve')?.message ?? '').includes('waiting for chat-b') ? p : undefined;
      },
      60_000,
    ).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}\n${await dump(ns, 'swap')}`);
    });
    expect(stageOf(waiting, 'serve')?.phase).toBe('Running');
    await replicaStatus(ns, 'chat', {
      'chat-a': { 'users-own': 'Loaded', 'support-swap': 'Loaded' },
      'chat-b': { 'users-own': 'Loaded', 'support-swap': 'Loaded' },
    });
    const done = await waitFor(
      'pipeline Succeeded',
      async () => {
        const p = await getPipeline(ns, 'swap');
        return p.status?.phase === 'Succeeded' ? p : undefined;
      },
      60_000,
    ).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}\n${await dump(ns, 'swap')}`);
    });
    expect(stageOf(done, 'serve')?.message).toBe(
      'adapter support-swap loaded on all 2 ready replicas of InferenceService chat (chat-a, chat-b) without a restart',
    );

    // The user edits their own adapter meanwhile: the pipeline's entry is not theirs, theirs is not the pipeline's.
    await client.request('PATCH', `${services(ns)}/chat`, {
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'the-user', force: true },
      body: {
        apiVersion: 'ai.sits2026.dev/v1',
        kind: 'InferenceService',
        metadata: { name: 'chat' },
        spec: { runtime: 'vllm', replicas: 2, model: { uri: 'pvc://models/base', adapters: [{ name: 'users-own', uri: 'pvc://models/users-own-v2' }] } },
      },
    });
    expect((await getSvc(ns, 'chat')).spec?.model?.adapters).toEqual([
      { name: 'users-own', uri: 'pvc://models/users-own-v2' },
      { name: 'support-swap', uri: 'pvc://adapters/support-v2' },
    ]);

    await client.request('DELETE', `${pipelines(ns)}/swap`);
    await waitFor('pipeline gone', async () => ((await getPipeline(ns, 'swap').catch(() => undefined)) === undefined ? true : undefined), 60_000).catch(
      async (e: unknown) => {
        throw new Error(`${(e as Error).message}\n${await dump(ns, 'swap')}`);
      },
    );
    const after = await getSvc(ns, 'chat');
    expect(after.spec?.model?.adapters).toEqual([{ name: 'users-own', uri: 'pvc://models/users-own-v2' }]);
    expect((after.metadata.managedFields ?? []).map((m) => m.manager)).not.toContain('sits-datapipeline/swap/serve');
    expect(after.metadata.uid).toBe(before.metadata.uid);
  });

  it('fails the stage naming the replica that failed to load the adapter; refuses an adapter name the user set to another uri', async () => {
    const ns = 'dp-adapter-fail';
    await createNs(client, ns);
    await userService(ns, 'chat');
    await client.post(pipelines(ns), {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'DataPipeline',
      metadata: { name: 'bad' },
      spec: { stages: [{ name: 'serve', adapter: { inferenceService: 'chat', name: 'broken', uri: 'pvc://adapters/broken' } }] },
    });
    await waitFor(
      'broken applied',
      async () => ((await getSvc(ns, 'chat')).spec?.model?.adapters ?? []).some((a) => a.name === 'broken') || undefined,
      120_000,
    ).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}\n${await dump(ns, 'bad')}`);
    });
    await replicaStatus(ns, 'chat', { 'chat-a': { broken: 'Loaded' }, 'chat-b': { broken: 'Failed' } });
    const failed = await waitFor(
      'bad Failed',
      async () => {
        const p = await getPipeline(ns, 'bad');
        return p.status?.phase === 'Failed' ? p : undefined;
      },
      60_000,
    ).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}\n${await dump(ns, 'bad')}`);
    });
    expect(stageOf(failed, 'serve')?.message).toMatch(
      /^InferenceService chat: replica chat-b failed to load adapter broken: adapter_config\.json: no such file/,
    );

    await client.post(pipelines(ns), {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'DataPipeline',
      metadata: { name: 'clash' },
      spec: { stages: [{ name: 'serve', adapter: { inferenceService: 'chat', name: 'users-own', uri: 'pvc://adapters/other' } }] },
    });
    const clash = await waitFor(
      'clash Failed',
      async () => {
        const p = await getPipeline(ns, 'clash');
        return p.status?.phase === 'Failed' ? p : undefined;
      },
      60_000,
    ).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}\n${await dump(ns, 'clash')}`);
    });
    expect(stageOf(clash, 'serve')?.message).toMatch(
      /^InferenceService chat: adapter users-own is set by another field manager to another uri \(.*the-user.*\); the pipeline does not take over fields it did not set$/,
    );
    expect((await getSvc(ns, 'chat')).spec?.model?.adapters?.find((a) => a.name === 'users-own')?.uri).toBe('pvc://models/users-own');
  });
});
