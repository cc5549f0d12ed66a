import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../api/validate.ts';
import { NODE_SHAPES, nodeOfShape } from '../../core/model/presets.ts';
import type { DataPipelineObject } from './model.ts';
import { summarizeCluster } from './profiles.ts';
import { reconcileDataPipeline } from './reconcile.ts';
import { reconcileTemplate, rerunName, runStepCache, STEP_CACHE_ANNOTATION } from './runs.ts';
import { scheduledRunName } from './schedule.ts';
import { profiledWorkloadSpec, stageProfile } from './stage-profile.ts';

const T0 = Date.parse('2026-12-01T20:00:30Z');
const container = { image: 'busybox', args: ['run'] };

const template = (schedule: Record<string, unknown>, extra: Record<string, unknown> = {}): DataPipelineObject =>
  withDefaults('DataPipeline', {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'DataPipeline',
    metadata: { name: 'tpl', namespace: 'ns', uid: 'tu', generation: 1, creationTimestamp: '2026-12-01T19:59:00Z', ...extra },
    spec: { schedule, stages: [{ name: 'prep', container }] },
  }) as DataPipelineObject;

const run = (name: string, phase: string, startTime: string, stages: unknown[] = []): DataPipelineObject =>
  ({
    metadata: { name, namespace: 'ns', uid: `u-${name}`, creationTimestamp: startTime },
    spec: { stages: [] },
    status: { phase, startTime, stages },
  }) as unknown as DataPipelineObject;

describe('reconcileTemplate', () => {
  it('creates the run of a due cron time, owned by the template, with the step-cache history; requeues at the next time', () => {
    const r = reconcileTemplate(template({ cron: '0 * * * *' }), [], T0);
    const created = r.actions.filter((a) => a.op === 'create');
    const name = scheduledRunName('tpl', new Date('2026-12-01T20:00:00Z'));
    expect(created.map((a) => (a.op === 'create' ? a.object.metadata.name : ''))).toEqual([name]);
    const obj = created[0]?.op === 'create' ? (created[0].object as unknown as DataPipelineObject) : undefined;
    expect(obj?.spec.schedule).toBeUndefined();
    expect(obj?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'DataPipeline', name: 'tpl', uid: 'tu', controller: true });
    expect(obj?.metadata.labels).toEqual({ 'ai.sits2026.dev/data-pipeline': 'tpl' });
    expect(obj?.metadata.annotations?.[STEP_CACHE_ANNOTATION]).toBe('[]');
    expect(r.status).toMatchObject({ lastScheduleTime: '2026-12-01T20:00:00Z', nextScheduleTime: '2026-12-01T21:00:00Z', phase: 'Running' });
    expect(r.requeueAfterMs).toBe(Date.parse('2026-12-01T21:00:00Z') - T0);
  });

  it('prunes finished runs beyond the history limit and collects succeeded stages into the step cache', () => {
    const runs = [
      run('tpl-1', 'Succeeded', '2026-12-01T17:00:00Z', [
        { name: 'prep', phase: 'Succeeded', cacheKey: 'k1', completionTime: '2026-12-01T17:01:00Z', outputs: { parameters: { a: '1' } } },
      ]),
      run('tpl-2', 'Succeeded', '2026-12-01T18:00:00Z', [
        { name: 'prep', phase: 'Succeeded', cacheKey: 'k1', cachedFrom: 'tpl-1', completionTime: '2026-12-01T18:00:01Z' },
      ]),
      run('tpl-3', 'Succeeded', '2026-12-01T19:00:00Z'),
    ];
    const t = { ...template({ cron: '0 * * * *', successfulRunsHistoryLimit: 2 }), status: { lastScheduleTime: '2026-12-01T20:00:00Z' } };
    const r = reconcileTemplate(t, runs, T0);
    expect(r.actions.filter((a) => a.op === 'delete').map((a) => (a.op === 'delete' ? a.name : ''))).toEqual(['tpl-1']);
    expect(r.actions.some((a) => a.op === 'create')).toBe(false);
    expect(r.status.runs?.map((x) => x.name)).toEqual(['tpl-2', 'tpl-3']);
    expect(r.status.stepCache).toEqual([{ key: 'k1', run: 'tpl-1', stage: 'prep', finishedAt: '2026-12-01T17:01:00Z', outputs: { parameters: { a: '1' } } }]);
  });

  it('a new rerun token creates one run, also when suspended; the same token again does nothing', () => {
    const t = template({ cron: '0 * * * *', suspend: true }, { annotations: { 'ai.sits2026.dev/rerun': 'x1' } });
    const r = reconcileTemplate(t, [], T0);
    expect(r.actions.filter((a) => a.op === 'create').map((a) => (a.op === 'create' ? a.object.metadata.name : ''))).toEqual([rerunName('tpl', 'x1')]);
    expect(r.status).toMatchObject({ phase: 'Suspended', lastRerunToken: 'x1' });
    const again = reconcileTemplate({ ...t, status: r.status }, [], T0);
    expect(again.actions.some((a) => a.op === 'create')).toBe(false);
  });

  it('a bad schedule fails the template naming the field', () => {
    const r = reconcileTemplate(template({ cron: 'every day' }), [], T0);
    expect(r.status.phase).toBe('Failed');
    expect(r.status.message).toMatch(/^spec\.schedule\.cron: /);
  });
});

describe('step caching in a run', () => {
  const spec = {
    stages: [
      { name: 'prep', container, outputs: { parameters: [{ name: 'rows' }] } },
      { name: 'train', dependsOn: ['prep'], container: { image: 'busybox', args: ['{{steps.prep.outputs.parameters.rows}}'] } },
    ],
  };
  const pipeline = (ann?: string, s: Record<string, unknown> = spec): DataPipelineObject =>
    withDefaults('DataPipeline', {
      metadata: { name: 'r2', namespace: 'ns', uid: 'u2', ...(ann === undefined ? {} : { annotations: { [STEP_CACHE_ANNOTATION]: ann } }) },
      spec: s,
    }) as DataPipelineObject;
  const observe = (p: DataPipelineObject) => ({
    pipeline: p,
    pods: [],
    workloads: new Map(),
    snapshots: [],
    claims: [],
    nowMs: T0,
    ...(runStepCache(p) === undefined ? {} : { stepCache: runStepCache(p) ?? [] }),
  });

  it('reuses a success with the same key: Succeeded, outputs copied, no pod; cache: false and maxAge opt out', () => {
    const first = reconcileDataPipeline(observe(pipeline()));
    const key = first.status.stages?.[0]?.cacheKey;
    expect(key).toMatch(/^sha256:/);
    const hist = JSON.stringify([{ key, run: 'r1', stage: 'prep', finishedAt: '2026-12-01T19:00:00Z', outputs: { parameters: { rows: '7' } } }]);
    const r = reconcileDataPipeline(observe(pipeline(hist)));
    expect(r.status.stages?.[0]).toMatchObject({ phase: 'Succeeded', cachedFrom: 'r1', outputs: { parameters: { rows: '7' } } });
    expect(r.status.stages?.[0]?.message).toMatch(/^cached from run r1/);
    // The dependant starts in the same pass with the reused parameter.
    const pods = r.actions.flatMap((a) => (a.op === 'create' && a.kind === 'Pod' ? [a.object.metadata.name] : []));
    expect(pods).toEqual(['r2-train-0']);
    const off = { stages: [{ ...spec.stages[0], cache: false }, spec.stages[1]] };
    const keyOff = reconcileDataPipeline(observe(pipeline(undefined, off))).status.stages?.[0]?.cacheKey;
    const histOff = JSON.stringify([{ key: keyOff, run: 'r1', stage: 'prep', finishedAt: '2026-12-01T19:00:00Z', outputs: {} }]);
    expect(reconcileDataPipeline(observe(pipeline(histOff, off))).status.stages?.[0]?.phase).toBe('Running');
    const old = { stages: [{ ...spec.stages[0], cacheMaxAgeSeconds: 60 }, spec.stages[1]] };
    const keyOld = reconcileDataPipeline(observe(pipeline(undefined, old))).status.stages?.[0]?.cacheKey;
    const histOld = JSON.stringify([{ key: keyOld, run: 'r1', stage: 'prep', finishedAt: '2026-12-01T19:00:00Z', outputs: {} }]);
    expect(reconcileDataPipeline(observe(pipeline(histOld, old))).status.stages?.[0]?.phase).toBe('Running');
  });

  it('never reuses an InferenceService stage: its result is a running server', () => {
    const isvc = { stages: [{ name: 'serve', workload: { kind: 'InferenceService', spec: { model: { name: 'm' } } } }] };
    const key = reconcileDataPipeline(observe(pipeline(undefined, isvc))).status.stages?.[0]?.cacheKey;
    expect(key).toMatch(/^sha256:/);
    const hist = JSON.stringify([{ key, run: 'r1', stage: 'serve', finishedAt: '2026-12-01T19:00:00Z', outputs: {} }]);
    const r = reconcileDataPipeline(observe(pipeline(hist, isvc)));
    expect(r.status.stages?.[0]?.cachedFrom).toBeUndefined();
    expect(r.actions.some((a) => a.op === 'create' && a.kind === 'InferenceService')).toBe(true);
  });

  it('a malformed history annotation is no history, not a crash', () => {
    expect(reconcileDataPipeline(observe(pipeline('{not json'))).status.stages?.[0]?.phase).toBe('Running');
  });
});

describe('stage profiles onto children', () => {
  const cluster = summarizeCluster([nodeOfShape('a1', NODE_SHAPES['a800x4'] as never, { zone: 'z', block: 'b', rack: 'r1' })]);

  it('maps a TrainingJob stage onto gpu, gpusPerReplica, replicas and topology; overrides are named profileOverrides', () => {
    const stage = withDefaults('DataPipeline', {
      metadata: { name: 'p' },
      spec: {
        stages: [{ name: 'ft', resourceProfile: 'auto', model: { params: 1e9 }, workload: { kind: 'TrainingJob', spec: { topology: { strategy: 'ring' } } } }],
      },
    }) as DataPipelineObject;
    const r = stageProfile(stage.spec.stages[0] as never, 0, cluster);
    expect(r?.ok).toBe(true);
    if (r === undefined || !r.ok) return;
    const spec = profiledWorkloadSpec('TrainingJob', { topology: { strategy: 'ring' } }, r.value);
    expect(spec).toMatchObject({
      gpu: { allowedModels: r.value.gpuModels },
      gpusPerReplica: r.value.gpusPerPod,
      replicas: r.value.pods,
      topology: { strategy: 'ring' },
    });
    expect(r.value.reasons[0]).toMatch(/^auto chose training/);
    const bad = stageProfile({ ...(stage.spec.stages[0] as object), profileOverrides: { gpuModels: ['H100'] } } as never, 0, cluster);
    expect(bad?.ok === false ? bad.error.field : '').toBe('spec.stages[0].profileOverrides.gpuModels[0]');
  });
});
