import { describe, expect, it } from 'vitest';
import type { ApplyFailure, ControllerAction } from '../../api/controller.ts';
import { withDefaults } from '../../api/validate.ts';
import type { StageStatus } from '../../api/schema/data-pipeline.ts';
import type { PodObject } from '../kube-objects.ts';
import type { ClaimObject, DataPipelineObject, TargetService, VolumeSnapshotObject, WorkloadKind, WorkloadObject } from './model.ts';
import { reconcileDataPipeline } from './reconcile.ts';
import { adapterCleanup } from './adapter-stage.ts';

const T0 = Date.parse('2026-12-01T20:00:00Z');

/** A tiny cluster: applies the reconcile's creates and deletes, and lets the test finish pods. */
class World {
  pipeline: DataPipelineObject;
  pods = new Map<string, PodObject>();
  workloads = new Map<string, WorkloadObject>();
  snapshots = new Map<string, VolumeSnapshotObject>();
  claims = new Map<string, ClaimObject>();
  nowMs = T0;
  events: string[] = [];
  last: ControllerAction[] = [];
  lastErrors: ApplyFailure[] | undefined;
  services = new Map<string, TargetService>();
  constructor(spec: Record<string, unknown>) {
    this.pipeline = withDefaults('DataPipeline', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'DataPipeline',
      metadata: { name: 'p', namespace: 'ns', uid: 'u1', generation: 1 },
      spec,
    }) as DataPipelineObject;
  }
  step(): ReturnType<typeof reconcileDataPipeline> {
    const byKind = new Map<WorkloadKind, WorkloadObject[]>();
    for (const w of this.workloads.values()) byKind.set(w.kind as WorkloadKind, [...(byKind.get(w.kind as WorkloadKind) ?? []), w]);
    const r = reconcileDataPipeline({
      pipeline: this.pipeline,
      pods: [...this.pods.values()],
      workloads: byKind,
      snapshots: [...this.snapshots.values()],
      claims: [...this.claims.values()],
      services: [...this.services.values()],
      nowMs: this.nowMs,
      ...(this.lastErrors === undefined ? {} : { lastErrors: this.lastErrors }),
    });
    this.pipeline = { ...this.pipeline, status: r.status };
    this.last = [...r.actions];
    for (const a of r.actions) {
      if (a.op === 'event') this.events.push(`${a.reason}: ${a.message}`);
      if (a.op === 'create') {
        const n = a.object.metadata.name ?? '';
        const obj = { ...a.object, metadata: { ...a.object.metadata, uid: `uid-${n}` } };
        if (a.kind === 'Pod') this.pods.set(n, obj as PodObject);
        else if (a.kind === 'VolumeSnapshot') this.snapshots.set(n, obj as VolumeSnapshotObject);
        else if (a.kind === 'PersistentVolumeClaim') this.claims.set(n, obj as ClaimObject);
        else this.workloads.set(n, obj as WorkloadObject);
      }
      if (a.op === 'addFinalizer')
        this.pipeline = { ...this.pipeline, metadata: { ...this.pipeline.metadata, finalizers: [...(this.pipeline.metadata.finalizers ?? []), a.finalizer] } };
      if (a.op === 'apply') {
        // The user's entries stay; the applied one replaces the entry of the same name (a list-map key).
        const svc = this.services.get(a.name) as TargetService;
        const mine = (a.object as { spec?: { model?: { adapters?: { name: string; uri: string }[] } } }).spec?.model?.adapters ?? [];
        const adapters = [...(svc.spec?.model?.adapters ?? []).filter((x) => !mine.some((m) => m.name === x.name)), ...mine];
        this.services.set(a.name, {
          ...svc,
          spec: { model: { adapters } },
          metadata: { ...svc.metadata, managedFields: [...(svc.metadata.managedFields ?? []), { manager: a.fieldManager, operation: 'Apply' }] },
        });
      }
      if (a.op === 'delete') for (const m of [this.pods, this.workloads, this.snapshots, this.claims] as Map<string, unknown>[]) m.delete(a.name);
    }
    return r;
  }
  finish(pod: string, exitCode: number, message?: string): void {
    const p = this.pods.get(pod);
    if (p === undefined) throw new Error(`no pod ${pod}: ${[...this.pods.keys()].join(', ')}`);
    this.pods.set(pod, {
      ...p,
      status: {
        phase: exitCode === 0 ? 'Succeeded' : 'Failed',
        containerStatuses: [
          { name: 'main', state: { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', ...(message === undefined ? {} : { message }) } } },
        ],
      },
    });
  }
  stage(name: string): StageStatus {
    return this.pipeline.status?.stages?.find((s) => s.name === name) as StageStatus;
  }
}

const container = { image: 'busybox', args: ['run'] };

describe('reconcileDataPipeline', () => {
  it('runs a 3-stage DAG in order and passes a parameter from a termination message into a later stage', () => {
    const w = new World({
      stages: [
        { name: 'train', container, outputs: { parameters: [{ name: 'adapter' }] } },
        { name: 'export', dependsOn: ['train'], container: { image: 'busybox', args: ['--in={{steps.train.outputs.parameters.adapter}}'] } },
        {
          name: 'serve',
          dependsOn: ['export'],
          container: { image: 'busybox', env: [{ name: 'ADAPTER', value: '{{steps.train.outputs.parameters.adapter}}' }] },
        },
      ],
    });
    w.step();
    expect([...w.pods.keys()]).toEqual(['p-train-0']);
    expect(w.pipeline.status).toMatchObject({
      phase: 'Running',
      stages: [
        { name: 'train', phase: 'Running' },
        { name: 'export', phase: 'Pending', message: 'waiting for train' },
        { name: 'serve', phase: 'Pending' },
      ],
    });
    const pod = w.pods.get('p-train-0');
    expect(pod?.metadata.ownerReferences).toEqual([
      { apiVersion: 'ai.sits2026.dev/v1', kind: 'DataPipeline', name: 'p', uid: 'u1', controller: true, blockOwnerDeletion: true },
    ]);
    expect(pod?.spec).toMatchObject({ restartPolicy: 'Never', schedulerName: 'sits-scheduler' });
    w.finish('p-train-0', 0, '{"adapter":"/adapters/r1"}');
    w.step();
    expect(w.stage('train')).toMatchObject({ phase: 'Succeeded', outputs: { parameters: { adapter: '/adapters/r1' } } });
    expect(w.pods.get('p-export-0')?.spec?.containers[0]?.args).toEqual(['--in=/adapters/r1']);
    w.finish('p-export-0', 0);
    w.step();
    expect(w.pods.get('p-serve-0')?.spec?.containers[0]?.env).toContainEqual({ name: 'ADAPTER', value: '/adapters/r1' });
    w.finish('p-serve-0', 0);
    w.step();
    expect(w.pipeline.status).toMatchObject({ phase: 'Succeeded', completedStages: 3, totalStages: 3, message: '3 of 3 stages succeeded' });
    expect(w.events.at(-1)).toBe('PipelineSucceeded: 3 of 3 stages succeeded');
  });

  it('retries a failing stage with backoff, then fails the pipeline with the reason and skips its dependants', () => {
    const w = new World({
      stages: [
        { name: 'train', container, retryStrategy: { limit: 2, retryPolicy: 'OnFailure', backoff: { duration: '10s', factor: 2 } } },
        { name: 'serve', dependsOn: ['train'], container },
        { name: 'other', container },
      ],
    });
    w.step();
    w.finish('p-train-0', 3);
    const r1 = w.step();
    expect(w.stage('train')).toMatchObject({ phase: 'Running', retries: 1, nextRetryTime: '2026-12-01T20:00:10Z' });
    expect(w.stage('train').message).toBe('attempt 1 failed: pod p-train-0: exit code 3 (Error); retry 1/2 in 10s');
    expect(r1.requeueAfterMs).toBe(10_000);
    expect(w.pods.has('p-train-0')).toBe(false);
    w.nowMs = T0 + 9_000;
    w.step();
    expect(w.pods.has('p-train-0')).toBe(false);
    w.nowMs = T0 + 10_000;
    w.step();
    expect(w.pods.get('p-train-0')?.spec?.containers[0]?.env).toContainEqual({ name: 'SITS_RETRY', value: '1' });
    w.finish('p-train-0', 3);
    w.step();
    expect(w.stage('train')).toMatchObject({ retries: 2, nextRetryTime: '2026-12-01T20:00:30Z' });
    w.nowMs = T0 + 30_000;
    w.step();
    w.finish('p-train-0', 3);
    w.step();
    expect(w.stage('train')).toMatchObject({
      phase: 'Failed',
      retries: 2,
      message: 'pod p-train-0: exit code 3 (Error); retry limit 2 reached after 2 retries',
    });
    expect(w.stage('serve')).toMatchObject({ phase: 'Skipped', message: 'not run: dependency train failed' });
    // failurePolicy StopPipeline: the independent stage is stopped too, and says why.
    expect(w.stage('other')).toMatchObject({ phase: 'Failed', message: 'stopped: stage train failed' });
    expect(w.pods.has('p-other-0')).toBe(false);
    expect(w.pods.has('p-serve-0')).toBe(false);
    expect(w.pipeline.status).toMatchObject({
      phase: 'Failed',
      message: 'stage train failed: pod p-train-0: exit code 3 (Error); retry limit 2 reached after 2 retries',
    });
  });

  it('lets independent stages finish under ContinueIndependent, and runs a failure handler named in when', () => {
    const w = new World({
      failurePolicy: 'ContinueIndependent',
      stages: [
        { name: 'train', container, maxRetries: 0 },
        { name: 'notify', dependsOn: ['train'], when: 'train.Failed', container },
        { name: 'serve', dependsOn: ['train'], when: 'train.Succeeded', container },
        { name: 'other', container },
      ],
    });
    w.step();
    w.finish('p-train-0', 1);
    w.step();
    expect(w.stage('train')).toMatchObject({ phase: 'Failed', message: 'pod p-train-0: exit code 1 (Error); no retries allowed' });
    expect(w.stage('serve')).toMatchObject({ phase: 'Skipped', message: 'when "train.Succeeded" is false' });
    expect(w.stage('notify').phase).toBe('Running');
    expect(w.stage('other').phase).toBe('Running');
    w.finish('p-notify-0', 0);
    w.finish('p-other-0', 0);
    w.step();
    // The failure was handled by notify's when: the pipeline succeeds.
    expect(w.pipeline.status?.phase).toBe('Succeeded');
  });

  it('retries a lost pod only under OnError or Always', () => {
    const w = new World({ stages: [{ name: 'a', container, retryStrategy: { limit: 1, retryPolicy: 'OnError' } }] });
    w.step();
    w.pods.delete('p-a-0');
    w.step();
    expect(w.stage('a')).toMatchObject({ retries: 1, message: 'attempt 1 failed: pod p-a-0 disappeared; retry 1/1 in 0s' });
    w.step();
    expect(w.pods.has('p-a-0')).toBe(true);
    w.finish('p-a-0', 2);
    w.step();
    expect(w.stage('a')).toMatchObject({
      phase: 'Failed',
      message: 'pod p-a-0: exit code 2 (Error); retryPolicy OnError does not retry a failure after 1 retry',
    });
  });

  it('runs workload stages: a TrainingJob to Succeeded, an InferenceService to Ready, outputs from the annotation', () => {
    const w = new World({
      stages: [
        { name: 'ft', workload: { kind: 'TrainingJob', spec: { replicas: 1, container } } },
        { name: 'serve', dependsOn: ['ft'], workload: { kind: 'InferenceService', spec: { model: { uri: '{{steps.ft.outputs.parameters.model}}' } } } },
      ],
    });
    w.step();
    const tj = w.workloads.get('p-ft') as WorkloadObject;
    expect(tj).toMatchObject({
      kind: 'TrainingJob',
      metadata: { labels: { 'ai.sits2026.dev/data-pipeline': 'p', 'ai.sits2026.dev/pipeline-stage': 'ft' } },
      spec: { replicas: 1 },
    });
    w.workloads.set('p-ft', {
      ...tj,
      metadata: { ...tj.metadata, annotations: { 'ai.sits2026.dev/outputs': '{"model":"pvc://out/m"}' } },
      status: { phase: 'Succeeded' },
    });
    w.step();
    const isvc = w.workloads.get('p-serve') as WorkloadObject;
    expect(isvc.spec).toEqual({ model: { uri: 'pvc://out/m' } });
    w.workloads.set('p-serve', { ...isvc, status: { phase: 'Loading' } });
    w.step();
    expect(w.stage('serve')).toMatchObject({ phase: 'Running', message: 'InferenceService p-serve is Loading' });
    w.workloads.set('p-serve', { ...isvc, status: { phase: 'Ready' } });
    w.step();
    expect(w.stage('serve')).toMatchObject({ phase: 'Succeeded', message: 'InferenceService p-serve is Ready and keeps serving' });
    expect(w.pipeline.status?.phase).toBe('Succeeded');
  });

  it('records a snapshot artifact, restores a claim from it for the next stage, and GCs by keepLast on completion', () => {
    const w = new World({
      artifactGC: { strategy: 'OnPipelineCompletion', keepLast: 1 },
      stages: [
        { name: 'train', container, outputs: { artifacts: [{ name: 'ckpt', volumeSnapshot: { claimName: 'work', volumeSnapshotClassName: 'fast' } }] } },
        {
          name: 'export',
          dependsOn: ['train'],
          container,
          inputs: { artifacts: [{ name: 'ckpt', from: { stage: 'train', artifact: 'ckpt' }, mountPath: '/in', storageClassName: 'sc' }] },
          outputs: { artifacts: [{ name: 'model', volumeSnapshot: { claimName: '{{inputs.artifacts.ckpt.claimName}}' } }] },
        },
      ],
    });
    w.step();
    w.finish('p-train-0', 0);
    w.step();
    expect(w.snapshots.get('p-train-ckpt')).toMatchObject({
      spec: { source: { persistentVolumeClaimName: 'work' }, volumeSnapshotClassName: 'fast' },
      metadata: { ownerReferences: [{ uid: 'u1' }] },
    });
    expect(w.stage('train')).toMatchObject({ phase: 'Running', message: 'recording artifacts: waiting for VolumeSnapshot p-train-ckpt' });
    expect(w.stage('export').phase).toBe('Pending');
    const s = w.snapshots.get('p-train-ckpt') as VolumeSnapshotObject;
    w.snapshots.set('p-train-ckpt', { ...s, status: { readyToUse: true, restoreSize: '2Gi' } });
    w.step();
    expect(w.stage('train')).toMatchObject({
      phase: 'Succeeded',
      outputs: { artifacts: [{ name: 'ckpt', volumeSnapshotName: 'p-train-ckpt', readyToUse: true }] },
    });
    expect(w.claims.get('p-export-in-ckpt')?.spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'sc',
      resources: { requests: { storage: '2Gi' } },
      dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'p-train-ckpt' },
    });
    const pod = w.pods.get('p-export-0') as PodObject;
    expect(pod.spec?.volumes).toEqual([{ name: 'in-ckpt', persistentVolumeClaim: { claimName: 'p-export-in-ckpt', readOnly: false } }]);
    expect(pod.spec?.containers[0]?.volumeMounts).toEqual([{ name: 'in-ckpt', mountPath: '/in', readOnly: false }]);
    // The claim and the pod are created in one pass, the claim first (the runner applies groups in order).
    expect(w.last.filter((a) => a.op === 'create').map((a) => (a.op === 'create' ? a.kind : ''))).toEqual(['PersistentVolumeClaim', 'Pod']);
    w.finish('p-export-0', 0);
    w.step();
    expect(w.snapshots.get('p-export-model')?.spec?.source?.persistentVolumeClaimName).toBe('p-export-in-ckpt');
    const m = w.snapshots.get('p-export-model') as VolumeSnapshotObject;
    w.snapshots.set('p-export-model', { ...m, status: { readyToUse: true } });
    w.step();
    expect(w.pipeline.status?.phase).toBe('Succeeded');
    expect([...w.snapshots.keys()]).toEqual(['p-export-model']);
    expect(w.stage('train').outputs?.artifacts).toEqual([{ name: 'ckpt', volumeSnapshotName: 'p-train-ckpt', readyToUse: false, deleted: true }]);
  });

  it('fails the pipeline on a when that names a stage outside dependsOn, naming the field, before creating anything', () => {
    const w = new World({
      stages: [
        { name: 'a', container },
        { name: 'b', dependsOn: ['a'], when: 'a.Succeeded && c.Failed', container },
        { name: 'c', container },
      ],
    });
    const r = w.step();
    expect(r.status).toMatchObject({ phase: 'Failed', message: 'invalid spec: spec.stages[1].when: names c, not in dependsOn' });
    expect(w.pods.size).toBe(0);
  });

  it('fails a stage whose placeholder names no output, naming the field', () => {
    const w = new World({
      stages: [
        { name: 'a', container },
        { name: 'b', dependsOn: ['a'], container: { image: 'x', args: ['{{steps.a.outputs.parameters.nope}}'] } },
      ],
    });
    w.step();
    w.finish('p-a-0', 0);
    w.step();
    expect(w.stage('b')).toMatchObject({
      phase: 'Failed',
      message: 'spec.stages[1].container.args[0]: {{steps.a.outputs.parameters.nope}} names no known value',
    });
    expect(w.pipeline.status?.phase).toBe('Failed');
  });

  it('suspends: deletes running pods and starts nothing; resumes where it was', () => {
    const w = new World({ stages: [{ name: 'a', container }] });
    w.step();
    w.pipeline = { ...w.pipeline, spec: { ...w.pipeline.spec, suspend: true } };
    w.step();
    expect(w.pods.size).toBe(0);
    expect(w.pipeline.status).toMatchObject({ phase: 'Suspended', stages: [{ phase: 'Pending', message: 'suspended' }] });
    w.pipeline = { ...w.pipeline, spec: { ...w.pipeline.spec, suspend: false } };
    w.step();
    expect(w.pods.has('p-a-0')).toBe(true);
  });

  it('fails a stage whose pod the apiserver refuses (422) with its message, without retrying', () => {
    const w = new World({ stages: [{ name: 'a', container, retryStrategy: { limit: 3, retryPolicy: 'Always' } }] });
    w.step();
    w.pods.delete('p-a-0');
    w.lastErrors = [{ action: 'createPod', name: 'p-a-0', status: 422, reason: 'Invalid', message: 'spec.containers[0].image: Required value' }];
    w.step();
    expect(w.stage('a')).toMatchObject({ phase: 'Failed', message: 'cannot create pod p-a-0: spec.containers[0].image: Required value' });
    expect(w.stage('a').retries).toBeUndefined();
  });

  it('fails the pipeline on an input artifact from a stage outside dependsOn, naming the field', () => {
    const w = new World({
      stages: [
        { name: 'a', container, outputs: { artifacts: [{ name: 'm', path: { claimName: 'c', subPath: 'x' } }] } },
        { name: 'b', container, inputs: { artifacts: [{ name: 'm', from: { stage: 'a', artifact: 'm' } }] } },
      ],
    });
    expect(w.step().status.message).toBe('invalid spec: spec.stages[1].inputs.artifacts[0].from.stage: a is not in dependsOn');
  });

  it("mounts a path artifact read-only from the producer's claim", () => {
    const w = new World({
      stages: [
        { name: 'a', container, outputs: { artifacts: [{ name: 'm', path: { claimName: 'shared', subPath: 'models/{{pipeline.name}}' } }] } },
        { name: 'b', dependsOn: ['a'], container, inputs: { artifacts: [{ name: 'm', from: { stage: 'a', artifact: 'm' }, mountPath: '/m' }] } },
      ],
    });
    w.step();
    w.finish('p-a-0', 0);
    w.step();
    const pod = w.pods.get('p-b-0') as PodObject;
    expect(pod.spec?.volumes).toEqual([{ name: 'in-m', persistentVolumeClaim: { claimName: 'shared', readOnly: true } }]);
    expect(pod.spec?.containers[0]?.volumeMounts).toEqual([{ name: 'in-m', mountPath: '/m', readOnly: true, subPath: 'models/p' }]);
  });

  it("mounts input artifacts into workload stages: a TrainingJob given as container becomes its podTemplate, an InferenceService's go to its server container", () => {
    const w = new World({
      stages: [
        { name: 'a', container, outputs: { artifacts: [{ name: 'm', path: { claimName: 'shared', subPath: 'adapters/a' } }] } },
        {
          name: 'ft',
          dependsOn: ['a'],
          inputs: { artifacts: [{ name: 'm', from: { stage: 'a', artifact: 'm' }, mountPath: '/base' }] },
          workload: { kind: 'TrainingJob', spec: { replicas: 1, container } },
        },
        {
          name: 'serve',
          dependsOn: ['a'],
          inputs: { artifacts: [{ name: 'm', from: { stage: 'a', artifact: 'm' }, mountPath: '/adapters' }] },
          workload: {
            kind: 'InferenceService',
            spec: {
              model: { uri: 'pvc://shared/base' },
              podTemplate: { spec: { containers: [{ name: 'sidecar', image: 'x' }], volumes: [{ name: 'cache', emptyDir: {} }] } },
            },
          },
        },
      ],
    });
    w.step();
    w.finish('p-a-0', 0);
    w.step();
    const vol = { name: 'in-m', persistentVolumeClaim: { claimName: 'shared', readOnly: true } };
    expect(w.workloads.get('p-ft')?.spec).toEqual({
      replicas: 1,
      podTemplate: {
        spec: {
          containers: [{ ...container, name: 'trainer', volumeMounts: [{ name: 'in-m', mountPath: '/base', readOnly: true, subPath: 'adapters/a' }] }],
          volumes: [vol],
        },
      },
    });
    expect(w.workloads.get('p-serve')?.spec).toEqual({
      model: { uri: 'pvc://shared/base' },
      podTemplate: {
        spec: {
          containers: [
            { name: 'server', volumeMounts: [{ name: 'in-m', mountPath: '/adapters', readOnly: true, subPath: 'adapters/a' }] },
            { name: 'sidecar', image: 'x' },
          ],
          volumes: [{ name: 'cache', emptyDir: {} }, vol],
        },
      },
    });
  });

  it("adds an adapter to the user's InferenceService by server-side apply, after its finalizer, and succeeds once every ready replica has it Loaded", () => {
    const w = new World({
      stages: [
        { name: 'export', container, outputs: { parameters: [{ name: 'uri' }] } },
        {
          name: 'swap',
          dependsOn: ['export'],
          adapter: { inferenceService: 'chat', name: 'support-{{pipeline.name}}', uri: '{{steps.export.outputs.parameters.uri}}' },
        },
      ],
    });
    w.services.set('chat', {
      metadata: { name: 'chat', namespace: 'ns' },
      spec: { model: { adapters: [{ name: 'users-own', uri: 'pvc://u/a' }] } },
      status: { replicaStatuses: [] },
    });
    w.step();
    w.finish('p-export-0', 0, '{"uri":"pvc://out/support"}');
    w.step();
    expect(w.last.filter((a) => a.op !== 'event')).toEqual([{ op: 'addFinalizer', finalizer: 'ai.sits2026.dev/datapipeline-adapters' }]);
    w.step();
    expect(w.last).toEqual([
      {
        op: 'apply',
        kind: 'InferenceService',
        name: 'chat',
        fieldManager: 'sits-datapipeline/p/swap',
        object: {
          apiVersion: 'ai.sits2026.dev/v1',
          kind: 'InferenceService',
          metadata: { name: 'chat' },
          spec: { model: { adapters: [{ name: 'support-p', uri: 'pvc://out/support' }] } },
        },
      },
    ]);
    expect(w.services.get('chat')?.spec?.model?.adapters).toEqual([
      { name: 'users-own', uri: 'pvc://u/a' },
      { name: 'support-p', uri: 'pvc://out/support' },
    ]);
    w.step();
    expect(w.last).toEqual([]);
    expect(w.stage('swap')).toMatchObject({ phase: 'Running', message: 'waiting for a ready replica of InferenceService chat' });
    const svc = w.services.get('chat') as TargetService;
    const replicas = (a: string, b: string) => [
      { name: 'chat-0', ready: true, adapters: [{ name: 'support-p', state: a }] },
      { name: 'chat-1', ready: true, adapters: [{ name: 'support-p', state: b }] },
      { name: 'chat-2', ready: false },
    ];
    w.services.set('chat', { ...svc, status: { replicaStatuses: replicas('Loaded', 'Loading') } });
    w.step();
    expect(w.stage('swap')).toMatchObject({
      phase: 'Running',
      message: 'adapter support-p loaded on 1 of 2 ready replicas of InferenceService chat; waiting for chat-1',
    });
    w.services.set('chat', { ...svc, status: { replicaStatuses: replicas('Loaded', 'Loaded') } });
    w.step();
    expect(w.stage('swap')).toMatchObject({
      phase: 'Succeeded',
      message: 'adapter support-p loaded on all 2 ready replicas of InferenceService chat (chat-0, chat-1) without a restart',
      outputs: { parameters: { adapter: 'support-p', inferenceService: 'chat' } },
    });
    expect(w.pipeline.status?.phase).toBe('Succeeded');
    // Never owned: nothing of the service is ever created or deleted.
    expect(w.workloads.size).toBe(0);

    // Deletion: an empty apply under the stage's manager, then (its entry gone from managedFields) the finalizer.
    const deleting = { ...w.pipeline, metadata: { ...w.pipeline.metadata, deletionTimestamp: '2026-12-01T21:00:00Z' } };
    expect(adapterCleanup(deleting, [...w.services.values()])).toEqual([
      {
        op: 'apply',
        kind: 'InferenceService',
        name: 'chat',
        fieldManager: 'sits-datapipeline/p/swap',
        object: { apiVersion: 'ai.sits2026.dev/v1', kind: 'InferenceService', metadata: { name: 'chat' } },
      },
    ]);
    expect(adapterCleanup(deleting, [{ ...svc, metadata: { name: 'chat', managedFields: [{ manager: 'kubectl-client-side-apply' }] } }])).toEqual([
      { op: 'removeFinalizer', finalizer: 'ai.sits2026.dev/datapipeline-adapters' },
    ]);
    expect(adapterCleanup(deleting, [])).toEqual([{ op: 'removeFinalizer', finalizer: 'ai.sits2026.dev/datapipeline-adapters' }]);
  });

  it('fails an adapter stage naming the replica that failed to load it, retries under the strategy, and refuses a field another manager holds', () => {
    const w = new World({
      stages: [
        {
          name: 'swap',
          retryStrategy: { limit: 1 },
          adapter: { inferenceService: 'chat', name: 'support', uri: 'pvc://out/support', onPipelineDeletion: 'Keep' },
        },
      ],
    });
    w.services.set('chat', { metadata: { name: 'chat' }, spec: { model: {} } });
    w.step();
    // Keep: no finalizer needed, the apply comes at once.
    expect(w.last.map((a) => a.op)).toEqual(['apply']);
    const svc = w.services.get('chat') as TargetService;
    w.services.set('chat', {
      ...svc,
      status: {
        replicaStatuses: [{ name: 'chat-0', ready: true, adapters: [{ name: 'support', state: 'Failed', message: 'adapter_config.json: no such file' }] }],
      },
    });
    w.step();
    expect(w.stage('swap')).toMatchObject({
      phase: 'Running',
      retries: 1,
      message: expect.stringContaining(
        'attempt 1 failed: InferenceService chat: replica chat-0 failed to load adapter support: adapter_config.json: no such file',
      ),
    });
    w.nowMs += 60_000;
    w.step();
    w.step();
    expect(w.stage('swap')).toMatchObject({ phase: 'Failed', message: expect.stringContaining('replica chat-0 failed to load adapter support') });

    const c = new World({ stages: [{ name: 'swap', adapter: { inferenceService: 'chat', name: 'support', uri: 'pvc://new', onPipelineDeletion: 'Keep' } }] });
    c.services.set('chat', { metadata: { name: 'chat' }, spec: { model: { adapters: [{ name: 'support', uri: 'pvc://users' }] } } });
    c.lastErrors = [
      {
        action: 'applyInferenceService',
        name: 'chat',
        status: 409,
        reason: 'Conflict',
        message: 'Apply failed with 1 conflict: conflict with "kubectl": .spec.model.adapters[name="support"].uri',
      },
    ];
    c.step();
    expect(c.stage('swap')).toMatchObject({
      phase: 'Failed',
      message: expect.stringContaining('adapter support is set by another field manager to another uri'),
    });

    const bad = new World({ stages: [{ name: 'swap', adapter: { inferenceService: 'chat', name: 'Support_1', uri: 'x' } }] });
    bad.services.set('chat', svc);
    bad.step();
    expect(bad.stage('swap')).toMatchObject({
      phase: 'Failed',
      message: 'spec.stages[0].adapter.name: "Support_1" is not a DNS label (lowercase letters, digits and \'-\', at most 63)',
    });
  });
});
