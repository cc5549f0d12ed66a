import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../api/validate.ts';
import { LABEL } from '../../api/wire.ts';
import type { PodObject } from '../kube-objects.ts';
import {
  adapterGatePatch,
  ADAPTERS_LOADED_CONDITION,
  annotatedEngine,
  encodeEngineState,
  ENGINE_STATE_ANNOTATION,
  excuseUnloadable,
  hasAdapterGate,
  planAdapters,
  readEngineState,
} from './engine-state.ts';
import type { InferenceServiceObject } from './model.ts';
import { CONDITION, reconcileInferenceService } from './reconcile.ts';

const NOW = Date.parse('2026-12-01T12:00:00Z');

const pod = (name: string, annotations: Record<string, string> = {}, ready = true): PodObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'ml', uid: `uid-${name}`, labels: { [LABEL.inferenceService]: 'chat' }, annotations },
  spec: { containers: [], nodeName: 'n0' },
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});

describe('the engine-state annotation', () => {
  it('round-trips a record and ignores what is not one', () => {
    const rec = {
      serving: false,
      adapters: [
        { name: 'sql', state: 'Failed' as const, message: 'boom' },
        { name: 'chat', state: 'Loaded' as const },
      ],
    };
    expect(readEngineState(pod('a', { [ENGINE_STATE_ANNOTATION]: encodeEngineState(rec) }))).toEqual(rec);
    expect(readEngineState(pod('a'))).toBeUndefined();
    expect(readEngineState(pod('a', { [ENGINE_STATE_ANNOTATION]: '{not json' }))).toBeUndefined();
    expect(readEngineState(pod('a', { [ENGINE_STATE_ANNOTATION]: '{"serving":"yes","adapters":[]}' }))).toBeUndefined();
    expect(readEngineState(pod('a', { [ENGINE_STATE_ANNOTATION]: '{"serving":true,"adapters":[{"name":"x","state":"Odd"}]}' }))).toEqual({
      serving: true,
      adapters: [],
    });
  });

  it('holds a replica the loop has not looked at out of serving only when the spec lists adapters', () => {
    const want = new Map([['ml/chat', ['sql']]]);
    const port = annotatedEngine((ns, s) => want.get(`${ns}/${s}`) ?? []);
    expect(port.replica(pod('a'))).toEqual({ serving: false, adapters: [{ name: 'sql', state: 'Loading' }] });
    expect(port.replica(pod('a', { [ENGINE_STATE_ANNOTATION]: encodeEngineState({ serving: true, adapters: [{ name: 'sql', state: 'Loaded' }] }) }))).toEqual({
      serving: true,
      adapters: [{ name: 'sql', state: 'Loaded' }],
    });
    want.set('ml/chat', []);
    expect(port.replica(pod('a'))).toBeUndefined();
  });

  it('plans loads of what is not applied and unloads of what the spec dropped', () => {
    expect(
      planAdapters(
        ['sql', 'chat'],
        [
          { name: 'sql', active: true },
          { name: 'old', active: true },
          { name: 'chat', active: false },
          { name: 'idle', active: false },
        ],
      ),
    ).toEqual({ load: ['chat'], unload: ['old'] });
    expect(planAdapters([], [])).toEqual({ load: [], unload: [] });
  });
});

describe('the reconcile with adapter states', () => {
  const svc = withDefaults('InferenceService', {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'InferenceService',
    metadata: { name: 'chat', namespace: 'ml', uid: 'isvc-uid', generation: 1 },
    spec: {
      runtime: 'vllm',
      model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen', adapters: [{ name: 'sql', uri: 's3://a/sql' }] },
      replicas: 2,
      gpusPerReplica: 1,
    },
  }) as InferenceServiceObject;

  it('names the replica and the adapter that failed, keeps it out of ready and the others serving', () => {
    const first = reconcileInferenceService(
      { isvc: svc, pods: [], services: [], nowMs: NOW, facts: { largestNvlinkIslandGpus: 8 }, engine: annotatedEngine(() => ['sql']) },
      {},
    );
    const made = first.actions.flatMap((a) => (a.kind === 'createPod' ? [a.pod] : []));
    expect(made).toHaveLength(2);
    const loaded = encodeEngineState({ serving: true, adapters: [{ name: 'sql', state: 'Loaded' }] });
    const failed = encodeEngineState({
      serving: false,
      adapters: [{ name: 'sql', state: 'Failed', message: 'POST /v1/load_lora_adapter answered 400: no such file' }],
    });
    const [p0, p1] = made.map((p, i) => {
      const base = pod(p.metadata.name ?? '', { [ENGINE_STATE_ANNOTATION]: i === 0 ? loaded : failed });
      return { ...base, metadata: { ...p.metadata, uid: `uid-${i}`, annotations: base.metadata.annotations } } as PodObject;
    }) as [PodObject, PodObject];
    const r = reconcileInferenceService(
      { isvc: svc, pods: [p0, p1], services: [], nowMs: NOW, facts: { largestNvlinkIslandGpus: 8 }, engine: annotatedEngine(() => ['sql']) },
      {},
    );
    expect(r.status?.readyReplicas).toBe(1);
    const c = r.status?.conditions?.find((x) => x.type === CONDITION.adapterFailure);
    expect(c?.status).toBe('True');
    expect(c?.reason).toBe('AdapterLoadFailed');
    expect(c?.message).toContain(`replica ${p1.metadata.name ?? ''}: adapter sql: POST /v1/load_lora_adapter answered 400: no such file`);
    expect(c?.message).not.toContain(p0.metadata.name ?? 'x');
    expect(r.status?.replicaStatuses?.map((x) => x.adapters?.[0]?.state)).toEqual(['Loaded', 'Failed']);
    expect(r.actions.some((a) => a.kind === 'event' && a.reason === 'AdapterLoadFailed')).toBe(true);
    // No pod is deleted for it: the replica keeps its engine, the loop retries with backoff.
    expect(r.actions.some((a) => a.kind === 'deletePod')).toBe(false);
  });
});

describe('the adapters-loaded readiness gate', () => {
  const gated = (status?: string): PodObject => {
    const p = pod('a');
    return {
      ...p,
      spec: { ...(p.spec ?? { containers: [] }), readinessGates: [{ conditionType: ADAPTERS_LOADED_CONDITION }] },
      status: {
        phase: 'Running',
        conditions: [{ type: 'ContainersReady', status: 'True' }, ...(status === undefined ? [] : [{ type: ADAPTERS_LOADED_CONDITION, status }])],
      },
    };
  };
  const at = '2026-12-01T12:00:00.000Z';

  it('is a qualified condition type on the pods that declare it', () => {
    expect(ADAPTERS_LOADED_CONDITION).toBe('ai.sits2026.dev/adapters-loaded');
    expect(hasAdapterGate(gated())).toBe(true);
    expect(hasAdapterGate(pod('a'))).toBe(false);
  });

  it('turns True once every adapter is loaded, False while one is not, and writes nothing when the pod already says so', () => {
    const loaded = { serving: true, adapters: [{ name: 'sql', state: 'Loaded' as const }] };
    const loading = { serving: false, adapters: [{ name: 'sql', state: 'Loading' as const }] };
    const failed = { serving: false, adapters: [{ name: 'sql', state: 'Failed' as const, message: 'no such file' }] };
    expect(adapterGatePatch(gated(), loaded, at)).toEqual({
      metadata: { uid: 'uid-a' },
      status: {
        conditions: [
          {
            type: ADAPTERS_LOADED_CONDITION,
            status: 'True',
            reason: 'AdaptersLoaded',
            message: 'every adapter of the replica is loaded',
            lastTransitionTime: at,
          },
        ],
      },
    });
    expect(adapterGatePatch(gated('True'), loaded, at)).toBeUndefined();
    expect(adapterGatePatch(gated('True'), loading, at)?.status).toEqual({
      conditions: [
        { type: ADAPTERS_LOADED_CONDITION, status: 'False', reason: 'AdaptersNotLoaded', message: 'not loaded: sql Loading', lastTransitionTime: at },
      ],
    });
    expect(JSON.stringify(adapterGatePatch(gated(), failed, at))).toContain('not loaded: sql Failed: no such file');
    expect(adapterGatePatch(gated('False'), failed, at)).toBeUndefined();
  });
});

describe('excuseUnloadable', () => {
  const failed = {
    serving: false,
    adapters: [
      { name: 'sql', state: 'Loaded' as const },
      { name: 'typo', state: 'Failed' as const, message: 'no such file' },
    ],
  };
  it('lets a replica serve when the only adapters it lacks failed and no replica has them', () => {
    const r = excuseUnloadable(failed, new Set(['sql']));
    expect(r.serving).toBe(true);
    // Still Failed in the record: AdapterFailure keeps naming it.
    expect(r.adapters.find((a) => a.name === 'typo')?.state).toBe('Failed');
  });
  it('holds it out while another replica serves the adapter, or while one is still loading', () => {
    expect(excuseUnloadable(failed, new Set(['sql', 'typo'])).serving).toBe(false);
    const loading = { serving: false, adapters: [{ name: 'sql', state: 'Loading' as const }] };
    expect(excuseUnloadable(loading, new Set())).toBe(loading);
    const ok = { serving: true, adapters: [{ name: 'sql', state: 'Loaded' as const }] };
    expect(excuseUnloadable(ok, new Set())).toBe(ok);
  });
});
